#!/usr/bin/env python
"""Benchmark: paired model comparison (every model pair on every task) against
``scipy.stats.permutation_test`` looped over pairs, tasks and metrics.

Run from the repository root::

    python benchmarks/bench_paired.py                       # 12 models x 8 tasks x 1500 items
    python benchmarks/bench_paired.py --before /tmp/cf_old  # + an older calib_frames, timed
    python benchmarks/bench_paired.py --quick               # seconds (smoke test)

Workload: ``--models`` models answer the same ``--items`` items of each of ``--tasks``
tasks (string model names, integer task and item ids). Per task the items have a
difficulty d ~ Beta(2, 2); model k's confidence is clip(d + N(0, 0.1), 0.01, 0.99) and its
outcome ~ Bernoulli(confidence ** (1 + k/10)), so the models differ in calibration.

Methods (wall clock; ``--replicates`` 10000, the default of ``paired_comparison``):

calib_frames       ``paired_comparison(df, by="task", replicates=R)``: accuracy, ECE and
                   Brier differences of all pairs on all tasks, paired-bootstrap intervals,
                   permutation p-values, Holm and BH.
scipy_loop         ``scipy.stats.permutation_test`` (``permutation_type="samples"``,
                   vectorised, statistic |d|, ``alternative="greater"``: the p-value
                   (1 + #{|d*| >= |d|}) / (1 + R) of calib_frames) once per metric for
                   each (task, pair), on the first ``--peer-pairs`` (task, pair)s; its
                   seconds are scaled to all of them (x pairs / peer pairs). No intervals.
before             with ``--before DIR``: ``paired_comparison`` of the calib_frames found in
                   DIR (e.g. ``git archive <commit> calib_frames | tar -x -C DIR``), in a
                   fresh interpreter, the same call (its import not timed).

Cross-checks (not timed; a failure exits 1): the observed differences equal calib_frames'
to 1e-9 (both peers); the p-values agree within resampling noise: |p1 - p2| at most
``--max-z`` (5) standard errors of the difference of two Monte-Carlo p-values,
sqrt(2 p (1 - p) / R) (floored at 1 / R); with ``--before`` the interval ends agree within
6 / sqrt(R) of the interval's width (about 6 standard errors of the difference of two
estimates of a 2.5 % quantile; 0.06 at R = 10000). ``--quick``: 3 models x 2 tasks x
200 items, 500 replicates, 2 peer pairs.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))

import numpy as np
import polars as pl

from benchmarks import harness, report
from calib_frames.estimators.paired import PAIRED_METRICS, paired_comparison

BINS = 10


def leaderboard(models: int, tasks: int, items: int, seed: int) -> pl.DataFrame:
    """Every model answers every item of every task (module docstring)."""
    rng = np.random.default_rng(seed)
    frames = []
    for task in range(tasks):
        difficulty = rng.beta(2, 2, items)
        for k in range(models):
            p = np.clip(difficulty + rng.normal(0, 0.1, items), 0.01, 0.99)
            frames.append(
                pl.DataFrame(
                    {
                        "task": task,
                        "model": f"m{k:02d}",
                        "item": np.arange(items),
                        "confidence": p,
                        "correct": rng.random(items) < p ** (1.0 + k / 10),
                    }
                )
            )
    return pl.concat(frames)


def metric(name: str, p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Accuracy, ECE (10 equal-width bins) or Brier along the last axis."""
    if name == "accuracy":
        return y.mean(axis=-1)
    if name == "brier":
        return ((p - y) ** 2).mean(axis=-1)
    n = p.shape[-1]
    flat_p, flat_y = p.reshape(-1, n), y.reshape(-1, n)
    index = np.minimum((flat_p * BINS).astype(np.int64), BINS - 1)
    index += BINS * np.arange(flat_p.shape[0])[:, None]
    gaps = np.bincount(index.ravel(), weights=(flat_p - flat_y).ravel(), minlength=index.size)
    ece = np.abs(gaps[: flat_p.shape[0] * BINS].reshape(-1, BINS)).sum(axis=1) / n
    return ece.reshape(p.shape[:-1])


def scipy_loop(df: pl.DataFrame, pairs: list[tuple[int, str, str]], replicates: int) -> dict:
    """permutation_test per metric for each (task, model_a, model_b): p-values, differences."""
    rng = np.random.default_rng(0)
    out: dict[str, list[float]] = {}
    for task, a, b in pairs:
        rows = df.filter(pl.col("task") == task)
        both = [rows.filter(pl.col("model") == m).sort("item") for m in (a, b)]
        p = np.concatenate([part["confidence"].to_numpy() for part in both])
        y = np.concatenate([part["correct"].cast(pl.Float64).to_numpy() for part in both])
        for name in PAIRED_METRICS:
            p_value, difference = scipy_one(name, p, y, replicates, rng)
            out.setdefault(f"{name}_p_value", []).append(p_value)
            out.setdefault(f"{name}_difference", []).append(difference)
    return out


def scipy_one(
    name: str, p: np.ndarray, y: np.ndarray, replicates: int, rng: np.random.Generator
) -> tuple[float, float]:
    """One paired permutation test of ``name``: rows [0, n) are model a's, [n, 2n) b's."""
    from scipy.stats import permutation_test

    n = p.size // 2

    def statistic(x: np.ndarray, z: np.ndarray, axis: int = -1) -> Any:
        return np.abs(metric(name, p[x], y[x]) - metric(name, p[z], y[z]))

    result = permutation_test(
        (np.arange(n), np.arange(n, 2 * n)),
        statistic,
        permutation_type="samples",
        vectorized=True,
        n_resamples=replicates,
        alternative="greater",
        random_state=rng,
    )
    difference = metric(name, p[:n], y[:n]) - metric(name, p[n:], y[n:])
    return float(result.pvalue), float(difference)


def run_before(directory: Path, data: Path, replicates: int) -> tuple[float, pl.DataFrame]:
    """paired_comparison of the calib_frames in ``directory``, in a fresh interpreter."""
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "before.parquet"
        code = (
            "import sys, time, polars as pl\n"
            f"sys.path.insert(0, {str(directory)!r})\n"
            "from calib_frames.estimators.paired import paired_comparison\n"
            f"df = pl.read_parquet({str(data)!r})\n"
            "t = time.perf_counter()\n"
            f"out = paired_comparison(df, by='task', replicates={replicates})\n"
            "print(time.perf_counter() - t)\n"
            f"out.write_parquet({str(result)!r})\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        return float(done.stdout.strip().splitlines()[-1]), pl.read_parquet(result)


def agreement(
    ours: pl.DataFrame, theirs: dict[str, np.ndarray], replicates: int, max_z: float
) -> tuple[list[list[Any]], list[str]]:
    """Rows of the agreement table and the failures (module docstring)."""
    rows, problems = [], []
    floor = 1.0 / replicates
    for name in PAIRED_METRICS:
        same = np.abs(ours[f"{name}_difference"].to_numpy() - theirs[f"{name}_difference"])
        p1, p2 = ours[f"{name}_p_value"].to_numpy(), theirs[f"{name}_p_value"]
        mean = (p1 + p2) / 2
        z = np.abs(p1 - p2) / np.sqrt(np.maximum(2 * mean * (1 - mean), floor) / replicates)
        rows.append([name, report.fmt_diff(float(same.max())), f"{np.abs(p1 - p2).max():.4f}",
                     f"{z.max():.2f}"])  # fmt: skip
        if not same.max() < 1e-9:
            problems.append(f"{name}: observed differences differ by {same.max():.1e}")
        if not z.max() < max_z:
            problems.append(f"{name}: p-values {z.max():.1f} standard errors apart")
    return rows, problems


def compare_before(
    ours: pl.DataFrame, df: pl.DataFrame, args: argparse.Namespace
) -> tuple[float, list[list[Any]], list[str]]:
    """Time the older calib_frames on the same rows; its agreement rows and failures."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.parquet"
        df.write_parquet(data)
        seconds, before = run_before(args.before, data, args.replicates)
    before = before.sort("task", "model_a", "model_b")
    mine = ours.sort("task", "model_a", "model_b")
    rows, problems = agreement(
        mine, {c: before[c].to_numpy() for c in before.columns}, args.replicates, args.max_z
    )
    limit = 6.0 / np.sqrt(args.replicates)
    for name in PAIRED_METRICS:
        width = mine[f"{name}_difference_ci_high"] - mine[f"{name}_difference_ci_low"]
        for side in ("low", "high"):
            column = f"{name}_difference_ci_{side}"
            drift = float(((mine[column] - before[column]).abs() / width).max())
            print(f"- {column}: largest |calib_frames - before| / width = {drift:.3f}")
            if not drift < limit:
                problems.append(f"{column}: the intervals moved by {drift:.2f} of a width")
    return seconds, [["before (all pairs)", *row] for row in rows], problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--items", type=int, default=1500)
    parser.add_argument("--replicates", type=int, default=10_000)
    parser.add_argument("--peer-pairs", type=int, default=6, help="(task, pair)s scipy runs")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--max-z", type=float, default=5.0)
    parser.add_argument("--before", type=Path, default=None, help="an older calib_frames")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.models, args.tasks, args.items, args.replicates, args.peer_pairs = 3, 2, 200, 500, 2
    env = harness.environment()
    report.print_header("Paired model comparison: every pair on every task", env)
    df = leaderboard(args.models, args.tasks, args.items, args.seed)
    all_pairs = [
        (task, a, b)
        for task in range(args.tasks)
        for a, b in itertools.combinations(sorted(df["model"].unique()), 2)
    ]
    print(f"\n{args.models} models x {args.tasks} tasks x {args.items} items: "
          f"{len(all_pairs)} (task, pair)s, {args.replicates} replicates")  # fmt: skip
    paired_comparison(df.head(10), by="task", replicates=10)  # imports, not timed
    seconds: dict[str, float] = {}
    for _ in range(args.repeats):
        start = time.perf_counter()
        ours = paired_comparison(df, by="task", replicates=args.replicates)
        seconds["calib_frames"] = min(seconds.get("calib_frames", np.inf),
                                      time.perf_counter() - start)  # fmt: skip
    peer_pairs = all_pairs[: args.peer_pairs]
    start = time.perf_counter()
    theirs = scipy_loop(df, peer_pairs, args.replicates)
    scale = len(all_pairs) / len(peer_pairs)
    seconds[f"scipy_loop (x{scale:.0f})"] = (time.perf_counter() - start) * scale
    keyed = ours.with_columns(pl.col("task").cast(pl.Int64))
    picked = pl.DataFrame(peer_pairs, schema=["task", "model_a", "model_b"], orient="row")
    subset = picked.join(
        keyed, on=["task", "model_a", "model_b"], how="left", maintain_order="left"
    )
    rows, problems = agreement(
        subset, {k: np.array(v) for k, v in theirs.items()}, args.replicates, args.max_z
    )
    agree = [[f"scipy_loop ({len(peer_pairs)} pairs)", *row] for row in rows]
    if args.before is not None:
        seconds["before"], more_rows, more = compare_before(ours, df, args)
        agree += more_rows
        problems += more
    print(f"\n### seconds (load average after: {report.load()})\n")
    body = [[name, f"{s:.2f}", f"{s / seconds['calib_frames']:.1f}"] for name, s in seconds.items()]
    print(report.markdown(["method", "seconds", "ratio (method / calib_frames)"], body))
    print("\n### agreement with calib_frames\n")
    head = ["peer", "metric", "max |difference diff|", "max |p diff|", "max z"]
    print(report.markdown(head, agree, "llrrr"))
    for problem in problems:
        print(f"!! MISMATCH {problem}")
    report.save_json(args.json, environment=env, seconds=seconds, problems=problems)
    print("\ncross-check ok" if not problems else f"\n{len(problems)} check(s) FAILED")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
