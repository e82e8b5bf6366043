"""Coverage of the ECE interval: the test inversion against the percentile bootstrap.

A simulation of known truth (issue 29, item 9), not a timing. For each design of
confidences, population ECE c and group size n it draws ``--reps`` groups whose binned
population ECE (10 equal-width bins) is exactly c, and counts how often each interval
holds c:

* ``uniform``: confidences U(0.5, 1), right with probability p − c (overconfident in every
  bin);
* ``mixed``: confidences U(0.3, 1), right with p − c above 0.7 and p + c below
  (overconfident in the top bins, underconfident below: the mean gap is near 0);
* ``top``: confidences Beta(5, 1.5), overconfident only above 0.8, by c / P(p > 0.8).

The intervals at ``--level`` (0.95): ``ece_ci_low/_high`` of
:func:`calib_frames.estimators.calibration_intervals` (the inversion of a least-favourable
test, :mod:`calib_frames.estimators.ece_interval`) and the percentile interval of the ECE
over ``--replicates`` replicates of :func:`calib_frames.estimators.bootstrap.
bootstrap_bin_statistics` (what the package reported before). Prints a markdown table:
coverage and mean width per cell.

Run: ``python benchmarks/sim_ece_interval.py [--reps 400]`` (``--quick``: seconds). The
README's "How far to trust a number" quotes its output.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))
import calib_frames as cf
from calib_frames.estimators import calibration_intervals
from calib_frames.estimators.bootstrap import bootstrap_bin_statistics

TOP_SHARE = float(stats.beta.sf(0.8, 5, 1.5))
"""P(p > 0.8) under Beta(5, 1.5): the share of the ``top`` design's overconfident bins."""

Design = Callable[[np.random.Generator, int, float], tuple[np.ndarray, np.ndarray]]


def uniform(rng: np.random.Generator, size: int, c: float) -> tuple[np.ndarray, np.ndarray]:
    p = rng.uniform(0.5, 1.0, size)
    return p, p - c


def mixed(rng: np.random.Generator, size: int, c: float) -> tuple[np.ndarray, np.ndarray]:
    p = rng.uniform(0.3, 1.0, size)
    return p, np.where(p >= 0.7, p - c, p + c)


def top(rng: np.random.Generator, size: int, c: float) -> tuple[np.ndarray, np.ndarray]:
    p = rng.beta(5, 1.5, size)
    return p, np.where(p >= 0.8, p - c / TOP_SHARE, p)


DESIGNS: dict[str, Design] = {"uniform": uniform, "mixed": mixed, "top": top}


def cell(
    rng: np.random.Generator, design: Design, c: float, n: int, args: argparse.Namespace
) -> tuple[float, float, float, float]:
    """(coverage, width) of the test inversion, then of the percentile bootstrap."""
    p, truth = design(rng, args.reps * n, c)
    assert truth.min() >= 0 and truth.max() <= 1  # no clipping: the population ECE is c
    df = pl.DataFrame({"g": np.repeat(np.arange(args.reps), n), "confidence": p,
                       "correct": rng.random(p.size) < truth})  # fmt: skip
    ours = calibration_intervals(df, by="g", replicates=1, level=args.level)
    assert isinstance(ours, pl.DataFrame)
    drawn = bootstrap_bin_statistics(
        cf.bin_statistics(df, by="g"), replicates=args.replicates, seed=args.seed
    )
    boot = cf.metrics_from_bin_statistics(drawn)
    tail = (1 - args.level) / 2
    pct = boot.group_by("g").agg(
        low=pl.col("ece").quantile(tail, "linear"), high=pl.col("ece").quantile(1 - tail, "linear")
    )

    def summary(low: pl.Series, high: pl.Series) -> tuple[float, float]:
        held = ((low <= c + 1e-12) & (c - 1e-12 <= high)).mean()
        return float(held), float((high - low).mean())  # type: ignore[arg-type]

    return (
        *summary(ours["ece_ci_low"], ours["ece_ci_high"]),
        *summary(pct["low"], pct["high"]),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400, help="groups per cell")
    parser.add_argument("--replicates", type=int, default=200, help="of the bootstrap")
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a few seconds: 20 groups a cell")
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.replicates = 20, 50
    rng = np.random.default_rng(args.seed)
    print(f"## Coverage of the {args.level:.0%} ECE interval, {args.reps} groups per cell")
    print("| design | n | population ECE | test inversion: coverage | width | "
          "percentile bootstrap: coverage | width |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, design in DESIGNS.items():
        for n in (200, 2000):
            for c in (0.0, 0.02, 0.05, 0.14):
                covered, width, boot_covered, boot_width = cell(rng, design, c, n, args)
                print(f"| {name} | {n:,} | {c} | {covered:.3f} | {width:.4f} | "
                      f"{boot_covered:.3f} | {boot_width:.4f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
