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
metric of the comparison table, and per batch × group closed-form intervals: the
accuracy's Wilson score interval and the Brier score's normal interval (its standard
error as in the change test below). A batch's row is the row its own statistics file
gives (the same sums, the same reduction). The bootstrap intervals and the ECE noise
floor of every batch × group (batches × groups × bins × replicates: 60,000 batch-groups
of 200 groups × 30 nights took 2 minutes) are left to the pooled comparison table.

Change against a reference window
---------------------------------
:func:`calibration_change` compares every batch after a **reference window** (the
baseline: batches ``A..B`` in batch order, by id or by date; default the first batch)
with that window pooled (its bin statistics summed), per group. Comparing each batch
with a fixed reference, not with all earlier batches pooled, keeps a drift from hiding
in its own baseline: a model that turned overconfident on night 20 of 30 still differs
from the reference on night 30. For each tested batch t, group and metric m, the
difference d = m(t) − m(baseline) (positive: the batch has the larger value) and a
two-sided p-value of "no change", all in closed form from the bin statistics, with
W = Σw the trials of a side (a weight of k is k identical rows):

* **accuracy**: the two-proportion z-test, z = d / √(a(1 − a)(1/W_t + 1/W_b)) with a the
  pooled accuracy; interval: Newcombe's hybrid score interval (the Wilson intervals of
  the two sides combined by the square-and-add rule, MOVER);
* **Brier score**: z = d / se with se² = Var_t(s)/W_t + Var_b(s)/W_b, s = (p − y)² per
  row; Var(s) = E[s²] − B² needs Σw·s², which the table does not hold: per (bin,
  outcome) cell it is taken from the cell's mean and spread of the residual with a
  symmetric within-cell distribution of kurtosis 1.8 (uniform, as the bootstrap
  assumes; the cells are a bin wide, so the spread's terms are small); interval d ± z·se;
* **ECE**: d = ECE(t) − ECE(baseline) holds the ECE's finite-sample bias, larger on the
  smaller side (a night against a window of nights), so d itself is no test statistic.
  The p-value is that of the **reliability test**: per bin, the mean gap ē = mean(y − p)
  of the batch against the baseline's, X² = Σ_b (ē_t − ē_b)² / (v_b (1/W_tb + 1/W_bb))
  with v_b the pooled within-bin variance of y − p, over the bins with at least
  :data:`MIN_BIN_WEIGHT` on both sides, against χ² with as many degrees of freedom.
  Under "the calibration curve did not change" (per bin) the gaps agree; a model turned
  over- or underconfident moves every gap. The ECE difference's interval (the tested
  batch's only: it costs groups × bins × ``replicates``) is the percentile interval of
  d* = ECE(t*) − ECE(baseline*), both sides drawn with the bin-table bootstrap
  (:func:`~calib_frames.estimators.bootstrap.bootstrap_bin_statistics`); it carries the
  bias, so it may lie above 0 where the test finds no change.

p-values are from the normal and χ² tails, so they can be as small as the evidence
(reported down to :data:`P_FLOOR`, "p < 1e-12"), which a correction over thousands of
tests needs.

Multiplicity and onset. One family holds every tested batch × group × metric of the
run; its p-values are adjusted together (``correction``: Benjamini–Hochberg by default,
or Holm). Why over batches too: the onset reads the past batches' verdicts, so they
must be as trustworthy as tonight's. Why BH: under the global null (nothing changed)
it bounds the chance of any false flag in the run at ``alpha``, like Holm, and when a
model did change its many post-onset tests raise the others' thresholds a little
(bounding the share of false flags among flags at ``alpha``) rather than spend the
level on every unchanged test. A batch is **changed** for a group when any metric's
adjusted p-value is at most ``alpha``; the group is changed *now* when the last batch
(tonight) is; its **onset** is the first changed batch of the run of batches that ends
tonight, where a batch continues the run when it changed, or when a metric that changed
tonight moved the same way in it at the uncorrected level (raw p ≤ ``alpha``): one
batch a little short of the corrected level does not cut the run and push the onset
late, and the onset itself is always a changed batch. Batches in which the group is
absent neither break nor join the run.

Measured (``tests/estimators/test_drift.py::test_season_false_alarms_measured``): 40
simulated seasons of 30 nights × 12 groups (model × task), 800–1200 predictions per
group and night, each group with a steady miscalibration of its own (confidence = truth
+ U(−0.05, 0.05)); one group turns overconfident by 0.12 on night 20; a quarter of the
groups are absent on about one night in five; reference window nights 1–7, BH at 0.05;
a run "tonight" on nights 10, 20, 25 and 30 of each season (160 runs). In 3 of the 160
runs (1.9%) some stable group was reported changed; the drifted group was found in all
107 runs after its shift in which it was present, with the right onset (night 20, or
the first night after it on which the group was present) in all 107. Against the old
test (tonight against every earlier night pooled) the drift hid in its own baseline.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Literal

import numpy as np
import polars as pl
from scipy import special

from calib_frames.arguments import (
    FLAG,
    LEVEL,
    RESAMPLING,
    InstanceOf,
    Integer,
    Options,
    check_arguments,
)
from calib_frames.estimators.bootstrap import bootstrap_bin_statistics
from calib_frames.estimators.intervals import accuracy_interval, normal_quantile
from calib_frames.estimators.multiple_testing import adjust_p_values
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.metrics.calibration import metrics_from_bin_statistics
from calib_frames.metrics.registry import metric
from calib_frames.metrics.tokens import perplexity_from_nll_sums
from calib_frames.schema import BIN_STATISTICS, NLL_SUMS
from calib_frames.stats import merge_bin_statistics
from calib_frames.storage import StoredStatistics, batch_time_of
from calib_frames.validation import working

__all__ = [
    "BATCH_COLUMNS",
    "CHANGE_METRICS",
    "MIN_BIN_WEIGHT",
    "P_FLOOR",
    "baseline_window",
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
_W, _S4, _CHI, _DF = working("w"), working("s4"), working("chi"), working("df")
_ZA, _ZB, _POSITION, _RUN = working("za"), working("zb"), working("position"), working("run")
_NOW, _SIGN = working("now_"), working("sign_")


_STORED = InstanceOf(StoredStatistics, "statistics read with calib_frames.read_statistics")


def _window(stats: StoredStatistics, last: int | None) -> StoredStatistics:
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


@check_arguments(
    stats=_STORED, sums=_STORED | None, last=Integer(1) | None, uncertainty=FLAG, level=LEVEL
)
def metrics_over_batches(
    stats: StoredStatistics,
    sums: StoredStatistics | None = None,
    *,
    last: int | None = None,
    uncertainty: bool = True,
    level: float = 0.95,
) -> pl.DataFrame:
    """Every metric of the comparison table per batch × group, in batch order.

    Each batch's bin statistics reduced on their own (module docstring): the
    calibration metrics of :func:`~calib_frames.metrics_from_bin_statistics` (accuracy,
    ECE, RMSCE, MCE over populated bins, Brier score and its terms, log loss), with
    ``uncertainty`` closed-form intervals of accuracy and Brier score per batch × group,
    and the perplexity columns where NLL sums of the batches are given. Costs batches ×
    groups × bins, never rows.

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
        Add ``accuracy_ci_low/high`` (Wilson score interval) and ``brier_ci_low/high``
        (normal interval), per batch × group.
    level
        Interval level in (0, 1).

    Returns
    -------
    polars.DataFrame
        ``batch`` (UInt32, 0 for the first batch), ``batch_id``, ``batch_time``
        (Datetime UTC, null for a batch stored without a time), the group keys, then the
        metrics columns; sorted by batch, then keys.

    Raises
    ------
    ArgumentError
        ``stats`` is not read statistics, or a bad ``last`` or ``level``.
    TableError
        ``stats`` holds NLL sums, or ``sums`` has other batches' keys than ``stats``.

    See Also
    --------
    calibration_change : the batches after a reference window against it.
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
        z = normal_quantile(level)
        moments = table.group_by(keys).agg(_FOURTH.sum().alias(_S4))
        metrics = metrics.join(moments, on=keys, how="left", nulls_equal=True)
        low, high = accuracy_interval("weight", pl.col("accuracy") * pl.col("weight"), level=level)
        se = _brier_se("", "weight", "brier")
        metrics = metrics.with_columns(
            low.alias("accuracy_ci_low"),
            high.alias("accuracy_ci_high"),
            (pl.col("brier") - z * se).clip(0.0, 1.0).alias("brier_ci_low"),
            (pl.col("brier") + z * se).clip(0.0, 1.0).alias("brier_ci_high"),
        ).drop(_S4)
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


def baseline_window(
    stats: StoredStatistics, baseline: str | Sequence[object] | None = None
) -> list[str]:
    """The batch ids of a reference window, in batch order.

    Parameters
    ----------
    stats
        Statistics read with :func:`~calib_frames.read_statistics`.
    baseline
        ``"A..B"`` or ``(A, B)``: the batches from A to B inclusive, in batch order. A
        and B are batch ids, or else dates or times (ISO 8601 strings, dates, datetimes):
        the batches whose time lies from A to B, a date meaning its whole day. ``"A"``
        alone is the window of one batch (or one day). ``None``: the first batch.

    Returns
    -------
    list of str
        The window's batch ids.

    Raises
    ------
    ArgumentError
        ``baseline`` names no batch or time, its ends are in the wrong order, a date is
        given while some batch has no time, or the window holds no batch.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> rows = pl.DataFrame({"confidence": [0.8, 0.6], "correct": [1, 0]})
    >>> for day in range(1, 6):
    ...     cf.write_statistics(cf.bin_statistics(rows), folder / f"{day}.parquet",
    ...         batch_id=f"n{day}", batch_time=f"2026-12-0{day}", binning=cf.Binning.uniform(10))
    >>> stored = cf.read_statistics(folder)
    >>> baseline_window(stored, "n2..n3"), baseline_window(stored, "2026-12-01..2026-12-02")
    (['n2', 'n3'], ['n1', 'n2'])
    """
    order = stats.batch_order
    if baseline is None:
        return order[:1]
    if isinstance(baseline, str):
        ends: list[object] = list(baseline.split("..", 1)) if ".." in baseline else [baseline]
    elif isinstance(baseline, Sequence) and len(baseline) == 2:
        ends = list(baseline)
    else:
        raise ArgumentError(
            f"baseline= takes 'A..B' or (A, B): batch ids, dates or times, got {baseline!r}"
        )
    first, last = ends[0], ends[-1]
    if all(isinstance(end, str) and end in order for end in (first, last)):
        start, stop = order.index(str(first)), order.index(str(last))
        if start > stop:
            raise ArgumentError(f"baseline {first}..{last}: {first} comes after {last}")
        return order[start : stop + 1]
    named = [end for end in (first, last) if isinstance(end, str) and end in order]
    if named:
        other = next(end for end in (first, last) if end not in named)
        raise ArgumentError(
            f"baseline {_shown(ends)}: {other!r} is not among the {len(order)} batches (give "
            "two batch ids, or two dates)"
        )
    if not stats.timed:
        raise ArgumentError(
            f"baseline {_shown(ends)}: not batch ids, and dates need every batch to have a "
            f"time (batch ids: {', '.join(order[:3])}{' …' if len(order) > 3 else ''})"
        )
    low, high = _moment(first, end=False), _moment(last, end=True)
    if low > high:
        raise ArgumentError(f"baseline {_shown(ends)}: the first end comes after the last")
    times = {b: dt.datetime.fromisoformat(stats.batch_times[b]) for b in order}
    window = [b for b in order if low <= times[b] <= high]
    if not window:
        raise ArgumentError(
            f"baseline {_shown(ends)}: no batch has its time in it (batches from "
            f"{stats.batch_times[order[0]]} to {stats.batch_times[order[-1]]})"
        )
    return window


def _shown(ends: Sequence[object]) -> str:
    return "..".join(str(end) for end in dict.fromkeys(ends))


def _moment(value: object, *, end: bool) -> dt.datetime:
    """A window end as a UTC time: a date is its first instant, or with ``end`` its last."""
    day = value if isinstance(value, dt.date) and not isinstance(value, dt.datetime) else None
    if isinstance(value, str):
        try:
            day = dt.date.fromisoformat(value.strip())
        except ValueError:
            day = None
    if day is not None:
        start = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
        return start + dt.timedelta(days=1, microseconds=-1) if end else start
    if not isinstance(value, str | dt.datetime):
        raise ArgumentError(f"baseline end {value!r} is neither a batch id nor a date or time")
    try:
        return dt.datetime.fromisoformat(batch_time_of(value))
    except ArgumentError:
        raise ArgumentError(
            f"baseline end {value!r} is neither a batch id nor an ISO 8601 date or time"
        ) from None


@check_arguments(
    stats=_STORED,
    last=Integer(1) | None,
    alpha=LEVEL,
    correction=Options("bh", "holm", "none"),
    **RESAMPLING,
)
def calibration_change(
    stats: StoredStatistics,
    *,
    baseline: str | Sequence[object] | None = None,
    batch: str | None = None,
    last: int | None = None,
    alpha: float = 0.05,
    correction: Literal["bh", "holm", "none"] = "bh",
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Per group: the change of every batch after a reference window, its onset, tonight's change.

    Each batch after the window against the window pooled, per group: accuracy, ECE and
    Brier score, closed-form p-values adjusted over one family of batches × groups ×
    metrics, the onset of the change that holds tonight, and tonight's differences with
    their intervals (module docstring). Costs batches × groups × bins, and the ECE
    interval groups × bins × ``replicates``; never rows.

    Parameters
    ----------
    stats
        Bin statistics read with :func:`~calib_frames.read_statistics`.
    baseline
        The reference window (:func:`baseline_window`): ``"A..B"`` or ``(A, B)`` of batch
        ids or dates; default the first batch.
    batch
        The batch read as tonight (default: the last in batch order); later batches are
        left out.
    last
        Keep only the ``last`` latest batches first (``None``: all); the window must lie
        in them.
    alpha
        Level at which an adjusted p-value makes a change.
    correction
        ``"bh"`` (Benjamini–Hochberg, default) or ``"holm"``, over every tested batch ×
        group × metric; ``"none"`` reads the raw p-values (no control of the run's
        false alarms: for a single planned comparison).
    replicates
        Bootstrap replicates of the ECE difference's interval (≥ 1).
    level
        Interval level in (0, 1).
    seed
        Seed (≥ 0) of the bootstrap.

    Returns
    -------
    polars.DataFrame
        One row per group (sorted by the keys): the keys, ``batch_id`` (tonight),
        ``baseline`` ("A..B"), ``baseline_batches`` and ``tested_batches`` (UInt32),
        ``count`` and ``baseline_count`` (UInt64), then per metric m of
        :data:`CHANGE_METRICS` ``m_baseline``, ``m_batch``, ``m_difference`` (tonight −
        baseline), ``m_difference_ci_low``, ``m_difference_ci_high``, ``m_p_value``,
        ``m_p_adjusted``; then ``changed`` (Boolean: tonight changed), ``onset`` (the
        batch id the change holds from; null when not changed), ``onset_time``
        (Datetime UTC), ``changed_batches`` (UInt32: tested batches flagged) and
        ``verdict``. A group missing tonight or from the window has null numbers and the
        verdict ``"not in this batch"`` or ``"not in the baseline"``.

    Raises
    ------
    ArgumentError
        ``stats`` is not read statistics; ``baseline`` or ``batch`` names no batch; no
        batch follows the window; a bad ``last``, ``alpha``, ``correction``,
        ``replicates``, ``level``, ``seed``.
    TableError
        ``stats`` holds NLL sums.

    See Also
    --------
    metrics_over_batches : the figures of every batch.
    baseline_window : the window's batches.

    Examples
    --------
    Six nights of a model that turns overconfident on the fifth; the first two nights are
    the reference:

    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.estimators.drift import calibration_change
    >>> folder, rng = pathlib.Path(tempfile.mkdtemp()), np.random.default_rng(1)
    >>> for night in range(6):
    ...     p = rng.uniform(0.5, 1.0, 2000)
    ...     shown = np.minimum(p + (0.15 if night >= 4 else 0.0), 1.0)
    ...     rows = pl.DataFrame({"confidence": shown, "correct": rng.random(2000) < p})
    ...     cf.write_statistics(cf.bin_statistics(rows), folder / f"{night}.parquet",
    ...         batch_id=f"n{night}", batch_time=f"2026-12-0{night + 1}",
    ...         binning=cf.Binning.uniform(10))
    >>> change = calibration_change(cf.read_statistics(folder), baseline="n0..n1",
    ...                             replicates=200)
    >>> change.select("batch_id", "baseline", "changed", "onset").row(0)
    ('n5', 'n0..n1', True, 'n4')
    >>> change["verdict"].item()
    'ECE up 0.12, p = 6e-12'
    """
    window = _window(stats, last)
    base = baseline_window(window, baseline)
    order = window.batch_order
    tonight = order[-1] if batch is None else batch
    if tonight not in order:
        shown = ", ".join(order[-5:])
        raise ArgumentError(
            f"batch {tonight!r} is not among the {len(order)} batches"
            f"{' of the window' if last else ''} (the last: {shown})"
        )
    tested = order[order.index(base[-1]) + 1 : order.index(tonight) + 1]
    if not tested:
        raise ArgumentError(
            f"no batch follows the baseline {_shown([base[0], base[-1]])} up to {tonight!r}: "
            "there is nothing to compare with it yet"
        )
    table = window.table
    keys: list[str] = window.keys or [_GROUP]  # one constant key when there is none
    if not window.keys:
        table = table.select("batch_id", pl.lit(0, pl.UInt8).alias(_GROUP), pl.exclude("batch_id"))
    reference = merge_bin_statistics(table.filter(pl.col("batch_id").is_in(base)), by=keys)
    assert isinstance(reference, pl.DataFrame)
    current = table.filter(pl.col("batch_id").is_in(tested))
    tests = _adjusted(_tests(current, reference, keys, level=level), keys, correction)
    tests = _flagged(tests, keys, tested, alpha=alpha)
    groups = pl.concat(
        [current.select(keys).unique(), reference.select(keys).unique()]
    ).unique().sort(keys, nulls_last=True)  # fmt: skip
    now = tests.filter(pl.col("batch_id") == tonight).drop("batch_id")
    result = groups.join(now, on=keys, how="left", nulls_equal=True)
    onsets = _onsets(tests, keys, tonight, alpha=alpha)
    result = result.join(onsets, on=keys, how="left", nulls_equal=True)
    interval = _ece_interval(
        table.filter(pl.col("batch_id") == tonight).drop("batch_id"),
        reference,
        result.filter(pl.col("count") > 0, pl.col("baseline_count") > 0).select(keys),
        keys,
        replicates=replicates,
        level=level,
        seed=seed,
    )
    result = result.join(interval, on=keys, how="left", nulls_equal=True).with_columns(
        pl.lit(tonight).alias("batch_id"),
        pl.lit(_shown([base[0], base[-1]])).alias("baseline"),
        pl.lit(len(base), pl.UInt32).alias("baseline_batches"),
        pl.lit(len(tested), pl.UInt32).alias("tested_batches"),
        pl.col("count", "baseline_count").fill_null(0),
        pl.col("changed").fill_null(False),
        pl.col("changed_batches").fill_null(0),
    )
    times = {b: window.batch_times.get(b) for b in order}
    result = result.with_columns(
        pl.when(pl.col("changed")).then(pl.col("onset")).alias("onset")
    ).with_columns(
        pl.col("onset")
        .replace_strict(times, default=None, return_dtype=pl.String)
        .str.to_datetime(time_unit="us", time_zone="UTC")
        .alias("onset_time"),
        _verdict(alpha).alias("verdict"),
    )
    columns = [*window.keys, "batch_id", "baseline", "baseline_batches", "tested_batches",
               "count", "baseline_count"]  # fmt: skip
    columns += [f"{m}_{suffix}" for m in CHANGE_METRICS for suffix in _SUFFIXES]
    return result.select(
        *columns, "changed", "onset", "onset_time", "changed_batches", "verdict"
    ).sort(window.keys or [], nulls_last=True)


_SUFFIXES = (
    "baseline", "batch", "difference", "difference_ci_low", "difference_ci_high", "p_value",
    "p_adjusted",
)  # fmt: skip

MIN_BIN_WEIGHT = 20
"""Least weight (rows) a bin needs on both sides to enter the reliability test: the gap
of a bin of few rows is far from normal (its skewness ~ 1/√n)."""

P_FLOOR = 1e-12
"""p-values are not reported below this (the normal and χ² approximations do not hold so
far out): written "p < 1e-12", and used so in the correction."""

_KURTOSIS = 1.8  # μ₄/σ⁴ of the residual within a cell, as for a uniform distribution


def _cell_fourth_moment(weight: str, residual: str, squared: str) -> pl.Expr:
    """Σw·r⁴ of one outcome class's cells, from their mean and spread (module docstring)."""
    w = pl.col(weight)
    mean = pl.when(w > 0).then(pl.col(residual) / w).otherwise(0.0)
    spread = pl.when(w > 0).then(pl.col(squared) / w - mean**2).otherwise(0.0).clip(0.0)
    return w * (mean**4 + 6.0 * mean**2 * spread + _KURTOSIS * spread**2)


_FOURTH = _cell_fourth_moment(
    "weight_correct", "sum_residual_correct", "sum_sq_residual_correct"
) + _cell_fourth_moment("weight_wrong", "sum_residual_wrong", "sum_sq_residual_wrong")
"""Σw·(p − y)⁴ of a bin row: the squared Brier terms' sum that Var(s) needs."""


def _brier_se(fourth: str, weight: str, brier: str) -> pl.Expr:
    """Standard error √((E[s²] − B²)/W) of a Brier score B over W trials (E[s²] = Σ4/W)."""
    w = pl.col(weight)
    return ((pl.col(f"{_S4}{fourth}") / w - pl.col(brier) ** 2).clip(0.0) / w).sqrt()


def _tests(
    current: pl.DataFrame, reference: pl.DataFrame, keys: list[str], *, level: float
) -> pl.DataFrame:
    """Per (batch, group): each metric's difference, interval and raw p-value."""
    gap = pl.col("sum_residual_correct") - pl.col("sum_residual_wrong")  # Σw(y − p)
    squared = pl.col("sum_sq_residual_correct") + pl.col("sum_sq_residual_wrong")
    fourth = _FOURTH

    def side(bins: pl.DataFrame, by: list[str], name: str) -> pl.DataFrame:
        metrics = metrics_from_bin_statistics(bins)
        assert isinstance(metrics, pl.DataFrame)
        moments = bins.group_by(by).agg(fourth.sum().alias(f"{_S4}_{name}"))
        return metrics.select(
            *by,
            pl.col("count").alias("count" if name == "batch" else "baseline_count"),
            pl.col("weight").alias(f"{_W}_{name}"),
            *[pl.col(m).alias(f"{m}_{name}") for m in CHANGE_METRICS],
        ).join(moments, on=by, nulls_equal=True)

    batch_keys = ["batch_id", *keys]
    tested = side(current, batch_keys, "batch").join(
        side(reference, keys, "baseline"), on=keys, how="left", nulls_equal=True
    )
    cells = current.select(
        *batch_keys, "bin", pl.col("weight").alias("w_t"), gap.alias("g_t"), squared.alias("q_t")
    ).join(
        reference.select(
            *keys, "bin", pl.col("weight").alias("w_b"), gap.alias("g_b"), squared.alias("q_b")
        ),
        on=[*keys, "bin"],
        nulls_equal=True,
    )
    pooled_w = pl.col("w_t") + pl.col("w_b")
    pooled_mean = (pl.col("g_t") + pl.col("g_b")) / pooled_w
    spread = (pl.col("q_t") + pl.col("q_b")) / pooled_w - pooled_mean**2
    used = (pl.col("w_t") >= MIN_BIN_WEIGHT) & (pl.col("w_b") >= MIN_BIN_WEIGHT) & (spread > 1e-12)
    term = (pl.col("g_t") / pl.col("w_t") - pl.col("g_b") / pl.col("w_b")) ** 2 / (
        spread * (1.0 / pl.col("w_t") + 1.0 / pl.col("w_b"))
    )
    chi = cells.group_by(batch_keys).agg(
        pl.when(used).then(term).sum().alias(_CHI), used.sum().cast(pl.Int64).alias(_DF)
    )
    tested = tested.join(chi, on=batch_keys, how="left", nulls_equal=True)
    return _closed_forms(tested, level=level)


def _closed_forms(tested: pl.DataFrame, *, level: float) -> pl.DataFrame:
    """Differences, intervals and raw p-values from the per-side sums (numpy tails)."""
    z = normal_quantile(level)
    w_t, w_b = pl.col(f"{_W}_batch"), pl.col(f"{_W}_baseline")
    a_t, a_b = pl.col("accuracy_batch"), pl.col("accuracy_baseline")
    low_t, high_t = accuracy_interval(w_t, a_t * w_t, level=level)
    low_b, high_b = accuracy_interval(w_b, a_b * w_b, level=level)
    d_a = a_t - a_b
    pooled = (a_t * w_t + a_b * w_b) / (w_t + w_b)
    se_t, se_b = (_brier_se(f"_{s}", f"{_W}_{s}", f"brier_{s}") for s in ("batch", "baseline"))
    se_brier = (se_t**2 + se_b**2).sqrt()
    d_b = pl.col("brier_batch") - pl.col("brier_baseline")
    # Newcombe: the two Wilson intervals combined by the square-and-add rule (MOVER)
    below = ((a_t - low_t) ** 2 + (high_b - a_b) ** 2).sqrt()
    above = ((high_t - a_t) ** 2 + (a_b - low_b) ** 2).sqrt()
    frame = tested.with_columns(
        *[(pl.col(f"{m}_batch") - pl.col(f"{m}_baseline")).alias(f"{m}_difference")
          for m in CHANGE_METRICS],
        (d_a - below).alias("accuracy_difference_ci_low"),
        (d_a + above).alias("accuracy_difference_ci_high"),
        (d_a / (pooled * (1.0 - pooled) * (1.0 / w_t + 1.0 / w_b)).sqrt()).alias(_ZA),
        (d_b - z * se_brier).alias("brier_difference_ci_low"),
        (d_b + z * se_brier).alias("brier_difference_ci_high"),
        (d_b / se_brier).alias(_ZB),
    )  # fmt: skip

    def two_sided(column: str, same: pl.Expr) -> pl.Series:
        values = frame.get_column(column).cast(pl.Float64).to_numpy()
        with np.errstate(invalid="ignore"):
            p = 2.0 * special.ndtr(-np.abs(values))
        # 0/0: the two sides agree exactly and have no spread (all right, or all alike)
        agree = frame.select(same.fill_null(False)).to_series().to_numpy()
        p = np.where(np.isnan(values) & agree, 1.0, p)
        return pl.Series(p, dtype=pl.Float64, nan_to_null=True)

    both = (w_t > 0) & (w_b > 0)
    chi, df = frame.get_column(_CHI).to_numpy(), frame.get_column(_DF).to_numpy()
    with np.errstate(invalid="ignore"):
        chi_p = np.where(df > 0, special.chdtrc(np.maximum(df, 1), chi), np.nan)
    return frame.with_columns(
        two_sided(_ZA, both & (pl.col("accuracy_difference") == 0)).alias("accuracy_p_value"),
        two_sided(_ZB, both & (pl.col("brier_difference") == 0)).alias("brier_p_value"),
        pl.Series(chi_p, dtype=pl.Float64, nan_to_null=True).alias("ece_p_value"),
    ).with_columns(
        pl.when(both).then(pl.col(f"{m}_p_value").clip(P_FLOOR, 1.0)).alias(f"{m}_p_value")
        for m in CHANGE_METRICS
    )


def _adjusted(
    tests: pl.DataFrame, keys: list[str], correction: Literal["bh", "holm", "none"]
) -> pl.DataFrame:
    """``m_p_adjusted``: one family of every tested batch × group × metric."""
    if correction == "none":
        return tests.with_columns(
            pl.col(f"{m}_p_value").alias(f"{m}_p_adjusted") for m in CHANGE_METRICS
        )
    metric, p, out = working("metric"), working("p"), working("adjusted")
    batch_keys = ["batch_id", *keys]
    long = pl.concat(
        [tests.select(*batch_keys, pl.lit(m).alias(metric), pl.col(f"{m}_p_value").alias(p))
         for m in CHANGE_METRICS]
    )  # fmt: skip
    adjusted = adjust_p_values(long, p_value=p, method=correction, output=out)
    assert isinstance(adjusted, pl.DataFrame)
    wide = adjusted.pivot(metric, index=batch_keys, values=out)
    wide = wide.rename({m: f"{m}_p_adjusted" for m in CHANGE_METRICS})
    return tests.join(wide, on=batch_keys, how="left", nulls_equal=True)


def _flagged(
    tests: pl.DataFrame, keys: list[str], tested: list[str], *, alpha: float
) -> pl.DataFrame:
    """``changed`` per (batch, group) and ``position`` (the batch's place among the tested)."""
    flags = [(pl.col(f"{m}_p_adjusted") <= alpha).fill_null(False) for m in CHANGE_METRICS]
    position = {b: i for i, b in enumerate(tested)}
    return tests.with_columns(
        pl.any_horizontal(flags).alias("changed"),
        pl.col("batch_id").replace_strict(position, return_dtype=pl.UInt32).alias(_POSITION),
    ).sort([*keys, _POSITION], nulls_last=True)


def _onsets(tests: pl.DataFrame, keys: list[str], tonight: str, *, alpha: float) -> pl.DataFrame:
    """Per group: the onset of tonight's change and how many tested batches changed.

    Walking back from tonight, a batch continues the run when it changed, or when one of
    the metrics that changed tonight moved the same way in it at the uncorrected level
    (raw p ≤ alpha): a batch a little short of the corrected level does not cut the run.
    The onset is the run's first changed batch.
    """
    now = tests.filter(pl.col("batch_id") == tonight).select(
        *keys,
        *[(pl.col(f"{m}_p_adjusted") <= alpha).fill_null(False).alias(f"{_NOW}{m}")
          for m in CHANGE_METRICS],
        *[pl.col(f"{m}_difference").sign().alias(f"{_SIGN}{m}") for m in CHANGE_METRICS],
    )  # fmt: skip
    joined = tests.join(now, on=keys, how="left", nulls_equal=True)
    same_way = [
        pl.col(f"{_NOW}{m}").fill_null(False)
        & (pl.col(f"{m}_p_value") <= alpha).fill_null(False)
        & (pl.col(f"{m}_difference").sign() == pl.col(f"{_SIGN}{m}")).fill_null(False)
        for m in CHANGE_METRICS
    ]
    link = pl.col("changed") | pl.any_horizontal(same_way)
    broken = (~link).cast(pl.UInt32).cum_sum().over(keys)
    final = joined.with_columns(broken.alias(_RUN)).with_columns(
        (pl.col(_RUN) == pl.col(_RUN).max().over(keys)).alias(_RUN)
    )
    return final.group_by(keys).agg(
        pl.col("batch_id").filter(pl.col(_RUN) & pl.col("changed")).first().alias("onset"),
        pl.col("changed").sum().cast(pl.UInt32).alias("changed_batches"),
    )


def _ece_interval(
    tonight: pl.DataFrame,
    reference: pl.DataFrame,
    groups: pl.DataFrame,
    keys: list[str],
    *,
    replicates: int,
    level: float,
    seed: int,
) -> pl.DataFrame:
    """keys…, ``ece_difference_ci_low/high``: both sides drawn with the bin-table bootstrap."""
    names = [c for c in (*BIN_STATISTICS.names, "count_correct") if c in tonight.columns]
    groups = groups.sort(keys, nulls_last=True)
    bins = max(1, tonight.height // max(1, tonight.select(keys).n_unique()))
    per_block = max(1, _BLOCK // (bins * replicates))
    alpha = (1.0 - level) / 2.0
    parts = [pl.DataFrame(schema={**{k: groups.schema[k] for k in keys},
                                  "ece_difference_ci_low": pl.Float64(),
                                  "ece_difference_ci_high": pl.Float64()})]  # fmt: skip
    for block, start in enumerate(range(0, groups.height, per_block)):  # memory blocks
        chosen = groups.slice(start, per_block)
        drawn = []
        for side, frame in enumerate((tonight, reference)):
            picked = frame.join(chosen, on=keys, nulls_equal=True).select(*keys, *names)
            boot = bootstrap_bin_statistics(
                picked, replicates=replicates, seed=seed + 2 * block + side
            )
            reduced = metrics_from_bin_statistics(boot)
            assert isinstance(reduced, pl.DataFrame)
            drawn.append(reduced.select(*keys, _REP, pl.col("ece").alias(f"ece_{side}")))
        joined = drawn[0].join(drawn[1], on=[*keys, _REP], nulls_equal=True)
        difference = pl.col("ece_0") - pl.col("ece_1")
        parts.append(
            joined.group_by(keys).agg(
                difference.quantile(alpha, "linear").alias("ece_difference_ci_low"),
                difference.quantile(1.0 - alpha, "linear").alias("ece_difference_ci_high"),
            )
        )
    return pl.concat(parts, how="vertical_relaxed")


def _p_text(p: pl.Expr) -> pl.Expr:
    """A p-value in words: "p = 0.0021", or "p < 1e-12" at the floor."""
    return (
        pl.when(p <= P_FLOOR)
        .then(pl.lit(f"p < {P_FLOOR:.0e}"))
        .otherwise(pl.concat_str(pl.lit("p = "), p.round_sig_figs(2).cast(pl.String)))
    )


def _verdict(alpha: float) -> pl.Expr:
    """The metrics whose adjusted p-value is at most alpha, in words (or why none)."""
    parts = []
    for m in CHANGE_METRICS:
        difference = pl.col(f"{m}_difference")
        adjusted = pl.col(f"{m}_p_adjusted")
        words = pl.concat_str(
            pl.lit(f"{metric(m).label} "),
            pl.when(difference > 0).then(pl.lit("up ")).otherwise(pl.lit("down ")),
            difference.abs().round_sig_figs(2).cast(pl.String),
            pl.lit(", "),
            _p_text(adjusted),
        )
        parts.append(pl.when(adjusted <= alpha).then(words))
    said = pl.concat_str(parts, separator="; ", ignore_nulls=True)
    return (
        pl.when(pl.col("count") == 0)
        .then(pl.lit("not in this batch"))
        .when(pl.col("baseline_count") == 0)
        .then(pl.lit("not in the baseline"))
        .when(pl.col("changed") & (said != ""))
        .then(said)
        .otherwise(pl.lit("no change beyond noise"))
    )
