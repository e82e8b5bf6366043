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
The rows are collected, gathered group by group in x order (one polars ``group_by``
with a per-group sort) and ties are pooled with ``np.add.reduceat``; the pooled points
of *all* groups then go through **one** call of SciPy's compiled PAV
(``scipy.optimize.isotonic_regression``), with group ``g`` shifted by ``g·C``, where
``C`` exceeds the spread of the pooled means, so that no block can straddle two groups.
The shift only steers which neighbours are pooled (a decision that may err when two
neighbouring block means differ by less than about ``1e-16 · g · C``, where either
choice changes the fit by less than that); the reported values are recomputed from
the unshifted sums. Should a recomputed fit still decrease somewhere, that group is
refitted on its own. There is no Python loop over rows or groups
(``benchmarks/bench_estimators.py`` times it against per-group loops).

Every row of a group must be in memory at once (the fit is not additive across parts
of the data); a LazyFrame stays lazy until collected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from calib_frames.arguments import COLUMN, FLAG, check_arguments
from calib_frames.estimators._groups import attach, grouped
from calib_frames.schema import ISOTONIC_BLOCKS
from calib_frames.validation import (
    Frame,
    RowCheck,
    as_lazy,
    check_rows,
    group_keys,
    not_true,
    require_columns,
    return_like,
    working,
)

__all__ = ["isotonic_blocks"]

F64Array = npt.NDArray[np.float64]

# internal column names of the pooled points
_X, _W, _WY = working("x"), working("w"), working("wy")


@check_arguments(x=COLUMN, y=COLUMN, increasing=FLAG)
def isotonic_blocks(
    predictions: Frame,
    *,
    x: str,
    y: str,
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    increasing: bool = True,
) -> Frame:
    """Isotonic regression of ``y`` on ``x`` per group, as a table of constant blocks.

    Minimises Σ w·(y − f(x))² over functions f that are non-decreasing in ``x``
    (non-increasing with ``increasing=False``), separately in every group, by
    pool-adjacent-violators. Per group, in memory (see the module docstring).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per observation (x, y), e.g. predictions with
        x the confidence and y the outcome.
    x
        Column of the regressor (finite numbers).
    y
        Column of the response (finite numbers or booleans).
    by
        Group key column(s); ``None`` fits the whole frame as one group.
    weight
        Optional column of positive, finite weights (default: every row weighs 1).
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
    TableError
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
    >>> from calib_frames.estimators.pav import isotonic_blocks
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
    source = as_lazy(predictions)
    keys = group_keys(by)
    columns = {"x": x, "y": y} if weight is None else {"x": x, "y": y, "weight": weight}
    schema = source.collect_schema()
    require_columns(
        schema,
        columns,
        numeric=["x", "y"],
        numbers=[] if weight is None else ["weight"],
        reserved=tuple(ISOTONIC_BLOCKS.columns),
        keys=keys,
        inputs_are_not_keys=True,
    )
    rows = source.select(
        *keys,
        pl.col(x).cast(pl.Float64).alias(_X),
        pl.col(y).cast(pl.Float64).alias(_WY),
        *([] if weight is None else [pl.col(weight).cast(pl.Float64).alias(_W)]),
    )
    out_schema = {**{k: schema[k] for k in keys}, **ISOTONIC_BLOCKS.columns}
    checks = [
        RowCheck(x, "null, NaN or infinite", not_true(pl.col(_X).is_finite()), value=_X),
        RowCheck(y, "null, NaN or infinite", not_true(pl.col(_WY).is_finite()), value=_WY),
    ]
    if weight is not None:
        w = pl.col(_W)
        checks.append(
            RowCheck(weight, "not positive and finite", not_true(w.is_finite() & (w > 0)), value=_W)
        )

    def fit(collected: pl.DataFrame) -> pl.DataFrame:
        return _fit_blocks(collected, keys, weighted=weight is not None, increasing=increasing)

    checked = check_rows(rows, checks, keys=keys)
    return return_like(predictions, checked.map_batches(fit, schema=out_schema))


def _fit_blocks(
    rows: pl.DataFrame, keys: list[str], *, weighted: bool, increasing: bool
) -> pl.DataFrame:
    """Gather each group's rows in x order, pool ties, run the PAV, build the table."""
    group, table, _, values = grouped(rows, keys, sort_by=_X)
    if values.height == 0:
        return pl.DataFrame(schema={**rows.select(keys).schema, **ISOTONIC_BLOCKS.columns})
    xs = values[_X].to_numpy()  # Float64 columns: no copy beyond polars' own
    ys = values[_WY].to_numpy()
    new_point = np.empty(xs.size, dtype=bool)
    new_point[0] = True
    np.not_equal(xs[1:], xs[:-1], out=new_point[1:])
    new_point[1:] |= group[1:] != group[:-1]
    ties = np.flatnonzero(new_point)
    point_group = group[ties]
    point_n = np.diff(np.r_[ties, xs.size])
    if weighted:
        ws = values[_W].to_numpy()
        point_w = np.add.reduceat(ws, ties)
        point_wy = np.add.reduceat(ws * ys, ties)
    else:  # every row weighs 1: a point's weight is its row count
        point_w = point_n.astype(np.float64)
        point_wy = np.add.reduceat(ys, ties)
    block = pav_blocks(point_group, point_w, point_wy, increasing=increasing)
    first = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
    last_row = np.r_[ties[first[1:]] - 1, xs.size - 1]
    block_group = point_group[first]
    group_start = np.flatnonzero(np.r_[True, block_group[1:] != block_group[:-1]])
    within = np.arange(first.size) - np.repeat(group_start, np.diff(np.r_[group_start, first.size]))
    weight_ = np.add.reduceat(point_w, first)
    return attach(
        table[block_group.tolist()] if keys else table,
        [
            pl.Series("block", within, dtype=pl.UInt32),
            pl.Series("x_lower", xs[ties[first]], dtype=pl.Float64),
            pl.Series("x_upper", xs[last_row], dtype=pl.Float64),
            pl.Series("count", np.add.reduceat(point_n, first), dtype=pl.UInt64),
            pl.Series("weight", weight_, dtype=pl.Float64),
            pl.Series("value", np.add.reduceat(point_wy, first) / weight_, dtype=pl.Float64),
        ],
    )


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
    # a block never spans two groups: cut at group starts anyway (guards rounding)
    cut = np.zeros(n, dtype=np.int64)
    cut[np.asarray(result.blocks[:-1], dtype=np.int64)] = 1
    cut[first] = 1
    starts = np.flatnonzero(cut)
    block = np.cumsum(cut) - 1
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
