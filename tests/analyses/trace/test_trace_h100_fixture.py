"""A real trace: two train steps of the tiny model on one H100 (jax 0.11.2, CUDA graphs on),
fixtures/gpu-h100-jax011/profile-tiny. Its device plane has only CUPTI stream lines; kernels run
inside command buffers, so their `hlo_op` names the CUDA graph and XLA's fusion kernels are
joined by name (the instruction's name with '.' made '_'). The truths here are the trace's own
events and the dump's instruction names, not hloscope's output."""
from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import FIXTURES

import hloscope
from hloscope.errors import UsageError
from hloscope.parsers.trace import load_trace

FOLDER = FIXTURES / "gpu-h100-jax011" / "profile-tiny"


@pytest.fixture(scope="module")
def traced():
    return hloscope.trace(FOLDER / "vm.xplane.pb", hlo=FOLDER, device="h100")


def _kernels_and_instructions() -> tuple[Counter, set[str]]:
    """The program's kernel names (two device-to-host copies belong to no program) and the
    dump's instruction names as XLA names kernels."""
    events = [e for e in load_trace(FOLDER / "vm.xplane.pb").events if e.program_id == 0]
    module = hloscope.load(FOLDER)
    names = {i.name.replace(".", "_").replace("-", "_") for c in module.computations.values()
             for i in c.instructions if "#" not in i.name}
    return Counter(e.name for e in events), names


def test_both_steps_are_found(traced) -> None:
    manifest = json.loads((FOLDER / "meta.json").read_text())
    assert traced.steps == len(manifest["step_seconds"]) == 2


def test_every_fusion_kernel_joins_and_only_library_kernels_do_not(traced) -> None:
    kernels, sanitized = _kernels_and_instructions()
    named = sum(count for name, count in kernels.items() if name in sanitized)
    unnamed = {name for name in kernels if name not in sanitized}
    assert named + traced.unmatched_events == sum(kernels.values())
    assert unnamed and all(not name.startswith(("loop_", "input_", "wrapped_"))
                           for name in unnamed)
    assert 0 < traced.unmatched_share < 0.05
    assert list(traced.unmatched_by_reason) == ["library kernels inside CUDA graphs (command "
                                                "buffers)"]


def test_figures_come_from_the_joined_program(traced) -> None:
    assert traced.module_name == "jit_train_step" and traced.program_id == 0
    assert traced.flops_per_step > 0 and traced.mfu is not None and 0 < traced.mfu < 1


def test_the_trace_json_joins_the_same_kernels(traced) -> None:
    """The profiler's trace JSON of the same run (no program ids, the same kernel events)."""
    from_json = hloscope.trace(FOLDER / "vm.trace.json.gz", hlo=FOLDER, device="h100")
    assert from_json.steps == traced.steps
    assert from_json.unmatched_events == traced.unmatched_events
    assert from_json.unmatched_by_reason.keys() == traced.unmatched_by_reason.keys()
    assert sum(r.events for r in from_json.by_op) == sum(r.events for r in traced.by_op)


def test_a_profile_folder_shows_what_the_run_measured(tmp_path) -> None:
    """The fixture laid out as `hloscope profile` writes it: the allocator's counters recorded
    on the H100 are shown beside XLA's arguments + outputs - aliased + temporaries. For this
    17.6 MB program the peak (138 MB) was the autotuner's, reached while compiling."""
    meta = json.loads((FOLDER / "meta.json").read_text())
    run = tmp_path / "profile"
    (run / "trace" / "plugins" / "profile" / "run").mkdir(parents=True)
    (run / "dump").mkdir()
    (run / "trace" / "plugins" / "profile" / "run" / "vm.xplane.pb").write_bytes(
        (FOLDER / "vm.xplane.pb").read_bytes())
    for name in meta["files"]:
        if name.endswith(".txt"):
            (run / "dump" / name).write_text((FOLDER / name).read_text())
    recorded = {"memory_analysis": meta["memory"], "allocator": meta["allocator"],
                "compile_peak_bytes": meta["allocator"]["peak_bytes_in_use"]}
    (run / "profile.json").write_text(json.dumps(
        {"schema": "hloscope/profile-manifest/v1", "device_memory": recorded}))
    extra = hloscope.trace(run, device="h100").extra
    memory = meta["memory"]
    assert extra["measured_peak_bytes"] == 138_281_216
    assert extra["xla_required_bytes"] == memory["argument_bytes"] + memory["output_bytes"] \
        - memory["alias_bytes"] + memory["temp_bytes"] == 17_643_448
    assert "while compiling" in extra["measured_peak_note"]
    assert "measured_peak_bytes" not in hloscope.trace(FOLDER / "vm.xplane.pb", hlo=FOLDER).extra


def test_the_gpu_is_named_by_the_trace() -> None:
    """The GPU plane's `gpu_device_name` is CUDA's "NVIDIA H100 80GB HBM3": MFU is against the
    H100 without --device, the same figure as with it."""
    unnamed = hloscope.trace(FOLDER / "vm.xplane.pb", hlo=FOLDER)
    named = hloscope.trace(FOLDER / "vm.xplane.pb", hlo=FOLDER, device="h100")
    assert unnamed.device == "h100" and unnamed.mfu == named.mfu is not None
    with pytest.raises(UsageError):
        hloscope.trace(FOLDER / "vm.xplane.pb", hlo=FOLDER, device="v5e")
