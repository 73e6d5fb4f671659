"""How much memory a program needs, and which buffers make it up.

    analysis.py       `memory()`: the live peak per space, the live set, timeline, XLA's figures
    liveness/         hloscope's own liveness analysis, step for step as XLA's (see its map)
    host_offload.py   bytes moved to and from pinned host memory, per step
"""
