"""The range-partitioned route of the ranking metrics against the one-pass route.

A run of more than ``metrics.PARTITION_ROWS`` rows is ranked in ranges of whole queries;
the tests lower the threshold so that small runs take that route, check that it did (the
per-range pass runs more than once) and that every number, count and error is the one of
the single pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from calib_frames.exceptions import DataError
from calib_frames.ranking import metrics, ranking_metrics, ranking_metrics_per_query


def tied_run(ids: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two models, 40 queries, integer scores (many ties); the qrels judge queries 5..49,
    so queries 0..4 of the run are unjudged and 40..49 are missing from every model's run,
    and some judged queries have no relevant item."""
    rng = np.random.default_rng(7)
    n = 2400
    run = pl.DataFrame(
        {
            "model": rng.choice(["a", "b"], n),
            "query": rng.integers(0, 40, n),
            "item": rng.integers(0, 30, n),
            "score": rng.integers(0, 4, n).astype(np.float64),
        }
    ).unique(["model", "query", "item"], keep="first", maintain_order=True)
    qrels = pl.DataFrame(
        {
            "query": rng.integers(5, 50, 500),
            "item": rng.integers(0, 30, 500),
            "relevance": rng.integers(0, 3, 500),
        }
    ).unique(["query", "item"], keep="first", maintain_order=True)
    if ids == "str":
        run, qrels = (
            f.with_columns(pl.format("q{}", "query").alias("query")) for f in (run, qrels)
        )
    return run, qrels


def counting_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the calls of the per-range pass (the real function, wrapped)."""
    calls: list[int] = []
    real = metrics._query_pass

    def counted(*args: Any) -> pl.LazyFrame:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(metrics, "_query_pass", counted)
    return calls


@pytest.mark.parametrize("ids", ["int", "str"])
@pytest.mark.parametrize("ties", ["item_desc", "input", "average"])
@pytest.mark.parametrize("function", [ranking_metrics, ranking_metrics_per_query])
@pytest.mark.parametrize("rows", [1, 150])
def test_ranges_give_the_numbers_of_one_pass(
    monkeypatch: pytest.MonkeyPatch, ids: str, ties: str, function: Callable[..., Any], rows: int
) -> None:
    run, qrels = tied_run(ids)
    options = {"by": "model", "k": (1, 3, 10), "ties": ties, "no_relevant": "zero"}
    one_pass = function(run, qrels, **options)
    calls = counting_passes(monkeypatch)
    monkeypatch.setattr(metrics, "PARTITION_ROWS", rows)
    ranged = function(run.lazy(), qrels.lazy(), **options).collect()
    # one query per range with rows=1; about run.height / 150 ranges otherwise
    assert len(calls) > (40 if rows == 1 else run.height // 150)
    assert_frame_equal(ranged, one_pass, check_exact=False, rel_tol=0, abs_tol=1e-14)


def test_ranges_keep_queries_missing_and_unjudged(monkeypatch: pytest.MonkeyPatch) -> None:
    run, qrels = tied_run("int")
    monkeypatch.setattr(metrics, "PARTITION_ROWS", 100)
    table = ranking_metrics(run, qrels, by="model", missing="zero")
    assert table["queries_unjudged"].to_list() == [5, 5]
    assert table["queries_missing"].to_list() == [10, 10]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda r: pl.concat([r, r.tail(1)]), r"run column 'item': 1 of [\d,]+ rows is repeated"),
        (
            lambda r: r.with_columns(
                query=pl.when(pl.int_range(pl.len()) == 7).then(None).otherwise("query")
            ),
            r"run column 'query/item': 1 of [\d,]+ rows is null",
        ),
        (
            lambda r: r.with_columns(
                score=pl.when(pl.int_range(pl.len()) == 900).then(float("nan")).otherwise("score")
            ),
            r"run column 'score': 1 of [\d,]+ rows is null or NaN",
        ),
    ],
)
def test_ranges_raise_the_errors_of_one_pass(
    monkeypatch: pytest.MonkeyPatch, change: Callable[[pl.DataFrame], pl.DataFrame], match: str
) -> None:
    run, qrels = tied_run("int")
    bad = change(run)
    with pytest.raises(DataError, match=match) as one_pass:
        ranking_metrics(bad, qrels, by="model")
    monkeypatch.setattr(metrics, "PARTITION_ROWS", 100)
    with pytest.raises(DataError, match=match) as ranged:
        ranking_metrics(bad, qrels, by="model")
    assert str(ranged.value) == str(one_pass.value)
