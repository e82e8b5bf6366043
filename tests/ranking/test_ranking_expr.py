"""The pl.Expr metrics agree with ranking_metrics_per_query when every retrieved item is
judged and every judged item is retrieved (then R and the ideal DCG coincide)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from calib_frames.exceptions import ArgumentError
from calib_frames.ranking import expr, ranking_metrics_per_query


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    n_queries, n_items = 50, 12
    return pl.DataFrame(
        {
            "query": np.repeat(np.arange(n_queries), n_items),
            "item": np.tile(np.arange(n_items), n_queries),
            "score": rng.random(n_queries * n_items),
            "relevance": rng.choice([0, 0, 0, 1, 2, 3], n_queries * n_items),
        }
    )


def test_group_by_agg_matches_ranking_metrics(frame):
    ranked = pl.col("relevance").sort_by("score", descending=True)
    ours = (
        frame.group_by("query")
        .agg(
            mrr=expr.reciprocal_rank(ranked),
            **{"mrr@3": expr.reciprocal_rank(ranked, k=3)},
            **{"hit@3": expr.hit(ranked, k=3)},
            **{"precision@5": expr.precision(ranked, k=5)},
            **{"recall@5": expr.recall(ranked, k=5)},
            map=expr.average_precision(ranked),
            **{"map@5": expr.average_precision(ranked, k=5)},
            ndcg=expr.ndcg(ranked),
            **{"ndcg@5": expr.ndcg(ranked, k=5)},
            **{"ndcg_exp@5": expr.ndcg(ranked, k=5, gain="exponential")},
            **{"precision@5_l2": expr.precision(ranked, k=5, threshold=2)},
        )
        .sort("query")
    )
    reference = ranking_metrics_per_query(
        frame.select("query", "item", "score"),
        frame.select("query", "item", "relevance"),
        k=(3, 5),
        no_relevant="zero",
    ).sort("query")
    for name in ("mrr", "mrr@3", "hit@3", "precision@5", "recall@5", "map", "map@5", "ndcg",
                 "ndcg@5", "ndcg_exp@5"):  # fmt: skip
        np.testing.assert_allclose(ours[name], reference[name], rtol=1e-12, err_msg=name)
    level2 = ranking_metrics_per_query(
        frame.select("query", "item", "score"),
        frame.select("query", "item", "relevance"),
        k=5,
        relevance_threshold=2,
        no_relevant="zero",
    ).sort("query")
    np.testing.assert_allclose(ours["precision@5_l2"], level2["precision@5"], rtol=1e-12)


def test_list_eval_matches_group_by(frame):
    lists = (
        frame.sort("query", "score", descending=[False, True])
        .group_by("query", maintain_order=True)
        .agg(pl.col("relevance"))
    )
    via_list = lists.select(
        pl.col("relevance").list.eval(expr.dcg(pl.element(), k=4)).list.first()
    )["relevance"]
    via_agg = (
        frame.group_by("query")
        .agg(expr.dcg(pl.col("relevance").sort_by("score", descending=True), k=4).alias("d"))
        .sort("query")["d"]
    )
    np.testing.assert_allclose(via_list, via_agg, rtol=1e-12)


def test_given_normalisers():
    frame = pl.DataFrame({"r": [0, 1, 0]})
    row = frame.select(
        recall=expr.recall(pl.col("r"), k=2, relevant_total=4),
        ap=expr.average_precision(pl.col("r"), relevant_total=2),
        ndcg=expr.ndcg(pl.col("r"), ideal=pl.lit(pl.Series([1, 1]))),
    ).row(0, named=True)
    assert row["recall"] == 0.25
    assert row["ap"] == 0.25
    assert row["ndcg"] == pytest.approx((1 / np.log2(3)) / (1 + 1 / np.log2(3)))


def test_empty_and_no_relevant_sequences():
    frame = pl.DataFrame({"r": [0, 0]})
    row = frame.select(
        rr=expr.reciprocal_rank(pl.col("r")),
        ap=expr.average_precision(pl.col("r")),
        ndcg=expr.ndcg(pl.col("r")),
        hit=expr.hit(pl.col("r"), k=1),
    ).row(0)
    assert row == (0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_cutoff(bad):
    with pytest.raises(ArgumentError, match="k="):
        expr.precision(pl.col("r"), k=bad)


def test_bad_gain():
    with pytest.raises(ArgumentError, match="gain="):
        expr.dcg(pl.col("r"), gain="log")  # type: ignore[arg-type]


def test_column_names_are_taken_like_expressions():
    """Every column argument takes a name (pl.col(name)) as well as an expression."""
    lists = pl.DataFrame({"r": [3, 0, 1, 2], "all": [3, 2, 1, 0]})
    calls = [
        (expr.reciprocal_rank, {}),
        (expr.hit, {"k": 2}),
        (expr.precision, {"k": 2}),
        (expr.recall, {"k": 2, "relevant_total": 4}),
        (expr.average_precision, {"relevant_total": 4}),
        (expr.dcg, {"k": 3}),
        (expr.ndcg, {"k": 3, "ideal": "all"}),
    ]
    for function, kwargs in calls:
        as_names = lists.select(function("r", **kwargs)).item()
        as_exprs = {k: pl.col(v) if isinstance(v, str) else v for k, v in kwargs.items()}
        assert as_names == lists.select(function(pl.col("r"), **as_exprs)).item(), function
