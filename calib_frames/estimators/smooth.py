"""Smooth ECE (Błasiok and Nakkiran 2023) and its smoothed reliability curve, per group.

The smooth ECE of predictions f with outcomes y at bandwidth σ is the mean absolute
kernel-smoothed residual,

    smECE_σ = ∫ |r̂_σ(t)| δ̂_σ(t) dt / ∫ δ̂_σ(t) dt,   r̂_σ = K_σ * (f − y) / δ̂_σ,
    δ̂_σ = K_σ * 1,

with K_σ the Gaussian kernel *reflected* at 0 and 1 (mass that would leave [0, 1]
is mirrored back). Its principled bandwidth is the fixed point σ* = smECE_σ*, which
exists because smECE_σ decreases in σ; the reported value is smECE at σ*
(Błasiok and Nakkiran, "Smooth ECE: Principled Reliability Diagrams via Kernel
Smoothing", 2023).

Discretisation (that of the authors' ``relplot`` package, version 1.0.3, reproduced
to rounding so that the numbers agree to ~1e-12)
-----------------------------------------------------------------------------
* **Grid.** With ``E = max(2000, round(20/σ)) // 2 + 1`` grid nodes ``j/(E−1)``
  (1001 for σ ≥ 0.01), every row's value is split linearly between the two nodes
  around its confidence (node index ``min(floor(f·(E−1)), E−2)``).
* **Kernel.** The node weights are convolved with ``exp(−(t−½)²/(2σ²))/(√(2π)σ)``
  sampled at ``t = linspace(0, 1, E)``, the node sequence being mirrored at both ends
  without repeating the end node (``… v₂ v₁ | v₀ … v_{E−1} | v_{E−2} …``).
* **Mesh.** The smoothed sums are linearly interpolated to ``T = max(round(10/σ),
  200)`` equally spaced points on [0, 1]; the density gets ``+1e-4`` (unnormalised:
  it is a sum over rows, so this floor is relative to the row count), and
  ``smECE_σ = Σ_t |r̂(t)|·δ̂(t) / Σ_t δ̂(t)`` over the mesh.
* **Bandwidth search.** σ* is located by bisection on [0, 1]: σ = 1 if
  ``1 < smECE_1``; else ten halvings keep the *upper* end ``σ`` with
  ``σ ≥ smECE_σ`` (σ below ``eps`` = 0.001 counts as too small). The reported
  bandwidth is that upper end (resolution 2⁻¹⁰) and the reported value is smECE there.
* **Curve.** The reliability curve is ``(K_σ* * y) / (K_σ* * 1 + 1e-4)`` at
  ``points`` (default 200) equally spaced x on [0, 1]; the ``density`` column is
  ``(K_σ* * 1)/n`` there (relplot's KDE of the confidences, no boundary correction).

How it is computed
------------------
Per group, in memory: the rows of all groups are collected once; the grid sums
(``np.bincount``) depend only on the grid size, so the 1001-node grid is summed once
and reused by every bisection step. Each step evaluates all groups at once, each with
its own kernel, by one batched real FFT of the mirrored node sums (it agrees with
relplot's direct ``np.convolve`` to ~1e-15 relative, far below what the comparisons
σ < smECE_σ or the reported value can resolve). The reliability curve, whose ratio
``(K * y)/(K * 1 + 1e-4)`` is sensitive to absolute error where there is no data, is
convolved directly (a batched dot product over sliding windows). Only groups whose
bandwidth falls below 0.01 need a finer grid; they are evaluated in one batch per grid
size.

Weights
-------
With ``weight=``, every row enters the grid sums with its weight: the kernel sums are
``K_σ * (w·(f − y))`` and ``K_σ * w`` (the curve's ``K_σ * (w·y)``, its density
``(K_σ * w)/Σw``): the weighted kernel estimate. Unit weights give the unweighted
numbers bit for bit, and a row of weight 2 counts as the row twice (to the rounding of
the sums). The density floor ``1e-4`` is then in units of weight, as it is in rows
without weights: scaling every weight by c changes the result only where that floor
matters.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import polars as pl
from numpy.lib.stride_tricks import sliding_window_view

from calib_frames.arguments import Integer, Number, check_arguments
from calib_frames.estimators._groups import P, W, Y, attach, group_rows, grouped
from calib_frames.schema import SMOOTH_ECE, SMOOTH_RELIABILITY_CURVE
from calib_frames.validation import Frame

__all__ = ["smooth_ece", "smooth_reliability_curve"]

F64Array = npt.NDArray[np.float64]
I64Array = npt.NDArray[np.int64]

_DENSITY_FLOOR = 1e-4  # relplot's BaseKernelMixin.smooth eps
_MESH = 200  # relplot's config.smECE_mesh_pts and plot_mesh_pts
_REFINE = 10  # relplot's search_param refine
_GRID = 1001  # relplot's grid size for every σ >= 0.01


_BANDWIDTH = Number(greater_than=0, at_most=1) | None
_EPS = Number(greater_than=0, less_than=1)


@check_arguments(bandwidth=_BANDWIDTH, eps=_EPS)
def smooth_ece(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    bandwidth: float | None = None,
    eps: float = 0.001,
) -> Frame:
    """Smooth ECE with its principled (fixed-point) bandwidth, per group.

    Per group, in memory. Formula, discretisation and bandwidth search are those of
    the module docstring (Błasiok and Nakkiran 2023, as in ``relplot.smECE``).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per prediction.
    confidence
        Column of predicted probabilities in [0, 1].
    correct
        Column of outcomes: boolean or 0/1.
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    weight
        Optional column of row weights > 0: the kernel sums become weighted sums
        (module docstring, *Weights*); weight 2 counts as the row repeated. They are
        frequency weights: rescale normalised weights (summing to 1) to sum to the
        row count, or relplot's density floor of 1e-4 rows swamps them.
    bandwidth
        A fixed σ in (0, 1] instead of the fixed-point search (``relplot.smECE_sigma``).
    eps
        Smallest bandwidth the search considers (relplot's default 0.001).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``count`` (UInt64 rows), ``smooth_ece`` and ``bandwidth``
        (the σ used), one row per group, sorted by keys. An empty frame without keys
        gives one row with count 0, smooth ECE 0.0 and a null bandwidth.

    Raises
    ------
    TableError
        Missing or non-numeric columns, keys clashing with output names.
    DataError
        Confidences outside [0, 1] (or null/NaN), outcomes not boolean or 0/1, weights
        that are not finite and > 0.
    ArgumentError
        ``bandwidth`` not in (0, 1], ``eps`` not in (0, 1).

    See Also
    --------
    smooth_reliability_curve : the smoothed reliability diagram at this bandwidth.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.estimators.smooth import smooth_ece
    >>> df = pl.DataFrame({
    ...     "model": ["a"] * 4 + ["b"] * 4,
    ...     "confidence": [0.9, 0.8, 0.7, 0.6, 0.9, 0.8, 0.7, 0.6],
    ...     "correct": [1, 1, 0, 1, 0, 0, 0, 1],
    ... })
    >>> smooth_ece(df, by="model").with_columns(pl.col("smooth_ece").round(4))
    shape: (2, 4)
    ┌───────┬───────┬────────────┬───────────┐
    │ model ┆ count ┆ smooth_ece ┆ bandwidth │
    │ ---   ┆ ---   ┆ ---        ┆ ---       │
    │ str   ┆ u64   ┆ f64        ┆ f64       │
    ╞═══════╪═══════╪════════════╪═══════════╡
    │ a     ┆ 4     ┆ 0.0958     ┆ 0.09668   │
    │ b     ┆ 4     ┆ 0.5156     ┆ 0.515625  │
    └───────┴───────┴────────────┴───────────┘
    """
    prepared = group_rows(
        predictions, confidence=confidence, correct=correct, by=by, weight=weight,
        columns=SMOOTH_ECE.columns,
    )  # fmt: skip
    keys = prepared.keys

    def compute(frame: pl.DataFrame) -> pl.DataFrame:
        group, table, n_groups, frame = grouped(frame, keys)
        if frame.height == 0:
            return prepared.no_rows(count=0, smooth_ece=0.0)
        p, y, w = _values(frame)
        counts = np.bincount(group, minlength=n_groups).astype(np.uint64)
        if bandwidth is None:
            value, sigma = _fixed_point(p, y, w, group, n_groups, eps=eps)
        else:
            sigma = np.full(n_groups, float(bandwidth))
            value = _smece(p, y, w, group, sigma)
        return attach(
            table,
            [
                pl.Series("count", counts, dtype=pl.UInt64),
                pl.Series("smooth_ece", value, dtype=pl.Float64),
                pl.Series("bandwidth", sigma, dtype=pl.Float64),
            ],
        )

    return prepared.result(predictions, compute)


@check_arguments(bandwidth=_BANDWIDTH, points=Integer(2), eps=_EPS)
def smooth_reliability_curve(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    bandwidth: float | None = None,
    points: int = _MESH,
    eps: float = 0.001,
) -> Frame:
    """The smoothed reliability curve E[y | f = x] of Błasiok and Nakkiran, per group.

    Per group, in memory. At each of ``points`` equally spaced x in [0, 1]:
    ``y = (K_σ * outcome)(x) / ((K_σ * 1)(x) + 1e-4)`` and ``density = (K_σ * 1)(x)/n``,
    with σ the group's smooth-ECE bandwidth (or ``bandwidth``) and the discretisation
    of the module docstring (relplot's ``prepare_rel_diagram`` without bootstrap).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per prediction.
    confidence
        Column of predicted probabilities in [0, 1].
    correct
        Column of outcomes: boolean or 0/1.
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    weight
        Optional row weights > 0, as in :func:`smooth_ece` (``n`` is then Σw).
    bandwidth
        A fixed σ in (0, 1]; default: the fixed point of :func:`smooth_ece`.
    points
        Number of x values (≥ 2; relplot plots 200).
    eps
        Smallest bandwidth the search considers.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``x``, ``y`` (the smoothed accuracy) and ``density``;
        ``points`` rows per group, sorted by keys and x.

    Raises
    ------
    TableError, DataError, ArgumentError
        As :func:`smooth_ece`; ``points`` < 2 is an ArgumentError.

    See Also
    --------
    smooth_ece : the smooth ECE and its bandwidth.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.estimators.smooth import smooth_reliability_curve
    >>> df = pl.DataFrame({"confidence": [0.1, 0.3, 0.5, 0.7, 0.9], "correct": [0, 0, 1, 1, 1]})
    >>> curve = smooth_reliability_curve(df, points=5)
    >>> curve.with_columns(pl.col("y", "density").round(3))
    shape: (5, 3)
    ┌──────┬───────┬─────────┐
    │ x    ┆ y     ┆ density │
    │ ---  ┆ ---   ┆ ---     │
    │ f64  ┆ f64   ┆ f64     │
    ╞══════╪═══════╪═════════╡
    │ 0.0  ┆ 0.013 ┆ 1.0     │
    │ 0.25 ┆ 0.177 ┆ 0.997   │
    │ 0.5  ┆ 0.733 ┆ 0.998   │
    │ 0.75 ┆ 0.985 ┆ 0.997   │
    │ 1.0  ┆ 1.0   ┆ 1.0     │
    └──────┴───────┴─────────┘
    """
    prepared = group_rows(
        predictions, confidence=confidence, correct=correct, by=by, weight=weight,
        columns=SMOOTH_RELIABILITY_CURVE.columns,
    )  # fmt: skip
    keys, schema = prepared.keys, prepared.schema

    def compute(frame: pl.DataFrame) -> pl.DataFrame:
        group, table, n_groups, frame = grouped(frame, keys)
        if frame.height == 0:
            return pl.DataFrame(schema=schema)
        p, y, w = _values(frame)
        if bandwidth is None:
            sigma = _fixed_point(p, y, w, group, n_groups, eps=eps)[1]
        else:
            sigma = np.full(n_groups, float(bandwidth))
        total = np.bincount(group, weights=w, minlength=n_groups)
        series = np.stack([w * y, w, w / total[group]])
        mesh = np.full(n_groups, points, dtype=np.int64)
        smoothed = _smoothed_on_mesh(p, series, group, sigma, mesh)
        accuracy = smoothed[0] / (smoothed[1] + _DENSITY_FLOOR)
        x = _mesh_values(mesh, points)[0]
        repeated = table[np.repeat(np.arange(n_groups), points).tolist()] if keys else table
        return attach(
            repeated,
            [
                pl.Series("x", np.tile(x, n_groups), dtype=pl.Float64),
                pl.Series("y", accuracy.reshape(-1), dtype=pl.Float64),
                pl.Series("density", smoothed[2].reshape(-1), dtype=pl.Float64),
            ],
        )

    return prepared.result(predictions, compute)


def _values(frame: pl.DataFrame) -> tuple[F64Array, F64Array, F64Array]:
    """Confidence, outcome and weight (1.0 without a weight column) of the gathered rows."""
    p = frame[P].to_numpy().astype(np.float64)
    y = frame[Y].to_numpy().astype(np.float64)
    w = frame[W].to_numpy().astype(np.float64) if W in frame.columns else np.ones_like(p)
    return p, y, w


def _fixed_point(
    p: F64Array, y: F64Array, w: F64Array, group: I64Array, n_groups: int, *, eps: float
) -> tuple[F64Array, F64Array]:
    """As relplot's ``search_param`` bisection, run for every group at once."""
    one = np.ones(n_groups)
    cache: dict[int, F64Array] = {}
    at_one = _smece(p, y, w, group, one, exact=False, cache=cache)
    found = at_one > 1.0  # predicate(1): 1 < smECE_1 (then σ = 1)
    start, end = one.copy(), np.zeros(n_groups)
    for _ in range(_REFINE):
        mid = (start + end) / 2
        small = mid < eps
        # groups that need no evaluation get σ = 1 (cheap, result unused)
        sigma = np.where(found | small, 1.0, mid)
        at_mid = _smece(p, y, w, group, sigma, exact=False, cache=cache)
        ok = small | (mid < at_mid)
        move_end = ~found & ok
        end = np.where(move_end, mid, end)
        start = np.where(~found & ~ok, mid, start)
    # the reported value: smECE at the bandwidth found (FFT: ~1e-15 relative to direct sums)
    return _smece(p, y, w, group, start, exact=False, cache=cache), start


def _smece(
    p: F64Array,
    y: F64Array,
    w: F64Array,
    group: I64Array,
    sigma: F64Array,
    *,
    exact: bool = True,
    cache: dict[int, F64Array] | None = None,
) -> F64Array:
    """smECE_σ of every group (σ per group), as relplot's ``smooth_ece``.

    ``exact=False`` convolves by FFT: faster, and equal to the direct sums to ~1e-15
    relative, which is all that the bisection's comparisons σ < smECE_σ need.
    """
    mesh = np.maximum(np.round(10.0 / sigma), _MESH).astype(np.int64)
    series = np.stack([w * (p - y), w])
    smoothed = _smoothed_on_mesh(p, series, group, sigma, mesh, exact=exact, cache=cache)
    density = smoothed[1] + _DENSITY_FLOOR
    residual = smoothed[0] / density
    valid = np.arange(smoothed.shape[2])[None, :] < mesh[:, None]
    numerator = np.where(valid, np.abs(residual) * density, 0.0).sum(axis=1)
    denominator = np.where(valid, density, 0.0).sum(axis=1)
    result: F64Array = numerator / denominator
    return result


def _grid_size(sigma: F64Array) -> I64Array:
    """As relplot's ``GaussianKernel.apply`` grid: ``max(2000, round(20/σ)) // 2 + 1``."""
    size: I64Array = np.maximum(np.round(20.0 / sigma), 2000).astype(np.int64) // 2 + 1
    return size


def _mesh_values(mesh: I64Array, width: int) -> F64Array:
    """``np.linspace(0, 1, T)`` for every row's T, padded with 0 to ``width``."""
    index = np.arange(width, dtype=np.float64)[None, :]
    step = 1.0 / (mesh.astype(np.float64) - 1.0)
    values: F64Array = index * step[:, None]
    values[np.arange(mesh.size), mesh - 1] = 1.0
    values[index >= mesh[:, None]] = 0.0
    return values


def _smoothed_on_mesh(
    p: F64Array,
    series: F64Array,
    group: I64Array,
    sigma: F64Array,
    mesh: I64Array,
    *,
    exact: bool = True,
    cache: dict[int, F64Array] | None = None,
) -> F64Array:
    """Kernel sums ``(K_σ * series)(t)`` per group on its mesh: shape (S, G, max T).

    ``series`` has shape (S, n): S row-level value series smoothed at once. The grid
    sums do not depend on σ, only on the grid size: with a ``cache`` (one per series),
    those of the usual 1001-node grid are computed once for all groups and reused by
    every bisection step.
    """
    n_series, n_groups = series.shape[0], sigma.size
    width = int(mesh.max())
    out = np.zeros((n_series, n_groups, width))
    grid = _grid_size(sigma)
    for size in np.unique(grid).tolist():  # one batch per grid size (one unless σ < 0.01)
        members = np.flatnonzero(grid == size)
        rows: slice | npt.NDArray[np.bool_]
        if cache is not None and (size in cache or size == _GRID):
            if size not in cache:
                cache[size] = _grid_sums(p, series, group, n_groups, size)
            sums = cache[size][:, members, :]
        else:
            if members.size == n_groups:
                rows, local = slice(None), group
            else:
                position = np.full(n_groups, -1, dtype=np.int64)
                position[members] = np.arange(members.size)
                mask = position[group] >= 0
                rows, local = mask, position[group[mask]]
            sums = _grid_sums(p[rows], series[:, rows], local, members.size, size)
        convolve = _reflected_convolution if exact else _reflected_convolution_fft
        smoothed = convolve(sums, sigma[members], size)
        out[:, members, :] = _interpolate(smoothed, mesh[members], width)
    return out


def _grid_sums(
    p: F64Array, series: F64Array, local: I64Array, n_groups: int, size: int
) -> F64Array:
    """As relplot's ``smooth_round_to_grid`` for every group and series: (S, G, E)."""
    scaled = p * (size - 1)
    node = np.clip(scaled.astype(np.int64), 0, size - 2)
    frac = scaled - node
    index = local * size + node
    total = n_groups * size
    sums = np.empty((series.shape[0], n_groups, size))
    for s in range(series.shape[0]):  # 2 or 3 series
        low = np.bincount(index, weights=(1 - frac) * series[s], minlength=total)
        high = np.bincount(index + 1, weights=frac * series[s], minlength=total)
        sums[s] = (low + high).reshape(n_groups, size)
    return sums


def _kernel(sigma: F64Array, size: int) -> F64Array:
    """As relplot's ``GaussianKernel.kernel_ev`` for every group's σ: (G, E)."""
    t = np.arange(size, dtype=np.float64) * (1.0 / (size - 1))
    t[-1] = 1.0
    var = sigma**2
    kernel: F64Array = np.exp(-(t[None, :] - 0.5) * (t[None, :] - 0.5) / (2 * var[:, None]))
    kernel /= (np.sqrt(2 * np.pi) * sigma)[:, None]
    return kernel


def _extended(sums: F64Array) -> F64Array:
    """The node sums mirrored at both ends without repeating the end node."""
    flipped = sums[..., ::-1]
    return np.concatenate([flipped[..., :-1], sums, flipped[..., 1:]], axis=-1)


def _reflected_convolution_fft(sums: F64Array, sigma: F64Array, size: int) -> F64Array:
    """:func:`_reflected_convolution` by FFT (all groups in one batched transform)."""
    from scipy import fft

    extended = _extended(sums)
    kernel = _kernel(sigma, size)
    length = fft.next_fast_len(3 * size - 2, real=True)  # no wrap-around where we read
    product = fft.rfft(extended, length, axis=-1) * fft.rfft(kernel, length, axis=-1)[None]
    full = fft.irfft(product, length, axis=-1)
    start = size // 2 + size - 1  # np.convolve(..., "valid")[E//2:] in full-mode indices
    result: F64Array = full[..., start : start + size]
    return result


def _reflected_convolution(sums: F64Array, sigma: F64Array, size: int) -> F64Array:
    """As relplot's ``ReflectedGaussianKernel.convolve``, each group with its own σ."""
    kernel = _kernel(sigma, size)
    extended = _extended(sums)
    half = size // 2
    crop = extended[..., half : half + 2 * size - 1]
    windows = sliding_window_view(crop, size, axis=-1)  # [i, j] = extended[half + i + j]
    reversed_kernel = kernel[:, ::-1]
    # Far from its centre the kernel underflows to exactly 0: those terms add nothing,
    # so the sum runs over the band where some group's kernel is positive (for small σ,
    # whose grid is large, a few hundred of the E terms).
    band = np.flatnonzero((reversed_kernel > 0).any(axis=0))
    lo, hi = (int(band[0]), int(band[-1]) + 1) if band.size else (0, 0)
    result: F64Array = np.einsum("sgij,gj->sgi", windows[..., lo:hi], reversed_kernel[:, lo:hi])
    return result


def _interpolate(smoothed: F64Array, mesh: I64Array, width: int) -> F64Array:
    """As relplot's ``interpolate`` from the E grid nodes to each group's T mesh points."""
    size = smoothed.shape[-1]
    t = _mesh_values(mesh, width)
    bucket = 1 / (size - 1)
    node = np.clip((t * (size - 1)).astype(np.int64), 0, size - 2)
    residual = (t - node * bucket) / bucket
    left = np.take_along_axis(smoothed, node[None, :, :], axis=-1)
    right = np.take_along_axis(smoothed, node[None, :, :] + 1, axis=-1)
    values: F64Array = left * (1 - residual) + right * residual
    values[:, np.arange(width)[None, :].repeat(mesh.size, 0) >= mesh[:, None]] = 0.0
    return values
