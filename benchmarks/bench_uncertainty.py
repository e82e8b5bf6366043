#!/usr/bin/env python
"""Benchmark: bootstrap intervals, noise floor and paired tests against one plain evaluation
and against the usual ways of bootstrapping (a numpy loop over groups, scipy.stats.bootstrap).

Run from the repository root::

    python -m benchmarks.bench_uncertainty                      # quick: 10^5 rows
    python -m benchmarks.bench_uncertainty --rows 1e6 --row-bootstrap   # the reported run

Workload: ``--rows`` predictions in ``--groups`` groups (Int32 key ``g``), confidence
~ Beta(3, 1.5), outcome ~ Bernoulli(confidence ** 1.3) (overconfident), 10 bins,
``--replicates`` bootstrap replicates (200), level 0.95. Perplexity: the same number of
document rows (nll, tokens, bytes). Paired: two models on ``rows / 2`` shared items.

Methods (best of ``--repeats`` wall-clock seconds; ``ratio`` = seconds / plain metrics, or
/ plain perplexity for the perplexity rows; CPU seconds (``time.process_time``, all threads)
of the same run beside them: on a shared machine the CPU ratio is the steadier one):

plain_metrics        ``cf.calibration_metrics(df, by="g")``: one evaluation, every metric.
cf_intervals         ``calibration_intervals(df, by="g")``: bin statistics (one pass) plus
                     bin-level resampling, intervals of 12 metrics.
cf_from_stats        ``intervals_from_bin_statistics(stats)`` alone (the bin statistics
                     already computed, as in the report).
cf_row_bootstrap     ``calibration_intervals(..., resample="rows")``: the exact row-level
                     Poisson bootstrap (rows × replicates; ``--row-bootstrap`` to run it).
numpy_group_loop     a Python loop over groups; per group the replicates are vectorised
                     (an index matrix (replicates, n), bincount over replicate × bin): the
                     same 12 metrics, percentile intervals.
scipy_bootstrap_x G  ``scipy.stats.bootstrap`` (paired, vectorised, percentile) of the ECE
                     alone for one group, times the number of groups.
cf_noise_floor       ``calibration_noise_floor(df, by="g", replicates=1000)``.
plain_perplexity     ``cf.perplexity(docs, tokens="tokens", bytes="bytes", by="g")``.
cf_ppl_intervals     ``perplexity_intervals(docs, ...)`` (one pass of moments, then draws).
cf_paired            ``paired_comparison`` of two models on rows/2 shared items per group
                     (permutation p-values and bootstrap intervals, ``--replicates``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import polars as pl

import calib_frames as cf
from calib_frames.estimators.bootstrap import (
    calibration_intervals,
    intervals_from_bin_statistics,
    perplexity_intervals,
)
from calib_frames.estimators.noise import calibration_noise_floor
from calib_frames.estimators.paired import paired_comparison


def predictions(rows: int, groups: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.beta(3, 1.5, rows)
    return pl.DataFrame(
        {
            "g": rng.integers(0, groups, rows).astype(np.int32),
            "confidence": p,
            "correct": rng.random(rows) < p**1.3,
        }
    )


def documents(rows: int, groups: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed + 1)
    tokens = rng.integers(5, 500, rows)
    return pl.DataFrame(
        {
            "g": rng.integers(0, groups, rows).astype(np.int32),
            "nll": tokens * rng.gamma(4, 0.6, rows),
            "tokens": tokens,
            "bytes": tokens * rng.integers(3, 6, rows),
        }
    )


def paired_rows(rows: int, groups: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed + 2)
    items = rows // 2
    difficulty = rng.beta(2, 2, items)
    task = rng.integers(0, groups, items).astype(np.int32)
    frames = []
    for name, power in (("a", 1.0), ("b", 1.4)):
        p = np.clip(difficulty + rng.normal(0, 0.1, items), 0.01, 0.99)
        frames.append(
            pl.DataFrame(
                {
                    "g": task,
                    "model": name,
                    "item": np.arange(items),
                    "confidence": p,
                    "correct": rng.random(items) < p**power,
                }
            )
        )
    return pl.concat(frames)


def numpy_group_loop(df: pl.DataFrame, replicates: int, seed: int) -> np.ndarray:
    """Per-group loop, replicates vectorised: 12 metrics' percentile intervals."""
    rng = np.random.default_rng(seed)
    g = df["g"].to_numpy()
    p_all = df["confidence"].to_numpy()
    y_all = df["correct"].to_numpy().astype(np.float64)
    order = np.argsort(g, kind="stable")
    bounds = np.flatnonzero(np.diff(g[order])) + 1
    out = []
    m = 10
    for rows in np.split(order, bounds):
        p, y = p_all[rows], y_all[rows]
        n = p.size
        idx = rng.integers(0, n, (replicates, n))
        pb, yb = p[idx], y[idx]
        b = np.minimum((pb * m).astype(np.int64), m - 1) + m * np.arange(replicates)[:, None]

        def binsum(v: np.ndarray, b: np.ndarray = b) -> np.ndarray:
            return np.bincount(b.ravel(), weights=v.ravel(), minlength=replicates * m).reshape(
                replicates, m
            )

        w = binsum(np.ones_like(pb))
        sp, sy = binsum(pb), binsum(yb)
        spp, spy = binsum(pb * pb), binsum(pb * yb)
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.where(w > 0, (sp - sy) / w, 0.0)
            acc_b = np.where(w > 0, sy / w, 0.0)
        acc = yb.mean(axis=1)
        ece = (w * np.abs(gap)).sum(axis=1) / n
        rel = (w * gap**2).sum(axis=1) / n
        mce = np.abs(gap).max(axis=1)
        brier = ((pb - yb) ** 2).mean(axis=1)
        res = (w * (acc_b - acc[:, None]) ** 2).sum(axis=1) / n
        unc = acc * (1 - acc)
        with np.errstate(divide="ignore", invalid="ignore"):
            var = np.where(w > 0, spp - sp**2 / w, 0.0).sum(axis=1) / n
            cov = -2 * np.where(w > 0, spy - sp * sy / w, 0.0).sum(axis=1) / n
        conf = pb.mean(axis=1)
        stats = np.stack([acc, conf, conf - acc, ece, np.sqrt(rel), mce, brier, rel, res, unc,
                          var, cov], axis=1)  # fmt: skip
        out.append(np.percentile(stats, [2.5, 97.5], axis=0))
    return np.array(out)


def scipy_one_group(df: pl.DataFrame, replicates: int, seed: int) -> float:
    from scipy.stats import bootstrap

    part = df.filter(pl.col("g") == 0)
    p = part["confidence"].to_numpy()
    y = part["correct"].to_numpy().astype(np.float64)

    def ece(p: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        p, y = np.moveaxis(p, axis, -1), np.moveaxis(y, axis, -1)
        b = np.minimum((p * 10).astype(np.int64), 9)
        gaps = sum(np.abs(((p - y) * (b == k)).sum(axis=-1)) for k in range(10))
        return np.asarray(gaps / p.shape[-1])

    start = time.perf_counter()
    bootstrap((p, y), ece, paired=True, vectorized=True, n_resamples=replicates,
              method="percentile", rng=np.random.default_rng(seed))  # fmt: skip
    return time.perf_counter() - start


CPU: dict[str, float] = {}


def best(fn: Callable[[], object], repeats: int) -> float:
    """Best wall-clock seconds of ``repeats`` runs (the CPU seconds of that run go to CPU)."""
    times = []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - start, time.process_time() - cpu))
    wall, cpu_seconds = min(times)
    CPU[f"_{len(CPU)}"] = cpu_seconds
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=float, default=1e5)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--row-bootstrap", action="store_true", help="also time resample='rows'")
    parser.add_argument(
        "--no-peers", action="store_true", help="skip the numpy loop, scipy and paired runs"
    )
    args = parser.parse_args()
    rows, groups, reps, repeats = int(args.rows), args.groups, args.replicates, args.repeats
    df = predictions(rows, groups, args.seed)
    docs = documents(rows, groups, args.seed)
    pairs = None if args.no_peers else paired_rows(rows, groups, args.seed)
    stats = cf.bin_statistics(df, by="g")

    timings: dict[str, float] = {}
    timings["plain_metrics"] = best(lambda: cf.calibration_metrics(df, by="g"), repeats)
    timings["cf_intervals"] = best(
        lambda: calibration_intervals(df, by="g", replicates=reps), repeats
    )
    timings["cf_from_stats"] = best(
        lambda: intervals_from_bin_statistics(stats, replicates=reps), repeats
    )
    if args.row_bootstrap:
        timings["cf_row_bootstrap"] = best(
            lambda: calibration_intervals(df, by="g", replicates=reps, resample="rows"), 1
        )
    scipy_name = f"scipy_bootstrap_x{groups}"
    if not args.no_peers:
        timings["numpy_group_loop"] = best(lambda: numpy_group_loop(df, reps, args.seed), 1)
        timings[scipy_name] = scipy_one_group(df, reps, args.seed) * groups
        CPU[f"_{len(CPU)}"] = timings[scipy_name]  # wall (single-threaded)
    timings["cf_noise_floor"] = best(
        lambda: calibration_noise_floor(df, by="g", replicates=1000), repeats
    )
    timings["plain_perplexity"] = best(
        lambda: cf.perplexity(docs, tokens="tokens", bytes="bytes", by="g"), repeats
    )
    timings["cf_ppl_intervals"] = best(
        lambda: perplexity_intervals(docs, tokens="tokens", bytes="bytes", by="g", replicates=reps),
        repeats,
    )
    if not args.no_peers:
        timings["cf_paired"] = best(lambda: paired_comparison(pairs, by="g", replicates=reps), 1)

    # cross-check: the bin-level intervals against the numpy loop's (median abs difference
    # of the ECE interval bounds relative to the interval width; Monte-Carlo noise ~5%)
    drift = float("nan")
    if not args.no_peers:
        ours = calibration_intervals(df, by="g", replicates=reps).sort("g")
        theirs = numpy_group_loop(df, reps, args.seed + 1)
        width = theirs[:, 1, 3] - theirs[:, 0, 3]
        drift = np.median(np.abs(ours["ece_ci_low"].to_numpy() - theirs[:, 0, 3]) / width)

    print(f"rows={rows:,} groups={groups} replicates={reps} (best of {repeats})")
    cpu = dict(zip(timings, CPU.values(), strict=False))
    if scipy_name in timings:
        cpu[scipy_name] = timings[scipy_name]
    print(f"{'method':24s} {'wall s':>9s} {'ratio':>8s} {'cpu s':>9s} {'cpu ratio':>10s}")
    for name, seconds in timings.items():
        base = "plain_perplexity" if "ppl" in name or "perplexity" in name else "plain_metrics"
        ratio = seconds / timings[base]
        print(
            f"{name:24s} {seconds:9.3f} {ratio:8.1f} {cpu[name]:9.3f} {cpu[name] / cpu[base]:10.1f}"
        )
    print(f"ECE lower bound, bins vs numpy loop: median |diff| / width = {drift:.3f}")


if __name__ == "__main__":
    main()
