"""Shared plumbing of the in-memory estimators: the checked prediction rows, groups.

The estimators collect the rows of every group (they are not additive).
:func:`group_rows` is their preamble: the keys, the rows of :func:`prediction_frame`
(which checks the column roles at once and the rows when they are collected, through
:mod:`calib_frames.validation`) and the result's schema; :meth:`GroupRows.result` runs
the estimator over the collected rows. :func:`grouped` gathers the rows group by group
and :func:`attach` puts the per-group results next to the key table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from calib_frames.validation import (
    Frame,
    as_lazy,
    check_rows,
    group_keys,
    prediction_checks,
    require_columns,
    return_like,
    working,
)

__all__ = [
    "GroupRows",
    "P",
    "W",
    "Y",
    "attach",
    "group_rows",
    "grouped",
    "prediction_frame",
    "require_prediction_columns",
]

P, Y, W = working("p"), working("y"), working("w")
"""The working columns of :func:`prediction_frame`: confidence, outcome, weight (Float64)."""
_PACKED = working("rows")


def require_prediction_columns(
    schema: pl.Schema,
    *,
    confidence: str,
    correct: str,
    weight: str | None,
    keys: Sequence[str],
    reserved: Sequence[str],
    others: Mapping[str, str] | None = None,
) -> None:
    """The column roles of prediction rows (:func:`~calib_frames.validation.require_columns`).

    A Boolean confidence or weight, a key that is also an input column (one of
    ``others`` too: model, item) or is named like an output (``reserved``) is a
    :class:`~calib_frames.exceptions.TableError`.
    """
    roles = {**(others or {}), "confidence": confidence, "correct": correct}
    if weight is not None:
        roles["weight"] = weight
    require_columns(
        schema,
        roles,
        numbers=[role for role in ("confidence", "weight") if role in roles],
        numeric=["correct"],
        reserved=reserved,
        keys=keys,
        inputs_are_not_keys=True,
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
    """keys…, ``P`` (confidence as Float64), ``Y`` (outcome as Float64)[, ``W``], checked.

    The columns are checked now (:func:`require_prediction_columns`); the rows when the
    frame is collected (:func:`prediction_checks`, weights > 0): a
    :class:`~calib_frames.exceptions.DataError` naming the column, "N of M rows" and an
    example with its keys.
    """
    require_prediction_columns(
        source.collect_schema(),
        confidence=confidence,
        correct=correct,
        weight=weight,
        keys=keys,
        reserved=reserved,
    )
    inputs = list(dict.fromkeys([*keys, confidence, correct, *([weight] if weight else [])]))
    checks = prediction_checks(
        confidence=confidence, correct=correct, weight=weight, positive_weight=True
    )
    return check_rows(source.select(inputs), checks, keys=keys).select(
        *keys,
        pl.col(confidence).cast(pl.Float64).alias(P),
        pl.col(correct).cast(pl.Float64).alias(Y),
        *([] if weight is None else [pl.col(weight).cast(pl.Float64).alias(W)]),
    )


@dataclass(frozen=True)
class GroupRows:
    """The checked rows of a per-group estimator, its keys and its result's schema."""

    rows: pl.LazyFrame
    keys: list[str]
    schema: dict[str, pl.DataType]

    def result(self, predictions: Frame, compute: Callable[[pl.DataFrame], pl.DataFrame]) -> Frame:
        """``compute`` of the collected rows, as a frame of the input's kind."""
        return return_like(predictions, self.rows.map_batches(compute, schema=self.schema))

    def no_rows(self, **values: object) -> pl.DataFrame:
        """The result over no rows: no row with keys, else one row of nulls but ``values``."""
        if self.keys:
            return pl.DataFrame(schema=self.schema)
        return pl.DataFrame({name: [values.get(name)] for name in self.schema}, schema=self.schema)


def group_rows(
    predictions: Frame,
    *,
    confidence: str,
    correct: str,
    by: str | Sequence[str] | None,
    weight: str | None,
    columns: Mapping[str, pl.DataType],
    reserved: Sequence[str] = (),
    position: str | None = None,
) -> GroupRows:
    """The preamble of a per-group estimator whose result has ``columns`` after the keys.

    The keys of ``by``, the rows of :func:`prediction_frame` (no key may be named like
    an output column or one of ``reserved``) with their input position in a
    ``position`` column if given (the bootstrap's hash), and the result's schema.
    """
    keys = group_keys(by)
    rows = prediction_frame(
        as_lazy(predictions),
        confidence=confidence,
        correct=correct,
        weight=weight,
        keys=keys,
        reserved=(*columns, *reserved),
    )
    schema = {**{k: rows.collect_schema()[k] for k in keys}, **columns}
    if position is not None:
        rows = rows.with_row_index(position)
    return GroupRows(rows, keys, schema)


def attach(table: pl.DataFrame, columns: Sequence[pl.Series]) -> pl.DataFrame:
    """The key table (possibly without columns) with per-group result columns appended."""
    if table.width == 0:
        return pl.DataFrame(list(columns))
    return table.hstack(list(columns))


def grouped(
    rows: pl.DataFrame, keys: list[str], *, sort_by: str | None = None
) -> tuple[npt.NDArray[np.int64], pl.DataFrame, int, pl.DataFrame]:
    """Gather the rows group by group (groups in key order).

    Rows within a group stay in input order or are sorted by ``sort_by``. Returns the
    group number per row, the key table, the group count and the gathered value
    columns (every column but the keys).

    One ``group_by`` with a per-group sort and an explode: the groups are sorted in
    parallel and in cache, several times faster than one sort of all rows by
    (keys…, value). The value columns travel as one struct, so each group is sorted
    once (not once per column).
    """
    values = [c for c in rows.columns if c not in keys]
    if not keys:
        ordered = rows.sort(sort_by, maintain_order=True) if sort_by is not None else rows
        return np.zeros(rows.height, dtype=np.int64), pl.DataFrame(), 1, ordered.select(values)
    packed = pl.struct(values)
    if sort_by is not None:
        packed = packed.sort_by(sort_by, maintain_order=True)
    gathered = rows.group_by(keys).agg(packed.alias(_PACKED)).sort(keys, nulls_last=True)
    lengths = gathered[_PACKED].list.len().to_numpy().astype(np.int64)
    group = np.repeat(np.arange(gathered.height, dtype=np.int64), lengths)
    unpacked = gathered.select(_PACKED).explode(_PACKED).unnest(_PACKED)
    return group, gathered.select(keys), gathered.height, unpacked
