"""How many devices of a platform this machine has, asked of jax in a child process.

The parent process may have pinned JAX_PLATFORMS=cpu (CI does), so the question is asked with
the platform's own name in a fresh interpreter, where a missing plugin or driver answers 0.
"""
from __future__ import annotations

import os
import subprocess
import sys

from hloscope.workloads.profile import JAX_PLATFORM_NAMES

_ASK = ("import jax\n"
        "try:\n    print(len(jax.devices()))\n"
        "except RuntimeError:\n    print(0)\n")


def local_device_count(platform: str, timeout: float = 120.0) -> int:
    environment = {**os.environ, "JAX_PLATFORMS": JAX_PLATFORM_NAMES.get(platform, platform)}
    try:
        answer = subprocess.run([sys.executable, "-c", _ASK], env=environment, timeout=timeout,
                                capture_output=True, text=True, check=False)
    except subprocess.TimeoutExpired:
        return 0
    lines = answer.stdout.strip().splitlines()
    return int(lines[-1]) if answer.returncode == 0 and lines and lines[-1].isdigit() else 0
