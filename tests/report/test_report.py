"""The HTML report as a file: header, table (formatting, best marks, intervals), charts,
escaping of names, refusals and atomic writing. The browser test opens it for real."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import calib_frames as cf
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.report import report_html, write_report

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    predictions = pl.read_parquet(ROOT / "data" / "synthetic_predictions.parquet")
    tokens = pl.read_parquet(ROOT / "data" / "synthetic_tokens.parquet")
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    metrics = cf.metrics_from_bin_statistics(stats)
    ppl = cf.perplexity(tokens, by=["model", "task"], tokens="tokens", bytes="bytes")
    return {"stats": stats, "metrics": metrics, "comparison": cf.comparison_table(metrics, ppl)}


def table_rows(page: str) -> list[str]:
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r"<tr>(.*?)</tr>", body)


def cells(row: str) -> list[tuple[str, str, str]]:
    """(class, data-value, text) of each cell."""
    return [
        (css or "", value, text)
        for css, value, text in re.findall(
            r'<td(?: class="([^"]*)")? data-value="([^"]*)"(?: title="[^"]*")?>(.*?)</td>', row
        )
    ]


def headers(page: str) -> list[str]:
    """The column headers (the last header row; the first names the column groups)."""
    head = page.split("<thead>", 1)[1].split("</thead>", 1)[0].rsplit("<tr>", 1)[1]
    return [html.unescape(t) for t in re.findall(r"<th[^>]*>(.*?)</th>", head)]


def test_report_header_table_and_charts(tables: dict[str, pl.DataFrame], tmp_path: Path) -> None:
    path = write_report(
        tmp_path / "report.html",
        comparison=tables["comparison"],
        bin_statistics=tables["stats"],
        inputs={"data/synthetic_predictions.parquet": 24_000, "tokens.parquet": None},
    )
    page = path.read_text(encoding="utf-8")
    assert "data/synthetic_predictions.parquet (24,000 rows); tokens.parquet" in page
    assert "24,000 in 12 groups" in page
    assert "10 fixed-edge bins per group, left-closed" in page
    assert "polars " + pl.__version__ in page
    assert re.search(r"<dt>Generated</dt><dd>\d{4}-\d\d-\d\dT", page)
    rows = table_rows(page)
    assert len(rows) == tables["comparison"].height
    names = headers(page)
    assert names[:2] == ["model", "task"]
    for column in ("accuracy", "ECE", "MCE (guarded)", "Brier", "perplexity", "bits/byte"):
        assert column in names
    # seven charts (heatmap, picked diagram and the five of the groups), each spec a
    # JSON element the page draws
    specs = re.findall(r'<script type="application/json" id="(chart-spec-\d)">', page)
    assert specs == [f"chart-spec-{i}" for i in range(7)]
    for spec_id in specs:
        assert f'data-vega-spec="{spec_id}"' in page


def test_numbers_formatted_and_best_marked_per_task(
    tables: dict[str, pl.DataFrame], tmp_path: Path
) -> None:
    comparison = tables["comparison"]
    page = report_html(comparison=comparison, bin_statistics=tables["stats"])
    names = headers(page)
    ece_at, accuracy_at, count_at = names.index("ECE"), names.index("accuracy"), 2
    rows = [cells(row) for row in table_rows(page)]
    assert rows[0][count_at][2] == "2,000"
    by_task: dict[str, list[tuple[float, bool, float, bool]]] = {}
    for row in rows:
        task = row[1][2]
        ece = row[ece_at]
        accuracy = row[accuracy_at]
        assert re.fullmatch(r"\d\.\d{4}", ece[2])
        by_task.setdefault(task, []).append(
            (
                float(ece[1]),
                "best" in ece[0].split(),
                float(accuracy[1]),
                "best" in accuracy[0].split(),
            )
        )
    assert len(by_task) == 4
    for entries in by_task.values():
        lowest = min(e[0] for e in entries)
        highest = max(e[2] for e in entries)
        assert [e[1] for e in entries] == [e[0] == lowest for e in entries]
        assert [e[3] for e in entries] == [e[2] == highest for e in entries]
    # raw values round-trip for sorting
    expected = sorted(comparison.get_column("ece").to_list())
    assert sorted(float(row[ece_at][1]) for row in rows) == expected


def test_intervals_shown_when_present(tables: dict[str, pl.DataFrame]) -> None:
    comparison = tables["comparison"].with_columns(
        ece_ci_low=pl.col("ece") - 0.01, ece_ci_high=pl.col("ece") + 0.01
    )
    page = report_html(comparison=comparison, bin_statistics=tables["stats"])
    first = comparison.sort("model", "task").row(0, named=True)
    interval = f"[{first['ece_ci_low']:.4f}, {first['ece_ci_high']:.4f}]"
    # on hover (the cell's title); the script writes it into the cell when asked
    assert f' title="95% interval {interval}">{first["ece"]:.4f}</td>' in page
    assert '<span class="ci">' not in page
    assert 'class="comparison sortable hide-ci' in page
    assert "ECE" in headers(page) and "ece ci low" not in " ".join(headers(page))


def test_hostile_names_are_escaped(tables: dict[str, pl.DataFrame]) -> None:
    hostile = {
        "calibrated": "<script>alert(1)</script>",
        "overconfident": '"><img src=x onerror=alert(2)>',
        "underconfident": "</script><script>alert(3)</script>",
    }
    comparison = tables["comparison"].with_columns(pl.col("model").replace(hostile))
    stats = tables["stats"].with_columns(pl.col("model").replace(hostile))
    page = report_html(
        comparison=comparison, bin_statistics=stats, title="<script>alert(4)</script>"
    )
    for name in [*hostile.values(), "<script>alert(4)</script>"]:
        assert name not in page
        assert html.escape(name) in page
    assert "<img" not in page.split("<script>\n", 1)[0]  # before the Vega bundle
    # every embedded spec parses back to the original names
    for spec_text in re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', page):
        assert "<" not in spec_text
        spec = json.loads(spec_text)
        values = json.dumps(spec, ensure_ascii=False)
        assert "</script><script>alert(3)</script>" in values
    # only our own script elements
    assert page.count("<script>") == 3  # the sort code, the Vega bundle, the embed code
    assert page.count('<script type="application/json"') == 7


def test_refuses_wrong_tables(tables: dict[str, pl.DataFrame], tmp_path: Path) -> None:
    comparison, stats = tables["comparison"], tables["stats"]
    with pytest.raises(TableError, match="not a metrics/comparison table"):
        report_html(comparison=stats, bin_statistics=stats)
    with pytest.raises(TableError, match="missing columns"):
        report_html(comparison=comparison, bin_statistics=comparison)
    with pytest.raises(TableError, match="grouped by"):
        report_html(
            comparison=comparison.filter(pl.col("task") == "code").drop("task"),
            bin_statistics=stats,
        )
    with pytest.raises(ArgumentError, match="no rows"):
        report_html(comparison=comparison.clear(), bin_statistics=stats)
    with pytest.raises(ArgumentError, match="DataFrame or LazyFrame"):
        report_html(comparison="table.parquet", bin_statistics=stats)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="best_within"):
        report_html(comparison=comparison, bin_statistics=stats, best_within=["split"])
    with pytest.raises(ArgumentError, match=r"\.html"):
        write_report(tmp_path / "report.pdf", comparison=comparison, bin_statistics=stats)
    with pytest.raises(TableError, match="perplexity"):
        report_html(comparison=comparison, bin_statistics=stats, perplexity=tables["metrics"])


def test_written_atomically(tables: dict[str, pl.DataFrame], tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    write_report(target, comparison=tables["metrics"], bin_statistics=tables["stats"].lazy())
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_one_group_without_keys() -> None:
    predictions = pl.DataFrame({"confidence": [0.9, 0.2, 0.6], "correct": [True, False, True]})
    stats = cf.bin_statistics(predictions)
    page = report_html(comparison=cf.metrics_from_bin_statistics(stats), bin_statistics=stats)
    assert len(table_rows(page)) == 1
    assert "3 in 1 group" in page
    assert "(all rows)" in page


def test_page_style_and_sort_script_are_the_package_data(tables: dict[str, pl.DataFrame]) -> None:
    """report.css and report.js ship in the package (pyproject's package-data) and are
    inlined as they are: the page loads no file."""
    from importlib import resources

    assets = resources.files("calib_frames.report").joinpath("assets")
    css = assets.joinpath("report.css").read_text("utf-8")
    script = assets.joinpath("report.js").read_text("utf-8")
    assert "table.comparison td.best" in css and "aria-sort" in script
    page = report_html(tables["metrics"], bin_statistics=tables["stats"])
    assert f"<style>\n{css}\n</style>" in page
    assert f"<script>\n{script}</script>" in page


def test_report_charts_follow_the_tables(tables: dict[str, pl.DataFrame]) -> None:
    from calib_frames.report import report_charts

    titles = [t for t, _, _ in report_charts(tables["comparison"], bin_statistics=tables["stats"])]
    assert titles == [
        "Calibration gap by model and task",
        "Reliability diagram of one group",
        "Reliability diagrams",
        "Confidence histograms",
        "Accuracy against ECE",
        "Brier decomposition",
        "Perplexity",
    ]
    lazy = report_charts(tables["metrics"].lazy(), bin_statistics=tables["stats"].lazy())
    assert [t for t, _, _ in lazy][-1] == "Brier decomposition"  # no perplexity: no chart


def test_report_shows_risk_coverage_curves_from_a_selective_table(
    tables: dict[str, pl.DataFrame],
) -> None:
    from calib_frames.report import report_charts

    predictions = pl.read_parquet(ROOT / "data" / "synthetic_predictions.parquet")
    curve = cf.selective_curve(predictions, by=["model", "task"], points=50)
    charts = report_charts(tables["metrics"], bin_statistics=tables["stats"], selective=curve)
    title, _, chart = charts[-1]
    assert title == "Risk–coverage curves"
    spec = chart.to_dict()
    assert spec["facet"]["field"] and spec["spec"]["encoding"]["y"]["field"] == "risk"
    # one colour per model, one panel per task
    (values,) = spec["datasets"].values()
    assert {row["model"] for row in values} == set(predictions["model"])
    page = report_html(tables["metrics"], bin_statistics=tables["stats"], selective=curve)
    assert "<h2>Risk–coverage curves</h2>" in page
    assert "Risk–coverage" not in report_html(tables["metrics"], bin_statistics=tables["stats"])


def test_charts_stay_bounded_and_say_what_they_leave_out() -> None:
    import numpy as np

    from calib_frames.report import report_charts

    rng = np.random.default_rng(3)
    n = 40 * 50
    p = rng.uniform(0.3, 1.0, n)
    bias = np.repeat(np.linspace(0.0, 0.3, 40), 50)  # model k is overconfident by bias[k]
    preds = pl.DataFrame(
        {
            "model": np.repeat([f"m{k:02d}" for k in range(40)], 50),
            "task": ["t"] * n,
            "confidence": p,
            "correct": rng.random(n) < np.clip(p - bias, 0, 1),
        }
    )
    stats = cf.bin_statistics(preds, by=["model", "task"])
    table = cf.metrics_from_bin_statistics(stats)
    charts = report_charts(table, bin_statistics=stats, limit=6)
    ranked = table.sort("ece")["model"].to_list()
    expected = {*ranked[:3], *ranked[-3:]}

    def models(chart: Any) -> set[str]:
        return {
            row["model"]
            for data in chart.to_dict()["datasets"].values()
            for row in data
            if row.get("model") is not None
        }

    # the heatmap and the picked diagram hold every model up to HEATMAP_ROW_LIMIT
    views, rest = charts[:2], charts[2:]
    assert [title for title, _, _ in views] == [
        "Calibration gap by model and task",
        "Reliability diagram of one group",
    ]
    for title, note, chart in views:
        assert "left out" not in note, title
        assert models(chart) == set(table["model"]), title
    for title, note, chart in rest:  # one rule: the 3 best and the 3 worst models
        assert "the 3 first and the 3 last of 40 models" in note, title
        assert models(chart) == expected, title
    # beyond it, the 25 models of lowest mean ECE and the 25 of highest
    many = pl.concat(
        [preds, preds.with_columns(pl.col("model").str.replace("m", "n"))]
    )  # 80 models
    wide = cf.metrics_from_bin_statistics(cf.bin_statistics(many, by=["model", "task"]))
    by_ece = wide.sort("ece", "model")["model"].to_list()
    for title, note, chart in report_charts(
        wide, bin_statistics=cf.bin_statistics(many, by=["model", "task"])
    )[:2]:
        assert "30 of 80 models are left out" in note, title
        assert models(chart) == {*by_ece[:25], *by_ece[-25:]}, title
    # within the limit nothing is left out
    few = report_charts(table.head(6), bin_statistics=stats.filter(pl.col("model") < "m06"))
    assert not any("left out" in note for _, note, _ in few)


def test_bounded_charts_rank_only_groups_with_predictions() -> None:
    """A token-only task (null ECE) is neither among the "highest ECE" groups nor lost."""
    from factories import prediction_rows

    from calib_frames.report import report_charts

    models = [f"m{k:02d}" for k in range(12)]
    predictions = prediction_rows(3, 12 * 2 * 100, models=models).with_columns(
        task=pl.when(pl.int_range(pl.len()) % 2 == 0).then(pl.lit("a")).otherwise(pl.lit("b"))
    )
    losses = pl.DataFrame(
        {
            "model": models,
            "task": "wikitext",
            "nll": [30.0 + k for k in range(12)],
            "tokens": [10] * 12,
        }
    )
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    ppl = cf.perplexity(losses, by=["model", "task"], tokens="tokens")
    comparison = cf.comparison_table(cf.metrics_from_bin_statistics(stats), ppl)
    charts = {
        title: (note, chart)
        for title, note, chart in report_charts(comparison, bin_statistics=stats)
    }
    assert "the 2 first and the 2 last of 12 models" in charts["Accuracy against ECE"][0]
    drawn = {
        (row["model"], row["task"])
        for row in next(iter(charts["Accuracy against ECE"][1].to_dict()["datasets"].values()))
    }
    assert len(drawn) == 8 and all(task in ("a", "b") for _, task in drawn)
    # the token-only task still gets its chart, of the same four models
    note, chart = charts["Perplexity"]
    rows = next(iter(chart.to_dict()["datasets"].values()))
    assert {row["model"] for row in rows} == {model for model, _ in drawn}
    assert "the 2 first and the 2 last of 12 models" in note


def test_perplexity_chart_bounds_models_not_groups() -> None:
    """3 models × 4 tasks (12 groups) draw every model; a perplexity table of 12 other
    models (no calibration order for them) keeps 4 whole models by perplexity."""
    from factories import DATA

    from calib_frames.report import report_charts

    predictions = pl.read_parquet(DATA / "synthetic_predictions.parquet")
    tokens = pl.read_parquet(DATA / "synthetic_tokens.parquet")
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    ppl = cf.perplexity(tokens, by=["model", "task"], tokens="tokens", bytes="bytes")
    assert ppl.height > 8
    table = cf.comparison_table(cf.metrics_from_bin_statistics(stats), ppl)
    charts = {t: (n, c) for t, n, c in report_charts(table, bin_statistics=stats)}
    note, chart = charts["Perplexity"]
    assert "left out" not in note
    rows = next(iter(chart.to_dict()["datasets"].values()))
    assert {row["model"] for row in rows} == set(ppl.get_column("model").to_list())

    many = pl.concat([tokens.with_columns(model=pl.col("model") + f"-{k}") for k in range(4)])
    ppl = cf.perplexity(many, by=["model", "task"], tokens="tokens", bytes="bytes")
    charts = {t: (n, c) for t, n, c in report_charts(table, bin_statistics=stats, perplexity=ppl)}
    note, chart = charts["Perplexity"]
    assert "8 of 12 models are left out" in note
    rows = next(iter(chart.to_dict()["datasets"].values()))
    kept = pl.DataFrame(rows).group_by("model").len()
    assert kept.height == 4 and kept.get_column("len").n_unique() == 1  # whole models


def test_rank_intervals_and_the_models_tied_with_the_best_are_shown() -> None:
    """Issue 29.4's display: a leaderboard with a rank, its interval and the mark of the
    models indistinguishable from the best shows them first in the page, in the summary
    and on stdout (the columns another helper adds; their names are the report's)."""
    from calib_frames.report.summary import AMONG_BEST, RANK, summary_lines
    from calib_frames.report.table_html import table_html

    stats = cf.bin_statistics(
        pl.read_parquet(ROOT / "data" / "synthetic_predictions.parquet"), by=["model", "task"]
    )
    tables = cf.comparison.report_tables(stats, model="model", replicates=20)
    assert tables.leaderboard is not None
    board = tables.leaderboard.with_columns(
        pl.Series(RANK, [1, 2, 3], dtype=pl.UInt32),
        pl.Series(f"{RANK}_ci_low", [1, 1, 3], dtype=pl.UInt32),
        pl.Series(f"{RANK}_ci_high", [2, 2, 3], dtype=pl.UInt32),
        pl.Series(AMONG_BEST, [True, True, False]),
    )
    lines = dict(summary_lines(tables.comparison, board))
    assert lines["indistinguishable from the best"] == "underconfident, calibrated"
    assert ", rank 1 (1–2);" in lines["best"] and ", rank 3 (3–3);" in lines["worst"]
    page = table_html(board, keys=["model"], within=[], table_id="leaderboard")
    # the rank first, its interval on hover; the two tied with the best marked
    head = page.split("<tbody>")[0]
    assert head.index(">rank</th>") < head.index(">tasks</th>")
    assert page.count('<tr class="among-best">') == 2
    assert 'data-value="2" title="95% interval [1, 2]">2</td>' in page


def test_every_small_multiple_lists_its_models_best_first() -> None:
    """The legends of the reliability diagrams and the risk–coverage curves run in the
    leaderboard's order (the 2 best, then the 2 worst), not by name."""
    from calib_frames.estimators.selective import selective_curve
    from calib_frames.report import report_charts
    from tests.factories import prediction_rows

    models = [f"m{k:02d}" for k in range(8)]
    predictions = prediction_rows(9, 8 * 300, models=models).with_columns(task=pl.lit("t"))
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    tables = cf.comparison.report_tables(stats, model="model", replicates=20)
    board = tables.leaderboard
    assert board is not None
    order = board.get_column("model").to_list()
    expected = [*order[:2], *order[-2:]]
    curve = selective_curve(predictions, by=["model", "task"], points=20)
    charts = {
        title: chart.to_dict()
        for title, _, chart in report_charts(
            tables.comparison, bin_statistics=stats, selective=curve, leaderboard=board
        )
    }

    def legend(spec: dict[str, Any]) -> list[str]:
        found = [d for d in _color_domains(spec) if set(d) <= set(models) and len(d) == 4]
        assert found, spec.keys()
        return found[0]

    assert legend(charts["Risk–coverage curves"]) == expected
    assert legend(charts["Reliability diagrams"]) == expected


def _color_domains(spec: Any) -> list[list[Any]]:
    """Every list-valued scale domain in the spec, in order."""
    if isinstance(spec, dict):
        found = [spec["domain"]] if isinstance(spec.get("domain"), list) else []
        return found + [d for value in spec.values() for d in _color_domains(value)]
    if isinstance(spec, list):
        return [d for value in spec for d in _color_domains(value)]
    return []


def test_many_models_tied_with_the_best_are_counted_not_listed() -> None:
    """At 2,000 checkpoints of 120 predictions a group, 1,500 models were named on one
    summary line (stdout and the page's first screen)."""
    from calib_frames.report.summary import AMONG_BEST, NAMES_SHOWN, summary_lines

    rng = np.random.default_rng(3)
    models = [f"acme-7b-checkpoint-{step:06d}" for step in range(0, 240_000, 12_000)]
    preds = pl.DataFrame(
        {
            "model": np.repeat(models, 60),
            "task": "t",
            "confidence": rng.uniform(0.5, 1.0, 60 * len(models)),
        }
    ).with_columns(correct=pl.Series(rng.random(60 * len(models))) < pl.col("confidence"))
    tables = cf.comparison.report_tables(
        cf.bin_statistics(preds, by=["model", "task"]), model="model", replicates=20
    )
    assert tables.leaderboard is not None
    tied = tables.leaderboard.filter(AMONG_BEST)["model"].to_list()
    assert len(tied) > NAMES_SHOWN  # equal models of 60 predictions: many are
    line = dict(summary_lines(tables.comparison, tables.leaderboard))[
        "indistinguishable from the best"
    ]
    rest = len(tied) - NAMES_SHOWN
    assert (
        line == f"{len(tied)} models: {', '.join(tied[:NAMES_SHOWN])} and {rest} more (leaderboard)"
    )
