"""What a profiler trace says about a program's time (`hloscope trace`).

    analysis.py   `analyze_trace()`: step times, per-op device time, remat time share, MFU
    join.py       trace events joined to the program's instructions (loops, fusions)
    timing.py     self times and their attribution to phases, layers and scopes
    export.py     the trace's timeline beside the memory timeline
"""
