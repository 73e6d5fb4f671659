"""Per-instruction cost rules, following XLA's HloCostAnalysis (xla/service/hlo_cost_analysis.cc).

Each rule sees one instruction with its shape and operand shapes (a `Site`) and returns its Cost.
The defaults are XLA's: an instruction reads its operands and writes its output (`bytes accessed`
= the sizes of the output's leaf arrays + the operand sizes, see sizes.py), and does no FLOPs.
Exceptions, as in XLA:

- elementwise ops do one FLOP per output element; exp, log, logistic, power, sqrt, cbrt, rsqrt,
  tanh, sin, cos, tan, expm1, log1p, atan2 and erf count a transcendental instead; rng counts one
  transcendental per element;
- dot: 2 x output elements x the product of the lhs contracting dimensions; convolution: see
  convolution.py; fft, triangular-solve, cholesky and sort have XLA's closed forms;
- reduce, reduce-window, select-and-scatter, map and scatter apply their called computation's
  FLOPs once per application (reduce: input elements - output elements);
- all-reduce does one FLOP per output element;
- parameter, constant, get-tuple-element, bitcast, after-all, add-dependency and domain touch no
  memory; a tuple writes its pointer table; slice, dynamic-slice and gather read only what they
  output (plus the indices); dynamic-update-slice and scatter touch only the updated part; a
  transpose that only relabels dimensions is a bitcast.

Calls, loops, conditionals, async starts, fusions and custom-calls are in analysis.py and
custom_calls.py. `collective_bytes` is hloscope's own column (XLA has none): the payload of a
collective, the larger of what a participant sends and what it receives; the wire traffic depends
on the algorithm and the group size and is not modelled.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from hloscope.analyses.cost.convolution import FMA_FLOPS, convolution_flops
from hloscope.analyses.cost.sizes import (
    elements_of_text,
    first_array,
    leaf_bytes,
    leaf_elements,
    size_of_text,
    written_bytes_of_text,
    xla_size,
)
from hloscope.analyses.cost.vector import ZERO, Cost
from hloscope.model.instruction import Instruction
from hloscope.model.opcodes import ELEMENTWISE_ARITHMETIC, TRANSCENDENTAL
from hloscope.model.shape import TUPLE, Shape

NO_MEMORY = frozenset({
    "parameter", "constant", "get-tuple-element", "bitcast", "after-all", "add-dependency",
    "domain",
})


class Site:
    """An instruction being costed, with what its rule may need."""

    __slots__ = ("instruction", "operands", "called_cost", "padded", "_operand_shapes")

    def __init__(self, instruction: Instruction, operands: list[Instruction],
                 called_cost: Callable[[str], Cost], padded: bool = False) -> None:
        self.instruction = instruction
        self.operands = operands
        self.called_cost = called_cost
        self.padded = padded  # tiled layouts count whole tiles (sizes.py)
        self._operand_shapes: list[Shape] | None = None

    @property
    def shape(self) -> Shape:
        return self.instruction.shape

    @property
    def operand_shapes(self) -> list[Shape]:
        if self._operand_shapes is None:
            self._operand_shapes = [operand.shape for operand in self.operands]
        return self._operand_shapes

    def default_bytes(self) -> int:
        """Output leaves written plus operands read (a tuple operand is its pointer table)."""
        return written_bytes_of_text(self.instruction.shape_text, self.padded) + sum(
            size_of_text(operand.shape_text, self.padded) for operand in self.operands)

    def size(self, shape: Shape) -> int:
        return xla_size(shape, self.padded)

    def leaf_bytes(self, shape: Shape) -> int:
        return leaf_bytes(shape, self.padded)

    def operand_size(self, index: int) -> int:
        return size_of_text(self.operands[index].shape_text, self.padded) \
            if index < len(self.operands) else 0

    def applied(self, key: str, times: int) -> Cost:
        """The FLOPs of the computation named by attribute `key`, applied `times` times."""
        name = self.instruction.called_computation(key)
        return self.called_cost(name).compute_only().scaled(times) if name else ZERO


Rule = Callable[[Site], Cost]


def elementwise(site: Site) -> Cost:
    count = elements_of_text(site.instruction.shape_text)
    if site.instruction.opcode in TRANSCENDENTAL:
        return Cost(transcendentals=count, bytes_accessed=site.default_bytes())
    return Cost(flops=count, bytes_accessed=site.default_bytes())


def default(site: Site) -> Cost:
    return Cost(bytes_accessed=site.default_bytes())


def no_memory(site: Site) -> Cost:
    return ZERO


def tuple_rule(site: Site) -> Cost:
    return Cost(bytes_accessed=site.size(site.shape))


def dot(site: Site) -> Cost:
    lhs = site.operand_shapes[0]
    width = math.prod(lhs.dimensions[d] for d in site.instruction.lhs_contracting_dims)
    return Cost(flops=FMA_FLOPS * elements_of_text(site.instruction.shape_text) * width,
                bytes_accessed=site.default_bytes())


def ragged_dot(site: Site) -> Cost:
    """XLA deletes result dimensions 0..g-1 (g = number of rhs group dimensions) first."""
    groups = len(site.instruction.int_list_attribute("rhs_group_dims") or ())
    dims = list(site.shape.dimensions)
    for i in range(groups):
        del dims[i]
    lhs = site.operand_shapes[0]
    width = math.prod(lhs.dimensions[d] for d in site.instruction.lhs_contracting_dims)
    return Cost(flops=FMA_FLOPS * math.prod(dims) * width, bytes_accessed=site.default_bytes())


def convolution(site: Site) -> Cost:
    lhs, rhs = site.operand_shapes[0], site.operand_shapes[1]
    flops = convolution_flops(site.instruction, lhs, rhs, site.shape)
    return Cost(flops=flops, bytes_accessed=site.default_bytes())


def fft(site: Site) -> Cost:
    real = first_array(site.operand_shapes[0])
    log_factors = math.prod(max(n, 1).bit_length() - 1
                            for n in site.instruction.int_list_attribute("fft_length") or ())
    flops = FMA_FLOPS * 4 * log_factors * real.element_count
    return Cost(flops=flops, bytes_accessed=site.default_bytes())


def triangular_solve(site: Site) -> Cost:
    a, b = site.operand_shapes[0], site.operand_shapes[1]
    accessed = site.size(site.shape) + site.size(a) // 2 + site.size(b)
    return Cost(flops=FMA_FLOPS * a.dimensions[-1] * b.element_count, bytes_accessed=accessed)


def cholesky(site: Site) -> Cost:
    a = site.operand_shapes[0]
    return Cost(flops=a.dimensions[-1] * a.element_count // 3,
                bytes_accessed=2 * (site.size(a) // 2))


def sort(site: Site) -> Cost:
    count = site.operand_shapes[0].element_count
    log2_ceiling = (count - 1).bit_length() if count > 0 else 0
    return Cost(flops=count * log2_ceiling, bytes_accessed=site.default_bytes())


def rng(site: Site) -> Cost:
    return Cost(transcendentals=site.shape.element_count, bytes_accessed=site.default_bytes())


def rng_bit_generator(site: Site) -> Cost:
    return Cost(transcendentals=leaf_elements(site.shape), bytes_accessed=site.default_bytes())


def slice_rule(site: Site) -> Cost:
    return Cost(bytes_accessed=2 * site.size(site.shape))


def dynamic_slice(site: Site) -> Cost:
    return Cost(bytes_accessed=2 * site.size(site.shape) + site.operand_size(1))


def dynamic_update_slice(site: Site) -> Cost:
    return Cost(bytes_accessed=2 * site.operand_size(1) + site.operand_size(2))


def gather(site: Site) -> Cost:
    """Reads one slice of the operand per index (sized in the operand's layout: a slice of a
    tiled operand reads whole tiles), writes the output, reads the indices. Without
    `slice_sizes` (a module read from an HloProto that drops them) the slices are the output."""
    operand = site.operand_shapes[0]
    sizes = site.instruction.int_list_attribute("slice_sizes") or ()
    read = site.size(site.shape)
    if len(sizes) == operand.rank:
        read = site.shape.element_count // max(1, math.prod(sizes)) * site.size(
            _window(operand, list(sizes)))
    return Cost(bytes_accessed=read + site.size(site.shape) + site.operand_size(1))


def scatter(site: Site) -> Cost:
    """Reads the updates and the indices; reads and writes one window of each operand per
    index, sized in the operand's layout (XLA: 3 x the updates when nothing is tiled, and
    when the dimension numbers are missing)."""
    count = (len(site.operand_shapes) - 1) // 2
    updates = site.operand_shapes[count + 1 :]
    update_bytes = sum(site.size(u) for u in updates)
    accessed = 3 * update_bytes + site.operand_size(count)
    if updates:
        window = [updates[0].dimensions[d]
                  for d in site.instruction.int_list_attribute("update_window_dims") or ()]
        unit = set(site.instruction.int_list_attribute("inserted_window_dims") or ()) | set(
            site.instruction.int_list_attribute("input_batching_dims") or ())
        rank = site.operand_shapes[0].rank
        if len(window) + len(unit) == rank:
            sizes_of = iter(window)
            sizes = [1 if d in unit else next(sizes_of) for d in range(rank)]
            indices = updates[0].element_count // max(1, math.prod(window))
            windows = indices * sum(site.size(_window(operand, sizes))
                                    for operand in site.operand_shapes[:count])
            accessed = 2 * windows + update_bytes + site.operand_size(count)
    applied = site.applied("to_apply", updates[0].element_count if updates else 0)
    return applied.with_bytes(accessed)


def _window(operand: Shape, sizes: list[int]) -> Shape:
    """A window of `sizes` elements of `operand`, in the operand's element type and layout."""
    return replace(operand, dimensions=tuple(sizes),
                   dynamic_dimensions=tuple(False for _ in sizes))


def reduce(site: Site) -> Cost:
    count = site.operand_shapes[0].element_count - first_array(site.shape).element_count
    return site.applied("to_apply", count).with_bytes(site.default_bytes())


def map_rule(site: Site) -> Cost:
    return site.applied("to_apply", site.shape.element_count).with_bytes(site.default_bytes())


def reduce_window(site: Site) -> Cost:
    window = site.instruction.window
    window_elements = math.prod(d.size for d in window)
    output_elements = first_array(site.shape).element_count
    count = (window_elements - 1) * output_elements
    broadcast_dim = _reduce_broadcast_dimension(site)
    if broadcast_dim is not None:
        span = site.shape.dimensions[broadcast_dim]
        count = output_elements // span + (span - 1)
    return site.applied("to_apply", count).with_bytes(site.default_bytes())


def _reduce_broadcast_dimension(site: Site) -> int | None:
    """The dimension of a reduce-window that is a reduce then a broadcast, as XLA spots it."""
    window = site.instruction.window
    reduced = [d for d in window if d.size != 1]
    padded = [d for d in window if d.padding_low or d.padding_high]
    if len(reduced) != 1 or len(padded) != 1 or site.shape.is_tuple:
        return None
    for i, d in enumerate(window):
        if (d.size != 1 and d.padding_low and d.padding_high
                and d.padding_low == d.padding_high and d.size == 2 * d.padding_low + 1):
            return i if d.padding_low == site.shape.dimensions[i] - 1 else None
    return None


def select_and_scatter(site: Site) -> Cost:
    source_elements = site.operand_shapes[1].element_count
    window_elements = math.prod(d.size for d in site.instruction.window)
    selects = site.applied("select", source_elements * (window_elements - 1))
    scatters = site.applied("scatter", source_elements)
    return (selects + scatters).with_bytes(site.default_bytes())


def transpose(site: Site) -> Cost:
    if is_bitcast_transpose(site.operand_shapes[0], site.shape,
                            site.instruction.dimensions or ()):
        return ZERO
    return default(site)


def is_bitcast_transpose(operand: Shape, result: Shape, permutation: tuple[int, ...]) -> bool:
    """True when the transpose leaves the bytes in place (the layouts absorb the permutation)."""
    if operand.element_type != result.element_type:
        return False
    in_order = _minor_to_major(operand)
    out_order = _minor_to_major(result)
    return [permutation[d] for d in out_order] == list(in_order)


def _minor_to_major(shape: Shape) -> tuple[int, ...]:
    if shape.layout is not None and shape.layout.minor_to_major:
        return shape.layout.minor_to_major
    return tuple(reversed(range(shape.rank)))


def all_reduce(site: Site) -> Cost:
    leaves = [leaf for _, leaf in site.shape.leaves() if leaf.is_array]
    output_bytes = sum(site.size(leaf) for leaf in leaves)
    accessed = output_bytes + sum(site.size(s) for s in site.operand_shapes)
    return Cost(flops=sum(leaf.element_count for leaf in leaves), bytes_accessed=accessed,
                collective_bytes=collective_payload(site))


def collective(site: Site) -> Cost:
    return Cost(bytes_accessed=site.default_bytes(), collective_bytes=collective_payload(site))


def collective_payload(site: Site) -> int:
    sent = sum(leaf_bytes(s) for s in site.operand_shapes)
    opcode = site.instruction.opcode
    if opcode == "all-gather-start" and site.shape.is_tuple and len(site.shape.tuple_shapes) > 1:
        received = leaf_bytes(site.shape.tuple_shapes[1])
    elif opcode in ("all-reduce-start", "collective-permute-start", "send"):
        received = 0
    elif opcode == "recv":
        received = leaf_bytes(first_array(site.shape))
    else:
        received = leaf_bytes(site.shape)
    return max(sent, received)


def infeed(site: Site) -> Cost:
    return Cost(bytes_accessed=site.leaf_bytes(site.shape))


def outfeed(site: Site) -> Cost:
    return Cost(bytes_accessed=sum(site.leaf_bytes(s) for s in site.operand_shapes))


def send(site: Site) -> Cost:
    """Its operands read and `(data, u32[], token[])` written, the shape XLA builds a send with
    from its data operand whatever the text writes (jaxlib 0.10.2's parse and cost analysis of
    XLA's collective_pipeliner_test modules)."""
    operands = site.operand_shapes
    if not operands:
        return collective(site)
    written = site.leaf_bytes(operands[0]) + site.size(_U32_SCALAR)
    return Cost(bytes_accessed=written + sum(site.size(s) for s in operands),
                collective_bytes=collective_payload(site))


def send_done(site: Site) -> Cost:
    """The send's tuple table read: XLA makes a send-done's shape `token[]` and its send's a
    3-tuple whatever the text writes (jaxlib 0.10.2's HloCostAnalysis charges no output and
    reads a send written as an array as that tuple; tests/oracles/cost_cases.py)."""
    return Cost(bytes_accessed=site.size(_SEND_SHAPE) * len(site.operand_shapes))


def recv_done(site: Site) -> Cost:
    """The recv's tuple table read and `(data, token[])` written, data being the recv's own:
    XLA builds a recv-done's shape from its recv whatever the text writes (jaxlib 0.10.2 on XLA's
    gpu_latency_hiding_scheduler_test, which writes f32[16] for an f32[16,16] recv)."""
    operands = site.operand_shapes
    written = site.leaf_bytes(site.shape)
    if operands and operands[0].is_tuple and operands[0].tuple_shapes:
        written = site.leaf_bytes(operands[0].tuple_shapes[0])
    return Cost(bytes_accessed=written + sum(site.size(s) for s in operands))


_U32_SCALAR = Shape("u32", (), ())
_SEND_SHAPE = Shape(TUPLE, tuple_shapes=(_U32_SCALAR, _U32_SCALAR, Shape("token")))
COLLECTIVES = frozenset({
    "all-gather", "all-gather-start", "reduce-scatter", "all-to-all", "ragged-all-to-all",
    "collective-broadcast", "collective-permute", "collective-permute-start", "send", "recv",
})

RULES: dict[str, Rule] = {
    **dict.fromkeys(ELEMENTWISE_ARITHMETIC, elementwise),
    **dict.fromkeys(NO_MEMORY, no_memory),
    **dict.fromkeys(COLLECTIVES, collective),
    "tuple": tuple_rule, "dot": dot, "scaled-dot": dot, "ragged-dot": ragged_dot,
    "convolution": convolution, "fft": fft, "triangular-solve": triangular_solve,
    "cholesky": cholesky, "sort": sort, "rng": rng, "rng-bit-generator": rng_bit_generator,
    "slice": slice_rule, "dynamic-slice": dynamic_slice,
    "dynamic-update-slice": dynamic_update_slice, "gather": gather, "scatter": scatter,
    "reduce": reduce, "map": map_rule, "reduce-window": reduce_window,
    "select-and-scatter": select_and_scatter, "transpose": transpose,
    "all-reduce": all_reduce, "all-reduce-start": all_reduce, "collective-reduce": all_reduce,
    "infeed": infeed, "outfeed": outfeed, "send": send, "send-done": send_done,
    "recv-done": recv_done,
}


def rule_for(opcode: str) -> Rule:
    return RULES.get(opcode, default)
