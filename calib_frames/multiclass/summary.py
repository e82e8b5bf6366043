"""Every multi-class calibration summary per group, in one table."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from calib_frames.arguments import check_arguments
from calib_frames.binning import BINS, BinsLike
from calib_frames.multiclass.inputs import LAYOUT, ClassProbabilities
from calib_frames.multiclass.reductions import reduced_metrics
from calib_frames.multiclass.scores import brier_and_log_loss
from calib_frames.schema import MULTICLASS_CALIBRATION
from calib_frames.validation import Frame, return_like, working

__all__ = ["multiclass_calibration"]

_ALL = working("all")


@check_arguments(bins=BINS, **LAYOUT)
def multiclass_calibration(
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
    """Every multi-class calibration summary per group, in one table.

    The ECEs are those of :func:`top_label_metrics`, :func:`classwise_metrics` (the
    macro mean over classes, and the mean weighted by each class's frequency among the
    labels) and :func:`pooled_metrics`, all with one binning; the Brier score and log
    loss are those of :mod:`calib_frames.multiclass.scores`.

    Parameters
    ----------
    predictions, probabilities, label, item, class_column, by, classes, renormalize, \
    tolerance, multilabel
        As :func:`class_probability_rows`.
    bins
        As :func:`~calib_frames.calibration_metrics` (one binning for all notions).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``items`` (UInt64), ``classes`` (UInt32), ``accuracy`` (top-1),
        ``top_label_ece``, ``classwise_ece`` (macro mean over classes),
        ``classwise_ece_weighted`` (weighted by class frequency among the labels),
        ``pooled_ece`` (all probabilities), ``brier`` (Σ over classes, mean over items)
        and ``log_loss`` (mean −ln p_label). With ``multilabel=True`` the top-label
        columns and the log loss are null and ``brier`` sums over labels. An empty
        frame without keys gives one row with 0 items and classes and null metrics
        (the binary tables' "no weight, no number": never a perfect 0.0).

    Raises
    ------
    TableError, DataError, ArgumentError
        As :func:`class_probability_rows`.

    See Also
    --------
    top_label_metrics, classwise_metrics, pooled_metrics : the full tables.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.multiclass import multiclass_calibration
    >>> df = pl.DataFrame({"probs": [[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]], "label": [0, 1]})
    >>> out = multiclass_calibration(df, probabilities="probs", label="label")
    >>> out = out.with_columns(pl.col("top_label_ece", "brier").round(12))
    >>> out.select("items", "classes", "accuracy", "top_label_ece", "brier").rows()
    [(2, 3, 0.5, 0.35, 0.44)]
    """
    layout = ClassProbabilities(
        probabilities, label, item, class_column, by, classes, renormalize, tolerance, multilabel
    )
    long = layout.rows(predictions)
    keys = long.keys
    per_class = reduced_metrics(long, "classwise", bins)
    count = pl.nth(len(keys) + 1)  # the metrics table's row count (first column after keys)
    frequency = pl.col("accuracy") * pl.col("weight")
    summary = (
        per_class.group_by(keys or pl.lit(0).alias(_ALL))
        .agg(
            count.max().cast(pl.UInt64).alias("items"),
            pl.len().cast(pl.UInt32).alias("classes"),
            pl.col("ece").mean().alias("classwise_ece"),
            ((pl.col("ece") * frequency).sum() / frequency.sum()).alias("classwise_ece_weighted"),
        )
        .drop(_ALL, strict=False)
    )
    pooled = reduced_metrics(long, "pooled", bins).select(*keys, pl.col("ece").alias("pooled_ece"))
    if multilabel:
        top = summary.select(
            *keys,
            pl.lit(None, dtype=pl.Float64).alias("accuracy"),
            pl.lit(None, dtype=pl.Float64).alias("top_label_ece"),
        )
    else:
        top = reduced_metrics(long, "top_label", bins).select(
            *keys, "accuracy", pl.col("ece").alias("top_label_ece")
        )
    for table in (pooled, top, brier_and_log_loss(long)):
        summary = (
            summary.join(table, on=keys, how="left", nulls_equal=True)
            if keys
            else summary.join(table, how="cross")
        )
    # no items, no number, as in the binary tables (the frame without keys keeps its one
    # row; a group without rows has none)
    errors = ["accuracy", "classwise_ece", "classwise_ece_weighted", "pooled_ece", "brier"]
    if not multilabel:
        errors += ["top_label_ece", "log_loss"]
    empty = pl.col("items").fill_null(0) == 0
    result = summary.select(*keys, *MULTICLASS_CALIBRATION.names).with_columns(
        pl.col("items").fill_null(0),
        *(pl.when(~empty).then(pl.col(name)).alias(name) for name in errors),
    )
    return return_like(predictions, result.sort(keys) if keys else result)
