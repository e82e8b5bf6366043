"""Isotonic recalibration: the pool-adjacent-violators fit of the outcome on the confidence.

Fit: :func:`calib_frames.estimators.isotonic.isotonic_blocks` (the PAV code shared with
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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from calib_frames.exceptions import ArgumentError
from calib_frames.recalibrate import _core
from calib_frames.recalibrate._apply import (
    check_join,
    check_output,
    check_unique,
    check_values,
    read_params,
)
from calib_frames.recalibrate.splits import fit_scheme, normalise_keys
from calib_frames.schema import Table
from calib_frames.validation import Frame, as_lazy, return_like

__all__ = ["ISOTONIC", "apply_isotonic", "fit_isotonic"]

Interpolation = Literal["linear", "step"]

ISOTONIC = Table(
    "isotonic-recalibration table",
    {
        "block": pl.UInt32(),
        "x_lower": pl.Float64(),
        "x_upper": pl.Float64(),
        "count": pl.UInt64(),
        "weight": pl.Float64(),
        "value": pl.Float64(),
        "fitted_on": pl.String(),
        "in_sample": pl.Boolean(),
    },
    built_by="recalibrate.fit_isotonic",
    optional=("count", "weight", "fitted_on"),
)
"""One row per (group, block): the block's confidence range, rows, weight and value."""

_Y = "__calib_y"
_ROW = "__calib_row"
_P = "__calib_p"
_GID, _IN, _X = "__calib_gid", "__calib_in_sample", "__calib_x"


def fit_isotonic(
    frame: Frame,
    *,
    by: str | Sequence[str] | None = None,
    confidence: str = "confidence",
    correct: str = "correct",
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
    frame
        DataFrame or LazyFrame with one row per prediction.
    by
        Group key column(s) (``None``: one map for the frame).
    confidence, correct, weight
        Probability in [0, 1], outcome (boolean or 0/1), optional row weights.
    split, fit_value, fold, in_sample
        The fitting scheme (:mod:`calib_frames.recalibrate.splits`).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Keys…, [fold], then :data:`ISOTONIC`'s columns: ``block``, ``x_lower``,
        ``x_upper``, ``count``, ``weight``, ``value``, ``fitted_on``, ``in_sample``.

    Raises
    ------
    TableError, DataError, ArgumentError
        Missing/mistyped columns, invalid rows, invalid arguments; a ``split=``
        column with no row equal to ``fit_value`` (DataError).

    See Also
    --------
    apply_isotonic : the recalibrated confidences.
    calib_frames.estimators.isotonic.isotonic_blocks : the shared PAV fit.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import fit_isotonic
    >>> df = pl.DataFrame({"confidence": [0.2, 0.4, 0.6, 0.8], "correct": [0, 1, 0, 1]})
    >>> fit_isotonic(df).select("block", "x_lower", "x_upper", "value").rows()
    [(0, 0.2, 0.2, 0.0), (1, 0.4, 0.6, 0.5), (2, 0.8, 0.8, 1.0)]
    """
    from calib_frames.estimators.isotonic import isotonic_blocks

    keys: list[str] = normalise_keys(by)
    scheme = fit_scheme(split=split, fit_value=fit_value, fold=fold, in_sample=in_sample)
    source = as_lazy(frame)
    schema = source.collect_schema()
    columns = {"confidence": confidence, "correct": correct}
    if weight is not None:
        columns["weight"] = weight
    _core.check_columns(
        schema,
        columns,
        keys=keys,
        numeric=[r for r in columns if r != "correct"],
        boolean_like=["correct"],
        reserved=(*ISOTONIC.names, _Y),
    )
    rows, fit_keys = _core.prepare_rows(source, keys, scheme)
    # outcomes as 0.0/1.0 (null for anything else, which the PAV input checks refuse)
    rows = rows.with_columns(_core.outcome_expr(correct, schema[correct]).alias(_Y))
    blocks = as_lazy(isotonic_blocks(rows, x=confidence, y=_Y, weight=weight, by=fit_keys or None))
    names = [c for c in ("block", "x_lower", "x_upper", "count", "weight", "value")]
    table = blocks.select(
        *fit_keys, *(pl.col(c).cast(ISOTONIC.columns[c]) for c in names), *scheme.labels()
    )
    return return_like(frame, table)


def apply_isotonic(
    frame: Frame,
    params: pl.DataFrame | pl.LazyFrame,
    *,
    confidence: str = "confidence",
    output: str = "recalibrated",
    interpolation: Interpolation = "linear",
    split: str | None = None,
    fit_value: object = "fit",
) -> Frame:
    """Map each confidence through its group's isotonic fit: a lazy as-of join.

    Parameters
    ----------
    frame
        DataFrame or LazyFrame with the parameters' keys (and fold) and ``confidence``.
    params
        The table returned by :func:`fit_isotonic` (read once, at call time).
    confidence, output
        Input column and the name of the new column.
    interpolation
        Between blocks: ``"linear"`` (scikit-learn's rule) or ``"step"`` (the block
        below); see the module docstring.
    split, fit_value
        If given, rows whose ``split`` equals ``fit_value`` are labelled in-sample.

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``frame``)
        ``frame`` with ``output`` (null where the group has no blocks or the confidence
        is null/outside [0, 1]) and ``in_sample``; row order kept.

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
    if interpolation not in ("linear", "step"):
        raise ArgumentError(f"interpolation= takes 'linear' or 'step', got {interpolation!r}")
    keys: list[str]
    table, keys = read_params(params, ISOTONIC)
    source = as_lazy(frame)
    schema = source.collect_schema()
    check_output(schema, output, split, fit_value)
    check_join(schema, table, keys, "isotonic")
    check_unique(table, [*keys, "block"])
    check_values(table, {"value": (pl.col("value").is_between(0.0, 1.0), "not in [0, 1]")})
    _core.check_columns(schema, {"confidence": confidence}, numeric=["confidence"])
    # Groups get an integer id (join_asof's by= does not match null keys), and the
    # end points of every block, (x_lower, value) and (x_upper, value), are keyed by it.
    label = pl.col("in_sample").fill_null(False).any().alias(_IN)
    groups = (table.group_by(keys).agg(label) if keys else table.select(label)).with_row_index(_GID)
    groups = groups.with_columns(pl.col(k).cast(schema[k]) for k in keys)
    blocks = (
        table.join(groups, on=keys, nulls_equal=True)
        if keys
        else table.with_columns(pl.lit(0, dtype=pl.UInt32).alias(_GID))
    )
    ends = (
        pl.concat(
            [
                blocks.select(_GID, pl.col("x_lower").alias(_X), "value"),
                blocks.select(_GID, pl.col("x_upper").alias(_X), "value"),
            ]
        )
        .unique([_GID, _X], keep="first")
        .with_columns(pl.col(_X).cast(pl.Float64))
        .sort(_X)
    )
    below = ends.rename({_X: "__calib_x0", "value": "__calib_v0"}).lazy()
    above = ends.rename({_X: "__calib_x1", "value": "__calib_v1"}).lazy()
    p = pl.col(confidence).cast(pl.Float64)
    rows = source.with_row_index(_ROW)
    if keys:
        rows = rows.join(
            groups.lazy(), on=keys, how="left", nulls_equal=True, maintain_order="left"
        )
    else:  # a left join on a constant: every row kept even without blocks
        one = pl.lit(0, dtype=pl.UInt8).alias("__calib_one")
        rows = (
            rows.with_columns(one)
            .join(
                groups.lazy().with_columns(one),
                on="__calib_one",
                how="left",
                maintain_order="left",
            )
            .drop("__calib_one")
        )
    rows = rows.with_columns(pl.when(p.is_between(0.0, 1.0)).then(p).alias(_P))
    valid = (
        rows.filter(pl.col(_P).is_not_null() & pl.col(_GID).is_not_null())
        .select(_ROW, _GID, _P)
        .sort(_P)
    )
    matched = valid.join_asof(
        below,
        left_on=_P,
        right_on="__calib_x0",
        by=_GID,
        strategy="backward",
        check_sortedness=False,
    ).join_asof(
        above,
        left_on=_P,
        right_on="__calib_x1",
        by=_GID,
        strategy="forward",
        check_sortedness=False,
    )
    x0, x1 = pl.col("__calib_x0"), pl.col("__calib_x1")
    v0, v1 = pl.col("__calib_v0"), pl.col("__calib_v1")
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
    result = rows.join(mapped, on=_ROW, how="left", maintain_order="left")
    in_sample = pl.col(_IN).fill_null(False)
    if split is not None:
        in_sample = in_sample | (pl.col(split) == pl.lit(fit_value)).fill_null(False)
    result = result.with_columns(in_sample.alias("in_sample")).drop(_ROW, _P, _GID, _IN)
    return return_like(frame, result)
