r"""Noise floor of the ECE and a test of perfect calibration, per group, from bin statistics.

What is estimated
-----------------
Even a perfectly calibrated model has a positive ECE on a finite sample: its outcomes
are coin flips. Under the hypothesis H₀ that the model is perfectly calibrated, each
outcome is y_i ~ Bernoulli(p_i) independently, for *these very confidences* p_i
("consistency resampling", Bröcker & Smith 2007). With the bins fixed, bin b's number of
correct predictions C_b then has

    E[C_b] = Σ_{i∈b} p_i = μ_b        Var[C_b] = Σ_{i∈b} p_i (1 − p_i) = V_b

and the ECE under H₀ is Σ_b |C_b − μ_b| / N. Both μ_b and V_b follow from the sums the
bin-statistics table already holds (no new column): μ_b is the bin's confidence sum
(``sum_confidence_correct + sum_residual_wrong``) and, because p(1 − p) = r − r² for the
residual r = |p − y| of either class,

    V_b = (sum_residual_correct − sum_sq_residual_correct)
        + (sum_residual_wrong − sum_sq_residual_wrong).

C_b is a sum of independent Bernoullis with unequal p (Poisson-binomial). It is drawn as
the binomial with the *same mean and variance*: n′ = round(μ_b² / (μ_b − V_b)) trials of
probability μ_b / n′ (n′ ≤ n_b; n′ = n_b and p̄ when all confidences of the bin are
equal). Unlike a normal approximation this keeps the discreteness that dominates small
bins. ``tests/estimators/test_noise.py`` compares the resulting distribution with the
exact Bernoulli resampling of rows.

Per group and replicate the ECE under H₀ is computed from the draws; then

* ``ece_noise_floor``: the ``level`` quantile (default 95th percentile) of the ECE under
  H₀: an ECE below it is indistinguishable from a calibrated model's noise;
* ``ece_null_mean``: its mean, the ECE that a calibrated model would show on average;
* ``ece_p_value``: the Monte-Carlo p-value (1 + #{ECE₀ ≥ ECE}) / (1 + replicates) of the
  observed ECE under H₀ (one-sided: large ECE is evidence of miscalibration; never 0);
* ``ece_beyond_noise``: ``count ≥ min_count`` and ``populated_bins ≥ min_bins`` and
  ``ece_p_value ≤ alpha``, i.e. enough predictions, more than one occupied bin, and an
  ECE that exceeds the noise of a calibrated model: True means *distinguishably
  miscalibrated*. False means: do not read this ECE as evidence of miscalibration (too
  little data, or within the noise). This column was called ``reportable`` until
  0.1; the name said the opposite of what a reader took it for (a well calibrated
  model was "not reportable"), and it is gone, not aliased;
* ``verdict``: the same in words: ``"too few predictions"`` (fewer than ``min_count``,
  or no weight), ``"one populated bin"`` (fewer than ``min_bins``), ``"overconfident,
  p = 0.001"`` or ``"underconfident, p = 0.02"`` (beyond the noise; the direction is the
  sign of ``mean_confidence − accuracy``, the p-value to two significant digits), or
  ``"within noise, p = 0.41"``.

**Weights.** With a weight column the sums are weighted: μ_b = Σwp and V_b = Σwp(1−p).
The draw is made in rows (n_b rows of mean weight W_b/n_b) and scaled by the mean
weight, which is exact when the weights are equal within a bin.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
import polars as pl

from calib_frames.binning import BinsLike
from calib_frames.estimators.bootstrap import (
    _grid_shape,
    check_memory,
    check_replicates,
    check_seed,
    intervals_from_bin_statistics,
)
from calib_frames.estimators.intervals import check_level
from calib_frames.exceptions import ArgumentError
from calib_frames.schema import BIN_STATISTICS
from calib_frames.stats import bin_statistics
from calib_frames.validation import Frame, as_lazy, require_columns, return_like

__all__ = [
    "NOISE_COLUMNS",
    "calibration_noise_floor",
    "noise_floor_from_bin_statistics",
    "uncertainty_from_bin_statistics",
]

_BYTES_PER_NULL_CELL = 96  # per drawn cell: the int64 draws and a few float64 arrays

NOISE_COLUMNS = (
    "ece",
    "ece_null_mean",
    "ece_noise_floor",
    "ece_p_value",
    "ece_beyond_noise",
    "verdict",
)
"""Columns after the keys in the noise-floor table."""

VERDICTS = ("too few predictions", "one populated bin", "overconfident", "underconfident")
"""How a verdict starts, besides ``"within noise"`` (module docstring)."""


def noise_floor_from_bin_statistics(
    stats: Frame,
    *,
    alpha: float = 0.05,
    min_count: int = 100,
    min_bins: int = 2,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """ECE noise floor, p-value of perfect calibration and a verdict in words per group.

    Estimates, per group, the distribution of the ECE that a perfectly calibrated model
    with the same confidences and bins would show (module docstring), from the
    bin-statistics table alone: costs groups × bins × replicates, not rows.

    Parameters
    ----------
    stats
        A bin-statistics table (:func:`~calib_frames.bin_statistics`); lazy in, lazy out.
    alpha
        Significance level of ``ece_beyond_noise`` and the verdict (in (0, 1)).
    min_count, min_bins
        ``ece_beyond_noise`` also needs at least ``min_count`` predictions and
        ``min_bins`` populated bins (below them the verdict says so).
    replicates
        Draws of the outcomes under H₀ (≥ 1; the smallest p-value is 1/(1 + replicates)).
    level
        Quantile of the ECE under H₀ reported as ``ece_noise_floor`` (in (0, 1)).
    seed
        Seed (≥ 0); the same seed gives the same draws.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, ``count`` (UInt64), ``populated_bins`` (UInt32), ``ece``,
        ``ece_null_mean``, ``ece_noise_floor``, ``ece_p_value`` (Float64),
        ``ece_beyond_noise`` (Boolean: True = distinguishably miscalibrated) and
        ``verdict`` (String); one row per group, sorted by the keys. Groups without
        weight get null p-value and noise floor, ``ece_beyond_noise`` False and the
        verdict ``"too few predictions"``.

    Raises
    ------
    TableError
        If ``stats`` is not a complete bin-statistics table.
    ArgumentError
        For bad ``replicates``, ``level``, ``alpha``, ``min_count``, ``min_bins``, ``seed``.

    See Also
    --------
    calibration_noise_floor : the same from predictions.

    Examples
    --------
    A model whose 90%-confidence answers are right only 60% of the time, and whose
    70%-confidence answers are right 70% of the time:

    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame(
    ...     {"confidence": [0.9] * 100 + [0.7] * 100, "correct": [1, 0] * 50 + [1] * 70 + [0] * 30}
    ... )
    >>> t = noise_floor_from_bin_statistics(cf.bin_statistics(df))
    >>> t.select(pl.col("ece").round(6), "ece_p_value", "ece_beyond_noise").rows()
    [(0.2, 0.000999000999000999, True)]
    >>> t["verdict"].item()
    'overconfident, p = 0.001'
    >>> round(t["ece_noise_floor"].item(), 2)  # what a calibrated model could show
    0.06
    """
    check_replicates(replicates)
    check_level(level)
    check_level(alpha)
    check_seed(seed)
    for name, value in (("min_count", min_count), ("min_bins", min_bins)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ArgumentError(f"{name} must be an integer >= 0, got {value!r}")
    lazy = as_lazy(stats)
    schema = lazy.collect_schema()
    keys: list[str] = BIN_STATISTICS.keys(schema)
    require_columns(schema, {}, keys=keys, reserved=(*NOISE_COLUMNS, "count", "populated_bins"))
    out_schema: dict[str, pl.DataType] = {k: schema[k] for k in keys}
    out_schema.update(_OUT)
    draw = partial(
        _null_ece,
        keys=keys,
        replicates=replicates,
        level=level,
        alpha=alpha,
        rules=(min_count, min_bins),
        seed=seed,
    )
    result = lazy.select(*keys, *BIN_STATISTICS.names).map_batches(draw, schema=out_schema)
    return return_like(stats, result)


def _null_ece(
    frame: pl.DataFrame,
    *,
    keys: list[str],
    replicates: int,
    level: float,
    alpha: float,
    rules: tuple[int, int],
    seed: int,
) -> pl.DataFrame:
    frame = frame.sort([*keys, "bin"], nulls_last=True)
    if frame.height == 0:
        empty = {name: pl.Series(name, [], dtype=dtype) for name, dtype in _OUT.items()}
        return frame.select(keys).with_columns(**empty)
    groups, bins = _grid_shape(frame, keys)
    # the null ECEs (groups × replicates float64, and the comparison with the ECE) plus one
    # block of draws (at least one group's replicates × bins cells)
    check_memory(
        groups * replicates * 16 + max(_BLOCK_CELLS, replicates * bins) * _BYTES_PER_NULL_CELL,
        1,
        f"bytes for {groups:,} groups × {bins:,} bins × {replicates:,} replicates",
    )

    def col(name: str) -> np.ndarray:
        return frame[name].cast(pl.Float64).to_numpy().reshape(groups, bins)

    count, weight = col("count"), col("weight")
    r1, q1 = col("sum_residual_correct"), col("sum_sq_residual_correct")
    r0, q0 = col("sum_residual_wrong"), col("sum_sq_residual_wrong")
    mu = col("sum_confidence_correct") + r0  # Σ w p
    var = np.maximum((r1 - q1) + (r0 - q0), 0.0)  # Σ w p (1 − p)
    gap = np.abs(r0 - r1)  # W_b |p̄_b − ȳ_b|
    total = weight.sum(axis=1)
    # in rows of the bin's mean weight
    row_weight = np.divide(weight, count, out=np.zeros_like(weight), where=count > 0)
    mu_rows = np.divide(mu, row_weight, out=np.zeros_like(mu), where=row_weight > 0)
    var_rows = np.divide(var, row_weight, out=np.zeros_like(var), where=row_weight > 0)
    var_rows = np.minimum(var_rows, mu_rows)
    # binomial with the same mean and variance: n' = μ²/(μ − V), p' = μ/n'
    spread = mu_rows - var_rows
    trials = np.where(
        spread > 0,
        np.rint(np.divide(mu_rows**2, spread, out=np.zeros_like(mu), where=spread > 0)),
        0,
    )
    trials = np.where(mu_rows > 0, np.maximum(np.minimum(trials, count), 1.0), 0.0)
    prob = np.clip(np.divide(mu_rows, trials, out=np.zeros_like(mu), where=trials > 0), 0.0, 1.0)
    rng = np.random.default_rng(seed)
    has_weight = total > 0
    safe_total = np.where(has_weight, total, 1.0)
    # in blocks of groups, so that memory stays bounded whatever the number of groups; one
    # generator drawn block after block gives the draws of one call over all the groups
    null_ece = np.empty((groups, replicates))
    step = max(1, _BLOCK_CELLS // (replicates * bins))
    for start in range(0, groups, step):
        part = slice(start, start + step)
        n, q = trials[part], prob[part]
        drawn = rng.binomial(
            n.astype(np.int64)[:, None, :], q[:, None, :], (len(n), replicates, bins)
        )
        deviation = np.abs(drawn - (n * q)[:, None, :]) * row_weight[part][:, None, :]
        null_ece[part] = deviation.sum(axis=2) / safe_total[part][:, None]
    ece = gap.sum(axis=1) / safe_total
    exceed = (null_ece >= ece[:, None] - 1e-12 * np.maximum(ece[:, None], 1e-300)).sum(axis=1)
    p_value = (1.0 + exceed) / (1.0 + replicates)
    floor = np.quantile(null_ece, level, axis=1)
    populated = (weight > 0).sum(axis=1)
    n_rows = count.sum(axis=1)
    min_count, min_bins = rules
    enough = has_weight & (n_rows >= min_count)
    beyond = enough & (populated >= min_bins) & (p_value <= alpha)
    nan = np.full(groups, np.nan)
    columns = {
        "count": pl.Series(n_rows).cast(pl.UInt64),
        "populated_bins": pl.Series(populated).cast(pl.UInt32),
        "ece": pl.Series(np.where(has_weight, ece, 0.0)),
        "ece_null_mean": pl.Series(np.where(has_weight, null_ece.mean(axis=1), nan)),
        "ece_noise_floor": pl.Series(np.where(has_weight, floor, nan)),
        "ece_p_value": pl.Series(np.where(has_weight, p_value, nan)),
        "ece_beyond_noise": pl.Series(beyond),
        "_enough": pl.Series(enough),
        "_one_bin": pl.Series(populated < min_bins),
        "_over": pl.Series((r0 - r1).sum(axis=1) > 0),
    }
    firsts = frame.select(keys).gather(np.arange(groups) * bins) if keys else pl.DataFrame()
    out = (
        pl.DataFrame([s.alias(n) for n, s in columns.items()])
        .with_columns(pl.col("ece_null_mean", "ece_noise_floor", "ece_p_value").fill_nan(None))
        .with_columns(verdict=_verdict())
        .drop("_enough", "_one_bin", "_over")
    )
    return pl.concat([firsts, out], how="horizontal") if keys else out


def _verdict() -> pl.Expr:
    """The verdict in words (module docstring) from the working columns of ``_null_ece``."""
    p = pl.lit("p = ") + pl.col("ece_p_value").round_sig_figs(2).cast(pl.String)
    direction = (
        pl.when(pl.col("_over"))
        .then(pl.lit("overconfident, "))
        .otherwise(pl.lit("underconfident, "))
    )
    return (
        pl.when(~pl.col("_enough"))
        .then(pl.lit("too few predictions"))
        .when(pl.col("_one_bin"))
        .then(pl.lit("one populated bin"))
        .when(pl.col("ece_beyond_noise"))
        .then(direction + p)
        .otherwise(pl.lit("within noise, ") + p)
    )


_BLOCK_CELLS = 2**22
"""Draws held at once by the noise floor (groups × replicates × bins; 32 MiB of int64)."""

_OUT: dict[str, pl.DataType] = {
    "count": pl.UInt64(),
    "populated_bins": pl.UInt32(),
    **{name: pl.Float64() for name in NOISE_COLUMNS[:4]},
    "ece_beyond_noise": pl.Boolean(),
    "verdict": pl.String(),
}


def calibration_noise_floor(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    alpha: float = 0.05,
    min_count: int = 100,
    min_bins: int = 2,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """ECE noise floor, p-value and verdict per group, from predictions.

    :func:`noise_floor_from_bin_statistics` of :func:`~calib_frames.bin_statistics`
    (one pass over the rows).

    Parameters
    ----------
    predictions, confidence, correct, by, bins, weight
        As for :func:`~calib_frames.bin_statistics`.
    alpha, min_count, min_bins, replicates, level, seed
        As for :func:`noise_floor_from_bin_statistics`.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, ``count``, ``populated_bins``, ``ece``, ``ece_null_mean``,
        ``ece_noise_floor``, ``ece_p_value``, ``ece_beyond_noise``, ``verdict``.

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
        replicates=replicates,
        level=level,
        alpha=alpha,
        min_count=min_count,
        min_bins=min_bins,
        seed=seed,
    )
    return return_like(predictions, table)


def uncertainty_from_bin_statistics(
    stats: Frame,
    *,
    alpha: float = 0.05,
    min_count: int = 100,
    min_bins: int = 2,
    noise_replicates: int = 1000,
    noise_level: float = 0.95,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """Every uncertainty column of a metrics table, per group, from one bin-statistics table.

    The bootstrap intervals of :func:`~calib_frames.estimators.bootstrap.
    intervals_from_bin_statistics` joined with the noise floor of
    :func:`noise_floor_from_bin_statistics`: the columns a report adds to
    :func:`~calib_frames.metrics_from_bin_statistics` (join on the keys). Costs groups ×
    bins × (replicates + noise_replicates), not rows; the two run at the same time, in
    two threads (the same numbers as one after the other).

    Parameters
    ----------
    stats
        A bin-statistics table; lazy in, lazy out. Pass a collected (or cached) table
        when it is lazy and also reduced elsewhere, so that the row pass runs once.
    alpha, min_count, min_bins, noise_replicates, noise_level
        ``alpha``, ``min_count``, ``min_bins``, ``replicates``, ``level`` of
        :func:`noise_floor_from_bin_statistics`.
    replicates, level
        Bootstrap replicates and interval level.
    seed
        Seed of both draws.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, ``<metric>_ci_low/high`` for each metric of
        :data:`~calib_frames.estimators.bootstrap.CI_METRICS`, then ``ece_null_mean``,
        ``ece_noise_floor``, ``ece_p_value``, ``ece_beyond_noise``, ``verdict``; one row
        per group.

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
    intervals = partial(
        intervals_from_bin_statistics, replicates=replicates, level=level, seed=seed
    )
    noise = partial(
        noise_floor_from_bin_statistics,
        replicates=noise_replicates,
        level=noise_level,
        alpha=alpha,
        min_count=min_count,
        min_bins=min_bins,
        seed=seed + 1,
    )
    # the argument checks and the output schema, now (lazy: nothing runs)
    schema = dict(intervals(lazy).collect_schema())
    noise_schema = noise(lazy).collect_schema()
    schema.update({name: noise_schema[name] for name in NOISE_COLUMNS[1:]})

    def both(frame: pl.DataFrame) -> pl.DataFrame:
        # the noise floor's draws run in a second thread while the bootstrap runs here:
        # numpy draws outside the GIL, and each keeps its own generator and order
        with ThreadPoolExecutor(max_workers=1) as pool:
            floor = pool.submit(noise, frame)
            bounds = intervals(frame)
            drawn = floor.result().select(*keys, *NOISE_COLUMNS[1:])
        assert isinstance(bounds, pl.DataFrame) and isinstance(drawn, pl.DataFrame)
        if not keys:
            return pl.concat([bounds, drawn], how="horizontal")
        return bounds.join(drawn, on=keys, how="left", nulls_equal=True).sort(keys, nulls_last=True)

    return return_like(stats, lazy.map_batches(both, schema=schema))
