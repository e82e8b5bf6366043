r"""Calibration over time from stored statistics: per-batch figures, the last batch's change.

A nightly job writes one batch of bin statistics per night (:func:`~calib_frames.
write_statistics`, ``calib-frames stats``); these functions read no raw row. Batches are
taken in batch order (:attr:`~calib_frames.storage.StoredStatistics.batch_order`: by the
stored batch time; files without batch times in the order read), and ``last=N`` keeps
the N latest, so the cost is batches × groups × bins (× replicates), never rows.

Per-batch figures
-----------------
:func:`metrics_over_batches` reduces each batch's own bin statistics with
:func:`~calib_frames.metrics_from_bin_statistics` (batch id as the first key): every
metric of the comparison table, and per batch × group the bootstrap intervals and the
ECE noise floor of :func:`~calib_frames.estimators.uncertainty_from_bin_statistics`.
A batch's row is the row its own statistics file gives (the same sums, the same
reduction).

Change against the past
-----------------------
:func:`calibration_change` compares, per group, one batch B (the last by default) with
the pooled earlier batches E (their bin statistics summed: the earlier nights as one
sample). For each metric m in accuracy, ECE and Brier score, the difference
d = m(B) − m(E) (positive: the batch has the larger value) with

* a percentile interval from the bin-table bootstrap
  (:func:`~calib_frames.estimators.bootstrap.bootstrap_bin_statistics`) of both sides,
  each resampled from its own table: [q(α/2), q(1 − α/2)] of d* = m(B*) − m(E*);
* a two-sided p-value of "no change", the bootstrap two-sample test that resamples both
  sides from the pooled table P = B + E (under H₀ both are samples of one population,
  which P estimates): n_B and n_E rows drawn from P's cells per replicate give
  d₀ = m(B₀) − m(E₀), and

      p = (1 + #{ |d₀| ≥ |d| }) / (1 + replicates).

  Drawing the null at the two sample sizes keeps the bias of the ECE (larger on the
  smaller sample: a night against months of nights) in d₀ as it is in d, so the test
  does not read that bias as a change;
* Holm and Benjamini–Hochberg adjustments
  (:func:`~calib_frames.estimators.adjust_p_values`) over one family of every group ×
  metric: the verdict reads all three metrics of every group, so the chance that it
  calls any unchanged group changed is what Holm bounds (``alpha``). (The paired tests
  of :func:`~calib_frames.estimators.paired_comparison` correct per metric; corrected
  per metric here, a night flagged some unchanged model in 8.6% of the simulated
  nights, at a nominal 5%: below.)
* ``changed`` and a ``verdict`` in words: each metric whose adjusted p-value (``correction``)
  is at most ``alpha``, e.g. ``"ECE up 0.04, p = 0.002"`` (the p-value written is the
  adjusted one), else ``"no change beyond noise"``.

Measured (``tests/estimators/test_drift.py::test_false_positive_rate_measured``: 10
nights of 1200 predictions per model, 20 unchanged models with steady miscalibrations of
their own and one calibrated model whose confidences rise by 0.12 from night 7; every
night from the second tested against its pooled earlier nights, 2000 replicates, 20
simulations): over the 3600 tests of unchanged models per metric the raw p-value fell at
or below 0.05 in 4.3% (accuracy), 4.5% (ECE) and 4.3% (Brier) of them; with Holm over
the 63 tests of a night, 6 of the 180 nights (3.3%) flagged an unchanged model; the
shifted model was first flagged at night 7 in 20 of 20 simulations. (An earlier run
correcting per metric, as the paired tests do: 8.6% of 360 nights flagged an unchanged
model, 40 simulations of 1000 replicates.)

Replicates. ``replicates=10000`` by default, as for the paired tests: the p-values are
corrected across groups, and a bootstrap p-value cannot fall below 1/(replicates + 1).
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from calib_frames.estimators.bootstrap import bootstrap_bin_statistics
from calib_frames.estimators.multiple_testing import adjust_p_values
from calib_frames.estimators.noise import uncertainty_from_bin_statistics
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.metrics.calibration import metrics_from_bin_statistics
from calib_frames.metrics.registry import metric
from calib_frames.metrics.tokens import perplexity_from_nll_sums
from calib_frames.schema import BIN_STATISTICS, NLL_SUMS
from calib_frames.stats import merge_bin_statistics
from calib_frames.storage import StoredStatistics
from calib_frames.validation import check_level, check_replicates, check_seed, working

__all__ = [
    "BATCH_COLUMNS",
    "CHANGE_METRICS",
    "calibration_change",
    "metrics_over_batches",
]

BATCH_COLUMNS = ("batch", "batch_id", "batch_time")
"""The batch keys of :func:`metrics_over_batches`: position in batch order (UInt32, 0
first), id, time (Datetime UTC, null without a stored time)."""

CHANGE_METRICS = ("accuracy", "ece", "brier")
"""Metrics whose change :func:`calibration_change` tests."""

_REP = "replicate"
_GROUP = "group"  # the key of a table without keys (no clash possible: it has none)
_BLOCK = 500_000  # (group, bin) rows × replicates drawn at once (bounds the memory)


def _window(stats: StoredStatistics, last: int | None) -> StoredStatistics:
    if not isinstance(stats, StoredStatistics):
        raise ArgumentError(
            "stats must be statistics read with calib_frames.read_statistics, got "
            f"{type(stats).__name__}"
        )
    if stats.kind != "bin_statistics":
        raise TableError("stats holds NLL sums; pass the bin-statistics files")
    return stats if last is None else stats.latest(last)


def _batch_frame(stats: StoredStatistics) -> pl.DataFrame:
    """The batch keys (position, id, time) of the batches, in batch order."""
    times = [stats.batch_times.get(batch) for batch in stats.batch_order]
    return pl.DataFrame(
        {
            "batch": pl.Series(range(len(stats.batch_order)), dtype=pl.UInt32),
            "batch_id": stats.batch_order,
            "batch_time": pl.Series(times, dtype=pl.String).str.to_datetime(
                time_unit="us", time_zone="UTC"
            ),
        }
    )


def metrics_over_batches(
    stats: StoredStatistics,
    sums: StoredStatistics | None = None,
    *,
    last: int | None = None,
    uncertainty: bool = True,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Every metric of the comparison table per batch × group, in batch order.

    Each batch's bin statistics reduced on their own (module docstring): the
    calibration metrics of :func:`~calib_frames.metrics_from_bin_statistics` (accuracy,
    ECE, RMSCE, MCE over populated bins, Brier score and its terms, log loss), with
    ``uncertainty`` the bootstrap intervals and the ECE noise floor per batch × group,
    and the perplexity columns where NLL sums of the batches are given. Costs batches ×
    groups × bins (× replicates), never rows.

    Parameters
    ----------
    stats
        Bin statistics read with :func:`~calib_frames.read_statistics` (one or more
        batches).
    sums
        Optional NLL sums of the same batches (:func:`~calib_frames.read_statistics` of
        the ``--nll-out`` files): adds ``perplexity``, ``mean_nll``, … per batch × group.
    last
        Keep only the ``last`` latest batches (``None``: all).
    uncertainty
        Add ``<metric>_ci_low/high``, ``ece_null_mean``, ``ece_noise_floor``,
        ``ece_p_value``, ``ece_beyond_noise`` and ``verdict`` (:func:`~calib_frames.estimators.
        uncertainty_from_bin_statistics`).
    replicates, level, seed
        Of the bootstrap intervals and the noise floor.

    Returns
    -------
    polars.DataFrame
        ``batch`` (UInt32, 0 for the first batch), ``batch_id``, ``batch_time``
        (Datetime UTC, null for a batch stored without a time), the group keys, then the
        metrics columns; sorted by batch, then keys.

    Raises
    ------
    ArgumentError
        ``stats`` is not read statistics, or a bad ``last``, ``replicates``, ``level``,
        ``seed``.
    TableError
        ``stats`` holds NLL sums, or ``sums`` has other batches' keys than ``stats``.

    See Also
    --------
    calibration_change : the last batch against the earlier ones.
    calib_frames.plot.trend_chart : these rows as a chart.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.estimators.drift import metrics_over_batches
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for day, right in (("2026-12-01", [1, 1, 0, 1]), ("2026-12-02", [1, 0, 0, 0])):
    ...     rows = pl.DataFrame({"confidence": [0.8, 0.7, 0.9, 0.6], "correct": right})
    ...     cf.write_statistics(cf.bin_statistics(rows), folder / f"{day}.parquet",
    ...         batch_id=day, batch_time=day, binning=cf.Binning.uniform(10))
    >>> stored = cf.read_statistics(*folder.glob("*.parquet"))
    >>> table = metrics_over_batches(stored, uncertainty=False)
    >>> table.select("batch", "batch_id", "accuracy", pl.col("ece").round(4)).rows()
    [(0, '2026-12-01', 0.75, 0.45), (1, '2026-12-02', 0.25, 0.6)]
    """
    window = _window(stats, last)
    table = window.table
    metrics = metrics_from_bin_statistics(table)
    assert isinstance(metrics, pl.DataFrame)
    keys = BIN_STATISTICS.keys(table.schema)
    if uncertainty:
        columns = uncertainty_from_bin_statistics(
            table, replicates=replicates, level=level, seed=seed
        )
        assert isinstance(columns, pl.DataFrame)
        columns = columns.drop(
            [c for c in columns.columns if c in metrics.columns and c not in keys]
        )
        metrics = metrics.join(columns, on=keys, how="left", nulls_equal=True)
    if sums is not None:
        if sums.kind != "nll_sums":
            raise TableError("sums holds bin statistics; pass the NLL-sums files")
        kept = sums.table.filter(pl.col("batch_id").is_in(window.batch_order))
        ppl = perplexity_from_nll_sums(kept)
        assert isinstance(ppl, pl.DataFrame)
        missing = [k for k in NLL_SUMS.keys(kept.schema) if k not in keys]
        if missing:
            raise TableError(
                f"the NLL sums have keys {missing} that the bin statistics lack; write both "
                "with the same --by"
            )
        on = [k for k in keys if k in ppl.columns]
        ppl = ppl.rename({"count": "nll_count"})
        metrics = metrics.join(ppl, on=on, how="left", nulls_equal=True)
    batches = _batch_frame(window)
    joined = batches.join(metrics, on="batch_id", how="inner")
    return joined.sort(["batch", *keys[1:]], nulls_last=True)


def calibration_change(
    stats: StoredStatistics,
    *,
    batch: str | None = None,
    last: int | None = None,
    alpha: float = 0.05,
    correction: Literal["holm", "bh"] = "holm",
    replicates: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Per group, one batch against the pooled earlier batches: change in accuracy, ECE, Brier.

    The difference, its percentile interval (both sides resampled), the two-sided
    bootstrap p-value of no change (both sides drawn from the pooled table), Holm and
    BH adjustments across groups × metrics and a verdict (module docstring). Costs groups × bins
    × replicates, never rows.

    Parameters
    ----------
    stats
        Bin statistics read with :func:`~calib_frames.read_statistics`, two batches or
        more.
    batch
        The batch id tested (default: the last in batch order); the batches before it
        (within ``last``) are the past it is compared with.
    last
        Keep only the ``last`` latest batches (a rolling window; ``None``: all).
    alpha
        Level at which the adjusted p-value makes a change (``changed``, ``verdict``).
    correction
        ``"holm"`` (family-wise error rate across groups) or ``"bh"`` (false discovery
        rate): the adjusted p-value the verdict reads.
    replicates
        Bootstrap replicates of each side and of the null (≥ 1; the smallest p-value is
        1/(replicates + 1)).
    level
        Interval level in (0, 1).
    seed
        Seed (≥ 0) of the draws.

    Returns
    -------
    polars.DataFrame
        One row per group (sorted by the keys): the keys, ``batch_id`` (the batch
        tested), ``baseline_batches`` (UInt32), ``count`` and ``baseline_count``
        (UInt64), then per metric m of :data:`CHANGE_METRICS` ``m_baseline``,
        ``m_batch``, ``m_difference`` (batch − baseline), ``m_difference_ci_low``,
        ``m_difference_ci_high``, ``m_p_value``, ``m_p_value_holm``, ``m_p_value_bh``;
        then ``changed`` (Boolean) and ``verdict`` (String). A group missing from the
        batch or from every earlier batch has null differences and p-values and the
        verdict ``"not in this batch"`` or ``"no earlier batch"``.

    Raises
    ------
    ArgumentError
        ``stats`` is not read statistics, ``batch`` is not one of its batches or has no
        earlier batch, or a bad ``last``, ``alpha``, ``correction``, ``replicates``,
        ``level``, ``seed``.
    TableError
        ``stats`` holds NLL sums.

    See Also
    --------
    metrics_over_batches : the figures of every batch.
    calib_frames.estimators.paired_comparison : model against model on the same items.

    Examples
    --------
    Four nights of a model whose last night turns overconfident:

    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.estimators.drift import calibration_change
    >>> folder, rng = pathlib.Path(tempfile.mkdtemp()), np.random.default_rng(1)
    >>> for night in range(4):
    ...     p = rng.uniform(0.5, 1.0, 2000)
    ...     shown = np.minimum(p + (0.15 if night == 3 else 0.0), 1.0)
    ...     rows = pl.DataFrame({"confidence": shown, "correct": rng.random(2000) < p})
    ...     cf.write_statistics(cf.bin_statistics(rows), folder / f"{night}.parquet",
    ...         batch_id=f"n{night}", batch_time=f"2026-12-0{night + 1}",
    ...         binning=cf.Binning.uniform(10))
    >>> change = calibration_change(cf.read_statistics(*folder.glob("*.parquet")),
    ...                             replicates=500)
    >>> change.select("batch_id", "baseline_batches", "changed").row(0)
    ('n3', 3, True)
    >>> change["verdict"].item()
    'ECE up 0.11, p = 0.006'
    """
    window = _window(stats, last)
    check_level(alpha, name="alpha")
    check_level(level)
    check_replicates(replicates)
    check_seed(seed)
    if correction not in ("holm", "bh"):
        raise ArgumentError(f"correction must be 'holm' or 'bh', got {correction!r}")
    order = window.batch_order
    tested = order[-1] if batch is None else batch
    if tested not in order:
        shown = ", ".join(order[-5:])
        raise ArgumentError(
            f"batch {tested!r} is not among the {len(order)} batches"
            f"{' of the window' if last else ''} (the last: {shown})"
        )
    earlier = order[: order.index(tested)]
    if not earlier:
        raise ArgumentError(
            f"batch {tested!r} is the first batch{' of the window' if last else ''}: there "
            "is no earlier batch to compare it with"
        )
    table = window.table
    keys: list[str] = window.keys or [_GROUP]  # one constant key when there is none
    if not window.keys:
        table = table.select("batch_id", pl.lit(0, pl.UInt8).alias(_GROUP), pl.exclude("batch_id"))
    current = table.filter(pl.col("batch_id") == tested).drop("batch_id")
    past = merge_bin_statistics(table.filter(pl.col("batch_id").is_in(earlier)), by=keys)
    assert isinstance(past, pl.DataFrame)
    observed = _observed(current, past, keys)
    drawn = _draws(current, past, observed, keys, replicates=replicates, level=level, seed=seed)
    result = observed.join(drawn, on=keys, how="left", nulls_equal=True).with_columns(
        pl.lit(tested).alias("batch_id"),
        pl.lit(len(earlier), pl.UInt32).alias("baseline_batches"),
    )
    result = _adjusted(result, keys)
    result = _verdicts(result, alpha=alpha, correction=correction)
    columns = [*window.keys, "batch_id", "baseline_batches", "count", "baseline_count"]
    columns += [f"{m}_{suffix}" for m in CHANGE_METRICS for suffix in _SUFFIXES]
    return result.sort(keys, nulls_last=True).select(*columns, "changed", "verdict")


_SUFFIXES = (
    "baseline", "batch", "difference", "difference_ci_low", "difference_ci_high", "p_value",
    "p_value_holm", "p_value_bh",
)  # fmt: skip


def _adjusted(result: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """``m_p_value_holm`` and ``m_p_value_bh``: one family of every group × metric."""
    metric, p = working("metric"), working("p")
    long = pl.concat(
        [result.select(*keys, pl.lit(m).alias(metric), pl.col(f"{m}_p_value").alias(p))
         for m in CHANGE_METRICS]
    )  # fmt: skip
    for method in ("holm", "bh"):
        adjusted = adjust_p_values(long, p_value=p, method=method, output=working(method))
        assert isinstance(adjusted, pl.DataFrame)
        long = adjusted
    for m in CHANGE_METRICS:
        part = long.filter(pl.col(metric) == m).select(
            *keys, *[pl.col(working(h)).alias(f"{m}_p_value_{h}") for h in ("holm", "bh")]
        )
        result = result.join(part, on=keys, how="left", nulls_equal=True)
    return result


def _observed(current: pl.DataFrame, past: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """keys…, count, baseline_count and m_batch, m_baseline, m_difference (every group)."""

    def side(stats: pl.DataFrame, name: str, count: str) -> pl.DataFrame:
        metrics = metrics_from_bin_statistics(stats)
        assert isinstance(metrics, pl.DataFrame)
        return metrics.select(
            *keys,
            pl.col("count").alias(count),
            *[pl.col(m).alias(f"{m}_{name}") for m in CHANGE_METRICS],
        )

    batch, baseline = side(current, "batch", "count"), side(past, "baseline", "baseline_count")
    joined = batch.join(baseline, on=keys, how="full", coalesce=True, nulls_equal=True)
    return joined.with_columns(
        pl.col("count", "baseline_count").fill_null(0),
        *[
            (pl.col(f"{m}_batch") - pl.col(f"{m}_baseline")).alias(f"{m}_difference")
            for m in CHANGE_METRICS
        ],
    )


def _draws(
    current: pl.DataFrame,
    past: pl.DataFrame,
    observed: pl.DataFrame,
    keys: list[str],
    *,
    replicates: int,
    level: float,
    seed: int,
) -> pl.DataFrame:
    """Per group with rows on both sides: the interval of d* and the p-value of d under d₀."""
    n_batch, n_past = working("n_batch"), working("n_past")
    shared = observed.filter(pl.col("count") > 0, pl.col("baseline_count") > 0).select(
        *keys,
        pl.col("count").alias(n_batch),
        pl.col("baseline_count").alias(n_past),
        *[pl.col(f"{m}_difference").abs().alias(working(m)) for m in CHANGE_METRICS],
    )
    names = [c for c in (*BIN_STATISTICS.names, "count_correct") if c in current.columns]
    current = current.join(shared.select(keys), on=keys, nulls_equal=True).select(*keys, *names)
    past = past.join(shared.select(keys), on=keys, nulls_equal=True).select(*keys, *names)
    pooled = merge_bin_statistics(current, past, by=keys)
    assert isinstance(pooled, pl.DataFrame)
    pooled = pooled.join(shared.select(*keys, n_batch, n_past), on=keys, nulls_equal=True)
    groups = shared.select(keys).sort(keys, nulls_last=True)
    bins = current.height // max(groups.height, 1)
    per_block = max(1, _BLOCK // max(1, bins * replicates))
    alpha = (1.0 - level) / 2.0
    parts = []
    for block, start in enumerate(range(0, groups.height, per_block)):  # memory blocks
        chosen = groups.slice(start, per_block)

        def pick(frame: pl.DataFrame, chosen: pl.DataFrame = chosen) -> pl.DataFrame:
            return frame.join(chosen, on=keys, nulls_equal=True)

        step = seed + 4 * block
        sides = {
            "batch": bootstrap_bin_statistics(pick(current), replicates=replicates, seed=step),
            "past": bootstrap_bin_statistics(pick(past), replicates=replicates, seed=step + 1),
            "null_batch": bootstrap_bin_statistics(
                pick(pooled), rows=n_batch, replicates=replicates, seed=step + 2
            ),
            "null_past": bootstrap_bin_statistics(
                pick(pooled), rows=n_past, replicates=replicates, seed=step + 3
            ),
        }
        joined = pick(shared)
        for name, boot in sides.items():
            reduced = metrics_from_bin_statistics(boot)
            assert isinstance(reduced, pl.DataFrame)
            joined = joined.join(
                reduced.select(
                    *keys, _REP, *[pl.col(m).alias(f"{m}_{name}") for m in CHANGE_METRICS]
                ),
                on=keys if name == "batch" else [*keys, _REP],
                nulls_equal=True,
            )
        aggs: list[pl.Expr] = []
        for m in CHANGE_METRICS:
            boot_d = pl.col(f"{m}_batch") - pl.col(f"{m}_past")
            null_d = (pl.col(f"{m}_null_batch") - pl.col(f"{m}_null_past")).abs()
            extreme = (null_d >= pl.col(working(m)) * (1.0 - 1e-12)).sum()
            aggs += [
                boot_d.quantile(alpha, "linear").alias(f"{m}_difference_ci_low"),
                boot_d.quantile(1.0 - alpha, "linear").alias(f"{m}_difference_ci_high"),
                ((1.0 + extreme) / (1.0 + replicates)).alias(f"{m}_p_value"),
            ]
        parts.append(joined.group_by(keys).agg(aggs))
    schema: dict[str, pl.DataType] = {k: observed.schema[k] for k in keys}
    schema |= {
        f"{m}_{suffix}": pl.Float64()
        for m in CHANGE_METRICS
        for suffix in ("difference_ci_low", "difference_ci_high", "p_value")
    }
    return pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame(schema=schema)


def _verdicts(result: pl.DataFrame, *, alpha: float, correction: str) -> pl.DataFrame:
    """``changed`` and ``verdict``: the metrics whose adjusted p-value is at most alpha."""
    parts = []
    for m in CHANGE_METRICS:
        difference = pl.col(f"{m}_difference")
        adjusted = pl.col(f"{m}_p_value_{correction}")
        words = pl.concat_str(
            pl.lit(f"{metric(m).label} "),
            pl.when(difference > 0).then(pl.lit("up ")).otherwise(pl.lit("down ")),
            difference.abs().round_sig_figs(2).cast(pl.String),
            pl.lit(", p = "),
            adjusted.round_sig_figs(2).cast(pl.String),
        )
        parts.append(pl.when(adjusted <= alpha).then(words))
    said = pl.concat_str(parts, separator="; ", ignore_nulls=True)
    verdict = (
        pl.when(pl.col("count") == 0)
        .then(pl.lit("not in this batch"))
        .when(pl.col("baseline_count") == 0)
        .then(pl.lit("no earlier batch"))
        .when(said != "")
        .then(said)
        .otherwise(pl.lit("no change beyond noise"))
    )
    changed = pl.any_horizontal(
        [(pl.col(f"{m}_p_value_{correction}") <= alpha).fill_null(False) for m in CHANGE_METRICS]
    )
    return result.with_columns(changed.alias("changed"), verdict.alias("verdict"))
