"""``report --png`` with names vl-convert cannot draw as they are (issue 32.7).

In a subprocess: vl-convert aborted the whole process (a Rust panic, exit 134, a
``.partial`` folder left) on a NUL in a name, which no in-process test would survive.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[2]
PREDICTIONS = ROOT / "data" / "synthetic_predictions.parquet"

pytestmark = pytest.mark.slow  # renders six PNG charts


def test_png_report_of_a_name_with_a_nul(tmp_path: Path) -> None:
    names = {"calibrated": "nul\x00byte", "overconfident": "toString", "underconfident": "a\u2028b"}
    path = tmp_path / "preds.parquet"
    pl.read_parquet(PREDICTIONS).with_columns(pl.col("model").replace(names)).write_parquet(path)
    out = tmp_path / "report"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "calib_frames", "report", str(path), "--by", "model,task"]
    command += ["--out", str(out), "--png", "--replicates", "20", "--quiet"]
    result = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, env=env, check=False, timeout=600
    )
    assert result.returncode == 0, result.stderr[-2000:]
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "calibration_gap_by_model_and_task.png" in pngs and len(pngs) == 6
    assert all((out / name).stat().st_size > 5_000 for name in pngs)
    assert not list(tmp_path.glob(".report.*"))  # no half-built folder left
    # the files keep the names whole
    assert set(pl.read_parquet(out / "comparison.parquet")["model"]) == set(names.values())
