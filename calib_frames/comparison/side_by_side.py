"""Tables side by side, one row per group: calibration and perplexity metrics joined.

:func:`comparison_table` is the "many models in one table" view: join the per-group
outputs of :func:`~calib_frames.calibration_metrics` and :func:`~calib_frames.perplexity`
on the group keys they share (e.g. calibration by model × task, perplexity by model). Each
table's keys are the ones it was built with (the columns before its first column, see
:mod:`calib_frames.schema`), so a derived column appended to either table is carried
along but never joined on. :func:`with_columns_of` adds the columns of another per-group
table (intervals, a noise floor) that a table lacks.
"""

from __future__ import annotations

import polars as pl

from calib_frames.exceptions import TableError
from calib_frames.schema import METRICS, PERPLEXITY, Table
from calib_frames.validation import Frame, as_lazy, return_like

__all__ = ["comparison_table", "with_columns_of"]


def with_columns_of(table: pl.LazyFrame, extra: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """``table`` with the columns of ``extra`` it lacks, joined on ``keys`` (left join)."""
    names = table.collect_schema().names()
    extra = extra.select(*keys, *(c for c in extra.collect_schema().names() if c not in names))
    if not keys:
        return pl.concat([table, extra], how="horizontal")
    return table.join(extra, on=keys, how="left", nulls_equal=True, maintain_order="left")


def comparison_table(metrics: Frame, perplexity: Frame) -> Frame:
    """Full outer join of a calibration-metrics table and a perplexity table.

    Parameters
    ----------
    metrics
        A calibration-metrics table from :func:`~calib_frames.calibration_metrics` (or
        :func:`~calib_frames.metrics_from_bin_statistics`).
    perplexity
        A table from :func:`~calib_frames.perplexity` (or
        :func:`~calib_frames.perplexity_from_nll_sums`).

    Returns
    -------
    DataFrame or LazyFrame (the kind of ``metrics``)
        The calibration keys, then the perplexity-only keys, the calibration columns and
        the perplexity columns (its row count renamed ``nll_count``); a group present in
        only one table has nulls in the other's columns; rows sorted by the keys.

    Raises
    ------
    TableError
        Either argument is not the table its role needs (raw rows, the arguments
        swapped, a bin-statistics table), or the tables share no key while one has keys.

    See Also
    --------
    calibration_metrics, perplexity : the two inputs.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> preds = pl.DataFrame(
    ...     {"model": ["a", "a", "b"], "confidence": [0.9, 0.6, 0.7], "correct": [1, 0, 1]}
    ... )
    >>> toks = pl.DataFrame({"model": ["a", "b"], "nll": [2.0, 1.0], "tokens": [4, 4]})
    >>> table = cf.comparison_table(
    ...     cf.calibration_metrics(preds, by="model"),
    ...     cf.perplexity(toks, by="model", tokens="tokens"),
    ... )
    >>> table.select("model", "count", "accuracy", "tokens", "perplexity").rows()
    [('a', 2, 0.5, 4, 1.6487212707001282), ('b', 1, 1.0, 4, 1.2840254166877414)]
    """
    left, right = as_lazy(metrics), as_lazy(perplexity)
    left_schema, right_schema = left.collect_schema(), right.collect_schema()
    left_keys: list[str] = _keys_for_role(left_schema, METRICS, "calibration", swapped=PERPLEXITY)
    right_keys: list[str] = _keys_for_role(right_schema, PERPLEXITY, "perplexity", swapped=METRICS)
    right = right.rename({"count": "nll_count"})
    on: list[str] = [key for key in left_keys if key in right_keys]
    if (left_keys or right_keys) and not on:
        raise TableError(
            f"the tables share no group key: calibration by {left_keys}, perplexity by {right_keys}"
        )
    keys = [*left_keys, *(key for key in right_keys if key not in on)]
    clashes = sorted((set(left_schema.names()) & set(right.collect_schema().names())) - set(on))
    if clashes:
        raise TableError(
            f"both tables have columns {clashes}: rename them in one table before joining"
        )
    if on:
        try:
            joined = left.join(right, on=on, how="full", coalesce=True, nulls_equal=True)
        except pl.exceptions.PolarsError as error:
            raise TableError(f"cannot join on {on}: {error}") from None
        joined = joined.sort(keys, nulls_last=True)
    else:
        joined = left.join(right, how="cross")
    metric_columns = [c for c in joined.collect_schema().names() if c not in keys]
    return return_like(metrics, joined.select(*keys, *metric_columns))


def _keys_for_role(schema: pl.Schema, spec: Table, role: str, *, swapped: Table) -> list[str]:
    try:
        return spec.keys(schema)
    except TableError:
        other = "calibration-metrics" if swapped is METRICS else "perplexity"
        try:
            swapped.keys(schema)
        except TableError:
            raise TableError(
                f"the {role} argument is not a {spec.name} (columns: {schema.names()}); "
                f"build it with calib_frames.{spec.built_by}(...) first"
            ) from None
        raise TableError(
            f"the {role} argument is a {other} table: the arguments are swapped; call "
            "comparison_table(calibration_metrics_table, perplexity_table)"
        ) from None
