"""frontier.json (formats/frontier.py): a hand-built FrontierResult written and read back gives
the values it was built from; a file from before the schema key reads; a file that is not JSON,
not a frontier or of another version is refused with hloscope's error and exit code, in the API
and in `hloscope report`."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

import hloscope
from hloscope.cli.main import cli
from hloscope.errors import EXIT_INPUT_MALFORMED, EXIT_INPUT_MISSING, InputError, ParseError
from hloscope.formats.frontier import (
    FRONTIER_FILE,
    FRONTIER_SCHEMA,
    frontier_file,
    read_frontier,
    write_frontier,
)
from hloscope.sweeps.frontier import FrontierResult

CAPACITY = 100 << 20


def _row(batch: int, policy: str, compiled: int | None, chosen: bool = False,
         step: float | None = 0.5) -> dict:
    return {"batch": batch, "policy": policy, "choices": {"qkv": policy.split("=")[-1]},
            "status": "predicted" if compiled is None else "compiled", "chosen": chosen,
            "predicted_bytes": 90 << 20, "compiled_bytes": compiled,
            "prediction_error": None if compiled is None else (90 << 20) / compiled - 1,
            "predicted_step_s": step, "predicted_tokens_per_s": 1000.0 * batch,
            "fits": compiled is not None and compiled <= CAPACITY,
            "build_folder": None if compiled is None else f"/b/{batch}"}


HAND = FrontierResult(CAPACITY, (4, 8), ("qkv",), [
    _row(4, "names:qkv=remat", 80 << 20),
    _row(4, "names:qkv=device", 95 << 20, chosen=True),
    _row(8, "names:qkv=offload", None, step=math.nan)], compiles=3, candidates=6,
    choices=("device", "offload", "remat"))


def test_written_and_read_back_is_what_was_built(tmp_path: Path) -> None:
    path = write_frontier(tmp_path, HAND.to_dict())
    assert path == tmp_path / FRONTIER_FILE
    assert json.loads(path.read_text())["schema"] == FRONTIER_SCHEMA
    record = read_frontier(tmp_path)
    assert (record.capacity_bytes, record.batches, record.names) == (CAPACITY, (4, 8), ("qkv",))
    assert record.choices == ("device", "offload", "remat")
    assert record.winners == {4: "names:qkv=device", 8: None}
    assert (record.compiles, record.candidates, record.folder) == (3, 6, tmp_path)
    first, chosen, predicted = record.rows
    assert (first.batch, first.policy, first.status, first.chosen) == \
        (4, "names:qkv=remat", "compiled", False)
    assert first.compiled_bytes == 80 << 20 and first.fits is True
    assert first.predicted_tokens_per_s == 4000.0
    assert first.prediction_error == pytest.approx(90 / 80 - 1)
    assert chosen.chosen and chosen.build_folder == "/b/4" and chosen.row["choices"] == \
        {"qkv": "device"}
    assert predicted.compiled_bytes is None and predicted.fits is False
    assert predicted.predicted_step_s is None  # NaN has no JSON form: written as null


def test_a_file_from_before_the_schema_key_reads(tmp_path: Path) -> None:
    (tmp_path / FRONTIER_FILE).write_text(json.dumps(HAND.to_dict(), indent=1))
    assert read_frontier(tmp_path / FRONTIER_FILE).winners[4] == "names:qkv=device"


def test_writer_takes_only_a_frontier() -> None:
    with pytest.raises(ValueError):
        write_frontier(Path("."), {"variants": []})


@pytest.mark.parametrize(("text", "says"), [
    ('{"search": "frontier",\n "rows": [', "invalid JSON"),
    ('{"schema": "hloscope/frontier/v2", "search": "frontier"}', "hloscope/frontier/v2"),
    ('{"schema": "hloscope/sweep/v1", "variants": []}', '"search": "frontier"'),
    ("[1, 2]", '"search": "frontier"'),
])
def test_malformed_or_other_version_is_a_parse_error(tmp_path: Path, text: str,
                                                      says: str) -> None:
    (tmp_path / FRONTIER_FILE).write_text(text)
    with pytest.raises(ParseError, match=says) as raised:
        read_frontier(tmp_path)
    assert raised.value.exit_code == EXIT_INPUT_MALFORMED
    assert str(tmp_path / FRONTIER_FILE) in str(raised.value)


@pytest.mark.parametrize(("change", "says"), [
    ({"capacity_bytes": "100MiB"}, "capacity_bytes must be an integer"),
    ({"batches": [4, "8"]}, "batches must be a list of integers"),
    ({"winners": {"four": None}}, "winners must map batches"),
    ({"rows": {}}, "rows must be a list"),
])
def test_a_document_of_wrong_types_is_refused(tmp_path: Path, change: dict, says: str) -> None:
    (tmp_path / FRONTIER_FILE).write_text(json.dumps({**HAND.to_dict(), **change}))
    with pytest.raises(ParseError, match=says):
        read_frontier(tmp_path)


def test_a_row_of_wrong_types_is_refused(tmp_path: Path) -> None:
    data = json.loads(json.dumps(HAND.to_dict()))  # a copy: to_dict() shares the rows
    data["rows"][1] = {**data["rows"][1], "chosen": "yes"}
    (tmp_path / FRONTIER_FILE).write_text(json.dumps(data))
    with pytest.raises(ParseError, match="row 1: chosen is 'yes'"):
        read_frontier(tmp_path)
    data["rows"][1] = {**data["rows"][1], "chosen": True, "batch": True}
    (tmp_path / FRONTIER_FILE).write_text(json.dumps(data))
    with pytest.raises(ParseError, match="row 1: batch is True"):
        read_frontier(tmp_path)
    del data["rows"][0]["policy"]
    (tmp_path / FRONTIER_FILE).write_text(json.dumps(data))
    with pytest.raises(ParseError, match="row 0 has no policy"):
        read_frontier(tmp_path)


def test_missing_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as raised:
        read_frontier(tmp_path)
    assert raised.value.exit_code == EXIT_INPUT_MISSING
    assert frontier_file(tmp_path) is None and frontier_file("hlo text\n") is None


def test_report_reads_the_folder_through_the_reader(tmp_path: Path) -> None:
    write_frontier(tmp_path, HAND.to_dict())
    html = hloscope.report(tmp_path)
    assert "Per-tensor policy frontier" in html and "names:qkv=device" in html
    (tmp_path / FRONTIER_FILE).write_text('{"schema": "hloscope/frontier/v9", "search": '
                                          '"frontier"}')
    result = CliRunner().invoke(cli, ["report", str(tmp_path), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == EXIT_INPUT_MALFORMED
    assert "hloscope/frontier/v9" in result.output and "Traceback" not in result.output
