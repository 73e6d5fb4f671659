"""The train step's mesh (jax-free rules): the single-axis layout the fixtures use, and the
hybrid DCN x ICI one (MaxText's create_hybrid_device_mesh defaults)."""
from __future__ import annotations

import math

import pytest

from hloscope.errors import UsageError
from hloscope.spec.config import TransformerConfig
from hloscope.spec.mesh import plan_mesh


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
