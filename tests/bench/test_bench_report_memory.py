"""Smoke test of ``benchmarks/bench_report_memory.py`` (its quick size): it runs, every
command exits 0 and the table of peaks comes out. No memory or time is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # eight command-line runs


def test_bench_report_memory_quick(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "benchmarks.bench_report_memory", "--quick"]
    proc = subprocess.run(
        [*command, "--data-dir", str(tmp_path), "--json", str(out)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "| 50 models |" in proc.stdout and "FAILED" not in proc.stdout
    (run,) = json.loads(out.read_text())["runs"]
    assert run["ok"] and run["rows"] == 50 * 20 * 20 - 3 * 20 + 8
