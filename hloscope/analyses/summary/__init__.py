"""What a program is, at a glance.

    inspect.py    op counts, parameters, outputs and totals (`hloscope inspect`)
    overview.py   every analysis of one program at once (`hloscope report`), fastest that fits
    variant.py    the figures a sweep ranks a build by: fit, memory, FLOPs, recompute, step time
"""
