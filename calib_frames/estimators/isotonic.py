"""Isotonic regression by pool-adjacent-violators (PAV), per group, in memory.

:func:`isotonic_blocks` fits, for every group, the non-decreasing (or non-increasing)
step function of ``x`` closest to ``y`` in weighted least squares, and returns it as a
table of *blocks*: maximal runs of ``x`` values that share one fitted value.

Conventions
-----------
* **Ties in x** are pooled first: all rows with the same ``x`` in a group form one point
  with weight Σw and value Σw·y / Σw, so a tie never splits across blocks (the fitted
  function is a function of ``x``). scikit-learn's ``IsotonicRegression`` does the same
  (its ``_make_unique`` replaces tied ``X`` by their weighted mean ``y`` and summed
  weight), so its ``predict(x)`` equals the block value containing ``x``.
* The fit of a block is the weighted mean of ``y`` over its rows, recomputed from the
  block's exact sums Σw·y and Σw (not carried through the merges).
* Weights must be positive and finite; ``x`` and ``y`` finite numbers (booleans count
  as 0/1).

How it is computed
------------------
The rows are pooled by (keys, x) and sorted in one polars query; the pooled points of
*all* groups then go through **one** call of SciPy's compiled PAV
(``scipy.optimize.isotonic_regression``), with group ``g`` shifted by ``g·C``, where
``C`` exceeds the spread of the pooled means, so that no block can straddle two groups.
The shift only steers which neighbours are pooled (a decision that may err when two
neighbouring block means differ by less than about ``1e-16 · g · C``, where either
choice changes the fit by less than that); the reported values are recomputed from
the unshifted sums. Should a recomputed fit still decrease somewhere, that group is
refitted on its own. There is no Python loop over rows or groups.

Every row of a group must be in memory at once (the fit is not additive across parts
of the data); a LazyFrame stays lazy until collected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from calib_frames.estimators._rows import check_columns, keys_of, raise_on_bad_rows
from calib_frames.exceptions import ArgumentError
from calib_frames.validation import (
    Frame,
    RowCheck,
    as_lazy,
    count_bad_rows,
    not_true,
    return_like,
)

__all__ = ["BLOCK_COLUMNS", "isotonic_blocks"]

F64Array = npt.NDArray[np.float64]

BLOCK_COLUMNS: dict[str, pl.DataType] = {
    "block": pl.UInt32(),
    "x_lower": pl.Float64(),
    "x_upper": pl.Float64(),
    "count": pl.UInt64(),
    "weight": pl.Float64(),
    "value": pl.Float64(),
}
"""The columns of :func:`isotonic_blocks`' table, after the group keys."""

# internal column names of the pooled points
_X, _N, _W, _WY, _G = "__iso_x", "__iso_n", "__iso_w", "__iso_wy", "__iso_g"


def isotonic_blocks(
    frame: Frame,
    *,
    x: str,
    y: str,
    weight: str | None = None,
    by: str | Sequence[str] | None = None,
    increasing: bool = True,
) -> Frame:
    """Isotonic regression of ``y`` on ``x`` per group, as a table of constant blocks.

    Minimises Σ w·(y − f(x))² over functions f that are non-decreasing in ``x``
    (non-increasing with ``increasing=False``), separately in every group, by
    pool-adjacent-violators. Per group, in memory (see the module docstring).

    Parameters
    ----------
    frame
        DataFrame or LazyFrame, one row per observation.
    x
        Column of the regressor (finite numbers).
    y
        Column of the response (finite numbers or booleans).
    weight
        Optional column of positive, finite weights (default: every row weighs 1).
    by
        Group key column(s); ``None`` fits the whole frame as one group.
    increasing
        Fit a non-decreasing (default) or a non-increasing function.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``block`` (UInt32, 0-based in ``x`` order within the group),
        ``x_lower`` and ``x_upper`` (smallest and largest ``x`` in the block),
        ``count`` (UInt64, rows), ``weight`` (Σw) and ``value`` (Σw·y / Σw over the
        block: the fitted value for every ``x`` in ``[x_lower, x_upper]``). Sorted by
        keys and block; ``value`` is monotone within each group. Ties in ``x`` are
        always in one block.

    Raises
    ------
    SchemaError
        A named column is missing or not numeric, or a key clashes with an output name.
    DataError
        Null/NaN/infinite ``x`` or ``y``, or weights that are not positive and finite
        (raised when the result is collected).

    See Also
    --------
    calib_frames.estimators.corp.corp_reliability : CORP reliability curve built on it.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.estimators.isotonic import isotonic_blocks
    >>> df = pl.DataFrame({"x": [1, 2, 3, 4, 5], "y": [1.0, 3.0, 2.0, 4.0, 3.5]})
    >>> isotonic_blocks(df, x="x", y="y")
    shape: (3, 6)
    ┌───────┬─────────┬─────────┬───────┬────────┬───────┐
    │ block ┆ x_lower ┆ x_upper ┆ count ┆ weight ┆ value │
    │ ---   ┆ ---     ┆ ---     ┆ ---   ┆ ---    ┆ ---   │
    │ u32   ┆ f64     ┆ f64     ┆ u64   ┆ f64    ┆ f64   │
    ╞═══════╪═════════╪═════════╪═══════╪════════╪═══════╡
    │ 0     ┆ 1.0     ┆ 1.0     ┆ 1     ┆ 1.0    ┆ 1.0   │
    │ 1     ┆ 2.0     ┆ 3.0     ┆ 2     ┆ 2.0    ┆ 2.5   │
    │ 2     ┆ 4.0     ┆ 5.0     ┆ 2     ┆ 2.0    ┆ 3.75  │
    └───────┴─────────┴─────────┴───────┴────────┴───────┘
    """
    if not isinstance(increasing, bool):
        raise ArgumentError(f"increasing= must be True or False, got {increasing!r}")
    source = as_lazy(frame)
    keys = keys_of(by)
    points = pooled_points(source, x=x, y=y, weight=weight, keys=keys)
    out_schema = {**{k: points.collect_schema()[k] for k in keys}, **BLOCK_COLUMNS}

    def fit(pooled: pl.DataFrame) -> pl.DataFrame:
        return _blocks_table(pooled, keys, increasing=increasing)

    return return_like(frame, points.map_batches(fit, schema=out_schema))


def pooled_points(
    source: pl.LazyFrame,
    *,
    x: str,
    y: str,
    weight: str | None,
    keys: list[str],
    checks: Sequence[RowCheck] = (),
    sums: Sequence[pl.Expr] = (),
    reserved: Sequence[str] = (),
) -> pl.LazyFrame:
    """Rows pooled by (keys, x), sorted, with the row checks counted in the same pass.

    Columns: keys…, ``__iso_x`` (x as Float64), ``__iso_n`` (rows), ``__iso_w`` (Σw),
    ``__iso_wy`` (Σw·y), then ``sums`` (further aggregations of the pass). ``checks``
    are counted besides the finiteness checks. Shared by the isotonic and CORP
    estimators.
    """
    columns = {"x": x, "y": y}
    if weight is not None:
        columns["weight"] = weight
    schema = source.collect_schema()
    internal = (_X, _N, _W, _WY, _G)
    check_columns(schema, columns, keys=keys, reserved=(*BLOCK_COLUMNS, *reserved, *internal))
    xv = pl.col(x).cast(pl.Float64)
    yv = pl.col(y).cast(pl.Float64)
    wv = pl.lit(1.0) if weight is None else pl.col(weight).cast(pl.Float64)
    checks = [
        RowCheck(x, "null, NaN or infinite", not_true(xv.is_finite())),
        RowCheck(y, "null, NaN or infinite", not_true(yv.is_finite())),
        *checks,
    ]
    if weight is not None:
        checks.append(
            RowCheck(weight, "not positive and finite", not_true(wv.is_finite() & (wv > 0)))
        )
    pooled = (
        source.with_columns(xv.alias(_X))
        .group_by(*keys, _X)
        .agg(
            pl.len().cast(pl.UInt64).alias(_N),
            (pl.len().cast(pl.Float64) if weight is None else wv.sum()).alias(_W),
            (yv.sum() if weight is None else (wv * yv).sum()).alias(_WY),
            *sums,
            *count_bad_rows(checks),
        )
    )
    checked = raise_on_bad_rows(
        pooled, source=source, keys=keys, checks=checks, total_rows=pl.col(_N).sum()
    )
    return checked.sort(*keys, _X, nulls_last=True)


def _within_group(expr: pl.Expr, keys: list[str]) -> pl.Expr:
    return expr.over(keys) if keys else expr


def group_index(pooled: pl.DataFrame, keys: list[str]) -> npt.NDArray[np.int64]:
    """0-based group number of every row of a frame sorted by ``keys``."""
    if not keys or pooled.height == 0:
        return np.zeros(pooled.height, dtype=np.int64)
    ids = pooled.select(pl.struct(keys).rle_id().alias(_G))[_G]
    return ids.to_numpy().astype(np.int64)


def pav_blocks(
    group: npt.NDArray[np.int64], weight: F64Array, weighted_sum: F64Array, *, increasing: bool
) -> npt.NDArray[np.int64]:
    """Block number (0-based over all groups) of every pooled point.

    ``group`` is non-decreasing; points of one group are in ``x`` order. The blocks are
    those of the weighted isotonic regression of ``weighted_sum / weight`` per group.
    """
    from scipy.optimize import isotonic_regression

    n = weight.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    sign = 1.0 if increasing else -1.0
    mean = sign * weighted_sum / weight
    spread = float(mean.max() - mean.min())
    shift = 2.0 * spread + 1.0
    first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    # centre each group on its own first point, then stack the groups apart
    shifted = (mean - np.repeat(mean[first], np.diff(np.r_[first, n]))) + group * shift
    result: Any = isotonic_regression(shifted, weights=weight, increasing=True)
    starts = np.asarray(result.blocks[:-1], dtype=np.int64)
    # a block never spans two groups: cut at group starts anyway (guards rounding)
    starts = np.union1d(starts, first)
    block = np.zeros(n, dtype=np.int64)
    block[starts[1:]] = 1
    block = np.cumsum(block)
    # refit any group whose exact block means still decrease (rounding near ties)
    sw = np.bincount(block, weights=weight)
    swy = np.bincount(block, weights=weighted_sum)
    value = sign * swy / sw
    block_group = group[starts]
    bad = (np.diff(value) < 0) & (block_group[1:] == block_group[:-1])
    if bad.any():
        block = _refit_groups(group, mean, weight, block, np.unique(block_group[1:][bad]))
    return block


def _refit_groups(
    group: npt.NDArray[np.int64],
    mean: F64Array,
    weight: F64Array,
    block: npt.NDArray[np.int64],
    groups: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Redo the PAV of a few groups one by one (only after a rounding problem)."""
    from scipy.optimize import isotonic_regression

    starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]]).tolist()
    for g in groups.tolist():  # rare: only groups whose shifted fit misjudged a tie
        rows = np.flatnonzero(group == g)
        lo, hi = int(rows[0]), int(rows[-1]) + 1
        fit: Any = isotonic_regression(mean[lo:hi], weights=weight[lo:hi], increasing=True)
        starts = [s for s in starts if not lo <= s < hi] + [lo + int(b) for b in fit.blocks[:-1]]
    marks = np.zeros(block.size, dtype=np.int64)
    marks[np.unique(np.asarray(starts, dtype=np.int64))[1:]] = 1
    return np.cumsum(marks)


def _blocks_table(pooled: pl.DataFrame, keys: list[str], *, increasing: bool) -> pl.DataFrame:
    group = group_index(pooled, keys)
    w = pooled[_W].to_numpy().astype(np.float64)
    wy = pooled[_WY].to_numpy().astype(np.float64)
    block = pav_blocks(group, w, wy, increasing=increasing)
    return (
        pooled.with_columns(pl.Series(_G, block))
        .group_by(_G, maintain_order=True)
        .agg(
            *[pl.col(k).first() for k in keys],
            pl.col(_X).min().alias("x_lower"),
            pl.col(_X).max().alias("x_upper"),
            pl.col(_N).sum().alias("count"),
            pl.col(_W).sum().alias("weight"),
            (pl.col(_WY).sum() / pl.col(_W).sum()).alias("value"),
        )
        .with_columns(_within_group(pl.int_range(pl.len(), dtype=pl.UInt32), keys).alias("block"))
        .select(*keys, *BLOCK_COLUMNS)
    )
