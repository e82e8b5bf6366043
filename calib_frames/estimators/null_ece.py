r"""The exact distribution of the ECE of a perfectly calibrated model, per group.

What is computed
----------------
Under the hypothesis H₀ that a model is perfectly calibrated, each of its predictions is
right with the probability it states, independently ("consistency resampling",
Bröcker & Smith 2007, for *these very confidences*). With the bins fixed, bin b's number
of correct predictions C_b has mean μ_b = Σwp and variance V_b = Σwp(1 − p)
(:mod:`calib_frames.estimators._bins`; weights are frequencies), and

    ECE₀ = S / N,    S = Σ_b |C_b − μ_b|,    N = Σ_b W_b.

C_b is a sum of Bernoullis of unequal p (Poisson-binomial); it is taken as the binomial
with the *same mean and variance*, n′ = round(μ_b² / (μ_b − V_b)) trials of probability
μ_b / n′ (n′ ≤ W_b; n′ = W_b when every confidence of the bin is equal; a bin whose
confidences are all 0 or 1 has no noise), which keeps the discreteness that dominates
small bins. The bins are independent, so the distribution of S is the convolution of the
B bins' distributions of |C_b − μ_b|. It is computed *exactly* up to a grid, not drawn:

1. per group a grid of G = :data:`GRID_CELLS` cells of width h = cap / (G − 1), with
   cap = max((1.02 + B/G)·S_obs, Σ_b sd_b + 12·√(Σ_b V_b) + 12) (above the observed S and
   far in the tail of the null), and a last cell for everything beyond;
2. per (group, bin) the probability of each cell: each value |k − μ_b| of the binomials
   within μ_b ± (12 sd_b + 12) (:func:`_binomial_pmf`) split between its two nearest
   cells so that their mean is the value itself; or, where a bin has more values than
   cells, the mass of each cell from the cumulative distribution at its edges
   (:func:`_binomial_cdf`);
3. the bins' distributions convolved per group (real FFTs of length 2G, the mass beyond
   the grid folded into the last cell after each step), blocks of groups at a time;
4. the p-value from the grid read with the triangular kernel of that split (second-order
   accurate), the ``level`` quantile, and the mean of S / N (exact).

The p-value is the mid-p-value P(S > S_obs) + ½·P(S = S_obs): S is discrete, and
counting its whole atom at S_obs makes the exact test conservative (in a group of a few
hundred predictions by a fifth in the tail); an ECE of 0 has p = 1. No draws, no seed.
Against the exact convolution of the binomials (``tests/estimators/test_noise.py``) the
p-values agree to 0.5 % relative down to 1e-8 and the mean to 1e-15. FFT round-off
leaves an absolute error of about 1e-14 in the tail, so a p-value below
:data:`P_FLOOR` = 1e-12 is reported as 1e-12 and read "p < 1e-12": enough for a
correction over billions of tests (a Monte-Carlo p-value cannot go below
1/(1 + replicates), 0.001 at 1,000 draws, which no correction over 3,000 cells can act
on). Costs groups × bins × (cells + the bin's values): about 2 s for 3,000 groups × 10
bins on a loaded 2-core machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib_frames.estimators._bins import BinArrays

__all__ = ["GRID_CELLS", "P_FLOOR", "NullDistribution", "null_distribution"]

GRID_CELLS = 512
"""Cells of the grid on which the null distribution of S is computed (module docstring)."""

P_FLOOR = 1e-12
"""The smallest p-value reported: below it the FFT's round-off is as large as the tail."""

_SPAN = 12.0
"""Standard deviations (and as many units) on each side of μ_b holding a bin's values."""

_BLOCK_CELLS = 2**22
"""(groups × bins × cells) held at once: blocks of groups bound the memory (32 MiB)."""


@dataclass(frozen=True)
class NullDistribution:
    """The null distribution of the ECE of each group (module docstring), shape (groups,).

    Attributes
    ----------
    p_value
        The mid-p-value P(ECE₀ > ECE) + ½·P(ECE₀ = ECE) under H₀, at least
        :data:`P_FLOOR`; NaN for a group without weight.
    mean
        E[ECE₀], the ECE a calibrated model shows on average.
    cdf
        P(S ≤ j·h) per group and cell j (groups, cells + 1).
    step
        The grid's cell width h in units of S, per group.
    """

    p_value: np.ndarray
    mean: np.ndarray
    cdf: np.ndarray
    step: np.ndarray
    total: np.ndarray

    def quantile(self, level: float) -> np.ndarray:
        """The ``level`` quantile of ECE₀ per group (NaN without weight)."""
        cell = (self.cdf < level - 1e-12).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out: np.ndarray = np.where(self.total > 0, cell * self.step / self.total, np.nan)
        return out


def _binomial_pmf(k: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """P(K = k) for K ~ Binomial(n, p), 0 ≤ k ≤ n, 0 < p < 1 (from log-gamma functions).

    ``scipy.special`` only, imported here: ``scipy.stats`` takes about a second to import,
    longer than the computation of a report's noise floor, and ``scipy.special`` half a
    second, which the report pays in the thread that computes the noise floor while the
    bootstrap draws (:func:`~calib_frames.estimators.noise.uncertainty_from_bin_statistics`).
    """
    from scipy import special

    log = (
        special.gammaln(n + 1.0)
        - special.gammaln(k + 1.0)
        - special.gammaln(n - k + 1.0)
        + k * np.log(p)
        + (n - k) * np.log1p(-p)
    )
    out: np.ndarray = np.exp(log)
    return out


def _binomial_cdf(k: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """P(K ≤ k) for K ~ Binomial(n, p), n whole, any real k (0 below 0, 1 from n on)."""
    from scipy import special  # imported where used (see _binomial_pmf)

    inside = np.clip(np.floor(k), 0.0, n).astype(np.int64)  # bdtr takes whole counts
    value = special.bdtr(inside, np.rint(n).astype(np.int64), p)
    out: np.ndarray = np.where(k < 0, 0.0, np.where(k >= n, 1.0, value))
    return out


def _binomials(arrays: BinArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n′, p′, noisy) of the moment-matched binomial per (group, bin)."""
    mu, var = arrays.expected, arrays.variance
    spread = mu - var  # Σwp² ≥ μ²/W
    noisy = (mu > 0) & (var > 1e-12 * np.maximum(mu, 1.0)) & (spread > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        trials = np.where(noisy, np.rint(mu**2 / np.where(noisy, spread, 1.0)), 1.0)
    trials = np.where(noisy, np.maximum(trials, np.ceil(mu - 1e-9)), 1.0)
    prob = np.where(noisy, np.clip(mu / trials, 0.0, 1.0), 0.0)
    return trials, prob, noisy


def _ragged(width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, offset) of the flattened ragged ranges 0 … width − 1 of each entry."""
    owner = np.repeat(np.arange(width.size), width)
    offset = np.arange(owner.size) - np.repeat(np.cumsum(width) - width, width)
    return owner, offset


def _cell_masses(
    trials: np.ndarray, prob: np.ndarray, mu: np.ndarray, step: np.ndarray, cells: int
) -> np.ndarray:
    """P(round(|C − μ|/h) = j) for j = 0 … cells (the last: beyond), per entry (flat arrays).

    ``trials``, ``prob``, ``mu`` and ``step`` have one entry per noisy (group, bin).
    """
    sd = np.sqrt(trials * prob * (1.0 - prob))
    lo = np.maximum(0.0, np.floor(mu - _SPAN * sd - _SPAN))
    hi = np.minimum(trials, np.ceil(mu + _SPAN * sd + _SPAN))
    values = (hi - lo + 1).astype(np.int64)
    reach = np.minimum(np.ceil((_SPAN * sd + _SPAN) / step) + 2, cells).astype(np.int64)
    out = np.zeros((trials.size, cells + 1))
    by_value = values <= 2 * reach
    if by_value.any():  # each value's probability, split between its two nearest cells
        index = np.flatnonzero(by_value)
        owner, offset = _ragged(values[index])
        entry = index[owner]
        k = lo[entry] + offset
        pmf = _binomial_pmf(k, trials[entry], prob[entry])
        x = np.abs(k - mu[entry]) / step[entry]
        below = np.floor(x)
        share = x - below  # to the cell above: the mean of the cells is |k − μ|/h exactly
        cell = np.minimum(below, cells).astype(np.int64)
        flat = entry * (cells + 1)
        size = out.size
        out += np.bincount(flat + cell, weights=pmf * (1.0 - share), minlength=size).reshape(
            out.shape
        )
        out += np.bincount(
            flat + np.minimum(cell + 1, cells), weights=pmf * share, minlength=size
        ).reshape(out.shape)
    if (~by_value).any():  # wide bins: the cumulative distribution at the cells' edges
        index = np.flatnonzero(~by_value)
        owner, j = _ragged(reach[index] + 1)
        entry = index[owner]
        n, q, m, h = trials[entry], prob[entry], mu[entry], step[entry]

        def cdf(x: np.ndarray) -> np.ndarray:
            return _binomial_cdf(x, n, q)

        # cell j holds |k − μ| in [(j − ½)h, (j + ½)h): above μ, k in [a, b); below, (c, d]
        a = np.where(j == 0, m, m + (j - 0.5) * h)
        above = cdf(np.ceil(m + (j + 0.5) * h) - 1) - cdf(np.ceil(a) - 1)
        d = np.where(j == 0, np.ceil(m) - 1, np.floor(m - (j - 0.5) * h))
        below = cdf(d) - cdf(np.floor(m - (j + 0.5) * h))
        flat = entry * (cells + 1) + np.minimum(j, cells)
        out += np.bincount(
            flat, weights=np.maximum(above, 0) + np.maximum(below, 0), minlength=out.size
        ).reshape(out.shape)
    out[:, cells] += np.clip(1.0 - out.sum(axis=1), 0.0, None)  # beyond the values held
    return out


def _convolve(dist: np.ndarray, noisy: np.ndarray, cells: int) -> np.ndarray:
    """The distribution of the sum of the bins' cells per group (groups, cells + 1)."""
    groups, bins, _ = dist.shape
    acc = np.zeros((groups, cells + 1))
    acc[:, 0] = 1.0
    length = 2 * cells
    for b in range(bins):
        if not noisy[:, b].any():  # no noise in this bin for any group: a point mass at 0
            continue
        spectrum = np.fft.rfft(acc[:, :cells], length) * np.fft.rfft(dist[:, b, :cells], length)
        conv = np.clip(np.fft.irfft(spectrum, length)[:, :cells], 0.0, None)
        beyond = np.clip(1.0 - conv.sum(axis=1, keepdims=True), 0.0, None)
        acc = np.concatenate([conv, beyond], axis=1)
    return acc


def _survival(acc: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(S ≥ x·h) per group from the grid distribution ``acc`` (groups, cells + 1).

    The mass of cell j stands for S spread over (j − 1, j + 1) with the triangular density
    of the split to the two nearest cells, so the survival at x is
    P(T ≥ i + 2) + P(T = i)·(1 − d)²/2 + P(T = i + 1)·(1 − d²/2), i = ⌊x⌋, d = x − i
    (second-order accurate where the one-cell step function is first-order).
    """
    groups, width = acc.shape
    i = np.minimum(np.floor(x), width - 1).astype(np.int64)
    d = np.clip(x - i, 0.0, 1.0)
    beyond = np.concatenate([np.cumsum(acc[:, ::-1], axis=1)[:, ::-1], np.zeros((groups, 2))], 1)
    rows = np.arange(groups)
    here, above = acc[rows, i], np.append(acc, np.zeros((groups, 1)), 1)[rows, i + 1]
    survival: np.ndarray = (
        beyond[rows, i + 2] + here * (1.0 - d) ** 2 / 2 + above * (1.0 - d**2 / 2)
    )
    return survival


def null_distribution(arrays: BinArrays, *, cells: int = GRID_CELLS) -> NullDistribution:
    """The null distribution of the ECE of every group (module docstring).

    Parameters
    ----------
    arrays
        The bin sums of the groups (:func:`~calib_frames.estimators._bins.bin_arrays`).
    cells
        Cells of the grid (default :data:`GRID_CELLS`).

    Returns
    -------
    NullDistribution
        p-values, means, the cumulative distributions and their grid steps.

    Examples
    --------
    One bin of 100 predictions at 0.9 of which 60 are right: S = |60 − 90| = 30, far in
    the tail of the binomial(100, 0.9) (sd 3).

    >>> import numpy as np
    >>> from calib_frames.estimators._bins import BinArrays
    >>> one = lambda v: np.array([[v]], dtype=float)
    >>> arrays = BinArrays(weight=one(100), expected=one(90), variance=one(9),
    ...                    excess=one(30), lower=one(0.9))
    >>> null = null_distribution(arrays)
    >>> float(null.p_value[0]), round(float(null.mean[0]), 3)  # E|C − 90| / 100
    (1e-12, 0.024)
    """
    groups, bins = arrays.weight.shape
    total = arrays.total
    trials, prob, noisy = _binomials(arrays)
    mu = arrays.expected
    sd = np.sqrt(trials * prob * (1.0 - prob)) * noisy
    observed = np.abs(arrays.excess)
    s_obs = observed.sum(axis=1)
    reach = sd.sum(axis=1) + _SPAN * np.sqrt((sd**2).sum(axis=1)) + _SPAN
    cap = np.maximum((1.02 + bins / cells) * s_obs, reach)
    step = cap / (cells - 1)
    cdf = np.zeros((groups, cells + 1))
    tail = np.zeros(groups)
    mean = np.zeros(groups)
    block = max(1, _BLOCK_CELLS // (bins * (cells + 1)))
    for start in range(0, groups, block):
        part = slice(start, min(start + block, groups))
        size = part.stop - part.start
        dist = np.zeros((size, bins, cells + 1))
        dist[:, :, 0] = 1.0
        where = noisy[part]
        if where.any():
            h = np.broadcast_to(step[part][:, None], (size, bins))[where]
            dist[where] = _cell_masses(trials[part][where], prob[part][where], mu[part][where], h,
                                       cells)  # fmt: skip
        acc = _convolve(dist, where, cells)
        cdf[part] = np.cumsum(acc, axis=1)
        tail[part] = _survival(acc, s_obs[part] / step[part])
        mean[part] = (acc * np.arange(cells + 1)).sum(axis=1) * step[part]
    with np.errstate(invalid="ignore", divide="ignore"):
        has = total > 0
        tail = np.where(s_obs > 0, tail, 1.0)  # an ECE of 0 is no evidence at all
        p_value = np.where(has, np.clip(tail, P_FLOOR, 1.0), np.nan)
        mean = np.where(has, mean / np.where(has, total, 1.0), np.nan)
    return NullDistribution(p_value=p_value, mean=mean, cdf=cdf, step=step, total=total)
