r"""Multiple-testing corrections of a column of p-values, per family (group), as polars expressions.

When many hypotheses are tested at once (every model pair on every task), some raw
p-values fall below 0.05 by chance alone. :func:`adjust_p_values` adds a column of
*adjusted* p-values: reject a hypothesis at level α when its adjusted p-value is ≤ α.

For one family of m tests with sorted p-values p₍₁₎ ≤ … ≤ p₍ₘ₎:

=========  ============================================  ===============================
method     adjusted p-value of the j-th smallest          controls
=========  ============================================  ===============================
``holm``   max_{k ≤ j} min(1, (m − k + 1)·p₍ₖ₎)            family-wise error rate (any
           (Holm 1979 step-down; monotone non-decreasing)  dependence between the tests)
``bh``     min_{k ≥ j} min(1, m·p₍ₖ₎ / k)                  false discovery rate (independent
           (Benjamini–Hochberg 1995 step-up; monotone)     or positively dependent tests)
=========  ============================================  ===============================

These are the same numbers as ``statsmodels.stats.multitest.multipletests`` with
``method="holm"`` and ``method="fdr_bh"`` (ties give equal adjusted values under both).
A null p-value is "not tested": it gets a null adjusted value and does not count in m.

The tables that test every group of a table at once (the ECE noise floor of
:func:`~calib_frames.compare`, :func:`~calib_frames.leaderboard`, the report) take
``correction=`` (:data:`calib_frames.validation.CORRECTIONS`, declared as
:data:`~calib_frames.validation.CORRECTION`): ``"bh"`` by default, ``"holm"``, or
``"none"`` (the raw p-values decide).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from calib_frames.arguments import COLUMN, Options, check_arguments
from calib_frames.exceptions import TableError
from calib_frames.validation import (
    Frame,
    RowCheck,
    as_lazy,
    check_rows,
    group_keys,
    require_columns,
    return_like,
    working,
)

__all__ = ["adjust_p_values"]

Method = Literal["holm", "bh"]
_ROW = working("row")


@check_arguments(p_value=COLUMN, method=Options.of(Method), output=COLUMN)
def adjust_p_values(
    table: Frame,
    *,
    p_value: str = "p_value",
    by: str | Sequence[str] | None = None,
    method: Method = "holm",
    output: str = "p_value_adjusted",
) -> Frame:
    """Add adjusted p-values (Holm or Benjamini–Hochberg) computed within each family.

    Parameters
    ----------
    table
        Any frame with a column of p-values; lazy in, lazy out.
    p_value
        The column of raw p-values, each in [0, 1] or null (null = not tested).
    by
        Columns whose values define the families corrected separately (``None``: the whole
        table is one family, e.g. every model pair on every task).
    method
        ``"holm"`` (step-down, family-wise error rate) or ``"bh"`` (Benjamini–Hochberg
        step-up, false discovery rate); formulas in the module docstring.
    output
        Name of the added column, which must not exist yet.

    Returns
    -------
    DataFrame or LazyFrame
        ``table`` in its original row order with ``output`` (Float64) appended.

    Raises
    ------
    TableError
        If ``p_value`` or a ``by`` column is missing, ``p_value`` is not numeric, or
        ``output`` names an existing column.
    ArgumentError
        If ``method`` is unknown or ``by`` is malformed.
    DataError
        If a p-value is NaN or outside [0, 1] (checked when the result is collected).

    See Also
    --------
    calib_frames.estimators.paired.paired_comparison : reports both corrections.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.estimators.multiple_testing import adjust_p_values
    >>> t = pl.DataFrame({"task": ["a", "a", "a", "b"], "p_value": [0.01, 0.04, 0.03, 0.04]})
    >>> adjust_p_values(t, method="holm", by="task")["p_value_adjusted"].to_list()
    [0.03, 0.06, 0.06, 0.04]
    >>> adjust_p_values(t, method="bh")["p_value_adjusted"].round(6).to_list()
    [0.04, 0.04, 0.04, 0.04]
    """
    keys: list[str] = group_keys(by)
    lazy = as_lazy(table)
    schema = lazy.collect_schema()
    require_columns(schema, {"p_value": p_value}, numbers=["p_value"], keys=keys)
    if _ROW in schema:
        raise TableError(f"column name {_ROW!r} is reserved")
    if output in schema:
        raise TableError(
            f"output column {output!r} exists already in the table; choose another output="
        )

    def over(expr: pl.Expr) -> pl.Expr:
        return expr.over(keys) if keys else expr

    p = pl.col(p_value).cast(pl.Float64)
    m = over(p.count()).cast(pl.Float64)
    j = over(pl.int_range(1, pl.len() + 1)).cast(pl.Float64)  # rank within the sorted family
    if method == "holm":
        adjusted = over(((m - j + 1.0) * p).cum_max())
    else:
        adjusted = over((p * m / j).cum_min(reverse=True))
    adjusted = pl.when(p.is_null()).then(None).otherwise(adjusted.clip(upper_bound=1.0))

    p_check = RowCheck(
        p_value,
        "not p-values in [0, 1]",
        bad=(p.is_nan() | (p < 0.0) | (p > 1.0)).fill_null(False),
    )
    result = (
        lazy.with_row_index(_ROW)
        .sort([*keys, p_value], nulls_last=True)
        .with_columns(adjusted.alias(output))
        .sort(_ROW)
        .drop(_ROW)
    )
    return return_like(table, check_rows(result, [p_check], keys=keys))
