#!/usr/bin/env python
"""Benchmark: ``calib-frames stats`` against DuckDB scripts, end to end as whole processes.

All read the same parquet file (:mod:`benchmarks.workload`, default 10^7 rows x 200
groups) and write their result to parquet:

calib_frames_cli  ``python -m calib_frames stats FILE --by model,task --bins M --out OUT``
                  (start-up, imports, the read guard, the row checks, the bin-statistics
                  table with its metadata)
duckdb_script     ``python -c <script>``: ``import duckdb``, one ``COPY (SELECT ... GROUP BY
                  model, task, bin) TO OUT``, the bin from exact edges k/M (``floor(p*M)``
                  corrected against ``k/M``, the convention of calib_frames), per bin the
                  rows, the outcome split of the weight and of the residual sums |p - y|,
                  (p - y)^2 and the log-loss sum: the columns of the bin-statistics table
duckdb_ece_mce    the plain query a user would write for ECE and MCE: ``floor(p*M)`` bins
                  (the last bin closed), per (model, task, bin) the rows, Σp and Σy, then
                  per group ECE = Σ|Σp - Σy| / N and MCE = max |Σp - Σy| / n, written to
                  parquet (no checks of the rows, no mergeable table)

Each run is a fresh interpreter; the commands alternate (A B C A B C ...), the median of
``--runs`` wall-clock seconds of each is printed with the ratio peer / calib-frames (> 1:
calib-frames is faster), and the outputs are cross-checked: the two tables (counts exactly,
sums to 1e-9), and ECE and MCE (the textbook MCE over every populated bin) of calib-frames'
table against DuckDB's (1e-9). Run from the repository root::

    python benchmarks/bench_cli.py                 # 1e7 rows, 5 runs each
    python -m benchmarks.bench_cli --quick         # 1e5 rows, 2 runs each (smoke test)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the ``benchmarks`` package importable
    sys.path.append(str(Path(__file__).resolve().parent.parent))  # last: PYTHONPATH wins

import polars as pl

import calib_frames as cf
from benchmarks import harness, report
from benchmarks.workload import DATA_DIR, KEYS, Spec, ensure_data, parse_sizes
from calib_frames.schema import BIN_STATISTICS

ROOT = Path(__file__).resolve().parents[1]
PEERS = ("duckdb_script", "duckdb_ece_mce")
TOLERANCE = 1e-9

DUCKDB_SCRIPT = """
import sys, duckdb
source, out, m = sys.argv[1], sys.argv[2], int(sys.argv[3])
duckdb.sql(f'''
COPY (
  WITH rows AS (
    SELECT model, task, confidence AS p, correct AS y,
           least(greatest(floor(confidence * {m}), 0), {m} - 1)::INTEGER AS guess
    FROM read_parquet('{source}')
  ), binned AS (
    SELECT *, CASE WHEN p < guess / {m}.0 THEN guess - 1
                   WHEN p >= (guess + 1) / {m}.0 AND guess < {m} - 1 THEN guess + 1
                   ELSE guess END AS bin
    FROM rows
  )
  SELECT model, task, bin,
         count(*) AS count,
         count(*)::DOUBLE AS weight,
         sum(CASE WHEN y THEN 1.0 ELSE 0.0 END) AS weight_correct,
         sum(CASE WHEN y THEN 0.0 ELSE 1.0 END) AS weight_wrong,
         sum(CASE WHEN y THEN p ELSE 0.0 END) AS sum_confidence_correct,
         sum(CASE WHEN y THEN 1.0 - p ELSE 0.0 END) AS sum_residual_correct,
         sum(CASE WHEN y THEN 0.0 ELSE p END) AS sum_residual_wrong,
         sum(CASE WHEN y THEN (1.0 - p) * (1.0 - p) ELSE 0.0 END) AS sum_sq_residual_correct,
         sum(CASE WHEN y THEN 0.0 ELSE p * p END) AS sum_sq_residual_wrong,
         sum(-ln(CASE WHEN y THEN p ELSE 1.0 - p END)) AS sum_log_loss
  FROM binned GROUP BY model, task, bin
) TO '{out}' (FORMAT parquet)
''')
"""

DUCKDB_ECE_MCE = """
import sys, duckdb
source, out, m = sys.argv[1], sys.argv[2], int(sys.argv[3])
duckdb.sql(f'''
COPY (
  WITH bins AS (
    SELECT model, task, least(floor(confidence * {m}), {m} - 1) AS bin,
           count(*) AS n, sum(confidence) AS sp, sum(correct::DOUBLE) AS sy
    FROM read_parquet('{source}') GROUP BY model, task, bin
  )
  SELECT model, task, sum(abs(sp - sy)) / sum(n) AS ece, max(abs(sp - sy) / n) AS mce
  FROM bins GROUP BY model, task
) TO '{out}' (FORMAT parquet)
''')
"""

SUMS = tuple(c for c in BIN_STATISTICS.additive if c != "count")
"""The additive sums of the bin-statistics table (counts are compared exactly)."""


def commands(source: Path, out: Path, bins: int) -> dict[str, list[str]]:
    """The two whole-process commands, each writing its table to its own file."""
    return {
        "calib_frames_cli": [
            sys.executable,
            "-m",
            "calib_frames",
            "stats",
            str(source),
            "--by",
            ",".join(KEYS),
            "--bins",
            str(bins),
            "--out",
            str(out / "cli.parquet"),
        ],
        "duckdb_script": [
            sys.executable,
            "-c",
            DUCKDB_SCRIPT,
            str(source),
            str(out / "duckdb.parquet"),
            str(bins),
        ],
        "duckdb_ece_mce": [
            sys.executable,
            "-c",
            DUCKDB_ECE_MCE,
            str(source),
            str(out / "ece_mce.parquet"),
            str(bins),
        ],
    }


def time_alternating(cmds: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Wall-clock seconds of each command, run in turn (A B A B ...) after one warm-up each."""
    seconds: dict[str, list[float]] = {name: [] for name in cmds}
    for attempt in range(runs + 1):
        for name, cmd in cmds.items():
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
            if attempt:  # the first round warms the page cache and the bytecode
                seconds[name].append(time.perf_counter() - start)
    return seconds


def cross_check(out: Path) -> float:
    """The largest difference between calib-frames' output and the DuckDB outputs.

    The two tables' sums (counts must be equal), then ECE and the textbook MCE of calib-frames'
    table against the plain ECE/MCE query's.
    """
    keys = [*KEYS, "bin"]
    cli = pl.read_parquet(out / "cli.parquet").filter(pl.col("count") > 0)
    duck = pl.read_parquet(out / "duckdb.parquet").with_columns(
        pl.col("bin").cast(pl.UInt32), pl.col("count").cast(pl.UInt64)
    )
    joined = cli.join(duck, on=keys, how="full", suffix="_duckdb", coalesce=True)
    if joined.height != cli.height or joined.height != duck.height:
        raise SystemExit("cross-check: the two tables have different (group, bin) cells")
    if (joined["count"] != joined["count_duckdb"]).any():
        raise SystemExit("cross-check: counts differ")
    worst = max(
        float(joined.select((pl.col(c) - pl.col(f"{c}_duckdb")).abs().max()).item()) for c in SUMS
    )
    ours = cf.metrics_from_bin_statistics(pl.read_parquet(out / "cli.parquet"))
    plain = ours.join(pl.read_parquet(out / "ece_mce.parquet"), on=KEYS, suffix="_duckdb")
    if plain.height != ours.height:
        raise SystemExit("cross-check: the ECE/MCE query has other groups")
    for ours_name, theirs in (("ece", "ece_duckdb"), ("mce", "mce_duckdb")):
        gap = plain.select((pl.col(ours_name) - pl.col(theirs)).abs().max()).item()
        worst = max(worst, float(gap))
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1e7")
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--bins", type=int, default=15)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="1e5 rows, 2 runs each")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.runs = "1e5", 2
    env = harness.environment()
    report.print_header("calib-frames stats vs DuckDB scripts, whole processes", env)
    print(
        f"\nmedian of {args.runs} alternating runs each; ratio = peer seconds / calib-frames "
        "seconds (> 1: calib-frames is faster)\n"
    )
    runs: list[dict[str, Any]] = []
    body = []
    failed = 0
    for rows in parse_sizes(args.sizes):
        spec = Spec(rows, args.models, args.tasks, args.bins, args.seed)
        source, made = ensure_data(spec, args.data_dir)
        if made:
            print(f"(wrote {source.name} in {made:.1f} s)")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            seconds = time_alternating(commands(source, out, args.bins), args.runs)
            difference = cross_check(out)
        median = {name: statistics.median(values) for name, values in seconds.items()}
        ok = difference <= TOLERANCE
        failed += not ok
        cli = median["calib_frames_cli"]
        body.append(
            [
                spec.label,
                f"{cli:.3f}",
                *(f"{median[peer]:.3f} ({median[peer] / cli:.2f})" for peer in PEERS),
                f"{difference:.1e}",
                "ok" if ok else "**MISMATCH**",
            ]
        )
        runs.append({"rows": rows, "groups": spec.groups, "bins": args.bins, "seconds": seconds})
    head = [
        "workload",
        "calib-frames stats s",
        *(f"{peer} s (ratio)" for peer in PEERS),
        "max abs diff",
        "check",
    ]
    print(report.markdown(head, body, "lrrrrl"))
    report.save_json(args.json, environment=env, runs=runs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
