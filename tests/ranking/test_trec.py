"""TREC run/qrels readers: the fixtures read like pytrec_eval's own parsers, malformed
lines raise ReadError naming file and line, lazily."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from calib_frames.exceptions import ReadError
from calib_frames.ranking import ranking_metrics
from calib_frames.ranking.trec import scan_trec_qrels, scan_trec_run

# Test-only reference libraries: a missing one skips this module, it does not break collection.
pytrec_eval = pytest.importorskip("pytrec_eval")

DATA = Path(__file__).resolve().parents[2] / "data" / "ranking"


def test_run_reads_like_pytrec_eval_parser():
    frame = scan_trec_run(DATA / "run_alpha.txt").collect()
    assert frame.schema == pl.Schema(
        {"query": pl.String, "q0": pl.String, "item": pl.String, "rank": pl.Int64,
         "score": pl.Float64, "run": pl.String}
    )  # fmt: skip
    with (DATA / "run_alpha.txt").open() as handle:
        parsed = pytrec_eval.parse_run(handle)
    ours: dict[str, dict[str, float]] = {}
    for q, i, s in frame.select("query", "item", "score").iter_rows():
        ours.setdefault(q, {})[i] = s
    assert ours == parsed
    assert frame["run"].unique().to_list() == ["alpha"]
    assert frame["rank"].to_list()[:3] == [1, 2, 3]


def test_qrels_reads_like_pytrec_eval_parser():
    frame = scan_trec_qrels(DATA / "qrels.txt").collect()
    assert frame.schema == pl.Schema(
        {"query": pl.String, "iteration": pl.String, "item": pl.String, "relevance": pl.Int64}
    )
    with (DATA / "qrels.txt").open() as handle:
        parsed = pytrec_eval.parse_qrel(handle)
    ours: dict[str, dict[str, int]] = {}
    for q, i, r in frame.select("query", "item", "relevance").iter_rows():
        ours.setdefault(q, {})[i] = r
    assert ours == parsed


def test_readers_feed_ranking_metrics_lazily():
    runs = pl.concat([scan_trec_run(DATA / f"run_{t}.txt") for t in ("alpha", "beta")])
    table = ranking_metrics(runs, scan_trec_qrels(DATA / "qrels.txt"), by="run", k=1)
    assert isinstance(table, pl.LazyFrame)
    assert table.collect()["run"].to_list() == ["alpha", "beta"]


def test_blank_lines_and_mixed_whitespace(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("\n  q1\tQ0  d1 1 1e1 tag  \n\n\nq1 Q0 d2 2 -0.5 tag\n")
    frame = scan_trec_run(path).collect()
    assert frame["item"].to_list() == ["d1", "d2"]
    assert frame["score"].to_list() == [10.0, -0.5]


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("q1 Q0 d1 1 0.5 tag\n\nq1 Q0 d2 2 0.4\n", 3, "expected 6 whitespace-separated fields"),
        ("q1 Q0 d1 1 high tag\n", 1, "field 'score' is not a number"),
        ("q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 first 0.4 tag\n", 2, "field 'rank' is not a"),
        ("q1 Q0 d1 1 0.5 tag extra\n", 1, r"expected 6 .*\), found 7"),
    ],
)
def test_malformed_run_lines_name_file_and_line(tmp_path, text, line, why):
    path = tmp_path / "bad_run.txt"
    path.write_text(text)
    lazy = scan_trec_run(path)  # no error until collected
    with pytest.raises(ReadError, match=rf"bad_run\.txt:{line}: malformed TREC run line: {why}"):
        lazy.collect()


def test_malformed_qrels_lines(tmp_path):
    path = tmp_path / "bad_qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 1.5\nq1 0 d3\n")
    with pytest.raises(ReadError, match=r"bad_qrels\.txt:2: .*'relevance'.*2 malformed lines"):
        scan_trec_qrels(path).collect()


def test_missing_file_raises_read_error(tmp_path):
    with pytest.raises(ReadError, match="no such file"):
        scan_trec_run(tmp_path / "nope.txt")
    with pytest.raises(ReadError, match="no such file"):
        scan_trec_qrels(tmp_path)


def test_empty_file_gives_empty_frame(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("")
    assert scan_trec_qrels(path).collect().height == 0
