"""The train step's mesh (jax-free rules): the single-axis layout the fixtures use, and the
hybrid DCN x ICI one (MaxText's create_hybrid_device_mesh defaults)."""
from __future__ import annotations

import math

import pytest

from hloscope.configs.config import TransformerConfig
from hloscope.configs.mesh import mesh_config_values, parse_mesh_text, plan_mesh
from hloscope.errors import UsageError


def test_one_slice_without_options_keeps_the_single_axis_mesh() -> None:
    plan = plan_mesh(TransformerConfig(), 1, 4)
    assert not plan.hybrid and plan.axis_names == ("data",) and plan.shape == (4,)
    tensor = plan_mesh(TransformerConfig(tensor_parallel=2, fsdp=True), 1, 8)
    assert tensor.axis_names == ("data", "tensor") and tensor.shape == (4, 2)


def test_slices_default_to_dcn_data_and_ici_fsdp() -> None:
    plan = plan_mesh(TransformerConfig(fsdp=True), 4, 128)  # Llama 70B on 4 x v6e-128
    assert plan.hybrid and plan.axis_names == ("data", "fsdp", "tensor")
    assert plan.shape == (4, 128, 1) and plan.device_shape == (4, 1, 128, 1)
    assert plan.batch_axes == ("data", "fsdp") and plan.batch_ways == 512
    assert (plan.dcn_data, plan.ici_fsdp, plan.ici_data) == (4, 128, 1)


def test_without_fsdp_the_slice_is_data_parallel() -> None:
    plan = plan_mesh(TransformerConfig(), 2, 4)
    assert plan.shape == (8, 1, 1) and plan.ici_data == 4 and plan.batch_ways == 8


def test_stated_sizes_split_the_slice() -> None:
    config = TransformerConfig(ici_fsdp_parallel=2, tensor_parallel=2)
    plan = plan_mesh(config, 2, 8)
    assert (plan.dcn_data, plan.ici_data, plan.ici_fsdp, plan.ici_tensor) == (2, 2, 2, 2)
    assert math.prod(plan.shape) == 16 and plan.shape == (4, 2, 2)
    assert plan_mesh(TransformerConfig(ici_fsdp_parallel=4), 1, 4).hybrid


@pytest.mark.parametrize(("config", "slices", "per_slice", "needle"), [
    (TransformerConfig(dcn_data_parallel=2), 4, 4, "number of slices"),
    (TransformerConfig(ici_fsdp_parallel=3), 2, 4, "does not divide"),
    (TransformerConfig(tensor_parallel=3), 2, 4, "inside one slice"),
])
def test_sizes_that_do_not_fit_are_refused(config: TransformerConfig, slices: int,
                                           per_slice: int, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        plan_mesh(config, slices, per_slice)


def test_mesh_fields_must_be_positive() -> None:
    with pytest.raises(UsageError):
        TransformerConfig(ici_fsdp_parallel=0)


@pytest.mark.parametrize("text, sizes", [
    ("dcn_data=4,fsdp=128,tensor=1", {"dcn_data": 4, "fsdp": 128, "tensor": 1}),
    ("data:4,fsdp:128", {"dcn_data": 4, "fsdp": 128}),
    (" ici_fsdp = 2 , ici_tensor=2, ici_data=2", {"fsdp": 2, "tensor": 2, "ici_data": 2}),
])
def test_mesh_text_names_the_axes(text: str, sizes: dict) -> None:
    assert parse_mesh_text(text) == sizes


@pytest.mark.parametrize("text, needle", [
    ("fsdp", "bad --mesh item"), ("fsdp=0", "N >= 1"), ("pipeline=4", "NAME in"),
    ("fsdp=x", "bad --mesh item"), ("fsdp=2,ici_fsdp=2", "twice"), ("", "bad --mesh item")])
def test_bad_mesh_text_is_a_usage_error(text: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        parse_mesh_text(text)


def test_mesh_text_is_the_maxtext_options() -> None:
    # 4 x v6e-128: DCN data 4 x ICI FSDP 128, as --dcn-data-parallelism 4 --ici-fsdp 128
    values = mesh_config_values(parse_mesh_text("dcn_data=4,fsdp=128,tensor=1"), 4, 128)
    assert values == {"dcn_data_parallel": 4, "ici_fsdp_parallel": 128, "tensor_parallel": 1}
    config = TransformerConfig(**values)
    assert plan_mesh(config, 4, 128) == plan_mesh(
        TransformerConfig(dcn_data_parallel=4, ici_fsdp_parallel=128), 4, 128)
    # unstated: dcn_data = slices, ici_data the rest
    rest = mesh_config_values(parse_mesh_text("fsdp=32"), 4, 128)
    assert plan_mesh(TransformerConfig(**rest), 4, 128).ici_data == 4
    with pytest.raises(UsageError, match="does not multiply to the target's 512 devices"):
        mesh_config_values(parse_mesh_text("data:4,fsdp:64,ici_data:1"), 4, 128)
    with pytest.raises(UsageError, match="does not multiply"):
        mesh_config_values(parse_mesh_text("fsdp=3"), 1, 4)
