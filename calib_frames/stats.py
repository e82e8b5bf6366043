"""Bin statistics: the one central, additive table.

One row per (group keys…, bin) for **every** bin of every group (empty bins zero-filled):

============================  =====================================================
column                        meaning (sums run over the rows of the bin, weight w)
============================  =====================================================
``bin``                       bin index 0 … M-1 (UInt32)
``bin_lower``, ``bin_upper``  the bin's edges (equal-mass bins: smallest and largest
                              confidence seen in the bin; null when empty)
``count``                     number of rows (UInt64)
``weight``                    Σ w (= count without a weight column)
``mean_confidence``           Σ w·p / Σ w (0.0 for an empty bin)
``accuracy``                  Σ w·y / Σ w (0.0 for an empty bin)
``sum_confidence``            Σ w·p
``sum_correct``               Σ w·y
``sum_confidence_sq``         Σ w·p²
``sum_confidence_correct``    Σ w·p·y
``sum_squared_error``         Σ w·(p − y)²
``sum_log_loss``              Σ w·(−y·ln p − (1 − y)·ln(1 − p))
============================  =====================================================

Every ``count``/``weight``/``sum_*`` column is a plain sum, so statistics of disjoint
parts of the data merge exactly by adding them (:func:`merge_bin_statistics`); the means
are recomputed from the sums. ``sum_squared_error`` is kept although it follows from the
other sums (Σp² − 2Σpy + Σy): for near-certain predictions that difference cancels
catastrophically, while the direct sum keeps the Brier score accurate to the last digits.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from calib_frames.binning import Binning, BinsLike, as_binning
from calib_frames.inputs import (
    CalibrationInputError,
    Frame,
    RowCheck,
    as_lazy,
    count_bad_rows,
    group_keys,
    not_true,
    raise_on_bad_rows,
    require_columns,
    return_like,
)

__all__ = [
    "ADDITIVE_COLUMNS",
    "STAT_COLUMNS",
    "bin_statistics",
    "merge_bin_statistics",
    "reliability_table",
    "stat_keys",
]

ADDITIVE_COLUMNS = (
    "count",
    "weight",
    "sum_confidence",
    "sum_correct",
    "sum_confidence_sq",
    "sum_confidence_correct",
    "sum_squared_error",
    "sum_log_loss",
)
STAT_COLUMNS = ("bin", "bin_lower", "bin_upper", "mean_confidence", "accuracy", *ADDITIVE_COLUMNS)
_ORDER = (
    "bin",
    "bin_lower",
    "bin_upper",
    "count",
    "weight",
    "mean_confidence",
    "accuracy",
    *ADDITIVE_COLUMNS[2:],
)
_ROW_BIN = "__calib_bin"


def bin_statistics(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
) -> Frame:
    """Per (group, bin) sums from which every binned calibration metric follows.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame with one row per prediction.
    confidence
        Column of predicted probabilities in [0, 1] (the probability that the answer is
        correct, or that a binary event happens).
    correct
        Column of outcomes: boolean, or numbers 0/1.
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    bins
        ``int`` (equal-width bins, default 10), a sequence of edges, or a
        :class:`~calib_frames.Binning`. Bins are left-closed ``[k/M, (k+1)/M)`` with the
        last closed at 1.0 unless the Binning says ``closed="right"``.
    weight
        Optional column of non-negative, finite row weights.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        The columns listed in the module docstring after the group keys, one row per
        group and bin, sorted by keys and bin.

    Raises
    ------
    CalibrationInputError
        Missing columns or wrong dtypes (at once); null/NaN/infinite or out-of-range
        confidences, outcomes that are not boolean or 0/1, negative or non-finite weights
        (counted in the aggregation pass, raised when the result is collected).

    See Also
    --------
    merge_bin_statistics : add up tables computed on parts of the data.
    metrics_from_bin_statistics : ECE, MCE, Brier and its decomposition from this table.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.2, 0.25, 0.9], "correct": [False, True, True]})
    >>> stats = cf.bin_statistics(df, bins=4)
    >>> stats.select("bin", "count", "mean_confidence", "accuracy")
    shape: (4, 4)
    ┌─────┬───────┬─────────────────┬──────────┐
    │ bin ┆ count ┆ mean_confidence ┆ accuracy │
    │ --- ┆ ---   ┆ ---             ┆ ---      │
    │ u32 ┆ u64   ┆ f64             ┆ f64      │
    ╞═════╪═══════╪═════════════════╪══════════╡
    │ 0   ┆ 1     ┆ 0.2             ┆ 0.0      │
    │ 1   ┆ 1     ┆ 0.25            ┆ 1.0      │
    │ 2   ┆ 0     ┆ 0.0             ┆ 0.0      │
    │ 3   ┆ 1     ┆ 0.9             ┆ 1.0      │
    └─────┴───────┴─────────────────┴──────────┘
    """
    source = as_lazy(predictions)
    keys = group_keys(by)
    binning = as_binning(bins)
    columns = {"confidence": confidence, "correct": correct}
    if weight is not None:
        columns["weight"] = weight
    require_columns(
        source.collect_schema(),
        columns,
        numeric=list(columns),
        reserved=(*STAT_COLUMNS, _ROW_BIN),
        keys=keys,
    )
    checks = _prediction_checks(confidence, correct, weight, binning)

    p = pl.col(confidence).cast(pl.Float64)
    y = pl.col(correct).cast(pl.Float64)
    summands = {
        "sum_confidence": p,
        "sum_correct": y,
        "sum_confidence_sq": p * p,
        "sum_confidence_correct": p * y,
        "sum_squared_error": (p - y) * (p - y),
        # one log per row: ln of the probability given to the outcome (p or 1 - p)
        "sum_log_loss": -pl.when(y > 0.5).then(p).otherwise(1.0 - p).log(),
    }
    aggs = [pl.len().alias("count")]
    if weight is None:
        aggs += [term.sum().alias(name) for name, term in summands.items()]
    else:
        w = pl.col(weight).cast(pl.Float64)
        aggs += [w.sum().alias("weight")]
        aggs += [(w * term).sum().alias(name) for name, term in summands.items()]
    if not binning.additive:
        aggs += [p.min().alias("bin_lower"), p.max().alias("bin_upper")]

    first_pass = (
        source.with_columns(binning.assign(pl.col(confidence), keys=keys).alias(_ROW_BIN))
        .group_by(*keys, _ROW_BIN)
        .agg(*aggs, *count_bad_rows(checks))
    )
    present = raise_on_bad_rows(
        first_pass, source=source, keys=keys, checks=checks, total_rows="count"
    ).rename({_ROW_BIN: "bin"})
    if weight is None:
        present = present.with_columns(weight=pl.col("count").cast(pl.Float64))
    return return_like(predictions, _complete_grid(present, keys, binning))


def _prediction_checks(
    confidence: str, correct: str, weight: str | None, binning: Binning
) -> list[RowCheck]:
    low, high = binning.range
    interval = f"[{low:g}, {high:g}]"
    p = pl.col(confidence).cast(pl.Float64)
    y = pl.col(correct).cast(pl.Float64)
    checks = [
        RowCheck(
            confidence,
            f"are not a probability in {interval} (null, NaN, infinite or out of range)",
            not_true(p.is_between(low, high)),
        ),
        RowCheck(correct, "are not boolean or 0/1 (or are null)", not_true((y == 0) | (y == 1))),
    ]
    if weight is not None:
        w = pl.col(weight).cast(pl.Float64)
        checks.append(
            RowCheck(weight, "are not a finite weight >= 0", not_true(w.is_finite() & (w >= 0)))
        )
    return checks


def _complete_grid(present: pl.LazyFrame, keys: list[str], binning: Binning) -> pl.LazyFrame:
    """Add the empty bins of every group (zero-filled), derive the means, sort."""
    bins = binning.bounds().lazy()
    grid = present.select(keys).unique().join(bins, how="cross") if keys else bins
    on = [*keys, "bin"]
    stats = grid.join(present, on=on, how="left", nulls_equal=True).with_columns(
        pl.col("count").fill_null(0).cast(pl.UInt64),
        pl.col(*ADDITIVE_COLUMNS[1:]).fill_null(0.0),
    )
    return _with_means(stats, keys)


def _with_means(stats: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    weight = pl.col("weight")
    populated = weight > 0
    return (
        stats.with_columns(
            mean_confidence=pl.when(populated).then(pl.col("sum_confidence") / weight),
            accuracy=pl.when(populated).then(pl.col("sum_correct") / weight),
        )
        .with_columns(pl.col("mean_confidence", "accuracy").fill_null(0.0))
        .select(*keys, *_ORDER)
        .sort(*keys, "bin", nulls_last=True)
    )


def stat_keys(schema: pl.Schema) -> list[str]:
    """The group-key columns of a bin-statistics table (every non-statistic column)."""
    missing = [name for name in STAT_COLUMNS if name not in schema]
    if missing:
        raise CalibrationInputError(
            f"not a bin-statistics table: missing columns {missing}; "
            "build one with calib_frames.bin_statistics"
        )
    return [name for name in schema.names() if name not in STAT_COLUMNS]


def merge_bin_statistics(*tables: Frame) -> Frame:
    """Add up bin-statistics tables computed on disjoint parts of the data.

    ``merge_bin_statistics(bin_statistics(A), bin_statistics(B))`` equals
    ``bin_statistics(A ∪ B)`` (sums to rounding, counts exactly) when both used the same
    fixed bins. Equal-mass bins differ between parts and are refused.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> a = pl.DataFrame({"confidence": [0.82, 0.88], "correct": [True, False]})
    >>> b = pl.DataFrame({"confidence": [0.85], "correct": [True]})
    >>> merged = cf.merge_bin_statistics(cf.bin_statistics(a), cf.bin_statistics(b))
    >>> merged.filter(pl.col("count") > 0).select("bin", "count", "accuracy").rows()
    [(8, 3, 0.6666666666666666)]
    """
    if not tables:
        raise ValueError("merge_bin_statistics needs at least one table")
    frames = [as_lazy(table) for table in tables]
    keys: list[str] = stat_keys(frames[0].collect_schema())
    for frame in frames[1:]:
        if stat_keys(frame.collect_schema()) != keys:
            raise CalibrationInputError(
                f"cannot merge bin statistics grouped by different keys: {keys} vs "
                f"{stat_keys(frame.collect_schema())}"
            )
    on = [*keys, "bin"]
    summed = (
        pl.concat(
            [frame.select(*on, "bin_lower", "bin_upper", *ADDITIVE_COLUMNS) for frame in frames]
        )
        .group_by(on)
        .agg(
            pl.col(*ADDITIVE_COLUMNS).sum(),
            pl.col("bin_lower", "bin_upper").min(),
            pl.col("bin_lower", "bin_upper").max().name.suffix("_max"),
        )
    )
    checked = summed.map_batches(
        lambda frame: _check_same_bounds(frame, keys),
        schema=summed.drop("bin_lower_max", "bin_upper_max").collect_schema(),
    )
    return return_like(tables[0], _with_means(checked, keys))


def _check_same_bounds(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    differ = frame.filter(
        (pl.col("bin_lower") != pl.col("bin_lower_max"))
        | (pl.col("bin_upper") != pl.col("bin_upper_max"))
    )
    if differ.height:
        row = differ.row(0, named=True)
        group = ", ".join(f"{key}={row[key]!r}" for key in keys)
        raise CalibrationInputError(
            f"cannot merge: the bounds of bin {row['bin']} differ between tables "
            f"({group + ': ' if group else ''}lower {row['bin_lower']} vs "
            f"{row['bin_lower_max']}, upper {row['bin_upper']} vs {row['bin_upper_max']}) "
            f"in {differ.height} (group, bin) rows; merging needs the same fixed bins "
            "(equal-mass bins are not additive)"
        )
    return frame.drop("bin_lower_max", "bin_upper_max")


def reliability_table(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
) -> Frame:
    """Reliability-diagram data: per group and bin the bounds, count, mean confidence and
    accuracy (zero-filled for empty bins).

    A projection of :func:`bin_statistics` (same parameters).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.95] * 10, "correct": [True] * 6 + [False] * 4})
    >>> cf.reliability_table(df).filter(pl.col("count") > 0).rows()
    [(9, 0.9, 1.0, 10, 0.95, 0.6)]
    """
    stats = bin_statistics(
        predictions, confidence=confidence, correct=correct, by=by, bins=bins, weight=weight
    )
    keys = group_keys(by)
    return stats.select(
        *keys, "bin", "bin_lower", "bin_upper", "count", "mean_confidence", "accuracy"
    )
