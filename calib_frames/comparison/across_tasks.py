r"""The leaderboard: one row per model across its tasks, ranked by a proper score.

A comparison table has one row per model × task; a reader comparing 50 models wants one
row per model, an order, and to know which places in that order the data can tell apart.

**Which rows are tasks.** The keys of the bin statistics are the model, the *tasks* and
the keys that are not tasks (``not_tasks=``: an inspect scorer, a HELM perturbation, an
epoch: the same predictions scored, perturbed or drawn again). Pooling a not-task key as
if it were a task counts each prediction once per value, so the leaderboard never does:
per model × task it keeps *one* value of each not-task key, the first in sort order
(nulls first: HELM's unperturbed run), and says which in a column named after the key
(``scorer``: ``"choice, match"``). To see another value, filter the bin statistics to it
first. Every key but the model is a task unless ``tasks=`` or ``not_tasks=`` says
otherwise (``calib-frames report`` passes the log format's ``not_tasks``).

**What a row holds.**

* **pooled** (``accuracy``, ``ece``, ``brier``, …, ``perplexity``): the metric of all
  the model's predictions together. The bin statistics are added over its tasks
  (:func:`~calib_frames.merge_bin_statistics` with ``by=model``, exact), so a task
  weighs by its predictions (its tokens for perplexity). Intervals: the bin-table
  bootstrap of the pooled table (:func:`~calib_frames.estimators.
  intervals_from_bin_statistics`). Opposite gaps in two tasks' bins cancel in a pooled
  ECE. When every model has one task (a sweep) the pooled table is the per-task one: the
  figures and their intervals are then both that row's of the per-task table.
* **mean over tasks** (``<metric>_task_mean``): (1/T)·Σ_t m_t over the model's ``tasks``,
  every task counting once. Its interval is the normal one from the per-task intervals,
  tasks independent: with s_t = (high_t − low_t)/(2z) the half-width is
  z·√(Σ_t s_t²)/T, z the normal quantile of (1 + level)/2 (exact for normal per-task
  errors; the per-task intervals need not be symmetric).
* ``tasks``: the tasks with predictions of positive weight (a task with token rows
  only, or whose weights are all 0, is not one); ``miscalibrated_tasks``: how many of
  them have ``ece_beyond_noise`` (its p-value corrected across every model × task of
  the table, :func:`~calib_frames.estimators.noise_floor_from_bin_statistics`).

**The order: the mean over tasks of the Brier score** (``brier_task_mean``, lower first).
The Brier score is a proper score: its expectation is smallest when the confidences are
the true probabilities, so a model cannot gain by hedging (a model that says 0.53 to
everything and is right 53% of the time has an ECE near 0 and a Brier score near 0.25;
a sharper model right 80% of the time with a 0.05 overconfidence has ECE about 0.05
and Brier about 0.145). Its per-prediction terms are ≥ 0, so errors of opposite sign cannot cancel
across tasks the way gaps do in a pooled ECE, and the task mean lets every task count
once. The ECE columns (pooled, task mean, ``miscalibrated_tasks``) stand beside it:
they say *how* a model is wrong, not which model is better.

**What is ranked.** ``rank`` (1 = best; ties share the smaller) compares the models that
have predictions on every task of the table. A model with fewer tasks is not ranked
against them (its mean is over other tasks): its ``rank`` is null and ``not_ranked``
says why (``"on 3 of the 4 tasks"``); a model without any weight has null metrics and
reads ``"no weight"``. Unranked rows follow the ranked ones.

**How sure the order is** (with ``uncertainty``). The bin-table bootstrap
(:func:`~calib_frames.estimators.bootstrap_bin_statistics`) draws ``replicates`` copies
of each ranked model's per-task tables, each model and task independently; in each copy
r every model k gets its task-mean Brier score S*_kr and a rank.

* ``rank_ci_low`` / ``rank_ci_high``: the ``level`` percentile interval of the model's
  rank over the copies (the lower and the higher order statistic: whole ranks).
* ``indistinguishable_from_best``: Ŝ_k − min_j Ŝ_j ≤ c, where c is the ``level``
  quantile over the copies of max_k e*_kr − min_k e*_kr, e*_kr = S*_kr − Ŝ_k (how far
  the copies stray from the estimates, for every pair of models at once). With
  probability about ``level`` every difference Ŝ_k − Ŝ_j errs by at most c, so the
  marked models hold the truly best one (all of them, when several are equally good):
  the mark is a confidence set for the best, simultaneous over the table (one claim per
  table, as the noise-floor verdicts are corrected across it). For two models it is the
  pairwise test (the ``level`` interval of their difference reaches 0); with more
  models c grows, as a correction for the comparisons must. Not "the rank interval
  reaches 1": with many close models each is rarely first in a copy, so a rank interval
  can miss 1 for a model no worse than the best. Models are drawn independently even where they
  answered the same questions; their Brier scores are then positively correlated, a
  difference varies less than the copies say, and the mark errs towards
  "indistinguishable".

Measured by ``benchmarks/sim_leaderboard.py`` (4 tasks × 500 predictions a model, 200
replicates, level 0.95, 400 runs a case; a rate near 0.95 over 400 runs is within about
±0.02 of its expectation):

==================================================  ===========================
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import polars as pl

from calib_frames.comparison.side_by_side import with_columns_of
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.metrics.calibration import metrics_from_bin_statistics
from calib_frames.metrics.tokens import perplexity_from_nll_sums
from calib_frames.nll import merge_nll_sums
from calib_frames.schema import BIN_STATISTICS, NLL_SUMS
from calib_frames.stats import merge_bin_statistics
from calib_frames.validation import Frame, as_lazy, describe_problem, return_like, working

__all__ = [
    "LEADERBOARD_METRICS",
    "RANKED_BY",
    "RANK_COLUMNS",
    "leaderboard_of",
    "one_row_per_bin",
    "task_keys",
]

LEADERBOARD_METRICS = ("accuracy", "ece", "mce_guarded", "brier", "log_loss")
"""The calibration metrics of the leaderboard, pooled and as a mean over tasks."""

RANKED_BY = "brier_task_mean"
"""The column the leaderboard ranks by, lower first (module docstring: why)."""

RANK_COLUMNS = ("rank", "rank_ci_low", "rank_ci_high", "indistinguishable_from_best")
"""The rank, its interval and the mark (the last three with ``uncertainty``)."""

_ALL_TASKS = working("all_tasks")
_SCORE = working("score")
_REACH = working("reach")


def task_keys(
    keys: Sequence[str],
    model: str,
    *,
    tasks: str | Sequence[str] | None = None,
    not_tasks: str | Sequence[str] | None = None,
) -> tuple[list[str], list[str]]:
    """The task keys and the not-task keys of a table keyed by ``keys``, ``model`` among them.

    Parameters
    ----------
    keys
        The group keys of the bin statistics.
    model
        The key that names a model.
    tasks, not_tasks
        The keys that are tasks, or those that are not (at most one of the two); by
        default every key but ``model`` is a task.

    Returns
    -------
    tuple of list of str
        (task keys, not-task keys), each in the order of ``keys``.

    Raises
    ------
    ArgumentError
        Both ``tasks`` and ``not_tasks`` are given.
    TableError
        One of them names a column that is not a key other than ``model``.

    Examples
    --------
    >>> task_keys(["model", "task", "scorer"], "model", not_tasks="scorer")
    (['task'], ['scorer'])
    """
    if tasks is not None and not_tasks is not None:
        raise ArgumentError(
            "give tasks= or not_tasks=, not both: every key but the model is one or the other"
        )
    argument, named = ("tasks", tasks) if tasks is not None else ("not_tasks", not_tasks)
    chosen = [named] if isinstance(named, str) else list(named or [])
    others = [key for key in keys if key != model]
    wrong = [key for key in chosen if key not in others]
    if wrong:
        raise TableError(
            f"{argument}={chosen}: {wrong} not a key of the bin statistics but the "
            f"model {model!r} (keys: {list(keys)})"
        )
    if tasks is not None:
        return [k for k in others if k in chosen], [k for k in others if k not in chosen]
    return [k for k in others if k not in chosen], [k for k in others if k in chosen]


def one_row_per_bin(stats: pl.LazyFrame, keys: Sequence[str]) -> pl.LazyFrame:
    """``stats``, refused when collected if a group × bin has more than one row.

    A bin-statistics table has one row per group and bin; a table stacked twice (or a
    part added by concatenation, not by :func:`~calib_frames.merge_bin_statistics`)
    would count its predictions twice.

    Raises
    ------
    TableError
        At collect time: the repeated rows, how many, and one of them with its keys.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> stats = cf.bin_statistics(pl.DataFrame({"confidence": [0.9], "correct": [True]}))
    >>> one_row_per_bin(pl.concat([stats, stats]).lazy(), []).collect()
    Traceback (most recent call last):
    ...
    calib_frames.exceptions.TableError: bin-statistics column 'bin': 10 of 20 rows are ...
    """
    on = [*keys, "bin"]

    def check(frame: pl.DataFrame) -> pl.DataFrame:
        repeated = frame.select(pl.struct(on).is_first_distinct().not_()).to_series()
        if repeated.any():
            raise TableError(
                describe_problem(
                    "bin",
                    int(repeated.sum()),
                    frame.height,
                    "a repeat of a group × bin already in the table (one row per group "
                    "and bin: add the bin statistics of parts with merge_bin_statistics)",
                    example=frame.filter(repeated).row(0, named=True),
                    keys=list(keys),
                    value="bin",
                    table="bin-statistics",
                )
            )
        return frame

    return stats.map_batches(check, schema=stats.collect_schema())


def _first_of_each(groups: pl.LazyFrame, by: list[str], not_tasks: list[str]) -> pl.LazyFrame:
    """Per ``by`` group, the row of the first ``not_tasks`` values (sorted, nulls first)."""
    if not not_tasks:
        return groups
    first = groups.sort(not_tasks, nulls_last=False, maintain_order=True)
    return first.unique(subset=by, keep="first", maintain_order=True)


def _kept(table: pl.LazyFrame, groups: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """The rows of ``table`` whose ``keys`` are among ``groups`` (null keys match)."""
    return table.join(groups.select(keys), on=keys, how="semi", nulls_equal=True)


def leaderboard_of(
    comparison: Frame,
    stats: pl.DataFrame | pl.LazyFrame,
    sums: pl.DataFrame | pl.LazyFrame | None,
    *,
    model: str,
    tasks: str | Sequence[str] | None = None,
    not_tasks: str | Sequence[str] | None = None,
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
    ``sums`` (:func:`~calib_frames.comparison.report_tables` checks it, and that
    ``stats`` has one row per group × bin: :func:`one_row_per_bin`).

    Returns
    -------
    DataFrame or LazyFrame (the kind of ``comparison``)
    """
    lazy_stats = as_lazy(stats)
    keys: list[str] = BIN_STATISTICS.keys(lazy_stats.collect_schema())
    split = task_keys(keys, model, tasks=tasks, not_tasks=not_tasks)
    task_cols: list[str] = split[0]
    others: list[str] = split[1]
    chosen = _first_of_each(lazy_stats.select(keys).unique(), [model, *task_cols], others)
    used = _kept(lazy_stats, chosen, keys)
    per_task = as_lazy(comparison)
    names = per_task.collect_schema().names()
    # the per-task rows of the predictions pooled, and the groups of token rows only
    predicted = _kept(per_task.filter(pl.col("count").is_not_null()), chosen, keys)
    rows = pl.concat([predicted, per_task.filter(pl.col("count").is_null())])
    metrics: tuple[str, ...] = LEADERBOARD_METRICS
    bounds = [f"{m}_ci_{e}" for m in metrics for e in ("low", "high")]
    sweep = (
        isinstance(comparison, pl.DataFrame)
        and predicted.select(pl.col(model).is_unique().all()).collect().item()
    )
    if sweep:  # one task per model: the pooled table is the per-task one, row for row
        board = predicted.select(model, "count", *metrics, *(b for b in bounds if b in names))
    else:
        pooled = merge_bin_statistics(used, by=model)
        board = as_lazy(metrics_from_bin_statistics(pooled, mce_min_count=mce_min_count))
        board = board.select(model, "count", *metrics)
        if uncertainty:
            intervals = _pooled_intervals(pooled, model, replicates, level, seed)
            board = with_columns_of(board, intervals, [model])
    if sums is not None:
        board = with_columns_of(board, _pooled_perplexity(as_lazy(sums), model, others), [model])
    means = rows.group_by(model).agg(
        _task_means(names, others, uncertainty=uncertainty, level=level)
    )
    board = board.join(means, on=model, how="left", nulls_equal=True)
    board = _ranked(board, predicted, model=model, task_cols=task_cols)
    if uncertainty:
        ranked = board.filter(pl.col("rank").is_not_null()).select(model, RANKED_BY)
        drawn = _kept(used, predicted.filter(pl.col("weight") > 0).join(
            ranked, on=model, how="semi", nulls_equal=True), keys)  # fmt: skip
        spread = _rank_intervals(
            drawn, ranked, model=model, replicates=replicates, level=level, seed=seed
        )
        board = board.join(spread, on=model, how="left", nulls_equal=True)
    shown: list[str] = [c for c in RANK_COLUMNS if c in board.collect_schema().names()]
    front = [model, *shown, "not_ranked", "tasks", "count", *others]
    board = board.select(*front, pl.exclude(*front, _ALL_TASKS))
    return return_like(comparison, board.sort("rank", RANKED_BY, model, nulls_last=True))


def _pooled_intervals(
    pooled: pl.LazyFrame, model: str, replicates: int, level: float, seed: int
) -> pl.LazyFrame:
    """The bootstrap intervals of the pooled table's metrics, by ``model``."""
    from calib_frames.estimators.bootstrap import intervals_from_bin_statistics

    ci = as_lazy(
        intervals_from_bin_statistics(pooled, replicates=replicates, level=level, seed=seed)
    )
    bounds = [f"{m}_ci_{e}" for m in LEADERBOARD_METRICS for e in ("low", "high")]
    present = ci.collect_schema().names()
    return ci.select(model, *(b for b in bounds if b in present))


def _pooled_perplexity(sums: pl.LazyFrame, model: str, others: list[str]) -> pl.LazyFrame:
    """The perplexity of each model's token rows, one value of each not-task key per task."""
    keys: list[str] = NLL_SUMS.keys(sums.collect_schema())
    repeated = [key for key in others if key in keys]
    by = [key for key in keys if key not in repeated]
    chosen = _first_of_each(sums.select(keys).unique(), by, repeated)
    pooled = merge_nll_sums(_kept(sums, chosen, keys), by=model)
    return as_lazy(perplexity_from_nll_sums(pooled)).select(model, "perplexity")


def _task_means(
    names: list[str], others: list[str], *, uncertainty: bool, level: float
) -> list[pl.Expr]:
    """``tasks``, the values of the not-task keys used, the task means and their intervals."""
    weighed = pl.col("weight") > 0
    aggregations = [weighed.sum().cast(pl.UInt32).alias("tasks")]
    for key in others:  # which values of the key the rows pooled
        values = pl.col(key).filter(weighed).drop_nulls().cast(pl.String).unique().sort()
        joined = values.str.join(", ")
        aggregations.append(pl.when(joined != "").then(joined).alias(key))
    for m in (*LEADERBOARD_METRICS, "perplexity"):
        if m not in names:
            continue
        kept = pl.col(m).is_not_null() if m == "perplexity" else weighed
        values = pl.col(m).filter(kept)
        aggregations.append(values.mean().alias(f"{m}_task_mean"))
        if uncertainty and f"{m}_ci_low" in names:
            z = NormalDist().inv_cdf((1 + level) / 2)
            spread = ((pl.col(f"{m}_ci_high") - pl.col(f"{m}_ci_low")) / (2 * z)) ** 2
            half = z * spread.filter(kept).sum().sqrt() / values.count()
            aggregations += [
                (values.mean() - half).alias(f"{m}_task_mean_ci_low"),
                (values.mean() + half).alias(f"{m}_task_mean_ci_high"),
            ]
    if "ece_beyond_noise" in names:
        miscalibrated = pl.col("ece_beyond_noise").filter(weighed).sum().cast(pl.UInt32)
        aggregations.append(miscalibrated.alias("miscalibrated_tasks"))
    return aggregations


def _ranked(
    board: pl.LazyFrame, predicted: pl.LazyFrame, *, model: str, task_cols: list[str]
) -> pl.LazyFrame:
    """``rank`` among the models with every task, and ``not_ranked`` for the others."""
    if task_cols:
        every = predicted.filter(pl.col("weight") > 0).select(task_cols).unique()
        every = every.select(pl.len().cast(pl.UInt32).alias(_ALL_TASKS))
    else:
        every = pl.LazyFrame({_ALL_TASKS: [1]}, schema={_ALL_TASKS: pl.UInt32})
    tasks = pl.col("tasks")
    complete = (tasks > 0) & (tasks == pl.col(_ALL_TASKS))
    return board.join(every, how="cross").with_columns(
        pl.when(complete).then(pl.col(RANKED_BY)).rank("min").cast(pl.UInt32).alias("rank"),
        pl.when(tasks == 0)
        .then(pl.lit("no weight"))
        .when(~complete)
        .then(pl.format("on {} of the {} tasks", tasks, pl.col(_ALL_TASKS)))
        .alias("not_ranked"),
    )


def _rank_intervals(
    drawn: pl.LazyFrame,
    ranked: pl.LazyFrame,
    *,
    model: str,
    replicates: int,
    level: float,
    seed: int,
) -> pl.LazyFrame:
    """``rank_ci_low/_high`` and ``indistinguishable_from_best`` of the ranked models.

    ``drawn``: the bin statistics of their tasks; ``ranked``: their ``model`` and
    ``brier_task_mean``. Each bootstrap copy gives every model its task-mean Brier score
    and a rank; the mark compares the distance to the best with the ``level`` quantile
    of the copies' range of errors (module docstring).
    """
    from calib_frames.estimators.bootstrap import REPLICATE, bootstrap_bin_statistics

    copies = bootstrap_bin_statistics(drawn, replicates=replicates, seed=seed)
    scores = as_lazy(metrics_from_bin_statistics(copies)).group_by(model, REPLICATE)
    per_copy = scores.agg(pl.col("brier").mean().alias(_SCORE))
    per_copy = per_copy.join(ranked, on=model, how="inner", nulls_equal=True).with_columns(
        pl.col(_SCORE).rank("min").over(REPLICATE).alias("rank")
    )
    alpha = (1 - level) / 2
    intervals = per_copy.group_by(model).agg(
        pl.col("rank").quantile(alpha, "lower").cast(pl.UInt32).alias("rank_ci_low"),
        pl.col("rank").quantile(1 - alpha, "higher").cast(pl.UInt32).alias("rank_ci_high"),
    )
    # how far the copies stray from the estimates, every pair of models at once
    error = pl.col(_SCORE) - pl.col(RANKED_BY)
    spread = per_copy.group_by(REPLICATE).agg((error.max() - error.min()).alias(_REACH))
    reach = spread.select(pl.col(_REACH).quantile(level, "linear"))
    behind = pl.col(RANKED_BY) - pl.col(RANKED_BY).min()
    marks = ranked.join(reach, how="cross").select(
        model, (behind <= pl.col(_REACH)).alias("indistinguishable_from_best")
    )
    return intervals.join(marks, on=model, how="left", nulls_equal=True)
