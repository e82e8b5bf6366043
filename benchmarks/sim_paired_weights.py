"""False positives of the paired tests on the same predictions as rows and as count-weighted rows.

A simulation of known truth (issue 29, item 8), not a timing. Each run is one task on which
two equally good models answer ``--n`` items: each model's confidence is drawn from
:data:`GRID` (5 values) and its outcome is Bernoulli(confidence), independently of the other
model, so that under H₀ (no difference) their predictions of an item are exchangeable and
many items repeat. The same predictions are then given to
:func:`calib_frames.estimators.paired_comparison` in two forms:

* **rows**: one row per (model, item);
* **count-weighted rows**: the items with the same (confidence, outcome) of both models
  merged into one item whose weight is their count (about 100 items a run).

Per form and metric (accuracy, ECE, Brier): the share of runs whose permutation p-value is
≤ 0.05 (nominal 0.05; ``--runs`` runs, binomial sd √(0.05·0.95/runs)), the mean width of the
95 % paired-bootstrap interval of the difference, and between the two forms, per run, the
mean |p_rows − p_weighted| and the share of runs whose verdicts (p ≤ 0.05) agree. With
weights as frequencies the two forms test the same data the same way, so they differ by
Monte-Carlo noise only (``--replicates`` draws).

Run: ``python benchmarks/sim_paired_weights.py [--runs 400]`` (``--quick``: seconds). The
README's "Weights are frequencies" and BENCHMARKS.md quote its output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))
from calib_frames.estimators import paired_comparison
from calib_frames.estimators.paired import PAIRED_METRICS

GRID = np.array([0.55, 0.65, 0.75, 0.85, 0.95])
"""The confidences of both models (so that items repeat)."""


def items(rng: np.random.Generator, runs: int, n: int) -> pl.DataFrame:
    """One row per (run, item): both models' confidences and outcomes, equally good."""
    p_a, p_b = rng.choice(GRID, (runs, n)), rng.choice(GRID, (runs, n))
    return pl.DataFrame(
        {
            "run": np.repeat(np.arange(runs), n),
            "p_a": p_a.ravel(),
            "y_a": (rng.random(p_a.shape) < p_a).ravel(),
            "p_b": p_b.ravel(),
            "y_b": (rng.random(p_b.shape) < p_b).ravel(),
        }
    )


def long(wide: pl.DataFrame, weight: str | None) -> pl.DataFrame:
    """The predictions table of ``paired_comparison``: one row per (run, model, item)."""
    wide = wide.with_row_index("item")
    extra = [weight] if weight else []
    return pl.concat(
        wide.select(
            "run", "item", pl.lit(m).alias("model"), pl.col(f"p_{m}").alias("confidence"),
            pl.col(f"y_{m}").alias("correct"), *extra,
        )
        for m in ("a", "b")
    )  # fmt: skip


def mean(series: pl.Series) -> float:
    return float(series.cast(pl.Float64).mean())  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--n", type=int, default=1000, help="items per run")
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a few seconds: tiny sizes")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.n, args.replicates = 20, 200, 200
    rng = np.random.default_rng(args.seed)
    wide = items(rng, args.runs, args.n)
    merged = wide.group_by("run", "p_a", "y_a", "p_b", "y_b").agg(w=pl.len().cast(pl.Float64))
    forms = {
        "rows": long(wide, None),
        "count-weighted rows": long(merged.sort(pl.all()), "w"),
    }
    results = {}
    for name, frame in forms.items():
        out = paired_comparison(
            frame,
            by="run",
            weight="w" if "w" in frame.columns else None,
            replicates=args.replicates,
            seed=args.seed,
        )
        assert isinstance(out, pl.DataFrame)
        results[name] = out.sort("run")
    print(f"## Two equally good models: {args.runs} runs × {args.n} items, "
          f"{args.replicates} replicates")  # fmt: skip
    print("| form | items a run | metric | permutation p ≤ 0.05 (nominal 0.05) | "
          "95% interval width |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name, out in results.items():
        size = forms[name].height / 2 / args.runs
        for m in PAIRED_METRICS:
            rate = mean(out[f"{m}_p_value"] <= 0.05)
            width = mean(out[f"{m}_difference_ci_high"] - out[f"{m}_difference_ci_low"])
            print(f"| {name} | {size:.0f} | {m} | {rate:.3f} | {width:.4f} |")
    rows, weighted = results["rows"], results["count-weighted rows"]
    print("\n| metric | mean abs(p_rows − p_weighted) | verdicts agree |")
    print("|---|---|---|")
    for m in PAIRED_METRICS:
        gap = mean((rows[f"{m}_p_value"] - weighted[f"{m}_p_value"]).abs())
        agree = mean((rows[f"{m}_p_value"] <= 0.05) == (weighted[f"{m}_p_value"] <= 0.05))
        print(f"| {m} | {gap:.4f} | {agree:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
