"""Make the inputs the report's pictures are looked at with: 3, 12, 50 and 2,000 models.

Run from the repository root (nothing is shipped: the files go to ``--out``, default
``scale_inputs/``)::

    .venv/bin/python data/make_scale_inputs.py --out /tmp/scale
    .venv/bin/calib-frames report /tmp/scale/m12/predictions.parquet \
        --token-file /tmp/scale/m12/tokens.parquet --by model,task --out /tmp/scale/r12

Each size is a folder ``m<models>`` holding ``predictions.parquet`` (``model``, ``task``,
``confidence``, ``correct``) and, but for the sweep, ``tokens.parquet`` (``model``,
``task``, ``doc_id``, ``nll``, ``tokens``, ``bytes``) of one perplexity task
(``wikitext``):

=======  =======  =====  ==========  ==========================================================
folder   models   tasks  per group   what it is for
=======  =======  =====  ==========  ==========================================================
m3       3        4      400         a small comparison
m12      12       8      300         a leaderboard (long task names, two cells missing, one
                                     cell of 8 predictions)
m50      50       20     150         a large leaderboard (a few cells missing or small)
m2000    2,000    2      120         a checkpoint sweep: every model differs from the others
                                     by its size or its step only
=======  =======  =====  ==========  ==========================================================

``--per-group N`` writes ``m<models>xN`` with N predictions per model × task instead (the
memory runs of ``benchmarks/bench_report_memory.py``).

Model names are long checkpoint names that differ in the middle and at the end, as
training sweeps name them: ``acme-instruct-7b-checkpoint-012000`` beside
``acme-instruct-70b-checkpoint-012000``. Each model has a known calibration map: the
probability of being right at confidence c is ``c - bias`` (over- or underconfident by
``bias``, drawn per model from [-0.15, 0.15]), or, for every fifth model, *mixed*:
overconfident by 0.12 above 0.7 and underconfident by 0.12 below (a mean gap near 0).
Everything is drawn from ``numpy.random.default_rng(models)``: a run makes the same
files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

SIZES = {3: (4, 400), 12: (8, 300), 50: (20, 150), 2000: (2, 120)}
"""models → (tasks, predictions per model × task)."""

TASKS = [
    "mmlu_college_physics",
    "mmlu_college_chemistry",
    "arc_challenge",
    "hellaswag",
    "truthfulqa_mc2",
    "winogrande",
    "gsm8k_cot_self_consistency",
    "mmlu_high_school_government_and_politics",
    "piqa",
    "boolq",
    "openbookqa",
    "sciq",
    "logiqa",
    "mathqa",
    "race",
    "siqa",
    "lambada_openai",
    "commonsense_qa",
    "mmlu_abstract_algebra",
    "mmlu_anatomy",
]


def model_names(count: int) -> list[str]:
    """``count`` checkpoint names that differ in the middle (size) and at the end (step)."""
    families = ["acme-instruct", "acme-base", "zephyr-chat", "orca-mini"]
    sizes = ["7b", "70b", "13b", "8b"]
    names = []
    step = 0
    while len(names) < count:
        step += 1
        for family in families:
            for size in sizes:
                names.append(f"{family}-{size}-checkpoint-{step * 12_000:06d}")
    return names[:count]


def predictions(count: int, rng: np.random.Generator, per_group: int | None = None) -> pl.DataFrame:
    """The prediction rows of ``count`` models (see the module docstring)."""
    tasks, default = SIZES[count]
    per_group = per_group or default
    names = model_names(count)
    task_names = TASKS[:tasks]
    cells = pl.DataFrame(
        {
            "model": np.repeat(names, tasks),
            "task": np.tile(task_names, count),
            "_model": np.repeat(np.arange(count), tasks),
        }
    )
    sizes = np.full(cells.height, per_group)
    if count in (12, 50):  # a small cell, and missing cells (left out below)
        sizes[5] = 8
        sizes[[7, 17]] = 0
    model = np.repeat(cells.get_column("_model").to_numpy(), sizes)
    rows = len(model)
    bias = rng.uniform(-0.15, 0.15, count)
    mixed = np.arange(count) % 5 == 4
    confidence = rng.uniform(0.3, 1.0, rows)
    truth = np.where(
        mixed[model],
        np.where(confidence > 0.7, confidence - 0.12, confidence + 0.12),
        confidence - bias[model],
    )
    return pl.DataFrame(
        {
            "model": np.repeat(cells.get_column("model").to_numpy(), sizes),
            "task": np.repeat(cells.get_column("task").to_numpy(), sizes),
            "confidence": confidence,
            "correct": rng.random(rows) < np.clip(truth, 0, 1),
        }
    )


def tokens(count: int, rng: np.random.Generator, documents: int = 20) -> pl.DataFrame:
    """Sequence-level losses of one perplexity task, ``documents`` per model."""
    names = model_names(count)
    n = count * documents
    return pl.DataFrame(
        {
            "model": np.repeat(names, documents),
            "task": "wikitext",
            "doc_id": np.tile(np.arange(documents), count),
            "nll": rng.gamma(30, 2, n),
            "tokens": rng.integers(20, 40, n),
            "bytes": rng.integers(80, 160, n),
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("scale_inputs"), help="folder")
    parser.add_argument("--models", type=int, nargs="*", default=list(SIZES), choices=list(SIZES))
    parser.add_argument(
        "--per-group", type=int, default=None, help="predictions per model × task (memory runs)"
    )
    args = parser.parse_args(argv)
    for count in args.models:
        rng = np.random.default_rng(count)
        folder = args.out / (f"m{count}" + (f"x{args.per_group}" if args.per_group else ""))
        folder.mkdir(parents=True, exist_ok=True)
        preds = predictions(count, rng, args.per_group)
        preds.write_parquet(folder / "predictions.parquet")
        written = [f"predictions.parquet ({preds.height:,} rows)"]
        if count != 2000:
            losses = tokens(count, rng)
            losses.write_parquet(folder / "tokens.parquet")
            written.append(f"tokens.parquet ({losses.height:,} rows)")
        print(f"{folder}: {', '.join(written)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
