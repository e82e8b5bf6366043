"""CORP: isotonic recalibration, its reliability curve and score decomposition, per group.

CORP (Dimitriadis, Gneiting and Jordan, "Stable reliability diagrams for probabilistic
classifiers", PNAS 118, 2021) recalibrates binary probability forecasts x by the
isotonic regression of the outcomes y on x (pool-adjacent-violators, see
:mod:`calib_frames.estimators.pav`): every forecast value is replaced by the
event frequency of its PAV block. The blocks are the reliability diagram's bins,
chosen by the data ("Consistent, Optimally binned, Reproducible, PAV").

Score decomposition
-------------------
With S̄(·) the (weighted) mean score of a vector of forecasts, x̂ the PAV-recalibrated
forecasts and ȳ the event frequency of the group::

    mean_score      S̄ = S̄(x)
    miscalibration  MCB = S̄(x) − S̄(x̂)
    discrimination  DSC = S̄(ȳ) − S̄(x̂)
    uncertainty     UNC = S̄(ȳ)
    S̄ = MCB − DSC + UNC

PAV minimises every proper scoring rule over non-decreasing recalibrations at once,
and both x itself and the constant ȳ are such recalibrations, so MCB ≥ 0 and DSC ≥ 0.
Rounding can leave either at −1e-17; they are clipped at 0 (the sum then still
matches S̄ to rounding). Scores (``score=``):

* ``"brier"``: S(x, y) = (x − y)². Within a block of weights W₁ (events) and W₀
  (non-events), S̄(x̂)·W = W₁·W₀/W summed over blocks, and UNC = ȳ(1 − ȳ).
* ``"log"``: S(x, y) = −ln x if y = 1 else −ln(1 − x) (nats; ``log1p`` for the
  latter), with 0·ln 0 = 0: a block's recalibrated score is W₁·(−ln(W₁/W)) +
  W₀·(−ln(W₀/W)), and UNC is the entropy of ȳ. A forecast of exactly 0 for an event
  (or 1 for a non-event) has an infinite score, so S̄ and MCB are infinite.

Equal to R reliabilitydiag's ``summary()`` (published values for the Niamey data are
in the tests) and to model-diagnostics' ``decompose`` with ``SquaredError`` /
``LogLoss`` (to ~1e-15).

Per group, in memory: the rows are pooled by (keys, x) in one polars pass, the PAV
runs over the pooled points of all groups at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import polars as pl

from calib_frames.arguments import Options, check_arguments
from calib_frames.estimators._groups import P, W, Y, attach, group_rows, grouped
from calib_frames.estimators.pav import pav_blocks
from calib_frames.schema import CORP_DECOMPOSITION, CORP_RELIABILITY
from calib_frames.validation import Frame

__all__ = [
    "corp_decomposition",
    "corp_reliability",
]

F64Array = npt.NDArray[np.float64]

Score = Literal["brier", "log"]


@dataclass(frozen=True)
class _Points:
    """The rows of all groups pooled by (group, confidence), in confidence order."""

    table: pl.DataFrame  # the group keys, one row per group
    n_groups: int
    group: npt.NDArray[np.int64]  # per point
    x: F64Array
    count: F64Array
    weight: F64Array
    events: F64Array  # Σw over rows with y = 1
    brier: F64Array  # Σw·(x − y)²
    log: F64Array  # Σw·(−ln x or −ln(1 − x))


def _points(frame: pl.DataFrame, *, weight: str | None, keys: list[str]) -> _Points:
    """Sort the (checked) collected rows by (keys, x) and pool ties (numpy)."""
    group, table, n_groups, frame = grouped(frame, keys, sort_by=P)
    x = frame[P].to_numpy().astype(np.float64)
    y = frame[Y].to_numpy().astype(np.float64)
    w = np.ones_like(x) if weight is None else frame[W].to_numpy().astype(np.float64)
    n = x.size
    if n == 0:
        empty = np.zeros(0)
        return _Points(table, n_groups, group, empty, empty, empty, empty, empty, empty)
    event = y == 1.0
    residual = np.where(event, 1.0 - x, x)
    with np.errstate(divide="ignore"):
        log_loss = np.where(event, -np.log(x), -np.log1p(-x))
    starts = np.flatnonzero(np.r_[True, (group[1:] != group[:-1]) | (x[1:] != x[:-1])])

    def pooled(values: F64Array) -> F64Array:
        return np.asarray(np.add.reduceat(values, starts), dtype=np.float64)

    return _Points(
        table=table,
        n_groups=n_groups,
        group=group[starts],
        x=x[starts],
        count=pooled(np.ones(n)),
        weight=pooled(w),
        events=pooled(np.where(event, w, 0.0)),
        brier=pooled(w * residual * residual),
        log=pooled(np.where(w > 0, w * log_loss, 0.0)),
    )


def corp_reliability(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
) -> Frame:
    """The CORP reliability curve: PAV blocks and their recalibrated probabilities.

    Per group, in memory. The curve is the step function that is ``recalibrated`` on
    ``[confidence_lower, confidence_upper]`` of each block (reliabilitydiag draws it
    with linear interpolation between blocks).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per forecast.
    confidence
        Column of forecast probabilities in [0, 1].
    correct
        Column of outcomes: boolean or 0/1.
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    weight
        Optional column of positive, finite row weights.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``block`` (UInt32, 0-based in confidence order),
        ``confidence_lower``/``confidence_upper`` (smallest/largest forecast in the
        block), ``count`` (UInt64), ``weight`` (Σw) and ``recalibrated`` (the block's
        weighted event frequency), sorted by keys and block.

    Raises
    ------
    TableError
        Missing or non-numeric columns, keys clashing with output names.
    DataError
        Confidences outside [0, 1], outcomes not boolean or 0/1, weights not positive.

    See Also
    --------
    corp_decomposition : the score decomposition from the same fit.
    calib_frames.estimators.pav.isotonic_blocks : the general PAV.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.estimators.corp import corp_reliability
    >>> df = pl.DataFrame({"confidence": [0.1, 0.3, 0.4, 0.8], "correct": [0, 1, 0, 1]})
    >>> corp_reliability(df)
    shape: (3, 6)
    ┌───────┬──────────────────┬──────────────────┬───────┬────────┬──────────────┐
    │ block ┆ confidence_lower ┆ confidence_upper ┆ count ┆ weight ┆ recalibrated │
    │ ---   ┆ ---              ┆ ---              ┆ ---   ┆ ---    ┆ ---          │
    │ u32   ┆ f64              ┆ f64              ┆ u64   ┆ f64    ┆ f64          │
    ╞═══════╪══════════════════╪══════════════════╪═══════╪════════╪══════════════╡
    │ 0     ┆ 0.1              ┆ 0.1              ┆ 1     ┆ 1.0    ┆ 0.0          │
    │ 1     ┆ 0.3              ┆ 0.4              ┆ 2     ┆ 2.0    ┆ 0.5          │
    │ 2     ┆ 0.8              ┆ 0.8              ┆ 1     ┆ 1.0    ┆ 1.0          │
    └───────┴──────────────────┴──────────────────┴───────┴────────┴──────────────┘
    """
    prepared = group_rows(
        predictions, confidence=confidence, correct=correct, by=by, weight=weight,
        columns=CORP_RELIABILITY.columns,
    )  # fmt: skip
    keys, schema = prepared.keys, prepared.schema

    def fit(frame: pl.DataFrame) -> pl.DataFrame:
        points = _points(frame, weight=weight, keys=keys)
        if points.x.size == 0:
            return pl.DataFrame(schema=schema)
        block = pav_blocks(points.group, points.weight, points.events, increasing=True)
        first = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
        last = np.r_[first[1:] - 1, block.size - 1]
        block_group = points.group[first]
        weight_ = np.add.reduceat(points.weight, first)
        group_start = np.flatnonzero(np.r_[True, block_group[1:] != block_group[:-1]])
        within = np.arange(first.size) - np.repeat(
            group_start, np.diff(np.r_[group_start, first.size])
        )
        keys_table = points.table[block_group.tolist()] if keys else points.table
        return attach(
            keys_table,
            [
                pl.Series("block", within, dtype=pl.UInt32),
                pl.Series("confidence_lower", points.x[first], dtype=pl.Float64),
                pl.Series("confidence_upper", points.x[last], dtype=pl.Float64),
                pl.Series("count", np.add.reduceat(points.count, first), dtype=pl.UInt64),
                pl.Series("weight", weight_, dtype=pl.Float64),
                pl.Series(
                    "recalibrated",
                    np.add.reduceat(points.events, first) / weight_,
                    dtype=pl.Float64,
                ),
            ],
        )

    return prepared.result(predictions, fit)


@check_arguments(score=Options.of(Score))
def corp_decomposition(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    score: Score = "brier",
) -> Frame:
    """CORP score decomposition: mean score = miscalibration − discrimination + uncertainty.

    Per group, in memory. Formulas in the module docstring; the recalibration is the
    PAV fit of :func:`corp_reliability`.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per forecast.
    confidence
        Column of forecast probabilities in [0, 1].
    correct
        Column of outcomes: boolean or 0/1.
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    weight
        Optional column of positive, finite row weights (weighted means throughout).
    score
        ``"brier"`` (squared error, as reliabilitydiag's default) or ``"log"``
        (logarithmic score in nats).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``count`` (UInt64), ``weight`` (Σw), ``mean_score``,
        ``miscalibration``, ``discrimination`` and ``uncertainty``, one row per group.
        An empty frame without keys gives one row with count 0 and null scores.

    Raises
    ------
    TableError
        Missing or non-numeric columns, keys clashing with output names.
    DataError
        Confidences outside [0, 1], outcomes not boolean or 0/1, weights not positive.
    ArgumentError
        ``score`` not ``"brier"`` or ``"log"``.

    See Also
    --------
    corp_reliability : the blocks behind the decomposition.
    calib_frames.calibration_metrics : the binned Brier decomposition.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.estimators.corp import corp_decomposition
    >>> df = pl.DataFrame({"confidence": [0.1, 0.3, 0.4, 0.8], "correct": [0, 1, 0, 1]})
    >>> corp_decomposition(df).select("mean_score", "miscalibration", "discrimination")
    shape: (1, 3)
    ┌────────────┬────────────────┬────────────────┐
    │ mean_score ┆ miscalibration ┆ discrimination │
    │ ---        ┆ ---            ┆ ---            │
    │ f64        ┆ f64            ┆ f64            │
    ╞════════════╪════════════════╪════════════════╡
    │ 0.175      ┆ 0.05           ┆ 0.125          │
    └────────────┴────────────────┴────────────────┘
    """
    prepared = group_rows(
        predictions, confidence=confidence, correct=correct, by=by, weight=weight,
        columns=CORP_DECOMPOSITION.columns,
    )  # fmt: skip
    keys = prepared.keys

    def fit(frame: pl.DataFrame) -> pl.DataFrame:
        points = _points(frame, weight=weight, keys=keys)
        if points.x.size == 0:
            return prepared.no_rows(count=0, weight=0.0)
        group, table, n_groups = points.group, points.table, points.n_groups
        weight_, events = points.weight, points.events
        block = pav_blocks(group, weight_, events, increasing=True)
        block_group = np.zeros(block[-1] + 1, dtype=np.int64)
        block_group[block] = group
        n_blocks = block_group.size
        block_w = _sum_by(block, weight_, n_blocks)
        block_w1 = _sum_by(block, events, n_blocks)
        recalibrated = _sum_by(block_group, _entropy_sum(block_w1, block_w, score), n_groups)
        total_w = _sum_by(group, weight_, n_groups)
        total_w1 = _sum_by(group, events, n_groups)
        summed = _sum_by(group, points.brier if score == "brier" else points.log, n_groups)
        counts = _sum_by(group, points.count, n_groups)
        mean_score = summed / total_w
        uncertainty = _entropy_sum(total_w1, total_w, score) / total_w
        recal_mean = recalibrated / total_w
        with np.errstate(invalid="ignore"):
            miscalibration = np.maximum(mean_score - recal_mean, 0.0)
        discrimination = np.maximum(uncertainty - recal_mean, 0.0)
        return attach(
            table,
            [
                pl.Series("count", counts.astype(np.uint64), dtype=pl.UInt64),
                pl.Series("weight", total_w, dtype=pl.Float64),
                pl.Series("mean_score", mean_score, dtype=pl.Float64),
                pl.Series("miscalibration", miscalibration, dtype=pl.Float64),
                pl.Series("discrimination", discrimination, dtype=pl.Float64),
                pl.Series("uncertainty", uncertainty, dtype=pl.Float64),
            ],
        )

    return prepared.result(predictions, fit)


def _sum_by(index: npt.NDArray[np.int64], values: F64Array, size: int) -> F64Array:
    """Σ values per index 0 … size−1 (in input order, as np.bincount)."""
    return np.asarray(np.bincount(index, weights=values, minlength=size), dtype=np.float64)


def _entropy_sum(w1: F64Array, w: F64Array, score: Score) -> F64Array:
    """W·S̄(w1/W) for the constant forecast w1/W of a set with W₁ events out of W."""
    w0 = np.maximum(w - w1, 0.0)
    if score == "brier":
        result: F64Array = w1 * w0 / w
        return result
    with np.errstate(divide="ignore", invalid="ignore"):
        term1 = np.where(w1 > 0, -w1 * np.log(w1 / w), 0.0)
        term0 = np.where(w0 > 0, -w0 * np.log(w0 / w), 0.0)
    return np.asarray(term1 + term0, dtype=np.float64)
