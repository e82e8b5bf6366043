"""Shared plumbing of the ``apply_*`` functions.

They read the small parameters table, check that it fits the frame, and join it on its
keys (a lazy left join; rows keep their order).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.recalibrate.splits import check_split
from calib_frames.schema import Table
from calib_frames.validation import as_lazy

__all__ = ["check_unique", "check_values", "in_sample_expr", "join_params", "read_params"]

IN_SAMPLE_PARAM = "__calib_in_sample"
_ONE = "__calib_one"


def read_params(
    params: pl.DataFrame | pl.LazyFrame, table: Table
) -> tuple[pl.DataFrame, list[str]]:
    """Collect the (small) parameters table and return it with its keys.

    The parameters are read once, when the apply query is built; the rows stay lazy.
    """
    if not isinstance(params, pl.DataFrame | pl.LazyFrame):
        raise ArgumentError(
            f"params takes the table returned by a fit_* function, got {type(params).__name__}"
        )
    frame = as_lazy(params).collect()
    keys = table.keys(frame.schema)
    return frame, keys


def check_join(schema: pl.Schema, params: pl.DataFrame, keys: Sequence[str], what: str) -> None:
    """The frame must carry the parameters' keys with compatible dtypes."""
    missing = [key for key in keys if key not in schema]
    if missing:
        raise TableError(
            f"the {what} parameters are per {list(keys)}, but the frame lacks {missing}"
        )
    for key in keys:
        left, right = schema[key], params.schema[key]
        if left != right and not (left.is_numeric() and right.is_numeric()):
            raise TableError(
                f"key {key!r} is {left} in the frame but {right} in the {what} parameters"
            )


def join_params(
    frame: pl.LazyFrame,
    params: pl.DataFrame,
    keys: Sequence[str],
    columns: Sequence[str],
) -> pl.LazyFrame:
    """Left-join the parameter ``columns`` and the in-sample label on ``keys``.

    The columns arrive as ``__calib_<name>``, so that they never clash with the frame's.
    """
    check_unique(params, keys)
    schema = frame.collect_schema()
    right = params.select(
        *(pl.col(key).cast(schema[key]) for key in keys),
        *(pl.col(c).alias(param(c)) for c in columns),
        pl.col("in_sample").alias(IN_SAMPLE_PARAM),
    ).lazy()
    if not keys:
        # a left join on a constant: every row kept even when there are no parameters
        one = pl.lit(0, dtype=pl.UInt8).alias(_ONE)
        joined = frame.with_columns(one).join(
            right.with_columns(one), on=_ONE, how="left", maintain_order="left"
        )
        return joined.drop(_ONE)
    return frame.join(right, on=list(keys), how="left", nulls_equal=True, maintain_order="left")


def check_unique(params: pl.DataFrame, keys: Sequence[str]) -> None:
    """One parameter row per join key (TableError).

    A repeated group (two fits concatenated, a table edited by hand) would silently
    repeat the frame's rows in the join.
    """
    if keys:
        repeated = params.select(keys).is_duplicated()
    else:
        repeated = pl.Series([params.height > 1] * params.height, dtype=pl.Boolean)
    count = int(repeated.sum())
    if count:
        shown = [k for k in keys if not k.startswith("__calib")]
        example = params.filter(repeated).select(shown).row(0, named=True) if shown else {}
        where = ", ".join(f"{k}={v!r}" for k, v in example.items()) or "the whole frame"
        raise TableError(
            f"the parameters table repeats groups: {count:,} of {params.height:,} rows share "
            f"their group with another row (e.g. {where}); pass the table of one fit_* call"
        )


def check_values(params: pl.DataFrame, checks: dict[str, tuple[pl.Expr, str]]) -> None:
    """Parameter columns must hold usable values (a hand-edited or corrupted table)."""
    for column, (good, problem) in checks.items():
        bad = params.filter(good.not_().fill_null(True))
        if bad.height:
            raise DataError(
                f"column {column!r} of the parameters table: {bad.height:,} of "
                f"{params.height:,} rows are {problem}; e.g. {column}={bad[column][0]!r}"
            )


def param(name: str) -> str:
    """The internal name of a joined parameter column."""
    return f"__calib_{name}"


def in_sample_expr(split: str | None, fit_value: object) -> pl.Expr:
    """The row label: the parameters' ``in_sample`` flag, or the row is in the fit split."""
    label = pl.col(IN_SAMPLE_PARAM).fill_null(False)
    if split is not None:
        label = label | (pl.col(split) == pl.lit(fit_value)).fill_null(False)
    return label.alias("in_sample")


def check_output(
    schema: pl.Schema, output: str, split: str | None, fit_value: object = "fit"
) -> None:
    """The output columns must be new; the split column (if any) must exist."""
    if not isinstance(output, str):
        raise ArgumentError(f"output= takes a column name, got {output!r}")
    if output == "in_sample" or output.startswith("__calib"):
        raise ArgumentError(f"output={output!r} is reserved; choose another column name")
    for name in (output, "in_sample"):
        if name in schema:
            raise TableError(
                f"column {name!r} already exists; drop it or pass another output= name"
            )
    if split is not None:
        check_split(schema, split, fit_value)
