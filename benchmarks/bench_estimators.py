#!/usr/bin/env python
"""Benchmark: the per-group estimators against their reference libraries looped over groups.

Run from the repository root::

    .venv/bin/python benchmarks/bench_estimators.py                      # 10^6 rows, 200 groups
    .venv/bin/python benchmarks/bench_estimators.py --rows 1e5 --groups 20   # smaller
    .venv/bin/python benchmarks/bench_estimators.py --quick       # seconds (smoke test)

Workload
--------
``--rows`` synthetic predictions in ``--groups`` groups (Int32 key ``model``, random order),
``confidence`` ~ Beta(3, 1.5), ``correct`` ~ Bernoulli(clip(confidence + bias[group])) with a
per-group bias in [-0.15, 0.05].

Methods (one run each by default (``--repeats``), one process; the peers get per-group numpy
arrays for free; each pair is timed by ``harness.time_interleaved`` with calib_frames as the
subject of its registry)
-------------------------------------------------------------------------------------------
smooth_ece         ``calib_frames.estimators.smooth.smooth_ece(df, by="model")``
relplot_loop       ``relplot.smECE(f, y, return_width=True)`` for each group
corp               ``calib_frames.estimators.corp.corp_decomposition(df, by="model")``
model_diag_loop    ``model_diagnostics.scoring.decompose(y, f, scoring_function=SquaredError())``
                   for each group
isotonic_blocks    ``isotonic_blocks(df, x="confidence", y="correct", by="model")``
sklearn_iso_loop   ``sklearn.isotonic.IsotonicRegression().fit(f, y)`` for each group
ece_by_bin_count   ``ece_by_bin_count(df, by="model")`` (M = 5 … 30, one pass)
metrics_loop_m     ``calibration_metrics(df, by="model", bins=M)`` for each M = 5 … 30
selective          ``selective_metrics(df, by="model")`` (AURC, E-AURC, accuracy at 80%
                   coverage, coverage at 90% accuracy)
cal_selective_loop ``calibration.get_selective_stats(f, y)`` (uncertainty-calibration) for
                   each group: 1 − its area is AURC (continuous confidences: no ties)
helm               ``helm_calibration(df, by="model")`` (all eight figures, Platt included)
cal_helm_loop      uncertainty-calibration's ``get_ece_em``, ``get_ece``,
                   ``get_selective_stats`` and ``get_platt_scaler`` (+ the two Platt ECEs)
                   for each group, as HELM's ``compute_calibration_metrics`` calls them

Output: one table per pair (seconds, ratio peer / calib_frames: > 1 means calib_frames is
faster) with the cross-check (not timed, tolerance 1e-9): smooth ECE and bandwidth per group;
the four CORP terms per group; the isotonic fit at every row (our block value against
scikit-learn's ``predict``); ECE per (group, bin count); AURC per group; HELM's
``ece_10_bin``, ``ece_1_bin`` and selective figures per group (the Platt figures differ by
the lbfgs tolerance, ~1e-4, and are not compared). A peer whose library is missing is
skipped with a note. A mismatch exits 1. ``--quick``: 2·10^4 rows, 10 groups.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))

import numpy as np
import polars as pl

import calib_frames as cf
from benchmarks import harness, report
from benchmarks.peers import Registry, Result
from benchmarks.workload import Source, Spec, frame_source
from calib_frames.estimators.corp import corp_decomposition
from calib_frames.estimators.pav import isotonic_blocks
from calib_frames.estimators.selective import selective_metrics
from calib_frames.estimators.sensitivity import ece_by_bin_count
from calib_frames.estimators.smooth import smooth_ece
from calib_frames.recalibrate.helm_suite import helm_calibration

CORP_TERMS = ("mean_score", "miscalibration", "discrimination", "uncertainty")
BIN_COUNTS = range(5, 31)


def workload(rows: int, groups: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    model = rng.integers(0, groups, rows).astype(np.int32)
    bias = rng.uniform(-0.15, 0.05, groups)
    p = rng.beta(3, 1.5, rows)
    y = rng.random(rows) < np.clip(p + bias[model], 0, 1)
    return pl.DataFrame({"model": model, "confidence": p, "correct": y})


def groups_of(src: Source) -> list[tuple[np.ndarray, np.ndarray]]:
    """The per-group (confidence, outcome) arrays, in key order (prepared, not timed)."""
    return src.extra["by_group"]


def columns(frame: pl.DataFrame, names: tuple[str, ...], by: tuple[str, ...]) -> Result:
    frame = frame.sort(*by)
    return Result({n: frame[n].cast(pl.Float64).to_numpy() for n in names})


# ---------------------------------------------------------------------------------------------
# the four pairs: one registry each, calib_frames the subject

SMOOTH, CORP, ISOTONIC, BINS = Registry(), Registry(), Registry(), Registry()
SELECTIVE, HELM = Registry(), Registry()
HELM_COMPARED = ("ece_10_bin", "ece_1_bin", "selective_cov_acc_area", "selective_acc@10")


def subject(
    registry: Registry,
    name: str,
    estimator: Callable[..., pl.DataFrame],
    names: tuple[str, ...],
    *,
    by: tuple[str, ...] = ("model",),
    note: str = "",
) -> None:
    """Register ``estimator(df, by="model")`` as the subject of ``registry``, compared on
    ``names`` (rows sorted by ``by``)."""
    registry.peer(
        name,
        role="subject",
        what=f'{estimator.__name__}(df, by="model"){note}',
        normalise=lambda out, src: columns(out, names, by),
    )(lambda src: estimator(src.table(), by="model"))


PerGroup = Callable[[np.ndarray, np.ndarray], list[float]]


def group_loop(
    registry: Registry, name: str, *, what: str, names: tuple[str, ...], needs: str
) -> Callable[[PerGroup], PerGroup]:
    """Register a peer that calls the decorated ``one(f, y)`` for each group in turn; its
    list is that group's values of ``names``."""

    def register(one: PerGroup) -> PerGroup:
        registry.peer(
            name,
            what=what,
            normalise=lambda out, src: Result(dict(zip(names, out.T, strict=True))),
            needs=needs,
        )(lambda src: np.array([one(f, y) for f, y in groups_of(src)]))
        return one

    return register


subject(SMOOTH, "smooth_ece", smooth_ece, ("smooth_ece", "bandwidth"))


@SMOOTH.peer(
    "relplot_loop",
    what="relplot.smECE(f, y, return_width=True) for each group",
    normalise=lambda out, src: Result({"smooth_ece": out[:, 0], "bandwidth": out[:, 1]}),
    needs="relplot",
)
def run_relplot(src: Source) -> np.ndarray:
    import relplot

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array([relplot.smECE(f, y, return_width=True) for f, y in groups_of(src)])


subject(CORP, "corp", corp_decomposition, CORP_TERMS)


@group_loop(
    CORP,
    "model_diag_loop",
    what="model_diagnostics.scoring.decompose(y, f, scoring_function=SquaredError()) per group",
    names=CORP_TERMS,
    needs="model_diagnostics",
)
def model_diagnostics_of(f: np.ndarray, y: np.ndarray) -> list[float]:
    from model_diagnostics.scoring import SquaredError, decompose

    table = decompose(y, f, scoring_function=SquaredError())
    return [table[c][0] for c in ("score", "miscalibration", "discrimination", "uncertainty")]


def blocks_at_rows(out: pl.DataFrame, src: Source) -> Result:
    """Our isotonic block value at every row, group by group (the comparison, not timed)."""
    blocks = out.sort("model", "block").partition_by("model", maintain_order=True)
    values = []
    for table, (f, _) in zip(blocks, groups_of(src), strict=True):
        at = np.searchsorted(table["x_upper"].to_numpy(), f)
        values.append(table["value"].to_numpy()[at])
    return Result({"fit_at_rows": np.concatenate(values)})


def sklearn_at_rows(out: list[Any], src: Source) -> Result:
    fitted = [model.predict(f) for model, (f, _) in zip(out, groups_of(src), strict=True)]
    return Result({"fit_at_rows": np.concatenate(fitted)})


@ISOTONIC.peer(
    "isotonic_blocks",
    role="subject",
    what='isotonic_blocks(df, x="confidence", y="correct", by="model")',
    normalise=blocks_at_rows,
)
def run_isotonic(src: Source) -> pl.DataFrame:
    return isotonic_blocks(src.table(), x="confidence", y="correct", by="model")


@ISOTONIC.peer(
    "sklearn_iso_loop",
    what="sklearn.isotonic.IsotonicRegression().fit(f, y) for each group",
    normalise=sklearn_at_rows,
    needs="sklearn",
)
def run_sklearn(src: Source) -> list[Any]:
    from sklearn.isotonic import IsotonicRegression

    return [IsotonicRegression().fit(f, y) for f, y in groups_of(src)]


subject(
    BINS, "ece_by_bin_count", ece_by_bin_count, ("ece",), by=("model", "bins"),
    note=" (M = 5 ... 30, one pass)",
)  # fmt: skip


@BINS.peer(
    "metrics_loop_m",
    what='calibration_metrics(df, by="model", bins=M) for each M = 5 ... 30',
    normalise=lambda out, src: columns(out, ("ece",), ("model", "bins")),
)
def run_metrics_loop(src: Source) -> pl.DataFrame:
    parts = [
        cf.calibration_metrics(src.table(), by="model", bins=m).select(
            "model", pl.lit(m, dtype=pl.UInt32).alias("bins"), "ece"
        )
        for m in BIN_COUNTS
    ]
    return pl.concat(parts).sort("model", "bins")


subject(SELECTIVE, "selective", selective_metrics, ("aurc",))


@SELECTIVE.peer(
    "cal_selective_loop",
    what="calibration.get_selective_stats(f, y) for each group (AURC = 1 - area)",
    normalise=lambda out, src: Result({"aurc": 1.0 - out}),
    needs="calibration",
)
def run_cal_selective(src: Source) -> np.ndarray:
    import calibration

    return np.array(
        [calibration.get_selective_stats(f, y.astype(np.int64))[0] for f, y in groups_of(src)]
    )


subject(HELM, "helm", helm_calibration, HELM_COMPARED)


@group_loop(
    HELM,
    "cal_helm_loop",
    what="HELM's uncertainty-calibration calls (ECEs, selective stats, Platt) per group",
    names=HELM_COMPARED,
    needs="calibration",
)
def helm_calls_of(f: np.ndarray, y: np.ndarray) -> list[float]:
    import calibration

    labels = y.astype(np.int64)
    area, top = calibration.get_selective_stats(f, labels)
    scaler = calibration.get_platt_scaler(f, labels)
    recalibrated = scaler(f)
    calibration.get_ece_em(recalibrated, labels, num_bins=10)
    calibration.get_ece(recalibrated, labels, num_bins=1)
    return [
        calibration.get_ece_em(f, labels, num_bins=10),
        calibration.get_ece(f, labels, num_bins=1),
        area,
        top,
    ]


PAIRS = {
    "smooth": (SMOOTH, ("smooth_ece", "bandwidth")),
    "corp": (CORP, ("miscalibration", "discrimination")),
    "isotonic": (ISOTONIC, ("fit_at_rows",)),
    "bins": (BINS, ("ece",)),
    "selective": (SELECTIVE, ("aurc",)),
    "helm": (HELM, ("ece_10_bin",)),
}


def warm_up(df: pl.DataFrame) -> None:
    """Imports (SciPy's for calib_frames) are not timed, as for the peers."""
    tiny = df.head(100)
    smooth_ece(tiny, by="model"), corp_decomposition(tiny, by="model")
    ece_by_bin_count(tiny, by="model"), cf.calibration_metrics(tiny, by="model")
    isotonic_blocks(tiny, x="confidence", y="correct", by="model")
    selective_metrics(tiny, by="model"), helm_calibration(tiny, by="model")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="2e4 rows, 10 groups: seconds")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows, groups = (20_000, 10) if args.quick else (int(args.rows), args.groups)
    env = harness.environment()
    report.print_header("Per-group estimators against their reference libraries", env)
    df = workload(rows, groups, args.seed)
    by_group = {
        int(key[0]): (part["confidence"].to_numpy(), part["correct"].cast(pl.Float64).to_numpy())
        for key, part in df.partition_by("model", as_dict=True).items()
    }
    keys = sorted(by_group)
    print(f"\n{df.height:,} rows, {len(keys)} groups")
    src = frame_source(df, Spec(rows, len(keys), 1), by_group=[by_group[k] for k in keys])
    warm_up(df)
    runs, failed, summary = [], 0, []
    for name, (registry, highlight) in PAIRS.items():
        peers = registry.select([p.name for p in registry])
        best, checks, errors = harness.time_interleaved(
            src, peers, args.repeats, highlight=highlight
        )
        subject = registry.reference
        report.print_table(
            f"{name}: {df.height:.0e} rows x {len(keys)} groups",
            best, checks, errors, reference=subject, highlight=highlight,
        )  # fmt: skip
        failed += report.failures(checks, errors)
        runs.append({"pair": name, "rows": rows, "groups": len(keys), "source": "memory",
                     "seconds": best, "checks": checks, "errors": errors})  # fmt: skip
        for peer, check in checks.items():
            ratio = best[peer] / best[subject]
            worst = max(check["diffs"].values())
            summary.append([subject, f"{best[subject]:.3f}", peer, f"{best[peer]:.3f}",
                            f"{ratio:.2f}", report.fmt_diff(worst)])  # fmt: skip
    print("\n## Summary (ratio = peer seconds / calib_frames seconds)\n")
    head = ["calib_frames", "s", "peer", "s", "ratio", "max abs diff"]
    print(report.markdown(head, summary, "lrlrrr"))
    report.save_json(args.json, environment=env, runs=runs)
    print("\ncross-check ok" if not failed else f"\n{failed} check(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
