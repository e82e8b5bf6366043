"""Shared plumbing of the recalibration fitters.

Checks, collection into group-indexed numpy arrays, the safeguarded vectorised Newton
solver, and the parameters-table labels.

The fitters are per group and in memory: the fit rows are collected once (no sort
unless the options of a question are scattered), every row gets a dense group index, and
every group is then iterated *together* (numpy arrays indexed by group, per-group sums by
``np.bincount`` / ``np.add.reduceat``), never by a Python loop over groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.recalibrate.splits import FitScheme, check_fold_column, fit_rows

__all__ = [
    "Collected",
    "check_columns",
    "collect_binary",
    "logit_expr",
    "newton_1d",
    "params_frame",
]

FloatArray = np.ndarray
RESERVED_PREFIX = "__calib"
_G = "__calib_group"
_P, _Y, _W = "__calib_p", "__calib_y", "__calib_w"
_RUN = "__calib_run"


def check_columns(
    schema: pl.Schema,
    columns: Mapping[str, str],
    *,
    keys: Sequence[str] = (),
    numeric: Sequence[str] = (),
    boolean_like: Sequence[str] = (),
    reserved: Sequence[str] = (),
) -> None:
    """Missing columns, wrong dtypes and key clashes, from the schema alone (TableError)."""
    for role, name in columns.items():
        if not isinstance(name, str):
            raise ArgumentError(f"{role}= takes a column name, got {name!r}")
    missing = [f"{role}={name!r}" for role, name in columns.items() if name not in schema]
    missing += [f"by={key!r}" for key in keys if key not in schema]
    if missing:
        available = ", ".join(repr(c) for c in schema.names()) or "none"
        raise TableError(f"column not found: {', '.join(missing)}; available columns: {available}")
    for role in numeric:
        dtype = schema[columns[role]]
        if not dtype.is_numeric():
            raise TableError(f"column {columns[role]!r} ({role}) must be numeric, got {dtype}")
    for role in boolean_like:
        dtype = schema[columns[role]]
        if not (dtype == pl.Boolean or dtype.is_integer() or dtype.is_float()):
            raise TableError(
                f"column {columns[role]!r} ({role}) must be boolean or 0/1, got {dtype}"
            )
    same = [f"{role}={name!r}" for role, name in columns.items() if name in keys]
    if same:
        raise TableError(
            f"group key(s) are also input columns: {', '.join(same)}; by= must not name a "
            "column the map is fitted on"
        )
    clashes = [k for k in keys if k in reserved or k.startswith(RESERVED_PREFIX)]
    if clashes:
        raise TableError(
            f"group key(s) {clashes} clash with output columns of the same name; rename them"
        )


def check_epsilon(epsilon: float) -> float:
    """The logit clipping epsilon must lie in (0, 0.5)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
        raise ArgumentError(f"epsilon= takes a float in (0, 0.5), got {epsilon!r}")
    if not 0.0 < float(epsilon) < 0.5:
        raise ArgumentError(f"epsilon= takes a float in (0, 0.5), got {epsilon!r}")
    return float(epsilon)


def logit_expr(p: pl.Expr, epsilon: float) -> pl.Expr:
    """``logit(clip(p, ε, 1 − ε))`` = ln p − ln(1 − p) (finite for every p in [0, 1])."""
    clipped = p.cast(pl.Float64).clip(epsilon, 1.0 - epsilon)
    return clipped.log() - (-clipped).log1p()


def sigmoid_expr(x: pl.Expr) -> pl.Expr:
    """1 / (1 + e^(−x)) (exact 0 or 1 only where the double rounds there)."""
    return 1.0 / (1.0 + (-x).exp())


def outcome_expr(column: str, dtype: pl.DataType) -> pl.Expr:
    """1.0 / 0.0 for correct / wrong rows; null for anything that is not boolean or 0/1."""
    if dtype == pl.Boolean:
        return pl.col(column).cast(pl.Float64)
    y = pl.col(column).cast(pl.Float64)
    return pl.when((y == 1.0) | (y == 0.0)).then(y)


@dataclass
class Collected:
    """Fit rows as numpy arrays, sorted by group; ``groups`` holds the keys of each group."""

    groups: pl.DataFrame
    group: FloatArray  # int64 group index per row
    columns: dict[str, FloatArray]
    n_groups: int


def collect_grouped(
    rows: pl.LazyFrame,
    keys: Sequence[str],
    values: Mapping[str, pl.Expr],
    *,
    runs_of: str | None = None,
    extra: Sequence[str] = (),
    per_row: bool = True,
) -> tuple[pl.DataFrame, FloatArray, pl.DataFrame, int, FloatArray]:
    """Collect ``values`` with a dense group index (groups numbered in key order).

    No sort of the rows is needed. The rows are cut into *runs* of equal consecutive
    keys (and ``runs_of``, the question column); the first row of each run is matched to
    the small table of distinct keys, and the run's group index repeated over its rows.
    With ``runs_of``, the rows of one question must be contiguous for the per-question
    sums: they usually are (the options of a question arrive together); that no
    question has two runs is checked (a hash of each run's first row, sorted, then an
    exact check only if two hashes collide), and otherwise the rows are sorted by keys
    and question first.

    Returns the groups table (keys, one row per group in index order), the group index
    per row (``per_row=False``: per run), the collected frame (the ``values`` columns and
    ``extra`` columns), the number of groups (a frame without keys is one group if it has
    rows, else none) and the row index where each run starts.
    """
    select = [*keys, *extra, *(expr.alias(name) for name, expr in values.items())]
    collected = rows.select(select).collect()
    within = [*keys, *(() if runs_of is None else (runs_of,))]
    starts, heads = _runs(collected, within)
    if runs_of is not None and not _distinct_runs(heads, within):
        collected = collected.sort(within, nulls_last=True)
        starts, heads = _runs(collected, within)
    height = collected.height
    if not keys:
        n_groups = 1 if height else 0
        size = height if per_row else starts.size
        return pl.DataFrame(), np.zeros(size, dtype=np.int64), collected, n_groups, starts
    groups = heads.select(keys).unique().sort(keys, nulls_last=True)
    index = groups.with_row_index(_G)
    run_group = (
        heads.select(keys)
        .join(index, on=list(keys), how="left", nulls_equal=True, maintain_order="left")[_G]
        .to_numpy()
        .astype(np.int64)
    )
    if not per_row:
        return groups, run_group, collected, groups.height, starts
    group = np.repeat(run_group, np.diff(np.r_[starts, height]))
    return groups, group, collected, groups.height, starts


def _runs(frame: pl.DataFrame, columns: Sequence[str]) -> tuple[FloatArray, pl.DataFrame]:
    """Start row of each run of equal consecutive ``columns`` values, and those rows."""
    if not columns or frame.height == 0:
        return np.zeros(min(frame.height, 1), dtype=np.int64), frame.select(columns).head(1)
    first = pl.int_range(pl.len()) == 0
    for column in columns:
        first = first | pl.col(column).ne_missing(pl.col(column).shift(1))
    starts = np.flatnonzero(frame.select(first.alias("b"))["b"].to_numpy())
    return starts, frame.select(columns)[starts]


def _distinct_runs(heads: pl.DataFrame, columns: Sequence[str]) -> bool:
    """Whether no value of ``columns`` starts two runs (i.e. every value is contiguous)."""
    if heads.height < 2:
        return True
    hashed = heads.select(pl.struct(*columns).hash(seed=0).alias("h"))["h"].to_numpy()
    ordered = np.sort(hashed)
    if not (ordered[1:] == ordered[:-1]).any():
        return True
    return not heads.is_duplicated().any()  # a hash collision, or a real repeat


def run_id(columns: Sequence[str]) -> pl.Expr:
    """Id of the runs of equal consecutive values of ``columns`` (0, 1, ...)."""
    if not columns:
        return pl.lit(0, dtype=pl.UInt32)
    if len(columns) == 1:
        return pl.col(columns[0]).rle_id()
    return pl.struct(*columns).rle_id()


def first_bad_row(frame: pl.DataFrame, bad: FloatArray, keys: Sequence[str], column: str) -> str:
    """Describe the first offending row, as in "; e.g. model='a': confidence=1.5"."""
    index = int(np.flatnonzero(bad)[0])
    row = frame.row(index, named=True)
    group = ", ".join(f"{key}={row[key]!r}" for key in keys if key in row)
    return f"; e.g. {group + ': ' if group else ''}{column}={row[column]!r}"


def raise_bad(
    frame: pl.DataFrame,
    bad: FloatArray,
    keys: Sequence[str],
    column: str,
    problem: str,
    *,
    what: str = "rows",
) -> None:
    """Raise DataError naming the column, 'N of M rows' and one example."""
    count = int(np.count_nonzero(bad))
    if count:
        verb = "is" if count == 1 else "are"
        example = first_bad_row(frame, bad, keys, column)
        raise DataError(
            f"column {column!r}: {count:,} of {bad.size:,} {what} {verb} {problem}{example}"
        )


def prepare_rows(
    frame: pl.LazyFrame, keys: list[str], scheme: FitScheme
) -> tuple[pl.LazyFrame, list[str]]:
    """The fit rows of ``scheme`` and the fitted groups' keys; checks the fold column."""
    if scheme.fitted_on == "cross_fit":
        assert scheme.fold is not None
        if scheme.fold not in frame.collect_schema():
            raise TableError(
                f"fold column {scheme.fold!r} not found; add one with "
                "calib_frames.recalibrate.assign_folds(frame, item=...)"
            )
        check_fold_column(frame.select(*keys, scheme.fold).collect(), scheme.fold, keys)
    rows, fit_keys = fit_rows(frame, keys, scheme)
    if scheme.fitted_on == "split":
        _check_fit_rows_exist(frame, rows, scheme)
    return rows, fit_keys


def _check_fit_rows_exist(frame: pl.LazyFrame, rows: pl.LazyFrame, scheme: FitScheme) -> None:
    """DataError when a non-empty frame has no row with ``split == fit_value``.

    Without it a typo in ``fit_value=`` (or an all-null split column) fits no map and
    every applied row silently gets a null. Two early-stopping one-column scans.
    """
    split = scheme.split
    assert split is not None
    if rows.select(pl.col(split)).head(1).collect().height:
        return
    seen = frame.select(pl.col(split)).unique(maintain_order=True).head(6).collect()[split]
    if seen.len() == 0:
        return  # an empty frame fits nothing, and says so by an empty table
    total = frame.select(pl.len()).collect().item()
    shown = ", ".join(repr(v) for v in seen.to_list()[:5]) + (", ..." if seen.len() > 5 else "")
    raise DataError(
        f"column {split!r}: 0 of {total:,} rows have {split}={scheme.fit_value!r}, the fit "
        f"rows of split=; the column holds {shown}: pass fit_value= one of them"
    )


def collect_binary(
    rows: pl.LazyFrame,
    keys: list[str],
    *,
    confidence: str,
    correct: str,
    weight: str | None,
    epsilon: float,
) -> tuple[Collected, FloatArray]:
    """Collect and check binary fit rows: logit ``z``, outcome ``y``, weight ``w``.

    Returns the collected arrays and the number of clipped rows per group.

    Raises
    ------
    DataError
        Null/NaN/out-of-range confidences, outcomes that are not boolean or 0/1,
        negative or non-finite weights.
    """
    schema = rows.collect_schema()
    values = {
        _P: pl.col(confidence).cast(pl.Float64),
        _Y: outcome_expr(correct, schema[correct]),
    }
    if weight is not None:
        values[_W] = pl.col(weight).cast(pl.Float64)
    extra = [c for c in {confidence, correct, *(() if weight is None else (weight,))}]
    extra = [c for c in extra if c not in keys]
    groups, group, frame, n_groups, _ = collect_grouped(rows, keys, values, extra=extra)
    p = frame[_P].to_numpy()
    y = frame[_Y].to_numpy()
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        raise_bad(
            frame,
            ~((p >= 0.0) & (p <= 1.0)),
            keys,
            confidence,
            "not a probability in [0, 1] (null, NaN, infinite or out of range)",
        )
        raise_bad(
            frame,
            ~np.isfinite(np.asarray(y, dtype=np.float64)),
            keys,
            correct,
            "not boolean or 0/1 (or null)",
        )
        if weight is not None:
            w = np.asarray(frame[_W].to_numpy(), dtype=np.float64)
            raise_bad(frame, ~(np.isfinite(w) & (w >= 0)), keys, weight, "not a finite weight >= 0")
            # a group whose weights are all 0 has nothing to fit: its map would be the
            # starting point of the solver (and its log-losses 0/0 = NaN)
            total = np.bincount(group, weights=w, minlength=n_groups)
            raise_bad(
                frame,
                total[group] <= 0,
                keys,
                weight,
                "in a group whose weights sum to 0, so there is nothing to fit",
            )
        else:
            w = np.ones_like(p)
    clipped_rows = (p < epsilon) | (p > 1.0 - epsilon)
    clipped = np.bincount(group, weights=clipped_rows, minlength=n_groups)
    pc = np.clip(p, epsilon, 1.0 - epsilon)
    z = np.log(pc) - np.log1p(-pc)
    collected = Collected(
        groups, group, {"z": z, "y": np.asarray(y, dtype=np.float64), "w": w, "p": p}, n_groups
    )
    return collected, clipped


def group_sum(group: FloatArray, values: FloatArray, n_groups: int) -> FloatArray:
    """Σ values per group (float64)."""
    return np.bincount(group, weights=values, minlength=n_groups)


@dataclass
class NewtonResult:
    """Per-group outcome of :func:`newton_1d`."""

    x: FloatArray
    iterations: FloatArray
    converged: FloatArray
    at_bound: FloatArray
    loss: FloatArray | None = None  # the objective at x, when derivatives report it
    start_loss: FloatArray | None = None  # the objective at the (clipped) start


def newton_1d(
    derivatives: Callable[
        [FloatArray, FloatArray], tuple[FloatArray, FloatArray, FloatArray | None]
    ],
    *,
    start: FloatArray,
    lower: float,
    upper: float,
    rtol: float,
    max_iter: int,
) -> NewtonResult:
    """Minimise a convex function of one positive variable per group, all groups at once.

    Safeguarded Newton on the bracket ``[lower, upper]``: each step evaluates the first
    and second derivative of every group's objective (``derivatives(x, active)`` →
    (g, h, loss), where the objective itself may be ``None``; entries of groups that
    have stopped, ``active`` False, may be left unevaluated),
    shrinks the group's bracket to the side where the minimum lies (g > 0: minimum below
    x; convexity makes the sign of g decide), and takes the Newton step if it stays
    inside the bracket, else the bound itself (tried once) or the geometric
    midpoint of the bracket. A group stops when its Newton step is below ``rtol``·x,
    its bracket is narrower than that, its gradient is 0, or it sits on a bound with the
    gradient pointing outwards (a constrained minimum: ``at_bound``). A group that
    stops keeps the x it was evaluated at (within ``rtol``·x of the minimum), so the
    objective reported there needs no extra evaluation; the function iterates until
    every group stopped or ``max_iter`` steps were taken (``converged`` False for those
    still moving).
    """
    x = np.clip(np.asarray(start, dtype=np.float64), lower, upper)
    n = x.size
    lo = np.full(n, lower)
    hi = np.full(n, upper)
    tried_lo = np.zeros(n, dtype=bool)
    tried_hi = np.zeros(n, dtype=bool)
    active = np.ones(n, dtype=bool)
    converged = np.zeros(n, dtype=bool)
    at_bound = np.zeros(n, dtype=bool)
    iterations = np.zeros(n, dtype=np.int64)
    loss: FloatArray | None = None
    start_loss: FloatArray | None = None
    for _ in range(max_iter):
        if not active.any():
            break
        g, h, value = derivatives(x, active)
        if value is not None:
            loss = value.copy() if loss is None else np.where(active, value, loss)
            if start_loss is None:
                start_loss = value.copy()
        iterations += active
        g = np.where(np.isfinite(g), g, 0.0)
        hi = np.where(active & (g > 0), x, hi)
        lo = np.where(active & (g < 0), x, lo)
        on_lower = (x <= lower) & (g >= 0)
        on_upper = (x >= upper) & (g <= 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(h > 0, g / h, np.inf)
        newton = x - step
        inside = np.isfinite(newton) & (newton >= lo) & (newton <= hi)
        go_lower = ~inside & (newton <= lo) & (lo <= lower) & ~tried_lo
        go_upper = ~inside & (newton >= hi) & (hi >= upper) & ~tried_hi
        midpoint = np.sqrt(lo * hi)
        new = np.where(
            inside, newton, np.where(go_lower, lower, np.where(go_upper, upper, midpoint))
        )
        tried_lo |= active & go_lower
        tried_hi |= active & go_upper
        # a step below the tolerance ends the group (its bracket end may equal x to
        # rounding, so the step need not be strictly inside the bracket)
        small = np.abs(step) <= rtol * x
        collapsed = (hi - lo) <= rtol * x
        done = active & ((g == 0) | small | collapsed | on_lower | on_upper)
        at_bound |= done & (on_lower | on_upper)
        converged |= done
        x = np.where(active & ~done, new, x)
        active &= ~done
    if loss is not None:
        loss = np.where(active, np.nan, loss)  # groups still moving: x was not evaluated
    return NewtonResult(x, iterations, converged, at_bound, loss, start_loss)


def params_frame(
    groups: pl.DataFrame,
    columns: Mapping[str, Any],
    scheme: FitScheme,
    schema: Mapping[str, pl.DataType],
) -> pl.DataFrame:
    """keys…, the given columns (cast to ``schema``), then ``fitted_on`` and ``in_sample``."""
    data = pl.DataFrame(
        {name: pl.Series(name, values, dtype=schema[name]) for name, values in columns.items()}
    )
    if groups.width:
        data = pl.concat([groups, data], how="horizontal")
    return data.with_columns(*scheme.labels())


def empty_groups(keys: Sequence[str], schema: pl.Schema) -> pl.DataFrame:
    """A zero-row keys table with the input's key dtypes."""
    return pl.DataFrame(schema={key: schema[key] for key in keys})


def check_bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    """Temperature bounds: 0 < low < high < inf."""
    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ArgumentError(
            f"bounds= takes (low, high) with 0 < low < high, got {bounds!r}"
        ) from None
    if not (0.0 < low < high < np.inf):
        raise ArgumentError(f"bounds= takes (low, high) with 0 < low < high, got {bounds!r}")
    return low, high


def check_positive_int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError(f"{name}= takes a positive integer, got {value!r}")
    return value


def check_tolerance(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise ArgumentError(f"tol= takes a float in (0, 1), got {value!r}")
    return float(value)
