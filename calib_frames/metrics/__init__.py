"""Closed-form reductions of the additive tables: one row of metrics per group.

* :mod:`~calib_frames.metrics.calibration`: bin statistics → accuracy, ECE, MCE, RMSCE,
  the Brier score and its decomposition, log loss (the formulas, once, in
  :func:`~calib_frames.metrics.calibration.metric_expressions`).
* :mod:`~calib_frames.metrics.tokens`: NLL sums → perplexity, bits per token, byte and
  word perplexity, bits per byte.
"""

from calib_frames.metrics.calibration import (
    BinSums,
    calibration_metrics,
    metric_expressions,
    metrics_from_bin_statistics,
)
from calib_frames.metrics.tokens import perplexity, perplexity_from_nll_sums

__all__ = [
    "BinSums",
    "calibration_metrics",
    "metric_expressions",
    "metrics_from_bin_statistics",
    "perplexity",
    "perplexity_from_nll_sums",
]
