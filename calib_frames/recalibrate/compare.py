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

from calib_frames.binning import BinsLike
from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.metrics.calibration import calibration_metrics
from calib_frames.recalibrate import histogram, platt, temperature
from calib_frames.recalibrate.splits import assign_folds, normalise_keys
from calib_frames.stats import reliability_table
from calib_frames.validation import Frame, as_lazy, return_like

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


def _methods() -> dict[str, tuple[Any, Any]]:
    from calib_frames.recalibrate import isotonic

    return {
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


def recalibrate(
    frame: Frame,
    *,
    method: Method = "temperature",
    by: str | Sequence[str] | None = None,
    split: str | None = None,
    fit_value: object = "fit",
    folds: int | None = None,
    item: str | None = None,
    seed: int = 0,
    fold: str | None = None,
    in_sample: bool = False,
    output: str = "recalibrated",
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
    frame
        DataFrame or LazyFrame (binary confidences, or options for
        ``method="temperature", kind="options"``).
    method
        ``"temperature"``, ``"platt"``, ``"histogram"`` or ``"isotonic"``.
    by
        Group key column(s).
    split, fit_value, folds, item, seed, fold, in_sample
        The fitting scheme (above).
    output
        Name of the recalibrated column.
    **options
        Passed to the method's ``fit_*`` (and the applicable ones to ``apply_*``):
        e.g. ``kind="options"``, ``smoothing=True``, ``bins=15``, ``confidence=``.

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``frame``)
        ``frame`` with ``output`` and ``in_sample`` (and ``fold`` with ``folds=``).

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
    methods = _methods()
    if method not in methods:
        raise ArgumentError(f"method= takes one of {sorted(methods)}, got {method!r}")
    if folds is not None:
        if item is None:
            raise ArgumentError("folds= needs item=, the column whose values share a fold")
        if fold is not None or split is not None or in_sample:
            raise ArgumentError(
                "choose one fitting scheme: folds= excludes split=, fold=, in_sample"
            )
        frame = assign_folds(frame, item=item, folds=folds, seed=seed)
        fold = "fold"
    elif item is not None:
        raise ArgumentError("item= is used with folds= only")
    if split is None and fold is None and not in_sample:
        raise ArgumentError(
            "recalibrate needs a fitting scheme: split= (fit rows vs the rest), folds= with "
            "item= (cross-fitting), fold=, or in_sample=True to fit and score the same rows; "
            "or fit_*/apply_* on two frames"
        )
    fit, apply = methods[method]
    accepted = set(inspect.signature(fit).parameters) - {"frame", "by", "split", "fit_value"}
    accepted -= {"fold", "in_sample"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ArgumentError(
            f"method={method!r} takes no option(s) {unknown}; it takes {sorted(accepted)}"
        )
    params = fit(
        frame,
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
        frame, params, output=output, split=split, fit_value=fit_value, **apply_options
    )


def _scored(
    frame: pl.LazyFrame, keys: list[str], in_sample: bool
) -> tuple[pl.LazyFrame, pl.LazyFrame | None]:
    """The rows to score and, with ``in_sample=True``, the per-group in-sample label."""
    if not isinstance(in_sample, bool):
        raise ArgumentError(f"in_sample= takes True or False, got {in_sample!r}")
    schema = frame.collect_schema()
    if "in_sample" not in schema:
        raise TableError(
            "the frame has no 'in_sample' column: recalibrate it with recalibrate() or an "
            "apply_* function, which label the rows a map was fitted on"
        )
    if schema["in_sample"] != pl.Boolean:
        raise TableError(f"column 'in_sample' must be Boolean, got {schema['in_sample']}")
    if not in_sample:
        scored = frame.filter(~pl.col("in_sample").fill_null(False))
        # Early-stopping scans: a frame whose every row was fitted on (fit and apply on
        # the same rows) would otherwise give an empty table and no hint why.
        if not scored.select("in_sample").head(1).collect().height:
            total = frame.select(pl.len()).collect().item()
            if total:
                raise DataError(
                    f"column 'in_sample': {total:,} of {total:,} rows are in-sample (their "
                    "map was fitted on them), so no row is left to score; fit on a split "
                    "(split=, folds=) or pass in_sample=True to score them anyway, labelled"
                )
        return scored, None
    label = pl.col("in_sample").fill_null(False).any()
    labels = frame.group_by(keys).agg(label) if keys else frame.select(label)
    return frame, labels


def recalibration_metrics(
    frame: Frame,
    *,
    by: str | Sequence[str] | None = None,
    confidence: str = "confidence",
    recalibrated: str = "recalibrated",
    correct: str = "correct",
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
    frame
        A frame from :func:`recalibrate` or an ``apply_*`` function (with the
        ``in_sample`` label), or from :func:`top_option` for multiple choice.
    by
        Group key column(s).
    confidence, recalibrated, correct, weight
        The original and the recalibrated confidence, the outcome, row weights.
    bins
        Binning of the binned metrics (ECE, MCE, RMSCE, reliability, resolution).
    in_sample
        Score every row, including those the map was fitted on (labelled).

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``frame``)
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
    keys: list[str] = normalise_keys(by)
    lazy = as_lazy(frame)
    rows, labels = _scored(lazy, keys, in_sample)
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
    if keys:
        joined = left.join(right, on=keys, how="left", nulls_equal=True, maintain_order="left")
    else:
        joined = left.join(right, how="cross")
    if labels is None:
        joined = joined.with_columns(pl.lit(False).alias("in_sample"))
    elif keys:
        joined = joined.join(labels, on=keys, how="left", nulls_equal=True, maintain_order="left")
    else:
        joined = joined.join(labels, how="cross")
    joined = joined.filter(pl.col("count") > 0)
    order = [f"{m}_{stage}" for m in COMPARED_METRICS for stage in ("before", "after")]
    return return_like(frame, joined.select(*keys, "count", "in_sample", *order))


def recalibration_reliability(
    frame: Frame,
    *,
    by: str | Sequence[str] | None = None,
    confidence: str = "confidence",
    recalibrated: str = "recalibrated",
    correct: str = "correct",
    bins: BinsLike = 10,
    weight: str | None = None,
    in_sample: bool = False,
) -> Frame:
    """Reliability-diagram data before and after recalibration, stacked.

    Parameters
    ----------
    frame
        A frame from :func:`recalibrate` or an ``apply_*`` function (with the
        ``in_sample`` label), or from :func:`top_option`.
    by
        Group key column(s).
    confidence, recalibrated, correct, weight
        The original and the recalibrated confidence, the outcome, row weights.
    bins
        Binning of both reliability tables.
    in_sample
        Use every row, including those the map was fitted on (labelled).

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``frame``)
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
    keys: list[str] = normalise_keys(by)
    lazy = as_lazy(frame)
    rows, labels = _scored(lazy, keys, in_sample)
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
    if labels is None:
        stacked = stacked.with_columns(pl.lit(False).alias("in_sample"))
    elif keys:
        stacked = stacked.join(labels, on=keys, how="left", nulls_equal=True, maintain_order="left")
    else:
        stacked = stacked.join(labels, how="cross")
    stacked = stacked.select(*keys, "stage", *names, "in_sample")
    return return_like(frame, stacked.sort(*keys, "stage", "bin", nulls_last=True))


def top_option(
    frame: Frame,
    *,
    by: str | Sequence[str] | None = None,
    question: str = "question",
    loglik: str = "loglik",
    is_gold: str = "is_gold",
    recalibrated: str = "recalibrated",
) -> Frame:
    """Turn multiple-choice options into one row per question, for the comparison tables.

    Each question gets the top option's probability, before and after, and whether it is
    the gold option.

    ``confidence`` is the largest softmax probability of the question's log-likelihoods
    (T = 1), ``recalibrated`` the largest recalibrated probability, ``correct`` whether
    the option with the largest log-likelihood is gold (among tied options, the first in
    the frame's order). Temperature scaling keeps the top option, so ``correct`` is the
    same before and after.

    Parameters
    ----------
    frame
        Options frame from :func:`~calib_frames.recalibrate.apply_temperature` with
        ``kind="options"`` (or :func:`recalibrate`).
    by
        The columns that identify a question together with ``question``.
    question, loglik, is_gold, recalibrated
        Column names.

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``frame``)
        Keys…, ``question``, ``confidence``, ``recalibrated``, ``correct``,
        ``in_sample``; sorted by keys and question.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import fit_temperature, apply_temperature, top_option
    >>> options = pl.DataFrame(
    ...     {
    ...         "question": [1, 1, 2, 2],
    ...         "loglik": [-0.1, -2.0, -1.0, -0.5],
    ...         "is_gold": [True, False, True, False],
    ...     }
    ... )
    >>> params = pl.DataFrame({"temperature": [2.0], "in_sample": [False]})
    >>> top = top_option(apply_temperature(options, params, kind="options"))
    >>> top.select("question", "correct", pl.col("confidence", "recalibrated").round(3)).rows()
    [(1, True, 0.87, 0.721), (2, False, 0.622, 0.562)]
    """
    keys: list[str] = normalise_keys(by)
    lazy = as_lazy(frame)
    schema = lazy.collect_schema()
    needed = [question, loglik, is_gold, recalibrated, "in_sample", *keys]
    missing = [c for c in needed if c not in schema]
    if missing:
        raise TableError(f"column not found: {missing}; available: {schema.names()}")
    ell = pl.col(loglik).cast(pl.Float64)
    top = (
        lazy.group_by(*keys, question)
        .agg(
            (1.0 / (ell - ell.max()).exp().sum()).alias("confidence"),
            pl.col(recalibrated).max().alias("recalibrated"),
            pl.col(is_gold)
            .cast(pl.Boolean)
            .sort_by(ell, descending=True, maintain_order=True)
            .first()
            .alias("correct"),
            pl.col("in_sample").fill_null(False).any(),
        )
        .sort(*keys, question, nulls_last=True)
    )
    return return_like(frame, top)
