"""Generate the synthetic data sets shipped with calib_frames, with known ground truth.

Run from the repository root (files are written next to this script)::

    .venv/bin/python data/make_synthetic.py

Everything is drawn from ``numpy.random.default_rng(SEED)`` in a fixed order, so every run
produces the same values; the parquet files are written with fixed settings (zstd level 3,
statistics on, one row group) so that, with the same polars version, they are byte-identical.

synthetic_predictions.parquet
-----------------------------
Columns: ``model`` (String), ``task`` (String), ``confidence`` (Float64), ``correct`` (Boolean).
3 models x 4 tasks x 2,000 rows = 24,000 rows, grouped by model then task.

Top-label confidences of a four-option multiple-choice setting. For every (model, task) pair,
the stated confidence is drawn independently as::

    c = 0.25 + 0.75 * X,   X ~ Beta(a, b)        (so 0.25 < c < 1)

with the task-specific (a, b) below, which sets the task difficulty:

    task          a     b     E[c]
    arithmetic    5.0   1.5   0.827   (easy)
    trivia        2.0   2.0   0.625
    reading       3.0   1.5   0.750
    code          1.5   3.0   0.500   (hard)

The outcome is ``correct ~ Bernoulli(p_true(c))``, with the model's true calibration map::

    calibrated      p_true(c) = c            (perfectly calibrated)
    overconfident   p_true(c) = c ** 1.6     (p_true < c for every c in (0, 1))
    underconfident  p_true(c) = c ** 0.6     (p_true > c for every c in (0, 1))

Because the power maps lie strictly below / above the diagonal on (0, 1), the sign of the
overconfidence (mean confidence - accuracy) is known for every task, not only on average:
positive for ``overconfident``, zero in expectation for ``calibrated``, and negative for
``underconfident``. Expected values of mean confidence - accuracy, E[c - p_true(c)]:

    task          calibrated   overconfident   underconfident
    arithmetic    0            +0.0821         -0.0631
    trivia        0            +0.1372         -0.1224
    reading       0            +0.1064         -0.0870
    code          0            +0.1559         -0.1527

(Computed by numerical integration over the Beta densities; see ``expected_gap``.)

synthetic_tokens.parquet
------------------------
Columns: ``model``, ``task`` (String), ``doc_id`` (Int64), ``nll`` (Float64, summed negative
log-likelihood of the document in nats), ``tokens``, ``bytes``, ``words`` (Int64, all > 0).
3 models x 4 tasks x 200 documents = 2,400 sequence-level rows.

The corpus is shared: for each task, 200 documents (``doc_id`` 0..199) are generated once and
scored by all three models with the same tokenizer, so ``tokens``, ``bytes`` and ``words`` are
identical across models for a given (task, doc_id) and only ``nll`` differs. Per document::

    tokens = max(1, round(LogNormal(log(median_tokens[task]), 0.6)))
    bytes  = max(1, round(tokens * N(4.0, 0.3)))     # ~4 UTF-8 bytes per token
    words  = max(1, round(tokens * N(0.75, 0.06)))   # ~0.75 words per token

with median_tokens = arithmetic 80, trivia 40, reading 400, code 250. Each token's negative
log-likelihood is drawn independently as ``Gamma(shape=0.8, scale=mu / 0.8)`` (mean ``mu``,
heavily right-skewed like real per-token losses) and summed over the document's tokens.
The true mean per-token NLL ``mu`` depends on the model only (same for every task):

    model           mu (nats/token)   true perplexity exp(mu)
    calibrated      2.0               7.389
    overconfident   2.3               9.974
    underconfident  2.6               13.464

So perplexity, bits per token and bits per byte order the models
calibrated < overconfident < underconfident on every task. (The model names are reused from the
predictions file only for convenience; they say nothing about the language-model quality.)
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl

SEED = 20_240_611
OUT_DIR = Path(__file__).parent

MODELS: dict[str, float] = {"calibrated": 1.0, "overconfident": 1.6, "underconfident": 0.6}
"""Model name -> exponent gamma of the true calibration map p_true(c) = c ** gamma."""

TASK_BETA: dict[str, tuple[float, float]] = {
    "arithmetic": (5.0, 1.5),
    "trivia": (2.0, 2.0),
    "reading": (3.0, 1.5),
    "code": (1.5, 3.0),
}
"""Task name -> (a, b) of the Beta distribution of X, where confidence = 0.25 + 0.75 * X."""

CONF_LOW = 0.25
ROWS_PER_GROUP = 2_000

MODEL_NLL: dict[str, float] = {"calibrated": 2.0, "overconfident": 2.3, "underconfident": 2.6}
"""Model name -> true mean per-token NLL in nats."""

TASK_MEDIAN_TOKENS: dict[str, float] = {
    "arithmetic": 80.0,
    "trivia": 40.0,
    "reading": 400.0,
    "code": 250.0,
}
DOCS_PER_TASK = 200
TOKEN_SIGMA = 0.6
GAMMA_SHAPE = 0.8
BYTES_PER_TOKEN = (4.0, 0.3)
WORDS_PER_TOKEN = (0.75, 0.06)


def true_probability(confidence: np.ndarray, model: str) -> np.ndarray:
    """Return the true probability of being correct for a stated confidence under ``model``."""
    return confidence ** MODELS[model]


def make_predictions(rng: np.random.Generator) -> pl.DataFrame:
    """Draw the multiple-choice predictions for every (model, task) pair."""
    frames: list[pl.DataFrame] = []
    for model in MODELS:
        for task, (a, b) in TASK_BETA.items():
            confidence = CONF_LOW + (1.0 - CONF_LOW) * rng.beta(a, b, size=ROWS_PER_GROUP)
            correct = rng.random(ROWS_PER_GROUP) < true_probability(confidence, model)
            frames.append(
                pl.DataFrame(
                    {
                        "model": [model] * ROWS_PER_GROUP,
                        "task": [task] * ROWS_PER_GROUP,
                        "confidence": confidence,
                        "correct": correct,
                    },
                    schema={
                        "model": pl.String,
                        "task": pl.String,
                        "confidence": pl.Float64,
                        "correct": pl.Boolean,
                    },
                )
            )
    return pl.concat(frames)


def make_tokens(rng: np.random.Generator) -> pl.DataFrame:
    """Draw a shared corpus per task and score it with every model (sequence-level rows)."""
    corpus: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for task, median in TASK_MEDIAN_TOKENS.items():
        tokens = np.maximum(
            1, np.rint(rng.lognormal(math.log(median), TOKEN_SIGMA, DOCS_PER_TASK))
        ).astype(np.int64)
        n_bytes = np.maximum(
            1, np.rint(tokens * rng.normal(*BYTES_PER_TOKEN, size=DOCS_PER_TASK))
        ).astype(np.int64)
        words = np.maximum(
            1, np.rint(tokens * rng.normal(*WORDS_PER_TOKEN, size=DOCS_PER_TASK))
        ).astype(np.int64)
        corpus[task] = (tokens, n_bytes, words)

    frames: list[pl.DataFrame] = []
    for model, mu in MODEL_NLL.items():
        for task, (tokens, n_bytes, words) in corpus.items():
            per_token = rng.gamma(GAMMA_SHAPE, mu / GAMMA_SHAPE, size=int(tokens.sum()))
            starts = np.concatenate(([0], np.cumsum(tokens)[:-1]))
            nll = np.add.reduceat(per_token, starts)
            frames.append(
                pl.DataFrame(
                    {
                        "model": [model] * DOCS_PER_TASK,
                        "task": [task] * DOCS_PER_TASK,
                        "doc_id": np.arange(DOCS_PER_TASK, dtype=np.int64),
                        "nll": nll,
                        "tokens": tokens,
                        "bytes": n_bytes,
                        "words": words,
                    },
                    schema={
                        "model": pl.String,
                        "task": pl.String,
                        "doc_id": pl.Int64,
                        "nll": pl.Float64,
                        "tokens": pl.Int64,
                        "bytes": pl.Int64,
                        "words": pl.Int64,
                    },
                )
            )
    return pl.concat(frames)


def expected_gap(model: str, task: str, grid: int = 200_001) -> float:
    """Return E[c - p_true(c)] for ``model`` on ``task`` by numerical integration."""
    a, b = TASK_BETA[task]
    x = np.linspace(0.0, 1.0, grid)[1:-1]
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    density = np.exp(log_norm + (a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x))
    c = CONF_LOW + (1.0 - CONF_LOW) * x
    integrand = (c - true_probability(c, model)) * density
    return float(np.sum(integrand) * (x[1] - x[0]))


def write(frame: pl.DataFrame, path: Path) -> None:
    """Write ``frame`` with fixed parquet settings so the output is byte-stable."""
    frame.write_parquet(
        path,
        compression="zstd",
        compression_level=3,
        statistics=True,
        row_group_size=1_000_000,
    )


def main() -> None:
    """Write both parquet files next to this script."""
    rng = np.random.default_rng(SEED)
    predictions = make_predictions(rng)
    tokens = make_tokens(rng)
    write(predictions, OUT_DIR / "synthetic_predictions.parquet")
    write(tokens, OUT_DIR / "synthetic_tokens.parquet")
    print(f"wrote {predictions.height} prediction rows and {tokens.height} token rows to {OUT_DIR}")


if __name__ == "__main__":
    main()
