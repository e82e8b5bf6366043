"""calib_frames.ranking fed the way a careless user would: package errors or right numbers."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

from calib_frames import ranking
from calib_frames.exceptions import ArgumentError, DataError, TableError

RUN = pl.DataFrame(
    {
        "model": ["a"] * 3 + ["b"] * 3,
        "query": ["q1"] * 6,
        "item": ["d1", "d2", "d3"] * 2,
        "score": [0.9, 0.5, 0.1, 0.1, 0.5, 0.9],
    }
)
QRELS = pl.DataFrame({"query": ["q1", "q1"], "item": ["d1", "d3"], "relevance": [1, 0]})


@pytest.mark.parametrize("entry", [ranking.ranking_metrics, ranking.ranking_metrics_per_query])
@pytest.mark.parametrize("k", [2.5, "5", None, b"5"])
def test_k_that_is_not_an_integer(entry: object, k: object) -> None:
    """k=2.5 was a bare TypeError ('float' object is not iterable)."""
    with pytest.raises(ArgumentError, match="k= takes"):
        entry(RUN, QRELS, by="model", k=k)  # type: ignore[operator]


def test_k_as_a_list_or_an_integer_agree() -> None:
    one = ranking.ranking_metrics(RUN, QRELS, by="model", k=2)
    many = ranking.ranking_metrics(RUN, QRELS, by="model", k=[2])
    assert one.equals(many)
    assert one.sort("model")["hit@2"].to_list() == [1.0, 0.0]


@pytest.mark.parametrize("lazy", [False, True])
def test_categorical_and_decimal_inputs(lazy: bool) -> None:
    run = RUN.with_columns(
        pl.col("model").cast(pl.Categorical), pl.col("score").cast(pl.Decimal(5, 2))
    )
    got = ranking.ranking_metrics(run.lazy() if lazy else run, QRELS, by="model")
    got = got.collect() if isinstance(got, pl.LazyFrame) else got
    want = ranking.ranking_metrics(RUN, QRELS, by="model")
    assert (
        got.with_columns(pl.col("model").cast(pl.String)).sort("model").equals(want.sort("model"))
    )


def test_mismatched_query_dtypes_and_bad_rows() -> None:
    with pytest.raises(TableError, match="'query' has dtype Categorical in the run"):
        ranking.ranking_metrics(RUN.with_columns(pl.col("query").cast(pl.Categorical)), QRELS)
    with pytest.raises(DataError, match=r"'score': 1 of 6 rows is null or NaN"):
        ranking.ranking_metrics(
            RUN.with_columns(score=pl.Series([float("nan"), 0.5, 0.1, 0.1, 0.5, 0.9])),
            QRELS,
            by="model",
        )
    with pytest.raises(DataError, match="6 of 12 rows are repeated"):
        ranking.ranking_metrics(pl.concat([RUN, RUN]), QRELS, by="model")


def test_paired_significance_infinite_metric() -> None:
    """An infinite metric value gave difference -inf and p = 1 (and a numpy warning)."""
    per_query = pl.DataFrame(
        {"model": ["a", "b"], "query": ["q1", "q1"], "ndcg@10": [0.5, float("inf")]}
    )
    with pytest.raises(DataError, match=r"'ndcg@10': 1 of 2 rows is infinite, null or NaN"):
        ranking.paired_significance(per_query, replicates=10)


@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_paired_significance_without_shared_queries_warns_nothing(method: str) -> None:
    """Two models with no query in common printed numpy's RuntimeWarning (invalid divide)."""
    per_query = pl.DataFrame(
        {"model": ["a", "a", "b", "b"], "query": ["q1", "q2", "q3", "q4"], "ndcg@10": 0.5}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ranking.paired_significance(per_query, method=method)  # type: ignore[arg-type]
    assert out.select("queries", "difference", "p_value").rows() == [(0, None, None)]
