"""Isotonic recalibration: the pool-adjacent-violators fit of the outcome on the confidence.

Fit: :func:`calib_frames.estimators.pav.isotonic_blocks` (the PAV code shared with
the CORP reliability diagrams) on the fit rows, per group: consecutive blocks of
confidences, each with the weighted mean outcome of its rows as ``value``; values
increase from block to block (non-decreasing), and tied confidences share a block.

Apply: a confidence p inside a block [x_lower, x_upper] gets the block's value. Between
two blocks — confidences the fit split never saw — two rules (``interpolation=``):

* ``"linear"`` (default): linear interpolation between the upper end of the block below
  and the lower end of the block above, as scikit-learn's ``IsotonicRegression`` does
  (its fitted points are each block's first and last x with the block's value, read with
  ``np.interp``); netcal's ``IsotonicRegression`` wraps scikit-learn's and agrees.
* ``"step"``: the value of the block below (a right-continuous step function, the
  isotonic fit as a CORP reliability curve draws it).

Below the first block p gets the first block's value and above the last the last's
(scikit-learn's ``out_of_bounds="clip"``, what ``CalibratedClassifierCV`` uses). The map
is non-decreasing in p either way.

Applying is a lazy as-of join of the rows on p against the blocks' end points by group
(the rows are sorted by p for the join and returned in their input order). Fitting is
per group and in memory.

CORP's recalibration (:func:`corp_recalibrate`) is this map fitted with
``in_sample=True`` and applied to the same rows: every confidence then lies in its own
block and gets the block's event frequency, the recalibrated forecast of the CORP
reliability diagram (:func:`calib_frames.estimators.corp_reliability`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from calib_frames.arguments import Options, check_arguments
from calib_frames.recalibrate import _core
from calib_frames.recalibrate._apply import (
    APPLIED,
    FINGERPRINT_PARAM,
    IN_SAMPLE_PARAM,
    OUTPUT,
    ApplyInput,
    apply_input,
    check_new_column,
    fit_rows_again,
    labelled,
)
from calib_frames.recalibrate.splits import SCHEME, fit_scheme
from calib_frames.schema import ISOTONIC
from calib_frames.validation import Frame, as_lazy, group_keys, return_like, working

__all__ = ["apply_isotonic", "corp_recalibrate", "fit_isotonic"]

Interpolation = Literal["linear", "step"]

_ROW, _P, _GID, _X = working("row"), working("p"), working("group"), working("x")
_X0, _V0, _X1, _V1 = working("x0"), working("v0"), working("x1"), working("v1")
_ONE = working("one")


@check_arguments(**SCHEME)
def fit_isotonic(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    split: str | None = None,
    fit_value: object = "fit",
    fold: str | None = None,
    in_sample: bool = False,
) -> Frame:
    """Fit isotonic recalibration (PAV) per group: blocks of confidences and their values.

    Per group, in memory (the PAV pass needs a group's rows sorted by confidence).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame with one row per prediction.
    confidence, correct
        Probability in [0, 1] and outcome (boolean or 0/1).
    by
        Group key column(s) (``None``: one map for the frame).
    weight
        Optional positive, finite row weights.
    split, fit_value, fold, in_sample
        The fitting scheme (:mod:`calib_frames.recalibrate.splits`).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Keys…, [fold], then the columns of :data:`calib_frames.schema.ISOTONIC`:
        ``block``, ``x_lower``, ``x_upper``, ``count``, ``weight``, ``value``,
        ``fitted_on``, ``in_sample``.

    Raises
    ------
    TableError, DataError, ArgumentError
        Missing/mistyped columns, invalid rows (a confidence outside [0, 1], an outcome
        not 0/1, a weight not positive; raised when the result is collected), invalid
        arguments; a ``split=`` column with no row equal to ``fit_value`` (DataError).

    See Also
    --------
    apply_isotonic : the recalibrated confidences.
    corp_recalibrate : the in-sample map of every row, in one call.
    calib_frames.estimators.pav.isotonic_blocks : the shared PAV fit.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import fit_isotonic
    >>> df = pl.DataFrame({"confidence": [0.2, 0.4, 0.6, 0.8], "correct": [0, 1, 0, 1]})
    >>> fit_isotonic(df).select("block", "x_lower", "x_upper", "value").rows()
    [(0, 0.2, 0.2, 0.0), (1, 0.4, 0.6, 0.5), (2, 0.8, 0.8, 1.0)]
    """
    from calib_frames.estimators.pav import isotonic_blocks

    scheme = fit_scheme(split=split, fit_value=fit_value, fold=fold, in_sample=in_sample)
    fit = _core.binary_fit_rows(
        predictions, ISOTONIC, scheme, by=by, confidence=confidence, correct=correct, weight=weight
    )
    rows = _core.checked_binary_rows(fit)
    w = None if weight is None else _core.W
    blocks = as_lazy(isotonic_blocks(rows, x=_core.P, y=_core.Y, weight=w, by=fit.keys or None))
    names = ("block", "x_lower", "x_upper", "count", "weight", "value")
    table = blocks.select(
        *fit.keys, *(pl.col(c).cast(ISOTONIC.columns[c]) for c in names), *scheme.labels()
    )
    return return_like(predictions, _core.fingerprinted(table, fit))


@check_arguments(**APPLIED, interpolation=Options.of(Interpolation))
def apply_isotonic(
    predictions: Frame,
    params: pl.DataFrame | pl.LazyFrame,
    *,
    confidence: str = "confidence",
    output: str = "recalibrated",
    split: str | None = None,
    fit_value: object = "fit",
    interpolation: Interpolation = "linear",
) -> Frame:
    """Map each confidence through its group's isotonic fit: a lazy as-of join.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame with the parameters' keys (and fold) and ``confidence``.
    params
        The table returned by :func:`fit_isotonic` (read once, at call time).
    confidence, output
        Input column and the name of the new column.
    split, fit_value
        If given, rows whose ``split`` equals ``fit_value`` are labelled in-sample.
    interpolation
        Between blocks: ``"linear"`` (scikit-learn's rule) or ``"step"`` (the block
        below); see the module docstring.

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``predictions``)
        ``predictions`` with ``output`` (null where the group has no blocks or the
        confidence is null/outside [0, 1]) and ``in_sample``; row order kept.

    Raises
    ------
    TableError
        Missing columns, key dtypes that differ, an existing ``output`` column, a
        parameters table that repeats a block.
    DataError
        Parameter values outside [0, 1] (e.g. a hand-edited table).
    ArgumentError
        An unknown ``interpolation``.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import apply_isotonic
    >>> blocks = pl.DataFrame(
    ...     {
    ...         "block": [0, 1],
    ...         "x_lower": [0.2, 0.6],
    ...         "x_upper": [0.4, 0.8],
    ...         "value": [0.1, 0.9],
    ...         "in_sample": [False, False],
    ...     }
    ... )
    >>> df = pl.DataFrame({"confidence": [0.3, 0.5, 0.1, 0.95]})
    >>> apply_isotonic(df, blocks)["recalibrated"].round(6).to_list()
    [0.1, 0.5, 0.1, 0.9]
    >>> apply_isotonic(df, blocks, interpolation="step")["recalibrated"].to_list()
    [0.1, 0.1, 0.1, 0.9]
    """
    applied: ApplyInput = apply_input(
        predictions,
        params,
        ISOTONIC,
        columns={"confidence": confidence},
        output=output,
        split=split,
        fit_value=fit_value,
        values={"value": (pl.col("value").is_between(0.0, 1.0), "not in [0, 1]")},
        within=["block"],
    )
    mapped = _through_blocks(
        applied.predictions,
        applied.params.lazy(),
        applied.keys,
        confidence=confidence,
        output=output,
        interpolation=interpolation,
    )
    again = fit_rows_again(applied, confidence)
    return return_like(predictions, labelled(mapped, split, fit_value, again=again))


@check_arguments(output=OUTPUT)
def corp_recalibrate(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    output: str = "recalibrated",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
) -> Frame:
    """The rows with their CORP-recalibrated probability: the in-sample isotonic map.

    CORP (Dimitriadis, Gneiting and Jordan, PNAS 2021) recalibrates every forecast by the
    isotonic (PAV) regression of the outcomes on the forecasts of its group, fitted on
    the same rows: :func:`fit_isotonic` with ``in_sample=True``, applied to the rows it
    was fitted on (each confidence lies in its own block, so it gets the block's event
    frequency; no interpolation is involved). Per group, in memory (the fit); the rows
    are matched to their block by an as-of join on the confidence, so the result is the
    input plus one column, in the input's row order, and lazy stays lazy.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per forecast.
    confidence, correct
        Probability in [0, 1] and outcome (boolean or 0/1).
    output
        Name of the new column (must not exist yet).
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    weight
        Optional positive, finite row weights.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        ``predictions`` with ``output`` added (Float64).

    Raises
    ------
    TableError
        Missing or mistyped columns, keys clashing with the fit's columns, or
        ``output`` names an existing column.
    DataError
        A confidence outside [0, 1], an outcome not boolean or 0/1, a weight not
        positive (raised when the result is collected).

    See Also
    --------
    calib_frames.estimators.corp_reliability : the blocks as a reliability curve.
    calib_frames.estimators.corp_decomposition : the score decomposition of the same fit.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import corp_recalibrate
    >>> df = pl.DataFrame({"confidence": [0.4, 0.1, 0.3, 0.8], "correct": [0, 0, 1, 1]})
    >>> corp_recalibrate(df)["recalibrated"].to_list()
    [0.5, 0.0, 0.5, 1.0]
    """
    source = as_lazy(predictions)
    check_new_column(source.collect_schema(), output)
    blocks = fit_isotonic(
        source, confidence=confidence, correct=correct, by=by, weight=weight, in_sample=True
    )
    mapped = _through_blocks(
        source,
        blocks,
        group_keys(by),
        confidence=confidence,
        output=output,
        interpolation="step",
    )
    return return_like(predictions, mapped.drop(IN_SAMPLE_PARAM, FINGERPRINT_PARAM))


def _through_blocks(
    rows: pl.LazyFrame,
    blocks: pl.LazyFrame,
    keys: list[str],
    *,
    confidence: str,
    output: str,
    interpolation: Interpolation,
) -> pl.LazyFrame:
    """``rows`` with ``output``, the isotonic map of ``confidence`` by its group's blocks.

    Also adds :data:`IN_SAMPLE_PARAM`, whether the row's group was fitted in-sample (and
    the fit rows' fingerprint, :data:`FINGERPRINT_PARAM`, when the blocks hold one).
    Groups get an integer id (``join_asof``'s ``by=`` does not match null keys), and the
    end points of every block, (x_lower, value) and (x_upper, value), are keyed by it;
    the valid rows, sorted by confidence, are matched to the end point below and above.
    """
    schema = rows.collect_schema()
    blocks = blocks.cache()  # read three times below: fit once
    labels = [pl.col("in_sample").fill_null(False).any().alias(IN_SAMPLE_PARAM)]
    if _core.FINGERPRINT in blocks.collect_schema():
        labels.append(pl.col(_core.FINGERPRINT).max().alias(FINGERPRINT_PARAM))
    groups = (blocks.group_by(keys).agg(labels) if keys else blocks.select(labels)).with_row_index(
        _GID
    )
    groups = groups.with_columns(pl.col(k).cast(schema[k]) for k in keys).cache()
    keyed = (
        blocks.join(groups, on=keys, nulls_equal=True)
        if keys
        else blocks.with_columns(pl.lit(0, dtype=pl.UInt32).alias(_GID))
    )
    ends = (
        pl.concat(
            [
                keyed.select(_GID, pl.col("x_lower").alias(_X), "value"),
                keyed.select(_GID, pl.col("x_upper").alias(_X), "value"),
            ]
        )
        .unique([_GID, _X], keep="first")
        .with_columns(pl.col(_X).cast(pl.Float64))
        .sort(_X)
    )
    below = ends.rename({_X: _X0, "value": _V0})
    above = ends.rename({_X: _X1, "value": _V1})
    p = pl.col(confidence).cast(pl.Float64)
    indexed = rows.with_row_index(_ROW)
    if keys:
        indexed = indexed.join(groups, on=keys, how="left", nulls_equal=True, maintain_order="left")
    else:  # a left join on a constant: every row kept even without blocks
        one = pl.lit(0, dtype=pl.UInt8).alias(_ONE)
        indexed = (
            indexed.with_columns(one)
            .join(groups.with_columns(one), on=_ONE, how="left", maintain_order="left")
            .drop(_ONE)
        )
    indexed = indexed.with_columns(pl.when(p.is_between(0.0, 1.0)).then(p).alias(_P))
    valid = (
        indexed.filter(pl.col(_P).is_not_null() & pl.col(_GID).is_not_null())
        .select(_ROW, _GID, _P)
        .sort(_P)
    )
    matched = valid.join_asof(
        below, left_on=_P, right_on=_X0, by=_GID, strategy="backward", check_sortedness=False
    ).join_asof(
        above, left_on=_P, right_on=_X1, by=_GID, strategy="forward", check_sortedness=False
    )
    x0, x1, v0, v1 = pl.col(_X0), pl.col(_X1), pl.col(_V0), pl.col(_V1)
    value: pl.Expr
    if interpolation == "linear":
        between = v0 + (v1 - v0) * (pl.col(_P) - x0) / (x1 - x0)
        value = (
            pl.when(x0.is_null())
            .then(v1)
            .when(x1.is_null() | (x1 == x0))
            .then(v0)
            .otherwise(between)
        )
    else:
        value = pl.when(x0.is_null()).then(v1).otherwise(v0)
    mapped = matched.select(_ROW, value.alias(output))
    result = indexed.join(mapped, on=_ROW, how="left", maintain_order="left")
    return result.drop(_ROW, _P, _GID)
