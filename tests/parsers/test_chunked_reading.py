"""Files are read a chunk at a time (hloscope.parsers.hlo_file.CHUNK): lines cut by a chunk's end,
statements across chunks and errors near a chunk's edge read as in one piece, plain or gzipped.
The modules are generated with known names, counts and error lines."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import hloscope
from hloscope.errors import ParseError
from hloscope.parsers import hlo_file

COUNT = 200


def _module(count: int = COUNT) -> str:
    lines = ["HloModule m, is_scheduled=true", "", "ENTRY e (p: f32[4]) -> f32[4] {",
             "  p = f32[4]{0} parameter(0)"]
    lines += [f"  a{i} = f32[4]{{0}} add(p, {'p' if i == 0 else f'a{i - 1}'}), "
              f'metadata={{op_name="x/{i}"}}' for i in range(count)]
    lines += [f"  ROOT r = f32[4]{{0}} negate(a{count - 1})", "}", ""]
    return "\n".join(lines)


@pytest.fixture(params=[7, 64, 1 << 18], ids=["chunk7", "chunk64", "chunk256k"])
def chunk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(hlo_file, "CHUNK", request.param)
    return request.param


@pytest.mark.parametrize("suffix", [".hlo", ".hlo.gz"])
def test_a_module_across_chunks_loads_whole(tmp_path: Path, chunk: int, suffix: str) -> None:
    path = tmp_path / f"m{suffix}"
    data = _module().encode()
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    module = hloscope.load(path)
    names = [i.name for i in module.entry.instructions]
    assert names == ["p", *(f"a{i}" for i in range(COUNT)), "r"]
    assert [i.line for i in module.entry.instructions] == list(range(4, 4 + COUNT + 2))
    assert module.entry.instructions[-1].is_root
    assert module.entry.instructions[COUNT].metadata.op_name == f"x/{COUNT - 1}"


def test_an_error_past_the_first_chunk_keeps_its_line(tmp_path: Path, chunk: int) -> None:
    lines = _module().split("\n")
    lines[150] = lines[150].replace("add(", "add(undefined, ")  # line 151
    path = tmp_path / "m.hlo"
    path.write_text("\n".join(lines))
    with pytest.raises(ParseError) as caught:
        hloscope.load(path)
    assert caught.value.location.line == 151
    assert "undefined" in caught.value.message


def test_a_truncated_file_is_refused_at_its_end(tmp_path: Path, chunk: int) -> None:
    text = _module()
    cut = text.index("  a120 =")
    path = tmp_path / "m.hlo"
    path.write_text(text[: cut + 28])  # ends inside a120's operand list, line 125
    with pytest.raises(ParseError) as caught:
        hloscope.load(path)
    assert caught.value.location.line == 125
    assert "truncated" in caught.value.message


def test_damaged_gzip_data_is_a_located_error(tmp_path: Path, chunk: int) -> None:
    data = gzip.compress(_module(2000).encode())
    path = tmp_path / "m.hlo.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ParseError) as caught:
        hloscope.load(path)
    assert "damaged gzip data" in caught.value.message
    assert caught.value.location.line >= 1
