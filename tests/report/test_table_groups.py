"""The report's tables as markup: column groups in order, the toolbar, one id per table,
the less-read columns and the intervals hidden until asked for. The browser test clicks them."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

import calib_frames as cf
from calib_frames.cli import main
from calib_frames.exceptions import ArgumentError
from calib_frames.report import report_html
from calib_frames.report.table_html import COLUMN_GROUPS, REPORT_COLUMNS, table_html

ROOT = Path(__file__).resolve().parents[2]


def test_every_grouped_column_is_a_report_column_once() -> None:
    grouped = [c for _, columns in COLUMN_GROUPS.values() for c in columns]
    assert len(grouped) == len(set(grouped))
    assert set(grouped) <= set(REPORT_COLUMNS)
    assert set(REPORT_COLUMNS) - set(grouped) == {"rank", "tasks", "count"}  # always shown


def test_groups_head_the_columns_they_span() -> None:
    table = pl.DataFrame(
        {
            "model": ["a", "b"],
            "count": [10, 20],
            "brier": [0.2, 0.1],
            "ece": [0.05, 0.02],
            "rmsce": [0.06, 0.03],
            "accuracy": [0.7, 0.8],
        }
    )
    page = table_html(table, keys=["model"], within=[], table_id="t")
    group_row, column_row = re.findall(r"<tr[^>]*>(.*?)</tr>", page.split("</thead>")[0])
    groups = re.findall(r'class="group (g-\w+)" scope="colgroup" colspan="(\d+)"', group_row)
    # accuracy, then calibration (ECE shown, RMSCE a detail), then Brier
    assert groups == [("g-accuracy", "1"), ("g-calibration", "1"), ("g-scores", "1")]
    labels = re.findall(r"<th[^>]*>([^<]*)</th>", column_row)
    assert labels == ["model", "predictions", "accuracy", "ECE", "RMSCE", "Brier"]
    assert '<th class="g-calibration detail"' in column_row
    assert 'id="t"' in page and 'data-table="t"' in page
    # the body cells are hidden by position (RMSCE is the 5th column)
    assert "#t.hide-detail > tbody > tr > td:nth-child(5) { display: none; }" in page
    assert "#t.hide-g-scores > tbody > tr > td:nth-child(6) { display: none; }" in page
    with pytest.raises(ArgumentError, match="table_id"):
        table_html(table, keys=["model"], within=[], table_id='x"><b>')
    assert 'class="comparison sortable hide-ci hide-detail"' in page
    # without intervals, no "intervals" box; with details, an "all columns" one
    assert 'data-toggle="ci"' not in page and 'data-toggle="detail"' in page


def test_leaderboard_and_comparison_are_two_tables() -> None:
    preds = pl.read_parquet(ROOT / "data" / "synthetic_predictions.parquet")
    by = ["model", "task"]
    stats = cf.bin_statistics(preds, by=by)
    table = cf.compare(preds, by=by, replicates=20)
    board = cf.leaderboard(stats, replicates=20)
    page = report_html(table, bin_statistics=stats, leaderboard=board)
    assert page.count('id="leaderboard"') == 1 and page.count('id="comparison"') == 1
    assert page.count('<input type="search" class="filter"') == 2
    assert 'data-toggle="ci"' in page


def test_lm_eval_report_draws_the_perplexity_chart(tmp_path: Path) -> None:
    """lm-eval's rolling task has bits per byte and word perplexity but no per-token
    perplexity: the report drew no perplexity chart."""
    out = tmp_path / "lm"
    assert main(["report", str(ROOT / "data" / "lm_eval"), "--out", str(out), "--quiet"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>Perplexity</h2>" in page
    assert "Word perplexity and bits per byte per group" in page


def test_headers_formats_and_best_follow_the_registry() -> None:
    table = pl.DataFrame(
        {
            "model": ["a", "b", "c"],
            "overconfidence": [0.031, -0.004, 0.012],
            "resolution": [0.010, 0.030, 0.020],
            "perplexity_task_mean": [1234.56789, 12.3456, 2_500_000.0],
        }
    )
    page = table_html(table, keys=["model"], within=[], table_id="t")
    column_row = re.findall(r"<tr[^>]*>(.*?)</tr>", page.split("</thead>")[0])[1]
    labels = re.findall(r"<th[^>]*>([^<]*)</th>", column_row)
    assert labels == ["model", "overconf.", "resolution", "perplexity, task mean"]
    cells = re.findall(r'<td(?: class="(best)")? data-value="[^"]*"[^>]*>([^<]*)</td>', page)
    rows = [cells[i : i + 3] for i in range(0, len(cells), 3)]  # the key cells aside
    # the signed gap with its sign, best closest to zero; resolution: higher is better;
    # a perplexity to three decimals with thousands separators, four digits from 10⁶
    assert rows == [
        [("", "+0.0310"), ("", "0.0100"), ("", "1,234.568")],
        [("best", "-0.0040"), ("best", "0.0300"), ("best", "12.346")],
        [("", "+0.0120"), ("", "0.0200"), ("", "2.5e+06")],
    ]
