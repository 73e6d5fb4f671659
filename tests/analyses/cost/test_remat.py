"""Remat counts equal a direct count of the markers, made with XLA's own parser and printer;
XLA's `.remat` clones are counted apart; costs and overhead follow from the charges."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, corpus_params, require_corpus
from cost_oracle import module_texts
from xla_oracle import printing_beside, xla_available

import hloscope
from hloscope.analyses.cost.flops import flops
from hloscope.analyses.cost.remat import remat

FIXTURE_HLO = sorted(FIXTURES.glob("**/*after_optimizations.txt"))
_NO_WORK = {"kParameter", "kConstant", "kTuple", "kGetTupleElement", "kBitcast"}
_OP_NAME = re.compile(r'op_name="([^"]*)"')
_CALLS = re.compile(r"calls=%?([\w.\-]+)")


def xla_marker_count(text: str) -> tuple[int, int]:
    """(instructions whose op_name holds /rematted_computation/, fusions calling them), counted
    on XLA's parse of the text and XLA's printing of each instruction."""
    from jaxlib import _hlo

    module = _hlo.hlo_module_from_text(text)
    marked: set[str] = set()
    count = 0
    fusion_targets: list[str] = []
    for computation in module.computations():
        for instruction in computation.instructions():
            printed = instruction.to_string()
            opcode = str(instruction.opcode).rsplit(".", 1)[-1]
            name = _OP_NAME.search(printed)
            if opcode not in _NO_WORK and name and "/rematted_computation/" in name.group(1):
                count += 1
                marked.add(computation.name)
            if opcode == "kFusion":
                fusion_targets.append(_CALLS.search(printed).group(1))
    return count, sum(1 for target in fusion_targets if target in marked)


def assert_counts_match(text: str, xla_text: str | None = None) -> None:
    """`xla_text`: the same program as XLA can read it, where `text` is newer than its parser."""
    if not xla_available():
        pytest.skip("jaxlib is not importable: XLA's parser makes the direct count")
    result = remat(hloscope.load(text))
    assert (result.remat_instructions, result.remat_fusions) == xla_marker_count(xla_text or text)


@pytest.mark.parametrize("path", FIXTURE_HLO, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_counts_match_a_direct_count(path: Path) -> None:
    xla_text = printing_beside(path) if xla_available() else None
    assert_counts_match(path.read_text(), xla_text)


@pytest.mark.parametrize("corpus_file", corpus_params(complete=True))
def test_corpus_counts_match_a_direct_count(corpus_file) -> None:
    require_corpus()
    for text in module_texts(corpus_file.path.read_text()):
        if "rematted_computation" in text:
            assert_counts_match(text)


def test_full_remat_fixture_recomputes_and_none_does_not() -> None:
    full = remat(hloscope.load(FIXTURES / "cpu" / "remat-full"))
    none = remat(hloscope.load(FIXTURES / "cpu" / "remat-none"))
    assert full.remat_instructions > 0 and full.remat_fusions > 0
    assert full.recompute_flops > 0
    assert full.recompute_overhead == full.recompute_flops / full.forward_flops
    assert (none.remat_instructions, none.recompute_flops, none.recompute_overhead) == (0, 0, 0)
    phases = {row.key: row.flops for row in
              flops(hloscope.load(FIXTURES / "cpu" / "remat-full")).rows("phase")}
    assert full.recompute_flops == phases["recompute"]
    assert full.forward_flops == phases["forward"]


CLONES = """HloModule clones
fused_mul {
  a = f32[32,32] parameter(0)
  ROOT m = f32[32,32] multiply(a, a),
      metadata={op_name="jit(f)/transpose(jvp(layer_0))/checkpoint/rematted_computation/mul"}
}
ENTRY e {
  x = f32[32,32] parameter(0)
  fusion.3 = f32[32,32] fusion(x), kind=kLoop, calls=fused_mul
  fusion.3.remat = f32[32,32] fusion(x), kind=kLoop, calls=fused_mul
  copy.remat2 = f32[32,32] copy(fusion.3)
  remate = f32[32,32] negate(copy.remat2), metadata={op_name="jit(f)/transpose(jvp(layer_0))/mul"}
  fusion.3.remat.1 = f32[32,32] fusion(remate), kind=kLoop, calls=fused_mul
  gte.remat = f32[32,32] bitcast(fusion.3.remat.1)
  x.remat_compressed = f32[32,32] copy(x)
  fusion.remat.add = f32[32,32] add(gte.remat, x.remat_compressed)
  ROOT t = (f32[32,32], f32[32,32], f32[32,32]) tuple(fusion.3.remat, remate, fusion.remat.add)
}
"""


def test_xla_clones_are_counted_apart_by_their_suffix() -> None:
    result = remat(hloscope.load(CLONES))
    # A bitcast does no work; `fusion.remat.add` does not end in a remat suffix.
    assert result.xla_clones == ["fusion.3.remat", "copy.remat2", "fusion.3.remat.1",
                                 "x.remat_compressed"]
    assert result.xla_remat_instructions == 4
    assert (result.remat_instructions, result.remat_fusions) == (1, 3)
    # The clones run: two fused multiplies of 1024 elements; the copy does no arithmetic.
    assert result.xla_remat_flops == 2 * 1024
    # The JAX-marked multiply runs in three fusions (one original, two clones).
    assert result.recompute_flops == 3 * 1024


MOVED = """HloModule moved
ENTRY e {
  x = f32[32,32] parameter(0)
  multiply.7.remat = f32[32,32] multiply(x, x)
  add.2 = f32[32,32] add(x, x)
  add.2.remat3 = f32[32,32] add(x, x)
  ROOT t = (f32[32,32], f32[32,32], f32[32,32]) tuple(multiply.7.remat, add.2, add.2.remat3)
}
"""


def test_a_clone_that_replaced_its_original_adds_no_work() -> None:
    result = remat(hloscope.load(MOVED))
    assert result.xla_clones == ["multiply.7.remat", "add.2.remat3"]
    # multiply.7 is gone: its clone runs once, where it would have. add.2 runs twice.
    assert result.xla_remat_flops == 1024
    assert result.xla_remat_bytes_accessed == 3 * 1024 * 4
