"""`oom` of a GPU dump judges against the memory the compiling GPU reported, which newer XLA
writes beside the module (`*.gpu_target_config.pbtxt`); the truth is the allocator limit JAX
set on that H100 when the fixture was taken."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import FIXTURES

import hloscope
from hloscope.parsers.gpu_target_config import find_gpu_target

FOLDER = FIXTURES / "gpu-h100-jax011" / "profile-tiny"


def test_capacity_is_jaxs_share_of_what_the_gpu_reported() -> None:
    limit = json.loads((FOLDER / "meta.json").read_text())["allocator"]["bytes_limit"]
    result = hloscope.oom(FOLDER)
    assert result.capacity.bytes == int(0.75 * 85_017_493_504)
    assert abs(result.capacity.bytes / limit - 1) < 1e-4  # 786,432 bytes below JAX's limit
    assert "NVIDIA H100 80GB HBM3" in result.capacity.source
    assert result.fits is True


def test_a_named_device_or_capacity_still_decides() -> None:
    assert hloscope.oom(FOLDER, capacity="1MiB").capacity.bytes == 2**20
    assert hloscope.oom(FOLDER, device="a100").capacity.device == "a100"


def test_without_the_file_or_its_memory_there_is_none(tmp_path: Path) -> None:
    hlo = next(FOLDER.glob("*gpu_after_optimizations.txt"))
    assert find_gpu_target(hlo).memory_bytes == 85_017_493_504
    copy = tmp_path / hlo.name
    shutil.copy(hlo, copy)
    assert find_gpu_target(copy) is None
    config = tmp_path / "module_0000.jit_train_step.gpu_target_config.pbtxt"
    config.write_text('device_description_str: "NVIDIA H100 80GB HBM3"\n')
    assert find_gpu_target(copy) is None
    assert hloscope.oom(copy).capacity is None
