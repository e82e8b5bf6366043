#!/usr/bin/env python
"""Benchmark: ``report --from-stats … --over batch`` (the nightly view) against the same report
without ``--over``, and its growth in the number of nights.

Both run as a nightly job runs them (``python -m calib_frames report …`` in a fresh process,
reading one merged statistics file), best of ``--repeats``; each row gives the seconds, the
peak resident memory (``wait4``'s ``ru_maxrss``) and the exit status. The statistics are
synthetic nights (:func:`write_nights`): groups = models × 10 tasks, ``--rows`` predictions
per group and night, one group turning overconfident two thirds of the way in; the
reference window is the first 7 nights (``--baseline``). The runs:

* 200 groups × 30 nights, with and without ``--over batch`` (issue 30's target: within 5×);
* 1,000 groups × 15, 30 and 60 nights with ``--over batch`` (a minute at most, memory flat
  in the number of nights).

The check: every run exits 0 (3 is a change found: ``--fail-on-change`` is not given), and
the change table names the drifted group. Run from the repository root::

    .venv/bin/python -m benchmarks.bench_over_time           # the full run
    .venv/bin/python benchmarks/bench_over_time.py --quick   # 20 groups × 6 nights, once
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import calib_frames as cf  # noqa: E402
from benchmarks.bench_report import timed  # noqa: E402
from benchmarks.harness import environment  # noqa: E402
from benchmarks.workload import DATA_DIR  # noqa: E402

BINNING = cf.Binning.uniform(10)
FULL = [(200, 30, False), (200, 30, True), (1000, 15, True), (1000, 30, True), (1000, 60, True)]
QUICK = [(20, 6, False), (20, 6, True)]


def write_nights(folder: Path, groups: int, nights: int, rows: int) -> Path:
    """One merged statistics file of ``nights`` synthetic nights (cached under ``folder``)."""
    merged = folder / f"nights_{groups}x{nights}x{rows}.parquet"
    if merged.exists():
        return merged
    rng = np.random.default_rng(groups * 1000 + nights)
    tasks = 10 if groups >= 10 else 1
    names = {
        "model": np.repeat([f"m{g // tasks}" for g in range(groups)], rows),
        "task": np.repeat([f"t{g % tasks}" for g in range(groups)], rows),
    }
    parts = []
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        for night in range(nights):
            truth = rng.uniform(0.5, 0.95, (groups, rows))
            shown = truth.copy()
            if night >= 2 * nights // 3:
                shown[0] = np.minimum(shown[0] + 0.12, 1.0)
            frame = pl.DataFrame(
                {
                    **names,
                    "confidence": shown.ravel(),
                    "correct": (rng.random(truth.shape) < truth).ravel(),
                }
            )
            part = Path(scratch) / f"n{night:02d}.parquet"
            when = dt.datetime(2026, 10, 1) + dt.timedelta(days=night)
            cf.write_statistics(
                cf.bin_statistics(frame, by=["model", "task"], bins=BINNING), part,
                batch_id=f"n{night:02d}", batch_time=when, binning=BINNING,
            )  # fmt: skip
            parts.append(part)
        cf.storage.merge_statistics_files(parts, merged)
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 groups × 6 nights, once")
    parser.add_argument("--repeats", type=int, default=2, help="best of this many runs")
    parser.add_argument("--rows", type=int, default=500, help="predictions per group and night")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="statistics cache")
    args = parser.parse_args(argv)
    runs = QUICK if args.quick else FULL
    repeats = 1 if args.quick else args.repeats
    rows = 300 if args.quick else args.rows
    args.data_dir.mkdir(parents=True, exist_ok=True)
    print(environment())
    print(f"{'groups':>7} {'nights':>6} {'--over':>6} {'seconds':>8} {'peak MiB':>9} {'exit':>4}")
    failed = False
    seconds_of: dict[tuple[int, int, bool], float] = {}
    with tempfile.TemporaryDirectory() as out:
        for groups, nights, over in runs:
            merged = write_nights(args.data_dir, groups, nights, rows)
            argv_run = ["-m", "calib_frames", "report", "--from-stats", str(merged), "--quiet",
                        "--out", str(Path(out) / f"r{groups}_{nights}_{over}")]  # fmt: skip
            if over:
                window = f"n00..n{min(6, 2 * nights // 3 - 1):02d}"  # before the drift
                argv_run += ["--over", "batch", "--baseline", window]
            best = None
            for _ in range(repeats):
                seconds, peak, status, tail = timed(argv_run)
                best = (seconds, peak, status, tail) if best is None or seconds < best[0] else best
            assert best is not None
            seconds, peak, status, tail = best
            seconds_of[(groups, nights, over)] = seconds
            print(f"{groups:>7} {nights:>6} {'yes' if over else 'no':>6} {seconds:>8.1f} "
                  f"{peak:>9.0f} {status:>4}")  # fmt: skip
            if status != 0:
                failed = True
                print(f"  exit {status}: {tail}")
            elif over:
                changes = pl.read_parquet(
                    Path(out) / f"r{groups}_{nights}_{over}" / "changes.parquet"
                )
                found = changes.filter(pl.col("changed")).select("model", "task").rows()
                if ("m0", "t0") not in found:
                    failed = True
                    print(f"  MISMATCH: the drifted group was not found ({found})")
    small = QUICK if args.quick else FULL
    groups, nights, _ = small[0]
    ratio = seconds_of[(groups, nights, True)] / seconds_of[(groups, nights, False)]
    print(f"--over batch / without, {groups} groups × {nights} nights: {ratio:.2f}×")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
