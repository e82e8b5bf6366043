#!/usr/bin/env python
"""Benchmark: fitting one temperature per group over multiple-choice option rows.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_recalibrate.py                 # 10^5 rows
    PYTHONPATH=. .venv/bin/python benchmarks/bench_recalibrate.py --rows 1e6 1e7 --groups 2000
    PYTHONPATH=. .venv/bin/python benchmarks/bench_recalibrate.py --quick         # seconds

Workload
--------
``--groups`` groups (Int32 key ``group``), each with rows / (groups · K) questions of K = 4
TOLERANCE = 1e-5  # on log T
REGISTRY = Registry()


def log_temperature(out: np.ndarray, src: Source) -> Result:
    return Result({"log_temperature": np.log(out)})
options (``question`` Int64, ``loglik`` Float64 ~ N(0, s_g²), ``is_gold`` Boolean drawn from
softmax(loglik / T_g) with a per-group true temperature T_g in [0.5, 3] and scale s_g in [1, 4]).
Questions are shuffled across groups (option rows of a question stay together). The rows are an
in-memory polars DataFrame, the input of every method: the loops' conversion to numpy arrays
(``to_numpy`` of the three columns, reshaped to (questions, K) — they are told K and that the
rows of a question are contiguous — and the gold index) is timed, as calib_frames' collect is.

Methods (each fits the same 2,000 temperatures)
-----------------------------------------------
calib_frames   ``fit_temperature(df, by="group", kind="options")``: collect + sort by (group,
               question), then every group's safeguarded Newton iteration on 1/T together
               (numpy arrays indexed by group; ``np.add.reduceat`` per question, ``bincount``
               per group).
scipy_loop     per-group Python loop over ``scipy.optimize.minimize_scalar(method="bounded")``
               on log T (xatol 1e-10) of the numpy NLL of that group's (n_q, K) log-likelihood
               array; the grouping (one argsort of the group codes, then slices) is timed too.
sklearn_loop   per-group loop over ``CalibratedClassifierCV(FrozenEstimator(clf),
               method="temperature").fit(loglik, gold)`` with a stub classifier whose
               ``predict_proba`` is the softmax of its features (only up to
               ``--sklearn-max-rows`` rows).

Output: per size, a table of seconds per method (one run each by default, as the brief asks:
a ratio from one run; ``--repeats`` for best of N, interleaved), the ratio method /
calib_frames (> 1: calib_frames is faster) and the cross-check: the largest difference of
log T (about the relative difference of the temperatures) from calib_frames', which must be
below 1e-5 (the optimisers stop at different points: ~1e-7 is typical); then the matrix of
ratios over the sizes. A mismatch exits 1. ``--quick``: 2·10^4 rows, 20 groups, every method.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))

import numpy as np
import polars as pl

from benchmarks import harness, report
from benchmarks.peers import Registry, Result
from benchmarks.workload import Source, Spec, frame_source
from calib_frames.recalibrate import fit_temperature

K = 4
TOLERANCE = 1e-5  # on log T
REGISTRY = Registry()


def log_temperature(out: np.ndarray, src: Source) -> Result:
    return Result({"log_temperature": np.log(out)})


def make_options(rows: int, groups: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    per_group = max(1, rows // (groups * K))
    n_q = per_group * groups
    group = np.repeat(np.arange(groups, dtype=np.int32), per_group)
    scale = rng.uniform(1.0, 4.0, groups)[group]
    true_t = rng.uniform(0.5, 3.0, groups)[group]
    ll = rng.normal(size=(n_q, K)) * scale[:, None]
    prob = np.exp((ll - ll.max(axis=1, keepdims=True)) / true_t[:, None])
    prob /= prob.sum(axis=1, keepdims=True)
    gold = (rng.uniform(size=(n_q, 1)) > prob.cumsum(axis=1)).sum(axis=1).clip(0, K - 1)
    order = rng.permutation(n_q)  # questions in random group order
    group, ll, gold = group[order], ll[order], gold[order]
    return pl.DataFrame(
        {
            "group": np.repeat(group, K),
            "question": np.repeat(np.arange(n_q, dtype=np.int64), K),
            "loglik": ll.ravel(),
            "is_gold": (np.tile(np.arange(K), n_q) == np.repeat(gold, K)),
        }
    )


def peer_arrays(src: Source) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The loops' input from the frame: (ll (questions, K), gold index, group bounds).

    Questions sorted by group (stable argsort), ``bounds[g]:bounds[g + 1]`` the rows of group g.
    """
    frame = src.table()
    group = frame["group"].to_numpy()[::K]
    order = np.argsort(group, kind="stable")
    ll = frame["loglik"].to_numpy().reshape(-1, K)[order]
    gold = frame["is_gold"].to_numpy().reshape(-1, K).argmax(axis=1)[order]
    bounds = np.searchsorted(group[order], np.arange(src.spec.groups + 1))
    return ll, gold, bounds


@REGISTRY.peer(
    "calib_frames",
    role="subject",
    what='fit_temperature(df, by="group", kind="options")',
    normalise=log_temperature,
)
def run_calib_frames(src: Source) -> np.ndarray:
    params = fit_temperature(src.table(), by="group", kind="options").sort("group")
    assert params["converged"].all()
    return params["temperature"].to_numpy()


@REGISTRY.peer(
    "scipy_loop",
    what='per-group scipy.optimize.minimize_scalar(method="bounded") on log T',
    normalise=log_temperature,
    needs="scipy",
)
def run_scipy(src: Source) -> np.ndarray:
    from scipy.optimize import minimize_scalar

    groups = src.spec.groups
    ll, gold, bounds = peer_arrays(src)
    out = np.empty(groups)
    for g in range(groups):
        block = ll[bounds[g] : bounds[g + 1]]
        top = block.max(axis=1, keepdims=True)
        shifted = block - top
        gold_shifted = shifted[np.arange(len(block)), gold[bounds[g] : bounds[g + 1]]]

        def nll(
            log_t: float, shifted: np.ndarray = shifted, gold_shifted: np.ndarray = gold_shifted
        ) -> float:
            beta = np.exp(-log_t)
            return float(np.sum(np.log(np.exp(beta * shifted).sum(axis=1)) - beta * gold_shifted))

        result = minimize_scalar(
            nll, bounds=(np.log(1e-3), np.log(1e3)), method="bounded", options={"xatol": 1e-10}
        )
        out[g] = np.exp(result.x)
    return out


@REGISTRY.peer(
    "sklearn_loop",
    what='per-group CalibratedClassifierCV(FrozenEstimator(clf), method="temperature")',
    normalise=log_temperature,
    needs="sklearn",
)
def run_sklearn(src: Source) -> np.ndarray:
    groups = src.spec.groups
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    class Softmax(ClassifierMixin, BaseEstimator):
        def fit(self, X: np.ndarray, y: np.ndarray) -> Softmax:
            self.classes_ = np.arange(K)
            return self

        def predict_proba(self, X: np.ndarray) -> np.ndarray:
            e = np.exp(X - X.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)

        def predict(self, X: np.ndarray) -> np.ndarray:
            return X.argmax(axis=1)

    ll, gold, bounds = peer_arrays(src)
    clf = Softmax().fit(ll[:K], np.arange(K))
    out = np.empty(groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for g in range(groups):
            x, y = ll[bounds[g] : bounds[g + 1]], gold[bounds[g] : bounds[g + 1]]
            model = CalibratedClassifierCV(FrozenEstimator(clf), method="temperature").fit(x, y)
            out[g] = 1.0 / float(model.calibrated_classifiers_[0].calibrators[0].beta_)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", nargs="+", type=float, default=[1e5])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--sklearn-max-rows", type=float, default=1e6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="2e4 rows, 20 groups: seconds")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.groups, args.repeats = [2e4], 20, 1
    env = harness.environment()
    report.print_header("Fitting one temperature per group over option rows", env)
    runs: list[dict[str, Any]] = []
    failed = 0
    for rows in (int(r) for r in args.rows):
        frame = make_options(rows, args.groups, args.seed)
        src = frame_source(frame, Spec(frame.height, args.groups, 1))
        names = ["scipy_loop"]
        if rows <= args.sklearn_max_rows:
            names.append("sklearn_loop")
        else:
            print(f"\n(sklearn_loop not run above --sklearn-max-rows {args.sklearn_max_rows:g})")
        best, checks, errors = harness.time_interleaved(
            src, REGISTRY.select(names), args.repeats, tolerance=TOLERANCE,
            highlight=("log_temperature",),
        )  # fmt: skip
        report.print_table(
            f"{frame.height:.0e} option rows x {args.groups} groups ({K} options)",
            best, checks, errors, rows=frame.height, highlight=("log_temperature",),
        )  # fmt: skip
        failed += report.failures(checks, errors)
        runs.append({"rows": frame.height, "groups": args.groups, "source": "memory",
                     "repeats": args.repeats, "seconds": best, "checks": checks,
                     "errors": errors})  # fmt: skip
    report.summary(runs)
    report.save_json(args.json, environment=env, runs=runs)
    print("\ncross-check ok" if not failed else f"\n{failed} check(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
