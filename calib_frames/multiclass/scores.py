"""The proper scores of class probabilities per group: the multi-class Brier score and log loss.

With N items, class probabilities p_ik and labels y_ik ∈ {0, 1} (one-hot for
single-label data):

* **Brier score** ``(1/N) Σ_i Σ_k (p_ik − y_ik)²``, the sum over classes, as
  lm-evaluation-harness' ``brier_score`` and scikit-learn's
  ``brier_score_loss(..., scale_by_half=False)`` (scikit-learn's default halves it for
  two classes, where it equals the binary Brier score). Range [0, 2]; for multi-label
  data the sum runs over every label.
* **Log loss** ``(1/N) Σ_i −ln p_i,label`` (nats), as scikit-learn's ``log_loss``;
  null for multi-label data.
"""

from __future__ import annotations

import polars as pl

from calib_frames.multiclass.inputs import IS_LABEL, ITEM, PROBABILITY, ClassRows
from calib_frames.validation import working

__all__ = ["brier_and_log_loss"]

_ALL = working("all")


def brier_and_log_loss(long: ClassRows) -> pl.LazyFrame:
    """Keys…, ``brier`` and ``log_loss`` of the long rows, one row per group (formulas above)."""
    p = pl.col(PROBABILITY)
    squared = (p - pl.col(IS_LABEL).cast(pl.Float64)) ** 2
    log_loss = (
        pl.lit(None, dtype=pl.Float64)
        if long.multilabel
        else (-p.log()).filter(pl.col(IS_LABEL)).mean()
    )
    scores = long.rows.group_by(long.keys or pl.lit(0).alias(_ALL)).agg(
        (squared.sum() / pl.col(ITEM).n_unique()).alias("brier"), log_loss.alias("log_loss")
    )
    return scores.drop(_ALL, strict=False)
