"""The one reducer: long class-probability rows → the binary prediction rows of a notion.

Each multi-class notion of calibration is the binary calibration of derived
(confidence, correct) rows, grouped by the keys (and the class for class-wise):

=============  ==========================================================  ==============
reduction      one binary prediction per                                   grouped by
=============  ==========================================================  ==============
``top_label``  item: the largest probability; is its class (ties: the      keys
               first in class order) the label?
``classwise``  (item, class): p_k; is k a label?                           keys, class
``pooled``     (item, class): p_k; is k a label?                           keys
=============  ==========================================================  ==============

Multi-label data reduce class-wise or pooled (the rows allow any number of labels).
:func:`reduced_metrics` is :func:`~calib_frames.calibration_metrics` of those rows; the
public functions are one call of it each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from calib_frames.arguments import COLUMN, check_arguments
from calib_frames.binning import BINS, BinsLike
from calib_frames.metrics.calibration import calibration_metrics
from calib_frames.multiclass.inputs import (
    IS_LABEL,
    ITEM,
    LAYOUT,
    ORDER,
    PROBABILITY,
    ClassProbabilities,
    ClassRows,
)
from calib_frames.validation import Frame, return_like

__all__ = [
    "binary_rows",
    "classwise_metrics",
    "pooled_metrics",
    "reduced_metrics",
    "top_label_metrics",
]

Reduction = Literal["top_label", "classwise", "pooled"]


def binary_rows(long: ClassRows, reduction: Reduction) -> tuple[pl.LazyFrame, list[str]]:
    """The binary prediction rows of ``reduction`` and the keys they are grouped by.

    The rows are keys…[, class], ``probability`` (the confidence) and ``is_label`` (the
    outcome), as in the table of the module docstring.
    """
    if reduction == "top_label":
        ranked = pl.col(IS_LABEL).sort_by([PROBABILITY, ORDER], descending=[True, False])
        top = long.rows.group_by(*long.keys, ITEM).agg(
            pl.col(PROBABILITY).max(), ranked.first().alias(IS_LABEL)
        )
        return top, long.keys
    if reduction == "classwise":
        return long.rows, [*long.keys, long.class_name]
    return long.rows, long.keys


def reduced_metrics(long: ClassRows, reduction: Reduction, bins: BinsLike) -> pl.LazyFrame:
    """:func:`~calib_frames.calibration_metrics` of the binary rows of ``reduction``."""
    rows, keys = binary_rows(long, reduction)
    return calibration_metrics(rows, confidence=PROBABILITY, correct=IS_LABEL, by=keys, bins=bins)


def _metrics(
    predictions: Frame, layout: ClassProbabilities, reduction: Reduction, bins: BinsLike
) -> Frame:
    return return_like(predictions, reduced_metrics(layout.rows(predictions), reduction, bins))


@check_arguments(
    bins=BINS, **{**{k: v for k, v in LAYOUT.items() if k != "multilabel"}, "label": COLUMN}
)
def top_label_metrics(
    predictions: Frame,
    *,
    probabilities: str | Sequence[str],
    label: str,
    item: str | None = None,
    class_column: str | None = None,
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    classes: Sequence[str] | None = None,
    renormalize: bool = False,
    tolerance: float = 1e-4,
) -> Frame:
    """Top-label calibration: :func:`calibration_metrics` of (max probability, hit).

    Per item the confidence is the largest class probability and ``correct`` says
    whether that class (ties: first in class order) is the label; the result is the
    binary metrics table of those pairs per group (``accuracy`` is the top-1
    accuracy). Grouping by item holds each group's rows in memory.

    Parameters
    ----------
    predictions, probabilities, label, item, class_column, by, classes, renormalize, \
    tolerance
        As :func:`class_probability_rows`.
    bins
        As :func:`~calib_frames.calibration_metrics`.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        The :func:`~calib_frames.calibration_metrics` table, one row per group.

    Raises
    ------
    TableError, DataError, ArgumentError
        As :func:`class_probability_rows`.

    See Also
    --------
    classwise_metrics, pooled_metrics, multiclass_calibration

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.multiclass import top_label_metrics
    >>> df = pl.DataFrame({"probs": [[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]], "label": [0, 1]})
    >>> top_label_metrics(df, probabilities="probs", label="label").select("accuracy", "ece")
    shape: (1, 2)
    ┌──────────┬──────┐
    │ accuracy ┆ ece  │
    │ ---      ┆ ---  │
    │ f64      ┆ f64  │
    ╞══════════╪══════╡
    │ 0.5      ┆ 0.35 │
    └──────────┴──────┘
    """
    layout = ClassProbabilities(
        probabilities, label, item, class_column, by, classes, renormalize, tolerance, False
    )
    return _metrics(predictions, layout, "top_label", bins)


@check_arguments(bins=BINS, **LAYOUT)
def classwise_metrics(
    predictions: Frame,
    *,
    probabilities: str | Sequence[str],
    label: str | Sequence[str],
    item: str | None = None,
    class_column: str | None = None,
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    classes: Sequence[str] | None = None,
    renormalize: bool = False,
    tolerance: float = 1e-4,
    multilabel: bool = False,
) -> Frame:
    """Class-wise calibration: the binary metrics of (p_k, [label = k]) per class.

    :func:`~calib_frames.calibration_metrics` of the long rows with the class as the
    last group key. For a two-class problem the row of class 1 is exactly the binary
    calibration of p₁ against the outcome. Additive (no per-group memory) apart from
    the item checks.

    Parameters
    ----------
    predictions, probabilities, label, item, class_column, by, classes, renormalize, \
    tolerance, multilabel
        As :func:`class_probability_rows`.
    bins
        As :func:`~calib_frames.calibration_metrics`.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        The metrics table with keys…, ``class`` first; ``accuracy`` is the class's
        frequency among the labels.

    Raises
    ------
    TableError, DataError, ArgumentError
        As :func:`class_probability_rows`.

    See Also
    --------
    multiclass_calibration : the macro and frequency-weighted averages.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.multiclass import classwise_metrics
    >>> df = pl.DataFrame({"p_a": [0.8, 0.4], "p_b": [0.2, 0.6], "label": ["a", "b"]})
    >>> m = classwise_metrics(df, probabilities=["p_a", "p_b"], classes=["a", "b"], label="label")
    >>> m.select("class", "accuracy", "ece")
    shape: (2, 3)
    ┌───────┬──────────┬─────┐
    │ class ┆ accuracy ┆ ece │
    │ ---   ┆ ---      ┆ --- │
    │ str   ┆ f64      ┆ f64 │
    ╞═══════╪══════════╪═════╡
    │ a     ┆ 0.5      ┆ 0.3 │
    │ b     ┆ 0.5      ┆ 0.3 │
    └───────┴──────────┴─────┘
    """
    layout = ClassProbabilities(
        probabilities, label, item, class_column, by, classes, renormalize, tolerance, multilabel
    )
    return _metrics(predictions, layout, "classwise", bins)


@check_arguments(bins=BINS, **LAYOUT)
def pooled_metrics(
    predictions: Frame,
    *,
    probabilities: str | Sequence[str],
    label: str | Sequence[str],
    item: str | None = None,
    class_column: str | None = None,
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    classes: Sequence[str] | None = None,
    renormalize: bool = False,
    tolerance: float = 1e-4,
    multilabel: bool = False,
) -> Frame:
    """Calibration of all class probabilities pooled (GPT-4 technical report, Fig. 8).

    Every (item, class) pair is one binary prediction (p_k, [label = k]); they are
    binned together, whatever the class: :func:`~calib_frames.calibration_metrics` of
    the long rows grouped by ``by`` only. Its ``count`` is items × classes, its
    ``brier`` the multi-class Brier score divided by the number of classes.

    Parameters
    ----------
    predictions, probabilities, label, item, class_column, by, classes, renormalize, \
    tolerance, multilabel
        As :func:`class_probability_rows`.
    bins
        As :func:`~calib_frames.calibration_metrics`.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        The metrics table, one row per group.

    Raises
    ------
    TableError, DataError, ArgumentError
        As :func:`class_probability_rows`.

    See Also
    --------
    classwise_metrics : the same pairs grouped by class.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.multiclass import pooled_metrics
    >>> df = pl.DataFrame({"p_a": [0.8, 0.4], "p_b": [0.2, 0.6], "label": ["p_a", "p_b"]})
    >>> pooled_metrics(df, probabilities=["p_a", "p_b"], label="label").select("ece")
    shape: (1, 1)
    ┌─────┐
    │ ece │
    │ --- │
    │ f64 │
    ╞═════╡
    │ 0.3 │
    └─────┘
    """
    layout = ClassProbabilities(
        probabilities, label, item, class_column, by, classes, renormalize, tolerance, multilabel
    )
    return _metrics(predictions, layout, "pooled", bins)
