"""Session-wide fixtures: one local Spark session for the whole suite, a real headless
Chromium for the browser tests (``chromium_path`` finds it, or installs it with apt-get when
running as root, and fails loudly when it cannot: a browser test never skips), and a real
S3-compatible server on 127.0.0.1 for the object-storage tests (moto's server mode)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
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


# the lighteval scripts run only in their subprocess: lighteval_runs.py stands an empty module
# in for one of lighteval's task modules when imported, and lighteval_tasks.py reads its data
# folder from the environment the test sets (a conftest of their own would shadow this one,
# which tests import as ``conftest``)
collect_ignore = ["integrations/lighteval_runs.py", "integrations/lighteval_tasks.py"]


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


@dataclass(frozen=True)
class S3Server:
    """A running S3-compatible server and the credentials the tests use on it."""

    endpoint: str
    bucket: str
    options: dict[str, str]
    """polars ``storage_options`` of a user allowed everything on S3."""
    denied: dict[str, str]
    """The same for a user with no permission at all (AccessDenied)."""

    def env(self) -> dict[str, str]:
        """The standard environment variables of the allowed user (for CLI processes)."""
        return {
            **os.environ,
            "AWS_ACCESS_KEY_ID": self.options["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": self.options["aws_secret_access_key"],
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_for_port(process: subprocess.Popen[bytes], port: int, seconds: float = 60.0) -> None:
    """Poll the port until the server accepts a connection (no sleep: the wait between
    tries is waiting on the process, which also notices a server that died)."""
    for _ in range(int(seconds / 0.05)):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
            return
        except OSError:
            try:
                process.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                continue
            pytest.fail(f"moto's server exited with status {process.returncode}", pytrace=False)
    pytest.fail(f"moto's server did not listen on 127.0.0.1:{port} in {seconds} s", pytrace=False)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1, started once, with IAM authentication enforced.

    Its first five requests (``INITIAL_NO_AUTH_ACTION_COUNT``) create two IAM users: one
    allowed everything on S3, one allowed nothing (for the denied-access tests); then
    every request is checked. ``moto[server]`` is a test dependency: its absence is a
    broken install, not a skip.
    """
    try:
        import boto3
        import moto.server  # noqa: F401
    except ImportError:
        pytest.fail("moto[server] is missing: pip install -e '.[test]'", pytrace=False)
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "5"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(server, port)
        setup = {"endpoint_url": endpoint, "region_name": "us-east-1"}
        iam = boto3.client("iam", aws_access_key_id="setup", aws_secret_access_key="setup", **setup)
        keys = {}
        for user in ("writer", "nobody"):
            iam.create_user(UserName=user)
            keys[user] = iam.create_access_key(UserName=user)["AccessKey"]
        allow = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
        iam.put_user_policy(
            UserName="writer",
            PolicyName="s3",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [allow]}),
        )

        def options(user: str) -> dict[str, str]:
            return {
                "aws_endpoint_url": endpoint,
                "aws_access_key_id": keys[user]["AccessKeyId"],
                "aws_secret_access_key": keys[user]["SecretAccessKey"],
                "aws_region": "us-east-1",
                "aws_allow_http": "true",
            }

        writer = options("writer")
        boto3.client(
            "s3",
            aws_access_key_id=writer["aws_access_key_id"],
            aws_secret_access_key=writer["aws_secret_access_key"],
            **setup,
        ).create_bucket(Bucket="calib")
        yield S3Server(endpoint, "calib", writer, options("nobody"))
    finally:
        server.terminate()
        server.wait(timeout=30)
