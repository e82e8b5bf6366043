r"""The leaderboard's pooling: one row per model across its tasks, pooled and averaged.

A comparison table has one row per model × task; a reader comparing 50 models wants one
row per model. Two summaries answer different questions, and the leaderboard gives both:

* **pooled** (``accuracy``, ``ece``, ``brier``, ``log_loss``, ``perplexity``): the
  metric of all the model's predictions together, as if its tasks were one task. The
  bin statistics are added over the tasks (:func:`~calib_frames.merge_bin_statistics`
  with ``by=model``, exact) and reduced once, so a task weighs by its number of
  predictions (by its tokens for perplexity). Its interval is the bin-table bootstrap
  of the pooled table (:func:`~calib_frames.estimators.intervals_from_bin_statistics`).
  A pooled ECE is not the mean of the task ECEs: gaps of opposite sign in two tasks'
  bins can cancel. (When every model has one task, a sweep, the pooled table is the
  per-task one and its intervals are the comparison table's.)
* **mean over tasks** (``<metric>_task_mean``): the unweighted mean of the per-task
  metrics, (1/T)·Σ_t m_t, so that every task counts once whatever its size (the usual
  leaderboard average). Its interval is the normal one from the per-task intervals,
  treating the tasks as independent: with s_t = (high_t − low_t) / (2 z) the half-width
  is z·√(Σ_t s_t²)/T, z the normal quantile of ``(1 + level)/2`` (the per-task
  percentile intervals need not be symmetric; this is an approximation, exact for
  normal per-task errors).
* ``miscalibrated_tasks``: on how many of its ``tasks`` the model's ECE is beyond the
  noise of a calibrated model (``ece_beyond_noise`` of
  :func:`~calib_frames.estimators.noise_floor_from_bin_statistics`, its p-value corrected
  across every model × task of the table).
"""

from __future__ import annotations

from statistics import NormalDist

import polars as pl

from calib_frames.comparison.side_by_side import with_columns_of
from calib_frames.metrics.calibration import metrics_from_bin_statistics
from calib_frames.metrics.tokens import perplexity_from_nll_sums
from calib_frames.nll import merge_nll_sums
from calib_frames.stats import merge_bin_statistics
from calib_frames.validation import Frame, as_lazy, return_like

__all__ = ["LEADERBOARD_METRICS", "leaderboard_of"]

LEADERBOARD_METRICS = ("accuracy", "ece", "mce_guarded", "brier", "log_loss")
"""The calibration metrics of the leaderboard, pooled and as a mean over tasks."""


def leaderboard_of(
    comparison: Frame,
    stats: pl.DataFrame | pl.LazyFrame,
    sums: pl.DataFrame | pl.LazyFrame | None,
    *,
    model: str,
    mce_min_count: int,
    uncertainty: bool,
    replicates: int,
    level: float,
    seed: int,
) -> Frame:
    """The leaderboard of a per-group table and the tables it was computed from.

    What :func:`~calib_frames.leaderboard` returns (the module docstring says how each
    column is computed), from a ``comparison`` already at hand (the report pipeline's),
    so that nothing is computed twice. ``comparison`` comes from ``stats`` and ``sums``
    (:func:`~calib_frames.comparison_from_bin_statistics`) with the same ``uncertainty``,
    ``replicates``, ``level`` and ``seed``; ``model`` is a key of ``stats`` and of
    ``sums`` (:func:`~calib_frames.comparison.report_tables` checks it).

    Returns
    -------
    DataFrame or LazyFrame (the kind of ``comparison``)
    """
    from calib_frames.estimators.bootstrap import intervals_from_bin_statistics

    lazy_stats = as_lazy(stats)
    per_task = as_lazy(comparison)
    names = per_task.collect_schema().names()
    pooled_stats = merge_bin_statistics(lazy_stats, by=model)
    metrics: tuple[str, ...] = LEADERBOARD_METRICS
    board = as_lazy(metrics_from_bin_statistics(pooled_stats, mce_min_count=mce_min_count))
    board = board.select(model, "count", *metrics)
    bounds = [f"{m}_ci_{e}" for m in metrics for e in ("low", "high")]
    if uncertainty:
        # a sweep (one task per model, a table in memory): the pooled table is the
        # per-task one, whose bootstrap the comparison already holds
        sweep = (
            isinstance(comparison, pl.DataFrame)
            and set(bounds) & set(names)
            and comparison.get_column(model).is_unique().all()
        )
        if sweep:
            ci = per_task
        else:
            ci = as_lazy(
                intervals_from_bin_statistics(
                    pooled_stats, replicates=replicates, level=level, seed=seed
                )
            )
        present = ci.collect_schema().names()
        board = with_columns_of(
            board, ci.select(model, *(c for c in bounds if c in present)), [model]
        )
    if sums is not None:
        ppl = as_lazy(perplexity_from_nll_sums(merge_nll_sums(as_lazy(sums), by=model)))
        board = with_columns_of(board, ppl.select(model, "perplexity"), [model])
    averaged = [m for m in (*metrics, "perplexity") if m in names]
    z = NormalDist().inv_cdf((1 + level) / 2)
    aggregations = [pl.len().cast(pl.UInt32).alias("tasks")]
    for m in averaged:
        aggregations.append(pl.col(m).mean().alias(f"{m}_task_mean"))
        if uncertainty and f"{m}_ci_low" in names:
            spread = ((pl.col(f"{m}_ci_high") - pl.col(f"{m}_ci_low")) / (2 * z)) ** 2
            half = z * spread.sum().sqrt() / pl.col(m).count()
            mean = pl.col(m).mean()
            aggregations += [
                (mean - half).alias(f"{m}_task_mean_ci_low"),
                (mean + half).alias(f"{m}_task_mean_ci_high"),
            ]
    if "ece_beyond_noise" in names:
        aggregations.append(
            pl.col("ece_beyond_noise").sum().cast(pl.UInt32).alias("miscalibrated_tasks")
        )
    means = per_task.group_by(model).agg(aggregations)
    board = board.join(means, on=model, how="left", nulls_equal=True)
    front = [model, "tasks", "count"]
    board = board.select(*front, pl.exclude(front)).sort("ece", model, nulls_last=True)
    return return_like(comparison, board)
