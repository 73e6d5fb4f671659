"""One deviceless TPU compile (v5e 2x2), small enough that every temporary array sits in VMEM:
the HloProto agrees with the text dumps; the heap replay of each memory space with a trace
(VMEM, SMEM, color 6) agrees with the live-range dump; memory_analysis' HBM arguments, outputs
and aliases are the buffer assignment's, and its HBM temporaries are not: libtpu reports 0 while
the color-0 `preallocated-temp` holds the tuple index tables (512 bytes each, 16 KiB apart).

The slow test recompiles the committed TPU fixture and finds meta.json's figures again."""
from __future__ import annotations

import importlib.util
import json
from dataclasses import asdict
from pathlib import Path

import pytest
from conftest import FIXTURES

from hloscope.parsers.xla_memory import (
    allocation_profile,
    find_memory_artifacts,
    memory_analysis_figures,
    replay_heaps,
    space_allocation,
)

TARGET = "tpu:v5e:2x2"
CONFIG = {"d_model": 128, "n_layers": 1, "n_heads": 4, "d_ff": 512, "vocab": 512,
          "seq_len": 256, "batch": 32}


def compile_tpu(dump: Path, config: dict) -> object:
    if importlib.util.find_spec("libtpu") is None:
        pytest.skip("libtpu is not installed: no deviceless TPU compile")
    from hloscope.workloads.runner import CompileRequest, compile_in_subprocess

    result = compile_in_subprocess(CompileRequest(TARGET, str(dump), builder_kwargs=config,
                                                  compiler_options={"xla_dump_hlo_as_proto": True}),
                                   timeout=600)
    assert result.ok and result.memory is not None, result.error or result.log_tail
    return result.memory


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    dump = tmp_path_factory.mktemp("xla-memory-tpu")
    return dump, compile_tpu(dump, CONFIG)


@pytest.mark.compile
def test_proto_equals_text(compiled) -> None:
    dump, _ = compiled
    artifacts = find_memory_artifacts(dump)
    text, proto = artifacts.read_buffer_assignment(), artifacts.read_hlo_proto().assignment
    assert text.colors == proto.colors == (0, 1, 2, 6)
    for mine, theirs in zip(proto.allocations, text.allocations, strict=True):
        assert (mine.index, mine.size, mine.color, mine.category) == (
            theirs.index, theirs.size, theirs.color, theirs.category)
        assert {(v.id, v.key, v.offset, v.size, v.shape) for v in mine.values} == {
            (v.id, v.key, v.offset, v.size, v.shape) for v in theirs.values}


@pytest.mark.compile
def test_heap_replay_of_every_space_matches_the_live_range_dump(compiled) -> None:
    dump, _ = compiled
    artifacts = find_memory_artifacts(dump)
    text, live_range = artifacts.read_buffer_assignment(), artifacts.read_live_range()
    assignment = artifacts.read_hlo_proto().assignment
    traced = {event.buffer_id for trace in assignment.heap_traces for event in trace.events}
    replays = replay_heaps(assignment)
    assert replays[0].trace_index is None  # HBM holds only tuple tables, placed outside the heap
    for color in (1, 2, 6):
        replay = replays[color]
        assert text.allocation(replay.allocation_index).color == color
        profile = allocation_profile(text, live_range, replay.allocation_index, traced)
        assert replay.heap_peak_bytes == profile.peak_bytes > 0, color
        assert replay.peak_instruction == live_range.sequence[profile.peak_time], color


@pytest.mark.compile
def test_hbm_figures_against_memory_analysis(compiled) -> None:
    dump, memory = compiled
    assignment = find_memory_artifacts(dump).read_buffer_assignment()
    figures = memory_analysis_figures(assignment, "tpu")
    assert (figures.argument_bytes, figures.output_bytes, figures.alias_bytes) == (
        memory.argument_bytes, memory.output_bytes, memory.alias_bytes)
    temp = next(a for a in assignment.allocations if a.is_preallocated_temp and a.color == 0)
    assert temp.values and all(v.shape.startswith("(") and v.size == 512 for v in temp.values)
    assert memory.temp_bytes == 0 < figures.temp_bytes == temp.size


@pytest.mark.slow
@pytest.mark.compile
def test_recompiled_fixture_gives_its_meta(tmp_path) -> None:
    folder = FIXTURES / "tpu-v5e-2x2" / "remat-none"
    meta = json.loads((folder / "meta.json").read_text())
    memory = compile_tpu(tmp_path, meta["config"])
    assert asdict(memory) | {"allocated_bytes": memory.allocated_bytes} == meta["memory"]
    hbm = space_allocation(find_memory_artifacts(tmp_path).read_buffer_assignment(), 0)
    assert hbm == space_allocation(find_memory_artifacts(folder).read_buffer_assignment(), 0)
