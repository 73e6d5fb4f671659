"""`compare` against truths that do not come from hloscope.

- Remat none vs full on the TPU fixtures: which forward values the backward pass reads, found by
  walking XLA's optimized HLO text here (a small independent reader: an instruction whose op_name
  has `transpose(` reading, directly or through tuple/bitcast/copy plumbing — TPU's async
  copies and slices, and the `ConcatBitcast` custom-call that joins slices, included —, the
  result of one whose op_name has `jvp(` and not `transpose(`), and XLA's own memory_analysis()
  and cost_analysis() figures in meta.json.
- The hand-built pair in remat_pair.py: peaks, buffers, FLOPs and remat counts by construction.
- Scan vs unrolled CPU fixtures: the model's configuration (stacked residuals have n_layers as
  their leading dimension) and XLA's cost_analysis() of the loop-free unrolled program.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import FIXTURES
from remat_pair import (
    REMAT_FLOPS,
    REMAT_PEAK,
    SAVED_ACTIVATION,
    SAVED_FLOPS,
    SAVED_PEAK,
    remat_text,
    renumbered,
    saved_text,
)

import hloscope
from hloscope.analyses.gate.compare import layout_free, stable_name

TPU_NONE = FIXTURES / "tpu-v5e-2x2" / "remat-none"
TPU_FULL = FIXTURES / "tpu-v5e-2x2" / "remat-full"
CPU_SCAN = FIXTURES / "cpu" / "scan-remat-none"
CPU_UNROLLED = FIXTURES / "cpu" / "remat-none"

_LINE = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (\(.*?\)|\S+) ([\w\-]+)\((.*?)\)(.*)$")
_OP_NAME = re.compile(r'op_name="([^"]*)"')
_PLUMBING = {"get-tuple-element", "bitcast", "copy", "copy-start", "copy-done", "tuple",
             "async-start", "async-done", "ConcatBitcast"}


def meta(folder: Path) -> dict:
    return json.loads((folder / "meta.json").read_text())


def entry_instructions(folder: Path) -> dict[str, tuple[str, str, list[str], str]]:
    """name -> (shape, opcode, operand names, op_name) of the entry computation's instructions."""
    hlo = next(p for p in folder.iterdir() if p.name.endswith("after_optimizations.txt"))
    text = hlo.read_text()
    body = text[text.index("\nENTRY "):].split("\n}\n", 1)[0].splitlines()[1:]
    table = {}
    for line in body:
        match = _LINE.match(line)
        if match:
            name, shape, opcode, operands, rest = match.groups()
            if opcode == "custom-call" and 'custom_call_target="ConcatBitcast"' in rest:
                opcode = "ConcatBitcast"  # joins slices of one buffer back into it
            op_name = _OP_NAME.search(rest)
            table[name] = (shape, opcode, re.findall(r"%([\w.\-]+)", operands),
                           op_name.group(1) if op_name else "")
    return table


def backward_reads_of_forward_values(folder: Path) -> set[tuple[str, str]]:
    """(forward instruction, shape read) for each forward result the backward pass reads."""
    table = entry_instructions(folder)

    def chain(name: str) -> list[str]:
        """`name`, then what it copies or unpacks, back to the instruction that computed it."""
        names = [name]
        while names[-1] in table and table[names[-1]][1] in _PLUMBING and table[names[-1]][2]:
            names.append(table[names[-1]][2][0])
        return names

    read = set()
    for _, _, operands, op_name in table.values():
        if "transpose(" not in op_name:
            continue
        for operand in operands:
            carriers = chain(operand)
            origin = table.get(carriers[-1], ("", "", [], ""))[3]
            if "jvp(" in origin and "transpose(" not in origin:
                read.update((name, layout_free(table[operand][0])) for name in carriers)
    return read


@pytest.fixture(scope="module")
def tpu_pair():
    return hloscope.compare(TPU_NONE, TPU_FULL), hloscope.memory(TPU_NONE)


def test_saved_activations_that_disappear_are_forward_values_the_backward_reads(tpu_pair):
    result, memory_none = tpu_pair
    residuals = backward_reads_of_forward_values(TPU_NONE)
    gone = {(c.op_name, c.shape) for c in result.buffers
            if c.change == "disappears" and c.category == "saved activation"}
    assert gone
    rows = [row for row in memory_none.live_at_peak
            if (stable_name(row.op_name), layout_free(row.shape)) in gone]
    carriers = {name for name, _ in residuals}
    assert rows and all(row.instruction in carriers for row in rows)


def test_the_attention_probabilities_are_saved_without_remat_and_not_with_it(tpu_pair):
    """f32[batch/devices=16, heads=4, seq=512, seq=512]: 64 MiB per device."""
    result, _ = tpu_pair
    probabilities = "f32[16,4,512,512]"
    assert probabilities in {shape for _, shape in backward_reads_of_forward_values(TPU_NONE)}
    assert probabilities not in {shape for _, shape in backward_reads_of_forward_values(TPU_FULL)}
    largest = max((c for c in result.buffers if c.change == "disappears"),
                  key=lambda c: c.bytes_a)
    assert (largest.shape, largest.category, largest.bytes_a) == (
        probabilities, "saved activation", 16 * 4 * 512 * 512 * 4)


def test_fewer_forward_values_cross_into_the_backward_pass_with_full_remat() -> None:
    assert len(backward_reads_of_forward_values(TPU_FULL)) < len(
        backward_reads_of_forward_values(TPU_NONE))


def test_peak_and_flops_deltas_agree_with_xla(tpu_pair):
    """XLA's memory_analysis() and cost_analysis() of each program (meta.json): arguments are
    the same, so the memory saved is temporaries (the live peak is a different figure from
    XLA's allocation, by a few percent), and the FLOPs added are the recomputation."""
    result, _ = tpu_pair
    metrics = {m.key: m for m in result.metrics}
    none, full = meta(TPU_NONE), meta(TPU_FULL)
    xla_temp_delta = full["memory"]["temp_bytes"] - none["memory"]["temp_bytes"]
    assert metrics["peak_bytes"].delta == pytest.approx(xla_temp_delta, rel=0.05)
    xla_flops_delta = full["cost"]["flops"] - none["cost"]["flops"]
    assert metrics["total_flops"].delta == pytest.approx(xla_flops_delta, rel=1e-4)
    assert metrics["argument_bytes"].delta == full["memory"]["argument_bytes"] \
        - none["memory"]["argument_bytes"] == 0


def test_hand_built_pair_known_by_construction() -> None:
    result = hloscope.compare(hloscope.load(saved_text()), hloscope.load(remat_text()))
    metrics = {m.key: m for m in result.metrics}
    assert (metrics["peak_bytes"].a, metrics["peak_bytes"].b) == (SAVED_PEAK, REMAT_PEAK)
    assert (metrics["total_flops"].a, metrics["total_flops"].b) == (SAVED_FLOPS, REMAT_FLOPS)
    assert (metrics["recompute_flops"].a, metrics["recompute_flops"].b) == (0, 1024)
    assert (metrics["remat_instructions"].a, metrics["remat_instructions"].b) == (0, 1)
    assert (metrics["instructions"].a, metrics["instructions"].b) == (6, 7)
    op_name, shape, size = SAVED_ACTIVATION
    assert [(c.change, c.op_name, c.shape, c.category, c.bytes_a, c.bytes_b)
            for c in result.buffers] == [("disappears", op_name, shape, "saved activation",
                                          size, 0)]
    assert [(d.key, d.a, d.b) for d in result.opcodes] == [("multiply", 2, 3)]
    assert [(d.key, d.a, d.b) for d in result.flops_by["phase"]] == [("recompute", 0, 1024)]
    assert not result.peak_moved


def test_other_instruction_numbers_are_no_difference() -> None:
    """Another compile numbers instructions differently; matching never uses the numbers."""
    first, second = renumbered(saved_text(), 100), renumbered(saved_text(), 200)
    assert "fusion.100 = " in first and "op_name=\"broadcast.104\"" in first
    assert "fusion.200 = " in second and "op_name=\"broadcast.204\"" in second
    result = hloscope.compare(hloscope.load(first), hloscope.load(second))
    assert not result.differs


def test_scan_saves_residuals_stacked_over_the_layers() -> None:
    """Scanned layers save each residual once for all layers: [n_layers, batch, seq, d_ff]."""
    config = meta(CPU_SCAN)["config"]
    stacked = f"f32[{config['n_layers']},{config['batch']},{config['seq_len']},{config['d_ff']}]"
    result = hloscope.compare(CPU_SCAN, CPU_UNROLLED)
    gone = [c for c in result.buffers if c.change == "disappears" and c.shape == stacked]
    assert gone and all(c.category == "saved activation" and "jvp(layers)" in c.op_name
                        for c in gone)


def test_scan_and_unrolled_cost_what_xla_says_the_unrolled_program_costs() -> None:
    """XLA's cost_analysis() counts a loop body once, so only the loop-free program is truth;
    the scanned one does the same matmuls, so its FLOPs by layer scope add up to the same."""
    result = hloscope.compare(CPU_SCAN, CPU_UNROLLED)
    flops = next(m for m in result.metrics if m.key == "total_flops")
    assert flops.b == pytest.approx(meta(CPU_UNROLLED)["cost"]["flops"], rel=1e-6)
    scopes = {d.key: d for d in result.flops_by["scope"]}
    per_layer = sum(scopes[f"layer_{n}/dot_general"].b
                    for n in range(meta(CPU_SCAN)["config"]["n_layers"]))
    assert scopes["layers/dot_general"].a == pytest.approx(per_layer, rel=2e-3)
    # the scan's layer loop is unrolled in the report: both sides have layer_0..layer_{n-1}
    layers = {d.key: d for d in result.flops_by["layer"]}
    assert not any(key.startswith("while") for key in layers)
    assert all(layers[f"layer_{n}"].a > 0 and layers[f"layer_{n}"].b > 0
               for n in range(meta(CPU_SCAN)["config"]["n_layers"]))


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "csv"])
def test_every_format_is_identical_across_runs(fmt) -> None:
    from click.testing import CliRunner

    from hloscope.cli.main import cli

    args = ["compare", str(TPU_NONE), str(TPU_FULL), "--device", "v5e", "--format", fmt,
            "--details"]  # text: the buffers table too
    first, second = CliRunner().invoke(cli, args), CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    # CSV holds the first table (the figures); the others list the buffers too
    assert ("live peak" if fmt == "csv" else "f32[16,4,512,512]") in first.output


def test_unscheduled_inputs_show_memory_as_na_with_the_reason(tmp_path) -> None:
    from click.testing import CliRunner

    from hloscope.cli.main import cli

    before = tmp_path / "before.hlo"
    before.write_text(saved_text().replace(", is_scheduled=true", ""))
    after = tmp_path / "after.hlo"
    after.write_text(remat_text())
    result = CliRunner().invoke(cli, ["compare", str(before), str(after), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    peak = next(m for m in data["metrics"] if m["key"] == "peak_bytes")
    assert (peak["a"], peak["b"], peak["delta"]) == (None, REMAT_PEAK, None)
    assert any("before.hlo: memory n/a: module not scheduled" in n for n in data["notes"])
    flops = next(m for m in data["metrics"] if m["key"] == "total_flops")
    assert (flops["a"], flops["b"]) == (SAVED_FLOPS, REMAT_FLOPS)
