"""Device facts: internal consistency, lookups, memory spaces, and the GPU target config render."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import SHARED

from hloscope.cli.main import cli
from hloscope.devices import (
    DEVICES,
    GIB,
    JAX_DEFAULT_GPU_MEMORY_FRACTION,
    MemoryLocation,
    check_device_or_capacity,
    get_device,
    memory_budget,
    memory_location,
    memory_space,
    render_gpu_target_config,
)
from hloscope.errors import EXIT_USAGE, UsageError

REFERENCE_CONFIGS = SHARED / "reference" / "gpu_target_configs"
# Usable HBM from libtpu's OOM messages (docs/targets.md, "Usable HBM").
OOM_AVAILABLE_GIB = {"v2": 7.48, "v3": 15.48, "v4": 30.75, "v5e": 15.75, "v5p": 95.74,
                     "v6e": 31.25, "tpu7x": 94.75}


@pytest.mark.parametrize("name", sorted(DEVICES))
def test_device_facts_are_consistent(name: str) -> None:
    device = DEVICES[name]
    assert device.name == name and device.backend in ("tpu", "gpu", "cpu")
    assert device.devices_per_chip in (1, 2)
    if device.usable_memory_bytes is not None and device.hbm_bytes is not None:
        assert 0 < device.usable_memory_bytes <= device.hbm_bytes
    numbers = [device.hbm_bandwidth, device.interconnect_bandwidth, device.host_link_bandwidth,
               device.dcn_bandwidth, *vars(device.peak_flops).values()]
    assert all(value is None or value > 0 for value in numbers)
    assert [s.number for s in device.memory_spaces][0] == 0


@pytest.mark.parametrize("name", sorted(OOM_AVAILABLE_GIB))
def test_tpu_usable_memory_matches_oom_messages(name: str) -> None:
    device = get_device(name)
    assert device.backend == "tpu"
    assert round(device.usable_memory_bytes / GIB, 2) == OOM_AVAILABLE_GIB[name]


@pytest.mark.parametrize("name", ["h100", "a100"])
def test_gpu_facts_agree_with_xla_target_spec(name: str) -> None:
    device = get_device(name)
    assert device.cuda is not None
    assert device.usable_memory_bytes == device.cuda.device_memory_size
    # Vendor datasheet bandwidth vs the bandwidth XLA's spec file records: within 1%.
    assert device.hbm_bandwidth == pytest.approx(device.cuda.memory_bandwidth, rel=0.01)
    assert device.peak_flops.bf16 > device.peak_flops.f32


def test_get_device_is_case_insensitive_and_names_known_devices() -> None:
    assert get_device(" H100 ").name == "h100"
    with pytest.raises(UsageError) as raised:
        get_device("v9z")
    for name in ("v5e", "tpu7x", "h100", "a100", "cpu"):
        assert name in str(raised.value)


@pytest.mark.parametrize(("backend", "number", "location"), [
    ("tpu", 0, MemoryLocation.DEVICE), ("tpu", 1, MemoryLocation.ON_CHIP),
    ("tpu", 2, MemoryLocation.ON_CHIP), ("tpu", 5, MemoryLocation.HOST),
    ("tpu", 6, MemoryLocation.UNKNOWN), ("tpu", 3, MemoryLocation.UNKNOWN),
    ("gpu", 0, MemoryLocation.DEVICE), ("gpu", 1, MemoryLocation.DEVICE),
    ("gpu", 2, MemoryLocation.DEVICE), ("gpu", 5, MemoryLocation.HOST),
    ("cpu", 0, MemoryLocation.DEVICE),
])
def test_memory_location(backend: str, number: int, location: MemoryLocation) -> None:
    assert memory_location(backend, number) == location
    assert memory_location(backend.upper(), number) == location


def test_memory_space_names_and_unknown_backend() -> None:
    assert memory_space("tpu", 1).name == "VMEM"
    assert memory_space("gpu", 1).name == "collective memory"
    assert memory_location("tpu", 1) == "on-chip"  # a str enum: compares with plain strings
    with pytest.raises(UsageError, match="known backends"):
        memory_location("ipu", 0)


def test_memory_budget() -> None:
    assert JAX_DEFAULT_GPU_MEMORY_FRACTION == 0.75
    h100 = get_device("h100")
    assert memory_budget(h100) == int(h100.cuda.device_memory_size * 0.75)
    assert memory_budget(h100, fraction=0.9) == int(h100.cuda.device_memory_size * 0.9)
    assert memory_budget(get_device("v5e")) == get_device("v5e").usable_memory_bytes
    assert memory_budget(get_device("cpu")) is None


def test_render_refuses_non_gpu_devices() -> None:
    with pytest.raises(UsageError, match="h100"):
        render_gpu_target_config(get_device("v5e"))


def require_reference() -> None:
    if REFERENCE_CONFIGS.is_dir():
        return
    message = f"the reference GPU target configs are absent ({REFERENCE_CONFIGS}); ../shared sits"
    message += " beside the repository"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.mark.parametrize(("name", "reference"), [("h100", "h100_sxm.txtpb"),
                                                 ("a100", "a100_sxm_80.txtpb")])
def test_rendered_target_config_matches_reference(name: str, reference: str) -> None:
    require_reference()
    expected = parse_text_proto((REFERENCE_CONFIGS / reference).read_text())
    rendered = parse_text_proto(render_gpu_target_config(get_device(name)))
    assert rendered == expected


# A minimal text-format protobuf reader (fields, nested messages, strings, numbers, enums),
# independent of the renderer, so the comparison is by parsed fields rather than by layout.
_TOKEN = re.compile(r'\s*(?:#[^\n]*|("(?:[^"\\]|\\.)*")|([{}:])|([^\s{}:"#]+))')


def parse_text_proto(text: str) -> dict[str, list[Any]]:
    tokens = [m.group(1) or m.group(2) or m.group(3) for m in _TOKEN.finditer(text)]
    tokens = [t for t in tokens if t]
    message, rest = _parse_message(tokens)
    assert not rest, f"unparsed tokens: {rest[:5]}"
    return message


def _parse_message(tokens: list[str]) -> tuple[dict[str, list[Any]], list[str]]:
    message: dict[str, list[Any]] = {}
    while tokens and tokens[0] != "}":
        name, tokens = tokens[0], tokens[1:]
        if tokens[0] == ":":
            tokens = tokens[1:]
        if tokens[0] == "{":
            value, tokens = _parse_message(tokens[1:])
            assert tokens and tokens[0] == "}", f"unclosed message {name}"
            tokens = tokens[1:]
        else:
            value, tokens = _scalar(tokens[0]), tokens[1:]
        message.setdefault(name, []).append(value)
    return message, tokens


def _scalar(token: str) -> Any:
    if token.startswith('"'):
        return bytes(token[1:-1], "utf-8").decode("unicode_escape")
    for kind in (int, float):
        try:
            return kind(token)
        except ValueError:
            pass
    return token  # an enum value or true/false


def test_text_proto_reader_handles_nesting_and_comments() -> None:
    parsed = parse_text_proto('# c\na { b: 1 c: "x \\"y\\"" d { e: NONE } }\nf: 1.5\nf: 2')
    assert parsed == {"a": [{"b": [1], "c": ['x "y"'], "d": [{"e": ["NONE"]}]}], "f": [1.5, 2]}



@pytest.mark.parametrize(("options", "message"), [
    (False, "give device or capacity, not both"),
    (True, "give --device or --capacity, not both"),
])
def test_a_memory_limit_is_given_one_way(options: bool, message: str) -> None:
    for device, capacity in ((None, None), ("v5e", None), (None, "16GiB"), (None, 0)):
        check_device_or_capacity(device, capacity, options=options)
    with pytest.raises(UsageError, match=message):
        check_device_or_capacity("v5e", "16GiB", options=options)


def test_every_caller_checks_device_and_capacity_the_same_way(tmp_path: Path) -> None:
    import hloscope

    with pytest.raises(UsageError, match="give device or capacity, not both"):
        hloscope.oom(str(tmp_path / "absent.hlo"), device="v5e", capacity="16GiB")
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "absent.hlo"), "--device", "v5e",
                                      "--capacity", "1GiB", "-o", str(tmp_path / "r.html")])
    assert result.exit_code == EXIT_USAGE
    assert "give --device or --capacity, not both" in result.output
