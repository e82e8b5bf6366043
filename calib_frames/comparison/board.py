r"""The leaderboard: one row per model across its tasks, pooled and averaged.

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
  :func:`~calib_frames.estimators.noise_floor_from_bin_statistics`).
"""

from __future__ import annotations

from statistics import NormalDist

import polars as pl

from calib_frames.comparison.report_table import REPLICATES, with_columns_of
from calib_frames.exceptions import TableError
from calib_frames.metrics.calibration import MCE_MIN_COUNT, metrics_from_bin_statistics
from calib_frames.metrics.tokens import perplexity_from_nll_sums
from calib_frames.nll import merge_nll_sums
from calib_frames.schema import BIN_STATISTICS, NLL_SUMS
from calib_frames.stats import merge_bin_statistics
from calib_frames.validation import Frame, as_lazy, return_like

__all__ = ["LEADERBOARD_METRICS", "leaderboard"]

LEADERBOARD_METRICS = ("accuracy", "ece", "mce", "brier", "log_loss")
"""The calibration metrics of the leaderboard, pooled and as a mean over tasks."""


def leaderboard(
    comparison: Frame,
    stats: Frame,
    sums: Frame | None = None,
    *,
    model: str = "model",
    mce_min_count: int = MCE_MIN_COUNT,
    uncertainty: bool = True,
    replicates: int = REPLICATES,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """One row per model across its tasks: pooled metrics, means over tasks, intervals.

    Pooled = the metric of the model's bin statistics added over its tasks; mean over
    tasks = the unweighted mean of the per-task metrics; both with intervals (module
    docstring for how), and on how many tasks the ECE is beyond the noise floor.

    Parameters
    ----------
    comparison
        The per-group table (:func:`~calib_frames.compare`,
        :func:`~calib_frames.comparison_from_statistics`, or the CLI's
        ``comparison.parquet``), keyed by ``model`` and the task key(s).
    stats
        The bin-statistics table it was computed from (same keys).
    sums
        The NLL-sums table, for the pooled perplexity (``None``: none).
    model
        The key column that names a model; the other keys are the tasks.
    mce_min_count
        As for :func:`~calib_frames.metrics_from_bin_statistics`.
    uncertainty
        Add the intervals (``<metric>_ci_low/_high``, ``<metric>_task_mean_ci_low/_high``).
    replicates, level, seed
        Of the pooled bootstrap (defaults those of :func:`~calib_frames.compare`); ``level``
        also of the task-mean intervals.

    Returns
    -------
    DataFrame or LazyFrame (the kind of ``comparison``)
        ``model``, ``tasks``, ``count``, the pooled :data:`LEADERBOARD_METRICS` [and
        ``perplexity``], ``<metric>_task_mean`` of each metric the comparison has
        [``perplexity_task_mean``], the intervals, and ``miscalibrated_tasks`` (when the
        comparison has ``ece_beyond_noise``); sorted by pooled ECE, best first.

    Raises
    ------
    TableError
        ``model`` is not a key of ``stats``, or a table is not the one its role needs.

    See Also
    --------
    compare : the per-group table.
    merge_bin_statistics : the pooling (``by=``).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> preds = pl.read_parquet("data/synthetic_predictions.parquet")
    >>> stats = cf.bin_statistics(preds, by=["model", "task"])
    >>> table = cf.comparison_from_statistics(stats)
    >>> board = cf.leaderboard(table, stats)
    >>> board.select("model", "tasks", "miscalibrated_tasks").rows()
    [('calibrated', 4, 0), ('underconfident', 4, 4), ('overconfident', 4, 4)]
    >>> board.select(pl.col("ece", "ece_task_mean").round(3)).row(0)  # pooled, mean
    (0.01, 0.018)
    """
    from calib_frames.estimators.bootstrap import intervals_from_bin_statistics

    lazy_stats = as_lazy(stats)
    keys: list[str] = BIN_STATISTICS.keys(lazy_stats.collect_schema())
    if model not in keys:
        raise TableError(
            f"model={model!r} is not a key of the bin statistics (keys: {keys}); name the "
            'key column that identifies a model with model="COL"'
        )
    per_task = as_lazy(comparison)
    names = per_task.collect_schema().names()
    missing = [k for k in keys if k not in names]
    if missing:
        raise TableError(
            f"the comparison table lacks the keys {missing} of the bin statistics: pass the "
            "table computed from these statistics"
        )
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
        lazy_sums = as_lazy(sums)
        if model not in NLL_SUMS.keys(lazy_sums.collect_schema()):
            raise TableError(f"model={model!r} is not a key of the NLL sums")
        ppl = as_lazy(perplexity_from_nll_sums(merge_nll_sums(lazy_sums, by=model)))
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
