"""What a profiler trace says about a program's time (`hloscope trace`).

    analysis.py   `analyze_trace()`: step times, per-op device time, remat time share, MFU
    join.py       trace events joined to the program's instructions (loops, fusions)
    timing.py     self times and their attribution to phases, layers and scopes; runs
    op_stats.py   every program's ops over the capture, with categories (xprof's hlo_stats)
    model_check.py  measured ops beside the per-op step-time model
    export.py     the trace's timeline beside the memory timeline
"""
