"""The reductions the harness integrations share: predictions → one group's metrics."""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

import calib_frames as cf
from calib_frames.binning import BinsLike

__all__ = ["choice_metrics", "group_metrics"]


def group_metrics(
    predictions: pl.DataFrame,
    *,
    bins: BinsLike = 10,
    log_confidence: str | None = None,
) -> dict[str, float]:
    """:func:`~calib_frames.calibration_metrics` of one group, as floats; NaN when empty.

    A harness reports a metric over no prediction as NaN (inspect and lm-eval both do),
    where the frame API's convention is 0.0 for the error metrics: with no prediction
    every value here is NaN, so a run whose samples all lacked a confidence reads as
    "no number", not as "perfectly calibrated". A null (every metric when the weights sum to
    0) is NaN too.
    """
    if predictions.height == 0:
        return {name: math.nan for name in ("ece", "mce", "brier", "log_loss", "accuracy")}
    row = cf.calibration_metrics(predictions, bins=bins, log_confidence=log_confidence).row(
        0, named=True
    )
    return {name: math.nan if value is None else float(value) for name, value in row.items()}


def choice_metrics(
    logliks: Sequence[Sequence[float]],
    golds: Sequence[Sequence[int]],
    *,
    bins: int = 10,
) -> dict[str, float]:
    """:func:`group_metrics` of multiple-choice questions given by their option scores.

    Question i offers ``len(logliks[i])`` options with those log-likelihoods; its gold
    options are ``golds[i]`` (an index outside the options counts as no gold). The
    prediction is the argmax option (ties to the first), its confidence the softmax over
    the question's options and it is correct when it is a gold option:
    :func:`~calib_frames.sources.choice_predictions` with ``no_gold="wrong"`` (a question
    without a gold option is answered wrong, as lm-eval and lighteval score it), reduced
    from the exact log-probability (``log_confidence``).
    """
    questions = pl.DataFrame(
        {
            "loglik": [[float(v) for v in row] for row in logliks],
            "golds": [[int(g) for g in row] for row in golds],
        },
        schema={"loglik": pl.List(pl.Float64), "golds": pl.List(pl.Int64)},
    )
    options = (
        questions.with_row_index("question")
        .with_columns(pl.int_ranges(pl.col("loglik").list.len()).alias("option"))
        .explode("loglik", "option")
        .with_columns(pl.col("golds").list.contains(pl.col("option")).alias("is_gold"))
        .drop("golds")
    )
    predictions = cf.sources.choice_predictions(options, no_gold="wrong")
    return group_metrics(predictions, bins=bins, log_confidence="log_confidence")
