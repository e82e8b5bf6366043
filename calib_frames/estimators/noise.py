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

A drawn table keeps every bin's rows, weights and confidences and redraws the weight of
its correct rows, W¹*_b = C_b·W_b/n_b. Per group and replicate its ECE, Σ_b |μ_b − W¹*_b| / N
(N = Σ_b W_b), is a vectorised numpy reduction over groups × replicates × bins: the ECE
formula of :func:`~calib_frames.metrics.calibration.metric_expressions`, equal to
:func:`~calib_frames.metrics_from_bin_statistics` of the drawn table (the tests check it
on drawn tables) without building those tables in polars. The observed ECE, its
direction and the counts come from :func:`~calib_frames.metrics_from_bin_statistics`
itself. Then

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
  sign of ``overconfidence`` = mean_confidence − accuracy, the p-value to two
  significant digits), or
  ``"within noise, p = 0.41"``.

**Weights.** With a weight column the sums are weighted: μ_b = Σwp and V_b = Σwp(1−p).
The draw is made in rows (n_b rows of mean weight W_b/n_b) and scaled by the mean
weight, which is exact when the weights are equal within a bin.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
import polars as pl

from calib_frames.arguments import LEVEL, REPLICATES, RESAMPLING, Integer, check_arguments
from calib_frames.binning import BINS, BinsLike
from calib_frames.estimators.bootstrap import _grid_shape, intervals_from_bin_statistics
from calib_frames.metrics.calibration import metrics_from_bin_statistics
from calib_frames.schema import BIN_STATISTICS, METRICS, NOISE_FLOOR
from calib_frames.stats import bin_statistics
from calib_frames.validation import (
    Frame,
    as_lazy,
    check_memory,
    require_columns,
    return_like,
)

__all__ = [
    "calibration_noise_floor",
    "noise_floor_from_bin_statistics",
    "uncertainty_from_bin_statistics",
]

_BYTES_PER_NULL_CELL = 96  # per drawn cell: the int64 draws and a few float64 arrays

_BLOCK_CELLS = 2**22
"""Draws held at once by the noise floor (groups × replicates × bins; 32 MiB of int64)."""

VERDICTS = ("too few predictions", "one populated bin", "overconfident", "underconfident")
"""How a verdict starts, besides ``"within noise"`` (module docstring)."""

UNCERTAINTY_NOISE_COLUMNS = tuple(c for c in NOISE_FLOOR.names if c not in METRICS.columns)
"""The noise-floor columns that :func:`uncertainty_from_bin_statistics` adds (the others,
``count``, ``populated_bins`` and ``ece``, are columns of the metrics table already)."""


_FLOOR = {"alpha": LEVEL, "min_count": Integer(0), "min_bins": Integer(0)}


@check_arguments(**_FLOOR, **RESAMPLING)
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
        keys…, then the columns of :data:`calib_frames.schema.NOISE_FLOOR`: ``count``
        (UInt64), ``populated_bins`` (UInt32), ``ece``, ``ece_null_mean``,
        ``ece_noise_floor``, ``ece_p_value`` (Float64), ``ece_beyond_noise`` (Boolean:
        True = distinguishably miscalibrated) and ``verdict`` (String); one row per
        group, sorted by the keys. Groups without weight get null p-value and noise
        floor, ``ece_beyond_noise`` False and the verdict ``"too few predictions"``.

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
    lazy = as_lazy(stats)
    schema = lazy.collect_schema()
    keys: list[str] = BIN_STATISTICS.keys(schema)
    require_columns(schema, {}, keys=keys, reserved=NOISE_FLOOR.names)
    out_schema: dict[str, pl.DataType] = {k: schema[k] for k in keys}
    out_schema.update(NOISE_FLOOR.columns)
    floor = partial(
        _noise_floor,
        keys=keys,
        replicates=replicates,
        level=level,
        alpha=alpha,
        rules=(min_count, min_bins),
        seed=seed,
    )
    result = lazy.select(*keys, *BIN_STATISTICS.names).map_batches(floor, schema=out_schema)
    return return_like(stats, result)


def _noise_floor(
    frame: pl.DataFrame,
    *,
    keys: list[str],
    replicates: int,
    level: float,
    alpha: float,
    rules: tuple[int, int],
    seed: int,
) -> pl.DataFrame:
    """The noise-floor table of one collected bin-statistics table (module docstring)."""
    frame = frame.sort([*keys, "bin"], nulls_last=True)
    if frame.height == 0:
        empty = {name: pl.Series(name, [], dtype=d) for name, d in NOISE_FLOOR.columns.items()}
        return frame.select(keys).with_columns(**empty)
    # the observed ECE, its direction and the counts: metric_expressions, as every table
    observed = metrics_from_bin_statistics(frame)
    ece = observed["ece"].to_numpy()
    null_ece = np.empty((observed.height, replicates))
    for part, drawn, expected, total in _null_draws(frame, keys, replicates, seed):
        null_ece[part] = _null_ece(drawn, expected, total)
    exceed = (null_ece >= ece[:, None] - 1e-12 * np.maximum(ece[:, None], 1e-300)).sum(axis=1)
    min_count, min_bins = rules
    has_weight = pl.col("weight") > 0
    drawn_columns = {
        "ece_null_mean": null_ece.mean(axis=1),
        "ece_noise_floor": np.quantile(null_ece, level, axis=1),
        "ece_p_value": (1.0 + exceed) / (1.0 + replicates),
    }
    table = observed.with_columns(
        pl.when(has_weight).then(pl.Series(name, values)).alias(name)
        for name, values in drawn_columns.items()
    )
    enough = has_weight & (pl.col("count") >= min_count)
    beyond = enough & (pl.col("populated_bins") >= min_bins) & (pl.col("ece_p_value") <= alpha)
    verdict = _verdict(enough=enough, one_bin=pl.col("populated_bins") < min_bins)
    return (
        table.with_columns(ece_beyond_noise=beyond.fill_null(False))
        .with_columns(verdict=verdict)
        .select(*keys, *NOISE_FLOOR.names)
    )


def _null_draws(
    frame: pl.DataFrame, keys: list[str], replicates: int, seed: int
) -> Iterator[tuple[slice, np.ndarray, np.ndarray, np.ndarray]]:
    """The drawn null tables, block by block of groups (module docstring).

    Yields (the block's groups, W¹* the drawn weight of the correct rows per (group,
    replicate, bin), Σwp per (group, 1, bin), the total weight per group): a drawn table
    keeps each bin's rows, weights and confidences and redraws its outcomes. Blocks bound
    the memory whatever the number of groups; one generator drawn block after block
    gives the draws of one call over all the groups.
    """
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
    total = weight.sum(axis=1)
    r1, q1 = col("sum_residual_correct"), col("sum_sq_residual_correct")
    r0, q0 = col("sum_residual_wrong"), col("sum_sq_residual_wrong")
    mu = col("sum_confidence_correct") + r0  # Σ w p
    var = np.maximum((r1 - q1) + (r0 - q0), 0.0)  # Σ w p (1 − p)
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
    step = max(1, _BLOCK_CELLS // (replicates * bins))
    for start in range(0, groups, step):
        part = slice(start, start + step)
        n, q = trials[part], prob[part]
        drawn = rng.binomial(
            n.astype(np.int64)[:, None, :], q[:, None, :], (len(n), replicates, bins)
        )
        yield part, drawn * row_weight[part][:, None, :], mu[part][:, None, :], total[part]


def _null_ece(drawn: np.ndarray, expected: np.ndarray, total: np.ndarray) -> np.ndarray:
    """The ECE of drawn null tables, Σ_b |Σwp_b − W¹*_b| / Σ_b W_b per (group, replicate).

    A vectorised numpy reduction of the ECE of
    :func:`~calib_frames.metrics.calibration.metric_expressions` (a bin's
    W_b·|p̄_b − ȳ_b| is |Σwp − W¹|; 0.0 for a group without weight): the same number as
    :func:`~calib_frames.metrics_from_bin_statistics` of the drawn table
    (``tests/estimators/test_noise.py`` checks it on drawn tables), without building the
    drawn tables, groups × replicates × bins rows, in polars (at a report's 2,000 groups ×
    1,000 replicates that costs far more than the draws themselves). ``drawn`` is W¹*
    per (group, replicate, bin), ``expected`` Σwp per (group, 1, bin), ``total`` the
    weight per group, which the draw leaves unchanged.
    """
    safe_total = np.where(total > 0, total, 1.0)
    out: np.ndarray = np.abs(expected - drawn).sum(axis=2) / safe_total[:, None]
    return out


def _verdict(*, enough: pl.Expr, one_bin: pl.Expr) -> pl.Expr:
    """The verdict in words (module docstring), its direction the sign of ``overconfidence``."""
    p = pl.lit("p = ") + pl.col("ece_p_value").round_sig_figs(2).cast(pl.String)
    direction = (
        pl.when(pl.col("overconfidence") > 0)
        .then(pl.lit("overconfident, "))
        .otherwise(pl.lit("underconfident, "))
    )
    return (
        pl.when(~enough)
        .then(pl.lit("too few predictions"))
        .when(one_bin)
        .then(pl.lit("one populated bin"))
        .when(pl.col("ece_beyond_noise"))
        .then(direction + p)
        .otherwise(pl.lit("within noise, ") + p)
    )


@check_arguments(bins=BINS, **_FLOOR, **RESAMPLING)
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


@check_arguments(**_FLOOR, noise_replicates=REPLICATES, noise_level=LEVEL, **RESAMPLING)
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
    schema.update({name: noise_schema[name] for name in UNCERTAINTY_NOISE_COLUMNS})

    def both(frame: pl.DataFrame) -> pl.DataFrame:
        # the noise floor's draws run in a second thread while the bootstrap runs here:
        # numpy draws outside the GIL, and each keeps its own generator and order
        with ThreadPoolExecutor(max_workers=1) as pool:
            floor = pool.submit(noise, frame)
            bounds = intervals(frame)
            drawn = floor.result().select(*keys, *UNCERTAINTY_NOISE_COLUMNS)
        assert isinstance(bounds, pl.DataFrame) and isinstance(drawn, pl.DataFrame)
        if not keys:
            return pl.concat([bounds, drawn], how="horizontal")
        return bounds.join(drawn, on=keys, how="left", nulls_equal=True).sort(keys, nulls_last=True)

    return return_like(stats, lazy.map_batches(both, schema=schema))
