r"""Per-bin binomial confidence intervals for a bin's accuracy, as polars expressions.

A bin of a reliability diagram with n predictions of which x are correct estimates the
bin's true accuracy by x/n. Its **Wilson score interval** (Wilson 1927) at level 1 − α,
with z the 1 − α/2 quantile of the standard normal, is

    (x + z²/2) / (n + z²)  ±  z / (n + z²) · √( x(n − x)/n + z²/4 )

It is the interval of true accuracies θ that a two-sided score test of θ would not reject,
so it never leaves [0, 1], is not degenerate at x = 0 or x = n (unlike the normal "Wald"
interval), and covers close to its nominal level even for small n. The **Jeffreys**
interval (Beta quantiles) behaves similarly but needs the inverse incomplete beta function,
which polars does not offer as an expression; Wilson is therefore the method here.
The numbers equal ``statsmodels.stats.proportion.proportion_confint(x, n,
method="wilson")``.

**Weights.** For a weighted table the bin's accuracy is the weighted mean ΣwY/Σw; the
interval then uses n = ``count`` (the number of rows in the bin) and x = accuracy · n. This
is exact for equal weights; with unequal weights the effective sample size (Kish:
(Σw)²/Σw²) is smaller than n and the interval is too narrow by the factor
√(n / n_eff).
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Literal

import polars as pl

from calib_frames.arguments import LEVEL, Options, check_arguments
from calib_frames.exceptions import TableError
from calib_frames.validation import Frame, as_expr, as_lazy, return_like

__all__ = ["accuracy_interval", "normal_quantile", "with_accuracy_intervals"]

IntoExpr = pl.Expr | str


@check_arguments(level=LEVEL)
def normal_quantile(level: float) -> float:
    """The z with P(|Z| ≤ z) = ``level`` for a standard normal Z.

    Parameters
    ----------
    level
        Two-sided level in (0, 1).

    Returns
    -------
    float
        The 1 − (1 − level)/2 quantile of the standard normal.

    Raises
    ------
    ArgumentError
        If ``level`` is not in (0, 1).

    Examples
    --------
    >>> round(normal_quantile(0.95), 6)
    1.959964
    """
    return NormalDist().inv_cdf(0.5 + level / 2.0)


@check_arguments(method=Options("wilson"), level=LEVEL)
def accuracy_interval(
    count: IntoExpr,
    correct_count: IntoExpr,
    *,
    method: Literal["wilson"] = "wilson",
    level: float = 0.95,
) -> tuple[pl.Expr, pl.Expr]:
    """Wilson score interval of a proportion, as two polars expressions (low, high).

    Parameters
    ----------
    count
        Number of trials n (column name or expression); n = 0 gives null bounds.
    correct_count
        Number of successes x, 0 ≤ x ≤ n (may be fractional: accuracy · count for a
        weighted bin, see the module docstring).
    method
        ``"wilson"`` (the only method; see the module docstring for why not Jeffreys).
    level
        Confidence level in (0, 1).

    Returns
    -------
    tuple of pl.Expr
        Lower and upper bounds (Float64, within [0, 1]); null where n = 0 or null.

    Raises
    ------
    ArgumentError
        If ``level`` is not in (0, 1) or ``method`` is unknown.

    See Also
    --------
    with_accuracy_intervals : adds the bounds to a bin-statistics or reliability table.

    Examples
    --------
    >>> import polars as pl
    >>> low, high = accuracy_interval("n", "x")
    >>> pl.DataFrame({"n": [10, 0], "x": [6, 0]}).select(
    ...     low.round(4).alias("low"), high.round(4).alias("high")
    ... ).rows()
    [(0.3127, 0.8318), (None, None)]
    """
    z = normal_quantile(level)
    n = as_expr(count).cast(pl.Float64)
    x = as_expr(correct_count).cast(pl.Float64)
    z2 = z * z
    centre = (x + z2 / 2.0) / (n + z2)
    spread = (x * (n - x) / n).clip(lower_bound=0.0)
    half = z / (n + z2) * (spread + z2 / 4.0).sqrt()
    valid = n > 0
    low = pl.when(valid).then((centre - half).clip(0.0, 1.0))
    high = pl.when(valid).then((centre + half).clip(0.0, 1.0))
    return low, high


@check_arguments(method=Options("wilson"), level=LEVEL)
def with_accuracy_intervals(
    table: Frame, *, method: Literal["wilson"] = "wilson", level: float = 0.95
) -> Frame:
    """Add ``accuracy_ci_low`` and ``accuracy_ci_high`` to a table with per-bin accuracy.

    Parameters
    ----------
    table
        A bin-statistics or reliability table (any frame with ``count`` and ``accuracy``).
        The number of trials is the bin's ``weight`` where the table has it (weights are
        frequencies: a weight of k is k predictions), else its ``count``.
    method, level
        See :func:`accuracy_interval`.

    Returns
    -------
    DataFrame or LazyFrame
        ``table`` with the two Float64 columns appended (null for empty bins).

    Raises
    ------
    TableError
        If ``count`` or ``accuracy`` is missing.
    ArgumentError
        For a bad ``level`` or ``method``.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.95] * 10, "correct": [True] * 6 + [False] * 4})
    >>> t = with_accuracy_intervals(cf.reliability_table(df))
    >>> t.filter(pl.col("count") > 0).select(
    ...     "accuracy", pl.col("accuracy_ci_low").round(4)
    ... ).rows()
    [(0.6, 0.3127)]
    """
    lazy = as_lazy(table)
    schema = lazy.collect_schema()
    missing = [c for c in ("count", "accuracy") if c not in schema]
    if missing:
        raise TableError(f"not a bin-statistics or reliability table: missing columns {missing}")
    n = pl.col("weight" if "weight" in schema else "count")
    low, high = accuracy_interval(n, pl.col("accuracy") * n, method=method, level=level)
    result = lazy.with_columns(accuracy_ci_low=low, accuracy_ci_high=high)
    return return_like(table, result)
