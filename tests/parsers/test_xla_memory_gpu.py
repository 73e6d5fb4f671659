"""One deviceless GPU compile (8 x H100) with XLA's temporaries in their own color (S(2)):
memory_analysis() per memory space from the text dumps and from the HloProto, the heap replay of
the temporaries' color against the live-range dump, and the report's name for that color."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from hloscope.model.xla_memory import MemoryAnalysisFigures
from hloscope.parsers.xla_memory import (
    allocation_profile,
    find_memory_artifacts,
    memory_analysis_figures,
    replay_heaps,
    space_allocations,
)

TARGET = "gpu:h100:1x1x8"
CONFIG = {"d_model": 128, "n_layers": 1, "n_heads": 4, "d_ff": 512, "vocab": 512,
          "seq_len": 256, "batch": 32}
OPTIONS = {"xla_dump_hlo_as_proto": True, "xla_gpu_temp_buffer_use_separate_color": True}
FIELDS = ("argument_bytes", "output_bytes", "alias_bytes", "temp_bytes", "host_argument_bytes",
          "host_output_bytes", "host_alias_bytes", "host_temp_bytes")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    for package in ("jax_cuda12_plugin", "nvidia.cuda_nvcc"):
        if importlib.util.find_spec(package.split(".")[0]) is None:
            pytest.skip(f"{package} is not installed: no deviceless GPU compile")
    from hloscope.workloads.runner import CompileRequest, compile_in_subprocess

    dump = tmp_path_factory.mktemp("xla-memory-gpu")
    result = compile_in_subprocess(CompileRequest(TARGET, str(dump), builder_kwargs=CONFIG,
                                                  compiler_options=OPTIONS), timeout=300)
    assert result.ok and result.memory is not None, result.error or result.log_tail
    return Path(dump), result.memory


def figures_of(memory) -> list[int]:
    return [getattr(memory, name) for name in FIELDS]


@pytest.mark.compile
def test_memory_analysis_from_text_and_proto(compiled) -> None:
    dump, memory = compiled
    artifacts = find_memory_artifacts(dump)
    from_text = memory_analysis_figures(artifacts.read_buffer_assignment(), "gpu")
    from_proto = memory_analysis_figures(artifacts.read_hlo_proto().assignment, "gpu")
    for figures in (from_text, from_proto):
        assert isinstance(figures, MemoryAnalysisFigures)
        assert figures_of(figures) == figures_of(memory)
        assert figures.colors == (0, 2)


@pytest.mark.compile
def test_temporaries_have_their_own_space(compiled) -> None:
    dump, memory = compiled
    artifacts = find_memory_artifacts(dump)
    spaces = {space.color: space for space in space_allocations(artifacts.read_buffer_assignment())}
    assert spaces[0].temp_bytes == 0 and spaces[2].temp_bytes == memory.temp_bytes > 0
    assert sum(space.allocated_bytes for space in spaces.values()) == memory.allocated_bytes
    report = artifacts.read_usage_report()
    # XLA names colors generically: GPU's HBM temporaries are printed as "smem".
    assert [(space.name, space.color) for space in report.spaces] == [("default", 0), ("smem", 2)]


@pytest.mark.compile
def test_heap_replay_matches_the_live_range_dump(compiled) -> None:
    dump, _ = compiled
    artifacts = find_memory_artifacts(dump)
    text, live_range = artifacts.read_buffer_assignment(), artifacts.read_live_range()
    assignment = artifacts.read_hlo_proto().assignment
    traced = {event.buffer_id for trace in assignment.heap_traces for event in trace.events}
    replays = replay_heaps(assignment)
    assert replays[0].trace_index is None  # no temporaries left in color 0
    replay = replays[2]
    profile = allocation_profile(text, live_range, replay.allocation_index, traced)
    assert replay.heap_peak_bytes == profile.peak_bytes > 0
    assert replay.peak_instruction == live_range.sequence[profile.peak_time]
