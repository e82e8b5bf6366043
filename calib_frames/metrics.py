r"""Calibration metrics per group: closed-form reductions of the bin-statistics table.

Notation, for one group with bins b = 1 … M (rows i, weights w_i, confidence p_i,
outcome y_i ∈ {0, 1}):

* W_b = Σ_{i∈b} w_i,  N = Σ_b W_b,  p̄_b = Σ w_i p_i / W_b (mean confidence),
  ȳ_b = Σ w_i y_i / W_b (accuracy),  ȳ = Σ_b W_b ȳ_b / N

==========================  ===========================================================
column                      formula
==========================  ===========================================================
``n``, ``weight``           number of rows, N
``accuracy``                ȳ
``mean_confidence``         Σ_b W_b p̄_b / N
``overconfidence``          mean_confidence − accuracy (> 0: overconfident)
``ece``                     Σ_b (W_b/N)·|p̄_b − ȳ_b|                       (L1)
``rmsce``                   √( Σ_b (W_b/N)·(p̄_b − ȳ_b)² )                 (L2)
``mce``                     max over populated bins |p̄_b − ȳ_b|            (L∞)
``populated_bins``          number of bins with W_b > 0
``brier``                   (1/N)·Σ_i w_i (p_i − y_i)²
``reliability``             (1/N)·Σ_b W_b (p̄_b − ȳ_b)²   (= rmsce²)
``resolution``              (1/N)·Σ_b W_b (ȳ_b − ȳ)²
``uncertainty``             ȳ (1 − ȳ)
``within_bin_variance``     (1/N)·Σ_b Σ_{i∈b} w_i (p_i − p̄_b)²
``within_bin_covariance``   −(2/N)·Σ_b Σ_{i∈b} w_i (p_i − p̄_b)(y_i − ȳ_b)
``log_loss``                (1/N)·Σ_i w_i (−y_i ln p_i − (1 − y_i) ln(1 − p_i))
==========================  ===========================================================

The Brier score decomposes exactly (Murphy 1973, with the two within-bin terms of
Stephenson, Coelho and Jolliffe 2008, which binning introduces):

    brier = reliability − resolution + uncertainty + within_bin_variance + within_bin_covariance

How they are computed from the bin statistics (:mod:`calib_frames.stats`): split each bin
into its correct rows (weight W¹, S¹ = Σwp, residual sums R¹ = Σw(1 − p),
Q¹ = Σw(1 − p)²) and its wrong rows (W⁰, R⁰ = Σwp, Q⁰ = Σwp²). Then W_b p̄_b = S¹ + R⁰,
W_b(p̄_b − ȳ_b) = R⁰ − R¹, the Brier sum is Q¹ + Q⁰, and with the gap between the two
classes' mean confidences
Δ = 1 − R¹/W¹ − R⁰/W⁰:

* Σ_{i∈b} w_i (p_i − p̄_b)² = (Q¹ − (R¹)²/W¹) + (Q⁰ − (R⁰)²/W⁰) + W¹W⁰Δ²/W_b
* Σ_{i∈b} w_i (p_i − p̄_b)(y_i − ȳ_b) = W¹W⁰Δ/W_b

(a class with no weight drops out). Precision: ``brier`` and ``ece`` are sums of
residuals, so they keep full relative precision even for near-certain predictions
(10⁷ rows at p ≈ 1 − 10⁻⁶: both within 1e-15 relative of an exactly rounded reference).
The within-bin terms subtract sums of squared residuals, whose scale is the Brier score,
so each term is accurate to about 1e-13 × brier (absolute) and the terms add up to
``brier`` to about 12 significant digits.

Empty groups (N = 0): ``ece``, ``rmsce``, ``mce``, ``brier``, its terms and ``log_loss``
are 0.0; ``accuracy``, ``mean_confidence`` and ``overconfidence`` are NaN. ``log_loss``
is +inf when a prediction of confidence 1 (or 0) is wrong (right); it is not clipped.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from calib_frames.binning import BinsLike
from calib_frames.validation import CalibrationInputError, Frame, as_lazy, return_like
from calib_frames.stats import bin_statistics, stat_keys

__all__ = ["METRIC_COLUMNS", "calibration_metrics", "metrics_from_bin_statistics"]

W = pl.col("weight")
W1, W0 = pl.col("weight_correct"), pl.col("weight_wrong")
S1 = pl.col("sum_confidence_correct")
R1, R0 = pl.col("sum_residual_correct"), pl.col("sum_residual_wrong")
Q1, Q0 = pl.col("sum_sq_residual_correct"), pl.col("sum_sq_residual_wrong")
POPULATED = W > 0


def _per_n(total: pl.Expr) -> pl.Expr:
    """total / N, with 0.0 for an empty group (the convention for error metrics)."""
    n = W.sum()
    return pl.when(n > 0).then(total / n).otherwise(0.0)


def _mean(total: pl.Expr) -> pl.Expr:
    """total / N, NaN for an empty group (descriptive means have no value there)."""
    n = W.sum()
    return pl.when(n > 0).then(total / n).otherwise(float("nan"))


def _within_class(q: pl.Expr, r: pl.Expr, w: pl.Expr) -> pl.Expr:
    """Σ w (x − x̄)² of one outcome class of a bin from its residual sums (0 if empty)."""
    return pl.when(w > 0).then(q - r * r / w).otherwise(0.0)


def _class_gap() -> pl.Expr:
    """Δ = mean confidence of the correct rows − that of the wrong rows (0 if one is empty)."""
    both = (W1 > 0) & (W0 > 0)
    return pl.when(both).then(1.0 - R1 / W1 - R0 / W0).otherwise(0.0)


def _metric_expressions() -> dict[str, pl.Expr]:
    accuracy = W1.sum() / W.sum()
    gap = R0 - R1  # W_b·(p̄_b − ȳ_b)
    squared_gap = (gap * gap / W).filter(POPULATED).sum()
    resolution = (W * (W1 / W - accuracy) ** 2).filter(POPULATED).sum()
    between = (W1 * W0 / W).filter(POPULATED)
    delta = _class_gap().filter(POPULATED)
    variance = (_within_class(Q1, R1, W1) + _within_class(Q0, R0, W0)).sum() + (
        between * delta * delta
    ).sum()
    covariance = (between * delta).sum()
    return {
        "n": pl.col("count").sum(),
        "weight": W.sum(),
        "accuracy": _mean(W1.sum()),
        "mean_confidence": _mean((S1 + R0).sum()),
        "overconfidence": _mean(gap.sum()),
        "ece": _per_n(gap.abs().sum()),
        "rmsce": _per_n(squared_gap).sqrt(),
        "mce": (gap / W).filter(POPULATED).abs().max().fill_null(0.0),
        "populated_bins": POPULATED.sum().cast(pl.UInt32),
        "brier": _per_n((Q1 + Q0).sum()),
        "reliability": _per_n(squared_gap),
        "resolution": _per_n(resolution),
        "uncertainty": pl.when(W.sum() > 0).then(accuracy * (1 - accuracy)).otherwise(0.0),
        "within_bin_variance": _per_n(variance),
        "within_bin_covariance": _per_n(-2 * covariance),
        "log_loss": _per_n(pl.col("sum_log_loss").sum()),
    }


METRIC_COLUMNS = tuple(_metric_expressions())


def metrics_from_bin_statistics(stats: Frame) -> Frame:
    """Per-group calibration metrics from a bin-statistics table (see module docstring).

    The group keys are the table's non-statistic columns; the result has one row per
    group (one row in all when there are no keys), sorted by the keys.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.95] * 10, "correct": [True] * 6 + [False] * 4})
    >>> m = cf.metrics_from_bin_statistics(cf.bin_statistics(df))
    >>> round(m["ece"].item(), 12), round(m["brier"].item(), 12)
    (0.35, 0.3625)
    """
    lazy = as_lazy(stats)
    keys = stat_keys(lazy.collect_schema())
    clashes = [key for key in keys if key in METRIC_COLUMNS]
    if clashes:
        raise CalibrationInputError(
            f"group key(s) {clashes} clash with metric columns of the same name; "
            "rename them first, e.g. frame.rename({'n': 'n_key'})"
        )
    exprs = [expr.alias(name) for name, expr in _metric_expressions().items()]
    if keys:
        result = lazy.group_by(keys).agg(exprs).sort(keys, nulls_last=True)
    else:
        result = lazy.select(exprs)
    return return_like(stats, result)


def calibration_metrics(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
) -> Frame:
    """Accuracy, ECE, RMSCE, MCE, Brier score with its decomposition and log loss per group.

    ``metrics_from_bin_statistics(bin_statistics(...))`` in one call; the parameters are
    those of :func:`~calib_frames.bin_statistics`. Formulas and conventions: see
    :mod:`calib_frames.metrics`.

    See Also
    --------
    bin_statistics : the additive table the metrics are reduced from.
    sklearn.metrics.brier_score_loss : the same Brier score for one group.

    Examples
    --------
    Ten predictions at confidence 0.95 with six correct (10 bins):

    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.95] * 10, "correct": [True] * 6 + [False] * 4})
    >>> m = cf.calibration_metrics(df)
    >>> m.select("n", "accuracy", "ece", "mce", "populated_bins").rows()
    [(10, 0.6, 0.35, 0.35, 1)]
    """
    stats = bin_statistics(
        as_lazy(predictions),
        confidence=confidence,
        correct=correct,
        by=by,
        bins=bins,
        weight=weight,
    )
    return return_like(predictions, metrics_from_bin_statistics(stats))
