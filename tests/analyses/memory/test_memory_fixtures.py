"""Liveness of the committed fixtures against XLA's own dumps and memory_analysis().

On every fixture (CPU, GPU and TPU compiles of the same train step) hloscope's flattened schedule
and every buffer's live range equal XLA's `*-live-range.txt`, and so do the moment XLA reports
as its peak and the buffers it lists there. On TPU and GPU, the device live peak read from the
text is never above XLA's allocation (arguments + temporaries + outputs - aliased) and within 15%
below it, with the allocation read from XLA's buffer assignment for the device's memory spaces.
(TPU's memory_analysis() takes its temporaries from libtpu's code generation, 3.6-4.4 MB more than
its buffer assignment holds: the live peak is never above that figure either, but sits up to
15.3% below it.) XLA's dumps are read with `hloscope.parsers.xla_memory`.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES

import hloscope
from hloscope.analyses.memory.analysis import memory
from hloscope.analyses.memory.liveness import analyze_liveness
from hloscope.analyses.memory.liveness.peak import live_at
from hloscope.parsers.xla_memory import find_memory_artifacts, space_allocations

FOLDERS = sorted(p.parent for p in FIXTURES.glob("*/*/meta.json"))
CPU_FOLDERS = [f for f in FOLDERS if f.parent.name == "cpu"]
ACCELERATOR_FOLDERS = [f for f in FOLDERS if f.parent.name != "cpu"]
ALLOCATION_TOLERANCE = 0.15


def _id(folder: Path) -> str:
    return f"{folder.parent.name}/{folder.name}"


def _xla_dump(folder: Path):
    return find_memory_artifacts(folder).read_live_range()


@pytest.fixture(scope="module", params=FOLDERS, ids=_id)
def fixture(request):
    folder = request.param
    module = hloscope.load(folder)
    return folder, module, _xla_dump(folder)


def test_flattened_schedule_is_xlas(fixture):
    _, module, dump = fixture
    program = analyze_liveness(module).program
    assert tuple(i.name for i in program.sequence) == dump.sequence


def test_every_live_range_is_xlas(fixture):
    _, module, dump = fixture
    liveness = analyze_liveness(module)
    ours = {v.name: liveness.ranges[v.id] for v in liveness.live_values()}
    assert ours == {key: (i.start, i.end) for key, i in dump.by_key().items()}


def test_xla_peak_moment_and_its_buffers(fixture):
    _, module, dump = fixture
    result = memory(module)
    assert result.xla_moment_time == dump.peak_time
    assert result.xla_moment_bytes == dump.peak_bytes == dump.stack_total_bytes
    liveness = analyze_liveness(module)
    buffers = {v.name: v.bytes for v in live_at(liveness, dump.peak_time, per_buffer=False)}
    assert buffers == {value.key: value.bytes for value in dump.peak_values}


@pytest.mark.parametrize("folder", CPU_FOLDERS, ids=_id)
def test_cpu_live_peak_is_xlas_within_one_percent(folder):
    """The highest point can sit one step before XLA's moment (scan: +1.4%); the live set at
    the peak is then not XLA's list, so both figures are checked."""
    result = memory(hloscope.load(folder))
    dump = _xla_dump(folder)
    assert result.peak_bytes >= dump.peak_bytes
    assert result.xla_moment_bytes == dump.peak_bytes
    assert abs(result.peak_bytes - dump.peak_bytes) <= 0.015 * dump.peak_bytes


@pytest.mark.parametrize("folder", ACCELERATOR_FOLDERS, ids=_id)
def test_device_live_peak_is_below_the_allocation(folder):
    analysis = json.loads((folder / "meta.json").read_text())["memory"]
    result = memory(hloscope.load(folder))
    assignment = find_memory_artifacts(folder).read_buffer_assignment()
    device = {s.memory_space for s in result.spaces if s.location == "device"}
    allocated = sum(s.allocated_bytes for s in space_allocations(assignment) if s.color in device)
    assert result.padded_peak_bytes <= analysis["allocated_bytes"]
    assert result.padded_peak_bytes <= allocated
    assert result.padded_peak_bytes >= (1 - ALLOCATION_TOLERANCE) * allocated


def test_tpu_on_chip_spaces_are_not_device_memory():
    folder = FIXTURES / "tpu-v5e-2x2" / "remat-none"
    result = memory(hloscope.load(folder))
    locations = {s.memory_space: s.location for s in result.spaces}
    assert locations[0] == "device" and locations[1] == "on-chip"
    assert all(row.memory_space == 0 for row in result.live_at_peak)
    assert result.all_spaces_peak_bytes > result.peak_bytes


@pytest.mark.parametrize("folder", FOLDERS, ids=_id)
def test_arguments_are_categorised_by_their_pytree_path(folder):
    """JAX names each argument by its path in the train state (`state.mu['layers'][0]...`):
    TrainState's params are parameters, its master weights, moments and step the optimizer's."""
    expected = {"params": "parameter", "master": "optimizer state", "mu": "optimizer state",
                "nu": "optimizer state", "step": "optimizer state"}
    module = hloscope.load(folder)
    liveness = analyze_liveness(module)
    from hloscope.analyses.memory.liveness.categories import Classifier

    classifier = Classifier(liveness)
    checked = 0
    for value in liveness.live_values():
        argument = value.instruction
        if argument.opcode != "parameter" or liveness.program.computation_of[argument] \
                is not module.entry:
            continue
        path = argument.op_name
        field = path.split("[")[0].split(".")[1] if path.startswith("state.") else "batch"
        assert classifier.category(value).value == expected.get(field, "input"), path
        checked += 1
    assert checked == len(module.entry.parameters)
