r"""An interval for the ECE that covers small ECEs: inversion of a least-favourable test.

Why not the bootstrap
---------------------
The plug-in ECE Σ_b (W_b/N)·|ȳ_b − p̄_b| is biased upward: noise in a bin's accuracy
only ever adds to |gap|. A percentile bootstrap interval of it sits around the biased
value, so it misses small population ECEs: in issue 29's simulation it covered an ECE of
0.02 in 0.66 of the groups at n = 2,000, never at n = 200, and never reached 0 for a
perfectly calibrated model (measured again by ``benchmarks/sim_ece_interval.py``).

What is computed
----------------
Per populated bin the gap d_b = ȳ_b − p̄_b is taken as normal with mean δ_b and standard
deviation σ_b = √(a_b(1 − a_b)/W_b), a_b = (W¹_b + ½)/(W_b + 1) (the bin's accuracy pulled
off 0 and 1), and the bins' weights w_b = W_b/N as fixed. Then the plug-in
θ̂ = Σ_b w_b |d_b| has the closed-form mean and variance of a sum of folded normals
(E|X| = σ√(2/π)·e^{−δ²/2σ²} + δ(1 − 2Φ(−δ/σ)), Var|X| = δ² + σ² − E|X|²), and its
quantiles are taken as normal with those moments. The interval [L, U] inverts two
one-sided tests of level (1 − ``level``)/2 on the population ECE θ = Σ_b w_b |δ_b|, each
against the configuration of gaps least favourable to it:

* **L**, the smallest c for which "θ ≤ c" is not rejected. The upper quantile of θ̂ under
  θ = c is largest when all of c sits in one bin (δ_j = c/w_j, the others 0: the other
  bins' noise adds the most bias), maximised over j. And L = 0 exactly when the exact
  test of perfect calibration (:mod:`calib_frames.estimators.null_ece`, the noise floor's)
  does not reject at (1 − ``level``)/2: so an interval misses a perfectly calibrated
  model only as often as that test errs.
* **U**, the largest c for which "θ ≥ c" is not rejected. The lower quantile of θ̂ under
  θ = c is smallest when the same gap c is in every bin (Σ w_b E|δ_b + σ_b Z| is convex
  in each δ_b, so by Jensen spreading c evenly lowers it); U = 0 when θ̂ is below even the
  lower quantile at c = 0, and U ≤ 1.

Both by bisection (40 halvings of closed forms, vectorised over groups). Coverage,
measured by ``benchmarks/sim_ece_interval.py`` (README, "How far to trust a number";
400 groups per cell): 0.965–1.000 at a nominal 0.95 for population ECEs 0, 0.02, 0.05
and 0.14, n = 200 and 2,000, three designs of confidences (conservative: the least
favourable configuration is rarely the true one), 1.1–1.7× as wide as the percentile
bootstrap, which covered an ECE of 0 in none of the groups. A group without weight has
no interval (null).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import polars as pl

from calib_frames.estimators._bins import BinArrays, bin_arrays, grid_shape
from calib_frames.estimators.null_ece import null_distribution

__all__ = ["ece_bounds", "ece_interval_table"]

_HALVINGS = 40


def _folded(delta: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of |X|, X ~ N(δ, σ²), elementwise (σ > 0)."""
    from scipy.special import ndtr  # half a second to import: where used (null_ece.py)

    delta = np.abs(delta)
    ratio = delta / sd
    mean = sd * np.sqrt(2.0 / np.pi) * np.exp(-(ratio**2) / 2.0) + delta * (
        1.0 - 2.0 * ndtr(-ratio)
    )
    return mean, np.maximum(delta**2 + sd**2 - mean**2, 0.0)


def _bisect(above: np.ndarray, high: np.ndarray, holds: object) -> np.ndarray:
    """The boundary c in [0, high] per group where ``holds(c)`` (monotone) switches.

    ``holds(c)`` is True below the boundary when ``above`` is False (the largest c that
    holds), and above it when ``above`` is True (the smallest c that holds).
    """
    low, up = np.zeros_like(high), high.copy()
    for _ in range(_HALVINGS):
        mid = (low + up) / 2.0
        ok = holds(mid)  # type: ignore[operator]
        go_up = ok != above  # move the lower end up
        low = np.where(go_up, mid, low)
        up = np.where(go_up, up, mid)
    return np.where(above, up, low)


def ece_bounds(
    arrays: BinArrays, p_value: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """The ``level`` interval [L, U] of the population ECE per group (module docstring).

    Parameters
    ----------
    arrays
        The groups' bin sums (:func:`~calib_frames.estimators._bins.bin_arrays`).
    p_value
        The exact test's p-value of perfect calibration per group
        (:func:`~calib_frames.estimators.null_ece.null_distribution`).
    level
        The confidence level, in (0, 1).

    Returns
    -------
    (numpy array, numpy array)
        L and U per group; NaN for a group without weight.

    Examples
    --------
    A bin of 1,000 predictions at 0.9 with 850 right, another at 0.6 with 600 right:
    θ̂ = 0.5·0.05 = 0.025.

    >>> import numpy as np
    >>> from calib_frames.estimators._bins import BinArrays
    >>> two = lambda a, b: np.array([[a, b]], dtype=float)
    >>> arrays = BinArrays(weight=two(1000, 1000), expected=two(900, 600),
    ...                    variance=two(90, 240), excess=two(50, 0), lower=two(0.9, 0.6))
    >>> low, high = ece_bounds(arrays, np.array([1e-6]), 0.95)
    >>> bool(0 < low[0] < 0.025 < high[0] < 0.05)
    True
    """
    weight = arrays.weight
    total = arrays.total
    populated = weight > 0
    safe_total = np.where(total > 0, total, 1.0)
    safe_weight = np.where(populated, weight, 1.0)
    share = weight / safe_total[:, None]
    gap = -arrays.excess / safe_weight  # ȳ − p̄
    theta = (share * np.abs(gap)).sum(axis=1)
    right = arrays.expected - arrays.excess  # W¹
    accuracy = (right + 0.5) / (weight + 1.0)
    sd = np.sqrt(accuracy * (1.0 - accuracy) / safe_weight)
    z = NormalDist().inv_cdf((1.0 + level) / 2.0)
    mean0, var0 = _folded(np.zeros_like(sd), sd)
    mean0, var0 = mean0 * populated, var0 * populated
    base_mean = (share * mean0).sum(axis=1)
    base_var = (share**2 * var0).sum(axis=1)
    safe_share = np.where(populated, share, 1.0)

    def upper(c: np.ndarray) -> np.ndarray:
        """The largest upper quantile of θ̂ over "all of c in bin j"."""
        mean_j, var_j = _folded(c[:, None] / safe_share, sd)
        mean = base_mean[:, None] - share * mean0 + share * mean_j
        var = base_var[:, None] - share**2 * var0 + share**2 * var_j
        quantile = mean + z * np.sqrt(np.maximum(var, 0.0))
        best: np.ndarray = np.where(populated, quantile, -np.inf).max(axis=1)
        return best

    def lower(c: np.ndarray) -> np.ndarray:
        """The lower quantile of θ̂ with the gap c in every bin."""
        mean_c, var_c = _folded(np.broadcast_to(c[:, None], sd.shape), sd)
        mean = (share * mean_c * populated).sum(axis=1)
        var = (share**2 * var_c * populated).sum(axis=1)
        out: np.ndarray = mean - z * np.sqrt(var)
        return out

    alpha = (1.0 - level) / 2.0
    reject_zero = p_value <= alpha
    low = _bisect(np.ones_like(theta, dtype=bool), theta, lambda c: theta <= upper(c))
    low = np.where(reject_zero, low, 0.0)
    reach = np.minimum(
        theta + 8.0 * np.sqrt((share**2 * sd**2 * populated).sum(axis=1)) + 0.01, 1.0
    )
    high = _bisect(np.zeros_like(theta, dtype=bool), reach, lambda c: theta >= lower(c))
    high = np.where(theta >= lower(np.zeros_like(theta)), high, 0.0)
    has = total > 0
    return np.where(has, low, np.nan), np.where(has, np.maximum(high, low), np.nan)


def ece_interval_table(
    frame: pl.DataFrame, keys: list[str], level: float, p_value: np.ndarray | None = None
) -> pl.DataFrame:
    """keys…, ``ece_ci_low``, ``ece_ci_high`` of a collected bin-statistics table.

    One row per group, sorted by the keys. ``p_value``: the exact test's p-values of the
    groups in that order, when already computed (else they are).
    """
    frame = frame.sort([*keys, "bin"], nulls_last=True)
    if frame.height == 0:
        return frame.select(keys).with_columns(
            pl.lit(None, pl.Float64).alias("ece_ci_low"),
            pl.lit(None, pl.Float64).alias("ece_ci_high"),
        )
    arrays = bin_arrays(frame, keys)
    if p_value is None:
        p_value = null_distribution(arrays).p_value
    low, high = ece_bounds(arrays, p_value, level)
    _, bins = grid_shape(frame, keys)
    bounds = pl.DataFrame(
        [
            pl.Series("ece_ci_low", low, nan_to_null=True),
            pl.Series("ece_ci_high", high, nan_to_null=True),
        ]
    )
    return pl.concat([frame.gather_every(bins).select(keys), bounds], how="horizontal")
