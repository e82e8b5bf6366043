"""Precision of the metrics on near-certain predictions: calib_frames vs the textbook sums.

Ten million predictions at confidence p = 1 - 1e-6·u (u uniform), a handful of them wrong,
so the Brier score is about 1e-6. Every metric is compared with a reference computed in
exactly rounded arithmetic (``math.fsum`` over per-row terms, two-pass for the within-bin
terms). The "textbook" column computes the same metrics from per-bin Σp, Σy, Σp², Σpy and
Σ(p - y)² in one polars group_by, the formulation a user would reach for (and the one
calib_frames replaced by sums of residuals; see calib_frames/stats.py).

Run: ``python benchmarks/bench_precision.py [--rows 1e7]`` or ``python -m
benchmarks.bench_precision``. Prints the relative error of each metric for both. The
cross-check: the exit status is 1 when a calib_frames relative error exceeds ``--max-rel``
(1e-6: the within-bin terms are about 1e-13 in absolute size, and the reference's own
``p - p̄`` carries a relative error near 1e-10; tests/metrics/test_calibration_metrics.py
pins tighter bounds with an exact reference).
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import polars as pl

import calib_frames as cf


def reference(p: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Exactly rounded metrics for one bin holding every row (all p lie in [0.9, 1])."""
    n = len(p)
    pbar = math.fsum(p.tolist()) / n
    ybar = float(y.sum()) / n
    error = (p - y).tolist()
    return {
        "ece": abs(math.fsum(error)) / n,
        "brier": math.fsum(e * e for e in error) / n,
        "mean_confidence": pbar,
        "within_bin_variance": math.fsum(((p - pbar) ** 2).tolist()) / n,
        "within_bin_covariance": -2 * math.fsum(((p - pbar) * (y - ybar)).tolist()) / n,
    }


def textbook(frame: pl.DataFrame) -> dict[str, float]:
    """The same metrics from Σp, Σy, Σp², Σpy, Σ(p - y)² (one bin, one group), summed in a
    group_by as any grouped evaluation does (polars' grouped sums are less exact than its
    whole-column sum)."""
    p, y = pl.col("confidence"), pl.col("correct").cast(pl.Float64)
    sums = (
        frame.lazy()
        .group_by(group=pl.lit(0))
        .agg(
            n=pl.len().cast(pl.Float64),
            s=p.sum(),
            sy=y.sum(),
            spp=(p * p).sum(),
            spy=(p * y).sum(),
            se=((p - y) * (p - y)).sum(),
        )
        .drop("group")
    )
    n, s, sy, spp, spy, se = sums.collect().row(0)
    return {
        "ece": abs(s - sy) / n,
        "brier": se / n,
        "mean_confidence": s / n,
        "within_bin_variance": (spp - s * s / n) / n,
        "within_bin_covariance": -2 * (spy - s * sy / n) / n,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-rel", type=float, default=1e-6)
    parser.add_argument("--quick", action="store_true", help="10^5 rows")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows = 1e5
    n = int(args.rows)
    rng = np.random.default_rng(args.seed)
    p = 1.0 - 1e-6 * rng.random(n)
    y = rng.random(n) > 1e-6  # about 10 wrong rows in 1e7
    frame = pl.DataFrame({"confidence": p, "correct": y})

    ref = reference(p, y.astype(np.float64))
    ours = cf.calibration_metrics(frame).row(0, named=True)
    naive = textbook(frame)
    print(f"{n:,} rows, {int((~y).sum())} wrong, brier {ref['brier']:.6e}")
    print(
        f"{'metric':24s} {'reference':>24s} {'calib_frames rel err':>21s} {'textbook rel err':>17s}"
    )
    worst = 0.0
    for name, value in ref.items():
        ours_err = abs(ours[name] - value) / abs(value)
        worst = max(worst, ours_err)
        naive_err = abs(naive[name] - value) / abs(value)
        print(f"{name:24s} {value:24.17g} {ours_err:21.1e} {naive_err:17.1e}")
    terms = ("reliability", "resolution", "uncertainty", "within_bin_variance")
    total = sum(ours[t] * (-1 if t == "resolution" else 1) for t in terms)
    total += ours["within_bin_covariance"]
    print(f"decomposition terms - brier (calib_frames): {total - ours['brier']:.1e}")
    if worst > args.max_rel or abs(total - ours["brier"]) > args.max_rel * ref["brier"]:
        print(f"!! MISMATCH: calib_frames relative error {worst:.1e} > {args.max_rel:g}")
        return 1
    print(f"cross-check ok: calib_frames relative errors <= {args.max_rel:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
