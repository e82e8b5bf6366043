"""The tables :mod:`calib_frames.sources` produces, as :class:`~calib_frames.schema.Table` specs.

Keys are recorded by position, as everywhere in calib_frames: the columns before a spec's
first column. ``pl.Unknown`` marks a column whose dtype is the caller's (the option and
question ids keep the input's dtypes). The per-question specs name the question and option
columns by their defaults (``question``, ``option``); called with other names, the tables
keep those names.

Examples
--------
>>> import polars as pl
>>> from calib_frames.sources import choice_predictions
>>> from calib_frames.sources.tables import CHOICE_PREDICTIONS
>>> opts = pl.DataFrame({"model": "m", "question": [1, 1], "option": [0, 1],
...                      "loglik": [-0.5, -1.0], "is_gold": [True, False]})
>>> CHOICE_PREDICTIONS.keys(choice_predictions(opts, by="model").collect_schema())
['model']
"""

from __future__ import annotations

import polars as pl

from calib_frames.schema import Table

__all__ = ["BRIER_MULTICLASS", "CHOICE_PREDICTIONS", "LM_EVAL_COMPARISON", "OPTION_PROBABILITIES"]

F64 = pl.Float64()
ANY = pl.Unknown()

CHOICE_PREDICTIONS = Table(
    "choice-predictions table",
    {
        "scoring": pl.String(),
        "question": ANY,
        "options": pl.UInt32(),
        "gold_options": pl.UInt32(),
        "prediction": ANY,
        "confidence": F64,
        "log_confidence": F64,
        "correct": pl.Boolean(),
    },
    built_by="sources.choice_predictions",
)
"""One row per (keys…, scoring, question)."""

OPTION_PROBABILITIES = Table(
    "option-probabilities table",
    {
        "scoring": pl.String(),
        "question": ANY,
        "option": ANY,
        "probability": F64,
        "log_probability": F64,
        "is_answer": pl.Boolean(),
        "is_prediction": pl.Boolean(),
    },
    built_by="sources.option_probabilities",
)
"""One row per (keys…, scoring, question, option)."""

BRIER_MULTICLASS = Table(
    "multi-class Brier table",
    {"scoring": pl.String(), "count": pl.UInt64(), "brier_multiclass": F64},
    built_by="sources.brier_multiclass",
)
"""One row per (keys…, scoring)."""

_PAIRS = (
    "accuracy",
    "acc_norm",
    "acc_bytes",
    "brier_multiclass",
    "word_perplexity",
    "byte_perplexity",
    "bits_per_byte",
)

LM_EVAL_COMPARISON = Table(
    "lm-eval comparison table",
    {
        "output_type": pl.String(),
        "count": pl.UInt64(),
        **{c: F64 for name in _PAIRS for c in (name, f"{name}_lm_eval")},
        "mean_confidence": F64,
        "ece": F64,
        "tokens": pl.Int64(),
        "note": pl.String(),
    },
    built_by="sources.lm_eval_comparison",
)
"""One row per (model, task, run): calib_frames' value and lm-eval's (``*_lm_eval``)."""
