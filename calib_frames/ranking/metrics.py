"""Ranking metrics per group (model, task, ...) from a run and relevance judgements (qrels).

A *run* has one row per retrieved (query, item) with a score (higher = better) or a rank
(lower = better); *qrels* have one row per judged (query, item) with a graded relevance
(a non-negative number). Items of the run without a judgement have relevance 0.

The whole computation is one vectorised polars query, no Python loop over queries:

1. every run row gets its position ``pos`` (1, 2, ...) in its query's ranking, by a
   window rank over (keys…, query) that applies the tie policy;
2. only the run rows with a positive relevance carry any metric, so the run is inner-joined
   with the positive qrels (small), and every metric becomes a sum over those rows of a
   row-level term times ``pos <= k``, aggregated per (keys…, query);
3. per-query sums are divided by the query's normalisers from the qrels (the number of
   relevant items R, the ideal DCG) and averaged per group.

Definitions (per query; ``rel_i`` the graded relevance of the item at position ``i``,
``b_i = rel_i >= relevance_threshold`` binary relevance, ``R`` the number of items of the
query in the qrels with ``b``; ``first`` the position of the first item with ``b``):

==================  ==============================================================
column              formula (cut-off ``k``; the column without ``@k`` uses the whole run)
==================  ==============================================================
``hit@k``           1 if ``first <= k`` else 0
``precision@k``     Σ_{i<=k} b_i / k   (divided by k even if fewer items were retrieved)
``recall@k``        Σ_{i<=k} b_i / R
``f1@k``            2·P·R/(P + R) = 2 Σ_{i<=k} b_i / (k + R)   (0 when nothing is found)
``mrr@k``, ``mrr``  1/first if ``first <= k`` else 0 (the reciprocal rank)
``map@k``, ``map``  Σ_{i<=k} b_i · P@i / R   (average precision; trec_eval's map_cut_k)
``ndcg@k``          DCG@k / IDCG@k, DCG@k = Σ_{i<=k} rel_i / log2(i + 1)  (linear gain)
``ndcg_exp@k``      the same with gain 2^rel − 1 (Burges et al. 2005)
``r_precision``     Σ_{i<=R} b_i / R
==================  ==============================================================

IDCG@k is the DCG@k of the query's judged items sorted by relevance, from the qrels (not
only from the retrieved items). The gains of NDCG are the graded relevances of every item
with relevance > 0, whatever the threshold (as trec_eval does); the threshold only makes
the binary metrics. The group's value of every metric is the mean over its evaluated
queries.

Policies (each one is an argument, and is recorded in the output table):

* ``ties=`` — how items with equal scores are ordered:

  - ``"item_desc"`` (default): by item id descending, trec_eval's rule (its
    ``comp_sim_docno`` sorts by score descending, then ``strcmp`` of the docnos
    descending). Item ids are compared in their own dtype: strings byte-wise like
    ``strcmp``, numbers numerically, so give string ids to reproduce trec_eval exactly.
  - ``"input"``: in the order of the input rows, a stable sort. ranx agrees only for
    queries of up to 15 retrieved items: it sorts with numba's quicksort, which is an
    insertion sort (stable) on short lists and not stable beyond, so ties in longer
    lists come out in an order that depends on the other scores.
  - ``"average"``: the expected value of each metric over all orderings of the tied items,
    each equally likely (McSherry & Najork, ECIR 2008). For the metrics linear in the
    relevance at each position (precision, recall, F1, R-precision, DCG) this is
    scikit-learn's and torchmetrics' tie-averaged NDCG: every tied position gets the mean
    gain of its tie group. Average precision uses the hypergeometric expectation of the
    relevant items before each position; hit and reciprocal rank use the distribution of
    the first relevant position inside the first tie group that holds a relevant item.
    Tie groups that hold a relevant item are expanded to one row per position, so a run
    whose scores are all equal costs one row per retrieved item.

* ``no_relevant=`` — queries judged in the qrels without any item reaching the threshold
  (R = 0, so recall and AP are 0/0): ``"skip"`` (default) leaves them out of the means,
  ``"zero"`` scores them 0 on every metric (trec_eval's and ranx's behaviour).
* ``missing=`` — queries judged in the qrels that a group's run did not retrieve at all:
  ``"zero"`` (default) scores them 0 (trec_eval ``-c``, ranx ``make_comparable=True``),
  ``"skip"`` leaves them out (plain trec_eval, which only sees queries of the run).

Queries of the run that the qrels do not judge at all are never evaluated (as in
trec_eval and ranx); the output counts them in ``queries_unjudged``.

The row-level stage ranks every run row with a window over (keys…, query) and counts each
query's distinct items, so it holds the rows it works on in memory; everything after the
join with the positive qrels works on the relevant rows only. A run of more than
``PARTITION_ROWS`` (10^7) rows with integer or string query ids goes through that stage in
ranges of whole queries of about that many rows, one range collected at a time, so its
peak memory stays that of one range and its time grows linearly with the run; the numbers
are those of one pass (every metric of a query depends only on the query's own rows).
A lazy run is then read once per range, plus once for the query counts that set the
ranges; a parquet scan sorted by query reads only the row groups of each range.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import polars as pl

from calib_frames.arguments import COLUMN, FRAME, Integer, ListOf, Number, Options, check_arguments
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.schema import RANKING_METRICS, RANKING_PER_QUERY
from calib_frames.validation import (
    RESERVED_PREFIX,
    RowCheck,
    as_lazy,
    first_offending_row,
    group_keys,
    raise_on_bad_rows,
    require_columns,
    return_like,
    working,
)

__all__ = [
    "RANKING_METRICS",  # its home is calib_frames.schema; plot/ranking.py reads it here
    "ranking_metrics",
    "ranking_metrics_per_query",
]

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)
Ties = Literal["item_desc", "input", "average"]
NoRelevant = Literal["skip", "zero"]
Missing = Literal["zero", "skip"]

_K = Integer(1) | ListOf(Integer(1))
_RANKING = {
    "run": FRAME,
    "qrels": FRAME,
    "query": COLUMN,
    "item": COLUMN,
    "score": COLUMN | None,
    "rank": COLUMN | None,
    "relevance": COLUMN,
    "k": _K,
    "relevance_threshold": Number(greater_than=0),  # unjudged items (0) stay non-relevant
    "ties": Options.of(Ties),
    "no_relevant": Options.of(NoRelevant),
    "missing": Options.of(Missing),
}

CUT_METRICS = ("hit", "precision", "recall", "f1", "mrr", "map", "ndcg", "ndcg_exp")
"""Metrics reported at every cut-off, as ``<metric>@<k>`` columns."""

FULL_METRICS = RANKING_PER_QUERY.names[2:]
"""Metrics over the whole ranking (no cut-off): the spec's columns after the counts."""


@dataclass(frozen=True)
class _Spec:
    keys: list[str]
    shared: list[str]
    cutoffs: tuple[int, ...]
    query: str
    item: str
    order: str
    order_is_rank: bool
    relevance: str
    threshold: float
    ties: str
    no_relevant: str
    missing: str

    @property
    def part(self) -> list[str]:
        return [*self.keys, self.query]


@check_arguments(k=_K)
def metric_columns(k: int | Iterable[int] = (1, 5, 10)) -> list[str]:
    """The metric columns of a ranking table for the cut-offs ``k``, in output order.

    Parameters
    ----------
    k
        Cut-off(s), positive integers (sorted and deduplicated).

    Returns
    -------
    list of str
        The whole-list metrics, then ``<metric>@<k>`` per cut-off.

    Examples
    --------
    >>> metric_columns(3)[:7]
    ['mrr', 'map', 'ndcg', 'ndcg_exp', 'r_precision', 'hit@3', 'precision@3']
    >>> len(metric_columns((1, 5, 10)))
    29
    """
    cutoffs = _cutoffs(k)
    return [*FULL_METRICS, *(f"{m}@{c}" for c in cutoffs for m in CUT_METRICS)]


@check_arguments(**_RANKING)
def ranking_metrics_per_query(
    run: Frame,
    qrels: pl.DataFrame | pl.LazyFrame,
    *,
    query: str = "query",
    item: str = "item",
    score: str | None = "score",
    rank: str | None = None,
    relevance: str = "relevance",
    by: str | Sequence[str] | None = None,
    k: int | Iterable[int] = (1, 5, 10),
    relevance_threshold: float = 1,
    ties: Ties = "item_desc",
    no_relevant: NoRelevant = "skip",
    missing: Missing = "zero",
) -> Frame:
    """Ranking metrics per (group, query): the input of paired significance tests.

    Same arguments and definitions as :func:`ranking_metrics`; the queries left out by the
    ``no_relevant=`` / ``missing=`` policies are not in the table.

    Parameters
    ----------
    run
        One row per retrieved (keys…, query, item) with a ``score`` (higher is better) or a
        ``rank`` (lower is better). A LazyFrame gives a LazyFrame.
    qrels
        One row per judged (query, item) with a non-negative ``relevance``; it may carry
        some of the ``by=`` keys, which are then joined on too.
    query, item, relevance
        Column names (the same in run and qrels).
    score
        Score column of the run; ignored when ``rank`` is given.
    rank
        Rank column of the run (1 = best), used instead of the score when given.
    by
        Group keys (e.g. ``"model"``); ``None`` evaluates the whole run as one system.
    k
        Cut-off(s), positive integers.
    relevance_threshold
        Smallest relevance that counts as relevant for the binary metrics (> 0).
    ties
        ``"item_desc"`` (trec_eval), ``"input"`` (ranx) or ``"average"`` (expectation).
    no_relevant
        ``"skip"`` or ``"zero"``: queries whose qrels have no relevant item.
    missing
        ``"zero"`` or ``"skip"``: judged queries that the group's run lacks.

    Returns
    -------
    DataFrame or LazyFrame
        Like ``run``. Columns: the ``by=`` keys, ``query``, ``relevant`` (R),
        ``retrieved`` (run rows of the query; 0 for a missing query), ``mrr``, ``map``,
        ``ndcg``, ``ndcg_exp``, ``r_precision``, then ``<metric>@<k>`` for every cut-off
        (metrics ``hit, precision, recall, f1, mrr, map, ndcg, ndcg_exp``).

    Raises
    ------
    TableError
        If a column is missing or of the wrong dtype.
    DataError
        On null/NaN scores, null ids, duplicate (query, item) rows in run or qrels, or
        null/NaN/negative relevance (raised when the result is collected).
    ArgumentError
        On an unknown policy, a cut-off below 1, a threshold <= 0 or a ``by=`` that is not
        column names.

    See Also
    --------
    ranking_metrics : the per-group means.
    calib_frames.ranking.significance.paired_significance : tests between models.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["q1", "q1", "q2", "q2"], "item": ["a", "b", "c", "d"],
    ...                     "score": [0.9, 0.1, 0.8, 0.3]})
    >>> qrels = pl.DataFrame({"query": ["q1", "q2"], "item": ["b", "c"], "relevance": [1, 1]})
    >>> ranking_metrics_per_query(run, qrels, k=1).select("query", "mrr", "hit@1")
    shape: (2, 3)
    ┌───────┬─────┬───────┐
    │ query ┆ mrr ┆ hit@1 │
    │ ---   ┆ --- ┆ ---   │
    │ str   ┆ f64 ┆ f64   │
    ╞═══════╪═════╪═══════╡
    │ q1    ┆ 0.5 ┆ 0.0   │
    │ q2    ┆ 1.0 ┆ 1.0   │
    └───────┴─────┴───────┘
    """
    spec = _make_spec(
        run, qrels, by, k, query, item, score, rank, relevance, relevance_threshold,
        ties, no_relevant, missing,
    )  # fmt: skip
    full, checks, _ = _per_query_full(as_lazy(run), as_lazy(qrels), spec)
    kept = full.filter(pl.col(working("keep"))).select(
        *spec.part, "relevant", "retrieved", *metric_columns(spec.cutoffs)
    )
    out = _raise_on_bad_rows(kept, checks, as_lazy(run), as_lazy(qrels), spec)
    return return_like(run, out)


@check_arguments(**_RANKING)
def ranking_metrics(
    run: Frame,
    qrels: pl.DataFrame | pl.LazyFrame,
    *,
    query: str = "query",
    item: str = "item",
    score: str | None = "score",
    rank: str | None = None,
    relevance: str = "relevance",
    by: str | Sequence[str] | None = None,
    k: int | Iterable[int] = (1, 5, 10),
    relevance_threshold: float = 1,
    ties: Ties = "item_desc",
    no_relevant: NoRelevant = "skip",
    missing: Missing = "zero",
) -> Frame:
    """Ranking metrics per group: hit, precision, recall, F1, MRR, MAP, NDCG, R-precision.

    Hit@k, precision@k, recall@k, F1@k, MRR, MAP, NDCG (linear and exponential gain) and
    R-precision per group, in one vectorised polars query. Definitions, tie and query
    policies are in the module docstring (:mod:`calib_frames.ranking.metrics`).

    Parameters
    ----------
    run
        One row per retrieved (keys…, query, item) with a ``score`` (higher is better) or a
        ``rank`` (lower is better). A LazyFrame gives a LazyFrame.
    qrels
        One row per judged (query, item) with a non-negative ``relevance``; it may carry
        some of the ``by=`` keys (e.g. ``task``), which are then joined on too (a group
        whose values of those keys have no judgements gets ``queries`` 0 and null metrics).
    query, item, relevance
        Column names (the same in run and qrels).
    score
        Score column of the run; ignored when ``rank`` is given.
    rank
        Rank column of the run (1 = best), used instead of the score when given.
    by
        Group keys (e.g. ``"model"``); ``None`` evaluates the whole run as one system.
    k
        Cut-off(s), positive integers.
    relevance_threshold
        Smallest relevance that counts as relevant for the binary metrics (trec_eval's
        ``-l``; default 1). Must be > 0.
    ties
        ``"item_desc"`` (trec_eval), ``"input"`` (input row order, ranx) or
        ``"average"`` (expectation over tied orders, scikit-learn's NDCG).
    no_relevant
        ``"skip"`` or ``"zero"``: queries whose qrels have no relevant item.
    missing
        ``"zero"`` or ``"skip"``: judged queries that the group's run lacks.

    Returns
    -------
    DataFrame or LazyFrame
        Like ``run``: one row per group with the keys, ``queries``, ``queries_missing``,
        ``queries_no_relevant``, ``queries_unjudged``, ``tie_policy``,
        ``no_relevant_policy``, ``missing_policy``, ``mrr``, ``map``, ``ndcg``,
        ``ndcg_exp``, ``r_precision``, then ``<metric>@<k>`` for every cut-off
        (``hit, precision, recall, f1, mrr, map, ndcg, ndcg_exp``). A group whose queries
        are all skipped has null metrics.

    Raises
    ------
    TableError
        If a column is missing or of the wrong dtype, or run and qrels ids differ in dtype.
    DataError
        On null/NaN scores or ranks, null ids, duplicate (query, item) rows in run or
        qrels, or null/NaN/negative relevance (raised when the result is collected).
    ArgumentError
        On an unknown policy, a cut-off below 1, a threshold <= 0 or a ``by=`` that is not
        column names.

    See Also
    --------
    ranking_metrics_per_query : the per-query values (for significance tests).
    calib_frames.ranking.trec.scan_trec_run : read TREC run files.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({
    ...     "model": ["m1"] * 4 + ["m2"] * 4,
    ...     "query": ["q1", "q1", "q2", "q2"] * 2,
    ...     "item": ["a", "b", "c", "d"] * 2,
    ...     "score": [0.9, 0.1, 0.8, 0.3, 0.2, 0.7, 0.8, 0.3],
    ... })
    >>> qrels = pl.DataFrame({"query": ["q1", "q2"], "item": ["b", "c"], "relevance": [1, 2]})
    >>> table = ranking_metrics(run, qrels, by="model", k=1)
    >>> table.select("model", "queries", "mrr", "precision@1", "ndcg@1")
    shape: (2, 5)
    ┌───────┬─────────┬──────┬─────────────┬────────┐
    │ model ┆ queries ┆ mrr  ┆ precision@1 ┆ ndcg@1 │
    │ ---   ┆ ---     ┆ ---  ┆ ---         ┆ ---    │
    │ str   ┆ u32     ┆ f64  ┆ f64         ┆ f64    │
    ╞═══════╪═════════╪══════╪═════════════╪════════╡
    │ m1    ┆ 2       ┆ 0.75 ┆ 0.5         ┆ 0.5    │
    │ m2    ┆ 2       ┆ 1.0  ┆ 1.0         ┆ 1.0    │
    └───────┴─────────┴──────┴─────────────┴────────┘
    """
    spec = _make_spec(
        run, qrels, by, k, query, item, score, rank, relevance, relevance_threshold,
        ties, no_relevant, missing,
    )  # fmt: skip
    run_lf, qrels_lf = as_lazy(run), as_lazy(qrels)
    full, checks, unjudged = _per_query_full(run_lf, qrels_lf, spec)
    metrics: list[str] = metric_columns(spec.cutoffs)
    keep: pl.Expr = pl.col(working("keep"))
    aggs: list[pl.Expr] = [
        keep.sum().cast(pl.UInt32).alias("queries"),
        pl.col(working("missing")).sum().cast(pl.UInt32).alias("queries_missing"),
        pl.col(working("no_relevant")).sum().cast(pl.UInt32).alias("queries_no_relevant"),
        *(pl.col(m).filter(keep).mean().alias(m) for m in metrics),
    ]
    if spec.keys:
        table = unjudged.join(
            full.group_by(spec.keys).agg(aggs), on=spec.keys, how="left", nulls_equal=True
        )
    else:
        table = full.select(aggs).join(unjudged, how="cross")
    counts = ["queries", "queries_missing", "queries_no_relevant", "queries_unjudged"]
    table = table.with_columns(
        pl.col(counts).fill_null(0).cast(pl.UInt32),
        pl.lit(spec.ties).alias("tie_policy"),
        pl.lit(spec.no_relevant).alias("no_relevant_policy"),
        pl.lit(spec.missing).alias("missing_policy"),
    ).select(*spec.keys, *RANKING_METRICS.names, *metrics[len(FULL_METRICS) :])
    if spec.keys:
        table = table.sort(spec.keys, nulls_last=True)
    out = _raise_on_bad_rows(table, checks, run_lf, qrels_lf, spec)
    return return_like(run, out)


# ---------------------------------------------------------------------------------------
# argument and schema checks


def _cutoffs(k: int | Iterable[int]) -> tuple[int, ...]:
    """The cut-offs of ``k=`` (checked: :data:`_K`), sorted, each once."""
    values = list(k) if isinstance(k, Iterable) else [k]
    return tuple(sorted({int(value) for value in values}))


def _make_spec(  # noqa: PLR0917  (one private call site per entry point)
    run: pl.DataFrame | pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    by: str | Sequence[str] | None,
    k: int | Iterable[int],
    query: str,
    item: str,
    score: str | None,
    rank: str | None,
    relevance: str,
    threshold: float,
    ties: str,
    no_relevant: str,
    missing: str,
) -> _Spec:
    keys = group_keys(by)
    cutoffs = _cutoffs(k)
    order = rank if rank is not None else score
    if order is None:
        raise ArgumentError("give the run's score= or rank= column")
    run_schema = as_lazy(run).collect_schema()
    qrels_schema = as_lazy(qrels).collect_schema()
    role = "rank" if rank is not None else "score"
    require_columns(
        run_schema,
        {"query": query, "item": item, role: order},
        numeric=[role],
        reserved=[*RANKING_METRICS.names, *RANKING_PER_QUERY.names, *metric_columns(cutoffs)],
        keys=keys,
        inputs_are_not_keys=True,
        table="run",
    )
    require_columns(
        qrels_schema,
        {"query": query, "item": item, "relevance": relevance},
        numeric=["relevance"],
        table="qrels",
    )
    for column in (query, item):
        left, right = run_schema[column], qrels_schema[column]
        if left != right and not (left.is_integer() and right.is_integer()):
            raise TableError(
                f"column {column!r} has dtype {left} in the run but {right} in the qrels; "
                f"cast one of them, e.g. pl.col({column!r}).cast(pl.String)"
            )
    shared = [key for key in keys if key in qrels_schema]
    return _Spec(
        keys=keys,
        shared=shared,
        cutoffs=cutoffs,
        query=query,
        item=item,
        order=order,
        order_is_rank=rank is not None,
        relevance=relevance,
        threshold=float(threshold),
        ties=ties,
        no_relevant=no_relevant,
        missing=missing,
    )


# ---------------------------------------------------------------------------------------
# the query


def _discount(pos: pl.Expr) -> pl.Expr:
    """1 / log2(pos + 1)."""
    return 1.0 / (pos.cast(pl.Float64) + 1.0).log(2)


def _ranked_relevant(run: pl.LazyFrame, positive: pl.LazyFrame, spec: _Spec) -> pl.LazyFrame:
    """Run rows with a positive relevance: (keys…, query, pos, w_b, gain, gain_exp, ap, q).

    ``w_b`` is the (expected) binary relevance at ``pos``, ``gain``/``gain_exp`` the
    (expected) gains, ``ap`` the (expected) term b·P@pos of average precision and ``q``
    the probability that ``pos`` is the first relevant position.
    """
    order = pl.col(spec.order).cast(pl.Float64)
    if spec.order_is_rank:
        order = -order
    part = spec.part
    on = [*spec.shared, spec.query, spec.item]
    rel = pl.col(spec.relevance).cast(pl.Float64)
    b = (rel >= spec.threshold).cast(pl.Float64)
    if spec.ties != "average":
        if spec.ties == "item_desc":
            pos = pl.struct(order.alias(working("o")), pl.col(spec.item)).rank(
                "ordinal", descending=True
            )
        else:
            pos = order.rank("ordinal", descending=True)
        ranked = run.select(*spec.keys, spec.query, spec.item, pos.over(part).alias(working("pos")))
        rows = ranked.join(positive, on=on, how="inner", nulls_equal=True).with_columns(
            b.alias(working("w_b")),
            rel.alias(working("gain")),
            (2.0**rel - 1.0).alias(working("gain_exp")),
        )
        # rank of pos among the relevant rows of the query = relevant items up to pos
        upto = pl.col(working("pos")).rank("ordinal").over([*part, working("w_b")]).cast(pl.Float64)
        return rows.with_columns(
            (pl.col(working("w_b")) * upto / pl.col(working("pos"))).alias(working("ap_term")),
            (pl.col(working("w_b")) * (upto == 1.0).cast(pl.Float64)).alias(working("q")),
        ).select(
            *part,
            working("pos"),
            working("w_b"),
            working("gain"),
            working("gain_exp"),
            working("ap_term"),
            working("q"),
        )

    start = order.rank("min", descending=True).over(part)
    size = order.rank("max", descending=True).over(part) - start + 1
    ranked = run.select(
        *spec.keys, spec.query, spec.item, start.alias(working("start")), size.alias(working("g"))
    )
    rows = ranked.join(positive, on=on, how="inner", nulls_equal=True)
    groups = (
        rows.group_by([*part, working("start")])
        .agg(
            pl.col(working("g")).first().cast(pl.Float64),
            b.sum().alias(working("r")),
            rel.sum().alias(working("gain_sum")),
            (2.0**rel - 1.0).sum().alias(working("gain_exp_sum")),
        )
        .sort([*part, working("start")], nulls_last=True)
        .with_columns(
            (pl.col(working("r")).cum_sum().over(part) - pl.col(working("r"))).alias(working("p"))
        )
        .with_columns(pl.int_ranges(1, pl.col(working("g")).cast(pl.Int64) + 1).alias(working("j")))
        .explode(working("j"))
    )
    g, r, p = pl.col(working("g")), pl.col(working("r")), pl.col(working("p"))
    j = pl.col(working("j")).cast(pl.Float64)
    pos = pl.col(working("start")).cast(pl.Float64) + j - 1.0
    # relevant items expected among the j - 1 tied positions before this one
    before = pl.when(g > 1).then((j - 1.0) * (r - 1.0) / (g - 1.0)).otherwise(0.0)
    # P(first relevant of the group is at j) = P(J >= j) · r / (g - j + 1), where
    # P(J >= j + 1) / P(J >= j) = (g - j + 1 - r) / (g - j + 1)
    rho = (g - j + 1.0 - r) / (g - j + 1.0)
    survive = rho.cum_prod().shift(1, fill_value=1.0).over([*part, working("start")])
    first_group = (p == 0.0) & (r > 0.0)
    q = pl.when(first_group).then(survive * r / (g - j + 1.0)).otherwise(0.0)
    return groups.select(
        *part,
        pos.alias(working("pos")),
        (r / g).alias(working("w_b")),
        (pl.col(working("gain_sum")) / g).alias(working("gain")),
        (pl.col(working("gain_exp_sum")) / g).alias(working("gain_exp")),
        ((r / g) * (p + 1.0 + before) / pos).alias(working("ap_term")),
        q.alias(working("q")),
    )


PARTITION_ROWS = 10_000_000
"""Run rows per partition of the row-level stage: a larger run is ranked in query ranges."""


def _positive(qrels: pl.LazyFrame, spec: _Spec) -> pl.LazyFrame:
    """The qrels rows with a relevance > 0 (the only ones that carry a metric)."""
    rel = pl.col(spec.relevance).cast(pl.Float64)
    return qrels.filter(rel > 0).select(*spec.shared, spec.query, spec.item, spec.relevance)


def _query_pass(run: pl.LazyFrame, qrels: pl.LazyFrame, spec: _Spec) -> pl.LazyFrame:
    """Per (keys…, query) of the run: its counts (:func:`_run_counts`) and metric sums."""
    positive = _positive(qrels, spec)
    ideal, _ = _ideal(positive, qrels, spec)
    sums = _query_sums(_ranked_relevant(run, positive, spec), ideal, spec)
    return _run_counts(run, spec).join(sums, on=spec.part, how="left", nulls_equal=True)


def _per_query_pass(run: pl.LazyFrame, qrels: pl.LazyFrame, spec: _Spec) -> pl.LazyFrame:
    """The per-query counts and sums, in query ranges of about ``PARTITION_ROWS`` run rows.

    The row-level stage (the ranks, the distinct items per query) holds its rows in
    memory, so a run of more than ``PARTITION_ROWS`` rows (integer or string query ids) is
    cut, when collected, into ranges of whole queries (every group's rows of a query fall
    in the same range), each range of run and qrels collected on its own and the per-query
    rows concatenated. A query's values depend only on its own rows, so the numbers are
    those of one pass. A lazy run is read once per range (on a scan sorted by query,
    predicate pushdown skips the row groups outside the range).
    """
    one_pass = _query_pass(run, qrels, spec)
    ids = run.collect_schema()[spec.query]
    if not (ids.is_integer() or ids == pl.String):
        return one_pass

    def compute() -> pl.DataFrame:
        if run.select(pl.len()).collect().item() <= PARTITION_ROWS:
            return one_pass.collect()
        query, rows = pl.col(spec.query), pl.col(working("rows"))
        # the first query of each range: a range starts where the rows before it pass a
        # multiple of PARTITION_ROWS (in query order)
        starts = (
            run.group_by(spec.query)
            .agg(pl.len().alias(working("rows")))
            .drop_nulls()
            .sort(spec.query)
            .group_by((rows.cum_sum() - rows) // PARTITION_ROWS)
            .agg(query.min())
            .sort(spec.query)
            .collect()[spec.query]
            .to_list()
        )
        parts = []
        for low, high in itertools.pairwise([None, *starts[1:], None]):
            inside = pl.lit(True) if low is None else query >= low
            if high is not None:
                inside = inside & (query < high)
            if low is None:  # the first range also takes the null ids (bad rows)
                inside = inside | query.is_null()
            parts.append(_query_pass(run.filter(inside), qrels.filter(inside), spec).collect())
        return pl.concat(parts)

    # cached: the frame is read several times by the plan, computed once per collect
    return pl.defer(compute, schema=one_pass.collect_schema()).cache()


def _per_query_full(
    run: pl.LazyFrame, qrels: pl.LazyFrame, spec: _Spec
) -> tuple[pl.LazyFrame, pl.LazyFrame, pl.LazyFrame]:
    """Every expected (keys…, query) with its metrics and flags; checks; unjudged counts.

    Returns the per-query frame, the 1-row frame of row-check counts and the per-group
    count of run queries without judgements.
    """
    part = spec.part
    qkey = [*spec.shared, spec.query]
    # integer ids of different widths (Int32 in the run, UInt8 in the qrels) join as Int64
    run_schema, qrels_schema = run.collect_schema(), qrels.collect_schema()
    widen = [c for c in (spec.query, spec.item) if run_schema[c] != qrels_schema[c]]
    if widen:
        run = run.with_columns(pl.col(widen).cast(pl.Int64))
        qrels = qrels.with_columns(pl.col(widen).cast(pl.Int64))
    positive = _positive(qrels, spec)

    per_query = _per_query_pass(run, qrels, spec)
    run_q = per_query.select(*part, *_RUN_COUNTS)
    checks = _checks(run_q, qrels, spec)
    ideal, judged = _ideal(positive, qrels, spec)

    # the expected queries of every group
    if spec.keys:
        groups = run_q.select(spec.keys).unique()
        if spec.shared:
            expected = groups.join(judged, on=spec.shared, how="inner", nulls_equal=True)
        else:
            expected = groups.join(judged, how="cross")
    else:
        expected = judged
    full = (
        expected.join(run_q.select(*part, "retrieved"), on=part, how="left", nulls_equal=True)
        .join(ideal, on=qkey, how="left", nulls_equal=True)
        .join(per_query.drop(_RUN_COUNTS), on=part, how="left", nulls_equal=True)
    )
    sum_columns = [c for c in full.collect_schema().names() if c.startswith(RESERVED_PREFIX)]
    full = full.with_columns(
        pl.col(sum_columns).fill_null(0.0),
        pl.col("relevant").fill_null(0).cast(pl.UInt32),
        pl.col("retrieved").fill_null(0).cast(pl.UInt32),
    )
    missing_flag = pl.col("retrieved") == 0
    no_relevant_flag = pl.col("relevant") == 0
    keep = pl.lit(True)
    if spec.missing == "skip":
        keep = keep & ~missing_flag
    if spec.no_relevant == "skip":
        keep = keep & ~no_relevant_flag
    full = full.select(
        *part,
        "relevant",
        "retrieved",
        *_metric_exprs(spec),
        missing_flag.alias(working("missing")),
        no_relevant_flag.alias(working("no_relevant")),
        keep.alias(working("keep")),
    ).sort(part, nulls_last=True)

    # run queries without any judgement, per group
    unjudged = run_q.join(judged, on=qkey, how="anti", nulls_equal=True)
    if spec.keys:
        # every group of the run, even one without any judged query
        counts = unjudged.group_by(spec.keys).agg(pl.len().alias("queries_unjudged"))
        unjudged = (
            run_q.select(spec.keys)
            .unique()
            .join(counts, on=spec.keys, how="left", nulls_equal=True)
        )
    else:
        unjudged = unjudged.select(pl.len().alias("queries_unjudged"))
    return full, checks, unjudged


_RUN_COUNTS = ("retrieved", working("distinct"), working("null_item"), working("bad_order"))
"""The per-query columns of :func:`_run_counts`."""


def _run_counts(run: pl.LazyFrame, spec: _Spec) -> pl.LazyFrame:
    """Per (keys…, query) of the run: its size, distinct items, null items, bad orders."""
    order = pl.col(spec.order).cast(pl.Float64)
    return run.group_by(spec.part).agg(
        pl.len().alias("retrieved"),
        pl.col(spec.item).n_unique().alias(working("distinct")),
        pl.col(spec.item).null_count().alias(working("null_item")),
        (order.is_null() | order.is_nan()).sum().alias(working("bad_order")),
    )


def _checks(run_q: pl.LazyFrame, qrels: pl.LazyFrame, spec: _Spec) -> pl.LazyFrame:
    """The 1-row frame of row-check counts, from :func:`_run_counts` and the qrels."""
    qkey = [*spec.shared, spec.query]
    rel = pl.col(spec.relevance).cast(pl.Float64)
    qrels_checks = qrels.select(
        pl.len().alias(working("qrels_rows")),
        (pl.len() - pl.struct(*qkey, spec.item).n_unique()).alias(working("qrels_dup")),
        (pl.col(spec.query).null_count() + pl.col(spec.item).null_count()).alias(
            working("qrels_null_id")
        ),
        (rel.is_null() | rel.is_nan() | (rel < 0)).sum().alias(working("qrels_bad_rel")),
    )
    checks = run_q.select(
        pl.col("retrieved").sum().alias(working("run_rows")),
        (pl.col("retrieved") - pl.col(working("distinct"))).sum().alias(working("run_dup")),
        (
            pl.col(working("null_item")).sum()
            + pl.col("retrieved").filter(pl.col(spec.query).is_null()).sum()
        ).alias(working("run_null_id")),
        pl.col(working("bad_order")).sum().alias(working("run_bad_order")),
    ).join(qrels_checks, how="cross")
    return checks


def _ideal(
    positive: pl.LazyFrame, qrels: pl.LazyFrame, spec: _Spec
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Per judged query: R and the ideal DCGs (with every judged query); the judged queries."""
    qkey = [*spec.shared, spec.query]
    rel = pl.col(spec.relevance).cast(pl.Float64)
    ipos = rel.rank("ordinal", descending=True).over(qkey)
    judged = qrels.select(*qkey).unique()
    ideal_aggs: list[pl.Expr] = [(rel >= spec.threshold).sum().cast(pl.UInt32).alias("relevant")]
    for suffix, gain in (("", rel), ("_exp", 2.0**rel - 1.0)):
        term = gain * _discount(pl.col(working("ipos")))
        ideal_aggs.append(term.sum().alias(working(f"idcg{suffix}")))
        ideal_aggs += [
            term.filter(pl.col(working("ipos")) <= c).sum().alias(working(f"idcg{suffix}@{c}"))
            for c in spec.cutoffs
        ]
    ideal = positive.with_columns(ipos.alias(working("ipos"))).group_by(qkey).agg(ideal_aggs)
    return judged.join(ideal, on=qkey, how="left", nulls_equal=True), judged


def _query_sums(rows: pl.LazyFrame, ideal: pl.LazyFrame, spec: _Spec) -> pl.LazyFrame:
    """Per (keys…, query): the sums over the relevant rows that the metrics divide."""
    qkey = [*spec.shared, spec.query]
    rows = rows.join(ideal.select(*qkey, "relevant"), on=qkey, how="left", nulls_equal=True)
    pos = pl.col(working("pos"))
    disc = _discount(pos)
    sums: list[pl.Expr] = [
        pl.col(working("ap_term")).sum().alias(working("ap")),
        (pl.col(working("q")) / pos).sum().alias(working("rr")),
        (pl.col(working("gain")) * disc).sum().alias(working("dcg")),
        (pl.col(working("gain_exp")) * disc).sum().alias(working("dcg_exp")),
        (pl.col(working("w_b")) * (pos <= pl.col("relevant")).cast(pl.Float64))
        .sum()
        .alias(working("rprec")),
    ]
    for c in spec.cutoffs:
        top = (pos <= c).cast(pl.Float64)
        sums += [
            (pl.col(working("w_b")) * top).sum().alias(working(f"rel@{c}")),
            (pl.col(working("q")) * top).sum().alias(working(f"hit@{c}")),
            (pl.col(working("q")) / pos * top).sum().alias(working(f"rr@{c}")),
            (pl.col(working("ap_term")) * top).sum().alias(working(f"ap@{c}")),
            (pl.col(working("gain")) * disc * top).sum().alias(working(f"dcg@{c}")),
            (pl.col(working("gain_exp")) * disc * top).sum().alias(working(f"dcg_exp@{c}")),
        ]
    return rows.group_by(spec.part).agg(sums)


def _metric_exprs(spec: _Spec) -> list[pl.Expr]:
    """The metric columns from the per-query sums and normalisers."""
    R = pl.col("relevant").cast(pl.Float64)

    def ratio(num: str, den: pl.Expr) -> pl.Expr:
        return pl.when(den > 0).then(pl.col(num) / den).otherwise(0.0)

    metric_exprs: list[pl.Expr] = [
        pl.col(working("rr")).alias("mrr"),
        ratio(working("ap"), R).alias("map"),
        ratio(working("dcg"), pl.col(working("idcg"))).alias("ndcg"),
        ratio(working("dcg_exp"), pl.col(working("idcg_exp"))).alias("ndcg_exp"),
        ratio(working("rprec"), R).alias("r_precision"),
    ]
    for c in spec.cutoffs:
        metric_exprs += [
            pl.col(working(f"hit@{c}")).alias(f"hit@{c}"),
            (pl.col(working(f"rel@{c}")) / float(c)).alias(f"precision@{c}"),
            ratio(working(f"rel@{c}"), R).alias(f"recall@{c}"),
            (2.0 * pl.col(working(f"rel@{c}")) / (R + float(c))).alias(f"f1@{c}"),
            pl.col(working(f"rr@{c}")).alias(f"mrr@{c}"),
            ratio(working(f"ap@{c}"), R).alias(f"map@{c}"),
            ratio(working(f"dcg@{c}"), pl.col(working(f"idcg@{c}"))).alias(f"ndcg@{c}"),
            ratio(working(f"dcg_exp@{c}"), pl.col(working(f"idcg_exp@{c}"))).alias(f"ndcg_exp@{c}"),
        ]
    return metric_exprs


# ---------------------------------------------------------------------------------------
# row checks, counted in the passes above and raised when the result is collected


def _raise_on_bad_rows(
    result: pl.LazyFrame,
    counts: pl.LazyFrame,
    run: pl.LazyFrame,
    qrels: pl.LazyFrame,
    spec: _Spec,
) -> pl.LazyFrame:
    """``result``, raising first (when collected) if ``counts`` counted bad run/qrels rows."""
    schema = result.collect_schema()
    join, present = working("join"), working("present")
    # a left join from the 1-row check counts keeps them even when the result is empty
    combined = counts.with_columns(pl.lit(1).alias(join)).join(
        result.with_columns(pl.lit(1).alias(join), pl.lit(True).alias(present)),
        on=join,
        how="left",
        maintain_order="left_right",
    )
    finders = {
        "run": first_offending_row(run, [*spec.part, spec.item]),
        "qrels": first_offending_row(qrels, [*spec.shared, spec.query, spec.item]),
    }
    checked = raise_on_bad_rows(
        combined,
        keys=[*spec.part, spec.item],
        checks=_row_checks(spec),
        total_rows=pl.len(),
        find_example=lambda check: finders[check.table or "run"](check),
        drop=[*_COUNTS, join],
    )
    return checked.filter(pl.col(present).is_not_null()).select(schema.names())


_COUNTS = tuple(
    working(f"{table}_{name}")
    for table, names in (("run", ("rows", "null_id", "bad_order", "dup")),
                         ("qrels", ("rows", "null_id", "bad_rel", "dup")))
    for name in names
)  # fmt: skip
"""The row-check counts of :func:`_checks` (one row, both tables)."""


def _row_checks(spec: _Spec) -> list[RowCheck]:
    """The row contracts of run and qrels, counted by :func:`_checks`."""
    order = pl.col(spec.order).cast(pl.Float64)
    rel = pl.col(spec.relevance).cast(pl.Float64)
    null_id = pl.col(spec.query).is_null() | pl.col(spec.item).is_null()
    ids = f"{spec.query}/{spec.item}"

    def check(  # noqa: PLR0917  (a local table of six checks)
        table: str, counted: str, column: str, problem: str, bad: pl.Expr, show_value: bool
    ) -> RowCheck:
        return RowCheck(
            column,
            problem,
            bad,
            count=pl.col(working(f"{table}_{counted}")).first(),
            total=pl.col(working(f"{table}_rows")).first(),
            show_value=show_value,
            table=table,
        )

    def repeated(keys: Sequence[str]) -> pl.Expr:
        return pl.struct(*keys, spec.item).is_first_distinct().not_()

    return [
        check("run", "null_id", ids, "null", null_id, False),
        check("run", "bad_order", spec.order, "null or NaN",
              order.is_null() | order.is_nan(), True),
        check("run", "dup", spec.item, "repeated (the same query and item as an earlier row)",
              repeated(spec.part), False),
        check("qrels", "null_id", ids, "null", null_id, False),
        check("qrels", "bad_rel", spec.relevance, "null, NaN or negative (relevance must be >= 0)",
              rel.is_null() | rel.is_nan() | (rel < 0), True),
        check("qrels", "dup", spec.item,
              "repeated (the same judged query and item as an earlier row)",
              repeated([*spec.shared, spec.query]), False),
    ]  # fmt: skip
