"""The apply preamble shared by the ``apply_*`` functions, and their in-sample label.

They read the small parameters table (once, when the apply query is built), check that
it fits the rows, and join it on its keys (a lazy left join; rows keep their order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from calib_frames.arguments import COLUMN, FRAME, Constraint, Rule
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.recalibrate._core import FINGERPRINT, fingerprint
from calib_frames.recalibrate.splits import check_split
from calib_frames.schema import Table
from calib_frames.validation import (
    RESERVED_PREFIX,
    RowCheck,
    as_lazy,
    check_rows,
    not_true,
    require_columns,
    working,
)

__all__ = [
    "APPLIED",
    "FINGERPRINT_PARAM",
    "IN_SAMPLE_PARAM",
    "OUTPUT",
    "ApplyInput",
    "apply_input",
    "check_new_column",
    "fit_rows_again",
    "join_params",
    "labelled",
    "param",
    "with_mapped",
]

IN_SAMPLE_PARAM = working("in_sample")
FINGERPRINT_PARAM = working("fit_fingerprint")
_ONE = working("one")


@dataclass(frozen=True)
class ApplyInput:
    """The rows and the parameters of one ``apply_*`` call, checked.

    Attributes
    ----------
    predictions
        The rows, lazy.
    schema
        Their schema.
    params
        The parameters table, collected.
    keys
        Its group keys (the columns before its first parameter column).
    """

    predictions: pl.LazyFrame
    schema: pl.Schema
    params: pl.DataFrame
    keys: list[str]


def apply_input(
    predictions: pl.DataFrame | pl.LazyFrame,
    params: pl.DataFrame | pl.LazyFrame,
    table: Table,
    *,
    columns: Mapping[str, str],
    output: str,
    split: str | None,
    fit_value: object,
    values: Mapping[str, tuple[pl.Expr, str]],
    within: Sequence[str] = (),
) -> ApplyInput:
    """The apply preamble: the parameters and the rows they are applied to.

    The parameters must be a ``table`` with one row per group (and ``within``: bin,
    block) whose ``values`` are usable (column → (good-row expression, problem)); the
    rows must have a new ``output`` column (and no ``in_sample`` yet), the parameters'
    keys with compatible dtypes, the ``split`` column comparable with ``fit_value`` and
    the numeric input ``columns`` (role → name; a ``question`` column of any dtype).

    Raises
    ------
    ArgumentError
        ``output`` is ``in_sample``.
    TableError
        Not a ``table``; repeated groups; missing or mistyped columns (a
        ``fit_fingerprint`` that does not hold integers).
    DataError
        Parameter values that break ``values`` (a hand-edited or corrupted table).
    """
    frame = as_lazy(params).collect()
    keys = table.keys(frame.schema)
    _check_unique(frame, [*keys, *within])
    problems = [
        RowCheck(column, problem, not_true(good), table="params")
        for column, (good, problem) in values.items()
    ]
    check_rows(frame, problems, keys=keys)
    prints = frame.schema.get(FINGERPRINT)
    if prints is not None and not (prints.is_integer() or prints == pl.Null):
        raise TableError(
            f"column {FINGERPRINT!r} of the {table.name} must hold integers (UInt64, as "
            f"fit_* writes it; a CSV round trip reads Int128), got {prints}"
        )
    source = as_lazy(predictions)
    schema = source.collect_schema()
    check_new_column(schema, output)
    if output == "in_sample":
        raise ArgumentError(f"output={output!r} is reserved; choose another column name")
    if "in_sample" in schema:
        raise TableError("column 'in_sample' already exists; drop it first")
    if split is not None:
        check_split(schema, split, fit_value)
    _check_join(schema, frame, keys, table)
    require_columns(schema, columns, numbers=[role for role in columns if role != "question"])
    return ApplyInput(source, schema, frame, keys)


OUTPUT = Rule(
    f"a column name not starting with {RESERVED_PREFIX!r}",
    lambda value: isinstance(value, str) and not value.startswith(RESERVED_PREFIX),
    refused=(1, RESERVED_PREFIX + "x"),
)
"""``output=``: the name of the column a function adds."""

APPLIED: dict[str, Constraint] = {"params": FRAME, "output": OUTPUT, "split": COLUMN | None}
"""The constraints of the arguments every ``apply_*`` function takes."""


def check_new_column(schema: pl.Schema, output: str) -> None:
    """``output`` (checked: :data:`OUTPUT`) must be a new column of ``schema``."""
    if output in schema:
        raise TableError(f"column {output!r} already exists; drop it or pass another output= name")


def _check_join(schema: pl.Schema, params: pl.DataFrame, keys: Sequence[str], table: Table) -> None:
    """The rows must carry the parameters' keys with compatible dtypes."""
    missing = [key for key in keys if key not in schema]
    if missing:
        raise TableError(f"the {table.name} is per {list(keys)}, but the frame lacks {missing}")
    for key in keys:
        left, right = schema[key], params.schema[key]
        if left != right and not (left.is_numeric() and right.is_numeric()):
            raise TableError(f"key {key!r} is {left} in the frame but {right} in the {table.name}")


def _check_unique(params: pl.DataFrame, keys: Sequence[str]) -> None:
    """One parameter row per join key (TableError).

    A repeated group (two fits concatenated, a table edited by hand) would silently
    repeat the rows in the join.
    """
    if keys:
        repeated = params.select(keys).is_duplicated()
    else:
        repeated = pl.Series([params.height > 1] * params.height, dtype=pl.Boolean)
    count = int(repeated.sum())
    if count:
        shown = [k for k in keys if not k.startswith(RESERVED_PREFIX)]
        example = params.filter(repeated).select(shown).row(0, named=True) if shown else {}
        where = ", ".join(f"{k}={v!r}" for k, v in example.items()) or "the whole frame"
        raise TableError(
            f"the parameters table repeats groups: {count:,} of {params.height:,} rows share "
            f"their group with another row (e.g. {where}); pass the table of one fit_* call"
        )


def join_params(
    rows: pl.LazyFrame,
    params: pl.DataFrame | pl.LazyFrame,
    keys: Sequence[str],
    columns: Sequence[str],
) -> pl.LazyFrame:
    """Left-join the parameter ``columns``, the in-sample label and the fingerprint on ``keys``.

    The columns arrive as :func:`param` names, so that they never clash with the rows'.
    """
    schema = rows.collect_schema()
    prints = [FINGERPRINT] if FINGERPRINT in params.collect_schema() else []
    right = params.lazy().select(
        *(pl.col(key).cast(schema[key]) for key in keys),
        *(pl.col(c).alias(param(c)) for c in columns),
        pl.col("in_sample").alias(IN_SAMPLE_PARAM),
        *(pl.col(c).alias(FINGERPRINT_PARAM) for c in prints),
    )
    if not keys:
        # a left join on a constant: every row kept even when there are no parameters
        one = pl.lit(0, dtype=pl.UInt8).alias(_ONE)
        joined = rows.with_columns(one).join(
            right.with_columns(one), on=_ONE, how="left", maintain_order="left"
        )
        return joined.drop(_ONE)
    return rows.join(right, on=list(keys), how="left", nulls_equal=True, maintain_order="left")


def param(name: str) -> str:
    """The working name of a joined parameter column."""
    return working(f"param_{name}")


def fit_rows_again(applied: ApplyInput, value: str) -> pl.Expr | None:
    """True on every row of a group whose rows are its map's fit rows (``fitted_on="frame"``).

    A map fitted on a whole frame (no fitting scheme) and applied to the same frame
    scores its own fit rows; the parameters table holds the fingerprint of each group's
    fit rows (:func:`calib_frames.recalibrate._core.fingerprint` of ``value``, the
    confidence or option log-likelihood), and a group of the applied rows with the same
    fingerprint is labelled in-sample. ``None`` when the table holds no fingerprint
    (other schemes, or a table written by hand). Rows that add to or leave out some of
    the fit rows are not recognised.
    """
    prints = applied.params.get_column(FINGERPRINT, default=None)
    if prints is None or prints.null_count() == prints.len():
        return None
    same = pl.col(FINGERPRINT_PARAM).max() == fingerprint(pl.col(value))
    return same.over(applied.keys) if applied.keys else same


def labelled(
    rows: pl.LazyFrame,
    split: str | None,
    fit_value: object,
    *,
    again: pl.Expr | None = None,
    drop: Sequence[str] = (),
) -> pl.LazyFrame:
    """Add the ``in_sample`` label; drop the joined parameter columns.

    A row is in-sample if its parameters were fitted with ``in_sample=True``
    (:data:`IN_SAMPLE_PARAM`), it is in the fit split (``split == fit_value``) or its
    group's rows are the fit rows again (``again``, from :func:`fit_rows_again`).
    """
    label = pl.col(IN_SAMPLE_PARAM).fill_null(False)
    if split is not None:
        label = label | (pl.col(split) == pl.lit(fit_value)).fill_null(False)
    if again is not None:
        label = label | again.fill_null(False)
    labelled = rows.with_columns(label.alias("in_sample")).drop(*drop, IN_SAMPLE_PARAM)
    return labelled.drop(FINGERPRINT_PARAM, strict=False)


def with_mapped(
    applied: ApplyInput,
    value: pl.Expr,
    params: Sequence[str],
    *,
    output: str,
    split: str | None,
    fit_value: object,
    source: str,
    within: Sequence[str] = (),
) -> pl.LazyFrame:
    """The rows with ``value``, an expression of the joined ``params``, as ``output``.

    The parameter columns are joined on the keys and ``within`` (a bin column that both
    the rows and the parameters hold; :func:`join_params`, under their :func:`param`
    names), the rows labelled in-sample (:func:`labelled`; the fit rows found again by
    the fingerprint of ``source``) and the joined columns dropped.
    """
    on = [*applied.keys, *within]
    joined = join_params(applied.predictions, applied.params, on, params)
    return labelled(
        joined.with_columns(value.alias(output)),
        split,
        fit_value,
        again=fit_rows_again(applied, source),
        drop=[*within, *(param(name) for name in params)],
    )
