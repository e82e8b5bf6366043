"""The altair layer: chart specs (marks, encodings, data rows, facets), errors, export.

Specs are inspected as Vega-Lite dicts (``chart.to_dict()``); a chart's data are the
rows of its (consolidated) datasets. Rendering checks use vl-convert (offline).
"""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import vl_convert as vlc

import calib_frames as cf
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.plot import (
    brier_decomposition_chart,
    chart_html,
    confidence_histogram,
    ece_bins_chart,
    embed_json,
    isotonic_reliability_chart,
    metric_scatter,
    reliability_diagram,
    save_chart,
    smooth_reliability_chart,
)
from calib_frames.plot._common import field, share_parts

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def predictions() -> pl.DataFrame:
    return pl.read_parquet(ROOT / "data" / "synthetic_predictions.parquet")


@pytest.fixture(scope="module")
def tables(predictions: pl.DataFrame) -> dict[str, pl.DataFrame]:
    tokens = pl.read_parquet(ROOT / "data" / "synthetic_tokens.parquet")
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    metrics = cf.metrics_from_bin_statistics(stats)
    ppl = cf.perplexity(tokens, by=["model", "task"], tokens="tokens", bytes="bytes")
    one = predictions.filter(pl.col("model") == "overconfident", pl.col("task") == "code")
    return {
        "stats": stats,
        "metrics": metrics,
        "ppl": ppl,
        "comparison": cf.comparison_table(metrics, ppl),
        "reliability": cf.reliability_table(predictions, by=["model", "task"]),
        "one": cf.reliability_table(one, by="model"),
        "one_metrics": cf.calibration_metrics(one, by="model"),
        "by_model": cf.reliability_table(predictions, by="model"),
        "by_model_metrics": cf.calibration_metrics(predictions, by="model"),
    }


def datasets(spec: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return list(spec.get("datasets", {}).values())


def units(spec: Any) -> list[dict[str, Any]]:
    """Every unit view (a dict with a mark) in a spec, depth first."""
    found: list[dict[str, Any]] = []
    if isinstance(spec, dict):
        if "mark" in spec:
            found.append(spec)
        for value in spec.values():
            found += units(value)
    elif isinstance(spec, list):
        for value in spec:
            found += units(value)
    return found


def mark_types(spec: Any) -> list[str]:
    return [u["mark"] if isinstance(u["mark"], str) else u["mark"]["type"] for u in units(spec)]


def compiles(spec: dict[str, Any]) -> dict[str, Any]:
    """Vega-Lite → Vega with vl-convert (raises on an invalid spec)."""
    return json.loads(json.dumps(vlc.vegalite_to_vega(spec)))


def svg_of(chart: Any) -> str:
    return str(vlc.vegalite_to_svg(chart.to_dict()))


def populated(table: pl.DataFrame) -> pl.DataFrame:
    return table.filter(pl.col("count") > 0)


# --- reliability diagram ------------------------------------------------------------


def test_one_model_diagram_marks_and_rows(tables: dict[str, pl.DataFrame]) -> None:
    table, metrics = tables["one"], tables["one_metrics"]
    chart = reliability_diagram(table, metrics=metrics)
    spec = chart.to_dict()
    diagram, histogram = spec["vconcat"]
    # line, diagonal, faint gaps of small bins, gaps
    assert mark_types(diagram) == ["line", "rule", "rule", "rule"]
    assert mark_types(histogram) == ["bar"]
    rows_diagram, rows_hist = datasets(spec)
    assert len(rows_diagram) == populated(table).height < table.height
    assert all(row["count"] > 0 for row in rows_diagram)
    assert len(rows_hist) == table.height
    # the group's metrics are read from the table, in the subtitle and the tooltips
    ece = metrics.item(0, "ece")
    assert f"ECE {ece:.3f}" in spec["title"]["subtitle"][0]
    assert {row["ece"] for row in rows_diagram} == {ece}
    line = units(diagram)[0]
    assert line["encoding"]["x"]["field"] == "mean_confidence"
    assert line["encoding"]["y"]["field"] == "accuracy"
    tooltip_fields = [t["field"] for t in line["encoding"]["tooltip"]]
    for name in ("_bin_range", "count", "accuracy", "mean_confidence", "_gap", "ece", "mce"):
        assert name in tooltip_fields
    compiles(spec)


def test_shared_parts_keep_the_spec_and_are_not_copied() -> None:
    """Composed from shared parts, a chart's spec is what altair's own copies give."""
    import altair as alt

    def parts() -> list[alt.Chart]:
        tips = [alt.Tooltip("a:Q", title="a"), alt.Tooltip("b:N")]
        return [
            alt.Chart().mark_point().encode(x=alt.X("a:Q"), y="b:N", tooltip=tips),
            alt.Chart().mark_rule().encode(x=alt.XDatum(0), opacity=alt.OpacityValue(0.3)),
        ]

    data = alt.InlineData(values=[{"a": 1, "b": "x"}])
    plain = alt.vconcat(alt.layer(*parts(), data=data), alt.layer(*parts(), data=data))
    shared = share_parts(*parts())
    composed = alt.vconcat(alt.layer(*shared, data=data), alt.layer(*parts(), data=data))
    assert composed.to_dict() == plain.to_dict()
    encoding = shared[0].encoding
    assert composed.vconcat[0].layer[0].encoding is encoding  # kept by reference
    assert composed.vconcat[1].layer[0].encoding is not encoding  # unshared parts are copied
    assert shared[0].encode(y="a:Q").encoding is not encoding  # encode makes a new one
    assert encoding.y.to_dict() == {"field": "b", "type": "nominal"}  # and leaves it


def test_gap_direction_follows_the_diagonal(tables: dict[str, pl.DataFrame]) -> None:
    spec = reliability_diagram(tables["reliability"]).to_dict()
    rows = datasets(spec)[0]
    for row in rows:
        gap = row["accuracy"] - row["mean_confidence"]
        assert row["_gap"] == pytest.approx(gap)
        if gap < 0:
            assert row["_direction"] == "overconfident"
        elif gap > 0:
            assert row["_direction"] == "underconfident"
    gaps = [u for u in units(spec) if u["encoding"].get("stroke", {}).get("field") == "_direction"]
    assert len(gaps) == 2  # the faint ones of small bins, then the others
    for gap_rules in gaps:
        assert gap_rules["encoding"]["y2"]["field"] == "mean_confidence"
        domain = gap_rules["encoding"]["stroke"]["scale"]["domain"]
        assert domain == ["overconfident", "underconfident"]


@pytest.mark.parametrize("empty", ["zero", "null"])
def test_empty_bins_have_no_rows(tables: dict[str, pl.DataFrame], empty: str) -> None:
    table = tables["one"]
    if empty == "null":  # main's coming convention: null means in empty bins
        means = pl.when(pl.col("count") > 0)
        table = table.with_columns(
            means.then(pl.col("mean_confidence")).alias("mean_confidence"),
            means.then(pl.col("accuracy")).alias("accuracy"),
        )
        assert table.get_column("accuracy").null_count() > 0
    rows = datasets(reliability_diagram(table).to_dict())[0]
    assert len(rows) == populated(table).height
    assert not any(row["mean_confidence"] == 0 and row["accuracy"] == 0 for row in rows)


def test_lazy_input_and_bin_statistics_table(tables: dict[str, pl.DataFrame]) -> None:
    eager = reliability_diagram(tables["stats"], metrics=tables["metrics"], facet="task").to_dict()
    lazy = reliability_diagram(
        tables["stats"].lazy(), metrics=tables["metrics"].lazy(), facet="task"
    ).to_dict()
    assert datasets(eager) == datasets(lazy)


def test_many_models_in_one_panel_have_a_legend_highlight(
    tables: dict[str, pl.DataFrame],
) -> None:
    chart = reliability_diagram(tables["by_model"], metrics=tables["by_model_metrics"])
    spec = chart.to_dict()
    params = spec["params"]
    assert [p["bind"] for p in params] == ["legend"]
    assert params[0]["select"]["fields"] == ["_color"]
    line = next(u for u in units(spec) if u["mark"]["type"] == "line")
    assert line["encoding"]["color"]["scale"]["domain"] == [
        "calibrated",
        "overconfident",
        "underconfident",
    ]
    assert line["encoding"]["opacity"]["condition"][0]["param"] == "highlight"
    # the metrics table beside the diagram: one row per model, values from the table
    summary = next(rows for rows in datasets(spec) if len(rows) == 3)
    expected = dict(tables["by_model_metrics"].select("model", "ece").iter_rows())
    assert {row["_color"]: row["ece"] for row in summary} == expected
    compiles(spec)


def test_small_multiples_by_task(tables: dict[str, pl.DataFrame]) -> None:
    spec = reliability_diagram(
        tables["reliability"], metrics=tables["metrics"], facet="task"
    ).to_dict()
    [rows] = datasets(spec)  # one dataset for every panel row, split by _part
    parts = {row["_part"] for row in rows}
    assert parts == {"diagram", "histogram", "metrics"}
    diagram_rows = [row for row in rows if row["_part"] == "diagram"]
    assert len(diagram_rows) == populated(tables["reliability"]).height
    metric_rows = [row for row in rows if row["_part"] == "metrics"]
    assert len(metric_rows) == tables["metrics"].height
    [panel_row] = spec["vconcat"]  # 4 tasks fit in one row of 4 panels
    facets = panel_row["vconcat"]
    assert [f["facet"]["column"]["sort"] for f in facets] == [
        ["arithmetic", "code", "reading", "trivia"]
    ] * 3
    compiles(spec)


def test_grid_by_model_and_task_wraps_by_task(tables: dict[str, pl.DataFrame]) -> None:
    spec = reliability_diagram(
        tables["reliability"], metrics=tables["metrics"], facet=["model", "task"]
    ).to_dict()
    assert len(spec["vconcat"]) == 3  # one row of panels per model, 4 tasks each
    first = spec["vconcat"][0]["vconcat"][0]["facet"]["column"]["sort"]
    assert first == [f"calibrated · {task}" for task in ("arithmetic", "code", "reading", "trivia")]
    assert "params" not in json.dumps(spec["vconcat"][0]["vconcat"][1])  # one definition


@pytest.mark.slow
def test_twenty_models_by_ten_tasks_builds_and_renders() -> None:
    models = [f"m{i:02d}" for i in range(20)]
    tasks = [f"t{j}" for j in range(10)]
    rows = pl.DataFrame({"model": models}).join(pl.DataFrame({"task": tasks}), how="cross")
    bins = pl.DataFrame({"bin": list(range(10))}, schema={"bin": pl.UInt32})
    table = rows.join(bins, how="cross").with_columns(
        bin_lower=pl.col("bin") / 10,
        bin_upper=(pl.col("bin") + 1) / 10,
        count=pl.lit(5, dtype=pl.UInt64),
        mean_confidence=(pl.col("bin") + 0.5) / 10,
        accuracy=((pl.col("bin") + 0.5) / 10) ** 1.3,
    )
    metrics = rows.with_columns(
        count=pl.lit(50, dtype=pl.UInt64), ece=pl.lit(0.05), mce=pl.lit(0.1), brier=pl.lit(0.2)
    )
    one_panel = reliability_diagram(table.filter(pl.col("task") == "t0"), facet="task")
    spec = one_panel.to_dict()
    line = next(u for u in units(spec) if u["mark"]["type"] == "line")
    assert len(line["encoding"]["color"]["scale"]["domain"]) == 20
    assert line["encoding"]["color"]["scale"]["scheme"] == "tableau20"
    grid = reliability_diagram(table, metrics=metrics, facet=["model", "task"]).to_dict()
    assert len(grid["vconcat"]) == 20
    assert all(len(row["vconcat"][0]["facet"]["column"]["sort"]) == 10 for row in grid["vconcat"])
    assert len(datasets(grid)[0]) == 200 * 10 * 2 + 200
    compiles(grid)


def test_intervals_drawn_only_when_present(tables: dict[str, pl.DataFrame]) -> None:
    table = tables["one"]
    without = reliability_diagram(table).to_dict()
    assert "errorbar" not in mark_types(without)
    with_ci = table.with_columns(
        accuracy_ci_low=pl.col("accuracy") - 0.05, accuracy_ci_high=pl.col("accuracy") + 0.05
    )
    spec = reliability_diagram(with_ci).to_dict()
    bar = next(u for u in units(spec) if u["mark"]["type"] == "errorbar")
    assert bar["encoding"]["y"]["field"] == "accuracy_ci_low"
    assert bar["encoding"]["y2"]["field"] == "accuracy_ci_high"
    assert "accuracy_ci_high" in datasets(spec)[0][0]
    compiles(spec)


def test_histogram_false_returns_a_layer_the_caller_can_facet(
    tables: dict[str, pl.DataFrame],
) -> None:
    layer = reliability_diagram(tables["reliability"], histogram=False, color="model")
    assert type(layer).__name__ == "LayerChart"
    faceted = layer.facet(column="task:N")
    compiles(faceted.to_dict())
    composed = (layer | confidence_histogram(tables["stats"])).properties(title="composed")
    compiles(composed.to_dict())


def test_reliability_diagram_errors(tables: dict[str, pl.DataFrame]) -> None:
    table = tables["reliability"]
    with pytest.raises(ArgumentError, match="DataFrame or LazyFrame"):
        reliability_diagram({"bin": [0]})  # type: ignore[arg-type]
    with pytest.raises(TableError, match=r"missing columns \['accuracy'\]"):
        reliability_diagram(table.drop("accuracy"))
    with pytest.raises(TableError, match="must be numeric"):
        reliability_diagram(table.with_columns(pl.col("accuracy").cast(pl.String)))
    with pytest.raises(TableError, match="grouped by"):
        reliability_diagram(table, metrics=tables["by_model_metrics"])
    with pytest.raises(TableError, match="missing columns"):
        reliability_diagram(table, metrics=tables["metrics"].drop("mce"))
    with pytest.raises(ArgumentError, match="not group keys"):
        reliability_diagram(table, facet="tusk")
    with pytest.raises(ArgumentError, match="both color= and facet="):
        reliability_diagram(table, facet="task", color="task")
    with pytest.raises(ArgumentError, match="columns="):
        reliability_diagram(table, facet="task", columns=0)
    with pytest.raises(ArgumentError, match="width="):
        reliability_diagram(table, width=-3)


def test_empty_table_gives_an_empty_chart(tables: dict[str, pl.DataFrame]) -> None:
    spec = reliability_diagram(tables["one"].clear()).to_dict()
    assert [len(rows) for rows in datasets(spec)] in ([], [0], [0, 0])
    compiles(spec)


def test_key_names_with_dots_and_hostile_values_render() -> None:
    table = pl.DataFrame(
        {
            "model.name": ["</script><b>x</b>", "a[0]"],
            "bin": pl.Series([0, 0], dtype=pl.UInt32),
            "bin_lower": [0.0, 0.0],
            "bin_upper": [1.0, 1.0],
            "count": pl.Series([3, 4], dtype=pl.UInt64),
            "mean_confidence": [0.7, 0.6],
            "accuracy": [0.5, 0.75],
        }
    )
    chart = reliability_diagram(table)
    svg = svg_of(chart)
    assert "&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" in svg
    assert field("model.name") == "model\\.name"
    page = chart_html(chart)
    assert "</script><b>" not in page
    assert "\\u003c/script\\u003e\\u003cb\\u003ex" in page


# --- other charts ----------------------------------------------------------------


def test_confidence_histogram(tables: dict[str, pl.DataFrame]) -> None:
    stats = tables["stats"]
    spec = confidence_histogram(stats).to_dict()
    assert spec["facet"]["field"] == "_panel"
    assert spec["spec"]["mark"]["type"] == "bar"
    rows = datasets(spec)[0]
    assert len(rows) == stats.height
    assert sum(row["count"] for row in rows) == stats.get_column("count").sum()
    shares = confidence_histogram(stats, color="model", facet="task", share=True).to_dict()
    rows = datasets(shares)[0]
    by_group: dict[tuple[str, str], float] = {}
    for row in rows:
        key = (row["model"], row["task"])
        by_group[key] = by_group.get(key, 0.0) + row["_share"]
    assert all(math.isclose(total, 1.0) for total in by_group.values())
    assert shares["spec"]["encoding"]["y"]["field"] == "_share"
    compiles(shares)


def test_metric_scatter_reads_the_table(tables: dict[str, pl.DataFrame]) -> None:
    comparison = tables["comparison"]
    spec = metric_scatter(comparison).to_dict()
    assert spec["facet"]["field"] == "_panel"
    assert mark_types(spec) == ["point", "text", "text"]
    rows = datasets(spec)[0]
    assert len(rows) == comparison.height
    expected = {(m, t): e for m, t, e in comparison.select("model", "task", "ece").iter_rows()}
    assert {(r["model"], r["task"]): r["ece"] for r in rows} == expected
    brier = metric_scatter(comparison, x="brier", facet=[]).to_dict()
    assert brier["layer"][0]["encoding"]["x"]["field"] == "brier"
    compiles(brier)


def test_metric_scatter_noise_floor_and_intervals(tables: dict[str, pl.DataFrame]) -> None:
    table = tables["metrics"].with_columns(
        ece_noise_floor=pl.col("ece") / 3,
        ece_ci_low=pl.col("ece") * 0.8,
        ece_ci_high=pl.col("ece") * 1.2,
    )
    spec = metric_scatter(table).to_dict()
    assert mark_types(spec) == ["rule", "tick", "rule", "point", "text", "text"]
    tick = units(spec)[1]
    assert tick["encoding"]["x"]["field"] == "ece_noise_floor"
    ci = units(spec)[2]
    assert (ci["encoding"]["x"]["field"], ci["encoding"]["x2"]["field"]) == (
        "ece_ci_low",
        "ece_ci_high",
    )
    assert "noise floor" in spec["title"]["subtitle"]
    compiles(spec)
    with pytest.raises(TableError, match="missing columns"):
        metric_scatter(table, x="ece_debiased_typo")
    with pytest.raises(ArgumentError, match="not a group key"):
        metric_scatter(table, label="nope")


def test_brier_decomposition_sides(tables: dict[str, pl.DataFrame]) -> None:
    metrics = tables["metrics"]
    spec = brier_decomposition_chart(metrics).to_dict()
    rows = datasets(spec)[0]
    assert len(rows) == 2 * metrics.height
    reference = {
        (m, t): (r, s)
        for m, t, r, s in metrics.select("model", "task", "reliability", "resolution").iter_rows()
    }
    for row in rows:
        reliability, resolution = reference[(row["model"], row["task"])]
        if row["_term"].startswith("reliability"):
            assert row["_signed"] == reliability >= 0
        else:
            assert row["_signed"] == -resolution <= 0
    assert spec["spec"]["mark"]["type"] == "bar"
    with pytest.raises(TableError, match="resolution"):
        brier_decomposition_chart(metrics.drop("resolution"))


def test_smooth_curve_chart() -> None:
    curve = pl.DataFrame(
        {"model": ["a"] * 5 + ["b"] * 5, "x": [0.1, 0.3, 0.5, 0.7, 0.9] * 2, "y": [0.2] * 10}
    )
    spec = smooth_reliability_chart(curve).to_dict()
    assert mark_types(spec) == ["rule", "line"]
    assert len(datasets(spec)[0]) == 10
    assert spec["layer"][1]["encoding"]["order"]["field"] == "x"
    faceted = smooth_reliability_chart(curve, facet="model").to_dict()
    assert faceted["facet"]["field"] == "_panel"
    compiles(faceted)
    with pytest.raises(TableError, match=r"missing columns \['y'\]"):
        smooth_reliability_chart(curve.drop("y"))


def test_isotonic_step_curve() -> None:
    blocks = pl.DataFrame(
        {
            "model": ["a", "a", "a", "b", "b"],
            "block": [0, 1, 2, 0, 1],
            "confidence_lower": [0.0, 0.4, 0.7, 0.1, 0.5],
            "confidence_upper": [0.35, 0.65, 1.0, 0.45, 0.9],
            "count": [10, 30, 60, 40, 60],
            "recalibrated": [0.2, 0.5, 0.8, 0.3, 0.7],
        }
    )
    spec = isotonic_reliability_chart(blocks).to_dict()
    line = next(u for u in units(spec) if u["mark"]["type"] == "line")
    assert line["mark"]["interpolate"] == "step-after"
    steps = next(rows for rows in datasets(spec) if "_x" in rows[0])
    a = [(row["_x"], row["recalibrated"]) for row in steps if row["model"] == "a"]
    assert a == [(0.0, 0.2), (0.4, 0.5), (0.7, 0.8), (1.0, 0.8)]  # left ends + last right end
    compiles(spec)
    faceted = isotonic_reliability_chart(blocks, facet="model").to_dict()
    assert len(faceted["concat"]) == 2
    compiles(faceted)
    with pytest.raises(TableError, match="recalibrated"):
        isotonic_reliability_chart(blocks.drop("recalibrated"))


def test_ece_bins_chart() -> None:
    table = pl.DataFrame(
        {"task": ["x"] * 3 + ["y"] * 3, "bins": [5, 10, 200] * 2, "ece": [0.01, 0.02, 0.05] * 2}
    )
    spec = ece_bins_chart(table).to_dict()
    assert spec["mark"]["type"] == "line"
    assert spec["encoding"]["x"]["scale"]["type"] == "log"  # 5 … 200 spans > 20x
    assert len(datasets(spec)[0]) == 6
    compiles(spec)
    with pytest.raises(TableError, match="ece"):
        ece_bins_chart(table.drop("ece"))


# --- export -------------------------------------------------------------------------


def test_embed_json_escapes_script_breakers() -> None:
    value = {"m": "</script><script>alert(3)</script>", "a": "x & y > z", "s": "\u2028"}
    text = embed_json(value)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == value
    with pytest.raises(ArgumentError, match="JSON"):
        embed_json({"x": float("nan")})


def test_save_png_svg_html_offline(tables: dict[str, pl.DataFrame], tmp_path: Path) -> None:
    chart = reliability_diagram(tables["by_model"], metrics=tables["by_model_metrics"])
    png = save_chart(chart, tmp_path / "diagram.png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 600 and height > 400
    svg = save_chart(chart, tmp_path / "diagram.svg").read_text()
    assert svg.startswith("<svg") and "overconfident" in svg
    page = save_chart(chart, tmp_path / "diagram.html").read_text()
    assert "vegaEmbed" in page and 'type="application/json"' in page
    assert "Content-Security-Policy" in page
    before_bundle = page.split("<script>\n", 1)[0]
    assert "http://" not in before_bundle and "https://" not in before_bundle
    assert "<script src" not in page and "<link" not in page
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "diagram.html",
        "diagram.png",
        "diagram.svg",
    ]  # no temporary file left behind
    assert (tmp_path / "diagram.png").stat().st_mode & 0o044  # readable like a normal file
    with pytest.raises(ArgumentError, match="pdf"):
        save_chart(chart, tmp_path / "diagram.pdf")
    with pytest.raises(ArgumentError, match="does not exist"):
        save_chart(chart, tmp_path / "missing" / "diagram.svg")


def test_import_calib_frames_does_not_import_altair() -> None:
    code = (
        "import sys, calib_frames, calib_frames.plot, calib_frames.report;"
        "print(sorted(m for m in ('altair', 'vl_convert') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == "[]"


def test_small_bins_are_drawn_faint_not_as_the_tallest_gap() -> None:
    # 200 calibrated predictions at 0.75 and 2 wrong ones at 0.95: a 0.95 gap in a bin of 2
    rows = pl.DataFrame(
        {
            "confidence": [0.75] * 200 + [0.95] * 2,
            "correct": [True] * 150 + [False] * 50 + [False] * 2,
        }
    )
    stats = cf.bin_statistics(rows)
    metrics = cf.metrics_from_bin_statistics(stats)
    assert metrics["mce_guarded"].item() == pytest.approx(0.0, abs=1e-12)  # 2-prediction bin out
    assert metrics["mce"].item() == pytest.approx(0.95, abs=1e-12)
    spec = reliability_diagram(stats, metrics=metrics).to_dict()
    text = json.dumps(spec)
    assert '"datum._gap != 0 && datum.count < 10"' in text  # the faint layer
    assert '"datum._gap != 0 && !(datum.count < 10)"' in text  # the full-strength gaps
