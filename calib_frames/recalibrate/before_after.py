"""Before/after tables: how much a recalibration map helped, per group, on honest rows.

* :func:`recalibrate` — fit and apply in one call, under one fitting scheme.
* :func:`recalibration_metrics` — one row per group: ECE, MCE, RMSCE, the Brier score
  and its decomposition terms, log loss (NLL) and accuracy, before (``<metric>_before``:
  the original confidence) and after (``<metric>_after``: the recalibrated one), both
  from :func:`calib_frames.calibration_metrics` with the same bins and joined on the
  keys.
* :func:`recalibration_reliability` — the reliability-diagram table of both, stacked:
  keys…, ``stage`` ("before"/"after"), then the columns of
  :func:`calib_frames.reliability_table`; the plot layer draws it with one colour per
  stage.
* :func:`top_option` — multiple choice: one row per question with the top option's
  probability before and after temperature scaling and whether it is gold, the input of
  the two tables for an options frame.

Honesty: the tables score only rows whose ``in_sample`` label (added by every
``apply_*``) is False, i.e. rows the map was not fitted on; ``in_sample=True`` scores
every row and says so in the ``in_sample`` column of the output.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Literal

import polars as pl

from calib_frames.arguments import COLUMN, FLAG, SEED, Integer, Options, check_arguments
from calib_frames.binning import BINS, BinsLike
from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.metrics.calibration import calibration_metrics
from calib_frames.recalibrate import histogram, isotonic, platt, temperature
from calib_frames.recalibrate._apply import OUTPUT
from calib_frames.recalibrate.splits import SCHEME, assign_folds
from calib_frames.stats import reliability_table
from calib_frames.validation import (
    Frame,
    as_lazy,
    describe_problem,
    group_keys,
    require_columns,
    return_like,
)

__all__ = [
    "COMPARED_METRICS",
    "STAGE",
    "recalibrate",
    "recalibration_metrics",
    "recalibration_reliability",
    "top_option",
]

STAGE = pl.Enum(["before", "after"])
"""The dtype of the ``stage`` column: an Enum that sorts "before" first."""

Method = Literal["temperature", "platt", "histogram", "isotonic"]

COMPARED_METRICS = (
    "accuracy",
    "mean_confidence",
    "ece",
    "mce",
    "rmsce",
    "brier",
    "reliability",
    "resolution",
    "uncertainty",
    "log_loss",
)
"""The metrics of :func:`recalibration_metrics`, each as ``<name>_before`` and ``<name>_after``."""


_METHODS: dict[str, tuple[Any, Any]] = {
    "temperature": (temperature.fit_temperature, temperature.apply_temperature),
    "platt": (platt.fit_platt, platt.apply_platt),
    "histogram": (histogram.fit_histogram, histogram.apply_histogram),
    "isotonic": (isotonic.fit_isotonic, isotonic.apply_isotonic),
}


_APPLY_OPTIONS = {
    "temperature": ("kind", "confidence", "question", "loglik", "epsilon"),
    "platt": ("confidence", "epsilon"),
    "histogram": ("confidence",),
    "isotonic": ("confidence", "interpolation"),
}


@check_arguments(
    item=COLUMN | None,
    output=OUTPUT,
    method=Options.of(Method),
    **SCHEME,
    folds=Integer(2) | None,
    seed=SEED,
)
def recalibrate(
    predictions: Frame,
    *,
    item: str | None = None,
    output: str = "recalibrated",
    by: str | Sequence[str] | None = None,
    method: Method = "temperature",
    split: str | None = None,
    fit_value: object = "fit",
    fold: str | None = None,
    in_sample: bool = False,
    folds: int | None = None,
    seed: int = 0,
    **options: Any,
) -> Frame:
    """Fit a recalibration map per group and apply it, honestly, in one call.

    Exactly one fitting scheme: ``split=`` (fit on the rows whose split column equals
    ``fit_value``, apply to every row; the fit rows are labelled in-sample), ``folds=``
    with ``item=`` (k-fold cross-fitting: a deterministic fold column ``"fold"`` from
    :func:`~calib_frames.recalibrate.assign_folds`, every row recalibrated by the map
    fitted on the other folds of its group), ``fold=`` (cross-fitting by an existing
    fold column) or ``in_sample=True`` (fit and apply on the same rows, labelled).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame (binary predictions, or option rows for
        ``method="temperature", kind="options"``).
    item
        With ``folds=``: the column whose values share a fold (above).
    output
        Name of the recalibrated column.
    by
        Group key column(s).
    method
        ``"temperature"``, ``"platt"``, ``"histogram"`` or ``"isotonic"``.
    split, fit_value, fold, in_sample, folds, seed
        The fitting scheme (above).
    **options
        Passed to the method's ``fit_*`` (and the applicable ones to ``apply_*``):
        e.g. ``kind="options"``, ``smoothing=True``, ``bins=15``, ``confidence=``.

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``predictions``)
        ``predictions`` with ``output`` and ``in_sample`` (and ``fold`` with ``folds=``).

    Raises
    ------
    ArgumentError
        No fitting scheme, more than one, or an unknown method.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import recalibrate
    >>> df = pl.DataFrame(
    ...     {
    ...         "split": ["fit", "fit", "fit", "eval", "eval"],
    ...         "confidence": [0.9, 0.8, 0.9, 0.9, 0.6],
    ...         "correct": [1, 0, 0, 1, 1],
    ...     }
    ... )
    >>> out = recalibrate(df, method="platt", split="split")
    >>> out["in_sample"].to_list()
    [True, True, True, False, False]
    """
    if folds is not None:
        if item is None:
            raise ArgumentError("folds= needs item=, the column whose values share a fold")
        if fold is not None or split is not None or in_sample:
            raise ArgumentError(
                "choose one fitting scheme: folds= excludes split=, fold=, in_sample"
            )
        predictions = assign_folds(predictions, item=item, folds=folds, seed=seed)
        fold = "fold"
    elif item is not None:
        raise ArgumentError("item= is used with folds= only")
    if split is None and fold is None and not in_sample:
        raise ArgumentError(
            "recalibrate needs a fitting scheme: split= (fit rows vs the rest), folds= with "
            "item= (cross-fitting), fold=, or in_sample=True to fit and score the same rows; "
            "or fit_*/apply_* on two frames"
        )
    fit, apply = _METHODS[method]
    scheme = {"predictions", "by", "split", "fit_value", "fold", "in_sample"}
    accepted = set(inspect.signature(fit).parameters) - scheme
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ArgumentError(
            f"method={method!r} takes no option(s) {unknown}; it takes {sorted(accepted)}"
        )
    params = fit(
        predictions,
        by=by,
        split=split,
        fit_value=fit_value,
        fold=fold,
        in_sample=in_sample,
        **options,
    )
    apply_options = {k: v for k, v in options.items() if k in _APPLY_OPTIONS[method]}
    if method == "temperature" and options.get("kind") == "options":
        apply_options["by"] = by
    return apply(  # type: ignore[no-any-return]
        predictions, params, output=output, split=split, fit_value=fit_value, **apply_options
    )


def _scored(
    predictions: pl.LazyFrame, keys: list[str], in_sample: bool
) -> tuple[pl.LazyFrame, pl.LazyFrame | None]:
    """The rows to score and, with ``in_sample=True``, the per-group in-sample label."""
    schema = predictions.collect_schema()
    if "in_sample" not in schema:
        raise TableError(
            "the frame has no 'in_sample' column: recalibrate it with recalibrate() or an "
            "apply_* function, which label the rows a map was fitted on"
        )
    if schema["in_sample"] != pl.Boolean:
        raise TableError(f"column 'in_sample' must be Boolean, got {schema['in_sample']}")
    if not in_sample:
        scored = predictions.filter(~pl.col("in_sample").fill_null(False))
        # Early-stopping scans: a frame whose every row was fitted on (fit and apply on
        # the same rows) would otherwise give an empty table and no hint why.
        if not scored.select("in_sample").head(1).collect().height:
            total = predictions.select(pl.len()).collect().item()
            if total:
                problem = (
                    "in-sample (their map was fitted on them), so no row is left to score; "
                    "fit on a split (split=, folds=) or pass in_sample=True to score them "
                    "anyway, labelled"
                )
                raise DataError(
                    describe_problem(
                        "in_sample", total, total, problem, example=None, keys=keys, value=None
                    )
                )
        return scored, None
    label = pl.col("in_sample").fill_null(False).any()
    labels = predictions.group_by(keys).agg(label) if keys else predictions.select(label)
    return predictions, labels


def _join(left: pl.LazyFrame, right: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """``left`` with the columns of ``right`` for the same keys (one row per key in right)."""
    if keys:
        return left.join(right, on=keys, how="left", nulls_equal=True, maintain_order="left")
    return left.join(right, how="cross")


def _with_label(table: pl.LazyFrame, labels: pl.LazyFrame | None, keys: list[str]) -> pl.LazyFrame:
    """The ``in_sample`` column of a comparison table: False, or whether any row was fitted on."""
    if labels is None:
        return table.with_columns(pl.lit(False).alias("in_sample"))
    return _join(table, labels, keys)


@check_arguments(recalibrated=COLUMN, bins=BINS, in_sample=FLAG)
def recalibration_metrics(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    recalibrated: str = "recalibrated",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    in_sample: bool = False,
) -> Frame:
    """Calibration metrics before and after recalibration, one row per group.

    Both columns go through :func:`calib_frames.calibration_metrics` with the same
    ``bins`` on the same rows (the rows not used for fitting, unless ``in_sample``);
    formulas there.

    Parameters
    ----------
    predictions
        Recalibrated predictions from :func:`recalibrate` or an ``apply_*`` function
        (with the ``in_sample`` label), or from :func:`top_option` for multiple choice.
    confidence, correct, recalibrated
        The original confidence, the outcome and the recalibrated confidence.
    by
        Group key column(s).
    bins
        Binning of the binned metrics (ECE, MCE, RMSCE, reliability, resolution).
    weight
        Optional row weights.
    in_sample
        Score every row, including those the map was fitted on (labelled).

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``predictions``)
        Keys…, ``count`` (scored rows), ``in_sample`` (whether any scored row was fit
        data), then ``<metric>_before`` and ``<metric>_after`` for each metric of
        :data:`COMPARED_METRICS`. Groups with no scored row are absent.

    Raises
    ------
    TableError
        Missing columns, no ``in_sample`` label.
    DataError
        Invalid rows, including null recalibrated confidences (a group without
        parameters); every row in-sample while ``in_sample=False`` (nothing to score).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import recalibrate, recalibration_metrics
    >>> df = pl.DataFrame(
    ...     {
    ...         "split": ["fit"] * 4 + ["eval"] * 4,
    ...         "confidence": [0.9, 0.95, 0.9, 0.99, 0.9, 0.95, 0.9, 0.99],
    ...         "correct": [1, 0, 1, 0, 1, 0, 1, 0],
    ...     }
    ... )
    >>> scored = recalibration_metrics(recalibrate(df, method="temperature", split="split"))
    >>> scored.select("count", "in_sample", pl.col("ece_before", "ece_after").round(3)).rows()
    [(4, False, 0.435, 0.001)]
    """
    keys: list[str] = group_keys(by)
    rows, labels = _scored(as_lazy(predictions), keys, in_sample)
    options: dict[str, Any] = {"correct": correct, "by": by, "bins": bins, "weight": weight}
    before = calibration_metrics(rows, confidence=confidence, **options)
    after = calibration_metrics(rows, confidence=recalibrated, **options)
    count = "count" if "count" in before.collect_schema() else "n"
    left = before.select(
        *keys,
        pl.col(count).cast(pl.UInt64).alias("count"),
        *(pl.col(m).alias(f"{m}_before") for m in COMPARED_METRICS),
    )
    right = after.select(*keys, *(pl.col(m).alias(f"{m}_after") for m in COMPARED_METRICS))
    joined = _with_label(_join(left, right, keys), labels, keys).filter(pl.col("count") > 0)
    order = [f"{m}_{stage}" for m in COMPARED_METRICS for stage in ("before", "after")]
    return return_like(predictions, joined.select(*keys, "count", "in_sample", *order))


@check_arguments(recalibrated=COLUMN, bins=BINS, in_sample=FLAG)
def recalibration_reliability(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    recalibrated: str = "recalibrated",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    in_sample: bool = False,
) -> Frame:
    """Reliability-diagram data before and after recalibration, stacked.

    Parameters
    ----------
    predictions
        Recalibrated predictions from :func:`recalibrate` or an ``apply_*`` function
        (with the ``in_sample`` label), or from :func:`top_option`.
    confidence, correct, recalibrated
        The original confidence, the outcome and the recalibrated confidence.
    by
        Group key column(s).
    bins
        Binning of both reliability tables.
    weight
        Optional row weights.
    in_sample
        Use every row, including those the map was fitted on (labelled).

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``predictions``)
        Keys…, ``stage`` (:data:`STAGE`: "before" / "after"), then the columns of
        :func:`calib_frames.reliability_table` (``bin``, ``bin_lower``, ``bin_upper``,
        ``count``, ``mean_confidence``, ``accuracy``; null means in empty bins), then
        ``in_sample``. ``stage`` is a key of the table (it comes before ``bin``).

    Raises
    ------
    TableError
        Missing columns, no ``in_sample`` label, a group key named ``stage``.
    DataError
        Invalid rows, including null recalibrated confidences; every row in-sample
        while ``in_sample=False``.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import recalibrate, recalibration_reliability
    >>> df = pl.DataFrame({"confidence": [0.9, 0.8, 0.3], "correct": [1, 0, 0]})
    >>> table = recalibration_reliability(
    ...     recalibrate(df, method="histogram", in_sample=True, bins=2), bins=2, in_sample=True
    ... )
    >>> table.select("stage", "bin", "count", pl.col("mean_confidence").round(3)).rows()
    [('before', 0, 1, 0.3), ('before', 1, 2, 0.85), ('after', 0, 1, 0.0), ('after', 1, 2, 0.5)]
    """
    keys: list[str] = group_keys(by)
    rows, labels = _scored(as_lazy(predictions), keys, in_sample)
    options: dict[str, Any] = {"correct": correct, "by": by, "bins": bins, "weight": weight}
    if "stage" in keys:
        raise TableError("group key 'stage' clashes with the output column; rename it")
    stages = [
        reliability_table(rows, confidence=column, **options).with_columns(
            pl.lit(stage, dtype=STAGE).alias("stage")
        )
        for stage, column in (("before", confidence), ("after", recalibrated))
    ]
    stacked = pl.concat(stages)
    names = [c for c in stacked.collect_schema().names() if c not in (*keys, "stage")]
    stacked = _with_label(stacked, labels, keys).select(*keys, "stage", *names, "in_sample")
    return return_like(predictions, stacked.sort(*keys, "stage", "bin", nulls_last=True))


def top_option(
    options: Frame,
    *,
    question: str = "question",
    option: str = "option",
    loglik: str = "loglik",
    is_gold: str = "is_gold",
    recalibrated: str = "recalibrated",
    by: str | Sequence[str] | None = None,
) -> Frame:
    """Turn multiple-choice options into one row per question, for the comparison tables.

    Each question gets the top option's probability, before and after, and whether it is
    the gold option.

    ``confidence`` is the largest softmax probability of the question's log-likelihoods
    (T = 1), ``recalibrated`` the largest recalibrated probability, ``correct`` whether
    the option with the largest log-likelihood is gold: the prediction and tie rule of
    :func:`~calib_frames.sources.choice_predictions`, both through
    :func:`calib_frames.sources.options.top_choice` (among tied options the smallest
    option id, whatever the row order). Temperature scaling keeps the top option, so
    ``correct`` is the same before and after.

    Parameters
    ----------
    options
        Option rows from :func:`~calib_frames.recalibrate.apply_temperature` with
        ``kind="options"`` (or :func:`recalibrate`).
    question, option, loglik, is_gold, recalibrated
        Column names (``option``: the option ids, which break ties).
    by
        The columns that identify a question together with ``question``.

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``options``)
        Keys…, ``question``, ``confidence``, ``recalibrated``, ``correct``,
        ``in_sample``; sorted by keys and question.

    Raises
    ------
    TableError
        Missing columns.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import fit_temperature, apply_temperature, top_option
    >>> options = pl.DataFrame(
    ...     {
    ...         "question": [1, 1, 2, 2],
    ...         "option": [0, 1, 0, 1],
    ...         "loglik": [-0.1, -2.0, -1.0, -0.5],
    ...         "is_gold": [True, False, True, False],
    ...     }
    ... )
    >>> params = pl.DataFrame({"temperature": [2.0], "in_sample": [False]})
    >>> top = top_option(apply_temperature(options, params, kind="options"))
    >>> top.select("question", "correct", pl.col("confidence", "recalibrated").round(3)).rows()
    [(1, True, 0.87, 0.721), (2, False, 0.622, 0.562)]
    """
    keys: list[str] = group_keys(by)
    lazy = as_lazy(options)
    columns = {
        "question": question,
        "option": option,
        "loglik": loglik,
        "is_gold": is_gold,
        "recalibrated": recalibrated,
        "in_sample": "in_sample",
    }
    require_columns(lazy.collect_schema(), columns, keys=keys)
    # imported here: importing calib_frames.recalibrate need not load the readers
    from calib_frames.sources.options import top_choice

    ell = pl.col(loglik).cast(pl.Float64)
    _, correct = top_choice(ell, pl.col(option), pl.col(is_gold).cast(pl.Boolean))
    top = (
        lazy.group_by(*keys, question)
        .agg(
            (1.0 / (ell - ell.max()).exp().sum()).alias("confidence"),
            pl.col(recalibrated).max().alias("recalibrated"),
            correct.alias("correct"),
            pl.col("in_sample").fill_null(False).any(),
        )
        .sort(*keys, question, nulls_last=True)
    )
    return return_like(options, top)
