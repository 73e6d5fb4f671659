"""Every fitted, measured or stated figure hloscope's models use, one module per backend.

Each figure carries its provenance: where its value comes from (a datasheet, XLA's source, a
fit or a measurement with the committed result it was read from, or a stated default where
nothing is published) and the test that checks it ("unchecked" where none does yet). Device
facts that are plain specifications (peaks, bandwidths, sizes) stay in `hloscope.devices`;
docs/calibration.md lists every figure here.
"""
from hloscope.calibration.figure import (
    DATASHEET,
    DEFAULT,
    FIT,
    MEASURED,
    UNCHECKED,
    XLA,
    Figure,
)

__all__ = ["DATASHEET", "DEFAULT", "FIT", "MEASURED", "UNCHECKED", "XLA", "Figure"]
