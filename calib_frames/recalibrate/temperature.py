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
within ``tol``; its first pass also sums L at 1/T = 1 (``nll_before``).

Temperature never changes which option has the largest probability (ℓ/T keeps the
order for T > 0), so accuracy is unchanged; a binary confidence stays on its side of
0.5.

Fitting is per group and in memory (the fit rows are collected once); applying is a
lazy join of the small parameters table on its keys.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from calib_frames.arguments import Options, check_arguments
from calib_frames.exceptions import ArgumentError
from calib_frames.recalibrate import _core
from calib_frames.recalibrate._apply import (
    APPLIED,
    ApplyInput,
    apply_input,
    param,
    with_mapped,
)
from calib_frames.recalibrate.splits import SCHEME, fit_scheme
from calib_frames.schema import TEMPERATURE
from calib_frames.validation import Frame, as_lazy, group_keys, require_columns, return_like

__all__ = ["apply_temperature", "fit_temperature"]

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


Derivatives = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray | None]]
Loss = Callable[[np.ndarray], np.ndarray]


@dataclass
class _Problem:
    """What the solver needs of one kind of input; the objectives are of 1/T per group."""

    groups: pl.DataFrame
    n_groups: int
    derivatives: Derivatives | None  # (L′, L″[, L]) of 1/T
    loss: Loss | None  # L of 1/T
    count: np.ndarray  # rows (questions) per group
    total: np.ndarray  # total weight per group
    clipped: np.ndarray  # clipped rows per group
    sample: Derivatives | None = None  # (L′, L″) on a sample of the rows, for the start
    at_one: Callable[[], np.ndarray] | None = None  # L at 1/T = 1, after the solve
    fingerprints: np.ndarray | None = None  # per group, when the collect summed them


@check_arguments(
    **SCHEME,
    kind=Options.of(Kind),
    bounds=_core.BOUNDS,
    epsilon=_core.EPSILON,
    tol=_core.TOL,
    max_iter=_core.MAX_ITER,
)
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
        Keys…, [the fold column], then the columns of
        :data:`calib_frames.schema.TEMPERATURE`:
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
    low, high = (float(bound) for bound in bounds)
    eps, rtol = float(epsilon), float(tol)
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
    groups, derivatives, loss = problem.groups, problem.derivatives, problem.loss
    if not problem.n_groups or derivatives is None or loss is None:
        return return_like(predictions, _core.params_frame(groups, None, fit, TEMPERATURE).lazy())
    one = np.ones(problem.n_groups)

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
    if problem.sample is not None:
        # a rough fit on the sample first: the fit on every row then starts a few percent
        # from its minimum and takes fewer steps over all the rows
        rough = solve(problem.sample, one, _SAMPLE_TOL)
        start = np.where(rough.converged & ~rough.at_bound, rough.x, 1.0)
    result = solve(derivatives, start, rtol)
    beta = result.x
    if problem.at_one is not None:
        before = problem.at_one()  # the options objective sums it in its first pass
    elif result.start_loss is not None and 1.0 / high <= 1.0 <= 1.0 / low:
        before = result.start_loss  # the objective reported L at the start, 1/T = 1
    else:
        before = loss(one)
    after = result.loss
    if after is None or not np.all(np.isfinite(after)):
        after = loss(beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        nll_before = before / problem.total
        nll_after = after / problem.total
    values = {
        "temperature": 1.0 / beta,
        "nll_before": nll_before,
        "nll_after": nll_after,
        "count": problem.count,
        "iterations": result.iterations,
        "converged": result.converged,
        "at_bound": result.at_bound,
        "clipped": problem.clipped,
    }
    table = _core.params_frame(groups, values, fit, TEMPERATURE, problem.fingerprints)
    return return_like(predictions, table.lazy())


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
    return _Problem(data.groups, n, derivatives, loss, count, total_weight, clipped)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        out: np.ndarray = 1.0 / (1.0 + np.exp(-x))
    return out


def _options_problem(fit: _core.FitRows) -> _Problem:
    data = _core.collect_options(fit)
    ell, starts, gq, n = data.loglik, data.starts, data.question_group, data.n_groups
    if ell.size == 0:
        return _Problem(data.groups, 0, None, None, np.zeros(0), np.zeros(0), np.zeros(0))
    sums = _OptionSums.of_rows(ell, ell[data.gold_rows], starts)
    full = _OptionObjective(sums, gq, n, with_one=True)
    sample = None
    if starts.size >= _SAMPLE_FROM * n:
        # every _SAMPLE_STEP-th question (groups keep their share of the questions
        # whatever the order of the rows)
        picked = slice(0, None, _SAMPLE_STEP)
        sample = _OptionObjective(sums.every(_SAMPLE_STEP), gq[picked], n, with_one=False)
    count = np.bincount(gq, minlength=n)
    return _Problem(
        data.groups,
        n,
        full.derivatives,
        full.loss,
        count,
        count.astype(np.float64),
        np.zeros(n),
        None if sample is None else sample.derivatives,
        full.at_one,
        data.fingerprints,
    )


class _OptionObjective:
    """(L′, L″) and L of 1/T per group for option rows contiguous per question.

    ``gq`` is the group of each question of ``sums``. With m = ℓ − max_q ℓ (≤ 0, so exp
    never overflows) and m_gold = ℓ_gold − max_q ℓ, a question contributes
    L_q = log Σ exp(β m) − β m_gold, L′_q = E_β[m] − m_gold and L″_q = Var_β[m]; the
    Σ m_gold of each group is summed once. The curvature handed to the Newton iteration
    is Halley's, L″ − L′L‴/(2L″) with L‴_q the third central moment of m (kept at least
    L″/2), so its step L′/curvature converges cubically: about three passes over the rows
    from the rough start instead of five. Once most groups have stopped, only the
    questions of the others are evaluated. ``with_one``: the first pass over every
    question also sums L at 1/T = 1 (:meth:`at_one`), so that no pass of its own is
    needed for ``nll_before``.
    """

    def __init__(self, sums: _OptionSums, gq: np.ndarray, n: int, *, with_one: bool) -> None:
        self.sums, self.gq, self.n = sums, gq, n
        self.gold = _core.group_sum(gq, sums.m_gold, n)  # Σ m_gold per group
        self.one: np.ndarray | None = None
        self.with_one = with_one

    def derivatives(
        self, beta: np.ndarray, active: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        gq, n = self.gq, self.n
        subset = np.flatnonzero(active[gq]) if active.mean() < _ACTIVE_SUBSET else None
        qg = gq if subset is None else gq[subset]
        one = self.with_one and self.one is None and subset is None
        terms = self.sums.of(beta[qg], second=True, subset=subset, at_one=one)
        log_sum, mean, variance, third = (_core.group_sum(qg, t, n) for t in terms[:4])
        if one:
            self.one = _core.group_sum(qg, terms[4], n) - self.gold
        g, h = mean - self.gold, variance
        with np.errstate(divide="ignore", invalid="ignore"):
            halley = h - g * third / (2.0 * h)
        # L itself comes nearly free
        return g, np.where(halley >= 0.5 * h, halley, 0.5 * h), log_sum - beta * self.gold

    def loss(self, beta: np.ndarray) -> np.ndarray:
        (log_sum,) = self.sums.of(beta[self.gq], second=False)
        out: np.ndarray = _core.group_sum(self.gq, log_sum, self.n) - beta * self.gold
        return out

    def at_one(self) -> np.ndarray:
        """L at 1/T = 1 per group (from the first full pass, else evaluated here)."""
        return self.loss(np.ones(self.n)) if self.one is None else self.one


class _OptionSums:
    """Per question: log Σ e and the mean, variance, third central moment of m (e = e^(βm)).

    They come from the sums Σ e·mʲ (j = 0…3).

    The sums run over blocks of questions small enough for their arrays to stay in the
    CPU cache (a loop over blocks of rows, not over groups), so each pass costs one read
    of m instead of several round trips to memory. When every question has K options,
    m is kept column by column, a (K − 1, questions) array of the options other than the
    likeliest one (its m = 0 adds e = 1 to Σ e and nothing to the other sums), and the
    sums over options are products with a vector of ones (numpy's sum over a short axis
    is slow); else m is one array of rows and the sums are ``np.add.reduceat``.
    """

    def __init__(
        self, m: np.ndarray, m_gold: np.ndarray, starts: np.ndarray, sizes: np.ndarray
    ) -> None:
        self.m, self.m_gold, self.starts, self.sizes = m, m_gold, starts, sizes
        self.dense = m.ndim == 2
        self.ones = np.ones(m.shape[0])

    @classmethod
    def of_rows(cls, ell: np.ndarray, gold_l: np.ndarray, starts: np.ndarray) -> _OptionSums:
        """From ℓ of option rows contiguous per question and the gold option's ℓ."""
        sizes = np.diff(np.r_[starts, ell.size])
        width = int(sizes[0])
        if not np.all(sizes == width):
            top = np.maximum.reduceat(ell, starts)
            return cls(ell - np.repeat(top, sizes), gold_l - top, starts, sizes)
        table = ell.reshape(-1, width)
        top, rest = np.empty(table.shape[0]), np.empty((width - 1, table.shape[0]))
        # block by block, in the cache: a running maximum over the options, each step
        # keeping the smaller of the two in ``rest``, leaves the maximum out of ``rest``
        # (exact selections: the same values as ℓ − max of every other option)
        for q0 in range(0, table.shape[0], _BLOCK):
            rows, peak = table[q0 : q0 + _BLOCK], top[q0 : q0 + _BLOCK]
            block = rest[:, q0 : q0 + _BLOCK]
            np.copyto(peak, rows[:, 0])
            for k in range(1, width):
                np.minimum(peak, rows[:, k], out=block[k - 1])
                np.maximum(peak, rows[:, k], out=peak)
            block -= peak
        return cls(rest, gold_l - top, starts, sizes)

    def every(self, step: int) -> _OptionSums:
        """The sums of every ``step``-th question."""
        picked = np.arange(0, self.m_gold.size, step)
        m_gold, sizes = self.m_gold[picked], self.sizes[picked]
        if self.dense:
            return _OptionSums(self.m[:, ::step].copy(), m_gold, picked, sizes)
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        return _OptionSums(self.m[self._rows(picked)], m_gold, starts, sizes)

    def _rows(self, questions: np.ndarray) -> np.ndarray:
        """The rows of ``questions`` (ragged m)."""
        sizes = self.sizes[questions]
        rows: np.ndarray = np.repeat(self.starts[questions], sizes) + _ranks(sizes)
        return rows

    def of(
        self,
        bq: np.ndarray,
        *,
        second: bool,
        subset: np.ndarray | None = None,
        at_one: bool = False,
    ) -> np.ndarray:
        """Rows log Σ e [, mean, variance, third central moment of m][, log Σ e at β = 1].

        One column per question, or per question of ``subset``; ``bq``: the β of each.
        """
        m, sizes = self.m, self.sizes
        if subset is not None and self.dense:
            m = np.take(m, subset, axis=1)  # faster than m[:, subset]
        elif subset is not None:
            m, sizes = m[self._rows(subset)], sizes[subset]
        count = bq.size
        q_edges = np.r_[np.arange(0, count, _BLOCK), count]
        out = np.empty(((4 if second else 1) + at_one, count))
        if self.dense:
            # in place, in one cache-sized buffer: no allocation per block
            buffer = np.empty((m.shape[0], min(count, _BLOCK)))
            for q0, q1 in itertools.pairwise(q_edges):
                mb, e, o = m[:, q0:q1], buffer[:, : q1 - q0], out[:, q0:q1]
                if at_one:
                    np.exp(mb, out=e)
                    np.matmul(self.ones, e, out=o[-1])
                    o[-1] += 1.0
                np.multiply(bq[q0:q1], mb, out=e)
                np.exp(e, out=e)
                np.matmul(self.ones, e, out=o[0])
                o[0] += 1.0  # the likeliest option
                for j in range(1, 4 if second else 1):
                    np.multiply(e, mb, out=e)
                    np.matmul(self.ones, e, out=o[j])
                _per_question(o, second=second, at_one=at_one)
            return out
        starts = self.starts if subset is None else np.r_[0, np.cumsum(sizes)[:-1]]
        r_edges = np.r_[starts, m.size][q_edges]
        for q0, q1, r0, r1 in zip(
            q_edges[:-1], q_edges[1:], r_edges[:-1], r_edges[1:], strict=True
        ):
            mb, o = m[r0:r1], out[:, q0:q1]
            local = starts[q0:q1] - r0
            if at_one:
                o[-1] = np.add.reduceat(np.exp(mb), local)
            e = np.exp(np.repeat(bq[q0:q1], sizes[q0:q1]) * mb)
            o[0] = np.add.reduceat(e, local)
            for j in range(1, 4 if second else 1):
                e *= mb
                o[j] = np.add.reduceat(e, local)
            _per_question(o, second=second, at_one=at_one)
        return out


def _per_question(o: np.ndarray, *, second: bool, at_one: bool) -> None:
    """Turn the sums sⱼ = Σ e·mʲ of a block of questions into their terms, in place.

    With r = 1/s₀ and μ = s₁r: log s₀, μ, the variance max(s₂r − μ², 0) and the third
    central moment s₃r − 3μ·variance − μ³ (a last row, log Σ e at β = 1, gets its log).
    """
    if second:
        s0, s1, s2, s3 = o[0], o[1], o[2], o[3]
        r = 1.0 / s0
        s1 *= r  # the mean of m
        s2 *= r
        s3 *= r
        s2 -= s1 * s1
        np.maximum(s2, 0.0, out=s2)  # the variance of m
        s3 -= s1 * (3.0 * s2 + s1 * s1)  # the third central moment
    np.log(o[0], out=o[0])
    if at_one:
        np.log(o[-1], out=o[-1])


@check_arguments(**APPLIED, kind=Options.of(Kind), epsilon=_core.EPSILON)
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
    eps = float(epsilon)
    if kind == "options" and by is not None:  # the softmax's groups, beside the parameters'
        require_columns(as_lazy(predictions).collect_schema(), {}, keys=group_keys(by))
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
    source = confidence if kind == "confidence" else loglik
    result = with_mapped(applied, value, ["temperature"], output=output, split=split,
                         fit_value=fit_value, source=source)  # fmt: skip
    return return_like(predictions, result)


_PARAMS_IN = TEMPERATURE.only("temperature", "in_sample")
"""What apply reads of a parameters table: the keys, the parameters and ``in_sample``."""
