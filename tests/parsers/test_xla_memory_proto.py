"""XLA's protos read with hloscope's own schema, against live CPU compiles and jaxlib itself.

The schema is checked field by field against the hlo.proto / xla_data.proto descriptors jaxlib
embeds in its shared library. Three programs are compiled on the CPU in one child process (run
as `python tests/parsers/test_xla_memory_proto.py OUT_DIR`, so JAX stays out of the test process),
dumping text and protos, and writing memory_analysis() with its serialized buffer assignment
and the HloModuleProto. The proto readers must give what the text dumps of the same compile
give; the heap replay must peak where and at what the live-range dump says the traced
temporaries peak; memory_analysis() must follow from both.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import astuple
from pathlib import Path

import pytest
from conftest import ORACLES, REPO
from jaxlib_descriptors import jaxlib_descriptors

from hloscope.model.xla_memory import BufferAllocation, BufferAssignment
from hloscope.parsers.xla_memory import (
    XlaMemoryArtifacts,
    allocation_profile,
    find_memory_artifacts,
    memory_analysis_figures,
    parse_buffer_assignment,
    parse_buffer_assignment_proto,
    replay_heaps,
    with_text_names,
)
from hloscope.parsers.xla_memory.proto_schema import ENUMS, MESSAGES

PROGRAMS = ("train_step", "scan_cond", "mlp_bf16")
MA_FIELDS = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
             "temp_size_in_bytes", "host_argument_size_in_bytes", "host_output_size_in_bytes",
             "host_alias_size_in_bytes", "host_temp_size_in_bytes")


# --- the child: compile and dump --------------------------------------------------------------

def _programs():  # noqa: C901  (one closure per program)
    import jax
    import jax.numpy as jnp

    from hloscope.configs.targets import parse_target
    from hloscope.workloads.topology import make_mesh
    from hloscope.workloads.transformer import build_train_step

    def train_step():
        spec = build_train_step(make_mesh(parse_target("cpu")), d_model=128, n_layers=2,
                                n_heads=4, d_ff=512, vocab=512, seq_len=64, batch=8)
        return jax.jit(spec.fn, donate_argnums=spec.donate_argnums), spec.args

    def scan_cond():
        def layer(x, w):
            y = jnp.tanh(x @ w)
            return jax.lax.cond(y.sum() > 0, lambda v: v * 2.0, lambda v: v - 1.0, y), None

        def loss(ws, x):
            return jnp.sum(jax.lax.scan(layer, x, ws)[0] ** 2)

        def step(ws, x):
            return ws - 0.1 * jax.grad(loss)(ws, x)

        args = (jax.ShapeDtypeStruct((4, 256, 256), jnp.float32),
                jax.ShapeDtypeStruct((64, 256), jnp.float32))
        return jax.jit(step, donate_argnums=(0,)), args

    def mlp_bf16():
        def loss(w1, w2, x):
            return jnp.mean(jax.nn.gelu(x @ w1) @ w2)

        args = (jax.ShapeDtypeStruct((512, 1024), jnp.bfloat16),
                jax.ShapeDtypeStruct((1024, 512), jnp.bfloat16),
                jax.ShapeDtypeStruct((128, 512), jnp.bfloat16))
        return jax.jit(jax.grad(loss, argnums=(0, 1))), args

    return {"train_step": train_step, "scan_cond": scan_cond, "mlp_bf16": mlp_bf16}


def _child(out: Path) -> None:
    for name, build in _programs().items():
        folder = out / name
        jitted, args = build()
        compiled = jitted.lower(*args).compile(compiler_options={
            "xla_dump_to": str(folder), "xla_dump_hlo_as_text": True,
            "xla_dump_hlo_as_proto": True})
        stats = compiled.memory_analysis()
        (folder / "memory_analysis.json").write_text(
            json.dumps({f: getattr(stats, f) for f in MA_FIELDS}))
        (folder / "buffer_assignment.pb").write_bytes(stats.serialized_buffer_assignment_proto)
        module = compiled.runtime_executable().hlo_modules()[0]
        (folder / "module.pb").write_bytes(module.as_serialized_hlo_module_proto())


# --- the tests ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> Path:
    pytest.importorskip("jax")
    out = tmp_path_factory.mktemp("xla-memory-cpu")
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_ENABLE_COMPILATION_CACHE": "false",
           "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests"), str(ORACLES),
                                          os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, __file__, str(out)], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def _text(folder: Path) -> tuple[BufferAssignment, XlaMemoryArtifacts]:
    artifacts = find_memory_artifacts(folder)
    assignment = artifacts.read_buffer_assignment()
    assert assignment is not None
    return assignment, artifacts


def _layout(allocation: BufferAllocation) -> tuple:
    values = {(v.id, v.key, v.offset, v.size, v.shape) for v in allocation.values}
    head = (allocation.index, allocation.size, allocation.color, allocation.parameter_number,
            allocation.parameter_shape_index, allocation.maybe_live_out, allocation.is_constant,
            allocation.is_thread_local, allocation.is_preallocated_temp,
            allocation.is_aliased_parameter)
    return head, values


@pytest.mark.compile
@pytest.mark.parametrize("program", PROGRAMS)
def test_hlo_proto_dump_equals_the_text_dumps(compiled: Path, program: str) -> None:
    text, artifacts = _text(compiled / program)
    assert artifacts.hlo_proto is not None and artifacts.buffer_values is not None
    proto = artifacts.read_hlo_proto()
    assert proto.module is not None and proto.assignment is not None
    assert [_layout(a) for a in proto.assignment.allocations] == [
        _layout(a) for a in text.allocations]
    assert proto.assignment.heap_traces


@pytest.mark.compile
@pytest.mark.parametrize("program", PROGRAMS)
def test_values_file_lists_every_assigned_value(compiled: Path, program: str) -> None:
    text, artifacts = _text(compiled / program)
    assert text.total_bytes_used == text.total_bytes
    assert {d.id for d in text.value_details} == {v.id for _, v in text.values()}
    details = {d.id: d for d in text.value_details}
    assert all(details[v.id].key == v.key for _, v in text.values())
    assert all(d.positions and d.definition.startswith("%") for d in text.value_details)
    # Older XLA wrote both parts into one file; that reads the same.
    single = parse_buffer_assignment(artifacts.buffer_assignment.read_text()
                                     + artifacts.buffer_values.read_text())
    assert (single.allocations, single.total_bytes_used, single.value_details) == (
        text.allocations, text.total_bytes_used, text.value_details)


@pytest.mark.compile
@pytest.mark.parametrize("program", PROGRAMS)
def test_memory_analysis_proto_and_figures(compiled: Path, program: str) -> None:
    folder = compiled / program
    text, _ = _text(folder)
    expected = json.loads((folder / "memory_analysis.json").read_text())
    data = (folder / "buffer_assignment.pb").read_bytes()
    named = parse_buffer_assignment_proto(data, "ma.pb", (folder / "module.pb").read_bytes())
    assert [_layout(a) for a in named.allocations] == [_layout(a) for a in text.allocations]
    renamed = with_text_names(parse_buffer_assignment_proto(data, "ma.pb"), text)
    assert [_layout(a) for a in renamed.allocations] == [_layout(a) for a in text.allocations]
    for source in (named, text):
        figures = memory_analysis_figures(source, "cpu")
        assert [getattr(figures, f.replace("_size_in", "")) for f in MA_FIELDS] == [
            expected[f] for f in MA_FIELDS]


@pytest.mark.compile
@pytest.mark.parametrize("program", PROGRAMS)
def test_heap_replay_peaks_with_the_live_range_dump(compiled: Path, program: str) -> None:
    """XProf's replay of the proto trace vs the text: live-range intervals of the traced values
    of the same allocation, sizes and offsets from the buffer-assignment text."""
    text, artifacts = _text(compiled / program)
    live_range = artifacts.read_live_range()
    assignment = artifacts.read_hlo_proto().assignment
    traced = {event.buffer_id for trace in assignment.heap_traces for event in trace.events}
    for color, replay in replay_heaps(assignment).items():
        assert replay.allocation_index is not None
        allocation = text.allocation(replay.allocation_index)
        assert allocation.is_preallocated_temp and allocation.color == color
        profile = allocation_profile(text, live_range, allocation.index, traced)
        assert replay.heap_peak_bytes == profile.peak_bytes
        assert replay.peak_instruction == live_range.sequence[profile.peak_time]
        assert 0 < replay.heap_peak_bytes <= allocation.size
        assert replay.peak_bytes == replay.heap_peak_bytes + replay.indefinite_bytes


@pytest.mark.compile
def test_live_range_dumps_of_the_programs(compiled: Path) -> None:
    for program in PROGRAMS:
        live_range = _text(compiled / program)[1].read_live_range()
        assert live_range.peak_bytes == live_range.stack_total_bytes > 0


# --- the schema against jaxlib ----------------------------------------------------------------

def test_schema_field_numbers_and_types_are_jaxlibs() -> None:
    theirs = jaxlib_descriptors(("xla/service/hlo.proto", "xla/xla_data.proto"))
    for message, fields in MESSAGES.items():
        assert message in theirs, message
        by_name = {f.name: f for f in theirs[message].field}
        for name, number, kind, label, type_name in fields:
            field = by_name.get(name)
            assert field is not None, f"{message}.{name}"
            assert (field.number, field.type, field.label) == (number, kind, label), \
                f"{message}.{name}"
            assert field.type_name.removeprefix(".xla.") == type_name, f"{message}.{name}"
    for enum, values in ENUMS.items():
        assert {(v.name, v.number) for v in theirs[enum].value} >= set(values), enum


def test_schema_reads_what_it_declares() -> None:
    from hloscope.parsers.xla_memory.proto_schema import message_class

    allocation = message_class("xla.BufferAllocationProto")(
        index=3, size=64, is_entry_computation_parameter=True, parameter_number=2,
        is_parameter_aliased_with_output=True, maybe_live_out=True)
    allocation.assigned.add(logical_buffer_id=9, offset=0, size=64, element_type=11)
    proto = message_class("xla.BufferAssignmentProto")()
    proto.buffer_allocations.append(allocation)
    proto.logical_buffers.add(id=9, size=64, color=0).defined_at.shape_index.append(1)
    read = parse_buffer_assignment_proto(proto.SerializeToString())
    only = read.allocations[0]
    assert astuple(only)[:4] == (3, 64, 0, 2)
    assert only.is_aliased_parameter and only.values[0].shape_index == (1,)


if __name__ == "__main__":
    _child(Path(sys.argv[1]))
