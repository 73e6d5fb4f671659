"""A user step's `names:` policies (no jax): the stored form, the explicit form the compile child
reads, and the refusals. Truth: the grammar's rules as docs/own-model.md states them (later items
override earlier ones, `*` every name, names case-sensitive)."""
from __future__ import annotations

import pytest

from hloscope.configs.step import (
    explicit_named,
    parse_step_variants,
    resolve_step_named,
    step_named,
)
from hloscope.errors import UsageError

NAMES = ("hidden", "activated")


@pytest.mark.parametrize(("given", "stored"), [
    ("names:hidden=device", "names:hidden=device"),
    ("names:*=device", "names:*=device"),
    ("names:hidden=device,*=remat", "names:*=remat"),  # * overrides what came before
    ("names:*=offload,hidden=device,hidden=remat", "names:*=offload,hidden=remat"),
    ("NAMES:Hidden=DEVICE", "names:Hidden=device"),  # the name keeps its case
])
def test_stored_form(given, stored):
    assert step_named(given) == stored


def test_a_list_keeps_a_policy_with_its_items():
    variants = parse_step_variants("none,names:hidden=device,activated=offload,full", False)
    assert [v.name for v in variants] == ["none", "names:hidden=device,activated=offload",
                                          "full"]


@pytest.mark.parametrize(("stored", "explicit"), [
    ("names:*=offload,hidden=device", "names:hidden=device,activated=offload"),
    ("names:*=remat", "names:"),
    ("names:activated=device", "names:activated=device"),
])
def test_explicit_form_lists_every_kept_name(stored, explicit):
    assert resolve_step_named(stored, NAMES, "make_step") == explicit
    assert set(explicit_named(explicit)) <= set(NAMES)


def test_an_unknown_name_is_refused_with_the_steps_names():
    with pytest.raises(UsageError, match="unknown checkpoint name 'mlp_hidden'.*hidden, "
                                         "activated"):
        resolve_step_named("names:mlp_hidden=device", NAMES, "make_step")
    with pytest.raises(UsageError, match="names no tensors"):
        resolve_step_named("names:*=device", (), "make_step")


@pytest.mark.parametrize("bad", ["names:", "names:hidden", "names:hidden=disk",
                                 "names:a/b=device"])
def test_bad_grammar_is_refused(bad):
    with pytest.raises(UsageError):
        step_named(bad)


def test_a_star_cannot_reach_the_compile_child():
    with pytest.raises(ValueError):
        explicit_named("names:*=device")
