"""Ranking metrics against pytrec_eval (trec_eval), ranx, scikit-learn and a brute-force
reference, on the hand-written fixtures in data/ranking/ and on random runs.

Conventions mapped (every difference explained):

* trec_eval / pytrec_eval orders ties by docno descending (``ties="item_desc"``), scores
  a judged query without relevant items 0 (``no_relevant="zero"``) and only sees queries
  of the run (``missing="skip"``); its names: recip_rank = mrr, P_k = precision@k,
  recall_k, map_cut_k = map@k, ndcg_cut_k = ndcg@k, success_k = hit@k, Rprec.
  It has no F1@k, cut-off MRR or exponential-gain NDCG (those are checked against ranx).
* ranx keeps tied documents in the order the run lists them (``ties="input"``), scores
  queries without relevant items 0 and, with ``make_comparable=True``, judged queries
  missing from the run 0 (``missing="zero"``); ndcg_burges = ndcg_exp, hit_rate = hit,
  r-precision; ``-l2`` suffix = ``relevance_threshold=2``.
* scikit-learn's ndcg_score averages the gain over tied scores (``ties="average"``).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from ranking_reference import query_metrics

from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.ranking import (
    metric_columns,
    paired_significance,
    ranking_metrics,
    ranking_metrics_per_query,
)
from calib_frames.ranking.trec import scan_trec_qrels, scan_trec_run

# Test-only reference libraries: a missing one skips this module, it does not break collection.
pytrec_eval = pytest.importorskip("pytrec_eval")

DATA = Path(__file__).resolve().parents[2] / "data" / "ranking"
K = (1, 3, 5)


@pytest.fixture(scope="module")
def qrels() -> pl.DataFrame:
    return scan_trec_qrels(DATA / "qrels.txt").collect()


@pytest.fixture(scope="module")
def run() -> pl.DataFrame:
    return pl.concat(
        [scan_trec_run(DATA / f"run_{tag}.txt").collect() for tag in ("alpha", "beta")]
    )


def as_dicts(run: pl.DataFrame, qrels: pl.DataFrame) -> tuple[dict, dict]:
    qd: dict[str, dict[str, int]] = {}
    for q, i, r in qrels.select("query", "item", "relevance").iter_rows():
        qd.setdefault(q, {})[i] = int(r)
    rd: dict[str, dict[str, float]] = {}
    for q, i, s in run.select("query", "item", "score").iter_rows():
        rd.setdefault(q, {})[i] = float(s)
    return rd, qd


TREC_NAMES = {
    "map": "map",
    "mrr": "recip_rank",
    "ndcg": "ndcg",
    "r_precision": "Rprec",
    **{f"precision@{k}": f"P_{k}" for k in K},
    **{f"recall@{k}": f"recall_{k}" for k in K},
    **{f"map@{k}": f"map_cut_{k}" for k in K},
    **{f"ndcg@{k}": f"ndcg_cut_{k}" for k in K},
    **{f"hit@{k}": f"success_{k}" for k in K},
}
TREC_MEASURES = {"map", "recip_rank", "ndcg", "Rprec", "P.1,3,5", "recall.1,3,5",
                 "map_cut.1,3,5", "ndcg_cut.1,3,5", "success.1,3,5"}  # fmt: skip


def pytrec_per_query(run_dict: dict, qrels_dict: dict, level: int = 1) -> dict:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_dict, TREC_MEASURES, relevance_level=level)
    return evaluator.evaluate(run_dict)


@pytest.mark.parametrize("threshold", [1, 2])
@pytest.mark.parametrize("tag", ["alpha", "beta"])
def test_matches_pytrec_eval_per_query(run, qrels, tag, threshold):
    one = run.filter(pl.col("run") == tag)
    ours = ranking_metrics_per_query(
        one, qrels, k=K, relevance_threshold=threshold, no_relevant="zero", missing="skip"
    )
    expected = pytrec_per_query(*as_dicts(one, qrels), level=threshold)
    assert sorted(ours["query"]) == sorted(expected)
    for row in ours.iter_rows(named=True):
        for name, trec_name in TREC_NAMES.items():
            assert row[name] == pytest.approx(expected[row["query"]][trec_name], abs=1e-12), (
                row["query"],
                name,
            )


def test_pytrec_eval_means_by_run(run, qrels):
    table = ranking_metrics(run, qrels, by="run", k=K, no_relevant="zero", missing="skip")
    assert table["run"].to_list() == ["alpha", "beta"]
    for row in table.iter_rows(named=True):
        one = run.filter(pl.col("run") == row["run"])
        expected = pytrec_per_query(*as_dicts(one, qrels))
        assert row["queries"] == len(expected)
        for name, trec_name in TREC_NAMES.items():
            mean = np.mean([v[trec_name] for v in expected.values()])
            assert row[name] == pytest.approx(mean, abs=1e-12), name


def test_trec_eval_tie_rule_is_docno_descending(qrels):
    # q10 ties d2, d10, d1 at score 5: strcmp descending gives d2, d10, d1
    run = pl.DataFrame({"query": ["q10"] * 3, "item": ["d1", "d10", "d2"], "score": [5.0] * 3})
    ours = ranking_metrics_per_query(run, qrels, k=(1, 3), missing="skip")
    expected = pytrec_per_query(*as_dicts(run, qrels))["q10"]
    assert ours["precision@1"].item() == expected["P_1"] == 1.0  # d2 (relevant) first
    assert ours["ndcg@3"].item() == pytest.approx(expected["ndcg_cut_3"])
    # the same ids as integers tie-break numerically (10 > 2 > 1): d10 first
    as_int = ranking_metrics_per_query(
        run.with_columns(pl.col("item").str.slice(1).cast(pl.Int64)),
        qrels.with_columns(pl.col("item").str.slice(1).cast(pl.Int64)),
        k=(1, 3),
        missing="skip",
    )
    assert as_int["ndcg@1"].item() == 1.0  # d10 (relevance 2) first


RANX_NAMES = {
    "map": "map",
    "mrr": "mrr",
    "ndcg": "ndcg",
    "ndcg_exp": "ndcg_burges",
    "r_precision": "r-precision",
    **{
        f"{ours}@{k}": f"{theirs}@{k}"
        for k in K
        for ours, theirs in [
            ("hit", "hit_rate"),
            ("precision", "precision"),
            ("recall", "recall"),
            ("f1", "f1"),
            ("mrr", "mrr"),
            ("map", "map"),
            ("ndcg", "ndcg"),
            ("ndcg_exp", "ndcg_burges"),
        ]
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("threshold", [1, 2])
@pytest.mark.parametrize("tag", ["alpha", "beta"])
def test_matches_ranx_per_query(run, qrels, tag, threshold):
    ranx = pytest.importorskip("ranx")
    one = run.filter(pl.col("run") == tag)
    ours = ranking_metrics_per_query(
        one,
        qrels,
        k=K,
        relevance_threshold=threshold,
        ties="input",
        no_relevant="zero",
        missing="zero",
    )
    run_dict, qrels_dict = as_dicts(one, qrels)
    ranx_run = ranx.Run(run_dict)
    suffix = "" if threshold == 1 else f"-l{threshold}"
    # NDCG gains do not depend on ranx's level suffix in our convention: ask without it
    names = {
        ours_name: theirs + ("" if "ndcg" in theirs else suffix)
        for ours_name, theirs in RANX_NAMES.items()
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx.evaluate(ranx.Qrels(qrels_dict), ranx_run, list(set(names.values())),
                      make_comparable=True)  # fmt: skip
    scores = ranx_run.scores
    assert sorted(ours["query"]) == sorted(scores[names["map"]])
    for row in ours.iter_rows(named=True):
        for name, theirs in names.items():
            assert row[name] == pytest.approx(scores[theirs][row["query"]], abs=1e-12), (
                row["query"],
                name,
            )


def reference_table(run: pl.DataFrame, qrels: pl.DataFrame, *, ties: str, threshold: float = 1):
    qd: dict[str, dict[str, float]] = {}
    for q, i, r in qrels.select("query", "item", "relevance").iter_rows():
        qd.setdefault(q, {})[i] = float(r)
    lists: dict[str, list[tuple[str, float]]] = {}
    for q, i, s in run.select("query", "item", "score").iter_rows():
        lists.setdefault(q, []).append((i, s))
    return {
        q: query_metrics(lists.get(q, []), qd[q], threshold=threshold, cutoffs=K, ties=ties)
        for q in qd
    }


@pytest.mark.parametrize("ties", ["item_desc", "input", "average"])
@pytest.mark.parametrize("tag", ["alpha", "beta"])
def test_matches_brute_force_reference(run, qrels, tag, ties):
    one = run.filter(pl.col("run") == tag)
    ours = ranking_metrics_per_query(one, qrels, k=K, ties=ties, no_relevant="zero")
    expected = reference_table(one, qrels, ties=ties)
    assert sorted(ours["query"]) == sorted(expected)
    for row in ours.iter_rows(named=True):
        for name in metric_columns(K):
            assert row[name] == pytest.approx(expected[row["query"]][name], abs=1e-12), (
                row["query"],
                name,
            )


def test_average_ties_ndcg_matches_scikit_learn():
    ndcg_score = pytest.importorskip("sklearn.metrics").ndcg_score

    rng = np.random.default_rng(3)
    scores = rng.integers(0, 3, size=(20, 8)).astype(float)  # many ties
    truth = rng.integers(0, 4, size=(20, 8)).astype(float)
    truth[:, 0] = 1.0  # every query has a relevant item
    run = pl.DataFrame(
        {
            "query": np.repeat(np.arange(20), 8),
            "item": np.tile(np.arange(8), 20),
            "score": scores.ravel(),
        }
    )
    qrels = run.select("query", "item").with_columns(relevance=pl.Series(truth.ravel()))
    ours = ranking_metrics_per_query(run, qrels, k=(3, 8), ties="average").sort("query")
    for k in (3, 8):
        per_query = [ndcg_score(truth[i : i + 1], scores[i : i + 1], k=k) for i in range(20)]
        np.testing.assert_allclose(ours[f"ndcg@{k}"].to_numpy(), per_query, rtol=1e-12)


def test_policies_are_applied_and_recorded(run, qrels):
    alpha = run.filter(pl.col("run") == "alpha")
    table = ranking_metrics(alpha, qrels, k=1)
    row = table.row(0, named=True)
    # judged: q1 q2 q3 q4 q5 q10; q2 has no relevant item, q3 is missing, q6 is unjudged
    assert (row["queries_no_relevant"], row["queries_missing"], row["queries_unjudged"]) == (
        1,
        1,
        1,
    )
    assert row["queries"] == 5  # skip q2, q3 counted as zero
    assert (row["tie_policy"], row["no_relevant_policy"], row["missing_policy"]) == (
        "item_desc",
        "skip",
        "zero",
    )
    per_query = ranking_metrics_per_query(alpha, qrels, k=1)
    assert per_query.filter(pl.col("query") == "q3")["retrieved"].item() == 0
    assert per_query.filter(pl.col("query") == "q3")["map"].item() == 0.0
    assert row["map"] == pytest.approx(per_query["map"].mean())
    skipped = ranking_metrics(alpha, qrels, k=1, missing="skip", no_relevant="zero")
    assert skipped["queries"].item() == 5
    assert skipped["missing_policy"].item() == "skip"
    with_q2 = ranking_metrics_per_query(alpha, qrels, k=1, missing="skip", no_relevant="zero")
    assert "q3" not in with_q2["query"].to_list()
    assert with_q2.filter(pl.col("query") == "q2")["recall@1"].item() == 0.0


def test_rank_column(run, qrels):
    # the rank column of the files agrees with the scores where there are no ties
    no_ties = run.filter(pl.col("query") == "q5", pl.col("run") == "beta")
    by_rank = ranking_metrics(no_ties, qrels, k=K, rank="rank")
    by_score = ranking_metrics(no_ties, qrels, k=K)
    assert_frame_equal(by_rank, by_score)


def test_column_order_and_names(run, qrels):
    table = ranking_metrics(run, qrels, by="run", k=(10, 1))
    assert table.columns[:12] == ["run", "queries", "queries_missing", "queries_no_relevant",
                                  "queries_unjudged", "tie_policy", "no_relevant_policy",
                                  "missing_policy", "mrr", "map", "ndcg", "ndcg_exp"]  # fmt: skip
    assert table.columns[13:] == metric_columns((1, 10))[5:]
    per_query = ranking_metrics_per_query(run, qrels, by="run", k=1)
    assert per_query.columns[:4] == ["run", "query", "relevant", "retrieved"]


def test_qrels_with_group_keys_join_on_them():
    run = pl.DataFrame(
        {"task": ["a", "a", "b", "b"], "query": [1, 1, 1, 1], "item": [1, 2, 1, 2],
         "score": [0.9, 0.1, 0.9, 0.1]}
    )  # fmt: skip
    qrels = pl.DataFrame({"task": ["a", "b"], "query": [1, 1], "item": [1, 2], "relevance": [1, 1]})
    table = ranking_metrics(run, qrels, by="task", k=1)
    assert table["precision@1"].to_list() == [1.0, 0.0]


def test_empty_run_scores_every_judged_query_as_missing(qrels):
    empty = pl.DataFrame(schema={"query": pl.String, "item": pl.String, "score": pl.Float64})
    table = ranking_metrics(empty, qrels, k=1)
    assert table["queries_missing"].item() == 6
    assert table["map"].item() == 0.0
    skipped = ranking_metrics(empty, qrels, k=1, missing="skip")
    assert skipped["queries"].item() == 0
    assert skipped["map"].item() is None


def test_grouped_empty_run_has_no_rows(qrels):
    empty = pl.DataFrame(
        schema={"model": pl.String, "query": pl.String, "item": pl.String, "score": pl.Float64}
    )
    assert ranking_metrics(empty, qrels, by="model").height == 0


def test_every_group_of_the_run_has_a_row_even_without_judgements():
    run = pl.DataFrame({"task": ["a", "b"], "query": [1, 1], "item": [1, 1], "score": [1, 1]})
    qrels = pl.DataFrame({"task": ["a"], "query": [1], "item": [1], "relevance": [1]})
    table = ranking_metrics(run, qrels, by="task", k=1)
    assert table["task"].to_list() == ["a", "b"]
    assert table["queries"].to_list() == [1, 0]
    assert table["queries_unjudged"].to_list() == [0, 1]
    assert table["map"].to_list() == [1.0, None]
    no_qrels = ranking_metrics(run, qrels.clear(), by="task", k=1)
    assert no_qrels["queries"].to_list() == [0, 0]


@st.composite
def random_runs(draw):
    n_queries = draw(st.integers(1, 4))
    run_rows, qrels_rows = [], []
    for q in range(n_queries):
        n_items = draw(st.integers(1, 7))
        scores = draw(st.lists(st.integers(0, 3), min_size=n_items, max_size=n_items))
        for i, s in enumerate(scores):
            run_rows.append((f"q{q}", f"d{i}", s / 2))
        judged = draw(st.lists(st.integers(0, 9), max_size=6, unique=True))
        for i in judged:
            qrels_rows.append((f"q{q}", f"d{i}", draw(st.integers(0, 3))))
    run = pl.DataFrame(run_rows, schema=["query", "item", "score"], orient="row")
    qrels = pl.DataFrame(
        qrels_rows, schema={"query": pl.String, "item": pl.String, "relevance": pl.Int64},
        orient="row",
    )  # fmt: skip
    return run, qrels


@settings(max_examples=60, deadline=None)
@given(random_runs(), st.sampled_from([1, 2]))
def test_random_runs_match_pytrec_eval(data, threshold):
    run, qrels = data
    ours = ranking_metrics_per_query(
        run, qrels, k=K, relevance_threshold=threshold, no_relevant="zero", missing="skip"
    )
    run_dict, qrels_dict = as_dicts(run, qrels)
    expected = pytrec_per_query(run_dict, qrels_dict, level=threshold) if qrels_dict else {}
    assert sorted(ours["query"]) == sorted(expected)
    for row in ours.iter_rows(named=True):
        for name, trec_name in TREC_NAMES.items():
            assert math.isclose(row[name], expected[row["query"]][trec_name], abs_tol=1e-12)


@settings(max_examples=40, deadline=None)
@given(random_runs(), st.sampled_from(["input", "average"]))
def test_random_runs_match_reference(data, ties):
    run, qrels = data
    ours = ranking_metrics_per_query(run, qrels, k=K, ties=ties, no_relevant="zero")
    expected = reference_table(run, qrels, ties=ties)
    for row in ours.iter_rows(named=True):
        for name in metric_columns(K):
            assert math.isclose(row[name], expected[row["query"]][name], abs_tol=1e-12), name


@st.composite
def one_relevant(draw):
    n_queries = draw(st.integers(1, 5))
    run_rows, qrels_rows = [], []
    for q in range(n_queries):
        n_items = draw(st.integers(1, 6))
        for i in range(n_items):
            run_rows.append((q, i, draw(st.floats(0, 1))))
        qrels_rows.append((q, draw(st.integers(0, 8)), draw(st.integers(1, 3))))
    run = pl.DataFrame(run_rows, schema=["query", "item", "score"], orient="row")
    qrels = pl.DataFrame(qrels_rows, schema=["query", "item", "relevance"], orient="row")
    return run, qrels


@settings(max_examples=50, deadline=None)
@given(one_relevant(), st.sampled_from(["item_desc", "input", "average"]))
def test_one_relevant_item_per_query_identity(data, ties):
    """With exactly one relevant item per query, Hit@1 = P@1 = R@1 = MRR@1 = F1@1 = MAP@1."""
    run, qrels = data
    row = ranking_metrics(run, qrels, k=1, ties=ties).row(0, named=True)
    for name in ("precision@1", "recall@1", "mrr@1", "f1@1", "map@1"):
        assert row[name] == pytest.approx(row["hit@1"], abs=1e-12), name


# ---------------------------------------------------------------------------------------
# bad input


def small():
    run = pl.DataFrame({"model": ["m", "m", "m"], "query": ["q", "q", "r"],
                        "item": ["a", "b", "a"], "score": [0.3, 0.2, 0.1]})  # fmt: skip
    qrels = pl.DataFrame({"query": ["q", "r"], "item": ["a", "a"], "relevance": [1, 2]})
    return run, qrels


def test_missing_columns_raise_schema_error():
    run, qrels = small()
    with pytest.raises(TableError, match=r"run: column not found: score='sc'"):
        ranking_metrics(run, qrels, score="sc")
    with pytest.raises(TableError, match=r"qrels: column not found: relevance='relevance'"):
        ranking_metrics(run, qrels.rename({"relevance": "rel"}))
    with pytest.raises(TableError, match=r"by='task'"):
        ranking_metrics(run, qrels, by="task")
    with pytest.raises(TableError, match="must be numeric"):
        ranking_metrics(run.with_columns(pl.col("score").cast(pl.String)), qrels)
    with pytest.raises(TableError, match="dtype"):
        ranking_metrics(run, qrels.with_columns(pl.col("item").cast(pl.Categorical)))
    with pytest.raises(TableError, match="clash"):
        ranking_metrics(run.rename({"model": "queries"}), qrels, by="queries")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda r, q: (r.with_columns(score=pl.lit(None, pl.Float64)), q),
            r"run column 'score': 3 of 3 rows are null or NaN; e.g. model='m', query='q'",
        ),
        (
            lambda r, q: (r.with_columns(score=pl.Series([0.1, float("nan"), 0.2])), q),
            r"run column 'score': 1 of 3 rows is null or NaN; e.g. model='m', query='q', item='b'",
        ),
        (
            lambda r, q: (pl.concat([r, r.head(1)]), q),
            r"run column 'item': 1 of 4 rows is repeated \(the same query and item as an earlier "
            r"row\); e.g. model='m', query='q', item='a'",
        ),
        (
            lambda r, q: (r, pl.concat([q, q.head(1)])),
            r"qrels column 'item': 1 of 3 rows is repeated \(the same judged.*query='q', item='a'",
        ),
        (
            lambda r, q: (r, q.with_columns(relevance=pl.Series([1, -1]))),
            r"qrels column 'relevance': 1 of 2 rows is null, NaN or negative.*query='r'",
        ),
        (
            lambda r, q: (r, q.with_columns(relevance=pl.Series([1, None]))),
            r"qrels column 'relevance': 1 of 2 rows is null",
        ),
        (
            lambda r, q: (r.with_columns(item=pl.Series(["a", None, "a"])), q),
            r"run column 'query/item': 1 of 3 rows is null",
        ),
    ],
)
def test_bad_rows_raise_data_error(change, match):
    run, qrels = change(*small())
    with pytest.raises(DataError, match=match):
        ranking_metrics(run, qrels, by="model")
    lazy = ranking_metrics_per_query(run.lazy(), qrels, by="model")  # builds without error
    with pytest.raises(DataError, match=match):
        lazy.collect()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": 0}, "k= takes an integer >= 1 or a non-empty list of integers >= 1, got 0"),
        ({"k": ()}, r"k= takes an integer >= 1 or a non-empty list of integers >= 1, got \(\)"),
        (
            {"k": (1, 2.5)},
            r"k= takes an integer >= 1 or a non-empty list of integers >= 1, got \(1, 2.5\)",
        ),
        ({"ties": "random"}, "ties= takes 'item_desc', 'input' or 'average', got 'random'"),
        ({"no_relevant": "drop"}, "no_relevant= takes 'skip' or 'zero', got 'drop'"),
        ({"missing": "nan"}, "missing= takes 'zero' or 'skip', got 'nan'"),
        ({"relevance_threshold": 0}, "> 0"),
        ({"relevance_threshold": float("nan")}, "> 0"),
        ({"by": ["model", "model"]}, "twice"),
        ({"score": None}, "score= or rank="),
    ],
)
def test_bad_arguments_raise_argument_error(kwargs, match):
    run, qrels = small()
    with pytest.raises(ArgumentError, match=match):
        ranking_metrics(run, qrels, **kwargs)


def test_not_a_frame_raises_argument_error():
    _, qrels = small()
    with pytest.raises(ArgumentError, match="DataFrame or LazyFrame"):
        ranking_metrics({"query": [1]}, qrels)  # type: ignore[arg-type]


def test_hostile_names_and_integer_ids():
    run = pl.DataFrame({"the model": ["x"] * 2, "q id": [1, 1], "doc": [5, 6], "s": [1, 2]})
    qrels = pl.DataFrame({"q id": [1], "doc": [6], "grade": [1.5]}).with_columns(
        pl.col("q id").cast(pl.Int32), pl.col("doc").cast(pl.UInt8)
    )
    table = ranking_metrics(run, qrels, by="the model", query="q id", item="doc", score="s",
                            relevance="grade", k=1)  # fmt: skip
    assert table["precision@1"].item() == 1.0
    assert table["ndcg_exp@1"].item() == 1.0


def test_streaming_and_in_memory_engines_agree(run, qrels):
    lazy = ranking_metrics(run.lazy(), qrels.lazy(), by="run", k=K, ties="average")
    assert_frame_equal(lazy.collect(engine="in-memory"), lazy.collect(engine="streaming"))


def test_null_group_key_is_its_own_group(run, qrels):
    keyed = run.with_columns(
        pl.when(pl.col("run") == "alpha").then(pl.lit(None)).otherwise("run").alias("system")
    ).drop("run")
    table = ranking_metrics(keyed, qrels, by="system", k=K)
    assert table["system"].to_list() == ["beta", None]
    expected = ranking_metrics(run, qrels, by="run", k=K).drop("run")
    assert_frame_equal(table.drop("system"), expected.reverse())


def test_rank_column_ties_follow_the_policy():
    run = pl.DataFrame({"query": ["q"] * 3, "item": ["a", "b", "c"], "rank": [1, 1, 2]})
    qrels = pl.DataFrame({"query": ["q"], "item": ["a"], "relevance": [1]})
    mrr = {
        ties: ranking_metrics(run, qrels, rank="rank", ties=ties)["mrr"].item()
        for ties in ("item_desc", "input", "average")
    }
    assert mrr == {"item_desc": 0.5, "input": 1.0, "average": 0.75}


@pytest.mark.parametrize("by", [5, [5], ("model", 5)])
def test_by_that_is_not_column_names_is_an_argument_error(by):
    run, qrels = small()
    for function in (ranking_metrics, ranking_metrics_per_query):
        with pytest.raises(ArgumentError, match="by="):
            function(run, qrels, by=by)
    per_query = ranking_metrics_per_query(run, qrels, by="model")
    with pytest.raises(ArgumentError, match="by="):
        paired_significance(per_query.with_columns(pl.lit("x").alias("m")), by=by)


def test_by_naming_an_input_column_is_a_table_error():
    run, qrels = small()
    with pytest.raises(TableError, match=r"run: group key.*also input columns: item='item'"):
        ranking_metrics(run, qrels, by="item")
