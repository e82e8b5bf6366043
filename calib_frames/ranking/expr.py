"""Per-query ranking metrics as polars expressions over a sequence in rank order.

Each function takes an expression whose values are the relevance of the items *in rank
order* (best first) and reduces it to one number. The same expression works

* inside ``group_by(...).agg(...)``, one value per query, after ordering the group, e.g.
  ``reciprocal_rank(pl.col("relevance").sort_by("score", descending=True))``;
* on a list column of ranked relevances, through ``pl.col("ranked").list.eval(...)``
  with ``pl.element()`` (the result is a one-element list: ``.list.first()``).

Definitions as in :mod:`calib_frames.ranking.metrics` (position i = 1, 2, ...; b_i the
binary relevance). Two differences: these functions see only the given sequence, so the
ideal DCG of :func:`ndcg` and the R of :func:`average_precision` / :func:`recall` come
from the sequence itself unless given, whereas :func:`~calib_frames.ranking.ranking_metrics`
takes them from the qrels (relevant items the run did not retrieve count there); and the
order of ties is whatever order the sequence has.

Examples
--------
>>> import polars as pl
>>> from calib_frames.ranking import expr
>>> run = pl.DataFrame({"query": [1, 1, 1, 2, 2], "score": [0.2, 0.9, 0.5, 0.3, 0.8],
...                     "relevance": [1, 0, 2, 0, 0]})
>>> ranked = pl.col("relevance").sort_by("score", descending=True)
>>> run.group_by("query", maintain_order=True).agg(
...     rr=expr.reciprocal_rank(ranked), ndcg3=expr.ndcg(ranked, k=3).round(4))
shape: (2, 3)
┌───────┬─────┬────────┐
│ query ┆ rr  ┆ ndcg3  │
│ ---   ┆ --- ┆ ---    │
│ i64   ┆ f64 ┆ f64    │
╞═══════╪═════╪════════╡
│ 1     ┆ 0.5 ┆ 0.6697 │
│ 2     ┆ 0.0 ┆ 0.0    │
└───────┴─────┴────────┘
>>> lists = pl.DataFrame({"ranked": [[0, 1, 1], [1, 0]]})
>>> rr = pl.col("ranked").list.eval(expr.reciprocal_rank(pl.element())).list.first()
>>> lists.select(rr)["ranked"].to_list()
[0.5, 1.0]
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from calib_frames.arguments import InstanceOf, Integer, Number, Options, check_arguments
from calib_frames.validation import as_expr

__all__ = [
    "average_precision",
    "dcg",
    "hit",
    "ndcg",
    "precision",
    "recall",
    "reciprocal_rank",
]

Gain = Literal["linear", "exponential"]
IntoExpr = str | pl.Expr


_RELEVANCE = InstanceOf((str, pl.Expr), "a column name or an expression")
_TOTAL = InstanceOf(pl.Expr, "an expression") | Number(at_least=0) | None
_CUTOFF = Integer(1) | None


def _binary(relevance: IntoExpr, threshold: float) -> pl.Expr:
    return (as_expr(relevance).cast(pl.Float64) >= threshold).cast(pl.Float64)


def _top(expr: pl.Expr, k: int | None) -> pl.Expr:
    return expr if k is None else expr.head(k)


def _relevant_total(binary: pl.Expr, relevant_total: pl.Expr | float | None) -> pl.Expr:
    """R: the given total (one value: an expression or a number), else Σ b of the sequence."""
    if relevant_total is None:
        return binary.sum()
    return pl.lit(relevant_total).cast(pl.Float64)


def _position(sequence: pl.Expr) -> pl.Expr:
    """1, 2, ..., len(sequence) (the length of the sequence, not of the frame)."""
    return pl.int_range(1, sequence.len() + 1, dtype=pl.Int64).cast(pl.Float64)


@check_arguments(relevance=_RELEVANCE, k=_CUTOFF, threshold=Number())
def reciprocal_rank(relevance: IntoExpr, *, k: int | None = None, threshold: float = 1) -> pl.Expr:
    """Reciprocal rank: 1 / position of the first relevant item (0 if none within ``k``).

    Parameters
    ----------
    relevance
        Relevance of the items in rank order (best first): a column name or expression.
    k
        Cut-off; ``None`` looks at the whole sequence.
    threshold
        Smallest relevance that counts as relevant.

    Returns
    -------
    Expr
        One Float64 value.

    Examples
    --------
    >>> import polars as pl
    >>> pl.DataFrame({"r": [0, 0, 3]}).select(reciprocal_rank(pl.col("r"))).item()
    0.3333333333333333
    >>> pl.DataFrame({"r": [0, 0, 3]}).select(reciprocal_rank("r", k=2)).item()  # a name
    0.0
    """
    b = _binary(relevance, threshold)
    first = (b * _position(b)).filter(b > 0).min()
    rr = (1.0 / first).fill_null(0.0)
    return rr if k is None else pl.when(first <= k).then(rr).otherwise(0.0)


@check_arguments(relevance=_RELEVANCE, k=_CUTOFF, threshold=Number())
def hit(relevance: IntoExpr, *, k: int, threshold: float = 1) -> pl.Expr:
    """1.0 if an item among the first ``k`` has relevance >= ``threshold``, else 0.0.

    Parameters
    ----------
    relevance
        Relevance of the items in rank order (best first): a column name or expression.
    k
        Cut-off.
    threshold
        Smallest relevance that counts as relevant.

    Returns
    -------
    Expr
        One Float64 value.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame({"r": [0, 1]})
    >>> frame.select(at1=hit(pl.col("r"), k=1), at2=hit(pl.col("r"), k=2)).row(0)
    (0.0, 1.0)
    """
    return _top(_binary(relevance, threshold), k).max().fill_null(0.0)


@check_arguments(relevance=_RELEVANCE, k=Integer(1), threshold=Number())
def precision(relevance: IntoExpr, *, k: int, threshold: float = 1) -> pl.Expr:
    """Relevant items among the first ``k``, divided by ``k`` (even if fewer are given).

    Parameters
    ----------
    relevance
        Relevance of the items in rank order (best first): a column name or expression.
    k
        Cut-off.
    threshold
        Smallest relevance that counts as relevant.

    Returns
    -------
    Expr
        One Float64 value.

    Examples
    --------
    >>> import polars as pl
    >>> pl.DataFrame({"r": [1, 0, 2]}).select(precision(pl.col("r"), k=4)).item()
    0.5
    """
    return _top(_binary(relevance, threshold), k).sum() / float(k)


@check_arguments(relevance=_RELEVANCE, k=_CUTOFF, threshold=Number(), relevant_total=_TOTAL)
def recall(
    relevance: IntoExpr,
    *,
    k: int,
    threshold: float = 1,
    relevant_total: pl.Expr | float | None = None,
) -> pl.Expr:
    """Recall at ``k``: relevant items among the first ``k`` divided by R (0 when R = 0).

    Parameters
    ----------
    relevance
        Relevance of the items in rank order (best first): a column name or expression.
    k
        Cut-off.
    threshold
        Smallest relevance that counts as relevant.
    relevant_total
        R, one value (a number, or an expression such as ``pl.col("R").first()``), e.g.
        from the qrels; by default the relevant items of the sequence.

    Returns
    -------
    Expr
        One Float64 value.

    Examples
    --------
    >>> import polars as pl
    >>> pl.DataFrame({"r": [1, 0, 2]}).select(recall(pl.col("r"), k=1)).item()
    0.5
    """
    b = _binary(relevance, threshold)
    total = _relevant_total(b, relevant_total)
    found = _top(b, k).sum()
    return pl.when(total > 0).then(found / total).otherwise(0.0)


@check_arguments(relevance=_RELEVANCE, k=_CUTOFF, threshold=Number(), relevant_total=_TOTAL)
def average_precision(
    relevance: IntoExpr,
    *,
    k: int | None = None,
    threshold: float = 1,
    relevant_total: pl.Expr | float | None = None,
) -> pl.Expr:
    """Average precision Σ_{i<=k} b_i · P@i / R (0 when R = 0).

    trec_eval's map_cut_k when R comes from the qrels.

    Parameters
    ----------
    relevance
        Relevance of the items in rank order (best first): a column name or expression.
    k
        Cut-off; ``None`` looks at the whole sequence.
    threshold
        Smallest relevance that counts as relevant.
    relevant_total
        R, one value (a number, or an expression such as ``pl.col("R").first()``), e.g.
        from the qrels; by default the relevant items of the sequence.

    Returns
    -------
    Expr
        One Float64 value.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame({"r": [0, 1, 1]})
    >>> frame.select(average_precision(pl.col("r"))).item()  # (1/2 + 2/3) / 2
    0.5833333333333333
    """
    b = _binary(relevance, threshold)
    terms = b * b.cum_sum() / _position(b)
    total = _relevant_total(b, relevant_total)
    return pl.when(total > 0).then(_top(terms, k).sum() / total).otherwise(0.0)


def _gain(relevance: pl.Expr, gain: Gain) -> pl.Expr:
    value = relevance.cast(pl.Float64)
    return value if gain == "linear" else 2.0**value - 1.0


@check_arguments(relevance=_RELEVANCE, k=_CUTOFF, gain=Options.of(Gain))
def dcg(relevance: IntoExpr, *, k: int | None = None, gain: Gain = "linear") -> pl.Expr:
    """Σ_{i<=k} gain(rel_i) / log2(i + 1), gain rel (linear) or 2^rel − 1 (exponential).

    Parameters
    ----------
    relevance
        Graded relevance of the items in rank order (best first): a column name or
        expression.
    k
        Cut-off; ``None`` looks at the whole sequence.
    gain
        ``"linear"`` (trec_eval) or ``"exponential"`` (Burges et al.).

    Returns
    -------
    Expr
        One Float64 value.

    Examples
    --------
    >>> import polars as pl
    >>> pl.DataFrame({"r": [3, 0, 1]}).select(dcg(pl.col("r"))).item()
    3.5
    """
    sequence = as_expr(relevance)
    terms = _gain(sequence, gain) / (_position(sequence) + 1.0).log(2)
    return _top(terms, k).sum()


@check_arguments(relevance=_RELEVANCE, k=_CUTOFF, gain=Options.of(Gain), ideal=_RELEVANCE | None)
def ndcg(
    relevance: IntoExpr,
    *,
    k: int | None = None,
    gain: Gain = "linear",
    ideal: IntoExpr | None = None,
) -> pl.Expr:
    """Normalised DCG: DCG@k / IDCG@k, 0 when IDCG = 0.

    Parameters
    ----------
    relevance
        Graded relevance of the items in rank order (best first): a column name or
        expression.
    k
        Cut-off; ``None`` looks at the whole sequence.
    gain
        ``"linear"`` or ``"exponential"``.
    ideal
        Relevances (a column name or expression) whose descending sort is the ideal
        ranking (e.g. every judged item of the query); by default the sequence itself.

    Returns
    -------
    Expr
        One Float64 value.

    Examples
    --------
    >>> import polars as pl
    >>> round(pl.DataFrame({"r": [0, 1]}).select(ndcg(pl.col("r"))).item(), 6)
    0.63093
    """
    best = as_expr(relevance if ideal is None else ideal).sort(descending=True)
    denominator = dcg(best, k=k, gain=gain)
    return (
        pl.when(denominator > 0).then(dcg(relevance, k=k, gain=gain) / denominator).otherwise(0.0)
    )
