"""The comparison table: calibration and perplexity metrics side by side, one row per group.

This is the "many models in one table" view: join the per-group outputs of
:func:`~calib_frames.calibration_metrics` and :func:`~calib_frames.perplexity` on the
group keys they share (e.g. calibration by model × task, perplexity by model).
"""

from __future__ import annotations

from calib_frames.validation import CalibrationInputError, Frame, as_lazy, return_like
from calib_frames.metrics import METRIC_COLUMNS
from calib_frames.perplexity import PERPLEXITY_COLUMNS, SUM_COLUMNS

__all__ = ["comparison_table"]

_PERPLEXITY_OUTPUTS = (*SUM_COLUMNS, *PERPLEXITY_COLUMNS)


def comparison_table(calibration: Frame, perplexity: Frame) -> Frame:
    """Full outer join of a calibration-metrics table and a perplexity table.

    The join keys are the group-key columns the two tables share; a group present in only
    one table keeps nulls in the other's columns. Output columns: calibration keys, then
    the perplexity-only keys, the calibration metrics and the perplexity measures; rows
    sorted by the keys.

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
    >>> table.select("model", "n", "accuracy", "tokens", "perplexity").rows()
    [('a', 2, 0.5, 4, 1.6487212707001282), ('b', 1, 1.0, 4, 1.2840254166877414)]
    """
    left, right = as_lazy(calibration), as_lazy(perplexity)
    left_keys: list[str] = [c for c in left.collect_schema().names() if c not in METRIC_COLUMNS]
    right_keys: list[str] = [
        c for c in right.collect_schema().names() if c not in _PERPLEXITY_OUTPUTS
    ]
    on: list[str] = [key for key in left_keys if key in right_keys]
    if (left_keys or right_keys) and not on:
        raise CalibrationInputError(
            f"the tables share no group key: calibration by {left_keys}, perplexity by {right_keys}"
        )
    keys = [*left_keys, *(key for key in right_keys if key not in on)]
    if on:
        joined = left.join(right, on=on, how="full", coalesce=True, nulls_equal=True)
        joined = joined.sort(keys, nulls_last=True)
    else:
        joined = left.join(right, how="cross")
    metric_columns = [c for c in joined.collect_schema().names() if c not in keys]
    return return_like(calibration, joined.select(*keys, *metric_columns))
