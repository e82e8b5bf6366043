#!/usr/bin/env python
"""Benchmark: the pl.Expr API (``cf.binned_metrics``, ``cf.ece``, ...) against the frame API.

Run from the repository root (see BENCHMARKS.md)::

    python benchmarks/bench_expr.py                 # 1e5, 1e6, 1e7 rows x 200 groups
    python -m benchmarks.bench_expr --quick         # 2e4 rows, memory only, 1 repeat

Methods (the workload is that of bench_metrics: :mod:`benchmarks.workload`):

calib_frames_metrics  (reference) ``cf.calibration_metrics(src, by=["model", "task"])``
                      (lazy: ``.collect()``)
expr_binned           ``lf.group_by(keys).agg(cf.binned_metrics("confidence", "correct",
                      bins=M).alias("m")).collect().unnest("m")``; ``lf`` is the
                      ``scan_parquet`` LazyFrame, or ``df.lazy()`` in memory (streaming engine)
expr_ece, expr_mce,   ``lf.group_by(keys).agg(cf.ece("confidence", "correct", bins=M))``,
expr_brier,           and the same for ``cf.mce``, ``cf.brier``, ``cf.log_loss``
expr_log_loss
polarbearings_ece,    the peer: polarbearings 0.3.0's expressions for the same four metrics
polarbearings_mce,    (``pb.expected_calibration_error("correct", "confidence", n_bins=M)``,
polarbearings_brier,  ``maximum_calibration_error``, ``brier_score``, ``log_loss``) in the same
polarbearings_log_loss lazy ``group_by(keys).agg``; its bins are right-closed, random
                      confidences never lie on an edge, so the numbers agree
expr_five             one lazy ``agg`` of ``cf.ece``, ``cf.mce``, ``cf.rmsce``, ``cf.brier``
                      and ``cf.log_loss``
expr_<m>_eager,       the same on the DataFrame, ``df.group_by(keys).agg(...)`` (polars'
polarbearings_<m>_eager  in-memory engine), for the four metrics; memory sources only, up
expr_binned_eager     to ``--eager-max-rows`` (default: every size)
polars_naive          the naive two-stage polars plan of bench_metrics, for scale

Sources (``--sources``): ``memory`` (Int32 keys), ``memory-str`` (the same rows with String
keys) and ``parquet`` (Int32 keys, ``scan_parquet``).

Cross-check: every metric an expression method returns is compared with the frame API's to
1e-12 (absolute; counts and populated bins exactly); ``expr_binned`` must return every metric
column of the frame API, ``expr_five`` the five. Until the expression functions exist in the
calib_frames being measured, their methods are skipped with a note.
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
from benchmarks.peers import (
    CELL_FIELDS,
    METRICS,
    METRICS_COLUMNS,
    Peer,
    Registry,
    Result,
    metrics_result,
    norm_metrics,
)
from benchmarks.workload import DATA_DIR, KEYS, Source, Spec, ensure_data, parse_groups, parse_sizes

TOLERANCE = 1e-12
FIVE = ("ece", "mce", "rmsce", "brier", "log_loss")
UNBINNED = ("brier", "log_loss")  # their expressions take no bins=
EXACT = ("group_count", "populated_bins")


def _all_metrics() -> tuple[str, ...]:
    """Every metric column of the frame API (calib_frames.schema.METRICS where present)."""
    try:
        from calib_frames.schema import METRICS as TABLE
    except ImportError:
        return METRICS_COLUMNS
    return tuple(TABLE.names)


def norm_all(out: pl.DataFrame, src: Source) -> Result:
    """Every metric column; ``count``, ``accuracy``, ``mean_confidence`` as ``group_...``
    (the same names are per-cell arrays in the results of the reliability-table peers)."""
    values = metrics_result(out, src.spec, names=_all_metrics()).values
    for name in CELL_FIELDS:
        if name in values:
            values["group_" + name] = values.pop(name)
    return Result(values, exact=tuple(n for n in EXACT if n in values))


REGISTRY = Registry()
REGISTRY.add(
    replace(METRICS["calib_frames_metrics"], role="subject", fields=None, normalise=norm_all)
)
REGISTRY.add(replace(METRICS["polars_naive"], fields=METRICS_COLUMNS))


def _lazy(src: Source, *exprs: pl.Expr) -> pl.DataFrame:
    """``group_by(keys).agg(...)`` on a LazyFrame (the streaming engine), collected."""
    return src.lazy().group_by(KEYS).agg(*exprs).collect()


def _eager(src: Source, *exprs: pl.Expr) -> pl.DataFrame:
    """``group_by(keys).agg(...)`` on the DataFrame (polars' in-memory engine)."""
    assert src.df is not None
    return src.df.group_by(KEYS).agg(*exprs)


def _binned(src: Source) -> pl.Expr:
    return cf.binned_metrics("confidence", "correct", bins=src.spec.n_bins).alias("m")


def _five(src: Source) -> list[pl.Expr]:
    return [_one(name, src) for name in FIVE]


@REGISTRY.peer(
    "expr_binned",
    normalise=norm_all,
    needs="calib_frames:binned_metrics",
    fields=None,  # every metric of the frame API
    what="`lf.group_by(keys).agg(cf.binned_metrics(confidence, correct, bins=M))"
    ".collect().unnest(...)` (lazy: the streaming engine; memory: `df.lazy()`)",
)
def run_expr_binned(src: Source) -> pl.DataFrame:
    return _lazy(src, _binned(src)).unnest("m")


PB_FUNCTIONS = {  # polarbearings' expression for each metric both have
    "ece": "expected_calibration_error",
    "mce": "maximum_calibration_error",
    "brier": "brier_score",
    "log_loss": "log_loss",
}


def _one(name: str, src: Source) -> pl.Expr:
    """``cf.<name>`` with the workload's bins (Brier and log loss take none)."""
    binned = {} if name in UNBINNED else {"bins": src.spec.n_bins}
    return getattr(cf, name)("confidence", "correct", **binned).alias(name)


def _polarbearings(name: str, src: Source) -> pl.Expr:
    import polarbearings as pb

    binned = {} if name in UNBINNED else {"n_bins": src.spec.n_bins}
    return getattr(pb, PB_FUNCTIONS[name])("correct", "confidence", **binned).alias(name)


def _add_single_metric_peers(name: str) -> None:
    """``expr_<name>`` (calib_frames) and ``polarbearings_<name>``, lazy and eager ``agg``s."""
    bins = "" if name in UNBINNED else ", bins=M"
    peers = {
        "expr": (lambda src: _one(name, src), f"cf.{name}(confidence, correct{bins})"),
        "polarbearings": (
            lambda src: _polarbearings(name, src),
            f"pb.{PB_FUNCTIONS[name]}(correct, confidence{bins.replace('bins', 'n_bins')})",
        ),
    }
    for prefix, (expr, call) in peers.items():
        needs = f"calib_frames:{name}" if prefix == "expr" else "polarbearings"
        note = (
            ""
            if prefix == "expr"
            else " (polarbearings 0.3.0: right-closed bins, log loss clipped to 1e-15; "
            "random confidences agree)"
        )
        REGISTRY.add(
            Peer(
                f"{prefix}_{name}",
                lambda src, expr=expr: _lazy(src, expr(src)),
                norm_metrics,
                needs=needs,
                fields=(name,),
                what=f"`lf.group_by(keys).agg({call}).collect()`{note}",
            )
        )
        REGISTRY.add(
            Peer(
                f"{prefix}_{name}_eager",
                lambda src, expr=expr: _eager(src, expr(src)),
                norm_metrics,
                needs=needs,
                fields=(name,),
                sources=("memory",),
                what=f"`df.group_by(keys).agg({call})` on the DataFrame (in-memory engine)",
            )
        )


for _name in PB_FUNCTIONS:
    _add_single_metric_peers(_name)


@REGISTRY.peer(
    "expr_five",
    normalise=norm_metrics,
    needs="calib_frames:log_loss",
    fields=FIVE,
    what="one lazy `agg` of `cf.ece`, `cf.mce`, `cf.rmsce`, `cf.brier`, `cf.log_loss`",
)
def run_expr_five(src: Source) -> pl.DataFrame:
    return _lazy(src, *_five(src))


@REGISTRY.peer(
    "expr_binned_eager",
    normalise=norm_all,
    needs="calib_frames:binned_metrics",
    sources=("memory",),
    what="`df.group_by(keys).agg(cf.binned_metrics(...)).unnest(...)` on the DataFrame "
    "(in-memory engine; only up to `--eager-max-rows`)",
)
def run_expr_binned_eager(src: Source) -> pl.DataFrame:
    return _eager(src, _binned(src)).unnest("m")


EAGER = tuple(name for name in REGISTRY.names() if name.endswith("_eager"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="1e5,1e6,1e7")
    ap.add_argument("--groups", default="200")
    ap.add_argument("--sources", default="memory,memory-str,parquet")
    ap.add_argument(
        "--methods",
        default="expr_binned,expr_five,"
        + ",".join(
            f"expr_{n},polarbearings_{n},expr_{n}_eager,polarbearings_{n}_eager"
            for n in PB_FUNCTIONS
        )
        + ",expr_binned_eager,polars_naive",
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--repeats-large", type=int, default=1, help="repeats from --large-rows rows on"
    )
    ap.add_argument("--large-rows", type=float, default=1e7)
    ap.add_argument(
        "--eager-max-rows",
        type=float,
        default=1e12,
        help="run the eager (DataFrame.group_by) expression methods only up to this size",
    )
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="2e4 rows, memory only, 1 repeat")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.sources, args.repeats = "2e4", "memory", 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    peers = REGISTRY.select([n.strip() for n in args.methods.split(",") if n.strip()])
    env = harness.environment()
    report.print_header("calib_frames expression API vs frame API", env)
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
            active = [p for p in peers if p.name not in EAGER or rows <= args.eager_max_rows]
            done, bad = harness.run_sources(
                spec,
                path,
                [s.strip() for s in args.sources.split(",") if s.strip()],
                active,
                args.repeats_large if rows >= args.large_rows else args.repeats,
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
