r"""Calibration and perplexity metrics as polars expressions.

For polars users who write their own aggregations::

    df.group_by("model").agg(cf.ece("confidence", "correct", bins=15), pl.len())

Each function takes column names or expressions (like ``pl.corr``) and returns an
aggregating expression: one value per group in ``group_by().agg``, one value in
``select``, broadcast with ``.over(...)``; it runs on the streaming engine. The formulas
are those of :mod:`calib_frames.metrics.calibration` and
:mod:`calib_frames.metrics.tokens`, evaluated by the same code
(:func:`calib_frames.metrics.calibration.metric_expressions`): inside the
aggregation the rows of a group are gathered (``implode``) and each of the M bins gets
its own conditional sums (``list.eval``), collected in one struct per group on which the
formulas run. So the expressions hold each group's rows in memory and their cost grows
with M·rows, where the frame API's one streaming ``group_by`` pass does not
(``benchmarks/bench_expr.py`` measures both).

Invalid rows. An expression cannot raise per row, so a group with any invalid row
(confidence null/NaN/outside the bins' range, outcome not boolean or 0/1, weight negative,
null or not finite; NLL negative or not finite; counts < 0) gets **null**. The frame API
(:func:`~calib_frames.calibration_metrics`, :func:`~calib_frames.perplexity`) is the
validated path: it names the column, the count and an example, and its tables are
mergeable. An empty group follows the package convention (ECE, MCE, Brier 0.0;
perplexity of no tokens NaN).

Examples
--------
>>> import polars as pl
>>> import calib_frames as cf
>>> df = pl.DataFrame({
...     "model": ["a"] * 10 + ["b"] * 10,
...     "confidence": [0.95] * 10 + [0.6] * 10,
...     "correct": [True] * 6 + [False] * 4 + [True] * 6 + [False] * 4,
... })
>>> ece = cf.ece("confidence", "correct").round(12)
>>> df.group_by("model", maintain_order=True).agg(ece).rows()
[('a', 0.35), ('b', 0.0)]
>>> out = df.group_by("model", maintain_order=True).agg(cf.binned_metrics(bins=15))
>>> out.unnest("binned_metrics").select("model", "count", "populated_bins").rows()
[('a', 10, 1), ('b', 10, 1)]
"""

from __future__ import annotations

import math

import polars as pl

from calib_frames.binning import BinsLike, as_binning
from calib_frames.engine.local import log_outcome_probability, weighted
from calib_frames.metrics.calibration import (
    MCE_MIN_COUNT,
    BinSums,
    check_mce_min_count,
    metric_expressions,
)
from calib_frames.schema import METRICS
from calib_frames.validation import divide, not_true

__all__ = [
    "binned_metrics",
    "bits_per_byte",
    "bits_per_token",
    "brier",
    "byte_perplexity",
    "ece",
    "log_loss",
    "mce",
    "mean_nll",
    "rmsce",
    "token_perplexity",
    "word_perplexity",
]

IntoExpr = str | pl.Expr


def _col(value: IntoExpr) -> pl.Expr:
    return pl.col(value) if isinstance(value, str) else value


def _metrics(
    confidence: IntoExpr,
    correct: IntoExpr,
    bins: BinsLike,
    weight: IntoExpr | None,
    mce_min_count: int = MCE_MIN_COUNT,
) -> tuple[pl.Expr, dict[str, pl.Expr]]:
    """The per-bin sums of one group as one struct, and every metric over its fields.

    Row level, once: a struct of the bin index, the outcome and the weighted terms.
    Per group: the rows are imploded and ``list.eval`` sums each term per bin (9 sums per
    bin, the log-loss sum and a validity flag) into one struct; the formulas then run on
    that struct (``.struct.with_fields`` with ``pl.field`` references), not on the rows.
    """
    binning = as_binning(bins)
    p = _col(confidence).cast(pl.Float64)
    y = _col(correct).cast(pl.Float64)
    w = None if weight is None else _col(weight).cast(pl.Float64)
    low, high = binning.range
    ok = p.is_between(low, high) & ((y == 0.0) | (y == 1.0))
    if w is not None:
        ok = ok & w.is_finite() & (w >= 0)
    is_correct = y == 1.0
    q = pl.when(is_correct).then(p).otherwise(1.0 - p)
    r = pl.when(is_correct).then(1.0 - p).otherwise(p)
    rows = pl.struct(
        bin=binning.assign(p),
        correct=is_correct,
        ok=not_true(ok),
        w=weighted(pl.lit(1.0), w),
        wp=weighted(p, w),
        wr=weighted(r, w),
        wr2=weighted(r * r, w),
        wlq=weighted(log_outcome_probability(q, r), w),
    )
    e = pl.element().struct

    def bin_sum(term: str, in_bin: pl.Expr) -> pl.Expr:
        return pl.when(in_bin).then(e.field(term)).otherwise(0.0).sum()

    sums: list[pl.Expr] = [
        e.field("ok").any().not_().alias("valid"),
        (-e.field("wlq").sum()).alias("log_loss_sum"),
    ]
    fields = []
    for k in range(binning.n_bins):
        in_k = e.field("bin") == k
        right, wrong = in_k & e.field("correct"), in_k & ~e.field("correct")
        per_bin = {
            "count": in_k.sum(),
            "W": bin_sum("w", in_k),
            "W1": bin_sum("w", right),
            "W0": bin_sum("w", wrong),
            "S1": bin_sum("wp", right),
            "R1": bin_sum("wr", right),
            "R0": bin_sum("wr", wrong),
            "Q1": bin_sum("wr2", right),
            "Q0": bin_sum("wr2", wrong),
        }
        sums += [expr.alias(f"{name}_{k}") for name, expr in per_bin.items()]
        fields.append(BinSums(**{name: pl.field(f"{name}_{k}") for name in per_bin}))
    exprs = metric_expressions(
        fields,
        total=pl.sum_horizontal,
        largest=pl.max_horizontal,
        log_loss_sum=pl.field("log_loss_sum"),
        mce_min_count=check_mce_min_count(mce_min_count),
    )
    valid = pl.field("valid")
    metrics = {name: pl.when(valid).then(expr).alias(name) for name, expr in exprs.items()}
    per_group = rows.implode().list.eval(pl.struct(sums)).list.first()
    return per_group, metrics


def _metric(
    name: str,
    confidence: IntoExpr,
    correct: IntoExpr,
    bins: BinsLike,
    weight: IntoExpr | None,
    *,
    mce_min_count: int = MCE_MIN_COUNT,
) -> pl.Expr:
    sums, metrics = _metrics(confidence, correct, bins, weight, mce_min_count)
    return sums.struct.with_fields(metrics[name]).struct.field(name)


def ece(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    bins: BinsLike = 10,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Expected calibration error: Σ_b (W_b/N)·|p̄_b − ȳ_b|.

    Parameters
    ----------
    confidence
        Column name or expression of probabilities in [0, 1].
    correct
        Column name or expression of outcomes (boolean or 0/1).
    bins
        ``int`` (equal-width), a sequence of edges, or a :class:`~calib_frames.Binning`.
    weight
        Optional column name or expression of row weights (finite, >= 0).

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``ece``; null for a group with an
        invalid row (see the module docstring), 0.0 for an empty group.

    See Also
    --------
    calib_frames.calibration_metrics : the validated frame API (same numbers).
    binned_metrics : every binned metric from one binning.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.95] * 10, "correct": [True] * 6 + [False] * 4})
    >>> df.select(cf.ece()).item()
    0.35
    """
    return _metric("ece", confidence, correct, bins, weight)


def mce(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    bins: BinsLike = 10,
    weight: IntoExpr | None = None,
    min_count: int = MCE_MIN_COUNT,
) -> pl.Expr:
    """Maximum calibration error: max of |p̄_b − ȳ_b| over bins of ``min_count`` or more rows.

    Bins with fewer predictions are left out (their accuracy is mostly noise, see
    :mod:`calib_frames.metrics.calibration`); ``min_count=1`` gives the textbook MCE over
    every populated bin (``mce_raw`` of :func:`~calib_frames.calibration_metrics`).

    Parameters
    ----------
    confidence, correct, bins, weight
        As in :func:`ece`.
    min_count
        Least number of rows of a bin that counts (default 10).

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``mce`` (null for invalid rows, and when
        no bin has ``min_count`` rows).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.15, 0.95], "correct": [False, False]})
    >>> df.select(cf.mce(min_count=1)).item()
    0.95
    >>> df.select(cf.mce()).item() is None  # no bin has 10 predictions
    True
    """
    return _metric("mce", confidence, correct, bins, weight, mce_min_count=min_count)


def rmsce(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    bins: BinsLike = 10,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Root-mean-square calibration error: √(Σ_b (W_b/N)·(p̄_b − ȳ_b)²).

    Parameters
    ----------
    confidence, correct, bins, weight
        As in :func:`ece`.

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``rmsce`` (null for invalid rows).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.25, 0.75], "correct": [True, False]})
    >>> df.select(cf.rmsce()).item()
    0.75
    """
    return _metric("rmsce", confidence, correct, bins, weight)


def brier(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Brier score: (1/N)·Σ_i w_i (p_i − y_i)² (needs no bins).

    Parameters
    ----------
    confidence, correct, weight
        As in :func:`ece`.

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``brier`` (null for invalid rows).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.9, 0.4], "correct": [True, False]})
    >>> round(df.select(cf.brier()).item(), 12)
    0.085
    """
    return _metric("brier", confidence, correct, 1, weight)


def log_loss(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Log loss: (1/N)·Σ_i w_i (−y_i ln p_i − (1 − y_i) ln(1 − p_i)), not clipped.

    Parameters
    ----------
    confidence, correct, weight
        As in :func:`ece`.

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``log_loss`` (null for invalid rows;
        +inf for a wrong prediction made with confidence 1).

    Examples
    --------
    >>> import math
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.5, 0.5], "correct": [True, False]})
    >>> math.isclose(df.select(cf.log_loss()).item(), math.log(2))
    True
    """
    return _metric("log_loss", confidence, correct, 1, weight)


def binned_metrics(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    bins: BinsLike = 10,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Every binned metric of :func:`~calib_frames.calibration_metrics` as one struct.

    Bins once and returns a struct with the fields of
    :data:`calib_frames.schema.METRICS` (``count``, ``accuracy``, ``ece``, ``mce``,
    ``brier`` and its decomposition, ``log_loss``, ...); unnest it after the aggregation.

    Parameters
    ----------
    confidence, correct, bins, weight
        As in :func:`ece`.

    Returns
    -------
    pl.Expr
        An aggregating struct expression named ``binned_metrics``; every field is null
        for a group with an invalid row.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.95] * 10, "correct": [True] * 6 + [False] * 4})
    >>> df.select(cf.binned_metrics()).unnest("binned_metrics").select("count", "ece").rows()
    [(10, 0.35)]
    """
    sums, metrics = _metrics(confidence, correct, bins, weight)
    result = pl.struct([metrics[name] for name in METRICS.names]).alias("binned_metrics")
    return sums.struct.with_fields(result).struct.field("binned_metrics")


# -- perplexity family --------------------------------------------------------------------


def _nll_ratio(nll: IntoExpr, count: IntoExpr | None, *, minimum: int) -> pl.Expr:
    """Σ nll / Σ count (NaN when the count sum is 0), null when a row is invalid."""
    value = _col(nll).cast(pl.Float64)
    n = pl.len().cast(pl.Float64) if count is None else _col(count).cast(pl.Float64)
    ok = value.is_finite() & (value >= 0)
    if count is not None:
        ok = ok & n.is_finite() & (n >= minimum) & (n == n.floor())
    total = n.sum() if count is not None else n
    ratio = pl.when(total > 0).then(value.sum() / total).otherwise(float("nan"))
    return pl.when(not_true(ok).any().not_()).then(ratio)


def mean_nll(nll: IntoExpr = "nll", tokens: IntoExpr | None = None) -> pl.Expr:
    """Mean NLL per token in nats: Σ nll / Σ tokens.

    Parameters
    ----------
    nll
        Column name or expression of NLLs in nats (>= 0).
    tokens
        Token counts per row; ``None``: each row is one token.

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression (null if a row is invalid, NaN for no tokens).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> pl.DataFrame({"nll": [1.0, 3.0]}).select(cf.mean_nll()).item()
    2.0
    """
    return _nll_ratio(nll, tokens, minimum=1).alias("mean_nll")


def token_perplexity(nll: IntoExpr = "nll", tokens: IntoExpr | None = None) -> pl.Expr:
    """Perplexity: exp(Σ nll / Σ tokens) (the ``perplexity`` column of the frame API).

    Parameters
    ----------
    nll, tokens
        As in :func:`mean_nll`.

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``perplexity``.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"nll": [4.0, 6.0], "tokens": [2, 3]})
    >>> df.select(cf.token_perplexity("nll", "tokens")).item()
    7.38905609893065
    """
    return _nll_ratio(nll, tokens, minimum=1).exp().alias("perplexity")


def bits_per_token(nll: IntoExpr = "nll", tokens: IntoExpr | None = None) -> pl.Expr:
    """Bits per token: Σ nll / (Σ tokens · ln 2).

    Parameters
    ----------
    nll, tokens
        As in :func:`mean_nll`.

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``bits_per_token``.

    Examples
    --------
    >>> import math
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> pl.DataFrame({"nll": [math.log(2)]}).select(cf.bits_per_token()).item()
    1.0
    """
    return divide(_nll_ratio(nll, tokens, minimum=1), math.log(2)).alias("bits_per_token")


def byte_perplexity(nll: IntoExpr = "nll", bytes: IntoExpr = "bytes") -> pl.Expr:
    """Byte perplexity: exp(Σ nll / Σ bytes), as lm-evaluation-harness.

    Parameters
    ----------
    nll
        As in :func:`mean_nll`.
    bytes
        UTF-8 byte counts per row (whole numbers >= 0).

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``byte_perplexity``.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"nll": [10.0], "bytes": [20]})
    >>> round(df.select(cf.byte_perplexity()).item(), 12)
    1.6487212707
    """
    return _nll_ratio(nll, bytes, minimum=0).exp().alias("byte_perplexity")


def bits_per_byte(nll: IntoExpr = "nll", bytes: IntoExpr = "bytes") -> pl.Expr:
    """Bits per byte: Σ nll / (Σ bytes · ln 2), as lm-evaluation-harness.

    Parameters
    ----------
    nll, bytes
        As in :func:`byte_perplexity`.

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``bits_per_byte``.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> pl.DataFrame({"nll": [10.0], "bytes": [20]}).select(cf.bits_per_byte()).item()
    0.7213475204444817
    """
    return divide(_nll_ratio(nll, bytes, minimum=0), math.log(2)).alias("bits_per_byte")


def word_perplexity(nll: IntoExpr = "nll", words: IntoExpr = "words") -> pl.Expr:
    """Word perplexity: exp(Σ nll / Σ words), as lm-evaluation-harness.

    Parameters
    ----------
    nll
        As in :func:`mean_nll`.
    words
        Word counts per row (whole numbers >= 0).

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``word_perplexity``.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"nll": [4.0, 2.0], "words": [2, 1]})
    >>> df.select(cf.word_perplexity()).item()
    7.38905609893065
    """
    return _nll_ratio(nll, words, minimum=0).exp().alias("word_perplexity")
