"""The report's tables in one pipeline: the per-group comparison table and the leaderboard.

:func:`report_tables` is the one place where the report's tables are built from the
additive tables, in this order:

1. the metrics of the bin statistics (:func:`~calib_frames.metrics_from_bin_statistics`);
2. with ``uncertainty``, their intervals (the bootstrap's; the ECE's by test inversion)
   and the ECE noise floor, its p-values corrected across every group of the table
   (``correction``, Benjamini–Hochberg by default), with ``ece_beyond_noise``,
   ``ece_direction`` and the ``verdict`` in words
   (:func:`~calib_frames.estimators.uncertainty_from_bin_statistics`);
3. the perplexity of the NLL sums (with ``uncertainty`` and the token rows, its
   intervals: :func:`~calib_frames.estimators.perplexity_intervals`), joined on the
   shared keys (:func:`~calib_frames.comparison_table`);
4. figures computed elsewhere, ``beside`` them (lm-eval's own);
5. with a ``model`` key, the leaderboard of that table
   (:mod:`calib_frames.comparison.across_tasks`).

Everything that shows these tables calls it: ``calib-frames compare`` (the comparison
table), ``calib-frames report`` (both), and in Python :func:`compare` (from prediction
and token rows), :func:`comparison_from_bin_statistics` and :func:`leaderboard` (from
the additive tables). The defaults are the command line's: :data:`REPLICATES`
bootstrap replicates, level 0.95, seed 0, correction ``"bh"``. The report's
``replicates`` default is 200, not the 1000 of the estimators: a report runs the
bootstrap for every group of a leaderboard (2,000 groups at 1,000 replicates take about a
minute); the noise floor draws nothing (its null distribution is exact).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Generic

import polars as pl

from calib_frames.arguments import FLAG, RESAMPLING, TOKENS, Integer, check_arguments
from calib_frames.binning import BINS, BinsLike
from calib_frames.comparison.across_tasks import leaderboard_of, one_row_per_bin
from calib_frames.comparison.side_by_side import comparison_table, with_columns_of
from calib_frames.exceptions import TableError
from calib_frames.metrics.calibration import MCE_MIN_COUNT, metrics_from_bin_statistics
from calib_frames.metrics.tokens import perplexity_from_nll_sums
from calib_frames.nll import nll_sums
from calib_frames.schema import BIN_STATISTICS, NLL_SUMS
from calib_frames.stats import bin_statistics
from calib_frames.validation import (
    CORRECTION,
    Correction,
    Frame,
    as_lazy,
    group_keys,
    return_like,
)

__all__ = [
    "REPLICATES",
    "ReportTables",
    "compare",
    "comparison_from_bin_statistics",
    "leaderboard",
    "report_tables",
]

REPLICATES = 200
"""Bootstrap and noise-floor replicates of the report (``calib-frames report --replicates``)."""

_UNCERTAINTY = {
    "mce_min_count": Integer(1),
    "uncertainty": FLAG,
    "correction": CORRECTION,
    **RESAMPLING,
}


@dataclass(frozen=True)
class ReportTables(Generic[Frame]):
    """What :func:`report_tables` builds (each the kind of its ``stats``: eager or lazy).

    Attributes
    ----------
    comparison
        One row per group: keys…, the metrics, their intervals and noise floor, the
        perplexity columns, the ``beside`` columns.
    perplexity
        The perplexity table joined into it (with intervals), or None without NLL sums.
    leaderboard
        One row per model, or None without a ``model`` key.
    """

    comparison: Frame
    perplexity: Frame | None
    leaderboard: Frame | None


@check_arguments(tokens=TOKENS, **_UNCERTAINTY)
def report_tables(
    stats: Frame,
    sums: pl.DataFrame | pl.LazyFrame | None = None,
    losses: pl.DataFrame | pl.LazyFrame | None = None,
    *,
    nll: str = "nll",
    tokens: str | int | None = None,
    bytes: str | None = None,
    model: str | None = None,
    tasks: str | Sequence[str] | None = None,
    not_tasks: str | Sequence[str] | None = None,
    beside: pl.DataFrame | pl.LazyFrame | None = None,
    mce_min_count: int = MCE_MIN_COUNT,
    uncertainty: bool = True,
    correction: Correction = "bh",
    replicates: int = REPLICATES,
    level: float = 0.95,
    seed: int = 0,
) -> ReportTables[Frame]:
    """Every table of the report from the additive tables: the comparison, the leaderboard.

    The pipeline of the module docstring. Its tables are what ``calib-frames report``
    writes (``comparison.*``, ``leaderboard.*``) for the same inputs and flags.

    Parameters
    ----------
    stats
        A bin-statistics table; lazy in, lazy out.
    sums
        An NLL-sums table (:func:`~calib_frames.nll_sums`), or ``None``.
    losses
        The token rows ``sums`` was summed from, for the perplexity intervals (``None``:
        perplexity without intervals).
    nll, tokens, bytes
        Their columns, as for :func:`~calib_frames.nll_sums`.
    model
        The key that names a model: the leaderboard pools its tasks (``None``: no
        leaderboard). NLL sums without this key give no pooled perplexity.
    tasks, not_tasks
        The keys that are tasks, or those that are not (a scorer, a perturbation), as for
        :func:`leaderboard` (default: every key but ``model`` is a task).
    beside
        A per-group table of figures computed elsewhere (lm-eval's own, of
        :func:`~calib_frames.comparison.lm_eval_comparison`) with every key of
        ``stats``: the columns the comparison lacks are joined beside it (a full join,
        so a group only it has gets a row).
    mce_min_count
        As for :func:`~calib_frames.metrics_from_bin_statistics` (default 10).
    uncertainty
        Add the intervals and the noise floor (costs groups × bins × replicates).
    correction
        How the noise floor's p-values are corrected across the table's groups:
        ``"bh"`` (Benjamini–Hochberg, default), ``"holm"`` or ``"none"``
        (:mod:`calib_frames.estimators.noise` says why BH).
    replicates, level, seed
        Of the bootstrap (default 200, 0.95, 0: the report's); ``level`` is also that of
        the ECE interval, the task-mean intervals and the noise floor's quantile.

    Returns
    -------
    ReportTables
        ``comparison``, ``perplexity`` and ``leaderboard``.

    Raises
    ------
    TableError, ArgumentError
        As the functions it combines; ``model`` is not a key of ``stats``, ``stats``
        has a group × bin twice, or ``beside`` lacks one of its keys.

    See Also
    --------
    compare : the comparison table from prediction and token rows.
    leaderboard : the leaderboard from the additive tables.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.comparison import report_tables
    >>> preds = pl.read_parquet("data/synthetic_predictions.parquet")
    >>> tables = report_tables(cf.bin_statistics(preds, by=["model", "task"]), model="model")
    >>> tables.comparison.height, tables.leaderboard["model"].to_list()
    (12, ['underconfident', 'calibrated', 'overconfident'])
    """
    from calib_frames.estimators import perplexity_intervals, uncertainty_from_bin_statistics

    lazy = as_lazy(stats)
    keys: list[str] = BIN_STATISTICS.keys(lazy.collect_schema())
    if model is not None and model not in keys:
        raise TableError(
            f"model={model!r} is not a key of the bin statistics (keys: {keys}); name the "
            'key column that identifies a model with model="COL"'
        )
    lazy = one_row_per_bin(lazy, keys)
    table = as_lazy(metrics_from_bin_statistics(lazy, mce_min_count=mce_min_count))
    if uncertainty:
        columns = uncertainty_from_bin_statistics(
            lazy, correction=correction, replicates=replicates, level=level, seed=seed
        )
        table = with_columns_of(table, as_lazy(columns), keys)
    ppl = None
    if sums is not None:
        loss_keys: list[str] = NLL_SUMS.keys(as_lazy(sums).collect_schema())
        ppl = as_lazy(perplexity_from_nll_sums(as_lazy(sums)))
        if uncertainty and losses is not None:
            intervals = perplexity_intervals(
                as_lazy(losses),
                nll=nll,
                tokens=tokens,
                bytes=bytes,
                by=loss_keys,
                replicates=replicates,
                level=level,
                seed=seed,
            )
            ppl = with_columns_of(ppl, as_lazy(intervals), loss_keys)
        if isinstance(stats, pl.DataFrame):  # eager: the intervals are drawn once
            ppl = ppl.collect().lazy()
        table = as_lazy(comparison_table(table, ppl))
    if beside is not None:
        table = _beside(table, as_lazy(beside), keys)
    comparison = return_like(stats, table)
    board = None
    if model is not None:
        pooled_sums = sums
        if sums is not None and model not in NLL_SUMS.keys(as_lazy(sums).collect_schema()):
            pooled_sums = None
        board = leaderboard_of(
            comparison,
            lazy,
            pooled_sums,
            model=model,
            tasks=tasks,
            not_tasks=not_tasks,
            mce_min_count=mce_min_count,
            uncertainty=uncertainty,
            replicates=replicates,
            level=level,
            seed=seed,
        )
    perplexity = None if ppl is None else return_like(stats, ppl)
    return ReportTables(comparison, perplexity, board)


def _beside(table: pl.LazyFrame, beside: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """``table`` with the columns of ``beside`` it lacks: a full join on ``keys``, sorted."""
    names = beside.collect_schema().names()
    missing = [key for key in keys if key not in names]
    if missing:
        raise TableError(f"beside= lacks the keys {missing} of the bin statistics")
    ours = table.collect_schema().names()
    extra = [c for c in names if c not in ours and c not in keys]
    joined = table.join(beside.select(*keys, *extra), on=keys, how="full", coalesce=True)
    return joined.sort(keys, nulls_last=True)


@check_arguments(**_UNCERTAINTY)
def comparison_from_bin_statistics(
    stats: Frame,
    sums: Frame | None = None,
    *,
    mce_min_count: int = MCE_MIN_COUNT,
    uncertainty: bool = True,
    correction: Correction = "bh",
    replicates: int = REPLICATES,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """The comparison table of a bin-statistics table (and an NLL-sums table).

    :func:`~calib_frames.metrics_from_bin_statistics`, then (with ``uncertainty``) the
    intervals ``<metric>_ci_low/_high`` and the ECE noise floor with its raw and
    adjusted p-values, ``ece_beyond_noise``, ``ece_direction`` and ``verdict`` columns
    (:func:`~calib_frames.estimators.uncertainty_from_bin_statistics`: the bootstrap
    with ``replicates``, the exact null distribution of the ECE, the correction across
    every group of ``stats``), then the perplexity of ``sums`` joined on the shared keys
    (:func:`~calib_frames.comparison_table`): the comparison of :func:`report_tables`.

    Parameters
    ----------
    stats, sums, mce_min_count, uncertainty, correction, replicates, level, seed
        As for :func:`report_tables`: a bin-statistics table (lazy in, lazy out), an
        NLL-sums table or ``None``, and the report's defaults.

    Returns
    -------
    DataFrame or LazyFrame
        One row per group: keys…, the metrics, their intervals and noise floor, the
        perplexity columns (intervals of perplexity need the token rows: :func:`compare`).

    Raises
    ------
    TableError, ArgumentError
        As the functions it combines.

    See Also
    --------
    compare : the same from prediction and token rows, with perplexity intervals.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> preds = pl.read_parquet("data/synthetic_predictions.parquet")
    >>> table = cf.comparison_from_bin_statistics(cf.bin_statistics(preds, by="model"))
    >>> table.select("model", "verdict").rows()  # doctest: +NORMALIZE_WHITESPACE
    [('calibrated', 'within noise, adjusted p = 0.54'),
     ('overconfident', 'overconfident, p < 1e-12'),
     ('underconfident', 'underconfident, p < 1e-12')]
    """
    return report_tables(
        stats,
        sums,
        mce_min_count=mce_min_count,
        uncertainty=uncertainty,
        correction=correction,
        replicates=replicates,
        level=level,
        seed=seed,
    ).comparison


@check_arguments(**_UNCERTAINTY)
def leaderboard(
    stats: Frame,
    sums: Frame | None = None,
    *,
    model: str = "model",
    tasks: str | Sequence[str] | None = None,
    not_tasks: str | Sequence[str] | None = None,
    mce_min_count: int = MCE_MIN_COUNT,
    uncertainty: bool = True,
    correction: Correction = "bh",
    replicates: int = REPLICATES,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """One row per model across its tasks, ranked by the mean Brier score over tasks.

    From the bin statistics (and the NLL sums) alone: the per-task table is
    :func:`comparison_from_bin_statistics` of the same tables and arguments, so the two
    always match. Pooled = the metric of the model's bin statistics added over its
    tasks; mean over tasks = the unweighted mean of the per-task metrics, both with
    intervals, and on how many tasks the ECE is beyond the noise floor. The order is
    the mean over tasks of the Brier score (a proper score: hedging cannot win it, and
    errors of opposite sign do not cancel across tasks as gaps do in a pooled ECE),
    lower first, with each model's rank interval over the bootstrap copies and a mark
    of the models the data cannot tell from the best; a model with fewer tasks than the
    table or without weight is not ranked (:mod:`calib_frames.comparison.across_tasks`
    says how each column is computed, and the mark's measured error rates).

    Parameters
    ----------
    stats
        A bin-statistics table keyed by ``model`` and the task key(s), one row per
        group × bin; lazy in, lazy out.
    sums
        The NLL-sums table, for the pooled perplexity (``None``: none).
    model
        The key column that names a model.
    tasks, not_tasks
        The keys that are tasks, or those that are not (at most one of the two; default:
        every key but ``model`` is a task). A not-task key (a scorer, a perturbation, an
        epoch) is never pooled as a task: per model × task the first of its values
        (sorted, nulls first) is kept, and a column named after it says which.
    mce_min_count
        As for :func:`~calib_frames.metrics_from_bin_statistics`.
    uncertainty
        Add the intervals (``<metric>_ci_low/_high``, ``<metric>_task_mean_ci_low/_high``,
        ``rank_ci_low/_high``), ``indistinguishable_from_best`` and
        ``miscalibrated_tasks``.
    correction
        As for :func:`report_tables`: ``miscalibrated_tasks`` counts the tasks whose
        adjusted p-value (corrected across every model × task) is at most 0.05.
    replicates, level, seed
        Of the bootstrap (defaults those of :func:`compare`); ``level`` is that of every
        interval: pooled, task mean and rank, and of the mark.

    Returns
    -------
    DataFrame or LazyFrame (the kind of ``stats``)
        ``model``, ``rank`` [``rank_ci_low``, ``rank_ci_high``,
        ``indistinguishable_from_best``], ``not_ranked``, ``tasks``, ``count``, a column
        per not-task key, the pooled ``accuracy``, ``ece``, ``mce``, ``brier``,
        ``log_loss`` [and ``perplexity``], the intervals, ``<metric>_task_mean`` of each
        [``perplexity_task_mean``] with intervals, and ``miscalibrated_tasks``; sorted by
        rank, the unranked models last. (``perplexity_task_mean`` has an interval where
        the per-task perplexities have one: :func:`report_tables` with the token rows.)

    Raises
    ------
    TableError
        ``model`` is not a key of ``stats`` or ``sums``, ``tasks``/``not_tasks`` name
        another column, ``stats`` has a group × bin twice, or a table is not the one its
        role needs.
    ArgumentError
        Both ``tasks`` and ``not_tasks``; the resampling arguments.

    See Also
    --------
    compare : the per-group table.
    merge_bin_statistics : the pooling (``by=``).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> preds = pl.read_parquet("data/synthetic_predictions.parquet")
    >>> board = cf.leaderboard(cf.bin_statistics(preds, by=["model", "task"]))
    >>> board.select("model", "rank", "rank_ci_low", "rank_ci_high", "tasks").rows()
    [('underconfident', 1, 1, 1, 4), ('calibrated', 2, 2, 2, 4), ('overconfident', 3, 3, 3, 4)]
    >>> scores = pl.col("brier_task_mean", "ece").round(3)
    >>> board.select("model", scores, "miscalibrated_tasks").rows()
    [('underconfident', 0.166, 0.107, 4), ('calibrated', 0.181, 0.01, 0),
     ('overconfident', 0.208, 0.117, 4)]

    The underconfident model is right more often (accuracy 0.78 against 0.67): its
    Brier score is better although its ECE is not; the ECE columns say how it is wrong.
    """
    if sums is not None and model not in NLL_SUMS.keys(as_lazy(sums).collect_schema()):
        raise TableError(f"model={model!r} is not a key of the NLL sums")
    board = report_tables(
        stats,
        sums,
        model=model,
        tasks=tasks,
        not_tasks=not_tasks,
        mce_min_count=mce_min_count,
        uncertainty=uncertainty,
        correction=correction,
        replicates=replicates,
        level=level,
        seed=seed,
    ).leaderboard
    assert board is not None
    return board


@check_arguments(tokens=TOKENS, bins=BINS, **_UNCERTAINTY)
def compare(
    predictions: Frame,
    losses: Frame | None = None,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    nll: str = "nll",
    tokens: str | int | None = None,
    bytes: str | None = None,
    words: str | None = None,
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    log_confidence: str | None = None,
    tokens_by: str | Sequence[str] | None = None,
    mce_min_count: int = MCE_MIN_COUNT,
    uncertainty: bool = True,
    correction: Correction = "bh",
    replicates: int = REPLICATES,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """The per-group comparison table, from prediction and token rows: ``calib-frames compare``.

    :func:`~calib_frames.bin_statistics` and :func:`~calib_frames.nll_sums`, then
    :func:`report_tables`: the metrics, (with ``uncertainty``) their intervals, the noise
    floor and the verdict, and with ``losses`` the perplexity with its intervals. The
    numbers ``calib-frames compare`` prints and writes, and ``report`` writes as
    ``comparison.parquet``, for the same inputs and flags (``--replicates``, ``--level``,
    ``--seed``, ``--bins`` have these defaults): the same draws, the same verdicts,
    floats equal to rounding (polars adds a group's floats on several threads, in an
    order that can change from run to run, so two runs of the CLI itself may differ in
    the last bits).

    Parameters
    ----------
    predictions
        Rows of keys…, confidence, correct [, weight].
    losses
        Token or document rows of keys…, nll [, tokens, bytes, words], or ``None``.
    confidence, correct
        As for :func:`~calib_frames.bin_statistics`.
    nll, tokens, bytes, words
        As for :func:`~calib_frames.nll_sums`.
    by
        Group keys of the predictions: a column name or a list of them.
    bins, weight, log_confidence
        As for :func:`~calib_frames.bin_statistics`.
    tokens_by
        Group keys of ``losses`` (default: the keys of ``by`` that ``losses`` has).
    mce_min_count, uncertainty, correction, replicates, level, seed
        As for :func:`report_tables` (``uncertainty=False`` skips the intervals and the
        noise floor).

    Returns
    -------
    DataFrame or LazyFrame (the kind of ``predictions``)
        One row per group, sorted by the keys.

    Raises
    ------
    TableError, DataError, ArgumentError
        As the functions it combines.

    See Also
    --------
    comparison_table : the join of two tables you already have.
    leaderboard : one row per model across its tasks.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> preds = pl.read_parquet("data/synthetic_predictions.parquet")
    >>> losses = pl.read_parquet("data/synthetic_tokens.parquet")
    >>> table = cf.compare(preds, losses, tokens="tokens", bytes="bytes", by=["model", "task"])
    >>> table.height, table.filter(pl.col("model") == "calibrated")["verdict"][0]
    (12, 'within noise, adjusted p = 0.84')
    """
    keys = group_keys(by)
    stats = as_lazy(
        bin_statistics(
            as_lazy(predictions),
            confidence=confidence,
            correct=correct,
            by=keys,
            bins=bins,
            weight=weight,
            log_confidence=log_confidence,
        )
    )
    sums = None
    if losses is not None:
        names = as_lazy(losses).collect_schema().names()
        loss_keys = (
            group_keys(tokens_by) if tokens_by is not None else [k for k in keys if k in names]
        )
        sums = as_lazy(
            nll_sums(as_lazy(losses), nll=nll, tokens=tokens, bytes=bytes, words=words,
                     by=loss_keys)
        )  # fmt: skip
    tables = partial(
        report_tables,
        losses=losses,
        nll=nll,
        tokens=tokens,
        bytes=bytes,
        mce_min_count=mce_min_count,
        uncertainty=uncertainty,
        correction=correction,
        replicates=replicates,
        level=level,
        seed=seed,
    )
    if isinstance(predictions, pl.DataFrame):
        # eager in: the tables are materialised first, as the command line does
        return tables(stats.collect(), None if sums is None else sums.collect()).comparison
    return tables(stats, sums).comparison
