"""Adaptive (equal-mass) ECE and the sensitivity of the ECE to the number of bins.

* :func:`adaptive_ece` is the ECE over equal-mass bins (:meth:`Binning.quantile`):
  every bin holds about N/M predictions of its group, so no bin is nearly empty
  where confidences are rare. It is sometimes called ACE or ECE-em (equal mass);
  calib_frames names it ``adaptive_ece``. Per group, in memory (bins from ranks).
* :func:`ece_by_bin_count` shows how the equal-width ECE moves with M: a number that
  swings from 0.02 to 0.06 between 5 and 30 bins is a statement about the binning,
  not the model. It reads the rows **once**. Only Σw·(p − y) and Σw per bin are
  needed, because

      ECE_M = Σ_b (W_b/W)·|p̄_b − ȳ_b| = Σ_b |Σ_{i∈b} w_i (p_i − y_i)| / W,

  and the union of all edges k/M (the exact doubles ``k / M``) cuts [0, 1] into cells
  that each lie inside one bin of every M (for 5 … 30 bins: 278 cells). The pass sums
  every (group, cell) with one interval lookup per row; a small second stage adds
  the cells up per (group, M, bin). No approximation is involved: it equals
  ``calibration_metrics(..., bins=Binning.uniform(M))["ece"]`` for every M, edge
  values included, and it is additive and streams like the bin statistics
  (``benchmarks/bench_estimators.py`` times it against 26 calls of
  ``calibration_metrics``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import polars as pl

from calib_frames.arguments import Integer, ListOf, check_arguments
from calib_frames.binning import CLOSED, Binning
from calib_frames.estimators._groups import require_prediction_columns
from calib_frames.metrics.calibration import calibration_metrics
from calib_frames.schema import ECE_BY_BIN_COUNT
from calib_frames.validation import (
    Frame,
    as_lazy,
    count_bad_rows,
    first_offending_row,
    group_keys,
    prediction_checks,
    raise_on_bad_rows,
    return_like,
    working,
)

__all__ = [
    "adaptive_ece",
    "ece_by_bin_count",
]

_BIN_M, _BIN, _R, _W, _N = (
    working("bin_m"),
    working("cell"),
    working("r"),
    working("w"),
    working("n"),
)


@check_arguments(bins=Integer(1))
def adaptive_ece(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: int = 15,
    weight: str | None = None,
) -> Frame:
    """Adaptive ECE: the ECE over ``bins`` equal-mass bins per group.

    ``Σ_b (W_b/W)·|p̄_b − ȳ_b|`` with bins from :meth:`Binning.quantile` (a row with r
    strictly smaller confidences among n goes to bin ``floor(r·M/n)``, so ties never
    split and a bin may stay empty). It is the ``ece`` column of
    :func:`~calib_frames.calibration_metrics` with those bins, under its own name.
    Per group, in memory (ranks need every row of the group).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per prediction.
    confidence
        Column of probabilities in [0, 1].
    correct
        Column of outcomes: boolean or 0/1.
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    bins
        Number of equal-mass bins (default 15, the common comparison convention).
    weight
        Optional column of non-negative, finite row weights.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``count`` (UInt64 rows), ``bins`` (M), ``adaptive_ece`` and
        ``populated_bins`` (bins with rows), one row per group.

    Raises
    ------
    CalibFramesError
        As :func:`~calib_frames.calibration_metrics` (bad rows, missing columns).
    ArgumentError
        ``bins`` not a positive integer.

    See Also
    --------
    ece_by_bin_count : equal-width ECE for many bin counts at once.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.estimators.sensitivity import adaptive_ece
    >>> df = pl.DataFrame({"confidence": [0.1, 0.2, 0.8, 0.9], "correct": [0, 1, 1, 1]})
    >>> adaptive_ece(df, bins=2)
    shape: (1, 4)
    ┌───────┬──────┬──────────────┬────────────────┐
    │ count ┆ bins ┆ adaptive_ece ┆ populated_bins │
    │ ---   ┆ ---  ┆ ---          ┆ ---            │
    │ u64   ┆ u32  ┆ f64          ┆ u32            │
    ╞═══════╪══════╪══════════════╪════════════════╡
    │ 4     ┆ 2    ┆ 0.25         ┆ 2              │
    └───────┴──────┴──────────────┴────────────────┘
    """
    keys = group_keys(by)
    metrics = calibration_metrics(
        as_lazy(predictions),
        confidence=confidence,
        correct=correct,
        by=keys,
        bins=Binning.quantile(bins),
        weight=weight,
    )
    result = metrics.select(
        *keys,
        pl.nth(len(keys)).cast(pl.UInt64).alias("count"),  # the row count (first column)
        pl.lit(bins, dtype=pl.UInt32).alias("bins"),
        pl.col("ece").alias("adaptive_ece"),
        pl.col("populated_bins").cast(pl.UInt32),
    )
    return return_like(predictions, result)


@check_arguments(bin_counts=ListOf(Integer(1), distinct=True), closed=CLOSED)
def ece_by_bin_count(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    bin_counts: Iterable[int] = range(5, 31),
    closed: Literal["left", "right"] = "left",
) -> Frame:
    """Equal-width ECE for every bin count in ``bin_counts``, in one pass over the rows.

    For each M: ``ECE_M = Σ_b |Σ_{i∈b} w_i (p_i − y_i)| / Σ w`` over
    :meth:`Binning.uniform(M, closed=closed) <calib_frames.Binning.uniform>` bins
    (exact edges k/M), equal to ``calibration_metrics(..., bins=M)["ece"]``. Additive
    and streaming (no per-group memory beyond its bins).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per prediction.
    confidence
        Column of probabilities in [0, 1].
    correct
        Column of outcomes: boolean or 0/1.
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    weight
        Optional column of non-negative, finite row weights.
    bin_counts
        The numbers of bins M to evaluate (default 5 … 30), each a positive integer.
    closed
        ``"left"`` (default) or ``"right"``, as :meth:`Binning.uniform`.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``bins`` (UInt32 M) and ``ece``, sorted by keys and M.
        Empty groups do not appear; an empty frame gives an empty table.

    Raises
    ------
    TableError
        Missing or non-numeric columns, keys clashing with output names.
    DataError
        Confidences outside [0, 1] or null, outcomes not boolean or 0/1, bad weights.
    ArgumentError
        An empty, repeated or non-positive bin count, or a bad ``closed``.

    See Also
    --------
    calib_frames.calibration_metrics : every metric for one binning.
    adaptive_ece : equal-mass bins instead.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.estimators.sensitivity import ece_by_bin_count
    >>> df = pl.DataFrame({"confidence": [0.15, 0.35, 0.6, 0.9], "correct": [0, 1, 1, 1]})
    >>> ece_by_bin_count(df, bin_counts=[1, 2, 4])
    shape: (3, 2)
    ┌──────┬───────┐
    │ bins ┆ ece   │
    │ ---  ┆ ---   │
    │ u32  ┆ f64   │
    ╞══════╪═══════╡
    │ 1    ┆ 0.25  │
    │ 2    ┆ 0.25  │
    │ 4    ┆ 0.325 │
    └──────┴───────┘
    """
    counts = [int(count) for count in bin_counts]
    source = as_lazy(predictions)
    keys = group_keys(by)
    require_prediction_columns(
        source.collect_schema(),
        confidence=confidence,
        correct=correct,
        weight=weight,
        keys=keys,
        reserved=tuple(ECE_BY_BIN_COUNT.columns),
    )
    checks = prediction_checks(confidence=confidence, correct=correct, weight=weight)
    p = pl.col(confidence).cast(pl.Float64)
    y = pl.col(correct).cast(pl.Float64)
    w = pl.lit(1.0) if weight is None else pl.col(weight).cast(pl.Float64)
    valid = ~pl.any_horizontal(check.bad for check in checks)
    # The union of all edges k/M cuts [0, 1] into cells that each lie inside one bin
    # for every M: one pass sums each (group, cell), the small second stage adds the
    # cells up per (group, M, bin).
    cells_of = _cells(counts, closed)
    cell = p.bin_intervals(cells_of.inner_edges, labels=False, right_closed=closed == "right")
    sums = source.group_by(*keys, pl.when(valid).then(cell).alias(_BIN)).agg(
        pl.len().alias(_N),
        pl.when(valid).then(w * (p - y)).sum().alias(_R),
        pl.when(valid).then(w).sum().alias(_W),
        *count_bad_rows(checks),
    )
    checked = raise_on_bad_rows(
        sums,
        keys=keys,
        checks=checks,
        total_rows=pl.col(_N).sum(),
        find_example=first_offending_row(source, keys),
        drop=[_N],
    )
    result = (
        checked.filter(pl.col(_BIN).is_not_null())
        .join(cells_of.bins.lazy(), on=_BIN)
        .group_by(*keys, "bins", _BIN_M)
        .agg(pl.col(_R).sum(), pl.col(_W).sum())
        .group_by(*keys, "bins")
        .agg((pl.col(_R).abs().sum() / pl.col(_W).sum()).alias("ece"))
        .select(*keys, "bins", "ece")
        .sort(*keys, "bins", nulls_last=True)
    )
    return return_like(predictions, result)


class _Cells:
    """The common refinement of uniform binnings.

    Its inner edges and, for every cell and bin count M, the bin of M that holds the
    cell (columns cell, bins, bin).
    """

    def __init__(self, inner_edges: list[float], bins: pl.DataFrame) -> None:
        self.inner_edges = inner_edges
        self.bins = bins


def _cells(counts: Sequence[int], closed: Literal["left", "right"]) -> _Cells:
    inner = sorted({k / m for m in counts for k in range(1, m)})
    edges = [0.0, *inner, 1.0]
    # a point inside each cell: its closed edge (left-closed: the lower edge)
    points = edges[:-1] if closed == "left" else edges[1:]
    cells = pl.DataFrame({_BIN: pl.Series(range(len(points)), dtype=pl.UInt32), "p": points})
    per_m = [
        cells.select(
            pl.col(_BIN),
            pl.lit(m, dtype=pl.UInt32).alias("bins"),
            Binning.uniform(m, closed=closed).assign(pl.col("p")).alias(_BIN_M),
        )
        for m in counts
    ]
    return _Cells(inner, pl.concat(per_m))
