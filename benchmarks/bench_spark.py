#!/usr/bin/env python
"""Benchmark: the row pass on a local Spark session against polars, on the same parquet.

Run from the repository root (see BENCHMARKS.md)::

    .venv/bin/python benchmarks/bench_spark.py                  # 10^6 and 10^7 rows
    .venv/bin/python benchmarks/bench_spark.py --quick          # seconds

Both peers produce the bin-statistics table of ``model × task`` from one parquet file and
reduce it to the per-group metrics in polars (the math is the same code): ``calib_frames``
runs the row pass on polars' streaming engine, ``spark_local`` on a ``local[2]`` Spark
session (started once, before timing; 1 shuffle partition per 10^7 rows, UI off). The
cross-check compares the metrics (Spark and polars add floats in different orders).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))

import polars as pl

import calib_frames as cf
from benchmarks import harness, report
from benchmarks.peers import Registry, metrics_result
from benchmarks.workload import KEYS, Source, Spec, ensure_data, parse_sizes

REGISTRY = Registry()
_SPARK: dict[str, Any] = {}


def spark_session() -> Any:
    """One local Spark session for the whole run (its start-up is not timed)."""
    if "session" not in _SPARK:
        from pyspark.sql import SparkSession

        session = (
            SparkSession.builder.master("local[2]")
            .appName("calib-frames-bench")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.memory", "4g")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
        _SPARK["session"] = session
    return _SPARK["session"]


@REGISTRY.peer(
    "calib_frames",
    role="subject",
    what="cf.bin_statistics(pl.scan_parquet(path), by=keys), polars streaming",
    normalise=lambda out, src: metrics_result(out, src.spec),
    sources=("parquet",),
)
def run_polars(src: Source) -> pl.DataFrame:
    stats = cf.bin_statistics(pl.scan_parquet(src.path), by=KEYS).collect()
    return cf.metrics_from_bin_statistics(stats)


@REGISTRY.peer(
    "spark_local",
    role="peer",
    what="spark_bin_statistics(spark.read.parquet(path), by=keys) on local[2]",
    normalise=lambda out, src: metrics_result(out, src.spec),
    sources=("parquet",),
    needs="pyspark",
)
def run_spark(src: Source) -> pl.DataFrame:
    from calib_frames.stats import spark_bin_statistics

    frame = spark_session().read.parquet(str(src.path))
    return cf.metrics_from_bin_statistics(spark_bin_statistics(frame, by=KEYS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e6,1e7", help="rows, comma-separated")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="10^5 rows, one repeat")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    sizes = [10**5] if args.quick else parse_sizes(args.sizes)
    repeats = 1 if args.quick else args.repeats
    env = harness.environment()
    report.print_header("Spark local vs polars: the row pass on the same parquet", env)
    spark_session()
    runs, failed = [], 0
    for rows in sizes:
        spec = Spec(rows, 20, 10)
        path, _ = ensure_data(spec)
        got, bad = harness.run_sources(
            spec, path, ["parquet"], REGISTRY.select(["calib_frames", "spark_local"]), repeats,
            highlight=("ece", "brier"), check=None,
        )  # fmt: skip
        runs += got
        failed += bad
    report.summary(runs)
    if args.json is not None:
        report.save_json(args.json, environment=env, runs=runs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
