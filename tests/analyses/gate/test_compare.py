"""`hloscope compare`: fixture pairs with known differences, hand-built modules, the CLI."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

import hloscope
from hloscope.cli.main import cli

TPU_NONE = FIXTURES / "tpu-v5e-2x2" / "remat-none"
TPU_FULL = FIXTURES / "tpu-v5e-2x2" / "remat-full"
CPU_SCAN = FIXTURES / "cpu" / "scan-remat-none"
CPU_UNROLLED = FIXTURES / "cpu" / "remat-none"

PROGRAM = """HloModule m, is_scheduled=true
ENTRY main {
  p = f32[256] parameter(0)
  x = f32[256] negate(p), metadata={op_name="jit(f)/neg"}
  y = f32[256] exponential(SOURCE), metadata={op_name="jit(f)/OPNAME"}
  ROOT z = f32[256] add(x, y), metadata={op_name="jit(f)/add"}
}
"""


def program(source: str, op_name: str) -> str:
    return PROGRAM.replace("SOURCE", source).replace("OPNAME", op_name)


def meta(folder):
    return json.loads((folder / "meta.json").read_text())


def run(*args: str):
    return CliRunner().invoke(cli, ["compare", *args])


def test_a_module_compared_with_itself_shows_no_differences() -> None:
    result = hloscope.compare(TPU_FULL, TPU_FULL)
    assert not result.differs
    assert all(m.delta in (0, 0.0, None) for m in result.metrics)
    assert result.opcodes == [] and result.buffers == []
    assert all(rows == [] for rows in result.flops_by.values())


def test_buffers_are_matched_by_op_name_and_shape_not_by_instruction_names() -> None:
    """By construction the peak (at the add) holds p, x and y, 1 KiB each, with z made in the
    dying x's buffer (XLA lets an elementwise user of the same shape share its operand's buffer:
    CanShareOperandBufferWithUser, its ElementWiseSameShape test); B makes y with another
    operation, so exactly that buffer disappears and its replacement appears."""
    a = hloscope.load(program("x", "exp"))
    b = hloscope.load(program("p", "exp_of_input").replace("%", ""))
    result = hloscope.compare(a, b)
    changes = {(c.change, c.op_name, c.shape, c.bytes_a, c.bytes_b) for c in result.buffers}
    assert changes == {("disappears", "jit(f)/exp", "f32[256]", 1024, 0),
                       ("appears", "jit(f)/exp_of_input", "f32[256]", 0, 1024)}
    peak = next(m for m in result.metrics if m.key == "peak_bytes")
    assert (peak.a, peak.b, peak.delta) == (3072, 3072, 0)


def test_remat_full_on_tpu_drops_saved_activations_and_adds_recompute() -> None:
    result = hloscope.compare(TPU_NONE, TPU_FULL)
    metrics = {m.key: m for m in result.metrics}
    # FLOPs against libtpu's own cost analysis of each program (unrolled: no loops)
    for side, folder in (("a", TPU_NONE), ("b", TPU_FULL)):
        assert getattr(metrics["total_flops"], side) == pytest.approx(
            meta(folder)["cost"]["flops"], rel=1e-5)
    assert metrics["recompute_flops"].a == 0 < metrics["recompute_flops"].b
    assert metrics["peak_bytes"].delta < 0 and metrics["allocation_bytes"].delta < 0
    gone = [c for c in result.buffers if c.change == "disappears"
            and c.category == "saved activation"]
    assert gone and all("transpose(" not in c.op_name and "jvp(" in c.op_name for c in gone)
    largest = max(gone, key=lambda c: c.bytes_a)
    assert (largest.shape, largest.bytes_a) == ("f32[16,4,512,512]", 16 * 4 * 512 * 512 * 4)
    # every byte of the peak difference is in a listed change
    assert sum(c.delta for c in result.buffers) == metrics["peak_bytes"].delta
    assert [d.key for d in result.flops_by["phase"]][0] == "recompute"


def test_scan_against_unrolled_layers() -> None:
    result = hloscope.compare(CPU_SCAN, CPU_UNROLLED)
    opcodes = {d.key: d for d in result.opcodes}
    assert opcodes["while"].a > 0 and opcodes["while"].b < opcodes["while"].a
    flops = next(m for m in result.metrics if m.key == "total_flops")
    # the same model either way: scanned layers cost what unrolled ones do, within 3%
    assert flops.relative is not None and abs(flops.relative) < 0.03


def test_cli_json_is_the_schema_and_identical_across_runs() -> None:
    first = run(str(TPU_NONE), str(TPU_FULL), "--format", "json")
    second = run(str(TPU_NONE), str(TPU_FULL), "--format", "json")
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    data = json.loads(first.output)
    assert data["schema"] == "hloscope/compare/v1" and data["differs"] is True
    assert {m["key"] for m in data["metrics"]} >= {"peak_bytes", "total_flops", "fusions"}
    assert all(type(m["a"]) is int for m in data["metrics"] if m["key"].endswith("bytes"))


def test_frames_match_the_json() -> None:
    result = hloscope.compare(TPU_NONE, TPU_FULL)
    frames = result.to_pandas()
    buffers = frames["buffers"]
    assert int(buffers["delta"].sum()) == sum(c["delta"] for c in result.to_dict()["buffers"])
    assert frames["metrics"]["a"].iloc[0] == result.metrics[0].a


@pytest.mark.parametrize("args, code", [
    (("missing-a.hlo", str(TPU_FULL)), 3),
    ((str(TPU_FULL), str(TPU_FULL), "--device", "no-such-chip"), 2),
])
def test_bad_input_exit_codes(args, code) -> None:
    result = run(*args)
    assert result.exit_code == code
    assert "Traceback" not in result.output


def test_garbled_hlo_exit_4(tmp_path) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY main {\n  p = f32[4 parameter(0)\n}\n")
    result = run(str(bad), str(TPU_FULL))
    assert result.exit_code == 4 and "bad.hlo:3:" in result.output
