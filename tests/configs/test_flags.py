"""User XLA / libtpu flags: normalised, gathered with the environment's, put where each
backend reads them, and part of the cache key."""
from __future__ import annotations

import pytest

from hloscope.configs.config import TransformerConfig
from hloscope.configs.flags import CompileFlags, normalise_flag
from hloscope.errors import UsageError
from hloscope.workloads.build import BuildSpec


def test_flags_are_normalised() -> None:
    assert normalise_flag("xla_tpu_x=true") == "--xla_tpu_x=true"
    assert normalise_flag("--xla_tpu_x=1") == "--xla_tpu_x=1"
    for bad in ("", "--", "not a flag", "--1x=2"):
        with pytest.raises(UsageError):
            normalise_flag(bad)


def test_environment_and_user_flags_reach_the_child() -> None:
    environ = {"LIBTPU_INIT_ARGS": "--xla_tpu_a=1", "XLA_FLAGS": "--xla_b=2", "HOME": "/x"}
    flags = CompileFlags.gather(["xla_tpu_c=3"], environ)
    assert flags.environment == {"LIBTPU_INIT_ARGS": "--xla_tpu_a=1", "XLA_FLAGS": "--xla_b=2"}
    child = {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    tpu = flags.apply(child, "tpu")
    assert tpu["LIBTPU_INIT_ARGS"] == "--xla_tpu_a=1 --xla_tpu_c=3"
    assert tpu["XLA_FLAGS"] == "--xla_b=2 --xla_force_host_platform_device_count=4"
    cpu = flags.apply(child, "cpu")
    assert cpu["XLA_FLAGS"].split() == ["--xla_b=2", "--xla_force_host_platform_device_count=4",
                                        "--xla_tpu_c=3"]
    assert CompileFlags.from_dict(flags.to_dict()) == flags


def test_flags_are_part_of_the_cache_key() -> None:
    plain = BuildSpec("tiny", "none", "tpu:v5e:2x2", TransformerConfig())
    flagged = BuildSpec("tiny", "none", "tpu:v5e:2x2", TransformerConfig(),
                        flags=CompileFlags.gather(["--xla_tpu_x=true"], {}))
    from_env = BuildSpec("tiny", "none", "tpu:v5e:2x2", TransformerConfig(),
                         flags=CompileFlags.gather([], {"LIBTPU_INIT_ARGS": "--xla_tpu_x=true"}))
    assert len({plain.cache_key(), flagged.cache_key(), from_env.cache_key()}) == 3
    assert flagged.key_material()["flags"]["user"] == ["--xla_tpu_x=true"]
