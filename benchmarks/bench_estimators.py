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
numpy_loop         a per-group numpy loop: ``argsort(-f)``, the cumulative errors, AURC =
                   mean(E_k / k) (one order: continuous confidences have no ties)
numpy_loop_frame   the same, with the per-group arrays taken from the frame inside the timing
                   (``partition_by`` + ``to_numpy``: the input calib_frames gets)
cal_selective_loop ``calibration.get_selective_stats(f, y)`` (uncertainty-calibration) for
                   each group: 1 − its area is AURC (continuous confidences: no ties)
curve              ``selective_curve(df, by="model")``: one point per row (no ties)
numpy_curve_loop   the numpy loop's coverage k/n and risk E_k/k at every row, per group
intervals          ``selective_intervals(df, by="model", replicates=R)`` (``--replicates``,
                   100): intervals of AURC, E-AURC and the two coverage figures
numpy_boot_loop    a per-group numpy loop of the AURC bootstrap, replicates vectorised:
                   Poisson(1) row multiplicities from numpy, one argsort per group, the
                   prefix risks of each row's m copies, percentiles
helm               ``helm_calibration(df, by="model")`` (all eight figures, Platt included)
cal_helm_loop      uncertainty-calibration's ``get_ece_em``, ``get_ece``,
                   ``get_selective_stats`` and ``get_platt_scaler`` (+ the two Platt ECEs)
                   for each group, as HELM's ``compute_calibration_metrics`` calls them

Output: one table per pair (seconds, ratio peer / calib_frames: > 1 means calib_frames is
faster) with the cross-check (not timed, tolerance 1e-9): smooth ECE and bandwidth per group;
the four CORP terms per group; the isotonic fit at every row (our block value against
scikit-learn's ``predict``); ECE per (group, bin count); AURC per group; HELM's
``ece_10_bin``, ``ece_1_bin`` and selective figures per group (the Platt figures differ by
the lbfgs tolerance, ~1e-4, and are not compared); the curve's coverage and risk at every
row. The bootstrap loop draws its own multiplicities, so its intervals differ from
calib_frames' by resampling noise; the untimed check reruns it on calib_frames' own
multiplicities (``poisson_weights`` of the row positions) and compares the AURC intervals
at 1e-9. A peer whose library is missing is skipped with a note. A mismatch exits 1.
``--quick``: 2·10^4 rows, 10 groups, 20 replicates.
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
from calib_frames.estimators.bootstrap import poisson_weights
from calib_frames.estimators.corp import corp_decomposition
from calib_frames.estimators.pav import isotonic_blocks
from calib_frames.estimators.selective import (
    selective_curve,
    selective_intervals,
    selective_metrics,
)
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
SELECTIVE, CURVE, INTERVALS, HELM = Registry(), Registry(), Registry(), Registry()
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


def ranked_errors(f: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The errors of one group most confident first, and their running count E_k."""
    wrong = 1.0 - y[np.argsort(-f)]
    return wrong, np.cumsum(wrong)


def numpy_aurc(groups: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """AURC = mean over k of E_k / k, one group at a time."""
    out = []
    for f, y in groups:
        _, errors = ranked_errors(f, y)
        out.append(np.mean(errors / np.arange(1, f.size + 1)))
    return np.array(out)


@SELECTIVE.peer(
    "numpy_loop",
    what="argsort + cumulative errors + mean(E_k / k) for each group (arrays given)",
    normalise=lambda out, src: Result({"aurc": out}),
)
def run_numpy_aurc(src: Source) -> np.ndarray:
    return numpy_aurc(groups_of(src))


def frame_groups(df: pl.DataFrame) -> list[tuple[np.ndarray, np.ndarray]]:
    """The per-group arrays from the frame, in key order (timed in ``numpy_loop_frame``)."""
    parts = sorted(df.partition_by("model", as_dict=True).items())
    return [
        (part["confidence"].to_numpy(), part["correct"].cast(pl.Float64).to_numpy())
        for _, part in parts
    ]


@SELECTIVE.peer(
    "numpy_loop_frame",
    what="numpy_loop with partition_by + to_numpy of the frame timed",
    normalise=lambda out, src: Result({"aurc": out}),
)
def run_numpy_aurc_frame(src: Source) -> np.ndarray:
    return numpy_aurc(frame_groups(src.table()))


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


@CURVE.peer(
    "curve",
    role="subject",
    what='selective_curve(df, by="model") (a point per row: no ties)',
    normalise=lambda out, src: columns(out, ("coverage", "risk"), ("model", "coverage")),
)
def run_curve(src: Source) -> pl.DataFrame:
    return selective_curve(src.table(), by="model")


@CURVE.peer(
    "numpy_curve_loop",
    what="coverage k/n and risk E_k/k at every row for each group (arrays given)",
    normalise=lambda out, src: Result({"coverage": out[0], "risk": out[1]}),
)
def run_numpy_curve(src: Source) -> tuple[np.ndarray, np.ndarray]:
    coverage, risk = [], []
    for f, y in groups_of(src):
        _, errors = ranked_errors(f, y)
        k = np.arange(1, f.size + 1)
        coverage.append(k / f.size)
        risk.append(errors / k)
    return np.concatenate(coverage), np.concatenate(risk)


@INTERVALS.peer(
    "intervals",
    role="subject",
    what='selective_intervals(df, by="model", replicates=R)',
    normalise=lambda out, src: columns(out, ("aurc_ci_low", "aurc_ci_high"), ("model",)),
)
def run_intervals(src: Source) -> pl.DataFrame:
    return selective_intervals(src.table(), by="model", replicates=src.extra["replicates"])


def bootstrap_aurc(
    f: np.ndarray, y: np.ndarray, multiplicity: np.ndarray, level: float = 0.95
) -> tuple[float, float]:
    """The percentile interval of AURC over the columns of ``multiplicity`` (rows x B).

    A row of multiplicity m is m tied copies of one outcome: after K earlier copies with
    E errors its copies add Σ_{t=1..m} (E + t·e)/(K + t), e = 1 − y.
    """
    order = np.argsort(-f, kind="stable")
    wrong = (1.0 - y[order])[:, None]
    m = multiplicity[order].astype(np.float64)
    copies = np.cumsum(m, axis=0) - m  # K: copies before the row
    errors = np.cumsum(m * wrong, axis=0) - m * wrong  # E
    area = np.zeros_like(m)
    for t in range(1, int(m.max()) + 1):
        area += np.where(m >= t, (errors + t * wrong) / (copies + t), 0.0)
    with np.errstate(invalid="ignore"):
        aurc = area.sum(axis=0) / m.sum(axis=0)
    low, high = np.nanquantile(aurc, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def numpy_bootstrap(src: Source, draw: Callable[[int, int], np.ndarray]) -> np.ndarray:
    """Per group: ``draw(group, rows)`` multiplicities (rows x replicates), the interval."""
    return np.array(
        [bootstrap_aurc(f, y, draw(g, f.size)) for g, (f, y) in enumerate(groups_of(src))]
    )


@INTERVALS.peer(
    "numpy_boot_loop",
    what="per group: numpy Poisson(1) multiplicities (rows x R), argsort, copies' prefix risks",
    normalise=lambda out, src: None,  # other draws: checked apart (check_intervals)
)
def run_numpy_bootstrap(src: Source) -> np.ndarray:
    rng = np.random.default_rng(0)
    replicates = src.extra["replicates"]
    return numpy_bootstrap(src, lambda g, rows: rng.poisson(1.0, (rows, replicates)))


def check_intervals(result: Result, src: Source) -> str | None:
    """The numpy bootstrap on calib_frames' own multiplicities gives the same intervals."""
    replicates = src.extra["replicates"]
    positions = src.table().with_row_index("row").select("model", "row")
    draws = positions.with_columns(
        poisson_weights(pl.col("row"), pl.lit(b, pl.UInt32), 0).alias(str(b))
        for b in range(replicates)
    ).partition_by("model", as_dict=True)
    keys = sorted(draws)
    out = numpy_bootstrap(src, lambda g, rows: draws[keys[g]].drop("model", "row").to_numpy())
    ours = np.stack([result.values["aurc_ci_low"], result.values["aurc_ci_high"]], axis=1)
    worst = float(np.max(np.abs(out - ours)))
    print(f"- numpy_boot_loop on calib_frames' multiplicities: max |diff| {worst:.1e}")
    return None if worst < 1e-9 else f"numpy_boot_loop on the same draws differs by {worst:.1e}"


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
    "curve": (CURVE, ("risk",)),
    "intervals": (INTERVALS, ("aurc_ci_low", "aurc_ci_high")),
    "helm": (HELM, ("ece_10_bin",)),
}


def warm_up(df: pl.DataFrame) -> None:
    """Imports (SciPy's for calib_frames) are not timed, as for the peers."""
    tiny = df.head(100)
    smooth_ece(tiny, by="model"), corp_decomposition(tiny, by="model")
    ece_by_bin_count(tiny, by="model"), cf.calibration_metrics(tiny, by="model")
    isotonic_blocks(tiny, x="confidence", y="correct", by="model")
    selective_metrics(tiny, by="model"), helm_calibration(tiny, by="model")
    selective_intervals(tiny, by="model", replicates=2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--replicates", type=int, default=100, help="selective_intervals")
    parser.add_argument(
        "--pairs", default=",".join(PAIRS), help=f"comma-separated subset of {','.join(PAIRS)}"
    )
    parser.add_argument("--quick", action="store_true", help="2e4 rows, 10 groups: seconds")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows, groups = (20_000, 10) if args.quick else (int(args.rows), args.groups)
    replicates = 20 if args.quick else args.replicates
    env = harness.environment()
    report.print_header("Per-group estimators against their reference libraries", env)
    df = workload(rows, groups, args.seed)
    by_group = {
        int(key[0]): (part["confidence"].to_numpy(), part["correct"].cast(pl.Float64).to_numpy())
        for key, part in df.partition_by("model", as_dict=True).items()
    }
    keys = sorted(by_group)
    print(f"\n{df.height:,} rows, {len(keys)} groups")
    src = frame_source(
        df, Spec(rows, len(keys), 1), by_group=[by_group[k] for k in keys], replicates=replicates
    )
    warm_up(df)
    runs, failed, summary = [], 0, []
    for name in args.pairs.split(","):
        registry, highlight = PAIRS[name]
        peers = registry.select([p.name for p in registry])
        best, checks, errors = harness.time_interleaved(
            src, peers, args.repeats, highlight=highlight,
            check=check_intervals if registry is INTERVALS else None,
        )  # fmt: skip
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
