"""Session-wide fixtures: one local Spark session for the whole suite, and a real headless
Chromium for the browser tests (``chromium_path`` finds it, or installs it with apt-get when
running as root, and fails loudly when it cannot: a browser test never skips)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _find_chromium() -> str | None:
    for candidate in CHROMIUM_CANDIDATES:
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _apt_install() -> str:
    """Install Debian's chromium package (root only); returns what apt said on failure."""
    log = []
    for command in (
        ["apt-get", "install", "-y", "chromium"],
        ["apt-get", "update"],
        ["apt-get", "install", "-y", "chromium"],
    ):
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        log.append(f"$ {' '.join(command)} -> {result.returncode}\n{result.stderr[-2000:]}")
        if command[1] == "install" and result.returncode == 0:
            return ""
    return "\n".join(log)


def locate_chromium() -> str:
    """Path of a Chromium executable; installed with apt-get when missing and root.

    Fails the calling test (``pytest.fail``) when there is none and none can be installed.
    """
    found = _find_chromium()
    if found:
        return found
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        log = _apt_install()
        found = _find_chromium()
        if found:
            return found
        pytest.fail(
            "the browser tests need Chromium: `apt-get install -y chromium` did not provide "
            f"it:\n{log}",
            pytrace=False,
        )
    pytest.fail(
        "the browser tests need Chromium at /usr/bin/chromium; install it with "
        "`sudo apt-get install -y chromium` (Debian/Ubuntu) and rerun",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Path of a Chromium executable (see :func:`locate_chromium`)."""
    return locate_chromium()


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Any]:
    """A headless Chromium driven by Playwright (launched once per session)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # a test dependency: its absence is a broken install, not a skip
        pytest.fail("playwright is missing: pip install -e '.[test]'", pytrace=False)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A real local Spark session (local[2], one shuffle partition, UI off), started once.

    Spark is a test dependency (the ``spark`` extra); Java 17 must be on the machine.
    """
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)  # type: ignore[attr-defined]
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("calib-frames-tests")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def niamey() -> Any:
    """The Niamey 2016 forecasts, long: ``date``, ``obs``, ``forecast``, ``p`` (read once)."""
    from factories import niamey_long

    return niamey_long()
