"""How often the leaderboard's order and mark are right, on simulated models of known truth.

Not a timing: each case draws predictions of models whose true scores are known, builds the
leaderboard (``cf.leaderboard`` of their bin statistics, as ``calib-frames report`` does:
200 bootstrap replicates, level 0.95) and counts, over independent runs, how often

* ``hedge``: a hedging model (accuracy 0.53, confidences U(0.50, 0.56), calibrated, so an
  ECE near 0) is ranked above a sharper one (true probabilities Beta(8, 2), accuracy 0.80,
  confidences 0.05 above them, so an ECE about 0.05 and a better Brier score); and how
  often the order by pooled ECE (the leaderboard's order before) would have done it;
* ``equal``: of two models drawn alike (Beta(6, 2), calibrated, independent answers), the
  second is marked ``indistinguishable_from_best`` (the target: at least the level);
* ``equal_same_questions``: the same, but the two answer the same questions and agree on
  80% of them beyond chance (positively correlated scores: the mark's independence
  assumption makes it conservative there);
* ``equal_ten``: ten models drawn alike: the share of the nine behind the best that are
  marked, and how often all nine are (the mark holds for every model at once);
* ``apart_0.01`` / ``apart_0.02``: two calibrated models whose expected Brier scores differ
  by about 0.016 / 0.028: the worse one is marked (the rate of missing a real difference);
* ``five_ranks``: five calibrated models whose expected Brier scores are 0.004–0.010
  apart: the share of them whose rank interval holds their true rank (its coverage).

Every model has 4 tasks × 500 predictions. Run from the repository root::

    python benchmarks/sim_leaderboard.py --runs 400
    python benchmarks/sim_leaderboard.py --quick

The figures of a run are quoted in ``calib_frames/comparison/across_tasks.py`` and in the
README ("Leaderboard" in Conventions).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))
import calib_frames as cf

TASKS = 4
PER_TASK = 500
REPLICATES = 200
LEVEL = 0.95

Model = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]
"""rng, number of predictions → (confidences, outcomes)."""


def calibrated(a: float, b: float, shift: float = 0.0) -> Model:
    """True probabilities Beta(a, b); confidences ``shift`` above them (clipped)."""

    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        truth = rng.beta(a, b, n)
        confidence = np.clip(truth + shift, 0.001, 0.999)
        return confidence, rng.uniform(size=n) < truth

    return draw


def hedger(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Confidences U(0.50, 0.56), each the true probability: accuracy 0.53, calibrated."""
    confidence = rng.uniform(0.50, 0.56, n)
    return confidence, rng.uniform(size=n) < confidence


def frame(rng: np.random.Generator, models: dict[str, list[Model]]) -> pl.DataFrame:
    """Prediction rows of each model on its tasks (one ``Model`` per task)."""
    parts = []
    for name, per_task in models.items():
        for task, draw in enumerate(per_task):
            confidence, correct = draw(rng, PER_TASK)
            parts.append(
                pl.DataFrame(
                    {"model": name, "task": f"t{task}", "confidence": confidence,
                     "correct": correct}
                )
            )  # fmt: skip
    return pl.concat(parts)


def same_questions(rng: np.random.Generator, agree: float) -> pl.DataFrame:
    """Two calibrated models on the same questions, agreeing on ``agree`` of them beyond chance."""
    parts = []
    for task in range(TASKS):
        truth = rng.beta(6, 2, PER_TASK)
        first = rng.uniform(size=PER_TASK) < truth
        fresh = rng.uniform(size=PER_TASK) < truth
        second = np.where(rng.uniform(size=PER_TASK) < agree, first, fresh)
        for name, correct in (("a", first), ("b", second)):
            parts.append(
                pl.DataFrame(
                    {"model": name, "task": f"t{task}", "confidence": truth, "correct": correct}
                )
            )
    return pl.concat(parts)


def board(rows: pl.DataFrame, seed: int) -> pl.DataFrame:
    """The leaderboard of the rows, as the report builds it."""
    stats = cf.bin_statistics(rows, by=["model", "task"])
    out = cf.leaderboard(stats, replicates=REPLICATES, level=LEVEL, seed=seed)
    assert isinstance(out, pl.DataFrame)
    return out


def above(result: pl.DataFrame, first: str, second: str, column: str) -> bool:
    """Whether ``first`` has a lower ``column`` than ``second``."""
    values = dict(result.select("model", column).iter_rows())
    return bool(values[first] < values[second])


def marked(result: pl.DataFrame) -> tuple[float, float]:
    """The share of the models behind the first that are marked, and whether all are."""
    behind = result.filter(pl.col("rank") > 1)["indistinguishable_from_best"]
    return float(behind.mean() or 0.0), float(behind.all())


def run_case(case: str, run: int) -> tuple[float, ...]:
    """One run of ``case``: the figures its row of the table counts."""
    rng = np.random.default_rng([run, sum(map(ord, case))])
    if case == "hedge":
        result = board(frame(rng, {"hedger": [hedger] * TASKS,
                                   "sharp": [calibrated(8, 2, 0.05)] * TASKS}), run)  # fmt: skip
        return (above(result, "hedger", "sharp", "rank"),
                above(result, "hedger", "sharp", "ece"))  # fmt: skip
    if case == "equal":
        result = board(frame(rng, {"a": [calibrated(6, 2)] * 4, "b": [calibrated(6, 2)] * 4}), run)
        return marked(result)[:1]
    if case == "equal_same_questions":
        return marked(board(same_questions(rng, 0.8), run))[:1]
    if case == "equal_ten":
        names = [f"m{i}" for i in range(10)]
        return marked(board(frame(rng, dict.fromkeys(names, [calibrated(6, 2)] * 4)), run))
    if case == "five_ranks":  # true ranks 1…5: Beta(a, 2) with a falling
        spread = {f"r{rank}": [calibrated(a, 2)] * 4 for rank, a in enumerate(FIVE, 1)}
        result = board(frame(rng, spread), run)
        truth = pl.col("model").str.slice(1).cast(pl.UInt32)
        inside = (pl.col("rank_ci_low") <= truth) & (truth <= pl.col("rank_ci_high"))
        return (float(result.select(inside.mean()).item()),)
    # two calibrated models whose expected Brier scores differ: E[q(1 − q)] of Beta(a, b)
    other = {"apart_0.01": (4.6, 2), "apart_0.02": (3.6, 2)}[case]
    result = board(frame(rng, {"a": [calibrated(6, 2)] * 4, "b": [calibrated(*other)] * 4}), run)
    return (float(dict(result.select("model", "indistinguishable_from_best").iter_rows())["b"]),)


FIVE = (6, 5.2, 4.6, 4.1, 3.7)
"""The Beta(a, 2) of the five models of ``five_ranks``, best first."""


def expected_brier(a: float, b: float) -> float:
    """E[q(1 − q)] for q ~ Beta(a, b): the Brier score of a calibrated model."""
    return a * b / ((a + b) * (a + b + 1))


CASES = {
    "hedge": "the hedger ranked above the sharper model; by pooled ECE",
    "equal": "two equal models (independent answers): the second marked",
    "equal_same_questions": "two equal models (the same questions): the second marked",
    "equal_ten": "ten equal models: share of the nine behind the best marked; all nine",
    "apart_0.01": (
        f"Brier {expected_brier(6, 2):.3f} vs {expected_brier(4.6, 2):.3f}: the worse marked"
    ),
    "apart_0.02": (
        f"Brier {expected_brier(6, 2):.3f} vs {expected_brier(3.6, 2):.3f}: the worse marked"
    ),
    "five_ranks": (
        "Brier "
        + ", ".join(f"{expected_brier(a, 2):.3f}" for a in FIVE)
        + ": the true rank inside the rank interval"
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=400, help="runs per case (default 400)")
    parser.add_argument("--quick", action="store_true", help="10 runs per case")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    args = parser.parse_args(argv)
    runs = 10 if args.quick else args.runs
    print(f"{TASKS} tasks × {PER_TASK} predictions a model, {REPLICATES} replicates, "
          f"level {LEVEL}, {runs} runs per case\n")  # fmt: skip
    print("| case | what is counted | rate |\n| --- | --- | --- |")
    for case in args.cases:
        figures = np.array([run_case(case, run) for run in range(runs)], dtype=float)
        rates = " / ".join(f"{value:.3f}" for value in figures.mean(axis=0))
        print(f"| {case} | {CASES[case]} | {rates} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
