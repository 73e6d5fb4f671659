"""Target strings: Cloud TPU accelerator types, real slice shapes, slices, round trips.

The truth is the Cloud TPU documentation's tables (cited in hloscope/configs/slices.py): v5e/v6e
accelerator types count chips (v6e-128 is 8x16), v4/v5p count TensorCores (v5p-256 is 128 chips,
4x4x8), and the supported 2D shapes of v5e/v6e are 1x1 ... 16x16.
"""
from __future__ import annotations

import pytest

from hloscope.configs.slices import accelerator_types, is_real_slice, slice_shapes
from hloscope.configs.targets import Target, parse_target, target_spec
from hloscope.errors import UsageError

DOCS_V6E = ["1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"]  # Cloud TPU docs v6e
DOCS_V5P = ["2x2x1", "2x2x2", "2x4x4", "4x4x4", "4x4x8", "4x8x8", "8x8x8", "8x8x16",
            "8x16x16", "16x16x16", "16x16x24"]  # Cloud TPU docs v5p: the common shapes


@pytest.mark.parametrize(("text", "device", "topology", "devices"), [
    ("tpu:v6e-128", "v6e", "8x16", 128),
    ("tpu:v6e-256", "v6e", "16x16", 256),
    ("tpu:v5litepod-16", "v5e", "4x4", 16),
    ("tpu:v5litepod-4", "v5e", "2x2", 4),
    ("tpu:v5p-256", "v5p", "4x4x8", 128),  # 256 TensorCores = 128 chips, one device each
    ("tpu:v5p-8", "v5p", "2x2x1", 4),
    ("tpu:v4-8", "v4", "2x2x1", 4),
    ("tpu:v4-128", "v4", "4x4x4", 64),
    ("tpu:v2-8", "v2", "2x2", 8),  # v2 has two JAX devices per chip
])
def test_accelerator_types_name_their_slices(text: str, device: str, topology: str,
                                             devices: int) -> None:
    target = parse_target(text)
    assert (target.device_name, target.topology) == (device, topology)
    assert target.num_slices == 1 and target.spec == f"tpu:{device}:{topology}"
    assert target.num_devices == devices  # megacore v4/v5p: one JAX device per chip


def test_chip_counted_and_core_counted_types() -> None:
    for accelerator in accelerator_types("v6e"):
        assert accelerator.name == f"v6e-{accelerator.chips}"
    for accelerator in accelerator_types("v5p"):
        assert accelerator.name == f"v5p-{2 * accelerator.chips}"
    assert list(slice_shapes("v6e") or ()) == DOCS_V6E
    assert all(is_real_slice("v5p", shape) for shape in DOCS_V5P)
    assert is_real_slice("v5p", "8x4x4") and is_real_slice("v6e", "16x8")  # turned slices
    assert slice_shapes("tpu7x") is None and is_real_slice("tpu7x", "2x2x1") is None


@pytest.mark.parametrize("text", ["tpu:v6e:32x16", "tpu:v6e:32x32", "tpu:v5e:3x3",
                                  "tpu:v5p:4x4x6", "tpu:v4:2x8x8"])
def test_a_topology_that_is_no_slice_is_refused_with_the_real_ones(text: str) -> None:
    with pytest.raises(UsageError) as error:
        parse_target(text)
    message = str(error.value)
    assert "not a Cloud TPU slice" in message and "--allow-any-topology" in message
    device = text.split(":")[1]
    first = (slice_shapes(device) or ())[0]
    assert first in message


def test_the_override_is_kept_and_labelled() -> None:
    target = parse_target("tpu:v6e:32x16", allow_any_topology=True)
    assert target.any_topology and target.spec == "tpu:v6e:32x16:any-topology"
    assert parse_target(target.spec) == target
    assert "--allow-any-topology" in target.describe()
    assert "allow" not in parse_target("tpu:v6e:8x16:any-topology").describe()


def test_slices_multiply_devices_and_round_trip() -> None:
    target = parse_target("tpu:v6e-128", num_slices=4)
    assert target == Target("tpu", "v6e", "8x16", 4)
    assert target.num_devices == 512 and target.devices_per_slice == 128
    assert target.spec == "tpu:v6e:8x16:slices=4" and target.name == "tpu-v6e-8x16-slices4"
    assert target.describe() == "4 x 128 TPU v6e chips = 512 devices"
    assert parse_target(target.spec) == target
    assert target_spec("tpu:v5e:2x2", 2) == "tpu:v5e:2x2:slices=2"
    assert parse_target("tpu:v5e:2x2:slices=2", num_slices=2).num_devices == 8
    assert parse_target("tpu:v5e:2x2", num_slices=1).spec == "tpu:v5e:2x2"


@pytest.mark.parametrize(("text", "slices", "needle"), [
    ("tpu:v5e:2x2:slices=2", 3, "--num-slices 3"),
    ("tpu:v5e:2x2:slices=0", None, "positive"),
    ("tpu:v5e:2x2:slices=x", None, "slices=N"),
    ("tpu:v6e-100", None, "v6e-128"),
    ("tpu:v9-8", None, "v5litepod-N"),
    ("cpu", 2, "TPU targets only"),
    ("gpu:h100:1x1x8", 2, "TPU targets only"),
])
def test_bad_slice_options_are_usage_errors(text: str, slices: int | None, needle: str) -> None:
    with pytest.raises(UsageError, match=needle.replace("-", "\\-")):
        parse_target(text, num_slices=slices)


def test_existing_targets_keep_their_spelling() -> None:
    for text in ("cpu", "cpu:4", "tpu:v5e:2x2", "tpu:v5p:2x2x1", "tpu:v4:2x2x1", "tpu:v3:2x2",
                 "tpu:tpu7x:2x2x1", "gpu:h100:1x1x8"):
        assert parse_target(text).spec == text
        assert parse_target(text).num_slices == 1


def test_v5e_n_is_read_as_the_v5litepod_type_users_mean() -> None:
    # Cloud TPU docs: v5litepod-256 is the 16 x 16 v5e slice; users and frameworks write v5e-256
    assert parse_target("tpu:v5e-256").spec == "tpu:v5e:16x16"
    assert parse_target("tpu:v5e-8:slices=2").spec == "tpu:v5e:2x4:slices=2"
    with pytest.raises(UsageError, match="the v5litepod ones are .*16x16 \\(v5litepod-256\\)"):
        parse_target("tpu:v5e-300")
