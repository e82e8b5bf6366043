r"""Selective prediction: accuracy and risk as the least confident predictions are rejected.

A selective classifier answers only when its confidence reaches a threshold and abstains
otherwise. Sorting a group's predictions by confidence, most confident first, and
accepting the top share c of them (the *coverage*) traces

* the **accuracy–coverage curve** acc(c) = A(c)/(c·N), A(c) the weight of the correct
  accepted predictions, N the group's weight, and
* the **risk–coverage curve** risk(c) = 1 − acc(c) = E(c)/(c·N), E(c) the weight of the
  wrong ones (the selective risk under 0/1 loss, Geifman and El-Yaniv 2017).

Ties and fractional coverage
----------------------------
Predictions of equal confidence cannot be ordered by it: the rows of a tie group are
accepted or rejected together by any threshold. With ``ties="average"`` (default) a
coverage that ends inside a tie group accepts a share of it at random, so that its
expected errors are the group's error rate times the accepted weight: E(c) is linear in
c within a tie group, and every result is the expectation over a uniformly random order
of the tied rows — it does not depend on the order of the rows. ``"pessimistic"`` puts
the wrong predictions of a tie group first (the worst order, an upper bound on the risk)
and ``"optimistic"`` the correct ones (a lower bound). A coverage between two untied rows
is the same interpolation: the boundary row is accepted with a probability, and risk is
the ratio of expected errors to expected accepted weight (Geifman and El-Yaniv's
selective risk of a stochastic selection function).

Summary numbers (per group)
---------------------------
* ``aurc``: the area under the risk–coverage curve as the literature computes it (Geifman,
  Uziel and El-Yaniv, "Bias-Reduced Uncertainty Estimation for Deep Neural Classifiers",
  ICLR 2019): the mean of the selective risk over the N nested prefixes,
  AURC = (1/N) Σ_{k=1}^{N} E_k/k with E_k the (expected) errors among the k most
  confident rows. Within a tie group of weight W and error weight F that starts after
  weight K with errors E_K, the terms sum in closed form to
  F + (E_K − K·F/W)·(ψ(K + W + 1) − ψ(K + 1)) (ψ the digamma function), which also
  defines the sum for non-integer weights: a row of weight 2 counts as two tied rows.
  Weights are frequency weights — AURC is not invariant to scaling them, as the mean over
  k is not invariant to repeating every row.
* ``aurc_oracle``: the AURC of the same outcomes ranked perfectly (every correct
  prediction before every wrong one), (1/N)·(F − (N − F)·(ψ(N + 1) − ψ(N − F + 1))) for
  error weight F; ``e_aurc`` = ``aurc − aurc_oracle`` ≥ 0, the excess AURC (clipped at 0
  against rounding).
* ``accuracy_at_coverage``: acc(c) at ``coverage=`` c (interpolated as above).
* ``coverage_at_accuracy``: the largest coverage c whose acc(c) ≥ ``target_accuracy``
  (0.0 when no coverage reaches it).

HELM's ``selective_cov_acc_area`` is 1 − AURC computed on one order of the ties, and its
``selective_acc@10`` the accuracy of the top ``int(0.1·N) + 1`` rows
(:func:`calib_frames.recalibrate.helm_calibration` reproduces both).

Intervals (:func:`selective_intervals`) come from the row-level Poisson bootstrap of
:mod:`calib_frames.estimators.bootstrap`: every row gets a Poisson(1) multiplicity per
replicate (:func:`~calib_frames.estimators.bootstrap.poisson_weights`), the metrics are
recomputed with the weights multiplied by it, and the percentile interval is taken.

Per group, in memory: the rows of all groups are collected once, sorted by (group,
confidence descending) once, and every group (and replicate) is computed at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import polars as pl

from calib_frames.arguments import (
    RESAMPLING,
    Integer,
    Number,
    Options,
    check_arguments,
)
from calib_frames.binning import Binning
from calib_frames.estimators._groups import P, W, Y, attach, group_rows
from calib_frames.estimators.bootstrap import poisson_weights
from calib_frames.exceptions import TableError
from calib_frames.schema import BIN_STATISTICS, SELECTIVE_CURVE, SELECTIVE_METRICS
from calib_frames.validation import (
    Frame,
    as_lazy,
    return_like,
    working,
)

__all__ = [
    "SELECTIVE_CI_METRICS",
    "SUMMARY_POINTS",
    "Ties",
    "selective_binning",
    "selective_curve",
    "selective_curve_from_bin_statistics",
    "selective_intervals",
    "selective_metrics",
]

F64Array = npt.NDArray[np.float64]
I64Array = npt.NDArray[np.int64]
Ties = Literal["average", "pessimistic", "optimistic"]
_COVERAGE = Number(greater_than=0, at_most=1)
_ACCURACY = Number(at_least=0, at_most=1)

SELECTIVE_CI_METRICS = ("aurc", "e_aurc", "accuracy_at_coverage", "coverage_at_accuracy")
"""Metrics of :func:`selective_metrics` that :func:`selective_intervals` gives intervals."""

_ROW = working("row")
_ORDER, _INDEX = working("order"), working("index")
_CELLS = 4_000_000  # rows × replicates evaluated at once by the bootstrap


@check_arguments(coverage=_COVERAGE, target_accuracy=_ACCURACY, ties=Options.of(Ties))
def selective_metrics(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    coverage: float = 0.8,
    target_accuracy: float = 0.9,
    ties: Ties = "average",
) -> Frame:
    """AURC, its excess over the oracle, accuracy at a coverage, coverage at an accuracy.

    Per group, in memory. Definitions, tie policy and weights as in the module
    docstring: AURC = (1/N) Σₖ Eₖ/k over the prefixes of the rows sorted by confidence
    (most confident first), E-AURC = AURC − AURC of the perfect ranking,
    ``accuracy_at_coverage`` = A(c)/(c·N) at c = ``coverage``, ``coverage_at_accuracy`` =
    the largest c with A(c)/(c·N) ≥ ``target_accuracy``.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per prediction.
    confidence
        Column of confidences (any order-preserving score in [0, 1]).
    correct
        Column of outcomes: boolean or 0/1.
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    weight
        Optional column of positive, finite frequency weights (a row of weight 2 counts
        as two tied rows).
    coverage
        The coverage in (0, 1] of ``accuracy_at_coverage``.
    target_accuracy
        The accuracy in [0, 1] of ``coverage_at_accuracy``.
    ties
        ``"average"`` (expectation over a random order of tied rows), ``"pessimistic"``
        (wrong first) or ``"optimistic"`` (correct first).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``count`` (UInt64 rows), ``weight`` (N), ``accuracy`` (at full
        coverage), ``aurc``, ``aurc_oracle``, ``e_aurc``, ``accuracy_at_coverage`` and
        ``coverage_at_accuracy``, one row per group sorted by the keys. An empty frame
        without keys gives one row with count 0 and null metrics.

    Raises
    ------
    TableError
        Missing or non-numeric columns, keys clashing with output names.
    DataError
        Confidences outside [0, 1] (or null/NaN), outcomes not boolean or 0/1, weights
        not positive and finite.
    ArgumentError
        ``coverage`` not in (0, 1], ``target_accuracy`` not in [0, 1], an unknown
        ``ties``.

    See Also
    --------
    selective_curve : the accuracy–coverage and risk–coverage curves.
    selective_intervals : bootstrap intervals of these metrics.
    calib_frames.recalibrate.helm_calibration : HELM's selective figures.

    Examples
    --------
    Five answers, the third most confident wrong: E_k = 0, 0, 1, 1, 1, so
    AURC = (0 + 0 + 1/3 + 1/4 + 1/5)/5 = 0.1567; the oracle puts the error last,
    (1/5)/5 = 0.04.

    >>> import polars as pl
    >>> from calib_frames.estimators.selective import selective_metrics
    >>> df = pl.DataFrame(
    ...     {"confidence": [0.9, 0.8, 0.7, 0.6, 0.5], "correct": [1, 1, 0, 1, 1]}
    ... )
    >>> selective_metrics(df, coverage=0.4, target_accuracy=0.75).select(
    ...     pl.col("aurc", "aurc_oracle", "e_aurc").round(4),
    ...     "accuracy_at_coverage",
    ...     "coverage_at_accuracy",
    ... )
    shape: (1, 5)
    ┌────────┬─────────────┬────────┬──────────────────────┬──────────────────────┐
    │ aurc   ┆ aurc_oracle ┆ e_aurc ┆ accuracy_at_coverage ┆ coverage_at_accuracy │
    │ ---    ┆ ---         ┆ ---    ┆ ---                  ┆ ---                  │
    │ f64    ┆ f64         ┆ f64    ┆ f64                  ┆ f64                  │
    ╞════════╪═════════════╪════════╪══════════════════════╪══════════════════════╡
    │ 0.1567 ┆ 0.04        ┆ 0.1167 ┆ 1.0                  ┆ 1.0                  │
    └────────┴─────────────┴────────┴──────────────────────┴──────────────────────┘
    """
    prepared = group_rows(
        predictions, confidence=confidence, correct=correct, by=by, weight=weight,
        columns=SELECTIVE_METRICS.columns,
    )  # fmt: skip
    keys, schema = prepared.keys, prepared.schema

    def compute(frame: pl.DataFrame) -> pl.DataFrame:
        ranked = _ranked(frame, keys, weight=weight, ties=ties)
        if ranked.p.size == 0:
            return prepared.no_rows(count=0, weight=0.0)
        seg = _segments(ranked, ranked.w[:, None])
        values: dict[str, F64Array] = _metrics(
            seg, coverage=coverage, target_accuracy=target_accuracy
        )
        accuracy = 1.0 - seg.total_errors[:, 0] / seg.total[:, 0]
        return attach(
            ranked.table,
            [
                pl.Series("count", np.bincount(ranked.group, minlength=ranked.n_groups)).cast(
                    pl.UInt64
                ),
                pl.Series("weight", seg.total[:, 0], dtype=pl.Float64),
                pl.Series("accuracy", accuracy, dtype=pl.Float64),
                *(pl.Series(name, value[:, 0], dtype=pl.Float64) for name, value in values.items()),
            ],
        ).select(list(schema))

    return prepared.result(predictions, compute)


@check_arguments(ties=Options.of(Ties), points=Integer(2) | None)
def selective_curve(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    ties: Ties = "average",
    points: int | None = None,
) -> Frame:
    """The accuracy–coverage and risk–coverage curves, per group.

    Per group, in memory. With ``points=None``, one point per distinct confidence (per
    tie group; two with ``ties="pessimistic"``/``"optimistic"`` where a tie group holds
    both outcomes), most confident first: ``threshold`` is that confidence,
    ``coverage`` the share of the group's weight at or above it, ``accuracy`` A/(c·N)
    of the accepted rows and ``risk`` = 1 − accuracy. With ``points=M``, the curves at
    the M coverages k/M (k = 1 … M), interpolated within the row (tie group) where the
    coverage ends, as in the module docstring; ``threshold`` is then that row's
    confidence. Use ``points`` for charts of large groups.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per prediction.
    confidence, correct, by, weight, ties
        As for :func:`selective_metrics`.
    points
        ``None`` (every tie group) or the number of equally spaced coverages (≥ 2).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``threshold``, ``coverage``, ``accuracy`` and ``risk``, sorted
        by keys and increasing coverage; the last point of a group has coverage 1.0.

    Raises
    ------
    TableError, DataError
        As :func:`selective_metrics`.
    ArgumentError
        An unknown ``ties``, ``points`` not None nor an integer ≥ 2.

    See Also
    --------
    selective_metrics : the area under the risk–coverage curve and its excess.
    calib_frames.plot.risk_coverage_chart : the chart of this table.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.estimators.selective import selective_curve
    >>> df = pl.DataFrame({"confidence": [0.9, 0.9, 0.6, 0.3], "correct": [1, 0, 1, 0]})
    >>> selective_curve(df)
    shape: (3, 4)
    ┌───────────┬──────────┬──────────┬──────────┐
    │ threshold ┆ coverage ┆ accuracy ┆ risk     │
    │ ---       ┆ ---      ┆ ---      ┆ ---      │
    │ f64       ┆ f64      ┆ f64      ┆ f64      │
    ╞═══════════╪══════════╪══════════╪══════════╡
    │ 0.9       ┆ 0.5      ┆ 0.5      ┆ 0.5      │
    │ 0.6       ┆ 0.75     ┆ 0.666667 ┆ 0.333333 │
    │ 0.3       ┆ 1.0      ┆ 0.5      ┆ 0.5      │
    └───────────┴──────────┴──────────┴──────────┘
    """
    prepared = group_rows(
        predictions, confidence=confidence, correct=correct, by=by, weight=weight,
        columns=SELECTIVE_CURVE.columns,
    )  # fmt: skip
    keys, schema = prepared.keys, prepared.schema

    def compute(frame: pl.DataFrame) -> pl.DataFrame:
        ranked = _ranked(frame, keys, weight=weight, ties=ties)
        if ranked.p.size == 0:
            return pl.DataFrame(schema=schema)
        seg = _segments(ranked, ranked.w[:, None])
        if points is None:
            keep = seg.weight[:, 0] > 0
            owner = seg.group[keep]
            covered = (seg.before + seg.weight)[keep, 0]
            errors = (seg.errors_before + seg.errors)[keep, 0]
            threshold = seg.p[keep]
            coverage_ = covered / seg.total[owner, 0]
            risk = errors / covered
        else:
            grid = np.arange(1, points + 1, dtype=np.float64) / points
            target = seg.total[:, :1] * grid[None, :]  # (G, M)
            at = _locate(seg, target)
            owner = np.repeat(np.arange(seg.n_groups), points)
            threshold = seg.p[at].reshape(-1)
            coverage_ = np.tile(grid, seg.n_groups)
            risk = (_errors_at(seg, at, target) / target).reshape(-1)
        table = ranked.table.select(pl.all().gather(pl.Series(owner))) if keys else ranked.table
        return attach(
            table,
            [
                pl.Series("threshold", threshold, dtype=pl.Float64),
                pl.Series("coverage", coverage_, dtype=pl.Float64),
                pl.Series("accuracy", 1.0 - risk, dtype=pl.Float64),
                pl.Series("risk", risk, dtype=pl.Float64),
            ],
        )

    return prepared.result(predictions, compute)


@check_arguments(
    coverage=_COVERAGE,
    target_accuracy=_ACCURACY,
    ties=Options.of(Ties),
    **RESAMPLING,
)
def selective_intervals(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    coverage: float = 0.8,
    target_accuracy: float = 0.9,
    ties: Ties = "average",
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """Percentile bootstrap intervals of the selective-prediction metrics, per group.

    Estimates, per group, the ``level`` interval of ``aurc``, ``e_aurc``,
    ``accuracy_at_coverage`` and ``coverage_at_accuracy`` (:data:`SELECTIVE_CI_METRICS`)
    under the row-level Poisson bootstrap: in each replicate every row's weight is
    multiplied by a Poisson(1) multiplicity drawn from a seeded hash of its position in
    the input and the replicate
    (:func:`~calib_frames.estimators.bootstrap.poisson_weights`), and the metrics of
    :func:`selective_metrics` are recomputed (AURC takes weights as multiplicities, so a
    replicate is the AURC of the resampled rows). A replicate that leaves a group
    without rows is left out of that group's percentiles. Costs rows × replicates.

    Parameters
    ----------
    predictions, confidence, correct, by, weight, coverage, target_accuracy, ties
        As for :func:`selective_metrics`.
    replicates
        Number of bootstrap replicates (≥ 1).
    level
        Confidence level in (0, 1).
    seed
        Seed (≥ 0); the same seed and input give the same intervals.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``<metric>_ci_low`` and ``<metric>_ci_high`` (Float64) for each
        metric of :data:`SELECTIVE_CI_METRICS`, one row per group sorted by the keys:
        join it to :func:`selective_metrics` on the keys.

    Raises
    ------
    TableError, DataError
        As :func:`selective_metrics`.
    ArgumentError
        As :func:`selective_metrics`; bad ``replicates``, ``level`` or ``seed``.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.estimators.selective import selective_intervals
    >>> df = pl.DataFrame(
    ...     {"confidence": [i / 40 for i in range(40)], "correct": [i % 3 > 0 for i in range(40)]}
    ... )
    >>> ci = selective_intervals(df, replicates=200)
    >>> low, high = ci.select("aurc_ci_low", "aurc_ci_high").row(0)
    >>> bool(0.0 < low < high < 1.0)
    True
    """
    names: list[str] = [
        f"{name}_ci_{side}" for name in SELECTIVE_CI_METRICS for side in ("low", "high")
    ]
    prepared = group_rows(
        predictions, confidence=confidence, correct=correct, by=by, weight=weight,
        columns=dict.fromkeys(names, pl.Float64()), position=_ROW,
    )  # fmt: skip
    keys = prepared.keys
    alpha = (1.0 - level) / 2.0

    def compute(frame: pl.DataFrame) -> pl.DataFrame:
        ranked = _ranked(frame, keys, weight=weight, ties=ties)
        if ranked.p.size == 0:
            return prepared.no_rows()
        chunk = max(1, min(replicates, _CELLS // max(ranked.p.size, 1)))
        replicated: dict[str, list[F64Array]] = {name: [] for name in SELECTIVE_CI_METRICS}
        row = pl.DataFrame({_ROW: ranked.row})
        for start in range(0, replicates, chunk):
            draws = range(start, min(start + chunk, replicates))
            multiplicity = row.select(
                poisson_weights(pl.col(_ROW), pl.lit(b, pl.UInt32), seed).alias(str(b))
                for b in draws
            ).to_numpy()
            seg = _segments(ranked, ranked.w[:, None] * multiplicity)
            values = _metrics(seg, coverage=coverage, target_accuracy=target_accuracy)
            for name in SELECTIVE_CI_METRICS:
                replicated[name].append(values[name])
        columns: list[pl.Series] = []
        for name in SELECTIVE_CI_METRICS:
            stacked = np.concatenate(replicated[name], axis=1)
            valid: npt.NDArray[np.bool_] = np.asarray(np.isfinite(stacked).any(axis=1))
            with np.errstate(invalid="ignore"):
                low, high = np.nanquantile(
                    np.where(valid[:, None], stacked, 0.0), [alpha, 1 - alpha], axis=1
                )
            for side, bound in (("low", low), ("high", high)):
                columns.append(
                    pl.Series(f"{name}_ci_{side}", np.where(valid, bound, np.nan)).fill_nan(None)
                )
        return attach(ranked.table, columns)

    return prepared.result(predictions, compute)


@dataclass(frozen=True)
class _Ranked:
    """The rows of all groups, by group then confidence descending (ties: the policy)."""

    table: pl.DataFrame  # group keys, one row per group
    n_groups: int
    group: I64Array
    p: F64Array
    y: F64Array
    w: F64Array
    row: npt.NDArray[np.uint32]  # input position (the bootstrap's hash; empty without)
    starts: I64Array  # the first row of every segment (tie group)


def _ranked(frame: pl.DataFrame, keys: list[str], *, weight: str | None, ties: str) -> _Ranked:
    """Gather the rows by group and sort each group by confidence, descending.

    The order is one UInt64 per row, the bits of p (non-negative floats sort as their
    bits) shifted left by one with the outcome (``"pessimistic"``: the error) in the
    lowest bit, so that a tie group holds its correct (wrong) rows first. Each group
    sorts its keys alone (polars, in parallel and in cache); without weights or row
    positions the sorted keys are the rows themselves (p and y decode from them),
    otherwise the sort carries the row positions.
    """
    p = frame[P].to_numpy() + 0.0  # + 0.0: -0.0 sorts as 0.0
    y = frame[Y].to_numpy()
    flag = (1.0 - y) if ties == "pessimistic" else y
    order = (p.view(np.uint64) << np.uint64(1)) | flag.astype(np.uint64)
    carry = weight is not None or _ROW in frame.columns
    sort = (
        pl.col(_INDEX).sort_by(_ORDER, descending=True)
        if carry
        else pl.col(_ORDER).sort(descending=True)
    )
    columns = frame.select(*keys, pl.Series(_ORDER, order))
    if carry:
        columns = columns.with_row_index(_INDEX)
    if keys:
        gathered = columns.group_by(keys).agg(sort).sort(keys, nulls_last=True)
        lists = gathered[_INDEX if carry else _ORDER]
        sizes = lists.list.len().to_numpy().astype(np.int64)
        values = lists.explode().to_numpy()
        table, n_groups = gathered.select(keys), gathered.height
    else:
        values = columns.select(sort).to_series().to_numpy()
        sizes, table, n_groups = np.array([values.size]), pl.DataFrame(), 1
    group = np.repeat(np.arange(n_groups, dtype=np.int64), sizes)
    if carry:
        p, y = p[values], y[values]
        w = np.ones_like(p) if weight is None else frame[W].to_numpy()[values]
        row = frame[_ROW].to_numpy()[values] if _ROW in frame.columns else np.zeros(0, np.uint32)
    else:
        bit = values & np.uint64(1)
        p = (values >> np.uint64(1)).view(np.float64)
        y = bit.astype(np.float64)
        if ties == "pessimistic":
            y = 1.0 - y
        w, row = np.ones_like(p), np.zeros(0, np.uint32)
    new = np.ones(p.size, dtype=bool)
    if p.size:
        new[1:] = (group[1:] != group[:-1]) | (p[1:] != p[:-1])
        if ties != "average":
            new[1:] |= y[1:] != y[:-1]
    return _Ranked(table, n_groups, group, p, y, w, row, np.flatnonzero(new))


@dataclass(frozen=True)
class _Segments:
    """Tie groups (segments) of the ranked rows, each with (S, B) sums for B weightings."""

    n_groups: int
    group: I64Array  # (S,) the group of each segment
    p: F64Array  # (S,) its confidence
    first: I64Array  # (G,) first segment of each group
    weight: F64Array  # (S, B) W
    errors: F64Array  # (S, B) F
    ends: F64Array  # (S, B) the running weight of all segments so far (groups in order)
    before: F64Array  # (S, B) K: the group's weight before the segment
    errors_before: F64Array  # (S, B) E_K
    total: F64Array  # (G, B) N
    total_errors: F64Array  # (G, B)


def _segments(ranked: _Ranked, w: F64Array) -> _Segments:
    """Sum the rows' weights ``w`` (n, B) and error weights per segment and group."""
    starts = ranked.starts
    errors = w * (1.0 - ranked.y)[:, None]
    group, p = ranked.group, ranked.p
    if starts.size < ranked.y.size:  # ties: sum each tie group (else a row is a segment)
        w, errors = np.add.reduceat(w, starts, axis=0), np.add.reduceat(errors, starts, axis=0)
        group, p = group[starts], p[starts]
    first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    ends, before, total = _running(w, first, group)
    _, errors_before, total_errors = _running(errors, first, group)
    return _Segments(
        ranked.n_groups,
        group,
        p,
        first,
        w,
        errors,
        ends,
        before,
        errors_before,
        total,
        total_errors,
    )


def _running(values: F64Array, first: I64Array, group: I64Array) -> tuple[F64Array, ...]:
    """Running sums of the segments' ``values`` (S, B), per column.

    Returns the running sum over all segments (groups in order), the sum of the earlier
    segments of the same group (clipped at 0 against rounding) and the group totals.
    """
    ends = np.cumsum(values, axis=0)
    earlier = ends[first] - values[first]  # (G, B): the groups before
    total = np.add.reduceat(values, first, axis=0)
    before = ends - values
    before -= earlier[group]
    np.maximum(before, 0.0, out=before)
    return ends, before, total


def _digamma_step(x: F64Array, step: F64Array) -> F64Array:
    """ψ(x + step) − ψ(x) for x ≥ 1, step ≥ 0, without the cancellation of large x.

    For x ≥ 20 from the asymptotic series ψ(x) = ln x − 1/(2x) − Σ B₂ₖ/(2k·x²ᵏ) (terms to
    x⁻¹², the next below 1e-19), differenced term by term (ln(b/a) as log1p); else
    scipy's digamma (below 20 the difference does not cancel much). Steps of 0 and 1,
    most steps of untied rows and of bootstrap multiplicities, are exact: 0 and 1/x.
    """
    x, step = np.broadcast_arrays(x, step)
    unit = step == 1.0
    if unit.all():
        unit_steps: F64Array = 1.0 / x
        return unit_steps
    out = np.zeros(x.shape)
    out[unit] = 1.0 / x[unit]
    other = np.flatnonzero(~unit & (step != 0.0))
    out.flat[other] = _digamma_difference(x.flat[other], step.flat[other])
    return out


def _digamma_difference(x: F64Array, step: F64Array) -> F64Array:
    """ψ(x + step) − ψ(x) of :func:`_digamma_step` for 1-d arrays, by the series or scipy."""
    from scipy.special import digamma  # 0.2 s to import: not on every report's path

    large = x >= 20.0
    out = np.empty(x.shape)
    # reciprocals first: a weight of 1e300 overflows a·b but not (step/a)/b
    ra, rb = 1.0 / x[large], 1.0 / (x[large] + step[large])
    ratio = step[large] * ra
    series = np.log1p(ratio) + 0.5 * ratio * rb
    series += _tail(ra * ra) - _tail(rb * rb)
    out[large] = series
    small = ~large
    out[small] = digamma(x[small] + step[small]) - digamma(x[small])
    return out


def _tail(r2: F64Array) -> F64Array:
    """Σ B₂ₖ/(2k)·x⁻²ᵏ for k = 1 … 6 at r2 = x⁻² (Horner)."""
    inner = 1 / 252 + r2 * (-1 / 240 + r2 * (1 / 132 - r2 * 691 / 32760))
    result: F64Array = r2 * (1 / 12 + r2 * (-1 / 120 + r2 * inner))
    return result


def _locate(seg: _Segments, target: F64Array) -> I64Array:
    """The segment in which the cumulative weight ``target`` (G, M) of each group ends.

    One binary search per column over the running weight of all segments (non-decreasing
    across groups, each group offset by the weight of the groups before it); the weights
    have B = M columns, or one shared by the M targets.
    """
    ends = seg.ends
    offset = ends[seg.first] - seg.weight[seg.first]  # (G, B): the groups before
    last = np.r_[seg.first[1:], seg.group.size] - 1
    at = np.empty(target.shape, dtype=np.int64)
    for m in range(target.shape[1]):
        b = m if ends.shape[1] > 1 else 0
        at[:, m] = np.searchsorted(ends[:, b], offset[:, b] + target[:, m], side="left")
    result: I64Array = np.clip(at, seg.first[:, None], last[:, None])
    return result


def _column(values: F64Array, at: I64Array) -> F64Array:
    """values[at[g, m], m] for (S, B) values and (G, M) indices (B = M, or B = 1)."""
    result: F64Array = (
        values[at, 0] if values.shape[1] == 1 else np.take_along_axis(values, at, axis=0)
    )
    return result


def _errors_at(seg: _Segments, at: I64Array, target: F64Array) -> F64Array:
    """E(T): the expected errors when the cumulative weight ``target`` is accepted."""
    weight, errors = _column(seg.weight, at), _column(seg.errors, at)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(weight > 0, errors / weight, 0.0)
    result: F64Array = _column(seg.errors_before, at) + (target - _column(seg.before, at)) * rate
    return result


def _metrics(seg: _Segments, *, coverage: float, target_accuracy: float) -> dict[str, F64Array]:
    """aurc, aurc_oracle, e_aurc, accuracy_at_coverage, coverage_at_accuracy: (G, B)."""
    n, f = seg.total, seg.total_errors
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.divide(seg.errors, seg.weight, out=np.zeros_like(seg.errors),
                         where=seg.weight > 0)  # fmt: skip
        terms = _digamma_step(seg.before + 1.0, seg.weight)
        terms *= seg.errors_before - rate * seg.before
        terms += seg.errors
        aurc = np.add.reduceat(terms, seg.first, axis=0) / n
        correct = n - f
        oracle = (f - correct * _digamma_step(correct + 1.0, f)) / n
        target = coverage * n
        at = _locate(seg, target)
        accuracy_at = 1.0 - _errors_at(seg, at, target) / target
        coverage_at = _coverage_at(seg, target_accuracy) / n
    empty = ~(n > 0)
    result = {
        "aurc": aurc,
        "aurc_oracle": oracle,
        "e_aurc": np.maximum(aurc - oracle, 0.0),
        "accuracy_at_coverage": accuracy_at,
        "coverage_at_accuracy": coverage_at,
    }
    return {name: np.where(empty, np.nan, value) for name, value in result.items()}


def _coverage_at(seg: _Segments, target: float) -> F64Array:
    """The largest accepted weight c with A(c)/c ≥ target, per group and column (G, B).

    A segment's end is a candidate when the accuracy there reaches the target; the
    accuracy falls through the target inside a segment whose start reaches it and whose
    own accuracy is below it, at A(c) = target·c (those segments are few: the crossing
    is computed for them only).
    """
    a, width = seg.before, seg.weight
    b = a + width
    positive = width > 0
    hits_before = a - seg.errors_before  # A(a)
    hits_after = hits_before + (width - seg.errors)  # A(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        candidate = np.where(positive & (hits_after / b >= target), b, 0.0)
        # a = 0 gives 0/0 (or a rounding-negative A(a)/0): never a start that reaches it
        starts_above = np.flatnonzero(positive & (hits_before / a >= target))
        errors, share_of = seg.errors.flat[starts_above], width.flat[starts_above]
        share = 1.0 - errors / share_of  # the segment's accuracy
        falls = share < target
        at, share = starts_above[falls], share[falls]
        crossing = (hits_before.flat[at] - share * a.flat[at]) / (target - share)
        candidate.flat[at] = np.maximum(candidate.flat[at], np.minimum(crossing, b.flat[at]))
    result: F64Array = np.maximum.reduceat(candidate, seg.first, axis=0)
    return result


SUMMARY_POINTS = 200
"""The bins of the bounded selective summary (:func:`selective_binning`)."""


@check_arguments(points=Integer(2))
def selective_binning(points: int = SUMMARY_POINTS) -> Binning:
    """Fixed edges for a bounded summary of the risk–coverage curve: ``points`` bins.

    The edges are 0, the logistic function of ``points - 1`` equally spaced log-odds
    from −10 to 10 (confidences 4.5e-5 … 0.99995: as fine near 0 and 1 as in the
    middle, where the confidences of language models crowd) and 1, left-closed (the last
    bin closed at 1). The bin statistics of the rows with this binning
    (:func:`~calib_frames.bin_statistics`: one streaming pass, flat memory, additive)
    are the summary :func:`selective_curve_from_bin_statistics` reads.

    Examples
    --------
    >>> from calib_frames.estimators.selective import selective_binning
    >>> binning = selective_binning(4)
    >>> binning.n_bins, [round(edge, 5) for edge in binning.bin_edges]
    (4, [0.0, 5e-05, 0.5, 0.99995, 1.0])
    """
    odds = np.linspace(-10.0, 10.0, points - 1)
    return Binning.edges([0.0, *(1.0 / (1.0 + np.exp(-odds))).tolist(), 1.0])


def selective_curve_from_bin_statistics(stats: Frame) -> Frame:
    """The risk–coverage curve of a bin-statistics table: one point per populated bin.

    A bounded summary of :func:`selective_curve`: accepting every prediction of
    confidence at least a bin's lower bound t, the coverage is
    c(t) = Σ_{b ≥ t} W_b / Σ_b W_b and the risk E(t)/(c(t)·N) = Σ_{b ≥ t} F_b / Σ_{b ≥ t} W_b,
    with W_b a bin's weight and F_b its wrong predictions' weight; accuracy = 1 − risk.
    These are the exact curve's values at those thresholds (for bins closed on the left,
    and equal-mass bins, whose lower bound is their smallest confidence; a right-closed
    bin accepts the confidences above its lower edge); between them it is the curve of
    the confidences rounded to the bins (the rows of a bin count as tied).
    With :func:`selective_binning`'s 200 bins a group has at most 200 points, however
    many rows it holds, and the table is additive (computed per file or per night and
    merged), so the risk–coverage chart of a report never holds the rows.

    Parameters
    ----------
    stats
        A bin-statistics table (:func:`~calib_frames.bin_statistics`), usually of
        :func:`selective_binning`; lazy in, lazy out.

    Returns
    -------
    DataFrame or LazyFrame (the kind of ``stats``)
        Group keys, then ``threshold`` (the bin's lower edge), ``coverage``,
        ``accuracy`` and ``risk``, sorted by keys and increasing coverage; empty bins
        have no point, and the last point of a group has coverage 1.

    Raises
    ------
    TableError
        If ``stats`` is not a bin-statistics table.

    See Also
    --------
    selective_curve : the curve of every tie group, from the rows (in memory).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.estimators.selective import selective_curve_from_bin_statistics
    >>> df = pl.DataFrame({"confidence": [0.9, 0.9, 0.6, 0.3], "correct": [1, 0, 1, 0]})
    >>> stats = cf.bin_statistics(df, bins=10)
    >>> curve = selective_curve_from_bin_statistics(stats)  # the exact curve's three points
    >>> curve.select(pl.all().round(4)).rows()
    [(0.9, 0.5, 0.5, 0.5), (0.6, 0.75, 0.6667, 0.3333), (0.3, 1.0, 0.5, 0.5)]
    """
    lazy = as_lazy(stats)
    schema = lazy.collect_schema()
    keys: list[str] = BIN_STATISTICS.keys(schema)
    missing = [c for c in ("bin", "bin_lower", "weight", "weight_wrong") if c not in schema]
    if missing:
        raise TableError(
            f"not a bin-statistics table: missing columns {missing}; build one with "
            "calib_frames.bin_statistics"
        )
    populated = lazy.filter(pl.col("weight") > 0)

    def within(expr: pl.Expr) -> pl.Expr:
        return expr.over(keys) if keys else expr

    accepted = within(pl.col("weight").cum_sum())
    wrong = within(pl.col("weight_wrong").cum_sum())
    risk = wrong / accepted
    curve = populated.sort([*keys, "bin"], descending=[False] * len(keys) + [True]).select(
        *keys,
        pl.col("bin_lower").cast(pl.Float64).alias("threshold"),
        (accepted / within(pl.col("weight").sum())).alias("coverage"),
        (1.0 - risk).alias("accuracy"),
        risk.alias("risk"),
    )
    return return_like(stats, curve.sort([*keys, "coverage"], maintain_order=True))
