"""`hloscope report`: one self-contained HTML page, checked as text and in a real browser."""
from __future__ import annotations

import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import start_driver
from click.testing import CliRunner
from conftest import FIXTURES

import hloscope
from hloscope.cli.main import cli

CPU_FULL = FIXTURES / "cpu" / "remat-full"
TPU = FIXTURES / "tpu-v5e-2x2"
PEAK_LABEL = re.compile(r"live peak ([\d,]+) bytes")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def memory_json(folder: Path) -> dict:
    code, output = run("memory", str(folder), "--format", "json")
    assert code == 0, output
    return json.loads(output)


class Collector(HTMLParser):
    """Every start tag with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html: str) -> Collector:
    collector = Collector()
    collector.feed(html)
    return collector


def test_report_of_one_dump_shows_what_the_analyses_say(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    code, output = run("report", str(CPU_FULL), "-o", str(out))
    assert code == 0, output
    html = out.read_text()
    page = parsed(html)
    memory = memory_json(CPU_FULL)
    figures = [a for t, a in page.tags if t == "figure"]
    timeline = next(a for a in figures if a["data-figure"] == "timeline")
    assert int(timeline["data-peak-bytes"]) == memory["peak_bytes"]
    assert [int(n.replace(",", "")) for n in PEAK_LABEL.findall(html)] == [memory["peak_bytes"]]
    assert {a["data-figure"] for a in figures} == {"timeline", "flops"}
    # no network: nothing is loaded from anywhere
    assert not [a for t, a in page.tags if t in ("script", "img", "iframe")]
    assert not [a for t, a in page.tags if t == "link" and a.get("href") != "data:,"]
    flops = json.loads(run("flops", str(CPU_FULL), "--format", "json")[1])
    for by in ("by_layer", "by_phase"):
        table = html.split(f'data-table="{by}"')[1].split("</table>")[0]
        shown = re.findall(r'<tr><td>[^<]*</td><td class="num" data-value="(\d+)"', table)
        assert sum(map(int, shown)) == flops["total_flops"], by
    assert "Top live buffers at the peak" in html and "Rematerialization in" in html


def test_report_never_overwrites_without_force(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("keep me")
    code, output = run("report", str(CPU_FULL), "-o", str(out))
    assert code == 2 and "--force" in output
    assert out.read_text() == "keep me"
    assert run("report", str(CPU_FULL), "-o", str(out), "--force")[0] == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert run("report", str(CPU_FULL), "-o", str(tmp_path / "r.txt"))[0] == 2
    assert run("report", str(tmp_path / "absent"), "-o", str(tmp_path / "a.html"))[0] == 3


def test_everything_from_the_input_is_escaped(tmp_path: Path) -> None:
    text = (CPU_FULL / "module_0000.jit_train_step.cpu_after_optimizations.txt").read_text()
    hostile = text.replace('op_name="jit(train_step)', 'op_name="<script>alert(1)</script>')
    assert hostile != text
    (tmp_path / "hostile.txt").write_text(hostile)
    html = hloscope.report(tmp_path / "hostile.txt")
    assert "<script" not in html and "&lt;script&gt;" in html


def test_several_inputs_are_compared_and_judged(tmp_path: Path) -> None:
    """Fit against v5e HBM; the winner has the fewest FLOPs: remat-none (full remat recomputes)."""
    out = tmp_path / "both.html"
    code, output = run("report", str(TPU / "remat-none"), str(TPU / "remat-full"),
                       "--device", "v5e", "-o", str(out))
    assert code == 0, output
    html = out.read_text()
    rows = re.findall(r"<tr><td>(remat-[a-z]+)</td><td>tpu</td><td>(yes|no)</td>", html)
    assert rows == [("remat-none", "yes"), ("remat-full", "yes")]
    assert re.search(r"fastest that fits</dt><dd>remat-none<", html)
    assert html.count('data-figure="timeline"') == 2 and 'data-figure="overlay"' in html


@pytest.mark.compile
def test_sweep_folder_report_gives_the_sweep_verdict(tmp_path: Path) -> None:
    code, output = run("sweep", "--model", "tiny", "--target", "cpu", "--policies", "none,full",
                       "--no-cache", "-o", str(tmp_path / "sweep"))
    assert code == 0, output
    sweep = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    html = hloscope.report(tmp_path / "sweep")
    assert f"fastest that fits</dt><dd>{sweep['winner']}<" in html
    shown = re.findall(r'<h2 id="input-\d+">([^<]+)</h2>', html)
    assert shown == [row["variant"] for row in sweep["variants"]]


@pytest.fixture(scope="module")
def driver():
    browser = start_driver()
    yield browser
    browser.quit()


def test_report_in_a_real_browser(tmp_path: Path, driver) -> None:
    from PIL import Image

    out = tmp_path / "report.html"
    assert run("report", str(TPU / "remat-none"), str(TPU / "remat-full"), "-o", str(out))[0] == 0
    driver.get(out.as_uri())
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    labels = driver.find_elements("css selector", "figure[data-figure=timeline] #peak-label text")
    shown = [int(PEAK_LABEL.search(label.text).group(1).replace(",", "")) for label in labels]
    assert shown == [memory_json(TPU / name)["peak_bytes"] for name in ("remat-none",
                                                                        "remat-full")]
    svg = driver.find_element("css selector", "figure[data-figure=timeline] svg")
    assert svg.size["width"] > 400 and svg.size["height"] > 150
    image = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("L")
    counts = image.histogram()  # 256 grey levels
    total = sum(counts)
    mean = sum(level * n for level, n in enumerate(counts)) / total
    variance = sum(n * (level - mean) ** 2 for level, n in enumerate(counts)) / total
    assert variance > 100, f"blank screenshot? variance {variance:.1f}"


def test_report_is_compact(tmp_path: Path, driver) -> None:
    """issue 21: two tiny inputs made a 7,600 px page whose tables scrolled sideways. Now the
    first section is open and the others collapsed, and no table is wider than its box at the
    browser's 1280 px window, every section open."""
    out = tmp_path / "report.html"
    assert run("report", str(TPU / "remat-none"), str(TPU / "remat-full"), "-o", str(out))[0] == 0
    driver.get(out.as_uri())
    sections = driver.find_elements("css selector", "section > details")
    assert len(sections) == 3 and [d.get_attribute("open") is not None for d in sections] == [
        True, False, False]
    assert driver.execute_script("return document.documentElement.scrollHeight") < 2500
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    overflowing = driver.execute_script(
        "return [...document.querySelectorAll('div.table')]"
        ".filter(box => box.scrollWidth > box.clientWidth + 1).length")
    assert overflowing == 0
    tallest = driver.execute_script(
        "return Math.max(...[...document.querySelectorAll('div.table')]"
        ".map(box => box.getBoundingClientRect().height))")
    assert tallest <= 360
