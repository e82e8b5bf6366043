"""Multi-class and multi-label calibration, reduced to the binary engine.

Every multi-class notion of calibration is a binary calibration problem over a
*row transform* of the class probabilities, so each one is
:func:`~calib_frames.calibration_metrics` (or :func:`~calib_frames.bin_statistics`)
on a derived (confidence, correct) frame, sometimes with the class as an extra key:

=========================  ==========================================================
notion                     binary problem
=========================  ==========================================================
top-label                  per item: confidence = the largest class probability,
                           correct = whether that class is the label
class-wise                 per (item, class): confidence = p_k, correct = [label = k],
                           grouped by class; then averaged over classes: ``macro``
                           (plain mean) and ``weighted`` (by class frequency among
                           the labels)
all probabilities pooled   per (item, class) as above, *not* grouped by class: every
                           probability of every item in one reliability diagram (the
                           GPT-4 technical report's Figure 8, "calibration of all
                           probabilities")
multi-label                class-wise and pooled as above, with any number of labels
                           per item and probabilities that need not sum to one
=========================  ==========================================================

Input layouts
-------------
``probabilities`` names either

* **one list/array column** (``List``/``Array`` of floats, class k at position k),
  with ``label`` an integer column of class indices; the class key is ``UInt32``;
* **several columns** (``["p_cat", "p_dog"]``, one per class), with ``label`` holding
  either the class's column name or its 0-based position; the class key is the column
  name; for multi-label data ``label`` is a parallel list of boolean columns;
* **one numeric column of a long frame** (one row per item and class, like an options
  frame), with ``item`` naming the item column, ``class_column`` the class column and
  ``label`` a boolean column that is true on the label's row(s).

:func:`class_probability_rows` turns each layout into the canonical long table
(keys…, ``item``, ``class``, ``probability``, ``is_label``) that every function here
reduces.

Conventions
-----------
* **Ties for the top label** go to the first class in class order: the lowest
  position (list and wide layouts, like ``numpy.argmax`` and ``torch.argmax``) or the
  smallest class value (long layout).
* **Probabilities must sum to one** per item within ``tolerance`` (default 1e-4,
  absolute) and every item needs exactly one label; otherwise a :class:`DataError`
  names the item count and shows one item with its keys and sum. With
  ``renormalize=True`` every item's probabilities are divided by their sum first (a
  zero sum stays an error). Multi-label data (``multilabel=True``) skip both checks.
* **Brier score** (multi-class): ``mean over items of Σ_k (p_k − [label = k])²``, the
  sum over classes, as lm-evaluation-harness' ``brier_score`` and scikit-learn's
  ``brier_score_loss(..., scale_by_half=False)`` (scikit-learn's default halves it
  for two classes, where it equals the binary Brier score). Range [0, 2].
* **Log loss**: mean of −ln p_label (nats), as scikit-learn's ``log_loss``.

The top-label and sum checks group the rows by item (all rows of a group in memory);
the class-wise and pooled statistics are the additive bin statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from calib_frames.binning import BinsLike
from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.metrics.calibration import calibration_metrics
from calib_frames.validation import Frame, as_lazy, group_keys, require_columns, return_like

__all__ = [
    "MULTICLASS_COLUMNS",
    "class_probability_rows",
    "classwise_metrics",
    "multiclass_calibration",
    "pooled_metrics",
    "top_label_metrics",
]

ITEM, CLASS, PROBABILITY, IS_LABEL = "item", "class", "probability", "is_label"
_ORDER = "__mc_order"

MULTICLASS_COLUMNS: dict[str, pl.DataType] = {
    "items": pl.UInt64(),
    "classes": pl.UInt32(),
    "accuracy": pl.Float64(),
    "top_label_ece": pl.Float64(),
    "classwise_ece": pl.Float64(),
    "classwise_ece_weighted": pl.Float64(),
    "pooled_ece": pl.Float64(),
    "brier": pl.Float64(),
    "log_loss": pl.Float64(),
}
"""Columns of :func:`multiclass_calibration` after the group keys."""


@dataclass(frozen=True)
class _Long:
    rows: pl.LazyFrame  # keys…, item, class, probability, is_label, order; checked
    keys: list[str]
    class_name: str
    multilabel: bool


def class_probability_rows(
    frame: Frame,
    *,
    probabilities: str | Sequence[str],
    label: str | Sequence[str],
    by: str | Sequence[str] | None = None,
    item: str | None = None,
    class_column: str | None = None,
    classes: Sequence[str] | None = None,
    renormalize: bool = False,
    tolerance: float = 1e-4,
    multilabel: bool = False,
) -> Frame:
    """The canonical long table: one row per (item, class) with its probability.

    Parameters
    ----------
    frame
        DataFrame or LazyFrame in one of the layouts of the module docstring.
    probabilities
        A list/array column, a sequence of per-class columns, or (long layout) the
        probability column.
    label
        The label: class index (list layout), class column name or index (wide), a
        boolean column (long); for multi-label wide data a sequence of boolean columns
        parallel to ``probabilities``.
    by
        Group key column(s) kept in front.
    item
        Item id column (long layout: required; others: default the row number).
    class_column
        Class column of the long layout.
    classes
        Wide layout: the class names of the probability columns, in their order
        (default: the column names); labels and the ``class`` key use them.
    renormalize
        Divide each item's probabilities by their sum instead of requiring sum 1.
    tolerance
        Largest accepted ``|Σ_k p_k − 1|`` per item.
    multilabel
        Allow any number of labels per item and any probability sums.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Keys…, ``item``, ``class``, ``probability`` (Float64), ``is_label`` (Boolean),
        one row per item and class. ``class`` is the long layout's class column name
        when given.

    Raises
    ------
    TableError
        Missing columns, wrong dtypes, a layout that does not fit the arguments.
    DataError
        Probabilities outside [0, 1] or null, items whose probabilities do not sum to
        one, items without exactly one label, labels that name no class (raised when
        the result is collected).
    ArgumentError
        Bad ``tolerance``.

    See Also
    --------
    multiclass_calibration : the summary of every notion per group.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.multiclass import class_probability_rows
    >>> df = pl.DataFrame({"probs": [[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]], "label": [0, 1]})
    >>> class_probability_rows(df, probabilities="probs", label="label")
    shape: (6, 4)
    ┌──────┬───────┬─────────────┬──────────┐
    │ item ┆ class ┆ probability ┆ is_label │
    │ ---  ┆ ---   ┆ ---         ┆ ---      │
    │ u32  ┆ u32   ┆ f64         ┆ bool     │
    ╞══════╪═══════╪═════════════╪══════════╡
    │ 0    ┆ 0     ┆ 0.7         ┆ true     │
    │ 0    ┆ 1     ┆ 0.2         ┆ false    │
    │ 0    ┆ 2     ┆ 0.1         ┆ false    │
    │ 1    ┆ 0     ┆ 0.3         ┆ false    │
    │ 1    ┆ 1     ┆ 0.3         ┆ true     │
    │ 1    ┆ 2     ┆ 0.4         ┆ false    │
    └──────┴───────┴─────────────┴──────────┘
    """
    long: _Long = _long(
        frame,
        probabilities=probabilities,
        label=label,
        by=by,
        item=item,
        class_column=class_column,
        classes=classes,
        renormalize=renormalize,
        tolerance=tolerance,
        multilabel=multilabel,
    )
    out = long.rows.select(*long.keys, ITEM, long.class_name, PROBABILITY, IS_LABEL)
    return return_like(frame, out)


def top_label_metrics(
    frame: Frame,
    *,
    probabilities: str | Sequence[str],
    label: str,
    by: str | Sequence[str] | None = None,
    item: str | None = None,
    class_column: str | None = None,
    classes: Sequence[str] | None = None,
    bins: BinsLike = 10,
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
    frame, probabilities, label, by, item, class_column, classes, renormalize, tolerance
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
    long: _Long = _long(
        frame,
        probabilities=probabilities,
        label=label,
        by=by,
        item=item,
        class_column=class_column,
        classes=classes,
        renormalize=renormalize,
        tolerance=tolerance,
        multilabel=False,
    )
    top = _top_label(long)
    metrics = calibration_metrics(
        top, confidence="confidence", correct="correct", by=long.keys, bins=bins
    )
    return return_like(frame, metrics)


def classwise_metrics(
    frame: Frame,
    *,
    probabilities: str | Sequence[str],
    label: str | Sequence[str],
    by: str | Sequence[str] | None = None,
    item: str | None = None,
    class_column: str | None = None,
    classes: Sequence[str] | None = None,
    bins: BinsLike = 10,
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
    frame, probabilities, label, by, item, class_column, classes, renormalize, tolerance, \
    multilabel
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
    long: _Long = _long(
        frame,
        probabilities=probabilities,
        label=label,
        by=by,
        item=item,
        class_column=class_column,
        classes=classes,
        renormalize=renormalize,
        tolerance=tolerance,
        multilabel=multilabel,
    )
    metrics = calibration_metrics(
        long.rows,
        confidence=PROBABILITY,
        correct=IS_LABEL,
        by=[*long.keys, long.class_name],
        bins=bins,
    )
    return return_like(frame, metrics)


def pooled_metrics(
    frame: Frame,
    *,
    probabilities: str | Sequence[str],
    label: str | Sequence[str],
    by: str | Sequence[str] | None = None,
    item: str | None = None,
    class_column: str | None = None,
    classes: Sequence[str] | None = None,
    bins: BinsLike = 10,
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
    frame, probabilities, label, by, item, class_column, classes, renormalize, tolerance, \
    multilabel
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
    long: _Long = _long(
        frame,
        probabilities=probabilities,
        label=label,
        by=by,
        item=item,
        class_column=class_column,
        classes=classes,
        renormalize=renormalize,
        tolerance=tolerance,
        multilabel=multilabel,
    )
    metrics = calibration_metrics(
        long.rows, confidence=PROBABILITY, correct=IS_LABEL, by=long.keys, bins=bins
    )
    return return_like(frame, metrics)


def multiclass_calibration(
    frame: Frame,
    *,
    probabilities: str | Sequence[str],
    label: str | Sequence[str],
    by: str | Sequence[str] | None = None,
    item: str | None = None,
    class_column: str | None = None,
    classes: Sequence[str] | None = None,
    bins: BinsLike = 10,
    renormalize: bool = False,
    tolerance: float = 1e-4,
    multilabel: bool = False,
) -> Frame:
    """Every multi-class calibration summary per group, in one table.

    Parameters
    ----------
    frame, probabilities, label, by, item, class_column, classes, renormalize, tolerance, \
    multilabel
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
        columns and the log loss are null and ``brier`` sums over labels.

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
    long: _Long = _long(
        frame,
        probabilities=probabilities,
        label=label,
        by=by,
        item=item,
        class_column=class_column,
        classes=classes,
        renormalize=renormalize,
        tolerance=tolerance,
        multilabel=multilabel,
    )
    keys: list[str] = long.keys
    per_class = calibration_metrics(
        long.rows, confidence=PROBABILITY, correct=IS_LABEL, by=[*keys, long.class_name], bins=bins
    )
    count = pl.nth(len(keys) + 1)  # the metrics table's row count (first column after keys)
    frequency = pl.col("accuracy") * pl.col("weight")
    classwise = per_class.group_by(keys or pl.lit(0).alias("__mc_all")).agg(
        count.max().cast(pl.UInt64).alias("items"),
        pl.len().cast(pl.UInt32).alias("classes"),
        pl.col("ece").mean().alias("classwise_ece"),
        ((pl.col("ece") * frequency).sum() / frequency.sum()).alias("classwise_ece_weighted"),
        (pl.col("brier") * count).sum().alias("__mc_brier_sum"),
    )
    pooled = calibration_metrics(
        long.rows, confidence=PROBABILITY, correct=IS_LABEL, by=keys, bins=bins
    ).select(*keys, pl.col("ece").alias("pooled_ece"))
    if multilabel:
        top = classwise.select(
            *keys,
            pl.lit(None, dtype=pl.Float64).alias("accuracy"),
            pl.lit(None, dtype=pl.Float64).alias("top_label_ece"),
            pl.lit(None, dtype=pl.Float64).alias("log_loss"),
        )
    else:
        top = calibration_metrics(
            _top_label(long), confidence="confidence", correct="correct", by=keys, bins=bins
        ).select(*keys, "accuracy", pl.col("ece").alias("top_label_ece"))
        nll = (
            long.rows.filter(pl.col(IS_LABEL))
            .group_by(keys or pl.lit(0).alias("__mc_all"))
            .agg((-pl.col(PROBABILITY).log()).mean().alias("log_loss"))
        )
        top = _join(top, nll.drop("__mc_all", strict=False), keys)
    summary = _join(classwise.drop("__mc_all", strict=False), pooled, keys)
    summary = _join(summary, top, keys).with_columns(
        (pl.col("__mc_brier_sum") / pl.col("items")).alias("brier")
    )
    result = (
        summary.select(*keys, *MULTICLASS_COLUMNS).sort(keys)
        if keys
        else summary.select(*MULTICLASS_COLUMNS)
    )
    return return_like(frame, result)


# -- the long rows ----------------------------------------------------------------------


def _join(left: pl.LazyFrame, right: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    if keys:
        return left.join(right, on=keys, how="left", nulls_equal=True)
    return left.join(right, how="cross")


def _top_label(long: _Long) -> pl.LazyFrame:
    """Per item: the largest probability and whether its class (ties: first) is the label."""
    ranked = pl.col(IS_LABEL).sort_by([PROBABILITY, _ORDER], descending=[True, False])
    return long.rows.group_by(*long.keys, ITEM).agg(
        pl.col(PROBABILITY).max().alias("confidence"), ranked.first().alias("correct")
    )


def _long(
    frame: Frame,
    *,
    probabilities: str | Sequence[str],
    label: str | Sequence[str],
    by: str | Sequence[str] | None,
    item: str | None,
    class_column: str | None,
    classes: Sequence[str] | None,
    renormalize: bool,
    tolerance: float,
    multilabel: bool,
) -> _Long:
    if not isinstance(tolerance, int | float) or not tolerance >= 0:
        raise ArgumentError(f"tolerance= must be a number >= 0, got {tolerance!r}")
    for name, flag in (("renormalize", renormalize), ("multilabel", multilabel)):
        if not isinstance(flag, bool):  # an int would switch the meaning of the columns
            raise ArgumentError(f"{name}= takes True or False, got {flag!r}")
    source = as_lazy(frame)
    keys: list[str] = group_keys(by)
    schema = source.collect_schema()
    reserved = (ITEM, CLASS, PROBABILITY, IS_LABEL, "confidence", "correct", _ORDER)
    clashes = [k for k in keys if k in reserved]
    if clashes:
        raise TableError(
            f"group key(s) {clashes} clash with the long table's columns {list(reserved[:6])}; "
            "rename them first"
        )
    if not isinstance(label, str) and not (
        isinstance(label, Sequence) and all(isinstance(c, str) for c in label)
    ):
        raise ArgumentError(f"label= names a column, got {label!r}")
    if isinstance(probabilities, str):
        if probabilities not in schema:
            require_columns(
                schema,
                {"probabilities": probabilities},
                numbers=["probabilities"],
                keys=keys,
                inputs_are_not_keys=True,
            )
        dtype = schema[probabilities]
        if isinstance(dtype, pl.List | pl.Array):
            rows, class_name = _from_list(
                source=source,
                schema=schema,
                probabilities=probabilities,
                label=label,
                keys=keys,
                item=item,
            )
        else:
            rows, class_name = _from_long(
                source=source,
                schema=schema,
                probability=probabilities,
                label=label,
                keys=keys,
                item=item,
                class_column=class_column,
            )
    else:
        rows, class_name = _from_wide(
            source=source,
            schema=schema,
            columns=list(probabilities),
            classes=None if classes is None else list(classes),
            label=label,
            keys=keys,
            item=item,
            multilabel=multilabel,
        )
    item_keys = [*keys, ITEM]
    if renormalize:
        total = pl.col(PROBABILITY).sum().over(item_keys)
        rows = rows.with_columns(
            pl.when(total > 0).then(pl.col(PROBABILITY) / total).otherwise(pl.col(PROBABILITY))
        )
    checked = _item_checks(
        rows, keys, multilabel=multilabel, tolerance=tolerance, renormalized=renormalize
    )
    return _Long(checked, keys, class_name, multilabel)


def _from_list(
    *,
    source: pl.LazyFrame,
    schema: pl.Schema,
    probabilities: str,
    label: str | Sequence[str],
    keys: list[str],
    item: str | None,
) -> tuple[pl.LazyFrame, str]:
    if not isinstance(label, str):
        raise ArgumentError(
            "with a list column of probabilities, label= is one column of class indices"
        )
    require_columns(schema, {"label": label}, keys=keys, inputs_are_not_keys=True)
    if not schema[label].is_integer():
        raise TableError(
            f"column {label!r} (label) must hold integer class indices, got {schema[label]}"
        )
    item_expr = pl.col(item) if item is not None else pl.int_range(pl.len(), dtype=pl.UInt32)
    if item is not None:
        require_columns(schema, {"item": item}, keys=keys, inputs_are_not_keys=True)
    dtype = schema[probabilities]
    inner = dtype.inner if isinstance(dtype, pl.List | pl.Array) else None
    if not (isinstance(inner, pl.DataType) and inner.is_numeric()):
        raise TableError(
            f"column {probabilities!r} (probabilities) must hold lists of numbers, "
            f"got {schema[probabilities]}"
        )
    values = pl.col(probabilities)
    if isinstance(schema[probabilities], pl.Array):
        values = values.arr.to_list()
    rows = (
        source.select(
            *keys,
            item_expr.alias(ITEM),
            values.cast(pl.List(pl.Float64)).alias(PROBABILITY),
            pl.col(label).alias("__mc_label"),
        )
        .with_columns(pl.int_ranges(pl.col(PROBABILITY).list.len(), dtype=pl.UInt32).alias(CLASS))
        .explode(PROBABILITY, CLASS)
        .with_columns(
            (pl.col(CLASS).cast(pl.Int64) == pl.col("__mc_label").cast(pl.Int64))
            .fill_null(False)
            .alias(IS_LABEL),
            pl.col(CLASS).alias(_ORDER),
        )
    )
    return _with_label_checks(rows, "__mc_label", pl.col("__mc_label").cast(pl.Int64), keys), CLASS


def _from_wide(
    *,
    source: pl.LazyFrame,
    schema: pl.Schema,
    columns: list[str],
    label: str | Sequence[str],
    keys: list[str],
    item: str | None,
    multilabel: bool,
    classes: list[str] | None,
) -> tuple[pl.LazyFrame, str]:
    names = columns if classes is None else classes
    if len(names) != len(columns) or len(set(names)) != len(names):
        raise ArgumentError(
            f"classes= must name each of the {len(columns)} probability columns' class once, "
            f"got {classes}"
        )
    if len(columns) < 2:
        raise ArgumentError(f"probabilities= needs at least two class columns, got {columns}")
    if len(set(columns)) != len(columns):
        raise ArgumentError(f"probabilities= names a column twice: {columns}")
    roles = {f"probabilities[{i}]": c for i, c in enumerate(columns)}
    require_columns(schema, roles, numbers=list(roles), keys=keys, inputs_are_not_keys=True)
    item_expr = pl.col(item) if item is not None else pl.int_range(pl.len(), dtype=pl.UInt32)
    order = pl.col(CLASS).replace_strict(columns, list(range(len(columns))), return_dtype=pl.UInt32)
    rename = pl.col(CLASS).replace_strict(columns, names, return_dtype=pl.String)
    if not isinstance(label, str):
        labels = list(label)
        if not multilabel or len(labels) != len(columns):
            raise ArgumentError(
                "label= as a list of columns is for multi-label data (multilabel=True), "
                "one boolean column per probability column"
            )
        label_roles = {f"label[{i}]": c for i, c in enumerate(labels)}
        require_columns(
            schema, label_roles, numeric=list(label_roles), keys=keys, inputs_are_not_keys=True
        )
        probs = source.select(*keys, item_expr.alias(ITEM), *columns).unpivot(
            index=[*keys, ITEM], on=columns, variable_name=CLASS, value_name=PROBABILITY
        )
        hits = source.select(
            *keys,
            item_expr.alias(ITEM),
            *[
                _is_label(pl.col(lab), schema[lab]).alias(col)
                for lab, col in zip(labels, columns, strict=True)
            ],
        ).unpivot(index=[*keys, ITEM], on=columns, variable_name=CLASS, value_name=IS_LABEL)
        rows = probs.join(hits, on=[*keys, ITEM, CLASS], nulls_equal=True).with_columns(
            pl.col(PROBABILITY).cast(pl.Float64),
            order.alias(_ORDER),
            rename.alias(CLASS),
            pl.lit(0).alias("__mc_label"),
        )
        return _with_label_checks(rows, "__mc_label", pl.lit(0), keys), CLASS
    require_columns(schema, {"label": label}, keys=keys, inputs_are_not_keys=True)
    label_dtype = schema[label]
    if label_dtype.is_integer():
        label_index = pl.col("__mc_label").cast(pl.Int64)
    elif label_dtype in (pl.String, pl.Categorical, pl.Enum) or isinstance(
        label_dtype, pl.Enum | pl.Categorical
    ):
        label_index = (
            pl.col("__mc_label")
            .cast(pl.String)
            .replace_strict(names, list(range(len(names))), default=None, return_dtype=pl.Int64)
        )
    else:
        raise TableError(
            f"column {label!r} (label) must hold class names or 0-based positions, "
            f"got {label_dtype}"
        )
    rows = (
        source.select(*keys, item_expr.alias(ITEM), pl.col(label).alias("__mc_label"), *columns)
        .unpivot(
            index=[*keys, ITEM, "__mc_label"],
            on=columns,
            variable_name=CLASS,
            value_name=PROBABILITY,
        )
        .with_columns(
            pl.col(PROBABILITY).cast(pl.Float64), order.alias(_ORDER), rename.alias(CLASS)
        )
        .with_columns(
            (pl.col(_ORDER).cast(pl.Int64) == label_index).fill_null(False).alias(IS_LABEL)
        )
        .with_columns(label_index.alias("__mc_label_index"))
    )
    return _with_label_checks(
        rows, "__mc_label", pl.col("__mc_label_index"), keys, n_classes=len(columns)
    ), CLASS


def _from_long(
    *,
    source: pl.LazyFrame,
    schema: pl.Schema,
    probability: str,
    label: str | Sequence[str],
    keys: list[str],
    item: str | None,
    class_column: str | None,
) -> tuple[pl.LazyFrame, str]:
    if item is None or class_column is None or not isinstance(label, str):
        raise ArgumentError(
            f"probabilities={probability!r} is not a list column: for a long frame (one row per "
            "item and class) give item=, class_column= and label= (a boolean is-label column)"
        )
    require_columns(
        schema,
        {"probabilities": probability, "item": item, "class_column": class_column, "label": label},
        numbers=["probabilities"],
        numeric=["label"],
        keys=keys,
        inputs_are_not_keys=True,
    )
    if class_column in keys:
        raise TableError(f"class_column={class_column!r} is also a group key")
    rows = source.select(
        *keys,
        pl.col(item).alias(ITEM),
        pl.col(class_column),
        pl.col(probability).cast(pl.Float64).alias(PROBABILITY),
        _is_label(pl.col(label), schema[label]).alias(IS_LABEL),
        pl.col(class_column).alias(_ORDER),
        pl.lit(0).alias("__mc_label"),
    )
    return rows.with_columns(pl.lit(False).alias("__mc_bad_label")), class_column


def _is_label(label: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """A boolean label as is; numbers 0/1 as False/True, anything else null (an error)."""
    if dtype == pl.Boolean:
        return label
    value = label.cast(pl.Float64)
    return pl.when(value == 1.0).then(True).when(value == 0.0).then(False)


def _with_label_checks(
    rows: pl.LazyFrame, label: str, index: pl.Expr, keys: list[str], n_classes: int | None = None
) -> pl.LazyFrame:
    """Flag rows whose item's label names no class (null or out of range)."""
    limit = pl.col(CLASS).count().over([*keys, ITEM]) if n_classes is None else pl.lit(n_classes)
    bad = index.is_null() | (index < 0) | (index >= limit)
    return rows.with_columns(bad.alias("__mc_bad_label"))


def _item_checks(
    rows: pl.LazyFrame, keys: list[str], *, multilabel: bool, tolerance: float, renormalized: bool
) -> pl.LazyFrame:
    """The rows, raising the item checks when (anything built on them is) collected.

    The checks aggregate the rows per item; their result, an empty frame with the
    rows' schema, is concatenated in front of the rows, so every consumer of the rows
    runs them before its own aggregation finishes. The long rows are cached (held in
    memory) because the checks and the metrics both read them.
    """
    item_keys = [*keys, ITEM]
    p = pl.col(PROBABILITY)
    rows = rows.cache()
    items = rows.group_by(item_keys).agg(
        p.sum().alias("__mc_sum"),
        pl.col(IS_LABEL).sum().alias("__mc_labels"),
        pl.col(IS_LABEL).is_null().sum().alias("__mc_null_labels"),
        p.is_between(0.0, 1.0).not_().fill_null(True).sum().alias("__mc_bad_p"),
        pl.col("__mc_bad_label").any().alias("__mc_bad_label"),
        pl.len().alias("__mc_classes"),
    )
    most = pl.col("__mc_classes").max()
    # ragged lists ([0.5, 0.5] next to [0.2, 0.3, 0.5]) would give the short items no
    # row for the missing classes: classwise counts silently differ between classes
    ragged = pl.col("__mc_classes") < (most.over(keys) if keys else most)
    sum_bad = (pl.col("__mc_sum") - 1.0).abs() > tolerance
    if renormalized:
        sum_bad = pl.col("__mc_sum") <= 0
    problems: list[tuple[str, pl.Expr]] = [
        ("have a probability outside [0, 1] (or null/NaN)", pl.col("__mc_bad_p") > 0),
        ("have a label that is not boolean (or null)", pl.col("__mc_null_labels") > 0),
        ("have fewer class probabilities than other items of their group", ragged),
    ]
    if not multilabel:
        problems += [
            ("have a label that names no class", pl.col("__mc_bad_label")),
            (
                "have no positive probability sum to renormalise"
                if renormalized
                else f"have probabilities that do not sum to 1 (within {tolerance:g}; "
                "pass renormalize=True to divide by the sum)",
                sum_bad & (pl.col("__mc_bad_p") == 0),
            ),
            (
                "do not have exactly one label",
                (pl.col("__mc_labels") != 1) & ~pl.col("__mc_bad_label"),
            ),
        ]

    schema = rows.collect_schema()

    def raise_if_bad(frame: pl.DataFrame) -> pl.DataFrame:
        counts = frame.select(
            *[expr.sum().alias(str(i)) for i, (_, expr) in enumerate(problems)]
        ).row(0)
        messages = []
        for (problem, expr), count in zip(problems, counts, strict=True):
            if not count:
                continue
            example = frame.filter(expr).row(0, named=True)
            where = ", ".join(f"{k}={example[k]!r}" for k in item_keys)
            messages.append(
                f"{count:,} of {frame.height:,} items {problem}; e.g. {where} "
                f"(probability sum {example['__mc_sum']!r}, {example['__mc_labels']} label(s))"
            )
        if messages:
            raise DataError("invalid class probabilities:\n  " + "\n  ".join(messages))
        return pl.DataFrame(schema=schema)

    return pl.concat([items.map_batches(raise_if_bad, schema=schema), rows])
