r"""Calibration and perplexity metrics as polars expressions.

For polars users who write their own aggregations::

    df.group_by("model").agg(cf.ece("confidence", "correct", bins=15), pl.len())

Each function takes column names or expressions (like ``pl.corr``) and returns an
aggregating expression: one value per group in ``group_by().agg``, one value in
``select``, broadcast with ``.over(...)``; it runs on the streaming engine. The formulas
are those of :mod:`calib_frames.metrics.calibration` and
:mod:`calib_frames.metrics.tokens`, evaluated by the same code
(:func:`calib_frames.metrics.calibration.metric_expressions`). Inside the aggregation
each per-bin sum is one aggregate over the group's rows, ``term.filter(in bin k & outcome
class).sum()``, the bin tested by at most two comparisons with its exact edges
(:meth:`~calib_frames.Binning.contains`). For one metric the sums go into the formulas as
they are: polars' lazy engine computes a repeated subexpression of an aggregation once,
so each sum runs once (packing them in a struct for ``.struct.with_fields`` costs more
than the sums here).
Only the sums a metric's formula reads are computed (``ece``: the rows and the two
residual sums of each bin; ``brier``, ``log_loss``: three sums, no bins), so the cost is
about (sums read) × rows, with nothing held per group; ``binned_metrics`` reads all nine
sums per bin, and reduces them with the bins as rows of a list (``list.eval``, the
bin table's reduction): its several hundred formula terms on the aggregated sums are slow
on polars' in-memory engine (``DataFrame.group_by().agg``), the list reduction is not. The
frame API's one ``group_by`` pass stays the cheapest way to get many metrics at once
(``benchmarks/bench_expr.py`` measures both, and polarbearings' window expressions beside
them; BENCHMARKS.md has the figures).

Why functions and not an expression namespace (``pl.col("confidence").calib.ece("correct")``):
every metric here reads two columns with equal standing (and often a weight), so a
namespace would make one of them the receiver and the other an argument, and the same
call would read differently from the frame API's ``confidence=, correct=`` roles;
polars spells its own two-column statistics as functions (``pl.corr(a, b)``,
``pl.cov(a, b)``), which is the form used here; and an ``Expr`` namespace is registered
on every polars expression of the process at import, where a name can clash with
another plugin's. The frame namespace (``frame.calib``) stays, since a frame is the
natural receiver of a table function.

Invalid rows. An expression cannot raise per row, so a group with any invalid row
(confidence null/NaN/outside the bins' range, outcome not boolean or 0/1, weight negative,
null or not finite; NLL negative or not finite; counts < 0) gets **null**. The frame API
(:func:`~calib_frames.calibration_metrics`, :func:`~calib_frames.perplexity`) is the
validated path: it names the column, the count and an example, and its tables are
mergeable. A group without weight (no rows, or weights summing to 0) follows the package
convention: its calibration metrics are null, never the 0.0 of a perfect model
(perplexity of no tokens is NaN).

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

import dataclasses
import functools
import math
from collections.abc import Sequence

import polars as pl

from calib_frames.arguments import Integer, check_arguments
from calib_frames.binning import BINS, Binning, BinsLike, as_binning
from calib_frames.engine.local import log_outcome_probability, weighted
from calib_frames.metrics.calibration import (
    MCE_MIN_COUNT,
    BinSums,
    metric_expressions,
)
from calib_frames.schema import METRICS
from calib_frames.validation import divide

__all__ = [
    "binned_metrics",
    "bits_per_byte",
    "bits_per_token",
    "brier",
    "byte_perplexity",
    "ece",
    "log_loss",
    "mce",
    "mce_guarded",
    "mean_nll",
    "rmsce",
    "token_perplexity",
    "word_perplexity",
]

IntoExpr = str | pl.Expr
_LOG_LOSS = "log_loss_sum"


def _col(value: IntoExpr) -> pl.Expr:
    return pl.col(value) if isinstance(value, str) else value


def _bin_field_names() -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(BinSums))


@functools.cache
def _reads(name: str, mce_min_count: int = MCE_MIN_COUNT) -> frozenset[str]:
    """The sums (:class:`BinSums` fields, ``log_loss_sum``) that the formula of ``name`` reads.

    Probed on the formula itself: a sum is read when putting a placeholder in its place
    changes the expression. So the expressions compute only what their formula uses,
    and stay right whatever :func:`metric_expressions` comes to read.
    """

    def formula(placeholder: str | None) -> pl.Expr:
        def ref(field: str) -> pl.Expr:
            return pl.lit(None) if field == placeholder else pl.col(field)

        bins = BinSums(**{field: ref(field) for field in _bin_field_names()})
        return metric_expressions(
            [bins],
            total=pl.sum_horizontal,
            largest=pl.max_horizontal,
            log_loss_sum=ref(_LOG_LOSS),
            mce_min_count=mce_min_count,
        )[name]

    full = formula(None)
    return frozenset(
        field for field in (*_bin_field_names(), _LOG_LOSS) if not formula(field).meta.eq(full)
    )


def _metrics(
    confidence: IntoExpr,
    correct: IntoExpr,
    bins: BinsLike,
    weight: IntoExpr | None,
    names: Sequence[str],
    *,
    rows: bool,
    mce_min_count: int = MCE_MIN_COUNT,
) -> pl.Expr:
    """The metrics ``names`` as one aggregating expression (see :func:`_build`).

    Built once per set of column names and binning: building costs about as much as a
    small aggregation (BENCHMARKS.md, the expressions).
    """
    binning = as_binning(bins)
    least = mce_min_count
    if all(isinstance(column, str | None) for column in (confidence, correct, weight)):
        return _built(confidence, correct, binning, weight, tuple(names), rows=rows, least=least)
    return _build(confidence, correct, binning, weight, names, rows=rows, least=least)


@functools.lru_cache(maxsize=64)
def _built(
    confidence: IntoExpr,
    correct: IntoExpr,
    binning: Binning,
    weight: IntoExpr | None,
    names: tuple[str, ...],
    *,
    rows: bool,
    least: int,
) -> pl.Expr:
    return _build(confidence, correct, binning, weight, names, rows=rows, least=least)


def _build(
    confidence: IntoExpr,
    correct: IntoExpr,
    binning: Binning,
    weight: IntoExpr | None,
    names: Sequence[str],
    *,
    rows: bool,
    least: int,
) -> pl.Expr:
    """One metric (``rows=False``: ``names`` has one name) or a struct of the metrics ``names``.

    ``least`` is the MCE's minimum bin count (:data:`MCE_MIN_COUNT`).

    Each per-bin sum is one aggregation over the group's rows, ``term.filter(bin k &
    class).sum()``, with the bin tested against its exact edges (:meth:`Binning.contains`);
    only the sums the formulas read are built (:func:`_reads`), and without weights a
    bin's weights are its row counts.

    One metric: the sums go into the formulas as they are (``pl.sum_horizontal`` over the
    bins); polars' lazy engine computes a repeated subexpression of an aggregation once,
    so each sum runs once. Many metrics (``rows=True``): the bins become rows, a list of
    one struct of sums per bin, reduced in ``list.eval`` exactly as the bin table is
    (``.sum()`` over bins), because several hundred formula terms on the aggregated sums
    are slow on the in-memory engine (``DataFrame.group_by().agg``).
    """
    p = _col(confidence).cast(pl.Float64)
    y = _col(correct).cast(pl.Float64)
    w = None if weight is None else _col(weight).cast(pl.Float64)
    low, high = binning.range
    ok = p.is_between(low, high) & ((y == 0.0) | (y == 1.0))
    if w is not None:
        ok = ok & w.is_finite() & (w >= 0)
    # a Boolean cast is exact on valid outcomes (a group with any other value is null)
    right = _col(correct).cast(pl.Boolean)
    wrong = ~right
    # per class, r = |p − y| is 1 − p for a correct row and p for a wrong one (no branch);
    # a term of None is a row count (the weight of a row without weights)
    terms: dict[str, tuple[pl.Expr | None, pl.Expr | None]] = {
        "count": (None, None),
        "W": (w, None),
        "W1": (w, right),
        "W0": (w, wrong),
        "S1": (weighted(p, w), right),
        "R1": (weighted(1.0 - p, w), right),
        "R0": (weighted(p, w), wrong),
        "Q1": (weighted((1.0 - p) * (1.0 - p), w), right),
        "Q0": (weighted(p * p, w), wrong),
        "G": (weighted(p - y, w), None),
        "Q": (weighted((p - y) * (p - y), w), None),
    }
    reads = frozenset().union(*(_reads(name, least) for name in names))

    def total(name: str, in_bin: pl.Expr | None) -> pl.Expr:
        if name not in reads:
            return pl.lit(None, pl.Float64)
        term, cls = terms[name]
        rows = in_bin if cls is None else cls if in_bin is None else in_bin & cls
        if term is not None and in_bin is None and cls is not None:
            # a class of all rows: a branch is cheaper than a filter that keeps half
            return pl.when(cls).then(term).otherwise(0.0).sum()
        if term is not None:
            return (term if rows is None else term.filter(rows)).sum()
        counted = pl.len() if rows is None else rows.sum()
        return counted if name == "count" else counted.cast(pl.Float64)

    log_loss = None
    if _LOG_LOSS in reads:
        q = pl.when(right).then(p).otherwise(1.0 - p)
        log_loss = -weighted(
            log_outcome_probability(q, pl.when(right).then(1.0 - p).otherwise(p)), w
        )
    valid = ok.fill_null(False).all()  # a null input is not valid either
    if not rows:
        (name,) = names
        fields = [
            BinSums(**{field: total(field, binning.contains(p, k)) for field in terms})
            for k in range(binning.n_bins)
        ]
        formulas = metric_expressions(
            fields,
            total=pl.sum_horizontal,
            largest=pl.max_horizontal,
            log_loss_sum=pl.lit(None, pl.Float64) if log_loss is None else log_loss.sum(),
            mce_min_count=least,
        )
        return pl.when(valid).then(formulas[name]).alias(name)
    # bins as rows: a list of one struct of sums per bin, reduced like the bin table (the
    # class sums are all read here, so the gap and Brier sums follow from them)
    class_sums = [field for field in terms if field not in ("G", "Q")]
    per_bin = []
    for k in range(binning.n_bins):
        in_k = binning.contains(p, k)
        sums = [total(field, in_k).alias(field) for field in class_sums]
        if log_loss is not None:
            sums.append(
                (log_loss if in_k is None else log_loss.filter(in_k)).sum().alias(_LOG_LOSS)
            )
        per_bin.append(pl.struct(sums))
    element = pl.element().struct
    formulas = metric_expressions(
        [BinSums(**{field: element.field(field) for field in class_sums})],
        total=lambda terms_: terms_[0].sum(),
        largest=lambda terms_: terms_[0].max(),
        log_loss_sum=(
            pl.lit(None, pl.Float64) if log_loss is None else element.field(_LOG_LOSS).sum()
        ),
        mce_min_count=least,
    )
    metrics = pl.struct([formulas[name].alias(name) for name in names])
    return pl.when(valid).then(pl.concat_list(per_bin).list.eval(metrics).list.first())


def _metric(
    name: str,
    confidence: IntoExpr,
    correct: IntoExpr,
    bins: BinsLike,
    weight: IntoExpr | None,
    *,
    mce_min_count: int = MCE_MIN_COUNT,
) -> pl.Expr:
    return _metrics(
        confidence, correct, bins, weight, [name], rows=False, mce_min_count=mce_min_count
    )


@check_arguments(bins=BINS)
def ece(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    bins: BinsLike = 10,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Expected calibration error: Σ_b (W_b/N)·|p̄_b − ȳ_b|, N = Σ_i w_i.

    W_b is bin b's weight (its row count without weights), p̄_b and ȳ_b its weighted
    mean confidence and accuracy.

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
        invalid row (see the module docstring) and for a group without weight.

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


@check_arguments(bins=BINS)
def mce(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    bins: BinsLike = 10,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Maximum calibration error: max of |p̄_b − ȳ_b| over the populated bins (textbook).

    Parameters
    ----------
    confidence, correct, bins, weight
        As in :func:`ece`.

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``mce`` (null for invalid rows and for a
        group without weight).

    See Also
    --------
    mce_guarded : the same over the bins of at least 10 predictions only.

    Examples
    --------
    The seeds' worked example: bins (0, 0.4], (0.4, 0.6], (0.6, 1]; gaps 0.2 (one right
    answer at 0.8) and 0.025 (0.5 right, 0.55 wrong):

    >>> import polars as pl
    >>> import calib_frames as cf
    >>> seeds = pl.DataFrame({"confidence": [0.8, 0.5, 0.55], "correct": [True, True, False]})
    >>> edges = cf.Binning.edges([0, 0.4, 0.6, 1], closed="right")
    >>> round(seeds.select(cf.mce(bins=edges)).item(), 12)
    0.2
    """
    return _metric("mce", confidence, correct, bins, weight)


@check_arguments(bins=BINS, min_count=Integer(1))
def mce_guarded(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    bins: BinsLike = 10,
    weight: IntoExpr | None = None,
    min_count: int = MCE_MIN_COUNT,
) -> pl.Expr:
    """MCE over the bins of ``min_count`` or more predictions: max of |p̄_b − ȳ_b| there.

    Bins with fewer predictions (weight, with weights) are left out: their accuracy is
    mostly noise (see :mod:`calib_frames.metrics.calibration`); ``min_count=1`` gives
    :func:`mce`.

    Parameters
    ----------
    confidence, correct, bins, weight
        As in :func:`ece`.
    min_count
        Least number of predictions of a bin that counts (default 10).

    Returns
    -------
    pl.Expr
        An aggregating Float64 expression named ``mce_guarded`` (null for invalid rows,
        and when no bin has ``min_count`` predictions).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.15, 0.95], "correct": [False, False]})
    >>> df.select(cf.mce_guarded(min_count=1)).item()
    0.95
    >>> df.select(cf.mce_guarded()).item() is None  # no bin has 10 predictions
    True
    """
    return _metric("mce_guarded", confidence, correct, bins, weight, mce_min_count=min_count)


@check_arguments(bins=BINS)
def rmsce(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    bins: BinsLike = 10,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Root-mean-square calibration error: √(Σ_b (W_b/N)·(p̄_b − ȳ_b)²), N = Σ_i w_i.

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
    """Brier score: Σ_i w_i (p_i − y_i)² / Σ_i w_i, the weighted mean (needs no bins).

    Without weights every w_i is 1 and it is the plain mean over the N rows.

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

    With weights 3 and 1 the squared errors 0.01 and 0.64 average to
    (3·0.01 + 1·0.64) / 4 = 0.1675:

    >>> df = pl.DataFrame({"confidence": [0.9, 0.8], "correct": [True, False], "w": [3, 1]})
    >>> round(df.select(cf.brier(weight="w")).item(), 12)
    0.1675
    """
    return _metric("brier", confidence, correct, 1, weight)


def log_loss(
    confidence: IntoExpr = "confidence",
    correct: IntoExpr = "correct",
    *,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Log loss: Σ_i w_i (−y_i ln p_i − (1 − y_i) ln(1 − p_i)) / Σ_i w_i, not clipped.

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


@check_arguments(bins=BINS)
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
    metrics = _metrics(confidence, correct, bins, weight, METRICS.names, rows=True)
    return metrics.alias("binned_metrics")


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
    return pl.when(ok.fill_null(False).all()).then(ratio)


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
