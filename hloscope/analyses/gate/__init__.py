"""What changed between two programs, and whether CI should fail (`compare`, `snapshot`, `check`).

    headline.py   the headline figures of one program (peak, allocation, FLOPs, remat, step)
    compare.py    B against A: headline deltas, opcode/FLOP/buffer explanations
    snapshot.py   a program's headline figures with its toolchain, as a baseline
    check.py      a program against a baseline and thresholds: the verdict CI acts on
"""
