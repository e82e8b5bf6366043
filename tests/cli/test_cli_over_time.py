"""``stats --batch-time`` and ``report --from-stats … --over batch [--last N]`` end to end."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from factories import assert_frames_close

import calib_frames as cf
from calib_frames.cli import main


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Five nights of prediction files; model ``b`` turns overconfident on the last."""
    folder = tmp_path_factory.mktemp("nights")
    rng = np.random.default_rng(7)
    paths = []
    for night in range(5):
        truth = rng.uniform(0.5, 0.95, (2, 1500))
        shown = truth.copy()
        if night == 4:
            shown[1] = np.minimum(shown[1] + 0.15, 1.0)
        path = folder / f"night{night}.parquet"
        pl.DataFrame(
            {
                "model": np.repeat(["a", "b"], 1500),
                "task": "qa",
                "confidence": shown.ravel(),
                "correct": (rng.random((2, 1500)) < truth).ravel(),
            }
        ).write_parquet(path)
        paths.append(path)
    return paths


def stats_files(nights: list[Path], folder: Path) -> list[Path]:
    outs = []
    for night, path in enumerate(nights):
        out = folder / f"{path.stem}.stats.parquet"
        args = ["stats", str(path), "--by", "model,task", "--out", str(out),
                "--batch-time", f"2026-12-0{night + 1}"]  # fmt: skip
        assert main(args) == 0
        outs.append(out)
    return outs


def test_batch_time_defaults_to_the_newest_input_mtime(tmp_path: Path, nights: list[Path]) -> None:
    copies = []
    for stamp, path in zip((1_700_000_000, 1_800_000_000), nights[:2], strict=True):
        copy = tmp_path / path.name
        copy.write_bytes(path.read_bytes())
        os.utime(copy, (stamp, stamp))
        copies.append(copy)
    out = tmp_path / "s.parquet"
    assert main(["stats", *map(str, copies), "--by", "model", "--out", str(out)]) == 0
    stored = cf.read_statistics(out)
    expected = dt.datetime.fromtimestamp(1_800_000_000, dt.UTC).isoformat()
    assert stored.batch_times == {stored.batches[0]: expected}


def test_a_bad_batch_time_is_a_usage_error(
    tmp_path: Path, nights: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["stats", str(nights[0]), "--out", str(tmp_path / "s.parquet"), "--batch-time", "tues"]
    assert main(args) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "not an ISO 8601" in error[0]
    assert not (tmp_path / "s.parquet").exists()


def test_report_over_batches(
    tmp_path: Path, nights: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    parts = stats_files(nights, tmp_path)
    merged = tmp_path / "all.parquet"
    assert main(["merge", *map(str, reversed(parts)), "--out", str(merged)]) == 0
    out = tmp_path / "report"
    args = ["report", "--from-stats", str(merged), "--over", "batch", "--last", "4", "--png",
            "--replicates", "50", "--change-replicates", "400", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "ECE up" in printed
    batches = pl.read_parquet(out / "batches.parquet")
    assert batches["batch_time"].unique().sort().dt.day().to_list() == [2, 3, 4, 5]
    for part in parts[1:]:  # the window: the last four nights
        own = cf.read_statistics(part)
        expected = cf.metrics_from_bin_statistics(own.table)
        got = batches.filter(pl.col("batch_id") == own.batches[0]).select(expected.columns)
        assert_frames_close(got, expected, rel=1e-12, abs=1e-12)
    assert "ece_noise_floor" in batches.columns and "ece_ci_low" in batches.columns
    changes = pl.read_parquet(out / "changes.parquet")
    assert changes.select("model", "baseline_batches", "changed").rows() == [
        ("a", 3, False),
        ("b", 3, True),
    ]
    assert changes["verdict"][1].startswith("ECE up 0.1")
    page = (out / "report.html").read_text()
    assert "ECE over batches" in page and "Change against the earlier batches" in page
    assert (out / "ece_over_batches.png").stat().st_size > 0  # with --png
    pooled = pl.read_parquet(out / "comparison.parquet")
    window = cf.read_statistics(merged).latest(4).merged()
    assert pooled["count"].to_list() == cf.metrics_from_bin_statistics(window)["count"].to_list()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--batch", "nope"], "not among the 5 batches"),
        (["--last", "0"], "--last must be >= 1"),
        (["--change-replicates", "0"], "--change-replicates must be >= 1"),
    ],
)
def test_report_over_batches_refuses(
    tmp_path: Path,
    nights: list[Path],
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    parts = stats_files(nights, tmp_path)
    froms = [arg for part in parts for arg in ("--from-stats", str(part))]
    args = ["report", *froms, "--over", "batch", "--no-charts", "--no-uncertainty", *extra,
            "--out", str(tmp_path / "r")]  # fmt: skip
    assert main(args) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0], error


def test_over_needs_statistics(
    tmp_path: Path, nights: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["report", str(nights[0]), "--over", "batch", "--out", str(tmp_path / "r")]
    assert main(args) == 2
    assert "give --from-stats" in capsys.readouterr().err


def test_the_first_night_has_figures_and_no_change(
    tmp_path: Path, nights: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    first = stats_files(nights[:1], tmp_path)[0]
    out = tmp_path / "r"
    args = ["report", "--from-stats", str(first), "--over", "batch", "--no-uncertainty",
            "--no-charts", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    assert "no earlier batch to compare it with yet" in capsys.readouterr().out
    assert pl.read_parquet(out / "batches.parquet").height == 2
    assert not (out / "changes.parquet").exists()
