"""Presets, remat variant names, the batch search, ranking, the roofline and fingerprints.

No compiles here: parameter counts are checked against published totals and the shapes JAX
traces; the search against a known boundary; fingerprints against the committed fixtures.
"""
from __future__ import annotations

import dataclasses

import pytest
from conftest import FIXTURES
from test_workloads import needs_jax

from hloscope.analyses.roofline import estimate_step
from hloscope.analyses.summary.variant import HloFigures, VariantFigures, oom_temporaries
from hloscope.configs.config import TransformerConfig, param_count
from hloscope.configs.policies import (
    all_variant_names,
    default_block_size,
    parse_variant,
    parse_variants,
)
from hloscope.configs.presets import PRESETS, PUBLISHED_PARAMETERS, preset_config
from hloscope.devices import get_device
from hloscope.errors import UsageError
from hloscope.sweeps.ranking import rank_variants
from hloscope.sweeps.search import BatchSearch
from hloscope.workloads.build import BuildSpec
from hloscope.workloads.fingerprint import file_fingerprint, normalized_hlo


@pytest.mark.parametrize(("model", "published"), sorted(PUBLISHED_PARAMETERS.items()))
def test_presets_have_their_published_parameter_counts(model: str, published: int) -> None:
    assert param_count(preset_config(model)) == published


def test_published_totals_are_the_known_ones() -> None:
    # GPT-2 small by N = h*v + L*(12h^2 + 13h) + 2h + s*h; Llama 3 8B as released.
    assert PUBLISHED_PARAMETERS["gpt2-small"] == 768 * 50257 + 12 * (12 * 768**2 + 13 * 768) \
        + 2 * 768 + 1024 * 768 == 124_439_808
    assert PUBLISHED_PARAMETERS["llama-8b"] == 8_030_261_248


def test_tiny_preset_is_the_fixtures_model() -> None:
    import json

    meta = json.loads((FIXTURES / "cpu" / "remat-none" / "meta.json").read_text())
    fixture = TransformerConfig.from_dict(meta["config"])
    assert dataclasses.replace(preset_config("tiny"), remat="none") == fixture


@needs_jax
@pytest.mark.parametrize("model", sorted(PRESETS))
def test_abstract_parameters_match_the_count(model: str) -> None:
    from hloscope.workloads import transformer

    for layout in ("full", "partial:1", "full+unrolled" if model != "llama-70b" else "full"):
        config = parse_variant(layout, preset_config(model)).apply(preset_config(model))
        tree = transformer.abstract_params(config, "bfloat16")
        assert transformer.leaf_count(tree) == param_count(config), layout


SMALL_LLAMA = dataclasses.replace(preset_config("llama-1b"), n_layers=4, seq_len=32, batch=2)


@needs_jax
@pytest.mark.parametrize("name", all_variant_names(SMALL_LLAMA))
def test_every_llama_variant_traces(name: str) -> None:
    import jax

    from hloscope.workloads import transformer

    base = SMALL_LLAMA
    config = parse_variant(name, base).apply(base)
    state = transformer.abstract_state(config)
    new_state, _ = jax.eval_shape(transformer.train_step_fn(config), state,
                                  transformer.abstract_batch(config))
    assert jax.tree.structure(new_state) == jax.tree.structure(state)


def test_variant_names() -> None:
    base = preset_config("llama-8b")
    assert parse_variant("nested:4", base).apply(base).remat_block == 4
    partial = parse_variant("partial:8+unrolled", base).apply(base)
    assert (partial.remat_layers, partial.scan_layers, partial.rematted_layers) == (8, False, 8)
    assert parse_variant("dots_saveable", base).apply(base).remat == "dots_saveable"
    assert parse_variant("full+unrolled", base).file_name == "full-unrolled"
    names = [v.name for v in parse_variants("all", base)]
    assert names[:2] == ["none", "full"] and "nested:4" in names and "partial:16" in names
    assert "full+unrolled" in names and len(names) == len(set(names)) == 14
    assert [v.name for v in parse_variants("full, none,full", base)] == ["full", "none"]


@pytest.mark.parametrize("bad", ["nested:5", "nested:4+unrolled", "partial:40", "sometimes",
                                 "full:3", "none+sideways", "nested:x", ""])
def test_bad_variant_names_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError):
        parse_variants(bad, preset_config("llama-8b"))


def test_default_block_size() -> None:
    assert [default_block_size(n) for n in (32, 80, 16, 12, 2, 7)] == [4, 8, 4, 3, 1, 1]


@pytest.mark.parametrize(("start", "boundary"), [(16, 40), (64, 40), (8, 8), (24, 200)])
def test_batch_search_finds_the_boundary(start: int, boundary: int) -> None:
    search = BatchSearch(start, step=8, max_batch=1 << 12)
    while (batch := search.next_batch()) is not None:
        search.record(batch, batch <= boundary, "ok" if batch <= boundary else "oom")
    assert search.largest == boundary and search.smallest_failing == boundary + 8
    assert len(search.probes) == len({p.batch for p in search.probes})  # nothing twice


def test_batch_search_ends_when_nothing_fits_or_everything_does() -> None:
    nothing = BatchSearch(32, step=4, max_batch=1024)
    while (batch := nothing.next_batch()) is not None:
        nothing.record(batch, False, "oom")
    assert nothing.largest is None and nothing.smallest_failing == 4
    everything = BatchSearch(3, step=4, max_batch=100)
    while (batch := everything.next_batch()) is not None:
        everything.record(batch, True, "ok")
    assert everything.largest == 100 // 4 * 4 and everything.probes[0].batch == 4
    failing = BatchSearch(8, step=8, max_batch=64)
    failing.record(failing.next_batch(), None, "crash")
    assert failing.next_batch() is None


def _figures(name: str, fits: bool | None, flops: int, fingerprint: str | None = None,
             status: str = "ok", batch: int = 16) -> VariantFigures:
    device = get_device("v5e")
    hlo = HloFigures(total_flops=flops, bytes_accessed=flops // 100, collective_bytes=0,
                     forward_flops=flops // 4, recompute_flops=0, recompute_overhead=0.0,
                     to_host_bytes=0, from_host_bytes=0, unknown_loops=0, parameter_bytes=0,
                     live_peak_bytes=None)
    step = estimate_step(device, "bfloat16", flops, hlo.bytes_accessed, 0)
    return VariantFigures(variant=name, status=status, batch=batch, tokens=batch * 2048,
                          fits=fits, fit_source="test", capacity_bytes=100, required_bytes=50,
                          required_source="test", host_temp_bytes=0, compile_seconds=1.0,
                          xla_flops=None, hlo=hlo, step=step, fingerprint=fingerprint,
                          error=None if status == "ok" else "RESOURCE_EXHAUSTED: x")


def test_ranking_picks_the_fastest_that_fits() -> None:
    rows = [_figures("none", False, 10**12, "a", status="oom"),
            _figures("full", True, 4 * 10**12, "b"),
            _figures("nothing_saveable", True, 4 * 10**12, "b"),
            _figures("dots", True, 3 * 10**12, "c"),
            _figures("broken", None, 0, None, status="crash")]
    winner, verdicts = rank_variants(rows)
    assert winner == "dots"
    assert verdicts["none"].outcome == "does not fit" and verdicts["none"].rank is None
    assert verdicts["nothing_saveable"].duplicate_of == "full"
    assert verdicts["full"].outcome == "slower" and verdicts["full"].rank == 2
    assert "-25.0%" in verdicts["full"].reason and verdicts["broken"].outcome == "failed"
    assert rank_variants([rows[0]])[0] is None


def test_ranking_compares_throughput_across_batches() -> None:
    small = _figures("small", True, 10**12, batch=16)
    big = _figures("big", True, int(1.5 * 10**12), batch=32)  # 2x tokens for 1.5x the time
    assert rank_variants([small, big])[0] == "big"


def test_roofline_terms() -> None:
    v5e = get_device("v5e")
    compute_bound = estimate_step(v5e, "bfloat16", 197e12, 819e9 / 2, 0)
    assert compute_bound.seconds == pytest.approx(1.0) and compute_bound.bound == "compute"
    with_links = estimate_step(get_device("h100"), "bfloat16", 989.4e12, 0, 450e9,
                               to_host_bytes=64e9, from_host_bytes=10e9)
    assert with_links.seconds == pytest.approx(3.0)  # 1 s compute + 1 s NVLink + 1 s PCIe
    offload = estimate_step(v5e, "bfloat16", 197e12, 0, 0, to_host_bytes=1)
    assert offload.missing == ("host-link bandwidth",) and offload.is_lower_bound


def test_oom_temporaries() -> None:
    error = ("RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO "
             "temporaries (49.46G) exceeds available HBM (15.75G).")
    assert oom_temporaries(error) == round(49.46 * (1 << 30))
    assert oom_temporaries("INTERNAL: something else") is None


def test_fingerprints_ignore_metadata_only() -> None:
    tpu = {variant: next((FIXTURES / "tpu-v5e-2x2" / variant).glob("*after_optimizations.txt"))
           for variant in ("remat-none", "remat-full")}
    text = tpu["remat-none"].read_text()
    normalized = normalized_hlo(text)
    assert "metadata={" not in normalized and "StackFrames" not in normalized
    assert normalized.count("\n") > 1000 and normalized.startswith("HloModule jit_train_step")
    moved = text.replace('op_name="jit(train_step)/', 'op_name="jit(other)/')
    assert normalized_hlo(moved) == normalized
    assert file_fingerprint(tpu["remat-none"]) != file_fingerprint(tpu["remat-full"])


def test_cache_key_covers_config_target_and_versions() -> None:
    base = preset_config("tiny")
    spec = BuildSpec("tiny", "full", "cpu", parse_variant("full", base).apply(base))
    assert spec.cache_key() == BuildSpec("tiny", "full", "cpu", spec.config).cache_key()
    other_batch = dataclasses.replace(spec, config=dataclasses.replace(spec.config, batch=16))
    other_target = dataclasses.replace(spec, target="tpu:v5e:2x2")
    keys = {spec.cache_key(), other_batch.cache_key(), other_target.cache_key()}
    assert len(keys) == 3
    versions = spec.key_material()["versions"]
    assert {"jax", "jaxlib", "hloscope", "workload_source"} <= set(versions)
    assert "libtpu" in other_target.key_material()["versions"]


def test_the_parent_side_never_imports_jax() -> None:
    import subprocess
    import sys

    from conftest import REPO

    modules = ("hloscope.cli.main", "hloscope.sweeps.core", "hloscope.workloads.build",
               "hloscope.workloads.cache", "hloscope.analyses.summary.variant",
               "hloscope.configs.policies", "hloscope.configs.presets",
               "hloscope.reports.sweep", "hloscope.analyses.memory.host_offload")
    code = f"import sys, {', '.join(modules)}; sys.exit('jax' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0
