"""Liveness of generated JAX programs against XLA's dumps and JAX's own account.

`memory_programs.py` compiles seventeen small programs of fixed families on the CPU in one child
process (~10 s) with XLA's dumps on. For each, hloscope's live ranges, the moment XLA reports as
its peak and the buffers it lists there equal XLA's `*-live-range.txt`; the live peak equals,
to the byte, the most memory XLA's own buffer assignment holds for the values live at once
(`xla_occupancy.py`), and the buffers live then are XLA's, piece of memory for piece of memory;
the outputs XLA's heap simulator makes in the buffer of a dying operand are the ones
`sharing.py` predicts; buffers that hold arguments are categorised as the argument's pytree
position says (parameter, optimizer state, input); and the buffers categorised as saved
activations have the sizes of the residuals `saved_residuals` says JAX saves.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import compile_dump_oracle
from xla_occupancy import chunks, held_bytes, pieces_at

import hloscope
from hloscope.analyses.memory.analysis import memory
from hloscope.analyses.memory.liveness import analyze_liveness
from hloscope.analyses.memory.liveness.categories import Classifier
from hloscope.analyses.memory.liveness.peak import live_at, live_bytes
from hloscope.parsers.xla_memory import find_memory_artifacts

pytestmark = pytest.mark.compile
PROGRAMS = ("mlp_f32", "mlp_bf16_donated", "attention", "scan_layers", "remat_full",
            "remat_dots", "remat_dots_no_batch_bf16", "embedding_bf16_donated",
            "loop_with_conditional", "scan_nothing_saveable", "scan_checkpoint_dots",
            "scan_dots_with_no_batch_dims_saveable", "scan_everything_saveable", "convolution",
            "llama_block_bf16_donated", "scan_save_only_these_names",
            "scan_save_and_offload_only_these_names")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, dict]:
    return compile_dump_oracle("memory_programs.py", tmp_path_factory.mktemp("memory-programs"))


@pytest.fixture(params=PROGRAMS)
def program(request, compiled):
    dump, described = compiled
    info = described[request.param]
    module = hloscope.load(dump, module=info["module"])
    xla = find_memory_artifacts(dump, info["module"]).read_live_range()
    return module, xla, info


def test_live_ranges_are_xlas(program):
    module, xla, _ = program
    liveness = analyze_liveness(module)
    assert tuple(i.name for i in liveness.program.sequence) == xla.sequence
    assert {v.name: liveness.ranges[v.id] for v in liveness.live_values()} == {
        key: (interval.start, interval.end) for key, interval in xla.by_key().items()}


def test_xla_peak_and_its_buffers(program):
    module, xla, _ = program
    result = memory(module)
    assert (result.xla_moment_time, result.xla_moment_bytes) == (xla.peak_time, xla.peak_bytes)
    liveness = analyze_liveness(module)
    assert {v.name: v.bytes for v in live_at(liveness, xla.peak_time, per_buffer=False)} == {
        value.key: value.bytes for value in xla.peak_values}


def test_live_peak_is_the_memory_xla_holds_at_its_worst(compiled, program):
    """The most bytes XLA's buffer assignment holds for the values its live ranges keep live at
    once (overlapping chunks once) is the live peak; at that moment each piece of memory holds
    the buffer hloscope lists (the value that goes on where two meet)."""
    module, xla, info = program
    assignment = find_memory_artifacts(compiled[0], info["module"]).read_buffer_assignment()
    where = chunks(assignment)
    result = memory(module)
    assert result.peak_bytes == max(held_bytes(xla, where))
    intervals = xla.by_key()
    pieces = pieces_at(xla, where, result.peak_time)
    latest = [max(piece, key=lambda key: (intervals[key].start, key)) for piece in pieces]
    assert sorted(row.name for row in result.live_at_peak) == sorted(latest)


def test_live_peak_against_xlas_figures(compiled):
    """Over all programs: XLA's allocation (memory_analysis()) is at or above the live peak and
    less than 17% above it; XLA's live-range figure is from 0.7% above the live peak to 20%
    below it (its moment is not the highest point); without sharing the peak is up to 11% higher."""
    dump, described = compiled
    against_xla, unshared = [], []
    for info in described.values():
        result = memory(hloscope.load(dump, module=info["module"]))
        xla = find_memory_artifacts(dump, info["module"]).read_live_range()
        assert result.peak_bytes <= info["allocation_bytes"] < 1.17 * result.peak_bytes
        against_xla.append(result.peak_bytes / xla.peak_bytes - 1)
        unshared.append(result.unshared_peak_bytes / result.peak_bytes - 1)
    assert -0.0071 < min(against_xla) < 0 and 0.19 < max(against_xla) < 0.201
    assert min(unshared) == 0 and 0.10 < max(unshared) < 0.11


def test_estimated_allocation_is_within_two_percent_of_xlas(compiled):
    """From the text alone, the allocation estimated by replaying XLA's buffer assignment
    (`heap.py`) is within 2% of memory_analysis()'s on every program; measured: from -0.068%
    to 0 (nine of seventeen to the byte)."""
    dump, described = compiled
    errors = {}
    for name, info in described.items():
        result = memory(hloscope.load(dump, module=info["module"]))
        errors[name] = result.estimated_allocation_bytes / info["allocation_bytes"] - 1
    assert all(abs(error) < 0.02 for error in errors.values()), errors
    assert max(abs(error) for error in errors.values()) < 0.001, errors


def test_outputs_share_dying_operands_as_xlas_heap_does(compiled, program):
    """Within XLA's heap-simulated temporaries, the (operand, output) pairs at overlapping
    offsets whose ranges meet are the shares `sharing.py` predicts. (Outside it, the buffer
    assigner may first put a temporary into a donated argument's or an output's allocation.)"""
    module, xla, info = program
    assignment = find_memory_artifacts(compiled[0], info["module"]).read_buffer_assignment()
    temporaries = {v.key for a in assignment.allocations if a.is_preallocated_temp
                   for v in a.values}
    where = chunks(assignment)
    liveness = analyze_liveness(module)
    by_id = {v.id: v for v in liveness.values}
    ours = {(by_id[a].name, by_id[b].name) for a, b in liveness.shares}
    assert {p for p in ours if set(p) <= temporaries} == _xla_shares(liveness, where, temporaries)


def _xla_shares(liveness, where, keys) -> set[tuple[str, str]]:
    values = {v.name: v for v in liveness.live_values() if v.name in keys}
    found = set()
    for operand in values.values():
        end = liveness.ranges[operand.id][1]
        for user, _ in liveness.program.users.get(operand.instruction, ()):
            for name in values:
                output = values[name]
                if output.instruction is not user or liveness.ranges[output.id][0] != end:
                    continue
                (a, s, e), (b, t, f) = where[operand.name], where[name]
                if a == b and s < f and t < e and \
                        liveness.buffers.find(operand.id) != liveness.buffers.find(output.id):
                    found.add((operand.name, name))
    return found


def test_live_peak_is_the_highest_point(program):
    """Summed value by value (as XLA's dump sums them) the highest point is at least XLA's
    reported moment; summed buffer by buffer (a buffer's touching values once, an output made
    in a dying operand's buffer once with it) no higher, and sharing only lowers it."""
    module, xla, _ = program
    result = memory(module)
    liveness = analyze_liveness(module)
    by_value = max(live_bytes(liveness, per_buffer=False))
    assert by_value >= xla.peak_bytes
    assert result.peak_bytes <= result.unshared_peak_bytes <= by_value
    assert result.peak_bytes == max(step.inner_peak_bytes or step.live_bytes
                                    for step in result.timeline)
    assert sum(row.bytes for row in result.live_at_peak) == result.peak_bytes


def test_arguments_are_categorised_by_their_pytree_position(program):
    module, _, info = program
    liveness = analyze_liveness(module)
    classifier = Classifier(liveness)
    parameters = {v.instruction.parameter_number: classifier.category(v).value
                  for v in liveness.live_values()
                  if v.instruction.opcode == "parameter" and not v.index
                  and liveness.program.computation_of[v.instruction] is module.entry}
    assert [parameters[n] for n in range(len(parameters))] == info["argument_categories"]


def test_saved_activations_have_the_sizes_jax_saves(program):
    """Sizes as element counts: XLA's CPU backend keeps bf16 activations in f32. JAX's scalar
    and boolean residuals (masks) are recomputed by XLA, and XLA may keep a converted copy of an
    argument (a residual JAX counts as the argument)."""
    module, _, info = program
    liveness = analyze_liveness(module)
    classifier = Classifier(liveness)
    saved = {v.shape.element_count for v in liveness.live_values()
             if classifier.category(v).value == "saved activation" and v.shape.rank}
    residuals = {math.prod(shape) for dtype, shape, source in info["residuals"]
                 if "from the argument" not in source and dtype != "bool" and shape}
    arguments = {math.prod(shape) for _, shape, source in info["residuals"]
                 if "from the argument" in source}
    assert residuals <= saved
    assert saved <= residuals | arguments


def test_donated_arguments_share_their_outputs_buffers(program):
    module, _, info = program
    liveness = analyze_liveness(module)
    aliased = {number for _, number, _, _ in module.input_output_alias}
    assert bool(aliased) == info["donated"]
    root = module.entry.root
    for value in liveness.live_values():
        instruction = value.instruction
        if instruction.opcode == "parameter" and instruction.parameter_number in aliased and \
                liveness.program.computation_of[instruction] is module.entry:
            start, end = liveness.ranges[value.id]
            assert end < liveness.program.end_time  # freed once the update is made
            partners = [v for v in liveness.live_values()
                        if liveness.buffers.find(v.id) == liveness.buffers.find(value.id)
                        and any(i is root for i, _ in v.positions)]
            assert partners


FEATURES = {"scan_layers": {"while", "dynamic-update-slice"},
            "loop_with_conditional": {"while", "conditional"},
            "embedding_bf16_donated": {"scatter"}}


@pytest.mark.parametrize("name, opcodes", sorted(FEATURES.items()))
def test_programs_exercise_what_they_claim(compiled, name, opcodes):
    dump, described = compiled
    module = hloscope.load(dump, module=described[name]["module"])
    found = {instruction.opcode for _, instruction in module.instructions()}
    assert opcodes <= found
    if name == "loop_with_conditional":
        body = next(c for c in module.computations.values()
                    if any(i.opcode == "conditional" for i in c.instructions))
        assert any(i.opcode == "while" and i.called_computation("body") == body.name
                   for _, i in module.instructions())
