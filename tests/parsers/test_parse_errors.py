"""Malformed input is refused with file:line:col, the offending line and a caret; exit code 4."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from small_modules import GOOD

import hloscope
from hloscope.errors import InputError, ParseError


def _error_for(text: str, tmp_path: Path) -> ParseError:
    path = tmp_path / "bad.hlo"
    path.write_text(text)
    with pytest.raises(ParseError) as caught:
        hloscope.load(path)
    assert caught.value.exit_code == 4
    assert caught.value.location.source == str(path)
    return caught.value


def test_good_module_loads() -> None:
    module = hloscope.load(GOOD)
    assert module.is_scheduled
    assert module.entry.root.called_computations == ("add",)
    assert module.entry.root.dimensions == (0,)


def test_garbled_instruction(tmp_path: Path) -> None:
    text = GOOD.replace("%zero = f32[] constant(0)", "%zero = f32[] constant(0) junk here")
    error = _error_for(text, tmp_path)
    assert (error.location.line, error.location.column) == (11, 29)
    assert "expected ',' or the end of the instruction" in error.message
    rendered = str(error)
    assert "junk here" in rendered and rendered.splitlines()[-1].index("^") == 2 + 28


def test_bad_shape(tmp_path: Path) -> None:
    error = _error_for(GOOD.replace("%p = f32[8]{0}", "%p = f32[8}{0}"), tmp_path)
    assert error.location.line == 10
    assert error.location.column == 8


def test_unknown_element_type(tmp_path: Path) -> None:
    error = _error_for(GOOD.replace("%p = f32[8]{0}", "%p = q7[8]{0}"), tmp_path)
    assert (error.location.line, error.location.column) == (10, 8)
    assert "unknown element type 'q7'" in error.message


def test_unbalanced_brackets_reach_the_end(tmp_path: Path) -> None:
    error = _error_for(GOOD.replace("dimensions={0}", "dimensions={0"), tmp_path)
    assert "truncated" in error.message or "not complete" in error.message
    assert error.location.line == len(GOOD.splitlines())


def test_truncated_inside_computation(tmp_path: Path) -> None:
    text = "\n".join(GOOD.splitlines()[:11]) + "\n"
    error = _error_for(text, tmp_path)
    assert error.location.line == 11
    assert "computation main (opened at line 9) is not closed" in error.message
    assert "after instruction zero" in error.message


def test_not_hlo_at_all(tmp_path: Path) -> None:
    error = _error_for('{"this": "is json"}\n', tmp_path)
    assert (error.location.line, error.location.column) == (1, 1)
    assert "expected 'HloModule' or a computation" in error.message


def test_binary_input(tmp_path: Path) -> None:
    path = tmp_path / "model.hlo"
    path.write_bytes(b"HloModule m\n\xff\xfe\x00garbage")
    with pytest.raises(ParseError) as caught:
        hloscope.load(path)
    assert "not UTF-8" in caught.value.message
    assert caught.value.location.line == 2


def test_empty_file(tmp_path: Path) -> None:
    error = _error_for("// only a comment\n", tmp_path)
    assert "no HLO module found" in error.message


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        hloscope.load(tmp_path / "nope.hlo")
    assert caught.value.exit_code == 3


def test_gzip_and_folder(tmp_path: Path) -> None:
    gz = tmp_path / "m.hlo.gz"
    gz.write_bytes(gzip.compress(GOOD.encode()))
    assert hloscope.load(gz).entry_name == "main"
    folder = tmp_path / "dump"
    folder.mkdir()
    (folder / "module_0001.jit_small.cpu_after_optimizations.txt").write_text(
        GOOD.replace("HloModule m", "HloModule jit_small"))
    big = GOOD.replace("HloModule m", "HloModule jit_big").replace("f32[8]", "f32[8192]")
    (folder / "module_0002.jit_big.cpu_after_optimizations.txt").write_text(big + "\n" * 10)
    picked = hloscope.load(folder)
    assert picked.name == "jit_big"
    assert picked.alternatives == ("module_0001.jit_small.cpu_after_optimizations.txt",)
    assert hloscope.load(folder, module="jit_small").name == "jit_small"
    with pytest.raises(InputError):
        hloscope.load(folder, module="jit_other")
    with pytest.raises(InputError):
        hloscope.load(tmp_path)  # no HLO files directly in tmp_path


def test_lazy_attribute_error_is_located() -> None:
    module = hloscope.load(GOOD.replace("dimensions={0}", "dimensions={x}"))
    with pytest.raises(ParseError) as caught:
        _ = module.entry.root.dimensions
    assert caught.value.location.line == 12
    assert caught.value.location.column == GOOD.splitlines()[11].index("{0}") + 1


def test_dangling_reference_found_by_validate() -> None:
    from hloscope.parsers.validate import validate

    module = hloscope.load(GOOD.replace("to_apply=%add", "to_apply=%mul"), lenient=True)
    with pytest.raises(ParseError, match="computation mul is not defined"):
        validate(module)
    module = hloscope.load(GOOD.replace("reduce(%p, %zero)", "reduce(%p, %one)"), lenient=True)
    with pytest.raises(ParseError, match="operand one is not defined"):
        validate(module)


def test_two_roots_and_two_entries(tmp_path: Path) -> None:
    error = _error_for(GOOD.replace("%zero = f32[]", "ROOT %zero = f32[]").replace(
        "ROOT %r", "ROOT %r"), tmp_path)
    assert "second ROOT" in error.message
    error = _error_for(GOOD.replace("%add (a", "ENTRY %add (a"), tmp_path)
    assert "second ENTRY" in error.message
