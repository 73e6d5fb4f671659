"""Remat variant names users bring from Levanter, MaxText and llm.c: what each parses to, what
`all` expands to, and the errors for names that are not variants (no jax, no compiles)."""
from __future__ import annotations

import pytest

from hloscope.configs.config import TransformerConfig
from hloscope.configs.policies import all_variant_names, parse_variant, parse_variants
from hloscope.configs.presets import preset_config
from hloscope.errors import UsageError

LLAMA_70B = preset_config("llama-70b")  # 80 scanned layers
TINY = preset_config("tiny")  # 2 unrolled layers


def applied(name: str, base: TransformerConfig = LLAMA_70B) -> TransformerConfig:
    return parse_variant(name, base).apply(base)


def test_offload_carries_is_full_remat_of_scanned_blocks() -> None:
    config = applied("offload_carries", TINY)  # the preset unrolls; the family scans
    assert (config.remat, config.scan_layers, config.rematted_layers) == (
        "offload_carries", True, 2)
    unrolled = applied("offload_carries+unrolled", TINY)  # each block's input, offloaded
    assert (unrolled.remat, unrolled.scan_layers) == ("offload_carries", False)
    assert applied("offload_scan", TINY).scan_layers is True


def test_llm_c_recompute_levels() -> None:
    assert applied("recompute:1").remat == "recompute:1"
    assert applied("RECOMPUTE:2+scan").remat == "recompute:2"
    assert applied("recompute:1+unrolled").scan_layers is False
    assert parse_variant("recompute:2", LLAMA_70B).file_name == "recompute-2"


def test_ac_keeps_activations_of_n_layers_and_recomputes_the_rest() -> None:
    # llm.c: "-ac 16" recomputes 50% of a 32-layer model and 75% of a 64-layer one
    for layers, recomputed in ((32, 0.5), (64, 0.75)):
        base = TransformerConfig(n_layers=layers)
        config = applied("ac:16", base)
        assert config.rematted_layers / layers == recomputed
        assert config == applied(f"partial:{layers - 16}", base)  # the same program
    assert applied("ac:80").rematted_layers == 0 and applied("ac:1").rematted_layers == 79


def test_all_has_every_family_once() -> None:
    names = all_variant_names(LLAMA_70B)
    assert names == ["none", "full", "nothing_saveable", "dots_saveable",
                     "dots_with_no_batch_dims_saveable", "save_named", "offload_named",
                     "offload_carries", "offload_scan", "recompute:1", "recompute:2",
                     "nested:8", "partial:40", "full+unrolled"]
    assert [v.name for v in parse_variants("all", LLAMA_70B)] == names
    assert "nested:1" in all_variant_names(TINY) and "full+scan" in all_variant_names(TINY)


@pytest.mark.parametrize(("bad", "says"), [
    ("recompute", "recompute:1|2"), ("recompute:3", "recompute:1|2"),
    ("recompute:x", "recompute:1|2"), ("offload_carries:2", "takes no argument"),
    ("offload_scan+unrolled", "drop +unrolled"), ("nested:8+unrolled", "drop +unrolled"),
    ("ac", "1 <= N <= 80"), ("ac:0", "1 <= N <= 80"), ("ac:81", "1 <= N <= 80"),
    ("ac:x", "expected a number"), ("offload", "unknown remat policy"),
    ("offload_carries+sideways", "bad layout"),
])
def test_bad_names_say_what_is_wrong(bad: str, says: str) -> None:
    with pytest.raises(UsageError) as error:
        parse_variants(bad, LLAMA_70B)
    assert says in str(error.value)


def test_unknown_policy_error_lists_the_new_families() -> None:
    with pytest.raises(UsageError) as error:
        parse_variant("sometimes", LLAMA_70B)
    for family in ("offload_carries", "offload_scan", "recompute", "ac", "nested", "partial"):
        assert family in str(error.value)


def test_config_refuses_offload_scan_without_a_scan() -> None:
    with pytest.raises(UsageError, match="scan_layers"):
        TransformerConfig(remat="offload_scan", scan_layers=False)
    with pytest.raises(UsageError, match="unknown remat"):
        TransformerConfig(remat="recompute:3")
