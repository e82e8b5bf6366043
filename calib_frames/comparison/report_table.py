"""The command line's comparison table in one call: metrics, intervals, noise floor, perplexity.

:func:`compare` is what ``calib-frames report`` writes as ``comparison.parquet``, from
frames instead of files, with the same defaults (:data:`REPLICATES` bootstrap replicates,
level 0.95, seed 0), so that the two agree (to rounding: see :func:`compare`);
:func:`comparison_from_statistics` is the same from the additive tables
(``calib-frames report --from-stats``). The report's ``replicates`` default is 200, not
the 1000 of the estimators: a report runs the bootstrap for every group of a leaderboard
(2,000 groups at 1,000 replicates take about a minute), and the noise floor, whose
p-value needs the resolution, keeps its 1000 draws.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from calib_frames.binning import BinsLike
from calib_frames.comparison.table import comparison_table
from calib_frames.metrics.calibration import MCE_MIN_COUNT, metrics_from_bin_statistics
from calib_frames.metrics.tokens import perplexity_from_nll_sums
from calib_frames.nll import nll_sums
from calib_frames.schema import BIN_STATISTICS
from calib_frames.stats import bin_statistics
from calib_frames.validation import Frame, as_lazy, group_keys, return_like

__all__ = ["REPLICATES", "compare", "comparison_from_statistics", "with_columns_of"]

REPLICATES = 200
"""Bootstrap and noise-floor replicates of the report (``calib-frames report --replicates``)."""


def with_columns_of(table: pl.LazyFrame, extra: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """``table`` with the columns of ``extra`` it lacks, joined on ``keys`` (left join)."""
    names = table.collect_schema().names()
    extra = extra.select(*keys, *(c for c in extra.collect_schema().names() if c not in names))
    if not keys:
        return pl.concat([table, extra], how="horizontal")
    return table.join(extra, on=keys, how="left", nulls_equal=True, maintain_order="left")


def comparison_from_statistics(
    stats: Frame,
    sums: Frame | None = None,
    *,
    mce_min_count: int = MCE_MIN_COUNT,
    uncertainty: bool = True,
    replicates: int = REPLICATES,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """The comparison table of a bin-statistics table (and an NLL-sums table).

    :func:`~calib_frames.metrics_from_bin_statistics`, then (with ``uncertainty``) the
    bootstrap intervals ``<metric>_ci_low/_high`` and the ECE noise floor with its
    ``ece_beyond_noise`` and ``verdict`` columns
    (:func:`~calib_frames.estimators.uncertainty_from_bin_statistics`: the bootstrap
    with ``replicates``, the noise floor with its own 1000 draws), then the perplexity of
    ``sums`` joined on the shared keys (:func:`~calib_frames.comparison_table`).

    Parameters
    ----------
    stats
        A bin-statistics table; lazy in, lazy out.
    sums
        An NLL-sums table (:func:`~calib_frames.nll_sums`), or ``None``.
    mce_min_count
        As for :func:`~calib_frames.metrics_from_bin_statistics` (default 10).
    uncertainty
        Add the intervals and the noise floor (costs groups × bins × replicates).
    replicates, level, seed
        Of the bootstrap (default 200, 0.95, 0: the report's; the noise floor draws
        1000 times with seed + 1).

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
    >>> table = cf.comparison_from_statistics(cf.bin_statistics(preds, by="model"))
    >>> table.select("model", "verdict").rows()  # doctest: +NORMALIZE_WHITESPACE
    [('calibrated', 'within noise, p = 0.53'), ('overconfident', 'overconfident, p = 0.001'),
     ('underconfident', 'underconfident, p = 0.001')]
    """
    from calib_frames.estimators import uncertainty_from_bin_statistics

    lazy = as_lazy(stats)
    keys: list[str] = BIN_STATISTICS.keys(lazy.collect_schema())
    table = as_lazy(metrics_from_bin_statistics(lazy, mce_min_count=mce_min_count))
    if uncertainty:
        columns = uncertainty_from_bin_statistics(
            lazy, replicates=replicates, level=level, seed=seed
        )
        table = with_columns_of(table, as_lazy(columns), keys)
    if sums is not None:
        table = as_lazy(comparison_table(table, perplexity_from_nll_sums(as_lazy(sums))))
    return return_like(stats, table)


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
    replicates: int = REPLICATES,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """The comparison table of ``calib-frames report``, from prediction and token rows.

    :func:`comparison_from_statistics` of :func:`~calib_frames.bin_statistics` and
    :func:`~calib_frames.nll_sums`, plus (with ``uncertainty`` and ``losses``) the
    perplexity intervals of :func:`~calib_frames.estimators.perplexity_intervals`: the
    numbers of ``comparison.parquet`` for the same inputs and flags (``--replicates``,
    ``--level``, ``--seed``, ``--bins`` have these defaults): the same draws, the same
    verdicts, floats equal to rounding (polars adds a group's floats on several threads,
    in an order that can change from run to run, so two runs of the CLI itself may
    differ in the last bits; ``tests/comparison`` holds them to 1e-12 relative).

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
    mce_min_count, uncertainty, replicates, level, seed
        As for :func:`comparison_from_statistics`.

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
    calib_frames.leaderboard : one row per model across its tasks.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> preds = pl.read_parquet("data/synthetic_predictions.parquet")
    >>> losses = pl.read_parquet("data/synthetic_tokens.parquet")
    >>> table = cf.compare(preds, losses, tokens="tokens", bytes="bytes", by=["model", "task"])
    >>> table.height, table.filter(pl.col("model") == "calibrated")["verdict"][0]
    (12, 'within noise, p = 0.77')
    """
    keys = group_keys(by)
    eager = isinstance(predictions, pl.DataFrame)
    query = bin_statistics(
        as_lazy(predictions),
        confidence=confidence,
        correct=correct,
        by=keys,
        bins=bins,
        weight=weight,
        log_confidence=log_confidence,
    )
    # eager in: the tables are materialised first, as the CLI does
    stats = as_lazy(query)
    if eager:
        stats = stats.collect().lazy()
    table = as_lazy(
        comparison_from_statistics(
            stats,
            mce_min_count=mce_min_count,
            uncertainty=uncertainty,
            replicates=replicates,
            level=level,
            seed=seed,
        )
    )
    if losses is not None:
        names = as_lazy(losses).collect_schema().names()
        loss_keys = (
            group_keys(tokens_by) if tokens_by is not None else [k for k in keys if k in names]
        )
        summed = nll_sums(
            as_lazy(losses), nll=nll, tokens=tokens, bytes=bytes, words=words, by=loss_keys
        )
        sums = as_lazy(summed)
        if eager:
            sums = sums.collect().lazy()
        ppl = as_lazy(perplexity_from_nll_sums(sums))
        if uncertainty:
            from calib_frames.estimators import perplexity_intervals

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
        table = as_lazy(comparison_table(table, ppl))
    return return_like(predictions, table)
