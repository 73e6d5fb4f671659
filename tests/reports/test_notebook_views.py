"""issue 21, item 4: every result the API returns renders in Jupyter.

Each result's `_repr_html_` is placed in one page, as a notebook places cell outputs, and
opened in headless Chromium: no console error, every view a table, the charts where the result
has them, and the module name the HLO text itself declares. `_repr_markdown_` is the Markdown
report (a heading, pipe tables). A sweep and a build come from one tiny CPU compile.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser import start_driver
from conftest import FIXTURES

import hloscope
from hloscope.reports.notebook import registered

CPU = FIXTURES / "cpu" / "remat-none"
CPU_FULL = FIXTURES / "cpu" / "remat-full"
OOM = FIXTURES / "tpu-v5e-2x2-oom"
TRACE = FIXTURES / "cpu-trace" / "full-scan"
CHARTED = {"MemoryResult", "OomDiagnosis", "FlopsResult", "FrontierResult"}
SUMMARY_ONLY = {"snapshot"}  # a report of headline figures, without tables (a build lists its
# checkpoint names in a table)


def _module_name(folder: Path) -> str:
    text = next(folder.glob("*after_optimizations.txt")).read_text()
    return re.search(r"^HloModule (\S+?),", text, re.M).group(1)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    folder = tmp_path_factory.mktemp("views")
    baseline = folder / "baseline.json"
    found = {
        "inspect": hloscope.inspect(CPU), "flops": hloscope.flops(CPU),
        "remat": hloscope.remat(CPU_FULL), "memory": hloscope.memory(CPU),
        "oom": hloscope.oom(OOM), "compare": hloscope.compare(CPU, CPU_FULL),
        "snapshot": hloscope.snapshot(CPU, output=baseline),
        "check": hloscope.check(CPU_FULL, baseline, max_peak_increase="0%"),
        "trace": hloscope.trace(TRACE, xprof=False),
    }
    sweep = hloscope.sweep(model="tiny", policies="none", target="cpu",
                           output=folder / "sweep", n_layers=1)
    found["sweep"] = sweep
    found["frontier"] = _frontier()
    manifest = next((folder / "sweep").rglob("manifest.json"))
    found["build"] = _summary_of(manifest.parent)  # the sweep's build, as `build` returns it
    return found


def _frontier():
    """A hand-built frontier result (its search is tested in tests/sweeps)."""
    from hloscope.sweeps.frontier import FrontierResult

    row = {"batch": 4, "policy": "names:qkv=device", "choices": {"qkv": "device"},
           "status": "compiled", "chosen": True, "predicted_bytes": 90 << 20,
           "compiled_bytes": 95 << 20, "prediction_error": -0.05, "predicted_step_s": 0.5,
           "fits": True, "predicted_tokens_per_s": 4000.0}
    return FrontierResult(100 << 20, (4,), ("qkv",), [row], 2, 3)


def _summary_of(folder: Path):
    from hloscope.analyses.summary.variant import BuildSummary, variant_figures
    from hloscope.loader.build import load_build

    loaded = load_build(folder)
    return BuildSummary(loaded.build, variant_figures(loaded, "none"))


@pytest.mark.compile
def test_every_result_class_is_covered(results: dict[str, object]) -> None:
    assert {type(r).__name__ for r in results.values()} == {c.__name__ for c in registered()}


@pytest.mark.compile
def test_markdown_views(results: dict[str, object]) -> None:
    for name, result in results.items():
        text = result._repr_markdown_()
        assert text.startswith("# "), name
        assert ("|" in text) != (name in SUMMARY_ONLY), name


@pytest.mark.compile
def test_html_views_in_a_real_browser(results: dict[str, object], tmp_path: Path) -> None:
    cells = "".join(f'<div class="cell" id="{name}">{result._repr_html_()}</div>'
                    for name, result in results.items())
    page = tmp_path / "notebook.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><link rel='icon' "
                    f"href='data:,'></head><body>{cells}</body></html>")
    driver = start_driver()
    try:
        driver.get(page.as_uri())
        errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        assert errors == []
        for name, result in results.items():
            cell = driver.find_element("id", name)
            assert cell.find_elements("css selector", ".hloscope-view"), name
            tables = cell.find_elements("css selector", "table")
            assert bool(tables) != (name in SUMMARY_ONLY), name
            if type(result).__name__ in CHARTED:
                assert cell.find_elements("css selector", "svg"), name
        for name in ("inspect", "memory", "flops"):
            assert _module_name(CPU) in driver.find_element("id", name).text
    finally:
        driver.quit()
