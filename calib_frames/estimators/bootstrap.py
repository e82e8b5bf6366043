r"""Bootstrap confidence intervals per group for the calibration metrics and perplexity.

What is estimated
-----------------
For each group, the sampling distribution of every metric under the *nonparametric
bootstrap over predictions*: the group's N rows are drawn N times with replacement, the
metric is recomputed, and the ``level`` interval is the percentile interval
[q(α/2), q(1 − α/2)] of ``replicates`` such draws (α = 1 − level, linear interpolation
between order statistics). The interval describes how much the number would move if the
evaluation set were drawn again from the same population; it does not cover the error
of the binning itself.

Where the resampling happens (and why)
--------------------------------------
The binned metrics are reductions of the bin-statistics table, so a bootstrap replicate
only needs the *resampled bin statistics*, not the rows. Resampling N rows with
replacement puts a Multinomial(N, n_bc/N) number of rows n*_bc into each (bin b, outcome
class c) cell; :func:`bootstrap_bin_statistics` draws exactly these counts per replicate
and scales each cell's sums to them. The cost is groups × bins × replicates whatever the
number of rows, so it stays affordable on the report's 10⁸-row path (one pass for the bin
statistics, then milliseconds). The replicate table has the bin-statistics columns with a
``replicate`` key, and :func:`~calib_frames.metrics_from_bin_statistics` reduces it: the
math of the metrics stays in one place.

Per cell with n rows, weight W, residual sum R = Σwr and squared-residual sum Q = Σwr²
(r = 1 − p for correct rows, p for wrong rows; see :mod:`calib_frames.stats`), and mean
residual r̄ = R/W, within-cell variance s² = Q/W − r̄², a replicate with n* rows gets

* count n*, weight W* = W·n*/n (exact for counts and unweighted data; with weights it
  assumes the resampled rows carry the cell's mean weight, and the rows of each class,
  n₁ and n₀, are taken from an optional ``count_correct`` column or apportioned as
  count·W₁/W),
* R* = W*·r̄ + (W/n)·√n*·s·Z with Z ~ N(0, 1), clipped so that R*/W* stays inside the
  bin's residual range: the mean of n* rows drawn from the cell varies with variance
  s²/n* (the normal approximation of that mean is the one approximation here),
* Q* = R*²/W* + W*·s*², with the resampled spread s*² = s²·(1 − 1/n*)·(1 + √(κ/n*)·Z′),
  Z′ ~ N(0, 1), cut at 0: its bootstrap mean, and a relative spread that needs the fourth
  moment, which the table lacks; κ = μ₄/s⁴ − 1 = 0.8 is that of a uniform distribution
  within the cell (a fine approximation for continuous confidences in narrow bins),
* Σwp of the correct rows = W₁* − R₁*, and the log-loss sum scaled by n*/n.

So accuracy, mean confidence, ECE, RMSCE, MCE and the Brier terms see both sources of
variation: how many rows of each class land in each bin (exact), and how the mean
confidence within a cell moves (normal approximation, second moments exact). What is
approximate: the skewness of the within-cell mean in cells of a handful of rows, and the
variability of the within-cell spread (which only enters ``within_bin_variance`` and, at
second order, ``brier``) when the confidences in a cell are far from uniform (e.g. a few
repeated values: κ is then smaller and the interval somewhat too wide).
``tests/estimators/test_bootstrap.py`` compares the intervals with the exact row-level
bootstrap (``resample="rows"``) and checks their coverage on simulated data of known
truth. Measured on 20 groups × 2000 overconfident predictions,
400 replicates: the mean ratio of interval widths (bins / rows) is 0.99 for accuracy,
1.00 for ECE, 0.99 RMSCE, 1.02 MCE, 1.00 Brier, 0.99 reliability, 0.96 resolution,
0.98 within-bin variance and 1.00 within-bin covariance (the row-level Poisson bootstrap
itself differs from the multinomial one by about 2% on resolution); interval centres
agree to within 2% of the width. Without the within-cell terms (scaling the sums only)
the within-bin variance interval was 4 times too narrow. The log-loss sum has no second
moment in the table (its within-cell spread is unbounded near p = 0 or 1), so log loss
gets no interval.

Coverage is that of a percentile bootstrap, below nominal in small groups: in a
simulation of issue 17 (n = 500 rows, 95% intervals) the accuracy and Brier intervals
covered the true value in 0.87–0.96 of the samples (0.87 for accuracy is about 3.6
standard errors below 0.95). Where a closed form exists, prefer it: the accuracy of a
group is a proportion, and :func:`calib_frames.estimators.intervals.accuracy_interval` (Wilson
score interval, also added to a table by
:func:`calib_frames.estimators.with_accuracy_intervals`) keeps its level for every n.

``resample="rows"`` is the exact row-level Poisson bootstrap (each row gets a Poisson(1)
multiplicity per replicate, from a seeded hash of its position and the replicate, and
the one bin-statistics pass groups by ``replicate`` too): costs rows × replicates (the
rows are crossed with the replicates), a reference for small data and validation.

Perplexity (:func:`perplexity_intervals`) is a ratio of sums, Σnll/Σtokens. Its
bootstrap replicates are drawn from the normal approximation of the resampled sums
(Σnll*, Σtokens*[, Σbytes*]): mean the observed sums, covariance N times the per-row
covariance, which needs only the additive second moments Σx², Σxy, Σy² of the one pass.
Then exp(Σnll*/Σtokens*) and Σnll*/(Σbytes*·ln 2) per replicate, and percentiles. The
normal approximation of the sums (the central limit theorem over rows) is accurate when
a group has many rows (documents); it is checked against a row-level bootstrap in the
tests. For token-level rows, pass ``cluster=`` (a document id) so that the resampling unit
is the document: tokens of one document are not independent.

Reproducibility: a fixed ``seed`` gives the same draws for the same input table; the
draws of a group depend on its position among the sorted groups. The intervals are not
promised bit for bit, only to the rounding of float sums (~1e-16 relative, at most
~1e-13 seen): polars' group-by adds each group's rows in partial sums whose grouping
follows its hash table, seeded anew per query, so the same rows summed twice may differ
in the last bit, even with one thread (measured: ``resample="rows"``, 500 rows × 1000
replicates, differs between runs with ``POLARS_MAX_THREADS=1`` too). Making the sums
order-free would mean sorting every group's values in the one pass over the rows, a
cost every call would pay for the last bit; compare seeded results with a tolerance
(``rel_tol=1e-12``), not with ``DataFrame.equals``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Literal

import numpy as np
import polars as pl

from calib_frames._deprecated import renamed_keywords
from calib_frames.binning import BinsLike
from calib_frames.estimators.intervals import check_level
from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.metrics.calibration import metrics_from_bin_statistics
from calib_frames.schema import BIN_STATISTICS
from calib_frames.stats import bin_statistics
from calib_frames.validation import (
    Frame,
    RowCheck,
    as_lazy,
    first_offending_row,
    group_keys,
    not_true,
    raise_on_bad_rows,
    require_columns,
    return_like,
    working,
)

__all__ = [
    "CI_METRICS",
    "MEMORY_LIMIT",
    "MOMENT_COLUMNS",
    "PERPLEXITY_CI_METRICS",
    "REPLICATE",
    "bootstrap_bin_statistics",
    "calibration_intervals",
    "check_replicates",
    "check_seed",
    "intervals_from_bin_statistics",
    "nll_moment_sums",
    "perplexity_intervals",
    "perplexity_intervals_from_sums",
]

REPLICATE = "replicate"
"""Name of the replicate key column (UInt32, 0 … replicates − 1)."""

CI_METRICS = (
    "accuracy",
    "mean_confidence",
    "overconfidence",
    "ece",
    "rmsce",
    "mce",
    "brier",
    "reliability",
    "resolution",
    "uncertainty",
    "within_bin_variance",
    "within_bin_covariance",
)
"""Metrics of the calibration-metrics table that get ``<metric>_ci_low/high`` columns."""

PERPLEXITY_CI_METRICS = ("mean_nll", "perplexity", "bits_per_token", "bits_per_byte")
"""Perplexity-table columns that get intervals (``bits_per_byte`` only with bytes)."""

COUNT_CORRECT = "count_correct"
"""Optional bin-statistics column: rows with a correct outcome (used when present)."""

MEMORY_LIMIT = 8 * 2**30
"""The most memory (bytes) a bootstrap call may plan for, 8 GiB: past it, ArgumentError.

Estimated before the work starts, from groups × bins × replicates resampled cells
(``resample="bins"``, about 320 bytes each: the replicate table and its metrics), rows
× replicates (``resample="rows"``, about 64 bytes each: the crossed rows) or groups ×
replicates (perplexity: the normal draws and their metrics); the noise floor
(:mod:`calib_frames.estimators.noise`) checks its groups × bins × replicates the same
way. So a mistyped
``replicates=10**7`` is refused at once instead of being killed for memory."""

_BYTES_PER_CELL = 320  # measured: 1e6 cells (1 group × 10 bins × 1e5 replicates) ≈ 260 MB
_BYTES_PER_ROW_DRAW = 64  # measured: 1e6 row draws (500 rows × 2000 replicates) ≈ 40 MB

_ROW = working("row")
_DRAWN_ROWS = working("drawn_rows")
_BOOT_W = working("boot_w")
_POISSON_TAIL = 16  # P(Poisson(1) > 16) < 1e-14


def check_replicates(replicates: int) -> None:
    """Raise :class:`ArgumentError` unless ``replicates`` is an integer ≥ 1.

    Parameters
    ----------
    replicates
        The number of replicates asked for.

    Raises
    ------
    ArgumentError
        If it is not an int (bools refused) or is below 1.

    Examples
    --------
    >>> check_replicates(200)
    """
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 1:
        raise ArgumentError(f"replicates must be an integer >= 1, got {replicates!r}")


def check_seed(seed: int) -> None:
    """Raise :class:`ArgumentError` unless ``seed`` is an integer ≥ 0.

    Parameters
    ----------
    seed
        The seed asked for.

    Raises
    ------
    ArgumentError
        If it is not an int (bools refused) or is negative.

    Examples
    --------
    >>> check_seed(0)
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ArgumentError(f"seed must be an integer >= 0, got {seed!r}")


def _stat_keys(schema: pl.Schema) -> list[str]:
    """The keys of a bin-statistics table, none of them named ``replicate``."""
    keys = BIN_STATISTICS.keys(schema)
    require_columns(schema, {}, keys=keys, reserved=(REPLICATE,))
    return keys


def bootstrap_bin_statistics(
    stats: Frame, *, rows: str | None = None, replicates: int = 1000, seed: int = 0
) -> Frame:
    """Bootstrap replicates of a bin-statistics table, drawn per group from its cells.

    Per group, replicate and (bin, outcome) cell: a Multinomial row count and the cell's
    sums scaled to it (module docstring: exact for counts and class means, a normal
    approximation for the within-cell mean confidence). Costs groups × bins × replicates.
    With ``rows=`` each replicate draws that many rows from the group's cells instead of
    the group's own count (a sample of another size from the same cells: the two sides
    of a two-sample test drawn from their pooled table).

    Parameters
    ----------
    stats
        A bin-statistics table (:func:`~calib_frames.bin_statistics`), one complete set
        of bins per group. Lazy in, lazy out (the draw runs at collect time).
    rows
        Optional column of ``stats`` holding, per group (the same on each of its bin
        rows), the number of rows a replicate draws (an integer ≥ 0); ``None``: the
        group's count.
    replicates
        Number of bootstrap replicates (≥ 1).
    seed
        Seed of the random generator (≥ 0); the same seed gives the same table.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, ``replicate`` (UInt32), then the bin-statistics columns: a bin-statistics
        table whose keys end with ``replicate`` (reduce it with
        :func:`~calib_frames.metrics_from_bin_statistics`).

    Raises
    ------
    TableError
        If ``stats`` is not a bin-statistics table, has a key named ``replicate``, or
        its groups have different numbers of bins.
    ArgumentError
        For a bad ``replicates`` or ``seed``.

    See Also
    --------
    intervals_from_bin_statistics : percentile intervals from these replicates.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.9, 0.8, 0.3, 0.95], "correct": [1, 1, 0, 0]})
    >>> boot = bootstrap_bin_statistics(cf.bin_statistics(df), replicates=3)
    >>> boot.group_by("replicate").agg(pl.col("count").sum()).sort("replicate").rows()
    [(0, 4), (1, 4), (2, 4)]
    >>> larger = cf.bin_statistics(df).with_columns(draw=pl.lit(10))
    >>> boot = bootstrap_bin_statistics(larger, rows="draw", replicates=2)
    >>> boot.group_by("replicate").agg(pl.col("count").sum()).sort("replicate").rows()
    [(0, 10), (1, 10)]
    """
    check_replicates(replicates)
    check_seed(seed)
    lazy = as_lazy(stats)
    schema = lazy.collect_schema()
    keys: list[str] = _stat_keys(schema)
    names = [*keys, *BIN_STATISTICS.names]
    if COUNT_CORRECT in schema:  # rows per outcome class, when the table carries them
        names.append(COUNT_CORRECT)
    if rows is not None:
        require_columns(schema, {"rows": rows}, numeric=["rows"])
        lazy = lazy.with_columns(pl.col(rows).alias(_DRAWN_ROWS))
        names.append(_DRAWN_ROWS)
    out_schema = {key: schema[key] for key in keys}
    out_schema[REPLICATE] = pl.UInt32()
    out_schema.update({name: BIN_STATISTICS.columns[name] for name in BIN_STATISTICS.names})
    draw = partial(_draw, keys=keys, replicates=replicates, seed=seed)
    result = lazy.select(names).map_batches(draw, schema=out_schema)
    return return_like(stats, result)


def check_memory(units: int, bytes_per_unit: int, what: str) -> None:
    """ArgumentError when ``units`` of work (``what`` names them) pass :data:`MEMORY_LIMIT`."""
    planned = units * bytes_per_unit
    if planned > MEMORY_LIMIT:
        raise ArgumentError(
            f"this call would need about {planned / 2**30:,.1f} GiB ({what} = {units:,}), "
            f"over the {MEMORY_LIMIT / 2**30:.0f} GiB limit (calib_frames.estimators."
            "bootstrap.MEMORY_LIMIT): pass fewer replicates (1000 is plenty for a 95% "
            "interval) or fewer groups at a time"
        )


def _grid_shape(frame: pl.DataFrame, keys: list[str]) -> tuple[int, int]:
    """(groups, bins) of a sorted, complete bin-statistics table (raises if ragged)."""
    if keys:
        group = frame.select(pl.struct(keys).rle_id()).to_series().to_numpy()
    else:
        group = np.zeros(frame.height, dtype=np.int64)
    groups = int(group.max()) + 1
    sizes = np.bincount(group, minlength=groups)
    if not (sizes == sizes[0]).all():
        raise TableError(
            "bin-statistics groups have different numbers of bins "
            f"({int(sizes.min())} to {int(sizes.max())}); bootstrap needs complete tables "
            "as bin_statistics builds them"
        )
    return groups, int(sizes[0])


def _draw_counts(
    rng: np.random.Generator,
    n1: np.ndarray,
    n0: np.ndarray,
    replicates: int,
    sizes: np.ndarray | None = None,
) -> np.ndarray:
    """Multinomial rows per (group, replicate, bin, class), ``sizes`` rows per group.

    ``sizes`` defaults to each group's own row total.
    """
    groups, _, bins = n1.shape
    cells = np.stack([n1[:, 0], n0[:, 0]], axis=-1).reshape(groups, 2 * bins).astype(np.int64)
    total = cells.sum(axis=1)
    pvals = cells / np.maximum(total, 1)[:, None]
    pvals[total == 0, 0] = 1.0
    drawn_total = total if sizes is None else np.where(total > 0, sizes, 0)
    drawn = rng.multinomial(drawn_total[:, None], pvals[:, None, :], size=(groups, replicates))
    return drawn.reshape(groups, replicates, bins, 2).astype(np.float64)


def _safe_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), b)
    out: np.ndarray = np.divide(a, b, out=np.zeros(a.shape), where=b > 0)
    return out


def _resample_class(
    rng: np.random.Generator,
    *,
    n: np.ndarray,
    n_star: np.ndarray,
    sums: tuple[np.ndarray, np.ndarray, np.ndarray],
    bounds: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W*, R*, Q*) of one outcome class's cells given n → n* rows (module docstring)."""
    w, r, q = sums
    w_star = w * _safe_divide(n_star, n)
    mean = _safe_divide(r, w)
    spread = np.maximum(_safe_divide(q, w) - mean**2, 0.0)
    row_weight = _safe_divide(w, n)
    noise = row_weight * np.sqrt(n_star * spread) * rng.standard_normal(n_star.shape)
    r_star = np.clip(w_star * mean + noise, w_star * bounds[0], w_star * bounds[1])
    # the resampled spread: its mean (1 − 1/n*)·s² and relative sd √(κ/n*), with
    # κ = 0.8 the excess fourth moment μ₄/s⁴ − 1 of a uniform distribution
    wobble = np.sqrt(_safe_divide(np.full(n_star.shape, 0.8), n_star))
    shrink = _safe_divide(n_star - 1.0, n_star)
    jitter = np.maximum(1.0 + wobble * rng.standard_normal(n_star.shape), 0.0)
    q_star = _safe_divide(r_star**2, w_star) + w_star * spread * shrink * jitter
    return w_star, r_star, q_star


def _draw(frame: pl.DataFrame, *, keys: list[str], replicates: int, seed: int) -> pl.DataFrame:
    """The numpy side of :func:`bootstrap_bin_statistics` on the collected (small) table."""
    frame = frame.sort([*keys, "bin"], nulls_last=True)
    if frame.height == 0:
        return frame.select(*keys, pl.lit(0, pl.UInt32).alias(REPLICATE), *BIN_STATISTICS.names)
    groups, bins = _grid_shape(frame, keys)
    check_memory(
        groups * bins * replicates,
        _BYTES_PER_CELL,
        f"{groups:,} groups × {bins:,} bins × {replicates:,} replicates",
    )
    shape = (groups, 1, bins)

    def col(name: str, fill: float = 0.0) -> np.ndarray:
        return frame[name].cast(pl.Float64).fill_null(fill).to_numpy().reshape(shape)

    count = col("count")
    # rows per outcome class: exact without weights (weight_correct counts correct rows);
    # with weights the rows are apportioned by weight unless the table has count_correct
    if COUNT_CORRECT in frame.columns:
        n1 = col(COUNT_CORRECT)
    else:
        n1 = np.rint(count * _safe_divide(col("weight_correct"), col("weight")))
    n0 = count - n1
    sizes = None
    if _DRAWN_ROWS in frame.columns:
        per_group = frame[_DRAWN_ROWS].cast(pl.Float64).to_numpy().reshape(groups, bins)[:, 0]
        bad = ~(np.isfinite(per_group) & (per_group >= 0) & (np.rint(per_group) == per_group))
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            example = dict(zip(keys, frame.select(keys).row(first * bins), strict=True))
            raise DataError(
                f"rows= column: {int(bad.sum())} of {groups} group(s) draw a number of rows "
                f"that is not an integer >= 0, e.g. {per_group[first]!r} in group {example}"
            )
        sizes = np.rint(per_group).astype(np.int64)
    rng = np.random.default_rng(seed)
    drawn = _draw_counts(rng, n1, n0, replicates, sizes)
    lower, upper = col("bin_lower"), col("bin_upper", 1.0)
    w1s, r1s, q1s = _resample_class(
        rng,
        n=n1,
        n_star=drawn[..., 0],
        sums=(col("weight_correct"), col("sum_residual_correct"), col("sum_sq_residual_correct")),
        bounds=(1.0 - upper, 1.0 - lower),
    )
    w0s, r0s, q0s = _resample_class(
        rng,
        n=n0,
        n_star=drawn[..., 1],
        sums=(col("weight_wrong"), col("sum_residual_wrong"), col("sum_sq_residual_wrong")),
        bounds=(lower, upper),
    )
    n_star = drawn.sum(axis=-1)
    ws = w1s + w0s
    s1s = w1s - r1s
    mean_conf = _safe_divide(s1s + r0s, ws)
    accuracy = _safe_divide(w1s, ws)
    return _assemble(
        frame,
        keys,
        {
            "count": np.rint(n_star),
            "weight": ws,
            "mean_confidence": mean_conf,
            "accuracy": accuracy,
            "weight_correct": w1s,
            "weight_wrong": w0s,
            "sum_confidence_correct": s1s,
            "sum_residual_correct": r1s,
            "sum_residual_wrong": r0s,
            "sum_sq_residual_correct": q1s,
            "sum_sq_residual_wrong": q0s,
            "sum_log_loss": col("sum_log_loss") * _safe_divide(n_star, count),
        },
    )


def _assemble(frame: pl.DataFrame, keys: list[str], columns: dict[str, np.ndarray]) -> pl.DataFrame:
    """The replicate table: each (group, bin) row of ``frame`` once per replicate."""
    groups, replicates, bins = columns["weight"].shape
    rows = (np.arange(groups)[:, None, None] * bins + np.arange(bins)[None, None, :]) + np.zeros(
        (1, replicates, 1), dtype=np.int64
    )
    base: pl.DataFrame = frame.select(*keys, "bin", "bin_lower", "bin_upper", "closed")
    base = base[rows.ravel()]
    replicate = np.broadcast_to(np.arange(replicates)[None, :, None], rows.shape)
    flat = {
        REPLICATE: pl.Series(replicate.ravel(), dtype=pl.UInt32),
        "count": pl.Series(columns.pop("count").ravel()).cast(pl.UInt64),
        **{name: pl.Series(values.ravel()) for name, values in columns.items()},
    }
    out = base.with_columns(pl.Series(name, values) for name, values in flat.items())
    return out.select(*keys, REPLICATE, *BIN_STATISTICS.names)


def _percentiles(
    replicated: pl.LazyFrame, keys: list[str], metrics: Sequence[str], level: float
) -> pl.LazyFrame:
    """keys… + ``<metric>_ci_low/high``: percentiles of the replicates per group."""
    outputs = [f"{name}_ci_{side}" for name in metrics for side in ("low", "high")]
    require_columns(replicated.collect_schema(), {}, keys=keys, reserved=outputs)
    alpha = (1.0 - level) / 2.0
    aggs: list[pl.Expr] = []
    for name in metrics:
        aggs.append(pl.col(name).quantile(alpha, "linear").alias(f"{name}_ci_low"))
        aggs.append(pl.col(name).quantile(1.0 - alpha, "linear").alias(f"{name}_ci_high"))
    if keys:
        return replicated.group_by(keys).agg(aggs).sort(keys, nulls_last=True)
    return replicated.select(aggs)


def intervals_from_bin_statistics(
    stats: Frame, *, replicates: int = 1000, level: float = 0.95, seed: int = 0
) -> Frame:
    """Percentile bootstrap intervals of the calibration metrics from a bin-statistics table.

    Estimates, per group, the ``level`` percentile interval of accuracy, mean
    confidence, overconfidence, ECE, RMSCE, MCE, the Brier score and its decomposition
    terms (:data:`CI_METRICS`) under the bootstrap over predictions, resampled at the
    bin level (module docstring). Costs groups × bins × replicates, not rows.

    Parameters
    ----------
    stats
        A bin-statistics table; lazy in, lazy out.
    replicates
        Number of bootstrap replicates (≥ 1; the default 1000 puts the bounds of a 95%
        interval within about ±0.7% of its width, 200 within about ±1.5%).
    level
        Confidence level in (0, 1).
    seed
        Seed (≥ 0); the same seed gives the same intervals.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, then ``<metric>_ci_low`` and ``<metric>_ci_high`` (Float64) for each
        metric in :data:`CI_METRICS`, one row per group sorted by the keys: join it to
        the metrics table on the keys.

    Raises
    ------
    TableError
        If ``stats`` is not a bin-statistics table (or has a ``replicate`` key).
    ArgumentError
        For ``replicates`` < 1, ``level`` outside (0, 1), a negative ``seed``.

    See Also
    --------
    calibration_intervals : the same from predictions (also the row-level bootstrap).
    bootstrap_bin_statistics : the replicate table behind it.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.9] * 50, "correct": [1] * 40 + [0] * 10})
    >>> ci = intervals_from_bin_statistics(cf.bin_statistics(df), replicates=500)
    >>> low, high = ci.select("accuracy_ci_low", "accuracy_ci_high").row(0)
    >>> bool(0.65 < low < 0.8 < high < 0.92)
    True
    """
    check_level(level)
    check_replicates(replicates)
    lazy = as_lazy(stats)
    keys: list[str] = _stat_keys(lazy.collect_schema())
    boot = bootstrap_bin_statistics(lazy, replicates=replicates, seed=seed)
    replicated = metrics_from_bin_statistics(boot)
    return return_like(stats, _percentiles(replicated, keys, CI_METRICS, level))


def _poisson_one(uniform: pl.Expr) -> pl.Expr:
    """Poisson(1) variate from a uniform in [0, 1) by inverse CDF (the CDF values <= it)."""
    cdf, term = 0.0, math.exp(-1.0)
    steps: list[float] = []
    for k in range(_POISSON_TAIL):
        cdf += term
        term /= k + 1
        steps.append(cdf)
    return pl.lit(pl.Series(steps)).search_sorted(uniform, side="right").cast(pl.UInt32)


def poisson_weights(row: pl.Expr, replicate: pl.Expr, seed: int) -> pl.Expr:
    """Poisson(1) bootstrap multiplicity of a row in a replicate from a seeded hash.

    Deterministic for a given (row, replicate, seed) on one polars version (polars'
    hash is not stable across versions).
    """
    hashed = pl.struct(row.alias("r"), replicate.alias("b")).hash(seed=seed)
    uniform = (hashed // 2048).cast(pl.Float64) * 2.0**-53
    return _poisson_one(uniform)


def calibration_intervals(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    resample: Literal["bins", "rows"] = "bins",
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """Percentile bootstrap intervals of the calibration metrics per group, from predictions.

    Estimates, per group, the ``level`` interval of every metric in :data:`CI_METRICS`
    under the bootstrap over predictions (rows drawn with replacement).

    Parameters
    ----------
    predictions, confidence, correct, by, bins, weight
        As for :func:`~calib_frames.bin_statistics`.
    resample
        ``"bins"`` (default): one pass for the bin statistics, then the bin-level
        resampling of :func:`bootstrap_bin_statistics` (groups × bins × replicates).
        ``"rows"``: the exact row-level Poisson bootstrap in the same pass (each row
        weighted by a seeded Poisson(1) multiplicity per replicate; rows × replicates
        work, for small data or validation; equal-mass bins keep the bins of the data).
    replicates, level, seed
        As for :func:`intervals_from_bin_statistics`.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, ``<metric>_ci_low``, ``<metric>_ci_high`` per metric; one row per group.
        Percentile intervals cover somewhat less than ``level`` in small groups (module
        docstring, 0.87–0.96 at n = 500); for accuracy the Wilson interval of
        :func:`~calib_frames.estimators.intervals.accuracy_interval` is closed-form and keeps its
        level.

    Raises
    ------
    TableError, DataError
        As :func:`~calib_frames.bin_statistics` (missing columns, bad rows).
    ArgumentError
        For bad ``replicates``, ``level``, ``seed`` or ``resample``; work that would need
        more memory than :data:`MEMORY_LIMIT` (e.g. ``replicates=10**7``; for a
        LazyFrame with ``resample="bins"`` when collected).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame(
    ...     {"model": ["a"] * 40 + ["b"] * 40,
    ...      "confidence": [0.8] * 80, "correct": ([1] * 32 + [0] * 8) * 2}
    ... )
    >>> ci = calibration_intervals(df, by="model", replicates=100)
    >>> ci.select("model", "ece_ci_low", "ece_ci_high").height
    2
    """
    check_level(level)
    check_replicates(replicates)
    check_seed(seed)
    if resample == "bins":
        stats = bin_statistics(
            as_lazy(predictions),
            confidence=confidence,
            correct=correct,
            by=by,
            bins=bins,
            weight=weight,
        )
        out = intervals_from_bin_statistics(stats, replicates=replicates, level=level, seed=seed)
        return return_like(predictions, out)
    if resample != "rows":
        raise ArgumentError(f"resample must be 'bins' or 'rows', got {resample!r}")
    source = as_lazy(predictions)
    schema = source.collect_schema()
    for reserved in (REPLICATE, _ROW):
        if reserved in schema:
            raise TableError(f"column {reserved!r} clashes with the bootstrap's own column")
    keys: list[str] = group_keys(by)
    rows = source.select(pl.len()).collect().item()  # a count, before rows × replicates
    check_memory(
        rows * replicates, _BYTES_PER_ROW_DRAW, f"{rows:,} rows × {replicates:,} replicates"
    )
    if weight is not None:  # checked here: bin_statistics sees it only scaled by the draws
        require_columns(schema, {"weight": weight}, numbers=["weight"])
    draws = pl.LazyFrame({REPLICATE: np.arange(replicates, dtype=np.uint32)})
    multiplicity = poisson_weights(pl.col(_ROW), pl.col(REPLICATE), seed).cast(pl.Float64)
    boot_weight = weight or _BOOT_W
    scaled = multiplicity if weight is None else pl.col(weight).cast(pl.Float64) * multiplicity
    expanded = (
        source.with_row_index(_ROW)
        .join(draws, how="cross")
        .with_columns(scaled.alias(boot_weight))
        .drop(_ROW)
    )
    stats = bin_statistics(
        expanded,
        confidence=confidence,
        correct=correct,
        by=[*keys, REPLICATE],
        bins=bins,
        weight=boot_weight,
    )
    # A replicate whose Poisson draws leave a group with no rows (likely for a group of
    # a few rows) has no metrics: null, not the NaN/0 of an empty group, so that the
    # percentiles are taken over the non-empty replicates.
    replicated = metrics_from_bin_statistics(stats).with_columns(
        pl.when(pl.col("weight") > 0).then(pl.col(name)).alias(name) for name in CI_METRICS
    )
    return return_like(predictions, _percentiles(replicated, keys, CI_METRICS, level))


MOMENT_COLUMNS = {
    "nll_sq_sum": ("nll", "nll"),
    "nll_tokens_sum": ("nll", "tokens"),
    "tokens_sq_sum": ("tokens", "tokens"),
    "nll_bytes_sum": ("nll", "bytes"),
    "tokens_bytes_sum": ("tokens", "bytes"),
    "bytes_sq_sum": ("bytes", "bytes"),
}
"""Additive second-moment columns of :func:`nll_moment_sums`: name → (factor, factor),
e.g. ``nll_tokens_sum`` = Σ nll·tokens over the rows (units) of a group."""


def _sum_name(variable: str) -> str:
    return "nll_sum" if variable == "nll" else variable


@renamed_keywords(rows="losses")
def nll_moment_sums(
    losses: Frame,
    *,
    nll: str = "nll",
    tokens: str | int | None = None,
    bytes: str | None = None,
    by: str | Sequence[str] | None = None,
    cluster: str | None = None,
    log_probs: bool = False,
) -> Frame:
    """Per-group first and second moments of (nll, tokens[, bytes]): additive sums.

    The NLL-sums table (:func:`~calib_frames.nll_sums`) plus Σnll², Σnll·tokens,
    Σtokens² (and with bytes Σnll·bytes, Σtokens·bytes, Σbytes²), summed over rows, or
    over ``cluster`` units (rows first summed per (keys, cluster)). Like the NLL sums they
    merge exactly by adding tables of disjoint data, so they can ride along the same pass.

    Parameters
    ----------
    losses, nll, tokens, bytes, by, cluster, log_probs
        As for :func:`perplexity_intervals`.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, ``count`` (UInt64: rows or clusters), ``nll_sum``, ``tokens`` [,
        ``bytes``] (Float64) and the :data:`MOMENT_COLUMNS` that apply (Float64).

    Raises
    ------
    TableError, DataError, ArgumentError
        As :func:`perplexity_intervals`.

    Examples
    --------
    >>> import polars as pl
    >>> docs = pl.DataFrame({"nll": [3.0, 5.0], "tokens": [2, 4]})
    >>> nll_moment_sums(docs, tokens="tokens").row(0)
    (2, 8.0, 6.0, 34.0, 26.0, 20.0)
    """
    source = as_lazy(losses)
    schema = source.collect_schema()
    keys: list[str] = group_keys(by)
    if tokens is None and "tokens" in schema:
        raise ArgumentError(
            "the frame has a 'tokens' column: pass tokens='tokens' (document rows) or "
            "tokens=1 (one token per row)"
        )
    if isinstance(tokens, bool) or (isinstance(tokens, int) and tokens < 1):
        raise ArgumentError(f"tokens must be a column name or a positive integer, got {tokens!r}")
    per_row = float(tokens) if isinstance(tokens, int) else 1.0
    column_tokens = tokens if isinstance(tokens, str) else None
    roles = {"nll": nll, "tokens": column_tokens, "bytes": bytes, "cluster": cluster}
    named = {role: column for role, column in roles.items() if column is not None}
    require_columns(
        schema,
        named,
        numeric=[role for role in ("nll", "tokens", "bytes") if role in named],
        reserved=("count", "nll_sum", "tokens", "bytes", *MOMENT_COLUMNS),
        keys=keys,
        inputs_are_not_keys=True,
    )
    x = pl.col(nll).cast(pl.Float64)
    x = -x if log_probs else x
    y = pl.lit(per_row) if column_tokens is None else pl.col(column_tokens).cast(pl.Float64)
    values = {"nll": x, "tokens": y}
    if bytes is not None:
        values["bytes"] = pl.col(bytes).cast(pl.Float64)
    nll_problem = (
        "null, NaN, infinite or positive (a log-probability is <= 0; log_probs=True was given)"
        if log_probs
        else "null, NaN, infinite or negative (an NLL is >= 0 nats; pass log_probs=True for "
        "log-probabilities)"
    )
    problems = {"nll": nll_problem, "tokens": "null, NaN, infinite or negative",
                "bytes": "null, NaN, infinite or negative"}  # fmt: skip
    checked_values = {role: value for role, value in values.items() if role in named}
    flags: dict[str, str] = {role: working(f"bad_{role}") for role in checked_values}
    checks = [
        RowCheck(
            named[role],
            problems[role],
            not_true(value.is_finite() & (value >= 0)),
            count=pl.col(flags[role]).sum(),
        )
        for role, value in checked_values.items()
    ]
    rows_column = working("rows")
    frame = source.select(
        *keys,
        *([cluster] if cluster else []),
        *[v.alias(working(k)) for k, v in values.items()],
        *[
            check.bad.cast(pl.UInt64).alias(flag)
            for flag, check in zip(flags.values(), checks, strict=True)
        ],
        pl.lit(1, pl.UInt64).alias(rows_column),
    )
    if cluster is not None:  # the resampled units: the rows of a cluster summed
        frame = frame.group_by(*keys, cluster).agg(pl.exclude(*keys, cluster).sum())
    names = list(values)
    sums = [pl.len().cast(pl.UInt64).alias("count"), pl.col(rows_column, *flags.values()).sum()]
    sums += [pl.col(working(v)).sum().alias(_sum_name(v)) for v in names]
    sums += [
        (pl.col(working(a)) * pl.col(working(b))).sum().alias(name)
        for name, (a, b) in MOMENT_COLUMNS.items()
        if a in names and b in names
    ]
    table = (
        frame.group_by(keys).agg(sums).sort(keys, nulls_last=True) if keys else frame.select(sums)
    )
    checked = raise_on_bad_rows(
        table,
        keys=keys,
        checks=checks,
        total_rows=pl.col(rows_column).sum(),
        find_example=first_offending_row(source, keys),
        drop=[rows_column, *flags.values()],
    )
    return return_like(losses, checked)


def perplexity_intervals_from_sums(
    sums: Frame, *, replicates: int = 1000, level: float = 0.95, seed: int = 0
) -> Frame:
    """Bootstrap intervals of the perplexity family from an NLL-moments table.

    The normal approximation of the bootstrap of the sums (module docstring) from the
    first and second moments of :func:`nll_moment_sums` (or an NLL-sums table that
    carries the :data:`MOMENT_COLUMNS`); costs groups × replicates.

    Parameters
    ----------
    sums
        keys…, ``count``, ``nll_sum``, ``tokens`` [, ``bytes``] and the second moments.
    replicates, level, seed
        As for :func:`intervals_from_bin_statistics`.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, then ``<metric>_ci_low/high`` (Float64) for ``mean_nll``, ``perplexity``,
        ``bits_per_token`` and (with bytes) ``bits_per_byte``; null where a group has no
        tokens (bytes). One row per group, sorted by the keys.

    Raises
    ------
    TableError
        If a needed sum or moment column is missing.
    ArgumentError
        For bad ``replicates``, ``level`` or ``seed``.

    Examples
    --------
    >>> import polars as pl
    >>> docs = pl.DataFrame({"nll": [30.0, 42.0, 25.0, 50.0], "tokens": [10, 14, 10, 16]})
    >>> ci = perplexity_intervals_from_sums(nll_moment_sums(docs, tokens="tokens"))
    >>> ci.columns[:2]
    ['mean_nll_ci_low', 'mean_nll_ci_high']
    """
    check_level(level)
    check_replicates(replicates)
    check_seed(seed)
    lazy = as_lazy(sums)
    schema = lazy.collect_schema()
    needed = ["count", "nll_sum", "tokens", "nll_sq_sum", "nll_tokens_sum", "tokens_sq_sum"]
    with_bytes: bool = "bytes" in schema
    if with_bytes:
        needed += ["bytes", "nll_bytes_sum", "tokens_bytes_sum", "bytes_sq_sum"]
    missing = [c for c in needed if c not in schema]
    if missing:
        raise TableError(
            f"not an NLL-moments table: missing columns {missing}; build one with "
            "calib_frames.estimators.bootstrap.nll_moment_sums"
        )
    names = schema.names()
    keys = names[: names.index("count")]
    variables = ["nll", "tokens", *(["bytes"] if with_bytes else [])]
    metrics = [m for m in PERPLEXITY_CI_METRICS if with_bytes or m != "bits_per_byte"]
    out_schema: dict[str, pl.DataType] = {key: schema[key] for key in keys}
    for name in metrics:
        out_schema[f"{name}_ci_low"] = pl.Float64()
        out_schema[f"{name}_ci_high"] = pl.Float64()
    draw = partial(
        _draw_ratios, keys=keys, variables=variables, metrics=metrics, replicates=replicates,
        level=level, seed=seed,
    )  # fmt: skip
    result = lazy.select(*keys, *needed).map_batches(draw, schema=out_schema)
    return return_like(sums, result)


@renamed_keywords(rows="losses")
def perplexity_intervals(
    losses: Frame,
    *,
    nll: str = "nll",
    tokens: str | int | None = None,
    bytes: str | None = None,
    by: str | Sequence[str] | None = None,
    cluster: str | None = None,
    log_probs: bool = False,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """Bootstrap intervals of perplexity, mean NLL, bits per token and bits per byte.

    Estimates, per group, the ``level`` percentile interval of the perplexity family
    under the bootstrap over rows (or over ``cluster`` units), with the resampled sums
    drawn from their normal approximation (module docstring): one streaming pass of
    additive first and second moments, then groups × replicates draws.

    Parameters
    ----------
    losses
        Token-level rows (``tokens=None``: each row is one token) or document-level rows
        (``nll`` summed over the document, ``tokens`` its token count), as for
        :func:`~calib_frames.nll_sums` (called ``rows`` until 0.2; the old keyword still
        works, with a DeprecationWarning).
    nll
        Column of negative log-likelihoods in nats (≥ 0, finite).
    tokens
        Column of token counts per row, or ``1``: each row is one token. ``None``
        means 1 unless the frame has a column named ``tokens`` (then it raises: say
        which is meant), as in :func:`~calib_frames.nll_sums`.
    bytes
        Column of UTF-8 bytes per row; adds ``bits_per_byte`` intervals.
    by
        Group keys (``None``: one group).
    cluster
        Optional column (e.g. a document id) whose units are resampled instead of rows;
        rows are first summed per (keys, cluster) (a group_by over the rows).
    log_probs
        Treat ``nll`` as ln p (≤ 0) and negate it.
    replicates, level, seed
        As for :func:`intervals_from_bin_statistics`.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, then
        ``<metric>_ci_low/high`` for ``mean_nll``, ``perplexity``, ``bits_per_token`` and
        (with ``bytes``) ``bits_per_byte``. Null where a group has no tokens (bytes).

    Raises
    ------
    TableError
        Missing or non-numeric columns, a key named like an output column.
    DataError
        Negative, NaN, infinite or null NLL, or token/byte counts that are negative
        or not finite (checked when the result is collected).
    ArgumentError
        For bad ``replicates``, ``level``, ``seed`` or ``tokens``.

    Examples
    --------
    >>> import polars as pl
    >>> docs = pl.DataFrame({"nll": [30.0, 42.0, 25.0, 50.0], "tokens": [10, 14, 10, 16]})
    >>> ci = perplexity_intervals(docs, tokens="tokens", replicates=500)
    >>> low, high = ci.select("perplexity_ci_low", "perplexity_ci_high").row(0)
    >>> point = 2.94  # exp(147 / 50) = 18.9
    >>> bool(low < 2.71828**point < high)
    True
    """
    check_level(level)
    check_replicates(replicates)
    check_seed(seed)
    moments = nll_moment_sums(
        as_lazy(losses), nll=nll, tokens=tokens, bytes=bytes, by=by, cluster=cluster,
        log_probs=log_probs,
    )  # fmt: skip
    result = perplexity_intervals_from_sums(moments, replicates=replicates, level=level, seed=seed)
    return return_like(losses, result)


def _draw_ratios(
    frame: pl.DataFrame,
    *,
    keys: list[str],
    variables: list[str],
    metrics: list[str],
    replicates: int,
    level: float,
    seed: int,
) -> pl.DataFrame:
    frame = frame.sort(keys, nulls_last=True) if keys else frame
    groups, k = frame.height, len(variables)
    n = frame["count"].cast(pl.Float64).to_numpy()
    mean = np.stack([frame[_sum_name(a)].cast(pl.Float64).to_numpy() for a in variables], axis=1)
    second = np.empty((groups, k, k))
    for name, (a, b) in MOMENT_COLUMNS.items():
        if a in variables and b in variables:
            i, j = variables.index(a), variables.index(b)
            second[:, i, j] = second[:, j, i] = frame[name].cast(pl.Float64).to_numpy()
    per_row = mean / np.maximum(n, 1.0)[:, None]
    # covariance of the resampled sums: N × per-row covariance
    cov = second - n[:, None, None] * per_row[:, :, None] * per_row[:, None, :]
    cov = (cov + np.swapaxes(cov, 1, 2)) / 2.0
    eigval, eigvec = np.linalg.eigh(cov)
    root = eigvec * np.sqrt(np.clip(eigval, 0.0, None))[:, None, :]
    # the normal draws, the drawn sums and about four per-replicate metric arrays
    check_memory(
        groups * replicates,
        (2 * k + 6) * 8,
        f"{groups:,} groups × {replicates:,} replicates",
    )
    rng = np.random.default_rng(seed)
    normal = rng.standard_normal((groups, replicates, k))
    drawn = mean[:, None, :] + np.einsum("gij,gbj->gbi", root, normal)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_token = drawn[..., 0] / drawn[..., 1]
        values = {
            "mean_nll": per_token,
            "perplexity": np.exp(per_token),
            "bits_per_token": per_token / math.log(2.0),
        }
        if "bytes" in variables:
            values["bits_per_byte"] = drawn[..., 0] / (drawn[..., 2] * math.log(2.0))
    alpha = (1.0 - level) / 2.0
    columns: dict[str, pl.Series] = {}
    for name in metrics:
        valid = mean[:, 2 if name == "bits_per_byte" else 1] > 0
        low, high = np.quantile(values[name], [alpha, 1.0 - alpha], axis=1)
        columns[f"{name}_ci_low"] = pl.Series(np.where(valid, low, np.nan)).fill_nan(None)
        columns[f"{name}_ci_high"] = pl.Series(np.where(valid, high, np.nan)).fill_nan(None)
    out = pl.DataFrame([series.alias(name) for name, series in columns.items()])
    return pl.concat([frame.select(keys), out], how="horizontal") if keys else out
