"""Liveness of generated JAX programs against XLA's dumps and JAX's own account.

`memory_programs.py` compiles nine small programs on the CPU in one child process (~5 s) with
XLA's dumps on. For each, hloscope's live ranges, the moment XLA reports as its peak and the
buffers it lists there equal XLA's `*-live-range.txt`; the highest point of the value-by-value
timeline is at least XLA's reported figure; buffers that hold arguments are categorised as the
argument's pytree position says (parameter, optimizer state, input); and the buffers categorised
as saved activations have the sizes of the residuals `saved_residuals` says JAX saves.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ORACLES

import hloscope
from hloscope.analyses.memory.analysis import memory
from hloscope.analyses.memory.liveness import analyze_liveness
from hloscope.analyses.memory.liveness.categories import Classifier
from hloscope.analyses.memory.liveness.peak import live_at, live_bytes
from hloscope.parsers.xla_memory import find_memory_artifacts

pytestmark = pytest.mark.compile
PROGRAMS = ("mlp_f32", "mlp_bf16_donated", "attention", "scan_layers", "remat_full",
            "remat_dots", "remat_dots_no_batch_bf16", "embedding_bf16_donated",
            "loop_with_conditional")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("memory-programs")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    subprocess.run([sys.executable, str(ORACLES / "memory_programs.py"), str(out / "dump"),
                    str(out / "programs.json")], check=True, env=env, capture_output=True,
                   timeout=300)
    return out / "dump", json.loads((out / "programs.json").read_text())


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


def test_live_peak_is_the_highest_point(program):
    """Summed value by value (as XLA's dump sums them) the highest point is at least XLA's
    reported moment; summed buffer by buffer (a buffer's touching values once) no higher."""
    module, xla, _ = program
    result = memory(module)
    liveness = analyze_liveness(module)
    by_value = max(live_bytes(liveness, per_buffer=False))
    assert by_value >= xla.peak_bytes
    assert result.peak_bytes <= by_value
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
