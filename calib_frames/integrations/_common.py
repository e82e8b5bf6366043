"""The one reduction both harness integrations call: predictions → one group's metrics."""

from __future__ import annotations

import math

import polars as pl

from calib_frames.binning import BinsLike
from calib_frames.metrics import calibration_metrics

__all__ = ["group_metrics"]


def group_metrics(
    predictions: pl.DataFrame,
    *,
    bins: BinsLike = 10,
    log_confidence: str | None = None,
    mce_min_count: int = 10,
) -> dict[str, float]:
    """:func:`~calib_frames.calibration_metrics` of one group, as floats; NaN when empty.

    A harness reports a metric over no prediction as NaN (inspect and lm-eval both do),
    where the frame API's convention is 0.0 for the error metrics: with no prediction
    every value here is NaN, so a run whose samples all lacked a confidence reads as
    "no number", not as "perfectly calibrated". A null (``mce_guarded`` with no bin of
    ``mce_min_count`` predictions, every metric when the weights sum to 0) is NaN too.
    """
    if predictions.height == 0:
        return {name: math.nan for name in ("ece", "mce", "brier", "log_loss", "accuracy")}
    row = calibration_metrics(
        predictions, bins=bins, log_confidence=log_confidence, mce_min_count=mce_min_count
    ).row(0, named=True)
    return {name: math.nan if value is None else float(value) for name, value in row.items()}
