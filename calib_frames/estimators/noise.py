r"""Noise floor of the ECE and a test of perfect calibration, per group, from bin statistics.

What is estimated
-----------------
Even a perfectly calibrated model has a positive ECE on a finite sample: its outcomes
are coin flips. Under the hypothesis H₀ that the model is perfectly calibrated (each
prediction right with the probability it states, independently) the distribution of its
ECE follows from the bin-statistics table alone; :mod:`calib_frames.estimators.null_ece`
computes it exactly (no draws), per group. Then

* ``ece_noise_floor``: the ``level`` quantile (default 95th percentile) of the ECE under
  H₀: an ECE below it is indistinguishable from a calibrated model's noise;
* ``ece_null_mean``: its mean, the ECE that a calibrated model would show on average;
* ``ece_p_value``: the chance under H₀ of an ECE at least as large, one-sided (a large
  ECE is evidence of miscalibration), ties counted half (the mid-p-value of the discrete
  ECE), at least 1e-12 (below it the computation's round-off is as large as the tail);
  1 when the ECE is 0;
* ``ece_p_adjusted``: the p-value corrected across the tested groups of the table
  (``correction``: Benjamini–Hochberg by default, Holm, or none); null for a group not
  tested (no weight, fewer than ``min_count`` predictions or ``min_bins`` populated bins);
* ``ece_beyond_noise``: tested and ``ece_p_adjusted ≤ alpha``: enough predictions, more
  than one populated bin, and an ECE beyond the noise of a calibrated model even after
  the correction: True means *distinguishably miscalibrated*; False means do not read
  this ECE as evidence of miscalibration;
* ``ece_direction``: how the populated bins of a group beyond the noise are off (rule
  below): ``"over"``, ``"under"`` or ``"mixed"``; null within the noise (its gaps are the
  noise's, in both directions) and without weight;
* ``verdict``: the same in words: ``"no weight"`` (weights summing to 0: nothing to
  judge), ``"too few predictions"`` (fewer than ``min_count``), ``"one populated bin"``
  (fewer than ``min_bins``), ``"within noise, adjusted p = 0.41"``, or beyond the noise
  the direction and the p-value: ``"overconfident, adjusted p = 0.0031"``,
  ``"underconfident, p < 1e-12"``, ``"mixed: overconfident above 0.7, underconfident
  below, adjusted p = 2.1e-6"``. The p-value has two significant digits; the one the
  decision used (``adjusted p``, or ``p`` with ``correction="none"``), or ``p < 1e-12``
  when the raw p-value is at that floor.

**Why Benjamini–Hochberg by default.** A leaderboard screens thousands of cells (model ×
task) for the miscalibrated ones, each tested at once. Tested one by one at 5 %, 50
calibrated models × 60 tasks flag about 150 cells. BH bounds the expected share of false
flags among the flagged cells at ``alpha``, keeps its power when many cells are truly off
(its threshold grows with the number flagged), and when no cell is off it bounds the
chance of any false flag at ``alpha``, as Holm does. Holm bounds that chance whatever is
off, at the price of power. Measured by ``benchmarks/sim_noise_floor.py`` (README, "How
far to trust a number").

**Direction.** From the weighted signed gaps of the populated bins, g_b = W_b(p̄_b − ȳ_b):
the share of Σ_b |g_b| on the overconfident side (g_b > 0). At least
:data:`DIRECTION_SHARE` (3/4) of it: ``"over"``; at most 1/4: ``"under"``; in between
``"mixed"``, and the verdict says where: the split of the bins (in confidence order) into
those above and those below an edge that puts the most |g| mass on the side of its
direction; when that split holds at least 3/4 of the mass, "mixed: overconfident above
0.7, underconfident below" (or the reverse), otherwise "mixed: over- and underconfident
bins alternate". A mean gap near zero (``overconfidence``) can hide a mixed model; the
direction does not.

**Weights** are frequencies: a weight of k is k identical predictions, in the null
distribution (trials W_b), in ``min_count`` (compared with the total weight, the
``weight`` column) and in the verdict. Weights that are not counts (an importance
reweighting) make the test's level wrong: see the README.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np
import polars as pl

from calib_frames.arguments import LEVEL, RESAMPLING, Integer, check_arguments
from calib_frames.binning import BINS, BinsLike
from calib_frames.estimators._bins import BinArrays, bin_arrays
from calib_frames.estimators.bootstrap import CI_METRICS, bootstrap_bounds
from calib_frames.estimators.ece_interval import ece_interval_table
from calib_frames.estimators.multiple_testing import adjust_p_values
from calib_frames.estimators.null_ece import P_FLOOR, NullDistribution, null_distribution
from calib_frames.metrics.calibration import metrics_from_bin_statistics
from calib_frames.schema import BIN_STATISTICS, METRICS, NOISE_FLOOR
from calib_frames.stats import bin_statistics
from calib_frames.validation import (
    CORRECTION,
    Correction,
    Frame,
    as_lazy,
    require_columns,
    return_like,
    working,
)

__all__ = [
    "DIRECTION_SHARE",
    "VERDICTS",
    "calibration_noise_floor",
    "noise_floor_from_bin_statistics",
    "uncertainty_from_bin_statistics",
]

VERDICTS = ("no weight", "too few predictions", "one populated bin", "within noise")
"""How a verdict starts when the ECE is not beyond the noise (module docstring)."""

DIRECTION_SHARE = 0.75
"""The share of the gap mass Σ|g_b| that names a direction, or a split of a mixed one."""

UNCERTAINTY_NOISE_COLUMNS = tuple(c for c in NOISE_FLOOR.names if c not in METRICS.columns)
"""The noise-floor columns that :func:`uncertainty_from_bin_statistics` adds (the others,
``count``, ``weight``, ``populated_bins`` and ``ece``, are metrics columns already)."""

_TESTED, _RAW = working("tested"), working("raw_p")
_FLOOR = {
    "alpha": LEVEL,
    "correction": CORRECTION,
    "min_count": Integer(0),
    "min_bins": Integer(0),
}
_CODE, _EDGE = working("direction"), working("edge")


@check_arguments(**_FLOOR, level=LEVEL)
def noise_floor_from_bin_statistics(
    stats: Frame,
    *,
    alpha: float = 0.05,
    correction: Correction = "bh",
    min_count: int = 100,
    min_bins: int = 2,
    level: float = 0.95,
) -> Frame:
    """ECE noise floor, p-values of perfect calibration, direction and verdict per group.

    The exact distribution, per group, of the ECE that a perfectly calibrated model with
    the same confidences and bins would show (module docstring), from the bin-statistics
    table alone, and the test of the observed ECE against it corrected across the groups
    of the table: costs groups × bins × grid cells, not rows; no draws.

    Parameters
    ----------
    stats
        A bin-statistics table (:func:`~calib_frames.bin_statistics`); lazy in, lazy out.
        Every group of it is one test of the correction.
    alpha
        Significance level of ``ece_beyond_noise`` and the verdict (in (0, 1)), applied
        to the adjusted p-values.
    correction
        ``"bh"`` (Benjamini–Hochberg, default), ``"holm"`` or ``"none"``: how the p-values
        of the table's tested groups are adjusted (module docstring says why BH).
    min_count, min_bins
        A group is tested with at least ``min_count`` predictions (its total weight) and
        ``min_bins`` populated bins (below them the verdict says so).
    level
        Quantile of the ECE under H₀ reported as ``ece_noise_floor`` (in (0, 1)).

    Returns
    -------
    DataFrame or LazyFrame
        keys…, then the columns of :data:`calib_frames.schema.NOISE_FLOOR`: ``count``,
        ``weight``, ``populated_bins``, ``ece``, ``ece_direction``, ``ece_null_mean``,
        ``ece_noise_floor``, ``ece_p_value``, ``ece_p_adjusted``, ``ece_beyond_noise``
        (True = distinguishably miscalibrated) and ``verdict``; one row per group, sorted
        by the keys. A group whose weights sum to 0 has null ECE, noise floor, p-values
        and direction, ``ece_beyond_noise`` False and the verdict ``"no weight"``.

    Raises
    ------
    TableError
        If ``stats`` is not a complete bin-statistics table.
    ArgumentError
        For bad ``level``, ``alpha``, ``correction``, ``min_count``, ``min_bins``.

    See Also
    --------
    calibration_noise_floor : the same from predictions.
    calib_frames.estimators.adjust_p_values : the corrections.

    Examples
    --------
    A model whose 90%-confidence answers are right 75% of the time, and whose
    70%-confidence answers are right 70% of the time (100 of each):

    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.9] * 100 + [0.7] * 100,
    ...                    "correct": [1] * 75 + [0] * 25 + [1] * 70 + [0] * 30})
    >>> t = noise_floor_from_bin_statistics(cf.bin_statistics(df))
    >>> t.select(pl.col("ece").round(6), pl.col("ece_p_value").round(3), "ece_direction").rows()
    [(0.075, 0.013, 'over')]
    >>> t["verdict"].item()
    'overconfident, adjusted p = 0.013'
    >>> round(t["ece_noise_floor"].item(), 2)  # what a calibrated model could show
    0.06
    """
    lazy = as_lazy(stats)
    schema = lazy.collect_schema()
    keys: list[str] = BIN_STATISTICS.keys(schema)
    require_columns(schema, {}, keys=keys, reserved=NOISE_FLOOR.names)
    out_schema: dict[str, pl.DataType] = {k: schema[k] for k in keys}
    out_schema.update(NOISE_FLOOR.columns)
    floor = partial(
        _noise_floor,
        keys=keys,
        rules=_Rules(alpha, correction, min_count, min_bins, level),
    )
    result = lazy.select(*keys, *BIN_STATISTICS.names).map_batches(floor, schema=out_schema)
    return return_like(stats, result)


@dataclass(frozen=True)
class _Rules:
    """The arguments of the test (those of :func:`noise_floor_from_bin_statistics`)."""

    alpha: float
    correction: Correction
    min_count: int
    min_bins: int
    level: float


def _noise_floor(
    frame: pl.DataFrame, *, keys: list[str], rules: _Rules, null: NullDistribution | None = None
) -> pl.DataFrame:
    """The noise-floor table of one collected bin-statistics table (module docstring)."""
    frame = frame.sort([*keys, "bin"], nulls_last=True)
    if frame.height == 0:
        empty = {name: pl.Series(name, [], dtype=d) for name, d in NOISE_FLOOR.columns.items()}
        return frame.select(keys).with_columns(**empty)
    arrays = bin_arrays(frame, keys)
    null = null_distribution(arrays) if null is None else null
    # the observed ECE and the counts: metric_expressions, as every table
    observed = metrics_from_bin_statistics(frame)
    code, edge = _direction(arrays)
    table = observed.with_columns(
        pl.Series("ece_null_mean", null.mean),
        pl.Series("ece_noise_floor", null.quantile(rules.level)),
        pl.Series(_RAW, null.p_value),
        pl.Series(_CODE, code, nan_to_null=True),
        pl.Series(_EDGE, edge, nan_to_null=True),
    ).with_columns(pl.col("ece_null_mean", "ece_noise_floor", _RAW).fill_nan(None))
    has_weight = pl.col("weight") > 0
    tested = (
        has_weight
        & (pl.col("weight") >= rules.min_count)
        & (pl.col("populated_bins") >= rules.min_bins)
    )
    table = table.with_columns(
        pl.col(_RAW).alias("ece_p_value"),
        pl.when(tested).then(pl.col(_RAW)).alias(_TESTED),
    )
    if rules.correction == "none":
        table = table.with_columns(pl.col(_TESTED).alias("ece_p_adjusted"))
    else:
        adjusted = adjust_p_values(
            table, p_value=_TESTED, method=rules.correction, output="ece_p_adjusted"
        )
        assert isinstance(adjusted, pl.DataFrame)
        table = adjusted
    beyond = (pl.col("ece_p_adjusted") <= rules.alpha).fill_null(False)
    return (
        table.with_columns(ece_beyond_noise=beyond)
        .with_columns(ece_direction=pl.when("ece_beyond_noise").then(_DIRECTION_NAMES))
        .with_columns(verdict=_verdict(rules))
        .select(*keys, *NOISE_FLOOR.names)
    )


def _direction(arrays: BinArrays) -> tuple[np.ndarray, np.ndarray]:
    """Per group a direction code and, for a mixed one split at an edge, that edge.

    Codes: 0 over, 1 under, 2 mixed (over above the edge), 3 mixed (under above), 4
    mixed (alternating), NaN none (no weight or no gap). The rule is the module
    docstring's.
    """
    gap = arrays.excess * (arrays.weight > 0)  # W_b(p̄_b − ȳ_b)
    over, under = np.maximum(gap, 0.0), np.maximum(-gap, 0.0)
    mass = over.sum(axis=1) + under.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = over.sum(axis=1) / mass
    # split before bin t (t = 1 … B − 1): over above and under below, or the reverse
    over_below = np.cumsum(over, axis=1)[:, :-1]
    under_below = np.cumsum(under, axis=1)[:, :-1]
    over_above = over.sum(axis=1, keepdims=True) - over_below
    under_above = under.sum(axis=1, keepdims=True) - under_below
    scores = np.stack([over_above + under_below, under_above + over_below], axis=1)
    groups, _, splits = scores.shape
    edge = np.full(groups, np.nan)
    code = np.full(groups, np.nan)
    if splits > 0:
        flat = scores.reshape(groups, -1)
        # the last of equal scores: the edge of the first populated bin above the split
        best = flat.shape[1] - 1 - np.argmax(flat[:, ::-1], axis=1)
        orientation, split = np.divmod(best, splits)
        held = flat[np.arange(groups), best]
        edge = arrays.lower[np.arange(groups), split + 1]
        code = np.where(held >= DIRECTION_SHARE * mass, 2.0 + orientation, 4.0)
    code = np.where(
        share >= DIRECTION_SHARE, 0.0, np.where(share <= 1 - DIRECTION_SHARE, 1.0, code)
    )
    code = np.where(mass > 0, code, np.nan)
    return code, np.where(np.isin(code, (2.0, 3.0)), edge, np.nan)


_DIRECTION_NAMES = (
    pl.when(pl.col(_CODE) == 0)
    .then(pl.lit("over"))
    .when(pl.col(_CODE) == 1)
    .then(pl.lit("under"))
    .when(pl.col(_CODE) >= 2)
    .then(pl.lit("mixed"))
)
"""``ece_direction`` from the direction code of :func:`_direction`."""


def _verdict(rules: _Rules) -> pl.Expr:
    """The verdict in words (module docstring)."""
    adjusted = rules.correction != "none"
    shown = pl.col("ece_p_adjusted" if adjusted else "ece_p_value")
    at_floor = pl.col("ece_p_value") <= P_FLOOR
    number = shown.round_sig_figs(2).cast(pl.String)
    p = (
        pl.when(at_floor)
        .then(pl.lit("p < 1e-12"))
        .otherwise(pl.lit("adjusted p = " if adjusted else "p = ") + number)
    )
    edge = pl.col(_EDGE).round(3).cast(pl.String)
    direction = (
        pl.when(pl.col(_CODE) == 0)
        .then(pl.lit("overconfident"))
        .when(pl.col(_CODE) == 1)
        .then(pl.lit("underconfident"))
        .when(pl.col(_CODE) == 2)
        .then(pl.lit("mixed: overconfident above ") + edge + pl.lit(", underconfident below"))
        .when(pl.col(_CODE) == 3)
        .then(pl.lit("mixed: underconfident above ") + edge + pl.lit(", overconfident below"))
        .otherwise(pl.lit("mixed: over- and underconfident bins alternate"))
    )
    return (
        pl.when(~(pl.col("weight") > 0))
        .then(pl.lit("no weight"))
        .when(pl.col("weight") < rules.min_count)
        .then(pl.lit("too few predictions"))
        .when(pl.col("populated_bins") < rules.min_bins)
        .then(pl.lit("one populated bin"))
        .when(pl.col("ece_beyond_noise"))
        .then(direction + pl.lit(", ") + p)
        .otherwise(pl.lit("within noise, ") + p)
    )


@check_arguments(bins=BINS, **_FLOOR, level=LEVEL)
def calibration_noise_floor(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    alpha: float = 0.05,
    correction: Correction = "bh",
    min_count: int = 100,
    min_bins: int = 2,
    level: float = 0.95,
) -> Frame:
    """ECE noise floor, p-values, direction and verdict per group, from predictions.

    :func:`noise_floor_from_bin_statistics` of :func:`~calib_frames.bin_statistics`
    (one pass over the rows).

    Parameters
    ----------
    predictions, confidence, correct, by, bins, weight
        As for :func:`~calib_frames.bin_statistics` (weights are frequencies).
    alpha, correction, min_count, min_bins, level
        As for :func:`noise_floor_from_bin_statistics`.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, then the columns of :data:`calib_frames.schema.NOISE_FLOOR`.

    Raises
    ------
    TableError, DataError, ArgumentError
        As the two functions it combines.

    Examples
    --------
    A calibrated model: outcomes drawn with the stated probabilities.

    >>> import numpy as np
    >>> import polars as pl
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1.0, 2000)
    >>> df = pl.DataFrame({"confidence": p, "correct": rng.random(2000) < p})
    >>> t = calibration_noise_floor(df)
    >>> bool(t["ece"].item() < t["ece_noise_floor"].item()), t["ece_beyond_noise"].item()
    (True, False)
    >>> t["verdict"].item().startswith("within noise")
    True
    """
    stats = bin_statistics(
        as_lazy(predictions),
        confidence=confidence,
        correct=correct,
        by=by,
        bins=bins,
        weight=weight,
    )
    table = noise_floor_from_bin_statistics(
        stats,
        alpha=alpha,
        correction=correction,
        min_count=min_count,
        min_bins=min_bins,
        level=level,
    )
    return return_like(predictions, table)


@check_arguments(**_FLOOR, **RESAMPLING)
def uncertainty_from_bin_statistics(
    stats: Frame,
    *,
    alpha: float = 0.05,
    correction: Correction = "bh",
    min_count: int = 100,
    min_bins: int = 2,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """Every uncertainty column of a metrics table, per group, from one bin-statistics table.

    The intervals of :func:`~calib_frames.estimators.bootstrap.intervals_from_bin_statistics`
    (the bootstrap's, and the ECE's test inversion) joined with the noise floor of
    :func:`noise_floor_from_bin_statistics`: the columns a report adds to
    :func:`~calib_frames.metrics_from_bin_statistics` (join on the keys). The null
    distribution of the ECE is computed once for both; it runs in a second thread while
    the bootstrap draws (the same numbers as one after the other).

    Parameters
    ----------
    stats
        A bin-statistics table; lazy in, lazy out. Pass a collected (or cached) table
        when it is lazy and also reduced elsewhere, so that the row pass runs once.
    alpha, correction, min_count, min_bins
        As for :func:`noise_floor_from_bin_statistics`.
    replicates
        Bootstrap replicates (the noise floor draws none).
    level
        The intervals' level, and the quantile reported as ``ece_noise_floor``.
    seed
        Seed of the bootstrap.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, ``<metric>_ci_low/high`` for each metric of
        :data:`~calib_frames.estimators.bootstrap.CI_METRICS`, then ``ece_direction``,
        ``ece_null_mean``, ``ece_noise_floor``, ``ece_p_value``, ``ece_p_adjusted``,
        ``ece_beyond_noise``, ``verdict``; one row per group.

    Raises
    ------
    TableError, ArgumentError
        As the two functions it joins.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"model": ["a", "b"] * 100, "confidence": [0.8, 0.9] * 100,
    ...                    "correct": [True, False, True, True] * 50})
    >>> stats = cf.bin_statistics(df, by="model")
    >>> table = cf.metrics_from_bin_statistics(stats).join(
    ...     uncertainty_from_bin_statistics(stats), on="model")
    >>> table.select("model", "ece", "ece_noise_floor", "verdict").height
    2
    """
    lazy = as_lazy(stats)
    keys: list[str] = BIN_STATISTICS.keys(lazy.collect_schema())
    # the argument checks and the output schema, now (lazy: nothing runs)
    noise = partial(
        noise_floor_from_bin_statistics,
        alpha=alpha,
        correction=correction,
        min_count=min_count,
        min_bins=min_bins,
        level=level,
    )
    noise_schema = noise(lazy).collect_schema()
    schema: dict[str, pl.DataType] = {k: noise_schema[k] for k in keys}
    schema.update({f"{m}_ci_{side}": pl.Float64() for m in CI_METRICS for side in ("low", "high")})
    schema.update({name: noise_schema[name] for name in UNCERTAINTY_NOISE_COLUMNS})
    rules = _Rules(alpha, correction, min_count, min_bins, level)

    def both(frame: pl.DataFrame) -> pl.DataFrame:
        frame = frame.sort([*keys, "bin"], nulls_last=True)

        def exact() -> tuple[pl.DataFrame, pl.DataFrame]:
            """The null distribution once: the noise floor and the ECE interval."""
            null = null_distribution(bin_arrays(frame, keys)) if frame.height else None
            table = _noise_floor(frame, keys=keys, rules=rules, null=null)
            p_value = None if null is None else null.p_value
            return table, ece_interval_table(frame, keys, level, p_value)

        # numpy and the bootstrap's polars query both release the GIL
        with ThreadPoolExecutor(max_workers=1) as pool:
            done = pool.submit(exact)
            drawn = bootstrap_bounds(frame, keys, replicates=replicates, level=level, seed=seed)
            table, ece = done.result()
        assert isinstance(drawn, pl.DataFrame)
        bounds = _joined(drawn, ece, keys)
        out = _joined(bounds, table.select(*keys, *UNCERTAINTY_NOISE_COLUMNS), keys)
        return out.select(*schema)

    return return_like(stats, lazy.map_batches(both, schema=schema))


def _joined(left: pl.DataFrame, right: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The columns of two per-group tables side by side (the same groups, sorted)."""
    if not keys:
        return pl.concat([left, right], how="horizontal")
    return left.join(right, on=keys, how="left", nulls_equal=True, maintain_order="left")
