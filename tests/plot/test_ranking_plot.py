"""The metric@k chart: data drawn from the ranking table, offline export, bad input, old home."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.plot import metric_at_k_chart, save_chart
from calib_frames.ranking import ranking_metrics
from calib_frames.ranking.trec import scan_trec_qrels, scan_trec_run

DATA = Path(__file__).resolve().parents[2] / "data" / "ranking"


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    runs = pl.concat([scan_trec_run(DATA / f"run_{t}.txt") for t in ("alpha", "beta")])
    qrels = scan_trec_qrels(DATA / "qrels.txt")
    return ranking_metrics(runs, qrels, by="run", k=(1, 3, 5)).collect()


def test_chart_points_are_the_table_values(table):
    chart = metric_at_k_chart(table, metrics=["ndcg", "recall"])
    data = chart.data
    assert data.height == 2 * 2 * 3  # groups x metrics x cut-offs
    for row in data.iter_rows(named=True):
        run = row["group"].removeprefix("run=")
        expected = table.filter(pl.col("run") == run)[f"{row['metric']}@{row['k']}"].item()
        assert row["value"] == expected
    spec = chart.to_dict()
    assert spec["facet"]["column"]["field"] == "metric"
    assert spec["spec"]["encoding"]["x"]["field"] == "k"


def test_chart_without_keys_and_lazy_table(table):
    one = table.filter(pl.col("run") == "alpha").drop("run")
    chart = metric_at_k_chart(one.lazy(), metrics="hit")
    assert set(chart.data["group"]) == {"all"}


def test_chart_saves_offline(table, tmp_path):
    path = save_chart(metric_at_k_chart(table), tmp_path / "ranking.svg")
    assert path.read_text().lstrip().startswith("<svg")


def test_bad_input(table):
    with pytest.raises(ArgumentError, match="metrics="):
        metric_at_k_chart(table, metrics="auc")
    with pytest.raises(ArgumentError, match="width="):
        metric_at_k_chart(table, width=0)
    with pytest.raises(ArgumentError, match="no @k columns"):
        metric_at_k_chart(table.select(pl.exclude("^ndcg@.*$")), metrics="ndcg")
    with pytest.raises(TableError, match="not a ranking-metrics table"):
        metric_at_k_chart(pl.DataFrame({"x": [1]}))
