#!/usr/bin/env python
"""Benchmark: fitting one temperature per group over multiple-choice option rows.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_recalibrate.py                 # quick default
    PYTHONPATH=. .venv/bin/python benchmarks/bench_recalibrate.py --rows 1e6 1e7 --groups 2000

Workload
--------
``--groups`` groups (Int32 key ``group``), each with rows / (groups · K) questions of K = 4
options (``question`` Int64, ``loglik`` Float64 ~ N(0, s_g²), ``is_gold`` Boolean drawn from
softmax(loglik / T_g) with a per-group true temperature T_g in [0.5, 3] and scale s_g in [1, 4]).
Questions are shuffled across groups (option rows of a question stay together). The rows are an
in-memory polars DataFrame; the peers get the same data as numpy arrays for free (not timed).

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

Output: seconds per method (one run each, as the brief asks: a ratio from one run), the
ratio method / calib_frames (> 1: calib_frames is faster), and the largest relative
difference of the fitted temperatures from calib_frames'.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import polars as pl

from calib_frames.recalibrate import fit_temperature

K = 4


def make_options(
    rows: int, groups: int, seed: int = 0
) -> tuple[pl.DataFrame, dict[str, np.ndarray]]:
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
    frame = pl.DataFrame(
        {
            "group": np.repeat(group, K),
            "question": np.repeat(np.arange(n_q, dtype=np.int64), K),
            "loglik": ll.ravel(),
            "is_gold": (np.tile(np.arange(K), n_q) == np.repeat(gold, K)),
        }
    )
    return frame, {"group": group, "ll": ll, "gold": gold}


def run_calib_frames(frame: pl.DataFrame) -> np.ndarray:
    params = fit_temperature(frame, by="group", kind="options").sort("group")
    assert params["converged"].all()
    return params["temperature"].to_numpy()


def run_scipy(arrays: dict[str, np.ndarray], groups: int) -> np.ndarray:
    from scipy.optimize import minimize_scalar

    order = np.argsort(arrays["group"], kind="stable")
    ll, gold = arrays["ll"][order], arrays["gold"][order]
    bounds = np.searchsorted(arrays["group"][order], np.arange(groups + 1))
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


def run_sklearn(arrays: dict[str, np.ndarray], groups: int) -> np.ndarray:
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

    order = np.argsort(arrays["group"], kind="stable")
    ll, gold = arrays["ll"][order], arrays["gold"][order]
    bounds = np.searchsorted(arrays["group"][order], np.arange(groups + 1))
    clf = Softmax().fit(ll[:K], np.arange(K))
    out = np.empty(groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for g in range(groups):
            x, y = ll[bounds[g] : bounds[g + 1]], gold[bounds[g] : bounds[g + 1]]
            model = CalibratedClassifierCV(FrozenEstimator(clf), method="temperature").fit(x, y)
            out[g] = 1.0 / float(model.calibrated_classifiers_[0].calibrators[0].beta_)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", nargs="+", type=float, default=[1e5])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--sklearn-max-rows", type=float, default=1e6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        f"{'rows':>10} {'groups':>6} {'method':<13} {'seconds':>8} {'ratio':>7} {'max rel dT':>10}"
    )
    for rows in (int(r) for r in args.rows):
        frame, arrays = make_options(rows, args.groups, args.seed)
        timings: dict[str, float] = {}
        temperatures: dict[str, np.ndarray] = {}
        methods = ["calib_frames", "scipy_loop"]
        if rows <= args.sklearn_max_rows:
            methods.append("sklearn_loop")
        for name in methods:
            start = time.perf_counter()
            if name == "calib_frames":
                temperatures[name] = run_calib_frames(frame)
            elif name == "scipy_loop":
                temperatures[name] = run_scipy(arrays, args.groups)
            else:
                temperatures[name] = run_sklearn(arrays, args.groups)
            timings[name] = time.perf_counter() - start
        base = timings["calib_frames"]
        for name, seconds in timings.items():
            diff = np.max(np.abs(temperatures[name] / temperatures["calib_frames"] - 1.0))
            line = f"{frame.height:>10,} {args.groups:>6} {name:<13} {seconds:>8.3f}"
            print(f"{line} {seconds / base:>7.2f} {diff:>10.1e}")


if __name__ == "__main__":
    main()
