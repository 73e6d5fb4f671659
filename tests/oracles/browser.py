"""A real headless Chromium for the HTML report tests: Debian's `chromium` and `chromium-driver`.

When they are missing and we are root with apt-get, the test set-up installs them (the machines
this project runs on are Debian with its package mirror reachable). Otherwise the tests skip
and say why — except under CI=true, where a missing browser is a failure (like the corpus).
selenium comes from the dev extra and drives /usr/bin/chromedriver, so it downloads nothing.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PACKAGES = ("chromium", "chromium-driver")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"headless Chromium is needed under CI: {reason}")
    pytest.skip(reason)


def _install() -> str | None:
    """Installs the packages with apt-get; the reason it could not, or None."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "not root, or no apt-get: install chromium and chromium-driver (Debian)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", *PACKAGES]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
        done = subprocess.run(install, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return f"apt-get install {' '.join(PACKAGES)} failed: {done.stderr[-400:]}"
    return None


def ensure_chromium() -> None:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        reason = _install()
        if reason is not None:
            _unavailable(reason)


def start_driver():  # -> selenium.webdriver.Chrome
    """A headless Chromium collecting the browser's console log."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("selenium is not installed: pip install -e '.[dev]'")
    ensure_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1280,2000"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
