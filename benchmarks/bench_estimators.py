#!/usr/bin/env python
"""Benchmark: the per-group estimators against their reference libraries looped over groups.

Run from the repository root::

    .venv/bin/python benchmarks/bench_estimators.py                      # 10^6 rows, 200 groups
    .venv/bin/python benchmarks/bench_estimators.py --rows 1e5 --groups 20   # quick

Workload
--------
``--rows`` synthetic predictions in ``--groups`` groups (Int32 key ``model``, random order),
``confidence`` ~ Beta(3, 1.5), ``correct`` ~ Bernoulli(clip(confidence + bias[group])) with a
per-group bias in [-0.15, 0.05].

Methods (one run each, one process; the peers get per-group numpy arrays for free)
-------------------------------------------------------------------------------
smooth_ece         ``calib_frames.estimators.smooth.smooth_ece(df, by="model")``
relplot_loop       ``relplot.smECE(f, y, return_width=True)`` for each group
corp               ``calib_frames.estimators.corp.corp_decomposition(df, by="model")``
model_diag_loop    ``model_diagnostics.scoring.decompose(y, f, scoring_function=SquaredError())``
                   for each group
isotonic_blocks    ``isotonic_blocks(df, x="confidence", y="correct", by="model")``
sklearn_iso_loop   ``sklearn.isotonic.IsotonicRegression().fit(f, y)`` for each group
ece_by_bin_count   ``ece_by_bin_count(df, by="model")`` (M = 5 … 30, one pass)
metrics_loop_m     ``calibration_metrics(df, by="model", bins=M)`` for each M = 5 … 30

Output: seconds per method, the ratio peer / calib_frames (> 1: calib_frames is faster) and
the largest difference of the results (smooth ECE and bandwidth; the four CORP terms; ECE).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

import calib_frames as cf
from calib_frames.estimators.corp import corp_decomposition
from calib_frames.estimators.isotonic import isotonic_blocks
from calib_frames.estimators.sensitivity import ece_by_bin_count
from calib_frames.estimators.smooth import smooth_ece


def workload(rows: int, groups: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    model = rng.integers(0, groups, rows).astype(np.int32)
    bias = rng.uniform(-0.15, 0.05, groups)
    p = rng.beta(3, 1.5, rows)
    y = rng.random(rows) < np.clip(p + bias[model], 0, 1)
    return pl.DataFrame({"model": model, "confidence": p, "correct": y})


def timed(function: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    df = workload(int(args.rows), args.groups, args.seed)
    by_group = {
        int(key[0]): (
            part["confidence"].to_numpy(),
            part["correct"].cast(pl.Float64).to_numpy(),
        )
        for key, part in df.partition_by("model", as_dict=True).items()
    }
    keys = sorted(by_group)
    print(f"{df.height:,} rows, {len(keys)} groups")

    import relplot
    from model_diagnostics.scoring import SquaredError, decompose

    # warm-up on a few rows: imports (SciPy's for calib_frames) are not timed, as for the peers
    tiny = df.head(100)
    smooth_ece(tiny, by="model"), corp_decomposition(tiny, by="model")
    ece_by_bin_count(tiny, by="model"), cf.calibration_metrics(tiny, by="model")
    isotonic_blocks(tiny, x="confidence", y="correct", by="model")

    t_ours, ours = timed(lambda: smooth_ece(df, by="model"))

    def relplot_loop() -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.array([relplot.smECE(*by_group[k], return_width=True) for k in keys])

    t_peer, peer = timed(relplot_loop)
    ours_sorted = ours.sort("model")
    diff = max(
        float(np.abs(ours_sorted["smooth_ece"].to_numpy() - peer[:, 0]).max()),
        float(np.abs(ours_sorted["bandwidth"].to_numpy() - peer[:, 1]).max()),
    )
    report("smooth_ece", t_ours, "relplot_loop", t_peer, diff)

    t_ours, ours = timed(lambda: corp_decomposition(df, by="model"))

    def model_diagnostics_loop() -> np.ndarray:
        rows = []
        for k in keys:
            f, y = by_group[k]
            table = decompose(y, f, scoring_function=SquaredError())
            rows.append(
                [table[c][0] for c in ("score", "miscalibration", "discrimination", "uncertainty")]
            )
        return np.array(rows)

    t_peer, peer = timed(model_diagnostics_loop)
    got = ours.sort("model").select("mean_score", "miscalibration", "discrimination", "uncertainty")
    report("corp", t_ours, "model_diag_loop", t_peer, float(np.abs(got.to_numpy() - peer).max()))

    from sklearn.isotonic import IsotonicRegression

    t_ours, ours = timed(lambda: isotonic_blocks(df, x="confidence", y="correct", by="model"))

    def sklearn_loop() -> list[IsotonicRegression]:
        return [IsotonicRegression().fit(*by_group[k]) for k in keys]

    t_peer, peer = timed(sklearn_loop)
    # compared (untimed) at every row: our block value against sklearn's predict
    blocks = ours.sort("model", "block").partition_by("model", maintain_order=True)
    diff = 0.0
    for table, model, k in zip(blocks, peer, keys, strict=True):
        f = by_group[k][0]
        at = np.searchsorted(table["x_upper"].to_numpy(), f)
        diff = max(diff, float(np.abs(table["value"].to_numpy()[at] - model.predict(f)).max()))
    report("isotonic_blocks", t_ours, "sklearn_iso_loop", t_peer, diff)

    t_ours, ours = timed(lambda: ece_by_bin_count(df, by="model"))

    def metrics_loop() -> pl.DataFrame:
        parts = [
            cf.calibration_metrics(df, by="model", bins=m).select(
                "model", pl.lit(m, dtype=pl.UInt32).alias("bins"), "ece"
            )
            for m in range(5, 31)
        ]
        return pl.concat(parts).sort("model", "bins")

    t_peer, peer = timed(metrics_loop)
    diff = float((ours.sort("model", "bins")["ece"] - peer["ece"]).abs().max() or 0.0)
    report("ece_by_bin_count", t_ours, "metrics_loop_m", t_peer, diff)


def report(ours: str, t_ours: float, peer: str, t_peer: float, diff: float) -> None:
    print(
        f"{ours:<18} {t_ours:8.3f} s   {peer:<16} {t_peer:8.3f} s   "
        f"ratio {t_peer / t_ours:6.2f}   max |diff| {diff:.1e}"
    )


if __name__ == "__main__":
    main()
