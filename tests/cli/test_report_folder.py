"""The report's folder: nothing the user put there is deleted or replaced (issue 32, 1, 2, 17)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from calib_frames.cli import main
from calib_frames.cli.report_folder import MANIFEST

ROOT = Path(__file__).resolve().parents[2]
PREDICTIONS = ROOT / "data" / "synthetic_predictions.parquet"


def report(out: Path | str, *extra: str) -> list[str]:
    return ["report", str(PREDICTIONS), "--by", "model,task", "--out", str(out), "--quiet",
            "--no-uncertainty", "--no-charts", *extra]  # fmt: skip


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("calib-frames: error:") and len(err.strip().splitlines()) == 1, err
    return err


def test_files_a_user_added_to_a_report_folder_are_refused_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    assert main(report(out)) == 0
    (out / "NOTES.txt").write_text("mine")
    kept = out / "preds.parquet"
    kept.write_bytes(PREDICTIONS.read_bytes())
    capsys.readouterr()
    # the input kept in the folder and a note beside the report: refused, both kept
    argv = ["report", str(kept), "--by", "model,task", "--out", str(out), "--quiet"]
    assert main(argv) == 2
    err = error_line(capsys)
    assert "NOTES.txt" in err and "preds.parquet" in err
    assert (out / "NOTES.txt").read_text() == "mine"
    assert kept.read_bytes() == PREDICTIONS.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no staging left


def test_a_report_folder_without_foreign_files_is_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    assert main(report(out)) == 0
    listed = json.loads((out / MANIFEST).read_text())["files"]
    assert {p.name for p in out.iterdir()} == {*listed, MANIFEST}
    (out / "comparison.csv").write_text("stale")
    assert main(report(out)) == 0
    assert (out / "comparison.csv").read_text() != "stale"


def test_a_marker_that_is_not_a_reports_does_not_open_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    out.mkdir()
    (out / MANIFEST).write_text("not json")
    (out / "data.csv").write_text("mine")
    assert main(report(out)) == 2
    assert "data.csv" in error_line(capsys)
    assert (out / "data.csv").read_text() == "mine"


def test_out_through_a_symbolic_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "rep"
    target.parent.mkdir()
    target.mkdir()
    link = tmp_path / "rep"
    link.symlink_to(target, target_is_directory=True)
    assert main(report(link)) == 0
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert (target / "comparison.parquet").is_file()
    assert main(report(link)) == 0  # and again: the link stays, the folder is replaced
    assert link.is_symlink() and (target / "comparison.parquet").is_file()
    assert sorted(p.name for p in target.parent.iterdir()) == ["rep"]


def test_out_a_link_to_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "rep"
    link.symlink_to(tmp_path / "missing")
    assert main(report(link)) == 2
    assert "does not exist" in error_line(capsys)
    assert link.is_symlink() and not (tmp_path / "missing").exists()


def test_out_the_current_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "rep"
    assert main(report(out)) == 0
    monkeypatch.chdir(out)
    for given in (".", str(out), ".."):
        if given == "..":
            monkeypatch.chdir(out)
        assert main(report(given)) == 2
        assert "current folder" in error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no stray .old or .partial


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_report_leaves_no_partial_folder(tmp_path: Path, signum: int, code: int) -> None:
    rng = np.random.default_rng(0)
    n = 200_000
    rows = tmp_path / "rows.parquet"
    pl.DataFrame(
        {
            "model": rng.integers(0, 40, n).astype(str),
            "task": rng.integers(0, 20, n).astype(str),
            "confidence": rng.random(n),
            "correct": rng.random(n) < 0.5,
        }
    ).write_parquet(rows)
    out = tmp_path / "rep"
    argv = ["report", str(rows), "--by", "model,task", "--out", str(out), "--replicates", "500"]
    process = subprocess.Popen(
        [sys.executable, "-m", "calib_frames", *argv],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    # the first progress line: the tables are done, the charts are being built
    assert process.stderr.readline().startswith("calib-frames: "), process.communicate()
    assert [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == code, err
    assert "no output was left half-written" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.parquet"]
