"""`build` / `sweep` target, slice, mesh and flag options: bad input is a usage error (exit 2)
with the reason, before anything compiles."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from hloscope.cli.main import cli


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize(("args", "needle"), [
    (["--target", "tpu:v6e:32x16"], "8x16 (v6e-128)"),
    (["--target", "tpu:v6e-100"], "v6e-256"),
    (["--target", "cpu", "--num-slices", "2"], "TPU targets only"),
    (["--target", "tpu:v5e:2x2:slices=2", "--num-slices", "3"], "--num-slices 3"),
    (["--target", "tpu:v5e:2x2", "--num-slices", "2", "--ici-fsdp-parallelism", "3"],
     "does not divide"),
    (["--target", "tpu:v5e:2x2", "--num-slices", "2", "--dcn-data-parallelism", "4"],
     "number of slices"),
    (["--target", "tpu:v5e:2x2", "--tensor", "2", "--ici-tensor-parallelism", "4"],
     "disagree"),
    (["--target", "tpu:v5e:2x2", "--xla-flag", "not a flag"], "not an XLA flag"),
    (["--target", "tpu:v5e:2x2", "--num-slices", "2", "--mesh", "data:2,fsdp:3"],
     "does not multiply to the target's 8 devices"),
    (["--target", "tpu:v5e:2x2", "--mesh", "pipeline=4"], "bad --mesh item"),
    (["--target", "tpu:v5e:2x2", "--mesh", "fsdp=4", "--ici-fsdp-parallelism", "4"],
     "give one of them"),
])
def test_bad_targets_meshes_and_flags_are_usage_errors(tmp_path: Path, args: list[str],
                                                       needle: str) -> None:
    for command in ("build", "sweep"):
        code, output = invoke(command, "--model", "tiny", *args, "-o", str(tmp_path / command))
        assert code == 2, output
        assert needle in output, output
        assert not (tmp_path / command).exists()
