"""False flags and power of the noise floor at leaderboard scale, and what weights do to it.

A simulation of known truth (issue 29), not a timing. Each run draws a fresh leaderboard of
``--models`` models × ``--tasks`` tasks × ``--n`` predictions (confidences U(0.5, 1), outcomes
Bernoulli(p) for a calibrated model, Bernoulli(p − ``--gap``) for a miscalibrated one),
builds its bin statistics and reads ``ece_beyond_noise`` of
:func:`calib_frames.comparison_from_bin_statistics`'s noise floor, for each correction:

* **global null**: every model calibrated; per run the flagged cells and the models with
  at least one "miscalibrated task" (issue 29 measured 155–160 cells and 47–48 models
  uncorrected);
* **power**: ``--off`` models miscalibrated (by each of ``--gaps``) among the others; the
  share of their cells flagged, and the calibrated cells flagged with them (BH bounds
  their expected share among the flagged at 5 %; Holm bounds the chance of any);
* **weights**: calibrated groups as rows and the same predictions with identical rows
  merged into one row weighted by their count (confidences on a grid of 20 values); and
  the rows with Exp(1) "importance" weights: the raw false-flag rate at a nominal 5 %, the
  widths of the ECE and Brier intervals and how often the Brier interval holds the
  population Brier score E[p(1 − p)].

Run: ``python benchmarks/sim_noise_floor.py [--runs 20]`` (``--quick``: a few seconds).
The README's "How far to trust a number" quotes its output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))
import calib_frames as cf
from calib_frames.estimators import calibration_intervals, calibration_noise_floor

CORRECTIONS = ("bh", "holm", "none")


def leaderboard(
    rng: np.random.Generator, models: int, tasks: int, n: int, *, off: int, gap: float
) -> pl.DataFrame:
    """Bin statistics of models × tasks cells; the first ``off`` models miscalibrated."""
    size = models * tasks * n
    p = rng.uniform(0.5, 1.0, size)
    model = np.repeat(np.arange(models), tasks * n)
    truth = np.where(model < off, p - gap, p)
    rows = pl.DataFrame(
        {
            "model": model,
            "task": np.tile(np.repeat(np.arange(tasks), n), models),
            "confidence": p,
            "correct": rng.random(size) < truth,
        }
    )
    stats = cf.bin_statistics(rows, by=["model", "task"])
    assert isinstance(stats, pl.DataFrame)
    return stats


def flagged(stats: pl.DataFrame, correction: str) -> pl.DataFrame:
    """model, task, ece_beyond_noise of the comparison table (no bootstrap: replicates 1)."""
    table = cf.comparison_from_bin_statistics(stats, correction=correction, replicates=1)  # type: ignore[arg-type]
    assert isinstance(table, pl.DataFrame)
    return table.select("model", "task", "ece_beyond_noise")


def global_null(args: argparse.Namespace, rng: np.random.Generator) -> None:
    print(f"\n## Global null: {args.models} calibrated models × {args.tasks} tasks × "
          f"{args.n} predictions, {args.runs} runs")  # fmt: skip
    print("| correction | flagged cells per run (mean, max) | runs with any flag | "
          "models with a miscalibrated task (mean) |")  # fmt: skip
    print("|---|---|---|---|")
    counts: dict[str, list[tuple[int, int]]] = {c: [] for c in CORRECTIONS}
    for _ in range(args.runs):
        stats = leaderboard(rng, args.models, args.tasks, args.n, off=0, gap=0.0)
        for correction in CORRECTIONS:
            table = flagged(stats, correction)
            cells = int(table["ece_beyond_noise"].sum())
            models = table.filter("ece_beyond_noise")["model"].n_unique()
            counts[correction].append((cells, models))
    for correction, rows in counts.items():
        cells = np.array([c for c, _ in rows])
        models = np.array([m for _, m in rows])
        print(f"| {correction} | {cells.mean():.2f}, {cells.max()} | "
              f"{(cells > 0).sum()} of {len(cells)} | {models.mean():.2f} |")  # fmt: skip


def power(args: argparse.Namespace, rng: np.random.Generator, gap: float) -> None:
    print(f"\n## Power: {args.off} models overconfident by {gap} among "
          f"{args.models - args.off} calibrated ({args.tasks} tasks × {args.n} predictions), "
          f"{args.runs} runs")  # fmt: skip
    print("| correction | miscalibrated cells flagged (power) | calibrated cells flagged "
          "per run (mean) | false share of the flagged |")  # fmt: skip
    print("|---|---|---|---|")
    found: dict[str, list[tuple[float, int, float]]] = {c: [] for c in CORRECTIONS}
    for _ in range(args.runs):
        stats = leaderboard(rng, args.models, args.tasks, args.n, off=args.off, gap=gap)
        for correction in CORRECTIONS:
            table = flagged(stats, correction)
            off = table.filter(pl.col("model") < args.off)["ece_beyond_noise"]
            false = int(table.filter(pl.col("model") >= args.off)["ece_beyond_noise"].sum())
            total = int(table["ece_beyond_noise"].sum())
            found[correction].append((float(off.mean()), false, false / max(total, 1)))  # type: ignore[arg-type]
    for correction, rows in found.items():
        share = np.array(rows)
        print(f"| {correction} | {share[:, 0].mean():.4f} (min {share[:, 0].min():.4f}) | "
              f"{share[:, 1].mean():.2f} | {share[:, 2].mean():.4f} |")  # fmt: skip


GRID = np.linspace(0.5, 0.975, 20)
"""The confidences of the weights' groups (so that rows repeat)."""


def grid_rows(rng: np.random.Generator, groups: int, n: int) -> pl.DataFrame:
    """Calibrated rows with confidences drawn from :data:`GRID`."""
    p = rng.choice(GRID, (groups, n))
    return pl.DataFrame(
        {"g": np.repeat(np.arange(groups), n), "confidence": p.ravel(),
         "correct": (rng.random(p.shape) < p).ravel()}
    )  # fmt: skip


def weights(args: argparse.Namespace, rng: np.random.Generator) -> None:
    groups = args.weight_groups
    print(f"\n## Weights: {groups} calibrated groups × {args.n * 5} predictions")
    print("| the same predictions as | rows | raw p ≤ 0.05 (nominal 0.05) | ECE interval "
          "width | Brier interval width | Brier interval coverage (0.95) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    brier = float(np.mean(GRID * (1 - GRID)))  # calibrated: E[(p − y)²] = E[p(1 − p)]
    rows = grid_rows(rng, groups, args.n * 5)
    merged = rows.group_by("g", "confidence", "correct").agg(w=pl.len().cast(pl.Float64))
    importance = rows.with_columns(w=pl.Series(rng.exponential(1.0, rows.height)))
    for name, frame, weight in (
        ("rows", rows, None),
        ("count-weighted rows", merged, "w"),
        ("rows with Exp(1) weights", importance, "w"),
    ):
        floor = calibration_noise_floor(frame, by="g", weight=weight, correction="none")
        ci = calibration_intervals(frame, by="g", weight=weight, replicates=200, seed=1)
        rate = (floor["ece_p_value"] <= 0.05).mean()
        ece = (ci["ece_ci_high"] - ci["ece_ci_low"]).mean()
        width = (ci["brier_ci_high"] - ci["brier_ci_low"]).mean()
        held = ((ci["brier_ci_low"] <= brier) & (brier <= ci["brier_ci_high"])).mean()
        print(f"| {name} | {frame.height / groups:.0f} | {rate:.3f} | {ece:.4f} | "
              f"{width:.4f} | {held:.3f} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--n", type=int, default=400, help="predictions per cell")
    parser.add_argument("--off", type=int, default=5, help="miscalibrated models (power)")
    parser.add_argument(
        "--gaps", default="0.1,0.15", help="their overconfidence, one power table each"
    )
    parser.add_argument("--weight-groups", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a few seconds: tiny sizes")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.models, args.tasks, args.off, args.weight_groups = 2, 10, 6, 2, 20
    rng = np.random.default_rng(args.seed)
    global_null(args, rng)
    for gap in (float(g) for g in args.gaps.split(",")):
        power(args, rng, gap)
    weights(args, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
