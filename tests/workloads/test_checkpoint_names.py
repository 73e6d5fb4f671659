"""The checkpoint names of a traced step and their decisions, against JAX's `saved_residuals`
of the same block under the same policy (tracing only: nothing compiles)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax._src.ad_checkpoint import saved_residuals
from jax.ad_checkpoint import checkpoint_name

from hloscope.workloads.checkpoint_names import NOT_CHECKPOINTED, Variant, named_values

LAYERS = 3
S = jax.ShapeDtypeStruct
X, W1, W2 = S((8, 4), jnp.float32), S((4, 16), jnp.float32), S((16, 4), jnp.float32)
POLICIES = {
    "none": None, "full": None,
    "dots_saveable": jax.checkpoint_policies.dots_saveable,
    "save activated": jax.checkpoint_policies.save_only_these_names("activated"),
    "offload hidden": jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["hidden"],
        offload_src="device", offload_dst="pinned_host"),
}


def block(x, w):
    hidden = checkpoint_name(x @ w[0], "hidden")
    activated = checkpoint_name(jnp.tanh(hidden), "activated")
    return x + activated @ w[1]


def _wrapped(policy_name: str):
    if policy_name == "none":
        return block
    return jax.checkpoint(block, policy=POLICIES[policy_name])


def _step_jaxpr(policy_name: str):
    layer = _wrapped(policy_name)

    def loss(params, x):
        x = jax.lax.scan(lambda h, w: (layer(h, w), None), x, params)[0]
        return jnp.sum(x)

    stacked = (S((LAYERS, *W1.shape), W1.dtype), S((LAYERS, *W2.shape), W2.dtype))
    return jax.jit(jax.value_and_grad(loss)).trace(stacked, X).jaxpr


@pytest.mark.parametrize("policy_name", list(POLICIES))
def test_decisions_match_saved_residuals(policy_name):
    variant = Variant(policy_name != "none", POLICIES[policy_name], policy_name)
    found = {v.name: v for v in named_values(_step_jaxpr(policy_name), variant)}
    assert set(found) == {"hidden", "activated"}
    assert all(v.shape == (8, 16) and v.bytes == 8 * 16 * 4 for v in found.values())
    oracle = saved_residuals(_wrapped(policy_name), X, (W1, W2))
    for value in found.values():
        at_line = [aval for aval, source in oracle if f"from {value.source}:" in source]
        host = [aval for aval in at_line if "<host>" in str(aval)]
        if policy_name == "none":
            assert value.decision == NOT_CHECKPOINTED
        elif host:
            assert value.decision == "offloaded", value
        else:
            assert (value.decision == "saved") == bool(at_line), value


def test_offloaded_residual_is_the_named_one():
    """saved_residuals gives an offloaded value no line (`output of device_put from `): the one
    host residual has the offloaded name's shape, and only `hidden` is decided offloaded."""
    variant = Variant(True, POLICIES["offload hidden"], "offload hidden")
    found = {v.name: v.decision for v in named_values(_step_jaxpr("offload hidden"), variant)}
    host = [aval for aval, _ in saved_residuals(_wrapped("offload hidden"), X, (W1, W2))
            if "<host>" in str(aval)]
    assert [tuple(a.shape) for a in host] == [(8, 16)]
    assert found == {"hidden": "offloaded", "activated": "recomputed"}
