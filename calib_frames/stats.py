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
``mean_confidence``            Σ w·p / Σ w (0.0 for an empty bin)
``accuracy``                   Σ w·y / Σ w (0.0 for an empty bin)
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
sums, so it stays exact too, even for correct rows with tiny p.) The pass groups
by (keys, bin, outcome), which is also how invalid confidences and outcomes are counted:
they get a null bin or outcome key and so form their own groups, at no extra cost.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from calib_frames.binning import Binning, BinsLike, as_binning
from calib_frames.validation import (
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
    "weight_correct",
    "weight_wrong",
    "sum_confidence_correct",
    "sum_residual_correct",
    "sum_residual_wrong",
    "sum_sq_residual_correct",
    "sum_sq_residual_wrong",
    "sum_log_loss",
)
STAT_COLUMNS = (
    "bin",
    "bin_lower",
    "bin_upper",
    "closed",
    "mean_confidence",
    "accuracy",
    *ADDITIVE_COLUMNS,
)
_ORDER = (
    "bin",
    "bin_lower",
    "bin_upper",
    "closed",
    "count",
    "weight",
    "mean_confidence",
    "accuracy",
    *ADDITIVE_COLUMNS[2:],
)
# Internal names of the pass: the bin and outcome keys, and per-cell sums.
_BIN, _OUTCOME = "__calib_bin", "__calib_outcome"
_W, _S, _R, _Q, _L = "__calib_w", "__calib_s", "__calib_r", "__calib_q", "__calib_l"


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
    schema = source.collect_schema()
    require_columns(
        schema,
        columns,
        numeric=list(columns),
        reserved=(*STAT_COLUMNS, _BIN, _OUTCOME, _W, _S, _R, _Q, _L),
        keys=keys,
    )
    outcome = _outcome_key(pl.col(correct), schema[correct])
    p = pl.col(confidence).cast(pl.Float64)
    low, high = binning.range
    bin_key = pl.when(p.is_between(low, high)).then(binning.assign(p, keys=keys))
    checks = _prediction_checks(confidence, correct, weight, binning)

    # One pass, grouped by (keys, bin, outcome), with q the probability given to the
    # outcome (p or 1 - p) and r the residual (1 - p or p), both computed from p.
    # Per cell: rows, Σw, Σw·q, Σw·r, Σw·r², Σw·ln q (negated in the second stage).
    # (q and r are row columns: polars does not share subexpressions inside an agg.)
    is_correct = pl.col(_OUTCOME)
    q, r = pl.col(_S), pl.col(_R)
    # ln(1 − p) of a wrong row with tiny p would lose digits to the rounding of 1 − p.
    # That rounding error, (1 − q) − r, is exact (and 0 for correct rows); adding it to
    # ln q (first order) keeps full precision with one log per row, not a log and a log1p.
    log_q = q.log() + ((1.0 - q) - r)
    summands: dict[str, pl.Expr] = {_S: q, _R: r, _Q: r * r, _L: log_q}
    w = None if weight is None else pl.col(weight).cast(pl.Float64)

    def weighted(term: pl.Expr) -> pl.Expr:
        # a weight-0 row is no data, even where its loss is infinite (0 * inf is NaN)
        return term if w is None else pl.when(w > 0).then(w * term).otherwise(0.0)

    cell_sums = [
        pl.len().alias("count"),
        (pl.len().cast(pl.Float64) if w is None else w.sum()).alias(_W),
        *[weighted(term).sum().alias(name) for name, term in summands.items()],
    ]
    if not binning.additive:
        cell_sums += [p.min().alias("bin_lower"), p.max().alias("bin_upper")]
    cells = (
        source.with_columns(bin_key.alias(_BIN), outcome.alias(_OUTCOME))
        .with_columns(
            pl.when(is_correct).then(p).otherwise(1.0 - p).alias(_S),
            pl.when(is_correct).then(1.0 - p).otherwise(p).alias(_R),
        )
        .group_by(*keys, _BIN, _OUTCOME)
        .agg(*cell_sums, *count_bad_rows(checks))
    )
    cells = raise_on_bad_rows(
        cells, source=source, keys=keys, checks=checks, total_rows=pl.col("count").sum()
    )

    # Small second stage: one row per (keys, bin), the outcome split into columns.
    correct_cell = pl.col(_OUTCOME)
    per_bin = [
        pl.col("count").sum().cast(pl.UInt64),
        pl.col(_W).sum().alias("weight"),
        pl.col(_W).filter(correct_cell).sum().alias("weight_correct"),
        pl.col(_W).filter(~correct_cell).sum().alias("weight_wrong"),
        pl.col(_S).filter(correct_cell).sum().alias("sum_confidence_correct"),
        pl.col(_R).filter(correct_cell).sum().alias("sum_residual_correct"),
        pl.col(_R).filter(~correct_cell).sum().alias("sum_residual_wrong"),
        pl.col(_Q).filter(correct_cell).sum().alias("sum_sq_residual_correct"),
        pl.col(_Q).filter(~correct_cell).sum().alias("sum_sq_residual_wrong"),
        (-pl.col(_L).sum()).alias("sum_log_loss"),
    ]
    if not binning.additive:
        per_bin += [pl.col("bin_lower").min(), pl.col("bin_upper").max()]
    # cache(): the grid completion reads this small result twice; the pass must run once.
    present = cells.group_by(*keys, _BIN).agg(per_bin).rename({_BIN: "bin"}).cache()
    return return_like(predictions, _complete_grid(present, keys, binning))


def _outcome_key(correct: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """True/False for a correct/wrong row; null for anything that is not boolean or 0/1."""
    if dtype == pl.Boolean:
        return correct
    y = correct.cast(pl.Float64)
    return pl.when(y == 1.0).then(True).when(y == 0.0).then(False)


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
            f"not a probability in {interval} (null, NaN, infinite or out of range)",
            bad=not_true(p.is_between(low, high)),
            count=pl.col("count").filter(pl.col(_BIN).is_null()).sum(),
        ),
        RowCheck(
            correct,
            "not boolean or 0/1 (or null)",
            bad=not_true((y == 0) | (y == 1)),
            count=pl.col("count").filter(pl.col(_OUTCOME).is_null()).sum(),
        ),
    ]
    if weight is not None:
        w = pl.col(weight).cast(pl.Float64)
        checks.append(
            RowCheck(weight, "not a finite weight >= 0", not_true(w.is_finite() & (w >= 0)))
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
    confidence_sum = pl.col("sum_confidence_correct") + pl.col("sum_residual_wrong")
    return (
        stats.with_columns(
            mean_confidence=pl.when(populated).then(confidence_sum / weight).otherwise(0.0),
            accuracy=pl.when(populated).then(pl.col("weight_correct") / weight).otherwise(0.0),
        )
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
    bounds = ("bin_lower", "bin_upper", "closed")
    summed = (
        pl.concat([frame.select(*on, *bounds, *ADDITIVE_COLUMNS) for frame in frames])
        .group_by(on)
        .agg(
            pl.col(*ADDITIVE_COLUMNS).sum(),
            pl.col(*bounds).min(),
            pl.col(*bounds).max().name.suffix("_max"),
        )
    )
    checked = summed.map_batches(
        lambda frame: _check_same_bounds(frame, keys),
        schema=summed.drop(f"{name}_max" for name in bounds).collect_schema(),
    )
    return return_like(tables[0], _with_means(checked, keys))


def _check_same_bounds(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    bounds = ("bin_lower", "bin_upper", "closed")
    differ = frame.filter(pl.any_horizontal(pl.col(b) != pl.col(f"{b}_max") for b in bounds))
    if differ.height:
        row = differ.row(0, named=True)
        group = ", ".join(f"{key}={row[key]!r}" for key in keys)
        raise CalibrationInputError(
            f"cannot merge: bin {row['bin']} differs between tables "
            f"({group + ': ' if group else ''}lower {row['bin_lower']} vs "
            f"{row['bin_lower_max']}, upper {row['bin_upper']} vs {row['bin_upper_max']}, "
            f"closed {row['closed']} vs {row['closed_max']}) in {differ.height} (group, bin) "
            "rows; merging needs the same fixed bins (equal-mass bins are not additive)"
        )
    return frame.drop(f"{b}_max" for b in bounds)


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
