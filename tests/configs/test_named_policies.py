"""The per-tensor policy grammar `names:NAME=CHOICE,...` (no jax): what it parses to, its
aliases, its errors (exit 2, listing the valid names / choices), and its file-safe slugs."""
from __future__ import annotations

import itertools
import re

import pytest

from hloscope.configs.config import TransformerConfig
from hloscope.configs.policies import alias_expansion, parse_variant, parse_variants
from hloscope.configs.presets import preset_config
from hloscope.configs.tensors import decode_named
from hloscope.errors import UsageError

TINY = preset_config("tiny")  # GPT style: fused qkv, GELU
LLAMA = preset_config("llama-1b")  # grouped-query (32 / 8 heads), SwiGLU
GPT_NAMES = ("norm1", "qkv", "attn_out", "out_proj", "norm2", "mlp_in", "mlp_hidden", "mlp_out")
LLAMA_NAMES = ("norm1", "query_proj", "key_proj", "value_proj", "attn_out", "out_proj", "norm2",
               "mlp_gate", "mlp_up", "mlp_hidden", "mlp_out")


def choices(policy: str, config: TransformerConfig = TINY) -> dict[str, str]:
    applied = parse_variant(policy, config).apply(config)
    names = GPT_NAMES if config is TINY else LLAMA_NAMES
    return decode_named(applied.remat, names)


def test_each_name_gets_its_choice_and_the_rest_is_recomputed() -> None:
    got = choices("names:qkv=device,attn_out=offload,mlp_hidden=remat")
    assert got == {**dict.fromkeys(GPT_NAMES, "remat"), "qkv": "device", "attn_out": "offload"}
    variant = parse_variant("NAMES:qkv=device, attn_out=offload+unrolled", TINY)
    assert variant.name == "names:qkv=device,attn_out=offload+unrolled"
    assert variant.apply(TINY).scan_layers is False


def test_every_name_star_and_later_items_override_it() -> None:
    assert choices("names:*=device") == dict.fromkeys(GPT_NAMES, "device")
    got = choices("names:*=offload,mlp_hidden=remat", LLAMA)
    assert got == {**dict.fromkeys(LLAMA_NAMES, "offload"), "mlp_hidden": "remat"}


def test_maxtext_names_and_qkv_for_separate_projections() -> None:
    got = choices("names:context=offload,mlpwi_0=device,mlpwo=device,qkv=device", LLAMA)
    device = {"mlp_gate", "mlp_out", "query_proj", "key_proj", "value_proj"}
    assert got == {name: "device" if name in device else
                   "offload" if name == "attn_out" else "remat" for name in LLAMA_NAMES}
    assert choices("names:qkv_proj=device,mlpwi=offload") == {
        **dict.fromkeys(GPT_NAMES, "remat"), "qkv": "device", "mlp_in": "offload"}


def test_one_policy_one_name_whatever_the_spelling() -> None:
    spellings = ["names:attn_out=offload,qkv=device", "names:qkv=device,attn_out=offload",
                 "names:qkv=device,attn_out=offload,mlp_hidden=remat",
                 "names:context=offload,qkv_proj=device"]
    assert {parse_variant(s, TINY).name for s in spellings} == {
        "names:qkv=device,attn_out=offload"}
    assert len(parse_variants(",".join(spellings), TINY)) == 1


def test_a_list_keeps_a_per_tensor_policy_whole() -> None:
    variants = parse_variants("full,names:qkv=device,attn_out=offload+unrolled,none,"
                              "names:*=remat", TINY)
    assert [v.name for v in variants] == ["full", "names:qkv=device,attn_out=offload+unrolled",
                                          "none", "names:*=remat"]
    listed = parse_variants(["names:qkv=device,attn_out=offload", "full"], TINY)  # the API
    assert [v.name for v in listed] == ["names:qkv=device,attn_out=offload", "full"]


def test_the_aliases_expand_to_the_block_names() -> None:
    assert alias_expansion("save_named", TINY) == \
        "names:qkv=device,attn_out=device,mlp_hidden=device"
    assert alias_expansion("offload_named", LLAMA) == (
        "names:query_proj=offload,key_proj=offload,value_proj=offload,attn_out=offload,"
        "mlp_hidden=offload")
    assert parse_variant("save_named", TINY).name == "save_named"  # still a variant of its own


@pytest.mark.parametrize(("policy", "listed"), [
    ("names:foo=device", "norm1, qkv, attn_out, out_proj, norm2, mlp_in, mlp_hidden, mlp_out"),
    ("names:mlp_in=device", "mlp_gate, mlp_up"),  # a GELU name on a SwiGLU block
    ("names:qkv=gpu", "device, offload, remat"),
    ("names:qkv", "device, offload, remat"),
    ("names:", "CHOICE in device, offload, remat"),
])
def test_errors_list_what_is_valid(policy: str, listed: str) -> None:
    config = LLAMA if "mlp_in" in policy else TINY
    with pytest.raises(UsageError) as error:
        parse_variant(policy, config)
    assert listed in str(error.value) and error.value.exit_code == 2


def test_a_config_holds_only_the_stored_form() -> None:
    stored = parse_variant("names:attn_out=offload,qkv=device", TINY).apply(TINY)
    assert TransformerConfig.from_dict(stored.to_dict()) == stored
    with pytest.raises(UsageError, match="stored form"):
        TransformerConfig(remat="names:attn_out=offload,qkv=device")


def test_slugs_are_file_safe_and_distinct() -> None:
    slugs = {}
    for picked in itertools.product(("device", "offload", "remat"), repeat=len(GPT_NAMES)):
        body = ",".join(f"{n}={c}" for n, c in zip(GPT_NAMES, picked, strict=True))
        for layout in ("", "+unrolled"):
            variant = parse_variant(f"names:{body}{layout}", TINY)
            slugs.setdefault(variant.file_name, set()).add(variant.name)
    assert all(len(names) == 1 for names in slugs.values())  # one policy per slug
    assert len(slugs) == 2 * 3 ** len(GPT_NAMES)
    assert all(re.fullmatch(r"[a-z0-9_.-]{1,120}", slug) for slug in slugs)
    others = {parse_variant(name, TINY).file_name for name in ("full", "save_named", "none")}
    assert not others & set(slugs)
    assert parse_variant("names:qkv=device,attn_out=offload", TINY).file_name == \
        "names-qkv.d-attn_out.o"
    every = parse_variant("names:*=device", LLAMA)
    long = parse_variant("names:*=device,mlp_hidden=offload", LLAMA)
    assert (every.file_name, len(long.file_name) <= 120) == ("names-all.d", True)
