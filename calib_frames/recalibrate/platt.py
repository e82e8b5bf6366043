r"""Platt scaling: a logistic regression of the outcome on logit(confidence), per group.

The recalibrated confidence is σ(a·logit(p) + b), with logit(p) = ln p − ln(1 − p) of
p clipped to [ε, 1 − ε] (``epsilon``, default 1e-12). (a, b) minimise the weighted
cross-entropy Σ wᵢ [softplus(ηᵢ) − tᵢ ηᵢ], ηᵢ = a zᵢ + b, against targets t:

* ``smoothing=False`` (default): t = y, the maximum-likelihood logistic regression
  (netcal's ``LogisticCalibration``, HELM's Platt scaling).
* ``smoothing=True``: Platt's (1999) out-of-sample targets t = (N₊ + 1)/(N₊ + 2) for
  positives and 1/(N₋ + 2) for negatives (N± the class weights of the group). This is
  what scikit-learn's ``CalibratedClassifierCV(method="sigmoid")`` fits
  (``_sigmoid_calibration``); it keeps (a, b) finite when the classes are separable.
  scikit-learn writes the map as σ(−(A f + B)), so A = −a and B = −b.

The fit is Newton's method on (a, b) for all groups at once (2 × 2 systems solved in
closed form per group, with a tiny ridge for groups whose confidences are all equal,
where only a·z + b is identified), from the identity (a, b) = (1, 0), with step halving
whenever a step would raise a group's loss. A group with only one class has no
maximum-likelihood (a, b) and is refused unless ``smoothing=True``; classes separated
by the confidence (every correct prediction at least as confident as every wrong one,
or the reverse: complete or quasi-complete separation) drive a to infinity and are
reported with ``converged`` False, whatever the solver's steps did.
Per group, in memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from calib_frames.arguments import FLAG, check_arguments
from calib_frames.recalibrate import _core
from calib_frames.recalibrate._apply import (
    APPLIED,
    ApplyInput,
    apply_input,
    param,
    with_mapped,
)
from calib_frames.recalibrate.splits import SCHEME, fit_scheme
from calib_frames.schema import PLATT
from calib_frames.validation import Frame, return_like

__all__ = ["apply_platt", "fit_platt"]

_PARAMS_IN = PLATT.only("slope", "intercept", "in_sample")
"""What apply reads of a parameters table: the keys, the parameters and ``in_sample``."""


@check_arguments(
    **SCHEME, smoothing=FLAG, epsilon=_core.EPSILON, tol=_core.TOL, max_iter=_core.MAX_ITER
)
def fit_platt(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    split: str | None = None,
    fit_value: object = "fit",
    fold: str | None = None,
    in_sample: bool = False,
    smoothing: bool = False,
    epsilon: float = 1e-12,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> Frame:
    """Fit Platt scaling σ(a·logit(p) + b) per group (vectorised Newton).

    Per group, in memory (see the module docstring for the model and the targets).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame with one row per prediction.
    confidence, correct
        Probability in [0, 1] and outcome (boolean or 0/1).
    by
        Group key column(s) (``None``: one map for the frame).
    weight
        Optional non-negative row weights.
    split, fit_value, fold, in_sample
        The fitting scheme (:mod:`calib_frames.recalibrate.splits`).
    smoothing
        Use Platt's target smoothing (scikit-learn's ``method="sigmoid"``).
    epsilon
        Confidences are clipped to [ε, 1 − ε] before the logit.
    tol
        Relative tolerance on the Newton step.
    max_iter
        Most Newton steps.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input; computed at call time)
        Keys…, [fold], then the columns of :data:`calib_frames.schema.PLATT`: ``slope``
        (a), ``intercept`` (b), ``nll_before``/``nll_after`` (mean NLL of the outcomes at
        the identity and at the fit), ``count``, ``iterations``, ``converged``,
        ``clipped``, ``fitted_on``, ``in_sample``.

    Raises
    ------
    TableError
        Missing or mistyped columns.
    DataError
        Invalid rows; a group with one class only (without ``smoothing``) or whose
        weights sum to 0; a ``split=`` column with no row equal to ``fit_value``.
    ArgumentError
        Invalid arguments.

    See Also
    --------
    apply_platt : the recalibrated confidences.
    fit_temperature : the one-parameter special case a = 1/T, b = 0.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import fit_platt
    >>> df = pl.DataFrame(
    ...     {"confidence": [0.9, 0.8, 0.7, 0.6, 0.9, 0.3], "correct": [1, 1, 0, 1, 0, 0]}
    ... )
    >>> params = fit_platt(df)
    >>> params.select(pl.col("slope", "intercept").round(4), "converged").rows()
    [(0.5593, -0.5849, True)]
    """
    eps, rtol = float(epsilon), float(tol)
    scheme = fit_scheme(split=split, fit_value=fit_value, fold=fold, in_sample=in_sample)
    fit = _core.binary_fit_rows(
        predictions, PLATT, scheme, by=by, confidence=confidence, correct=correct, weight=weight
    )
    data, clipped = _core.collect_binary(fit, epsilon=eps)
    n = data.n_groups
    if n == 0:
        return return_like(predictions, _core.params_frame(data.groups, None, fit, PLATT).lazy())
    g = data.group
    z, y, w = data.columns["z"], data.columns["y"], data.columns["w"]
    positive = _core.group_sum(g, w * y, n)
    negative = _core.group_sum(g, w * (1.0 - y), n)
    if smoothing:
        t = np.where(y > 0, ((positive + 1.0) / (positive + 2.0))[g], (1.0 / (negative + 2.0))[g])
    else:
        _core.raise_flagged(
            data.groups,
            (positive <= 0) | (negative <= 0),
            correct,
            "of one class only, where Platt scaling has no maximum-likelihood fit (pass "
            "smoothing=True for Platt's targets, or use fit_temperature)",
            keys=fit.keys,
            show_value=False,
            unit="groups",
        )
        t = y
    a, b, iterations, converged = _newton_2d(z, t, w, g, n, rtol=rtol, max_iter=max_iter)
    if not smoothing:
        # the loss only approaches its infimum (0 on the separated rows) as |a| → ∞: the
        # Newton steps shrink relative to it and look converged, but there is no minimum
        converged &= ~_separated(z, y, w, g, n)
    weight_total = _core.group_sum(g, w, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        before = _loss(np.ones(n), np.zeros(n), z, t=y, w=w, g=g, n=n) / weight_total
        after = _loss(a, b, z, t=y, w=w, g=g, n=n) / weight_total
    count = np.bincount(g, minlength=n)
    values = {
        "slope": a,
        "intercept": b,
        "nll_before": before,
        "nll_after": after,
        "count": count,
        "iterations": iterations,
        "converged": converged,
        "clipped": clipped,
    }
    return return_like(predictions, _core.params_frame(data.groups, values, fit, PLATT).lazy())


def _separated(z: np.ndarray, y: np.ndarray, w: np.ndarray, g: np.ndarray, n: int) -> np.ndarray:
    """Per group: the logits separate the classes, so no maximum-likelihood (a, b) exists.

    Complete or quasi-complete separation of a logistic regression on one covariate:
    every positive's logit is ≥ every negative's, or every positive's is ≤ every
    negative's (rows of weight 0 do not count), unless every row has the same logit.
    Groups of one class are refused before.
    """
    counted = w > 0
    positive, negative = counted & (y > 0), counted & (y <= 0)

    def extreme(rows: np.ndarray, ufunc: np.ufunc, start: float) -> np.ndarray:
        out = np.full(n, start)
        ufunc.at(out, g[rows], z[rows])
        return out

    low_pos, high_pos = (
        extreme(positive, np.minimum, np.inf),
        extreme(positive, np.maximum, -np.inf),
    )
    low_neg, high_neg = (
        extreme(negative, np.minimum, np.inf),
        extreme(negative, np.maximum, -np.inf),
    )
    # every row at one logit: only a·z + b is identified, and its maximum exists
    one_point = (low_pos == high_pos) & (low_neg == high_neg) & (low_pos == low_neg)
    separated: np.ndarray = ((low_pos >= high_neg) | (high_pos <= low_neg)) & ~one_point
    return separated


def _loss(
    a: np.ndarray,
    b: np.ndarray,
    /,
    z: np.ndarray,
    *,
    t: np.ndarray,
    w: np.ndarray,
    g: np.ndarray,
    n: int,
) -> np.ndarray:
    eta = a[g] * z + b[g]
    return _core.group_sum(g, w * (np.logaddexp(0.0, eta) - t * eta), n)


def _newton_2d(
    z: np.ndarray,
    t: np.ndarray,
    w: np.ndarray,
    g: np.ndarray,
    n: int,
    *,
    rtol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Damped Newton for (a, b) of every group together; step halving on a loss increase."""
    a, b = np.ones(n), np.zeros(n)
    active = np.ones(n, dtype=bool)
    converged = np.zeros(n, dtype=bool)
    iterations = np.zeros(n, dtype=np.int64)
    loss = _loss(a, b, z, t=t, w=w, g=g, n=n)
    for _ in range(max_iter):
        if not active.any():
            break
        iterations += active
        eta = a[g] * z + b[g]
        with np.errstate(over="ignore"):
            mu = 1.0 / (1.0 + np.exp(-eta))
        r = w * (mu - t)
        s = w * mu * (1.0 - mu)
        ga, gb = _core.group_sum(g, r * z, n), _core.group_sum(g, r, n)
        sz = s * z
        haa, hab, hbb = (
            _core.group_sum(g, sz * z, n),
            _core.group_sum(g, sz, n),
            _core.group_sum(g, s, n),
        )
        ridge = 1e-10 * (haa + hbb) + 1e-300
        haa, hbb = haa + ridge, hbb + ridge
        det = haa * hbb - hab * hab
        with np.errstate(divide="ignore", invalid="ignore"):
            da = np.where(det > 0, (hbb * ga - hab * gb) / det, 0.0)
            db = np.where(det > 0, (haa * gb - hab * ga) / det, 0.0)
        da = np.where(active & np.isfinite(da), da, 0.0)
        db = np.where(active & np.isfinite(db), db, 0.0)
        step = np.ones(n)
        accepted = ~active
        new_a, new_b, new_loss = a, b, loss
        for _halving in range(40):
            cand_a, cand_b = a - step * da, b - step * db
            cand_loss = _loss(cand_a, cand_b, z, t=t, w=w, g=g, n=n)
            ok = ~accepted & (cand_loss <= loss + 1e-13 * np.abs(loss))
            new_a = np.where(ok, cand_a, new_a)
            new_b = np.where(ok, cand_b, new_b)
            new_loss = np.where(ok, cand_loss, new_loss)
            accepted |= ok
            if accepted.all():
                break
            step = np.where(accepted, step, step * 0.5)
        small = (np.abs(da) <= rtol * (1.0 + np.abs(a))) & (np.abs(db) <= rtol * (1.0 + np.abs(b)))
        # the decrease Newton predicts, g·d/2, is at rounding level: nothing left to gain
        # (the step itself can stay large along a direction the loss does not depend
        # on, as when all confidences of a group are equal)
        small |= 0.5 * (ga * da + gb * db) <= 1e-15 * np.abs(loss)
        stuck = active & ~accepted  # no decrease even for tiny steps: at the optimum to rounding
        done = active & (small | stuck)
        a, b, loss = new_a, new_b, new_loss
        converged |= done
        active &= ~done
    return a, b, iterations, converged


@check_arguments(**APPLIED, epsilon=_core.EPSILON)
def apply_platt(
    predictions: Frame,
    params: pl.DataFrame | pl.LazyFrame,
    *,
    confidence: str = "confidence",
    output: str = "recalibrated",
    split: str | None = None,
    fit_value: object = "fit",
    epsilon: float = 1e-12,
) -> Frame:
    """Add Platt-scaled confidences σ(a·logit(p) + b): a lazy join on the parameters' keys.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame with the parameters' keys (and fold column if
        cross-fitted) and ``confidence``.
    params
        The table returned by :func:`fit_platt` (read once, at call time).
    confidence, output
        Input column and the name of the new column.
    split, fit_value
        If given, rows whose ``split`` equals ``fit_value`` are labelled in-sample.
    epsilon
        Clipping before the logit (use the fit's value).

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``predictions``)
        ``predictions`` with ``output`` (null where the group has no parameters or the
        confidence is null/invalid) and ``in_sample``; row order kept.

    Raises
    ------
    TableError
        Missing columns, key dtypes that differ, an existing ``output`` column, a
        parameters table that repeats a group (e.g. two fits concatenated).
    DataError
        Parameters that are not finite (or out of range), e.g. a hand-edited table.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import apply_platt
    >>> params = pl.DataFrame({"slope": [0.5], "intercept": [0.0], "in_sample": [False]})
    >>> out = apply_platt(pl.DataFrame({"confidence": [0.9, 0.5]}), params)
    >>> out["recalibrated"].round(4).to_list()
    [0.75, 0.5]
    """
    eps = float(epsilon)
    finite = "not a finite number"
    applied: ApplyInput = apply_input(
        predictions,
        params,
        _PARAMS_IN,
        columns={"confidence": confidence},
        output=output,
        split=split,
        fit_value=fit_value,
        values={c: (pl.col(c).is_finite(), finite) for c in ("slope", "intercept")},
    )
    p = pl.col(confidence).cast(pl.Float64)
    eta = pl.col(param("slope")) * _core.logit_expr(p, eps) + pl.col(param("intercept"))
    value = pl.when(p.is_between(0.0, 1.0)).then(_core.sigmoid_expr(eta))
    result = with_mapped(applied, value, ["slope", "intercept"], output=output, split=split,
                         fit_value=fit_value, source=confidence)  # fmt: skip
    return return_like(predictions, result)
