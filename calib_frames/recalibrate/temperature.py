r"""Temperature scaling: one temperature T per group, fitted by minimising the NLL.

Two inputs:

* ``kind="confidence"`` — binary confidences p with outcomes y (the probability that
  the answer is correct, or that an event happens). The recalibrated confidence is
  σ(logit(p) / T), with logit(p) = ln p − ln(1 − p) of p clipped to [ε, 1 − ε]
  (``epsilon``, default 1e-12, so that 0 and 1 have a finite logit of about ∓27.6;
  the clipped rows are counted in the ``clipped`` column).
* ``kind="options"`` — multiple choice: one row per (question, option) with the
  option's log-likelihood ℓ and an ``is_gold`` flag (exactly one gold option per
  question). The recalibrated probability of an option is the softmax of ℓ / T over
  the options of its question.

With β = 1/T, the NLL of a group is convex in β:

* binary: L(β) = Σᵢ wᵢ [softplus(β zᵢ) − yᵢ β zᵢ], L′ = Σ w (σ(βz) − y) z,
  L″ = Σ w σ(βz)(1 − σ(βz)) z²;
* options: L(β) = Σ_q [log Σ_k exp(β ℓ_qk) − β ℓ_q,gold], L′ = Σ_q E_β[ℓ − ℓ_gold],
  L″ = Σ_q Var_β[ℓ] (expectations under the softmax at β).

so the minimum is found by a safeguarded Newton iteration on β (bracketed by
``bounds`` on T, default [1e-3, 1e3], with geometric bisection when a Newton step leaves
the bracket), vectorised over groups: all groups iterate together on numpy arrays
indexed by group; the per-group sums are ``np.bincount``/``np.add.reduceat``. For
options the step is Halley's (the curvature L″ − L′L‴/(2L″), L‴ = Σ_q of the third
central moment of ℓ, kept at least L″/2): cubic convergence. A
temperature on a bound is reported with ``at_bound`` (the minimum lies beyond it, e.g.
a group whose answers are all correct wants T → 0). With many questions per group
(at least 1,024 on average), the options fit first solves on every 16th question to a
relative 10⁻³ and starts each group there (1/T = 1 where that rough fit ended on a
bound): the full-data iteration then needs about three passes over the rows instead of
seven, and stops by the same rule, so the fitted T differs from a start at 1 only
within ``tol``.

Temperature never changes which option has the largest probability (ℓ/T keeps the
order for T > 0), so accuracy is unchanged; a binary confidence stays on its side of
0.5.

Fitting is per group and in memory (the fit rows are collected once); applying is a
lazy join of the small parameters table on its keys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import polars as pl

from calib_frames.exceptions import ArgumentError
from calib_frames.recalibrate import _core
from calib_frames.recalibrate._apply import (
    ApplyInput,
    apply_input,
    fit_rows_again,
    join_params,
    labelled,
    param,
)
from calib_frames.recalibrate.splits import fit_scheme
from calib_frames.schema import Table
from calib_frames.validation import Frame, group_keys, return_like

__all__ = ["TEMPERATURE", "apply_temperature", "fit_temperature"]

Kind = Literal["confidence", "options"]
_BLOCK = 1 << 13  # questions per block of the option sums (fits in the L2 cache)
_ACTIVE_SUBSET = 0.6  # below this fraction of groups still iterating, sum only theirs
# options: with at least _SAMPLE_FROM questions per group on average, a rough fit
# (relative tolerance _SAMPLE_TOL) on every _SAMPLE_STEP-th question gives the start
_SAMPLE_STEP = 16
_SAMPLE_FROM = 64 * _SAMPLE_STEP
_SAMPLE_TOL = 1e-3


def _ranks(sizes: np.ndarray) -> np.ndarray:
    """0, 1, …, size − 1 for each size, concatenated."""
    ends = np.cumsum(sizes)
    ranks: np.ndarray = np.arange(int(ends[-1]) if ends.size else 0) - np.repeat(
        ends - sizes, sizes
    )
    return ranks


TEMPERATURE = Table(
    "temperature-parameters table",
    {
        "temperature": pl.Float64(),
        "nll_before": pl.Float64(),
        "nll_after": pl.Float64(),
        "count": pl.UInt64(),
        "iterations": pl.UInt32(),
        "converged": pl.Boolean(),
        "at_bound": pl.Boolean(),
        "clipped": pl.UInt64(),
        "fitted_on": pl.String(),
        "in_sample": pl.Boolean(),
        "fit_fingerprint": pl.UInt64(),
    },
    built_by="recalibrate.fit_temperature",
)
"""One row per group: T, the mean NLL at T = 1 and at T, rows (questions), diagnostics."""

Derivatives = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray | None]]
Loss = Callable[[np.ndarray], np.ndarray]
# groups, number of groups, (L', L'') of 1/T, L of 1/T, rows, total weight, clipped
# rows, and (L', L'') of 1/T on a sample of the rows (for the starting point) or None
_Problem = tuple[
    pl.DataFrame,
    int,
    Derivatives | None,
    Loss | None,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    Derivatives | None,
]


def fit_temperature(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    question: str = "question",
    loglik: str = "loglik",
    is_gold: str = "is_gold",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    split: str | None = None,
    fit_value: object = "fit",
    fold: str | None = None,
    in_sample: bool = False,
    kind: Kind = "confidence",
    bounds: tuple[float, float] = (1e-3, 1e3),
    epsilon: float = 1e-12,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> Frame:
    """Fit one temperature per group by minimising the negative log-likelihood.

    Per group, in memory: the fit rows are collected once and all groups are fitted
    together (vectorised safeguarded Newton on 1/T; see the module docstring).

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame. ``kind="confidence"``: one row per prediction with
        ``confidence`` and ``correct``; ``kind="options"``: the option rows, one per
        (question, option) with ``question``, ``loglik`` and ``is_gold``.
    confidence, correct
        Binary input: probability in [0, 1] and outcome (boolean or 0/1).
    question, loglik, is_gold
        Options input: question id, option log-likelihood (any finite real; only
        differences within a question matter) and the gold flag (boolean or 0/1,
        exactly one true per question).
    by
        Group key column(s); one temperature per group (``None``: one for the frame).
        Fit ``by=["model"]`` for one temperature shared across a model's tasks, then
        apply it to a frame grouped by model × task.
    weight
        Optional non-negative row weights (binary input only).
    split, fit_value, fold, in_sample
        The fitting scheme (:mod:`calib_frames.recalibrate.splits`): fit on the rows
        whose ``split`` equals ``fit_value``; cross-fit by the ``fold`` column (one
        temperature per group and held-out fold, fitted on the other folds); or
        ``in_sample=True``. Default: every row of ``predictions`` is fit data.
    kind
        ``"confidence"`` (binary, through the logit) or ``"options"`` (softmax).
    bounds
        (low, high): the temperature is searched in this interval.
    epsilon
        Binary input: confidences are clipped to [ε, 1 − ε] before the logit.
    tol
        Relative tolerance on 1/T (Newton step or bracket width).
    max_iter
        Most Newton steps; groups still moving are reported with ``converged`` False.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input; computed at call time)
        Keys…, [the fold column], then the columns of :data:`TEMPERATURE`:
        ``temperature``; ``nll_before``/``nll_after``, the (weighted) mean NLL (nats per row or
        per question) at T = 1 and at the fitted T; ``count`` (rows or questions);
        ``iterations``; ``converged``; ``at_bound``; ``clipped`` (rows whose confidence
        was clipped by ε); ``fitted_on`` and ``in_sample`` (the fitting scheme). A
        group without fit rows has no row.

    Raises
    ------
    TableError
        Missing or mistyped columns.
    DataError
        Invalid confidences or outcomes, non-finite log-likelihoods, questions with no
        or several gold options, null folds, a group whose weights sum to 0, a
        ``split=`` column with no row equal to ``fit_value``.
    ArgumentError
        Invalid arguments (bounds, tolerances, more than one fitting scheme).

    See Also
    --------
    apply_temperature : the recalibrated confidences.
    sklearn.calibration.CalibratedClassifierCV : ``method="temperature"`` fits the same
        T (as an inverse temperature) for one group.

    Examples
    --------
    Over-confident predictions get T > 1:

    >>> import polars as pl
    >>> from calib_frames.recalibrate import fit_temperature
    >>> df = pl.DataFrame(
    ...     {"confidence": [0.99, 0.98, 0.97, 0.99, 0.02], "correct": [1, 0, 1, 0, 0]}
    ... )
    >>> params = fit_temperature(df)
    >>> params.select("count", "converged", "fitted_on").rows()
    [(5, True, 'frame')]
    >>> round(params["temperature"][0], 3), params["nll_after"][0] < params["nll_before"][0]
    (12.048, True)
    """
    if kind not in ("confidence", "options"):
        raise ArgumentError(f"kind= takes 'confidence' or 'options', got {kind!r}")
    low, high = _core.check_bounds(bounds)
    eps = _core.check_epsilon(epsilon)
    rtol = _core.check_tolerance(tol)
    max_iter = _core.check_positive_int("max_iter", max_iter)
    scheme = fit_scheme(split=split, fit_value=fit_value, fold=fold, in_sample=in_sample)
    if kind == "confidence":
        fit = _core.binary_fit_rows(
            predictions,
            TEMPERATURE,
            scheme,
            by=by,
            confidence=confidence,
            correct=correct,
            weight=weight,
        )
        problem = _binary_problem(fit, epsilon=eps)
    else:
        if weight is not None:
            raise ArgumentError("weight= is supported for kind='confidence' only")
        options = {"question": question, "loglik": loglik, "is_gold": is_gold}
        fit = _core.fit_rows(
            predictions,
            by=by,
            scheme=scheme,
            table=TEMPERATURE,
            columns=options,
            outcomes=["is_gold"],
            numbers=["loglik"],
        )
        problem = _options_problem(fit)
    groups, n_groups, derivatives, loss, count, total, clipped, sample = problem
    if not n_groups or derivatives is None or loss is None:
        return return_like(predictions, _core.params_frame(groups, None, fit, TEMPERATURE).lazy())
    one = np.ones(n_groups)

    def solve(objective: Derivatives, start: np.ndarray, tolerance: float) -> _core.NewtonResult:
        return _core.newton_1d(
            objective,
            start=start,
            lower=1.0 / high,
            upper=1.0 / low,
            rtol=tolerance,
            max_iter=max_iter,
        )

    start = one
    if sample is not None:
        # a rough fit on the sample first: the fit on every row then starts a few percent
        # from its minimum and takes fewer steps over all the rows
        rough = solve(sample, one, _SAMPLE_TOL)
        start = np.where(rough.converged & ~rough.at_bound, rough.x, 1.0)
    result = solve(derivatives, start, rtol)
    beta = result.x
    # the options objective reports L at every evaluated point: at the start (1/T = 1
    # when the bounds allow it and there was no rough fit) and where each group
    # stopped; else evaluate it here
    at_one = sample is None and result.start_loss is not None and 1.0 / high <= 1.0 <= 1.0 / low
    before = result.start_loss if at_one and result.start_loss is not None else loss(one)
    after = result.loss
    if after is None or not np.all(np.isfinite(after)):
        after = loss(beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        nll_before = before / total
        nll_after = after / total
    values = {
        "temperature": 1.0 / beta,
        "nll_before": nll_before,
        "nll_after": nll_after,
        "count": count,
        "iterations": result.iterations,
        "converged": result.converged,
        "at_bound": result.at_bound,
        "clipped": clipped,
    }
    return return_like(predictions, _core.params_frame(groups, values, fit, TEMPERATURE).lazy())


def _binary_problem(fit: _core.FitRows, *, epsilon: float) -> _Problem:
    data, clipped = _core.collect_binary(fit, epsilon=epsilon)
    g, n = data.group, data.n_groups
    z, y, w = data.columns["z"], data.columns["y"], data.columns["w"]

    def derivatives(
        beta: np.ndarray, active: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        s = _sigmoid(beta[g] * z)
        wz = w * z
        grad = _core.group_sum(g, wz * (s - y), n)
        hess = _core.group_sum(g, wz * z * s * (1.0 - s), n)
        return grad, hess, None

    def loss(beta: np.ndarray) -> np.ndarray:
        x = beta[g] * z
        return _core.group_sum(g, w * (np.logaddexp(0.0, x) - y * x), n)

    count = np.bincount(g, minlength=n)
    total_weight = _core.group_sum(g, w, n)
    return data.groups, n, derivatives, loss, count, total_weight, clipped, None


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        out: np.ndarray = 1.0 / (1.0 + np.exp(-x))
    return out


def _options_problem(fit: _core.FitRows) -> _Problem:
    data = _core.collect_options(fit)
    ell, starts, gq, n = data.loglik, data.starts, data.question_group, data.n_groups
    if ell.size == 0:
        return data.groups, 0, None, None, np.zeros(0), np.zeros(0), np.zeros(0), None
    sizes = np.diff(np.r_[starts, ell.size])
    gold_l = ell[data.gold_rows]
    derivatives, loss, count = _option_objective(
        ell, gold_l, starts=starts, sizes=sizes, gq=gq, n=n
    )
    sample = None
    if starts.size >= _SAMPLE_FROM * n:
        # every _SAMPLE_STEP-th question (groups keep their share of the questions
        # whatever the order of the rows)
        picked = np.arange(0, starts.size, _SAMPLE_STEP)
        picked_sizes = sizes[picked]
        rows = np.repeat(starts[picked], picked_sizes) + _ranks(picked_sizes)
        sample, _, _ = _option_objective(
            ell[rows],
            gold_l[picked],
            starts=np.r_[0, np.cumsum(picked_sizes)[:-1]],
            sizes=picked_sizes,
            gq=gq[picked],
            n=n,
        )
    total = count.astype(np.float64)
    return data.groups, n, derivatives, loss, count, total, np.zeros(n), sample


def _option_objective(
    ell: np.ndarray,
    gold_l: np.ndarray,
    *,
    starts: np.ndarray,
    sizes: np.ndarray,
    gq: np.ndarray,
    n: int,
) -> tuple[Derivatives, Loss, np.ndarray]:
    """(L′, L″) and L of 1/T per group for option rows contiguous per question.

    ``gold_l`` is the gold option's log-likelihood and ``gq`` the group of each question.
    With m = ℓ − max_q ℓ (≤ 0, so exp never overflows) and m_gold = ℓ_gold − max_q ℓ, a
    question contributes L_q = log Σ exp(β m) − β m_gold, L′_q = E_β[m] − m_gold and
    L″_q = Var_β[m]. The curvature handed to the Newton iteration is Halley's,
    L″ − L′L‴/(2L″) with L‴_q the third central moment of m (kept at least L″/2), so
    its step L′/curvature converges cubically: about three passes over the rows from
    the rough start instead of five. Once most groups have stopped, only the questions
    of the others are evaluated.
    """
    sums = _OptionSums(ell, starts, sizes)
    m_gold = gold_l - sums.top  # <= 0

    def derivatives(
        beta: np.ndarray, active: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        subset = np.flatnonzero(active[gq]) if active.mean() < _ACTIVE_SUBSET else None
        qg, mg = (gq, m_gold) if subset is None else (gq[subset], m_gold[subset])
        value, grad, hess, third = sums.of(beta[qg], mg, second=True, subset=subset)
        g, h = _core.group_sum(qg, grad, n), _core.group_sum(qg, hess, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            halley = h - g * _core.group_sum(qg, third, n) / (2.0 * h)
        # L itself comes nearly free
        return g, np.where(halley >= 0.5 * h, halley, 0.5 * h), _core.group_sum(qg, value, n)

    def loss(beta: np.ndarray) -> np.ndarray:
        (value,) = sums.of(beta[gq], m_gold, second=False)
        return _core.group_sum(gq, value, n)

    return derivatives, loss, np.bincount(gq, minlength=n)


class _OptionSums:
    """Per question: L_q, L′_q, L″_q and L‴_q from Σ e·mʲ (j = 0…3), e = exp(β_q m).

    The sums run over blocks of questions small enough for their arrays to stay in the
    CPU cache (a loop over blocks of rows, not over groups), so each pass costs one read
    of m instead of several round trips to memory. When every question has K options,
    ℓ is kept as a (questions, K) array, m = ℓ − max is formed block by block (no
    array of m the size of the input), and row sums are products with a vector of ones
    (numpy's sum over a short last axis is slow).
    """

    def __init__(self, ell: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> None:
        width = int(sizes[0])
        self.dense = bool(np.all(sizes == width))
        self.ones = np.ones(width)
        self.starts, self.sizes = starts, sizes
        if self.dense:
            # ℓ itself, (questions, K): m = ℓ − max is formed per block, in the cache
            self.m = ell.reshape(-1, width)
            self.top = _column_reduce(np.maximum, self.m)
        else:
            self.top = np.maximum.reduceat(ell, starts)
            self.m = ell - np.repeat(self.top, sizes)

    def of(
        self,
        bq: np.ndarray,
        m_gold: np.ndarray,
        *,
        second: bool,
        subset: np.ndarray | None = None,
    ) -> list[np.ndarray]:
        """[L_q] or [L_q, L′_q, L″_q, L‴_q] of every question, or of ``subset`` of them.

        ``bq`` and ``m_gold``: β and m_gold of each question evaluated.
        """
        m, top, sizes = self.m, self.top, self.sizes
        if subset is not None:
            sizes, top = sizes[subset], top[subset]
            rows = subset if self.dense else np.repeat(self.starts[subset], sizes) + _ranks(sizes)
            m = m[rows]
        count = bq.size
        starts = self.starts if subset is None else np.r_[0, np.cumsum(sizes)[:-1]]
        q_edges = np.r_[np.arange(0, count, _BLOCK), count]
        r_edges = np.r_[starts, int(sizes.sum())][q_edges]
        out = [np.empty(count) for _ in range(4 if second else 1)]
        blocks = zip(q_edges[:-1], q_edges[1:], r_edges[:-1], r_edges[1:], strict=True)
        if self.dense:
            # in place, in one cache-sized buffer: no allocation per block
            shape = (min(count, _BLOCK), self.ones.size)
            buffer, shifted = np.empty(shape), np.empty(shape)
            for q0, q1, _, _ in blocks:
                mb, e = shifted[: q1 - q0], buffer[: q1 - q0]
                np.subtract(m[q0:q1], top[q0:q1, None], out=mb)
                np.multiply(bq[q0:q1, None], mb, out=e)
                np.exp(e, out=e)
                np.matmul(e, self.ones, out=out[0][q0:q1])
                if second:
                    np.multiply(e, mb, out=e)
                    np.matmul(e, self.ones, out=out[1][q0:q1])
                    np.multiply(e, mb, out=e)
                    np.matmul(e, self.ones, out=out[2][q0:q1])
                    np.multiply(e, mb, out=e)
                    np.matmul(e, self.ones, out=out[3][q0:q1])
                _per_question(out, q0, q1, bq, m_gold)
            return out
        for q0, q1, r0, r1 in blocks:
            mb = m[r0:r1]
            e = np.exp(np.repeat(bq[q0:q1], sizes[q0:q1]) * mb)
            local = starts[q0:q1] - r0
            out[0][q0:q1] = np.add.reduceat(e, local)
            if second:
                em = e * mb
                out[1][q0:q1] = np.add.reduceat(em, local)
                em2 = em * mb
                out[2][q0:q1] = np.add.reduceat(em2, local)
                out[3][q0:q1] = np.add.reduceat(em2 * mb, local)
            _per_question(out, q0, q1, bq, m_gold)
        return out


def _per_question(
    out: list[np.ndarray], q0: int, q1: int, bq: np.ndarray, m_gold: np.ndarray
) -> None:
    """Turn the sums of questions q0…q1 into L_q[, L′_q, L″_q, L‴_q], in place (in the cache).

    With μ = s₁/s₀: L_q = log s₀ − β m_gold, L′_q = μ − m_gold,
    L″_q = max(s₂/s₀ − μ², 0), L‴_q = s₃/s₀ − 3μ L″_q − μ³.
    """
    s0, mg = out[0][q0:q1], m_gold[q0:q1]
    if len(out) == 4:
        s1, s2, s3 = out[1][q0:q1], out[2][q0:q1], out[3][q0:q1]
        np.divide(s1, s0, out=s1)  # the mean of m
        np.divide(s2, s0, out=s2)
        np.divide(s3, s0, out=s3)
        s2 -= s1 * s1
        np.maximum(s2, 0.0, out=s2)  # the variance of m
        s3 -= s1 * (3.0 * s2 + s1 * s1)  # the third central moment
        s1 -= mg
    np.log(s0, out=s0)
    s0 -= bq[q0:q1] * mg


def _column_reduce(ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
    """Reduce each row of a (rows, K) array with small K, column by column.

    Faster than numpy's reduction over a short last axis.
    """
    out: np.ndarray = values[:, 0].copy()
    for k in range(1, values.shape[1]):
        ufunc(out, values[:, k], out=out)
    return out


def apply_temperature(
    predictions: Frame,
    params: pl.DataFrame | pl.LazyFrame,
    *,
    confidence: str = "confidence",
    question: str = "question",
    loglik: str = "loglik",
    output: str = "recalibrated",
    by: str | Sequence[str] | None = None,
    split: str | None = None,
    fit_value: object = "fit",
    kind: Kind = "confidence",
    epsilon: float = 1e-12,
) -> Frame:
    """Add temperature-scaled confidences: a lazy join of the parameters on their keys.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame (binary predictions, or the option rows for
        ``kind="options"``) with the parameters' key columns (rows grouped more finely
        are fine: parameters fitted ``by="model"`` apply to every task of the model) and
        the fold column when the parameters were cross-fitted.
    params
        The table returned by :func:`fit_temperature` (read once, at call time).
    confidence, question, loglik
        Input columns (as in :func:`fit_temperature`).
    output
        Name of the new column.
    by
        Options input: the columns that identify a question together with
        ``question`` (default: the parameters' keys; pass the finer keys, e.g.
        ``["model", "task"]``, when a temperature shared across tasks is applied and
        question ids repeat across tasks).
    split, fit_value
        If given, rows whose ``split`` equals ``fit_value`` are labelled in-sample.
    kind
        ``"confidence"``: adds σ(logit(p)/T) with p clipped to [ε, 1 − ε] as in the fit;
        ``"options"``: adds each option's softmax probability of ℓ/T within its
        question (a window over keys and question: in memory).
    epsilon
        Clipping of binary confidences before the logit (use the fit's value).

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``predictions``)
        ``predictions`` with ``output`` (null where the row's group has no temperature
        or its input is null/invalid) and ``in_sample`` (Boolean: the parameters were
        fitted with ``in_sample=True``, or the row is in the fit split). Row order is
        kept.

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
    >>> from calib_frames.recalibrate import apply_temperature
    >>> params = pl.DataFrame({"model": ["a"], "temperature": [2.0], "in_sample": [False]})
    >>> df = pl.DataFrame({"model": ["a", "a"], "confidence": [0.9, 0.5]})
    >>> apply_temperature(df, params)["recalibrated"].round(4).to_list()
    [0.75, 0.5]
    """
    if kind not in ("confidence", "options"):
        raise ArgumentError(f"kind= takes 'confidence' or 'options', got {kind!r}")
    eps = _core.check_epsilon(epsilon)
    columns = (
        {"confidence": confidence}
        if kind == "confidence"
        else {"question": question, "loglik": loglik}
    )
    t_ok = pl.col("temperature").is_finite() & (pl.col("temperature") > 0)
    applied: ApplyInput = apply_input(
        predictions,
        params,
        _PARAMS_IN,
        columns=columns,
        output=output,
        split=split,
        fit_value=fit_value,
        values={"temperature": (t_ok, "not a finite temperature > 0")},
    )
    t = pl.col(param("temperature"))
    if kind == "confidence":
        p = pl.col(confidence).cast(pl.Float64)
        valid = p.is_between(0.0, 1.0)
        value: pl.Expr = pl.when(valid).then(_core.sigmoid_expr(_core.logit_expr(p, eps) / t))
    else:
        scaled = pl.col(loglik).cast(pl.Float64) / t
        within = [*(applied.keys if by is None else group_keys(by)), question]
        shifted = (scaled - scaled.max().over(within)).exp()
        value = shifted / shifted.sum().over(within)
    joined = join_params(applied.predictions, applied.params, applied.keys, ["temperature"])
    again = fit_rows_again(applied, confidence if kind == "confidence" else loglik)
    result = labelled(
        joined.with_columns(value.alias(output)),
        split,
        fit_value,
        again=again,
        drop=[param("temperature")],
    )
    return return_like(predictions, result)


# apply accepts a minimal table: keys, temperature, in_sample.
_PARAMS_IN = Table(
    "temperature-parameters table",
    {"temperature": pl.Float64(), "in_sample": pl.Boolean()},
    built_by="recalibrate.fit_temperature",
    optional=(),
)
