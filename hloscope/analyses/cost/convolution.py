"""FLOPs of a convolution, as XLA's HloCostAnalysis::GetConvolutionFlops counts them.

Every (input feature / feature groups) x output feature x (batch / batch groups) triple costs one
multiply-add per *valid* kernel position: a position whose input element exists, i.e. is neither
padding nor a hole made by base (lhs) dilation. Valid positions are counted per spatial dimension
and multiplied.
"""
from __future__ import annotations

import math

from hloscope.model.attributes import WindowDimension
from hloscope.model.instruction import Instruction
from hloscope.model.shape import Shape

FMA_FLOPS = 2


def convolution_flops(conv: Instruction, lhs: Shape, rhs: Shape, out: Shape) -> int:
    labels = conv.dim_labels
    if labels is None:
        return 0
    input_feature = lhs.dimensions[labels.input_feature]
    output_feature = out.dimensions[labels.output_feature]
    batch = lhs.dimensions[labels.input_batch]
    window = conv.window
    if window:
        limits = zip(_spatial_sizes(labels.spatial(labels.input_labels), lhs),
                     _spatial_sizes(labels.spatial(labels.kernel_labels), rhs),
                     _spatial_sizes(labels.spatial(labels.output_labels), out), window,
                     strict=False)
        positions = [_valid_positions(i, k, o, w) for i, k, o, w in limits]
    else:
        positions = [1]
    multiply_adds = ((input_feature // conv.feature_group_count) * output_feature
                     * (batch // conv.batch_group_count) * math.prod(positions))
    return multiply_adds * FMA_FLOPS


def _spatial_sizes(positions: tuple[int, ...], shape: Shape) -> list[int]:
    return [shape.dimensions[p] for p in positions]


def _valid_positions(size_in: int, size_kernel: int, size_out: int, dim: WindowDimension) -> int:
    if (size_in == size_out and size_kernel == size_out and size_in == dim.lhs_dilation
            and dim.rhs_dilation == 1 and max(1, size_in - 1) == dim.stride
            and dim.padding_low == 0 and dim.padding_high == 0):
        return size_in
    if (size_in == 1 and size_kernel == size_out and dim.rhs_dilation == 1
            and dim.lhs_dilation == 1 and dim.stride == 1
            and dim.padding_high == size_out - 1 and dim.padding_low == size_out - 1):
        return size_out
    if dim.stride == 1 and dim.lhs_dilation == 1:
        return sum(_dense_positions(size_in, size_out, dim.padding_low - k * dim.rhs_dilation)
                   for k in range(size_kernel))
    return sum(_strided_positions(size_in, size_out, dim, k) for k in range(size_kernel))


def _dense_positions(size_in: int, size_out: int, base: int) -> int:
    return max(min(size_in + base, size_out) - max(base, 0), 0)


def _strided_positions(size_in: int, size_out: int, dim: WindowDimension, kernel: int) -> int:
    """Output positions whose input index for kernel offset `kernel` is a real input element."""
    count = 0
    dilation = dim.lhs_dilation
    for output in range(size_out):
        undilated = output * dim.stride - dim.padding_low + kernel * dim.rhs_dilation
        if dilation > 1:
            if undilated % dilation:
                continue
            index = undilated // dilation
        else:
            index = undilated
        if 0 <= index < size_in:
            count += 1
    return count
