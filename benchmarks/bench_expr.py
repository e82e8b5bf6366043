#!/usr/bin/env python
"""Benchmark: the pl.Expr API (``cf.binned_metrics``, ``cf.ece``, ...) against the frame API.

Run from the repository root (see BENCHMARKS.md)::

    python benchmarks/bench_expr.py                 # 1e6 and 1e7 rows x 200 groups
    python -m benchmarks.bench_expr --quick         # 1e5 rows, memory only, 1 repeat

Methods (the workload is that of bench_metrics: :mod:`benchmarks.workload`):

calib_frames_metrics  (reference) ``cf.calibration_metrics(src, by=["model", "task"])``
                      (lazy: ``.collect()``)
expr_binned           ``src.group_by(keys).agg(cf.binned_metrics("confidence", "correct",
                      bins=M).alias("m")).unnest("m")`` (lazy: ``.collect()`` first)
expr_ece              ``src.group_by(keys).agg(cf.ece("confidence", "correct", bins=M))``
expr_five             one ``agg`` of ``cf.ece``, ``cf.mce``, ``cf.rmsce``, ``cf.brier`` and
                      ``cf.log_loss`` (does polars share the binning pass between them?)
polars_naive          the naive two-stage polars plan of bench_metrics, for scale

Cross-check: every metric an expression method returns is compared with the frame API's to
1e-12 (absolute); ``expr_binned`` must return at least ECE, MCE, RMSCE, Brier and log loss.
Until the expression functions exist in the calib_frames being measured, their methods are
skipped with a note (the script then times the reference only).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the ``benchmarks`` package importable
    sys.path.append(str(Path(__file__).resolve().parent.parent))  # last: PYTHONPATH wins

import polars as pl

import calib_frames as cf
from benchmarks import harness, report
from benchmarks.peers import METRICS, Registry, norm_metrics
from benchmarks.workload import DATA_DIR, KEYS, Source, Spec, ensure_data, parse_groups, parse_sizes

TOLERANCE = 1e-12
FIVE = ("ece", "mce", "rmsce", "brier", "log_loss")
UNBINNED = ("brier", "log_loss")  # their expressions take no bins=

REGISTRY = Registry()
REGISTRY.add(replace(METRICS["calib_frames_metrics"], role="subject", fields=None))
REGISTRY.add(METRICS["polars_naive"])


def _grouped(src: Source, *exprs: pl.Expr) -> pl.DataFrame:
    out = src.frame().group_by(KEYS).agg(*exprs)
    return out.collect() if isinstance(out, pl.LazyFrame) else out


@REGISTRY.peer(
    "expr_binned",
    normalise=norm_metrics,
    needs="calib_frames:binned_metrics",
    fields=FIVE,
    what="`group_by(keys).agg(cf.binned_metrics(confidence, correct, bins=M)).unnest(...)`",
)
def run_expr_binned(src: Source) -> pl.DataFrame:
    expr = cf.binned_metrics("confidence", "correct", bins=src.spec.n_bins).alias("m")
    return _grouped(src, expr).unnest("m")


@REGISTRY.peer(
    "expr_ece",
    normalise=norm_metrics,
    needs="calib_frames:ece",
    fields=("ece",),
    what="`group_by(keys).agg(cf.ece(confidence, correct, bins=M))`",
)
def run_expr_ece(src: Source) -> pl.DataFrame:
    return _grouped(src, cf.ece("confidence", "correct", bins=src.spec.n_bins).alias("ece"))


@REGISTRY.peer(
    "expr_five",
    normalise=norm_metrics,
    needs="calib_frames:log_loss",
    fields=FIVE,
    what="one `agg` of `cf.ece`, `cf.mce`, `cf.rmsce`, `cf.brier`, `cf.log_loss`",
)
def run_expr_five(src: Source) -> pl.DataFrame:
    binned = {"bins": src.spec.n_bins}
    exprs = [
        getattr(cf, name)("confidence", "correct", **({} if name in UNBINNED else binned)).alias(
            name
        )
        for name in FIVE
    ]
    return _grouped(src, *exprs)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="1e6,1e7")
    ap.add_argument("--groups", default="200")
    ap.add_argument("--sources", default="memory,parquet")
    ap.add_argument("--methods", default="expr_binned,expr_ece,expr_five,polars_naive")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="1e5 rows, memory only, 1 repeat")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.sources, args.repeats = "1e5", "memory", 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    peers = REGISTRY.select([n.strip() for n in args.methods.split(",") if n.strip()])
    env = harness.environment()
    harness.print_header("calib_frames expression API vs frame API", env)
    print(
        "\nratio = method seconds / calib_frames_metrics seconds (> 1: the frame API is "
        f"faster); best of {args.repeats} interleaved repeats; cross-check to {TOLERANCE:g}."
    )
    runs: list[dict[str, Any]] = []
    failed = 0
    for models, tasks in parse_groups(args.groups):
        for rows in parse_sizes(args.sizes):
            spec = Spec(rows, models, tasks, args.bins, args.seed)
            path, made = ensure_data(spec, args.data_dir)
            if made:
                print(f"\n(wrote {path.name} in {made:.1f} s)")
            done, bad = harness.run_sources(
                spec,
                path,
                [s.strip() for s in args.sources.split(",") if s.strip()],
                peers,
                args.repeats,
                tolerance=TOLERANCE,
                highlight=("ece", "brier"),
                check=None,
            )
            runs += done
            failed += bad
    summary = report.summary(runs, reference="calib_frames_metrics")
    if failed:
        print(f"\n!! {failed} MISMATCH(ES) OR FAILURE(S) - see the tables above")
    report.save_json(args.json, environment=env, runs=runs, summary=summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
