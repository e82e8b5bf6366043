"""Shared plumbing of the in-memory estimators: schema checks, row checks, group ids.

The estimators collect the rows of every group (they are not additive), so the row
checks run on the collected columns, in the same pass, and raise :class:`DataError`
with the column, "N of M rows" and one example with its group keys.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import polars as pl

from calib_frames.exceptions import ArgumentError, CalibFramesError, DataError, TableError
from calib_frames.validation import RowCheck, group_keys, require_columns

__all__ = [
    "P",
    "W",
    "Y",
    "attach",
    "group_ids",
    "grouped",
    "keys_of",
    "prediction_frame",
    "validate_predictions",
]

P, Y, W = "__cf_p", "__cf_y", "__cf_w"


def keys_of(by: str | Sequence[str] | None) -> list[str]:
    """:func:`validation.group_keys`, raising :class:`ArgumentError` for a bad ``by=``."""
    try:
        return group_keys(by)
    except (TypeError, ValueError) as error:
        raise ArgumentError(str(error)) from error


def check_columns(
    schema: pl.Schema,
    columns: dict[str, str],
    *,
    keys: Sequence[str],
    reserved: Sequence[str] = (),
    numeric: Sequence[str] | None = None,
) -> None:
    """:func:`validation.require_columns`, raising :class:`TableError`.

    A Boolean column in a number role (``confidence``, ``weight``, ``probabilities``)
    is refused too: it would silently become a confidence of 0 or 1.
    """
    try:
        require_columns(
            schema,
            columns,
            numeric=list(columns) if numeric is None else list(numeric),
            reserved=reserved,
            keys=keys,
        )
    except CalibFramesError as error:
        if isinstance(error, TableError):
            raise
        raise TableError(str(error)) from error
    same = [f"{role}={name!r}" for role, name in columns.items() if name in keys]
    if same:
        raise TableError(
            f"group key(s) are also input columns: {', '.join(same)}; by= must not "
            "name a column the estimate is computed from"
        )
    for role, name in columns.items():
        number_role = role in ("confidence", "weight") or role.startswith("probabilities")
        if number_role and schema[name] == pl.Boolean:
            noun = "probability" if role.startswith("probabilities") else role
            raise TableError(
                f"column {name!r} ({role}) is Boolean; a {noun} must be a "
                "number (were the confidence and correct columns swapped?)"
            )


def prediction_frame(
    source: pl.LazyFrame,
    *,
    confidence: str,
    correct: str,
    keys: list[str],
    reserved: Sequence[str],
    weight: str | None = None,
) -> pl.LazyFrame:
    """keys…, ``P`` (confidence as Float64), ``Y`` (outcome as Float64)[, ``W``]."""
    columns = {"confidence": confidence, "correct": correct}
    if weight is not None:
        columns["weight"] = weight
    schema = source.collect_schema()
    check_columns(schema, columns, keys=keys, reserved=(*reserved, P, Y, W))
    extra = [] if weight is None else [pl.col(weight).cast(pl.Float64).alias(W)]
    return source.select(
        *keys,
        pl.col(confidence).cast(pl.Float64).alias(P),
        pl.col(correct).cast(pl.Float64).alias(Y),
        *extra,
    )


def validate_predictions(
    rows: pl.DataFrame,
    *,
    confidence: str,
    correct: str,
    keys: list[str],
    weight: str | None = None,
    binary: bool = True,
    sort: bool = True,
) -> pl.DataFrame:
    """Raise :class:`DataError` for bad rows; return the rows (sorted by keys if ``sort``)."""
    p, y = pl.col(P), pl.col(Y)
    checks: list[tuple[str, str, pl.Expr]] = [
        (
            confidence,
            "not a probability in [0, 1] (null, NaN, infinite or out of range)",
            p.is_between(0.0, 1.0).not_().fill_null(True),
        ),
    ]
    if binary:
        checks.append(
            (correct, "not boolean or 0/1 (or null)", ((y == 0) | (y == 1)).not_().fill_null(True))
        )
    if weight is not None:
        w = pl.col(W)
        checks.append(
            (weight, "not a finite weight > 0", (w.is_finite() & (w > 0)).not_().fill_null(True))
        )
    counts = rows.select(*[bad.sum().alias(str(i)) for i, (_, _, bad) in enumerate(checks)]).row(0)
    problems = []
    for (column, problem, bad), count in zip(checks, counts, strict=True):
        if count:
            example = rows.filter(bad).row(0, named=True)
            internal = {confidence: P, correct: Y, **({} if weight is None else {weight: W})}
            group = ", ".join(f"{k}={example[k]!r}" for k in keys)
            value = example[internal[column]]
            verb = "is" if count == 1 else "are"
            problems.append(
                f"column {column!r}: {count:,} of {rows.height:,} rows {verb} {problem}; "
                f"e.g. {group + ': ' if group else ''}{column}={value!r}"
            )
    if problems:
        raise DataError("invalid input:\n  " + "\n  ".join(problems))
    if not sort or not keys:
        return rows
    return rows.sort(keys, maintain_order=True, nulls_last=True)


def attach(table: pl.DataFrame, columns: Sequence[pl.Series]) -> pl.DataFrame:
    """The key table (possibly without columns) with per-group result columns appended."""
    if table.width == 0:
        return pl.DataFrame(list(columns))
    return table.hstack(list(columns))


def raise_on_bad_rows(
    aggregated: pl.LazyFrame,
    *,
    source: pl.LazyFrame,
    keys: Sequence[str],
    checks: Sequence[RowCheck],
    total_rows: pl.Expr,
) -> pl.LazyFrame:
    """As :func:`calib_frames.validation.raise_on_bad_rows`, raising :class:`DataError`.

    ``aggregated`` carries the sums of :func:`validation.count_bad_rows`; they are
    checked when the result is collected (lazy stays lazy) and dropped.
    """
    counted = [f"__calib_bad_{i}" for i in range(len(checks))]
    schema = aggregated.collect_schema()
    out_schema = {name: dtype for name, dtype in schema.items() if name not in counted}

    def check(frame: pl.DataFrame) -> pl.DataFrame:
        *bad_counts, n_rows = frame.select(
            *[pl.col(c).sum() for c in counted], total_rows.alias("__n")
        ).row(0)
        problems = []
        for row_check, count in zip(checks, bad_counts, strict=True):
            if not count:
                continue
            example = source.filter(row_check.bad).select(*keys, row_check.column).head(1)
            row = example.collect().row(0, named=True)
            group = ", ".join(f"{key}={row[key]!r}" for key in keys)
            verb = "is" if count == 1 else "are"
            problems.append(
                f"column {row_check.column!r}: {count:,} of {n_rows or 0:,} rows {verb} "
                f"{row_check.problem}; e.g. {group + ': ' if group else ''}"
                f"{row_check.column}={row[row_check.column]!r}"
            )
        if problems:
            raise DataError("invalid input:\n  " + "\n  ".join(problems))
        return frame.drop(counted)

    return aggregated.map_batches(check, schema=out_schema)


def grouped(
    rows: pl.DataFrame, keys: list[str], *, sort_by: str | None = None
) -> tuple[npt.NDArray[np.int64], pl.DataFrame, int, pl.DataFrame]:
    """Gather the rows group by group (groups in key order).

    Rows within a group stay in input order or are sorted by ``sort_by``. Returns the
    group number per row, the key table, the group count and the gathered value
    columns (every column but the keys).

    One ``group_by`` with a per-group sort and an explode: the groups are sorted in
    parallel and in cache, several times faster than one sort of all rows by
    (keys…, value).
    """
    values = [c for c in rows.columns if c not in keys]
    if not keys:
        ordered = rows.sort(sort_by, maintain_order=True) if sort_by is not None else rows
        return np.zeros(rows.height, dtype=np.int64), pl.DataFrame(), 1, ordered.select(values)
    gathered_columns = (
        pl.col(values) if sort_by is None else pl.col(values).sort_by(sort_by, maintain_order=True)
    )
    gathered = rows.group_by(keys).agg(gathered_columns).sort(keys, nulls_last=True)
    lengths = gathered[values[0]].list.len().to_numpy().astype(np.int64)
    group = np.repeat(np.arange(gathered.height, dtype=np.int64), lengths)
    return group, gathered.select(keys), gathered.height, gathered.select(values).explode(values)


def group_ids(
    rows: pl.DataFrame, keys: list[str]
) -> tuple[npt.NDArray[np.int64], pl.DataFrame, int]:
    """Group number of every row (rows sorted by keys), the key table, the group count.

    Without keys the whole frame is one group (also when it is empty) and the key table
    has no columns.
    """
    if not keys:
        return np.zeros(rows.height, dtype=np.int64), pl.DataFrame(), 1
    if rows.height == 0:
        return np.zeros(0, dtype=np.int64), rows.select(keys), 0
    id_series = rows.select(pl.struct(keys).rle_id().alias("__cf_g"))["__cf_g"]
    ids = id_series.to_numpy().astype(np.int64)
    first = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    table = rows.select(keys)[first.tolist()]
    return ids, table, table.height
