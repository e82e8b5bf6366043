"""Inputs: frame plumbing, schema checks and row checks that ride along the aggregation pass.

Every entry point of calib_frames accepts a polars ``DataFrame`` or ``LazyFrame``
and returns the same kind: lazy in, lazy out; eager in, eager out.

Bad input is found in two places:

* **Schema checks** (missing columns, wrong dtypes, clashing names) run when the
  query is built, from the frame's schema alone.
* **Row checks** (null/NaN/out-of-range values, negative NLL, fractional counts, ...)
  are counted *inside* the same ``group_by`` pass that computes the statistics: a
  :class:`RowCheck` either adds one ``sum`` of a boolean to the aggregation or is counted
  from a group key that is null on offending rows. After the pass the small aggregated
  frame goes through :func:`raise_on_bad_rows`; only if some count is non-zero does it
  look up one offending row (a short, early-stopping filtered scan on the error path) so
  that the message can show an example with its group keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import polars as pl

from calib_frames.exceptions import ArgumentError, DataError, SchemaError

__all__ = [
    "Frame",
    "RowCheck",
    "as_lazy",
    "count_bad_rows",
    "describe_problem",
    "divide",
    "group_keys",
    "integral_check",
    "not_true",
    "raise_on_bad_rows",
    "require_columns",
    "return_like",
]

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def as_lazy(frame: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Return ``frame`` as a LazyFrame, raising a clear error for anything else."""
    if isinstance(frame, pl.LazyFrame):
        return frame
    if isinstance(frame, pl.DataFrame):
        return frame.lazy()
    raise ArgumentError(
        f"expected a polars DataFrame or LazyFrame, got {type(frame).__name__}; "
        "wrap arrays with pl.DataFrame({...}) or use CalibrationReport.from_predictions"
    )


def return_like(template: Frame, result: pl.LazyFrame) -> Frame:
    """Collect ``result`` if ``template`` was eager, so that the output kind matches the input."""
    if isinstance(template, pl.DataFrame):
        return result.collect()
    return result


def group_keys(by: str | Sequence[str] | None) -> list[str]:
    """Normalise a ``by=`` argument to a list of column names (``None`` = whole frame)."""
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    if not isinstance(by, Sequence):
        raise ArgumentError(
            f"by= takes a column name or a list of column names, got {by!r} of type "
            f"{type(by).__name__}"
        )
    keys = list(by)
    for key in keys:
        if not isinstance(key, str):
            raise ArgumentError(
                f"by= takes column names (str), got {key!r} of type {type(key).__name__}"
            )
    if len(set(keys)) != len(keys):
        twice = sorted({key for key in keys if keys.count(key) > 1})
        raise ArgumentError(f"by= names a column twice: {twice} in {keys}")
    return keys


def require_columns(
    schema: pl.Schema,
    columns: Mapping[str, str],
    *,
    numeric: Sequence[str] = (),
    reserved: Sequence[str] = (),
    keys: Sequence[str] = (),
) -> None:
    """Check that the columns exist, the numeric roles are numeric, keys do not clash.

    The group keys must not be named like output columns.

    ``columns`` maps a role (``"confidence"``) to the user's column name. Raises
    :class:`~calib_frames.exceptions.SchemaError` naming the role, the column and the
    available columns.
    """
    missing = [f"{role}={name!r}" for role, name in columns.items() if name not in schema]
    missing += [f"by={key!r}" for key in keys if key not in schema]
    if missing:
        available = ", ".join(repr(c) for c in schema.names())
        raise SchemaError(
            f"column not found: {', '.join(missing)}; available columns: {available or 'none'}"
        )
    for role in numeric:
        name = columns[role]
        dtype = schema[name]
        if not (dtype.is_numeric() or dtype == pl.Boolean):
            raise SchemaError(f"column {name!r} ({role}) must be numeric, got dtype {dtype}")
    clashes = [key for key in keys if key in reserved]
    if clashes:
        raise SchemaError(
            f"group key(s) {clashes} clash with output columns of the same name; "
            f"rename them first, e.g. frame.rename({{{clashes[0]!r}: {clashes[0] + '_key'!r}}})"
        )


@dataclass(frozen=True)
class RowCheck:
    """A row-level contract and how the aggregation pass counts its violations.

    Attributes
    ----------
    column
        The user's column the check is about (shown in the error).
    problem
        What is wrong with the offending rows, phrased to follow "N rows are ...".
    bad
        Row-level boolean expression, True on offending rows (nulls mapped to True);
        used to find an example on the error path.
    count
        Expression over the *aggregated* frame giving the number of offending rows.
        ``None`` means "count ``bad`` in the pass": :func:`count_bad_rows` adds the sum.
        (The bin statistics need no extra column for most checks: an invalid confidence
        or outcome gets a null bin/outcome key, so its rows form their own group.)
    with_example
        Whether an offending row can be shown (False for checks on sums, such as an
        overflowing group total, where no single row is at fault).
    """

    column: str
    problem: str
    bad: pl.Expr
    count: pl.Expr | None = None
    with_example: bool = True


ExampleFinder = Callable[[RowCheck], "dict[str, object] | None"]
"""Returns one offending row of a check (its group keys and column) or None."""


def first_offending_row(source: pl.LazyFrame, keys: Sequence[str]) -> ExampleFinder:
    """An :data:`ExampleFinder` that scans ``source`` until the first offending row.

    It runs only on the error path, so a valid input is still read once.
    """

    def find(check: RowCheck) -> dict[str, object] | None:
        columns = list(dict.fromkeys([*keys, check.column]))
        example = source.filter(check.bad).select(columns).head(1).collect()
        return example.row(0, named=True) if example.height else None

    return find


def count_bad_rows(checks: Sequence[RowCheck]) -> list[pl.Expr]:
    """Aggregation expressions for the checks counted by an extra sum in the pass."""
    return [
        check.bad.sum().alias(_count_name(i))
        for i, check in enumerate(checks)
        if check.count is None
    ]


def _count_name(index: int) -> str:
    return f"__calib_bad_{index}"


def raise_on_bad_rows(
    aggregated: pl.LazyFrame,
    *,
    keys: Sequence[str],
    checks: Sequence[RowCheck],
    total_rows: pl.Expr,
    find_example: ExampleFinder,
    drop: Sequence[str] = (),
) -> pl.LazyFrame:
    """Raise a DataError after the pass if any check counted offending rows.

    Otherwise pass the frame on unchanged (less the working columns).

    ``aggregated`` is the small output of the pass (with the columns of
    :func:`count_bad_rows`, which are dropped, and any working columns named in
    ``drop``); ``total_rows`` evaluates to the number of input rows on it. The check runs
    when the result is collected, so lazy stays lazy. The message names each column,
    "N of M rows" and one example with its group keys (found by ``find_example``).
    """
    counted = [_count_name(i) for i, check in enumerate(checks) if check.count is None]
    counted += list(drop)
    totals = [
        (pl.col(_count_name(i)).sum() if check.count is None else check.count).alias(f"c{i}")
        for i, check in enumerate(checks)
    ]
    schema = aggregated.collect_schema()
    out_schema = {name: dtype for name, dtype in schema.items() if name not in counted}

    def check(frame: pl.DataFrame) -> pl.DataFrame:
        *bad_counts, n_rows = frame.select(*totals, total_rows.alias("n")).row(0)
        problems = [
            _describe(check, count, n_rows or 0, find_example, keys)
            for check, count in zip(checks, bad_counts, strict=True)
            if count
        ]
        if problems:
            raise DataError("invalid input:\n  " + "\n  ".join(problems))
        return frame.drop(counted)

    return aggregated.map_batches(check, schema=out_schema)


def _describe(
    check: RowCheck, count: int, n_rows: int, find_example: ExampleFinder, keys: Sequence[str]
) -> str:
    row = find_example(check) if check.with_example else None
    return describe_problem(
        check.column, count, n_rows, check.problem, example=row, keys=keys, value=check.column
    )


def describe_problem(
    column: str,
    count: int,
    total: int,
    problem: str,
    *,
    example: Mapping[str, object] | None,
    keys: Sequence[str],
    value: str | None,
    unit: str = "rows",
) -> str:
    """One line of a DataError: the column, "N of M rows", and an example with its keys.

    Every row check of the package words its message through here, e.g.
    ``column 'confidence': 3 of 1,000 rows are not a probability …; e.g. model='b':
    confidence=1.5``.
    """
    where = ""
    if example is not None:
        group = ", ".join(f"{key}={example[key]!r}" for key in keys)
        shown = f"{value}={example[value]!r}" if value is not None else ""
        where = f"; e.g. {group}{': ' if group and shown else ''}{shown}"
    verb = "is" if count == 1 else "are"
    return f"column {column!r}: {count:,} of {total:,} {unit} {verb} {problem}{where}"


def divide(numerator: pl.Expr, denominator: float) -> pl.Expr:
    """``numerator / denominator``, correctly rounded like Python's ``/``.

    polars divides a column by a scalar through the scalar's reciprocal, so
    ``3.0 / 10`` gives 0.30000000000000004 there. Dividing by a column made from the
    numerator (``numerator * 0 + denominator``, NaN where the numerator is not finite)
    keeps plain IEEE division. Bin edges and ratios that must match other tools to the
    last digit go through here.
    """
    return numerator / (numerator * 0.0 + float(denominator))


def not_true(expr: pl.Expr) -> pl.Expr:
    """``~expr`` with null counted as a violation (the building block of RowCheck.bad)."""
    return expr.not_().fill_null(True)


def integral_check(column: str, *, minimum: int, maximum: int, problem: str) -> RowCheck:
    """Rows whose value in ``column`` is not a finite whole number in [minimum, maximum]."""
    value = pl.col(column).cast(pl.Float64)
    ok = (
        value.is_finite()
        & (value >= minimum)
        & (value <= float(maximum))
        & (value == value.floor())
    )
    return RowCheck(column, problem, not_true(ok))
