"""Bin statistics: the one central, additive table.

One row per (group keys…, bin) for **every** bin of every group (empty bins zero-filled).
With confidence p, outcome y ∈ {0, 1}, row weight w and the *residual* r = |p − y| (the
distance from the confidence to the outcome: 1 − p for a correct row, p for a wrong one):

=============================  ====================================================
column                         meaning (sums over the rows of the bin)
=============================  ====================================================
``bin``                        bin index 0 … M-1 (UInt32)
``bin_lower``, ``bin_upper``   the bin's edges (equal-mass bins: smallest and largest
                               confidence seen in the bin; null when empty)
``closed``                     "left" or "right": which edge belongs to the bin
                               (null for equal-mass bins)
``count``                      number of rows (UInt64)
``weight``                     Σ w (= count without a weight column)
``mean_confidence``            Σ w·p / Σ w (null for an empty bin)
``accuracy``                   Σ w·y / Σ w (null for an empty bin)
``weight_correct``             Σ w over correct rows (y = 1)
``weight_wrong``               Σ w over wrong rows (y = 0)
``sum_confidence_correct``     Σ w·p over correct rows
``sum_residual_correct``       Σ w·(1 − p) over correct rows
``sum_residual_wrong``         Σ w·p over wrong rows
``sum_sq_residual_correct``    Σ w·(1 − p)² over correct rows
``sum_sq_residual_wrong``      Σ w·p² over wrong rows
``sum_log_loss``               Σ w·(−ln(p if y else 1 − p))
=============================  ====================================================

Every column after ``accuracy`` is a plain sum, so tables of disjoint parts of the data
merge exactly by adding them (:func:`merge_bin_statistics`); the means are recomputed.

Why residuals and not Σp, Σp²: every metric is a function of how far confidences sit
from outcomes. Sums of p and p² are dominated by their large common part, and the metrics
would be small differences of them: for near-certain predictions (p ≈ 1 − 10⁻⁶) Σp and
Σy agree to 13 digits, so ECE = |Σp − Σy|/N loses digits to polars' summation error, and
Σp² − (Σp)²/N keeps only about three digits of the within-bin variance (measured by
``benchmarks/bench_precision.py``). The residual sums carry the small quantities
directly, so every metric keeps its relative precision. (The mean
confidence of a bin is Σ w·p over correct rows plus ``sum_residual_wrong``, both direct
sums, so it stays exact too, even for correct rows with tiny p.) The row pass
(:func:`calib_frames.engine.prediction_cells`) groups by (keys, bin, outcome), which is
also how invalid confidences and outcomes are counted: they get a null bin or outcome key
and so form their own groups, at no extra cost; :func:`bin_statistics_from_cells` splits
the outcome into columns and adds the empty bins. The group keys are the columns before
``bin`` (:data:`calib_frames.schema.BIN_STATISTICS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from calib_frames.arguments import check_arguments
from calib_frames.binning import BINS, Binning, BinsLike
from calib_frames.engine import PredictionPass, prediction_cells
from calib_frames.exceptions import TableError
from calib_frames.schema import BIN_STATISTICS, RELIABILITY
from calib_frames.validation import (
    Frame,
    as_lazy,
    first_offending_row,
    group_keys,
    raise_on_bad_rows,
    return_like,
    rollup_keys,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame as SparkFrame

__all__ = [
    "bin_statistics",
    "bin_statistics_from_cells",
    "merge_bin_statistics",
    "reliability_table",
    "spark_bin_statistics",
]

ADDITIVE_COLUMNS = BIN_STATISTICS.additive
_BOUNDS = ("bin_lower", "bin_upper", "closed")


@check_arguments(bins=BINS)
def bin_statistics(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    log_confidence: str | None = None,
) -> Frame:
    """Per (group, bin) sums from which every binned calibration metric follows.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame with one row per prediction.
    confidence
        Column of predicted probabilities in [0, 1] (the probability that the answer is
        correct, or that a binary event happens). Boolean columns are refused.
    correct
        Column of outcomes: boolean, or numbers 0/1.
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    bins
        ``int`` (equal-width bins, default 10), a sequence of edges, or a
        :class:`~calib_frames.Binning`. Bins are left-closed ``[k/M, (k+1)/M)`` with the
        last closed at 1.0 unless the Binning says ``closed="right"``.
    weight
        Optional column of row weights: finite, >= 0, and 0 or at least 2.2e-308
        (subnormal weights lose precision and are refused).
    log_confidence
        Optional column holding ln(confidence) exactly (e.g. the log-softmax of the
        chosen option). The log loss then uses it, so a confidence that rounds to 1.0 on
        a wrong answer still gets its true, finite log loss. Must be <= 0 and agree with
        ``confidence`` (exp within 1e-9).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        The columns listed in the module docstring after the group keys, one row per
        group and bin, sorted by keys and bin.

    Raises
    ------
    TableError
        Missing columns or wrong dtypes (at once).
    ArgumentError
        Malformed ``by=`` or ``bins=`` (at once).
    DataError
        Null/NaN/infinite or out-of-range confidences, outcomes that are not boolean or
        0/1, bad weights or log-confidences (counted in the aggregation pass, raised when
        the result is collected).

    See Also
    --------
    merge_bin_statistics : add up tables computed on parts of the data.
    metrics_from_bin_statistics : ECE, MCE, Brier and its decomposition from this table.
    reliability_table : the reliability-diagram projection of this table.

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
    │ 2   ┆ 0     ┆ null            ┆ null     │
    │ 3   ┆ 1     ┆ 0.9             ┆ 1.0      │
    └─────┴───────┴─────────────────┴──────────┘
    """
    stats = _bin_statistics(
        as_lazy(predictions),
        confidence=confidence,
        correct=correct,
        by=by,
        bins=bins,
        weight=weight,
        log_confidence=log_confidence,
        empty_bins=True,
    )
    return return_like(predictions, stats)


def _bin_statistics(
    source: pl.LazyFrame,
    *,
    confidence: str,
    correct: str,
    by: str | Sequence[str] | None,
    bins: BinsLike,
    weight: str | None,
    log_confidence: str | None,
    empty_bins: bool,
) -> pl.LazyFrame:
    """:func:`bin_statistics`, or (``empty_bins=False``) only its populated bins, unsorted.

    The populated bins are what a reduction reads (an empty bin adds nothing to any
    metric): :func:`~calib_frames.calibration_metrics` takes them, without completing and
    sorting the grid.
    """
    spec = PredictionPass.build(
        source.collect_schema(),
        confidence=confidence,
        correct=correct,
        by=by,
        bins=bins,
        weight=weight,
        log_confidence=log_confidence,
    )
    cells = raise_on_bad_rows(
        prediction_cells(source, spec),
        keys=spec.keys,
        checks=spec.row_checks(),
        total_rows=pl.col("count").sum(),
        find_example=first_offending_row(source, spec.keys),
    )
    keys, binning = list(spec.keys), spec.binning
    if empty_bins:
        return bin_statistics_from_cells(cells, keys=keys, binning=binning)
    return _with_means(_per_bin(cells, keys, binning).with_columns(_bounds(binning)), keys)


def bin_statistics_from_cells(
    cells: pl.LazyFrame, *, keys: Sequence[str], binning: Binning
) -> pl.LazyFrame:
    """The second stage: the cell table (:data:`calib_frames.schema.CELLS`) → bin statistics.

    Splits each (keys, bin)'s two outcome cells into the ``*_correct`` / ``*_wrong``
    columns, adds every empty bin of every group (zero-filled sums, null means) and sorts.
    Any engine that writes the cell table (polars, Spark) ends here.

    Parameters
    ----------
    cells
        The row pass's output, already checked (cells of invalid rows are ignored).
    keys
        The group-key columns of ``cells``.
    binning
        The binning the cells were computed with (gives the bin bounds).

    Returns
    -------
    LazyFrame
        The bin-statistics table (:data:`calib_frames.schema.BIN_STATISTICS`).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames import Binning
    >>> cells = pl.LazyFrame({
    ...     "bin": pl.Series([1, 1], dtype=pl.UInt32), "correct": [True, False],
    ...     "count": pl.Series([2, 1], dtype=pl.UInt64), "weight": [2.0, 1.0],
    ...     "sum_outcome_probability": [1.5, 0.25], "sum_residual": [0.5, 0.75],
    ...     "sum_sq_residual": [0.125, 0.5625],
    ...     "sum_log_outcome_probability": [-0.6, -1.4],
    ... })
    >>> stats = bin_statistics_from_cells(cells, keys=[], binning=Binning.uniform(2))
    >>> stats.collect().select("bin", "count", "accuracy", "sum_residual_wrong").rows()
    [(0, 0, None, 0.0), (1, 3, 0.6666666666666666, 0.75)]
    """
    keys = list(keys)
    # cache(): the grid completion reads this small result twice; the pass must run once.
    present = _per_bin(cells, keys, binning).cache()
    bounds = binning.bounds().lazy()
    grid = present.select(keys).unique().join(bounds, how="cross") if keys else bounds
    stats = grid.join(present, on=[*keys, "bin"], how="left", nulls_equal=True).with_columns(
        pl.col("count").fill_null(0).cast(pl.UInt64),
        pl.col(*ADDITIVE_COLUMNS[1:]).fill_null(0.0),
    )
    return _with_means(stats, keys, sort=True)


def _per_bin(cells: pl.LazyFrame, keys: list[str], binning: Binning) -> pl.LazyFrame:
    """The valid cells' two outcomes of each (keys…, bin) side by side, as additive sums."""
    correct, valid = (
        pl.col("correct"),
        pl.col("bin").is_not_null() & pl.col("correct").is_not_null(),
    )

    def split(column: str, outcome: bool) -> pl.Expr:
        side = correct if outcome else ~correct
        return pl.when(side).then(pl.col(column)).otherwise(0.0).sum()

    per_bin = [
        pl.col("count").sum().cast(pl.UInt64),
        pl.col("weight").sum(),
        split("weight", True).alias("weight_correct"),
        split("weight", False).alias("weight_wrong"),
        split("sum_outcome_probability", True).alias("sum_confidence_correct"),
        split("sum_residual", True).alias("sum_residual_correct"),
        split("sum_residual", False).alias("sum_residual_wrong"),
        split("sum_sq_residual", True).alias("sum_sq_residual_correct"),
        split("sum_sq_residual", False).alias("sum_sq_residual_wrong"),
        (-pl.col("sum_log_outcome_probability").sum()).alias("sum_log_loss"),
    ]
    if not binning.additive:
        per_bin += [pl.col("bin_lower").min(), pl.col("bin_upper").max()]
    return cells.filter(valid).group_by(*keys, "bin").agg(per_bin)


def _bounds(binning: Binning) -> list[pl.Expr]:
    """``closed`` and, for fixed edges, ``bin_lower`` and ``bin_upper`` of each row's bin."""
    closed = pl.lit(binning.closed if binning.additive else None, pl.String).alias("closed")
    edges = binning.edge_values()
    if edges is None:  # equal-mass bins: the observed bounds, from the cells
        return [closed]
    return [
        pl.lit(pl.Series(edges[:-1])).gather(pl.col("bin")).alias("bin_lower"),
        pl.lit(pl.Series(edges[1:])).gather(pl.col("bin")).alias("bin_upper"),
        closed,
    ]


def _with_means(stats: pl.LazyFrame, keys: list[str], *, sort: bool = False) -> pl.LazyFrame:
    weight = pl.col("weight")
    populated = weight > 0
    confidence_sum = pl.col("sum_confidence_correct") + pl.col("sum_residual_wrong")
    table = stats.with_columns(
        mean_confidence=pl.when(populated).then(confidence_sum / weight),
        accuracy=pl.when(populated).then(pl.col("weight_correct") / weight),
    ).select(*keys, *BIN_STATISTICS.names)
    return table.sort(*keys, "bin", nulls_last=True) if sort else table


def merge_bin_statistics(*tables: Frame, by: str | Sequence[str] | None = None) -> Frame:
    """Add up bin-statistics tables computed on disjoint parts of the data.

    ``merge_bin_statistics(bin_statistics(A), bin_statistics(B))`` equals
    ``bin_statistics(A ∪ B)`` (sums to rounding, counts exactly) when both used the same
    fixed bins. With ``by=`` a subset of the keys, the bins of the other keys are pooled
    too (a roll-up: model × task → model gives the bin statistics of all of a model's
    predictions, whose metrics are *not* the mean of its per-task metrics).

    Parameters
    ----------
    *tables
        Bin-statistics tables (DataFrames or LazyFrames) with the same keys, in any order,
        and key dtypes polars can unify (e.g. String and Categorical).
    by
        Keys to keep; ``None`` keeps all of the tables' keys.

    Returns
    -------
    DataFrame or LazyFrame (the kind of the first table)
        One bin-statistics table.

    Raises
    ------
    TableError
        A table is not a bin-statistics table, the keys differ, ``by=`` names a column
        that is not a key, or the bins differ (other edges, closedness or bin count;
        equal-mass bins never merge).
    ArgumentError
        No table was given.

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
    frames, keys = BIN_STATISTICS.aligned(tables)
    kept: list[str] = rollup_keys(keys, by)
    on = [*kept, "bin"]
    try:
        combined = pl.concat(
            [frame.select(*keys, "bin", *_BOUNDS, *ADDITIVE_COLUMNS) for frame in frames],
            how="vertical_relaxed",
        )
    except pl.exceptions.PolarsError as error:
        raise TableError(f"cannot merge bin statistics: the key dtypes differ ({error})") from None
    summed = combined.group_by(on).agg(
        pl.col(*ADDITIVE_COLUMNS).sum(),
        pl.col(*_BOUNDS).min(),
        pl.col(*_BOUNDS).max().name.suffix("_max"),
        pl.col(*_BOUNDS).null_count().name.suffix("_nulls"),
        pl.len().alias("__calib_parts"),
    )
    out_schema = summed.drop(
        [f"{b}{suffix}" for b in _BOUNDS for suffix in ("_max", "_nulls")] + ["__calib_parts"]
    ).collect_schema()
    checked = summed.map_batches(lambda frame: _check_same_bins(frame, kept), schema=out_schema)
    return return_like(tables[0], _with_means(checked, kept, sort=True))


def _check_same_bins(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    bounds_differ = pl.any_horizontal(
        [pl.col(b) != pl.col(f"{b}_max") for b in _BOUNDS]
        + [
            (pl.col(f"{b}_nulls") > 0) & (pl.col(f"{b}_nulls") < pl.col("__calib_parts"))
            for b in _BOUNDS
        ]
    )
    differ = frame.filter(bounds_differ)
    if differ.height:
        row = differ.row(0, named=True)
        group = ", ".join(f"{key}={row[key]!r}" for key in keys)
        raise TableError(
            f"cannot merge: bin {row['bin']} differs between tables "
            f"({group + ': ' if group else ''}lower {row['bin_lower']} vs "
            f"{row['bin_lower_max']}, upper {row['bin_upper']} vs {row['bin_upper_max']}, "
            f"closed {row['closed']} vs {row['closed_max']}) in {differ.height} (group, bin) "
            "rows; merging needs the same fixed bins (equal-mass bins are not additive)"
        )
    if frame.height and frame["closed"].null_count():
        raise TableError(
            "cannot merge bin statistics of equal-mass bins: their edges differ between "
            "parts of the data, so they are not additive"
        )
    return frame.drop(
        [f"{b}{suffix}" for b in _BOUNDS for suffix in ("_max", "_nulls")] + ["__calib_parts"]
    )


@check_arguments(bins=BINS)
def reliability_table(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
) -> Frame:
    """Reliability-diagram data: per group and bin the bounds, count and the two means.

    A projection of :func:`bin_statistics`. An empty bin keeps its row with ``count`` 0
    and null means, so no chart draws a point for it (the array API,
    :class:`~calib_frames.CalibrationReport`, keeps zero-filled arrays).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame with one row per prediction.
    confidence, correct, by, bins, weight
        As in :func:`bin_statistics`.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        keys…, ``bin``, ``bin_lower``, ``bin_upper``, ``count``, ``mean_confidence``,
        ``accuracy`` (:data:`calib_frames.schema.RELIABILITY`).

    Raises
    ------
    DataError, TableError, ArgumentError
        As :func:`bin_statistics` raises them.

    See Also
    --------
    bin_statistics : the full additive table.

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
    return stats.select(*group_keys(by), *RELIABILITY.names)


@check_arguments(bins=BINS)
def spark_bin_statistics(
    frame: SparkFrame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    log_confidence: str | None = None,
) -> pl.DataFrame:
    """:func:`~calib_frames.bin_statistics` of a Spark DataFrame: the row pass on Spark.

    Parameters
    ----------
    frame
        A Spark DataFrame of predictions (or ``spark.read.parquet(path)``).
    confidence, correct, by, bins, weight, log_confidence
        As in :func:`~calib_frames.bin_statistics` (fixed bins only).

    Returns
    -------
    DataFrame
        The bin-statistics table (polars), mergeable with tables from any engine.

    Raises
    ------
    TableError, ArgumentError, DataError
        As :func:`~calib_frames.bin_statistics`; equal-mass bins are an ArgumentError.

    Examples
    --------
    With a Spark session (``tests/engine/test_spark.py`` runs this on a real local one)::

        spark = SparkSession.builder.master("local[1]").getOrCreate()
        rows = spark.createDataFrame([(0.9, True), (0.3, False)], ["confidence", "correct"])
        stats = calib_frames.stats.spark_bin_statistics(rows)
        calib_frames.metrics_from_bin_statistics(stats)["ece"].item()  # 0.2


    """
    from calib_frames.engine.spark import checked_spark_cells, spark_schema

    spec = PredictionPass.build(
        spark_schema(frame),
        confidence=confidence,
        correct=correct,
        by=by,
        bins=bins,
        weight=weight,
        log_confidence=log_confidence,
    )
    checked = checked_spark_cells(frame, spec)
    try:
        return bin_statistics_from_cells(
            checked, keys=list(spec.keys), binning=spec.binning
        ).collect()
    except pl.exceptions.PolarsError as error:  # pragma: no cover - defensive
        raise TableError(f"the Spark cell table could not be reduced: {error}") from None
