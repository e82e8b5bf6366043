"""Helpers of the harness tests: the repository root, an environment that sees this checkout
and its entry points, subprocess runs of the harnesses (offline), and a log's predictions read
back the way a harness scores multiple choice."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import polars as pl

import calib_frames as cf

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def harness_env(tmp: Path, **extra: str) -> dict[str, str]:
    """An environment for a harness subprocess: this checkout first on the path, offline.

    The checkout's entry points (``[project.entry-points.*]`` of pyproject.toml) are put in
    a throwaway ``.dist-info`` on the path, so that inspect finds ``calib_frames/...`` by
    name whether or not the installed calib-frames was built from this pyproject.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dist = tmp / "entry_points" / "calib_frames_checkout-0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: calib-frames-checkout\nVersion: 0\n", encoding="utf-8"
    )
    lines = []
    for group, points in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines.extend(f"{name} = {target}" for name, target in points.items())
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = os.pathsep.join([str(ROOT), str(dist.parent), os.environ.get("PYTHONPATH", "")])
    return {
        **os.environ,
        "PYTHONPATH": path,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(tmp / "hf"),
        "INSPECT_LOG_DIR": str(tmp / "inspect-logs"),
        "NO_COLOR": "1",
        **extra,
    }


def run(command: list[str], env: dict[str, str], cwd: Path) -> str:
    """Run ``command``; its stdout, or the test fails with both streams."""
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{command}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def scripts_bin(name: str) -> str:
    """The console script ``name`` of this interpreter's environment."""
    return str(Path(sys.executable).parent / name)


def raw_predictions(options: pl.LazyFrame) -> pl.DataFrame:
    """One prediction per document of a harness log's options frame: the argmax option, its
    softmax confidence (raw scoring), wrong without a gold option (as lm-eval and lighteval)."""
    chosen = cf.sources.choice_predictions(options, by=["model", "task", "run"], no_gold="wrong")
    return chosen.filter(pl.col("scoring") == "raw").collect()
