"""``stats --batch-time``, ``merge`` and ``report --from-stats … --over batch`` end to end."""

from __future__ import annotations

import datetime as dt
import json
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
    for stamp, path in zip((1_700_000_000, 1_750_000_000), nights[:2], strict=True):
        copy = tmp_path / path.name
        copy.write_bytes(path.read_bytes())
        os.utime(copy, (stamp, stamp))
        copies.append(copy)
    out = tmp_path / "s.parquet"
    assert main(["stats", *map(str, copies), "--by", "model", "--out", str(out)]) == 0
    stored = cf.read_statistics(out)
    expected = dt.datetime.fromtimestamp(1_750_000_000, dt.UTC).isoformat()
    assert stored.batch_times == {stored.batches[0]: expected}


@pytest.mark.parametrize(
    ("time", "message"),
    [
        ("tues", "not an ISO 8601"),
        ("", "the batch time is empty"),
        ("  ", "the batch time is empty"),
        ("9999-12-31T23:59:59-01:00", "outside the years 1–9999 in UTC"),
        ("0001-01-01T00:00:00+01:00", "outside the years 1–9999 in UTC"),
        ("2062-01-01", "more than a day in the future"),
    ],
)
def test_a_bad_batch_time_is_a_usage_error(
    tmp_path: Path, nights: list[Path], capsys: pytest.CaptureFixture[str], time: str, message: str
) -> None:
    out = tmp_path / "s.parquet"
    args = ["stats", str(nights[0]), "--by", "model", "--out", str(out), "--batch-time", time]
    assert main(args) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0], error
    assert not out.exists()


def test_a_future_batch_time_is_refused_unless_allowed(
    tmp_path: Path, nights: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    future = tmp_path / "future.parquet"
    args = ["stats", str(nights[0]), "--by", "model", "--out", str(future),
            "--batch-time", "2062-01-01", "--allow-future"]  # fmt: skip
    assert main(args) == 0
    report = ["report", "--from-stats", str(future), "--no-charts", "--no-uncertainty"]
    assert main([*report, "--out", str(tmp_path / "r")]) == 2  # read back: refused too
    assert "2062-01-01T00:00:00+00:00, more than a day in the future" in capsys.readouterr().err
    assert main([*report, "--allow-future", "--out", str(tmp_path / "r")]) == 0
    assert main(["merge", str(future), "--out", str(tmp_path / "m.parquet")]) == 2


def test_merge_keeps_the_order_of_batches_without_times(
    tmp_path: Path, nights: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rows = cf.bin_statistics(pl.DataFrame({"confidence": [0.8], "correct": [1]}))
    files = []
    for name in ("monday", "tuesday", "wednesday"):  # ids that sort otherwise
        files.append(tmp_path / f"{name}.parquet")
        cf.write_statistics(rows, files[-1], batch_id=name, binning=cf.Binning.uniform(10))
    merged = tmp_path / "all.parquet"
    assert main(["merge", *map(str, files), "--out", str(merged), "--quiet"]) == 0
    assert "wrote 3 batch(es)" in capsys.readouterr().out
    assert cf.read_statistics(merged).batch_order == ["monday", "tuesday", "wednesday"]
    again = tmp_path / "again.parquet"  # merging the merged file keeps it
    assert main(["merge", str(merged), str(files[0]), "--out", str(again)]) == 0
    assert cf.read_statistics(again).batch_order == ["monday", "tuesday", "wednesday"]
    out = tmp_path / "r"
    args = ["report", "--from-stats", str(again), "--over", "batch", "--no-charts",
            "--no-uncertainty", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "3 of 3 batches have no batch time: the batch order is the order" in captured.err
    assert "tonight wednesday against the reference window monday..monday" in captured.out
    args = [a for a in args if a != "--no-charts"]
    assert main(args) == 0
    assert "the order the files list them" in (out / "report.html").read_text()


def test_merge_writes_parquet_only(
    tmp_path: Path, nights: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    part = stats_files(nights[:1], tmp_path)[0]
    assert main(["merge", str(part), "--out", str(tmp_path / "x.csv")]) == 2
    assert "statistics files are parquet" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_report_over_batches(
    tmp_path: Path, nights: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    parts = stats_files(nights, tmp_path)
    merged = tmp_path / "all.parquet"
    assert main(["merge", *map(str, reversed(parts)), "--out", str(merged)]) == 0
    capsys.readouterr()
    out = tmp_path / "report"
    args = ["report", "--from-stats", str(merged), "--over", "batch", "--last", "4", "--png",
            "--baseline", "2026-12-02..2026-12-03", "--fail-on-change",
            "--change-replicates", "200", "--out", str(out)]  # fmt: skip
    assert main(args) == 3  # b changed tonight: the job fails
    printed = capsys.readouterr().out
    assert printed.startswith("tonight ")  # tonight first, the leaderboard after
    assert printed.index("1 of 2 group(s) changed") < printed.index("tasks")
    batches = pl.read_parquet(out / "batches.parquet")
    assert batches["batch_time"].unique().sort().dt.day().to_list() == [2, 3, 4, 5]
    for part in parts[1:]:  # the window: the last four nights
        own = cf.read_statistics(part)
        expected = cf.metrics_from_bin_statistics(own.table)
        got = batches.filter(pl.col("batch_id") == own.batches[0]).select(expected.columns)
        assert_frames_close(got, expected, rel=1e-12, abs=1e-12)
    assert "accuracy_ci_low" in batches.columns and "brier_ci_high" in batches.columns
    changes = pl.read_parquet(out / "changes.parquet")
    tonight = cf.read_statistics(parts[-1]).batches[0]
    assert changes.select("model", "baseline_batches", "tested_batches", "changed").rows() == [
        ("a", 2, 2, False),
        ("b", 2, 2, True),
    ]
    assert changes["onset"].to_list() == [None, tonight]
    assert changes["verdict"][1].startswith("ECE up 0.1")
    alert = json.loads((out / "changes.json").read_text())
    assert alert["batch_id"] == tonight and alert["changed_groups"] == 1
    assert [(g["model"], g["onset"]) for g in alert["changed"]] == [("b", tonight)]
    page = (out / "report.html").read_text()
    assert page.index("<h2>Changed tonight</h2>") < page.index("<h2>Leaderboard</h2>")
    assert "ECE over batches" in page
    assert (out / "ece_over_batches.png").stat().st_size > 0  # with --png
    comparison = pl.read_parquet(out / "comparison.parquet")  # tonight's, not pooled
    expected = cf.metrics_from_bin_statistics(cf.read_statistics(parts[-1]).merged())
    assert comparison["count"].to_list() == expected["count"].to_list()
    quiet = ["report", "--from-stats", str(merged), "--over", "batch", "--batch",
             cf.read_statistics(parts[2]).batches[0], "--fail-on-change", "--no-charts",
             "--no-uncertainty", "--out", str(tmp_path / "r2")]  # fmt: skip
    assert main(quiet) == 0  # before b changed: nothing, exit 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--batch", "nope"], "not among the 5 batches"),
        (["--last", "0"], "--last must be >= 1"),
        (["--change-replicates", "0"], "--change-replicates must be >= 1"),
        (["--baseline", "mon..tue"], "neither a batch id nor an ISO 8601"),
        (["--baseline", "2026-11-01..2026-11-02"], "no batch has its time in it"),
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
    part = stats_files(nights[:1], tmp_path)[0]
    args = ["report", "--from-stats", str(part), "--fail-on-change", "--out", str(tmp_path / "r")]
    assert main(args) == 2
    assert "--fail-on-change goes with --over batch" in capsys.readouterr().err


def test_the_first_night_has_figures_and_no_change(
    tmp_path: Path, nights: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    first = stats_files(nights[:1], tmp_path)[0]
    out = tmp_path / "r"
    args = ["report", "--from-stats", str(first), "--over", "batch", "--no-uncertainty",
            "--no-charts", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    assert "no batch after the reference window" in capsys.readouterr().out
    assert pl.read_parquet(out / "batches.parquet").height == 2
    assert not (out / "changes.parquet").exists()
