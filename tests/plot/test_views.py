"""Charts that hold up at many groups: the model × task heatmap and the scatter's labels.

Data: the shipped predictions (3 models × 4 tasks) and random predictions of many models
(``prediction_rows``), through the same comparison table as the report.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import polars as pl
import pytest
import vl_convert as vlc
from factories import DATA, prediction_rows

import calib_frames as cf
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.plot import calibration_heatmap, metric_scatter, reliability_diagram
from calib_frames.plot.frames import label_heights
from calib_frames.plot.groups import LABEL_LIMIT, PALETTE_LIMIT


def rows_of(spec: dict[str, Any]) -> list[dict[str, Any]]:
    (rows,) = spec["datasets"].values()
    return list(rows)


def layers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec["spec"]["layer"] if "spec" in spec else spec["layer"])


@pytest.fixture(scope="module")
def shipped() -> pl.DataFrame:
    predictions = pl.read_parquet(DATA / "synthetic_predictions.parquet")
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    return cf.comparison_from_bin_statistics(stats, replicates=50)


@pytest.fixture(scope="module")
def many() -> pl.DataFrame:
    """30 models × 2 tasks, two of the cells with 3 predictions."""
    models = [f"checkpoint-{i:02d}-of-a-long-training-run" for i in range(30)]
    predictions = prediction_rows(1, 18_000, models=models).with_columns(
        task=pl.when(pl.int_range(pl.len()) % 2 == 0).then(pl.lit("a")).otherwise(pl.lit("b"))
    )
    few = prediction_rows(2, 3, models=["checkpoint-00-of-a-long-training-run"])
    predictions = pl.concat(
        [
            predictions.filter(
                ~(
                    (pl.col("model") == "checkpoint-00-of-a-long-training-run")
                    & (pl.col("task") == "b")
                )
            ),
            few.with_columns(task=pl.lit("b")),
        ]
    )
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    return cf.comparison_from_bin_statistics(stats, replicates=20)


def test_heatmap_cells_are_the_table(shipped: pl.DataFrame) -> None:
    spec = calibration_heatmap(shipped).to_dict()
    rows = rows_of(spec)
    assert len(rows) == shipped.height
    gaps = {(m, t): g for m, t, g in shipped.select("model", "task", "overconfidence").iter_rows()}
    assert {(r["model"], r["task"]): r["overconfidence"] for r in rows} == gaps
    found = {(r["model"], r["task"]): r["_status"] for r in rows}
    for model, task, beyond in shipped.select("model", "task", "ece_beyond_noise").iter_rows():
        assert found[(model, task)] == ("beyond noise" if beyond else "within noise")
    cells, dots = layers(spec)
    scale = cells["encoding"]["color"]["scale"]
    assert scale["domain"][0] == -scale["domain"][1] and scale["domainMid"] == 0
    # the dots are the cells beyond noise: a filter on the status
    assert dots["transform"] == [{"filter": {"field": "_status", "equal": "beyond noise"}}]
    vlc.vegalite_to_vega(spec)
    ece = calibration_heatmap(shipped, value="ece").to_dict()
    assert layers(ece)[0]["encoding"]["color"]["field"] == "ece"
    assert layers(ece)[0]["encoding"]["color"]["scale"]["domain"][0] == 0


def test_heatmap_faint_cells_and_scale(many: pl.DataFrame) -> None:
    spec = calibration_heatmap(many).to_dict()
    rows = rows_of(spec)
    few = [r for r in rows if r["_status"] == "too few predictions"]
    assert [(r["model"], r["task"], r["count"]) for r in few] == [
        ("checkpoint-00-of-a-long-training-run", "b", 3.0)
    ]
    # the colour scale is not stretched by the 3-prediction cell
    enough = [abs(r["overconfidence"]) for r in rows if r["_status"] != "too few predictions"]
    top = layers(spec)[0]["encoding"]["color"]["scale"]["domain"][1]
    assert top <= max(enough)
    assert spec["height"] == 30 * spec["width"] / 2  # square cells, 30 rows, 2 columns


def test_heatmap_fits_fifty_by_sixty() -> None:
    grid = pl.DataFrame(
        {
            "model": [f"m{i}" for i in range(50) for _ in range(60)],
            "task": [f"t{j}" for _ in range(50) for j in range(60)],
            "count": 100,
            "overconfidence": 0.01,
            "ece": 0.02,
        }
    )
    spec = calibration_heatmap(grid).to_dict()
    assert spec["width"] == 900 and spec["height"] == 750  # 15-pixel cells
    assert len(rows_of(spec)) == 3000
    # 50 models on one task: the rows fit 900 pixels down
    column = calibration_heatmap(grid.filter(pl.col("task") == "t0")).to_dict()
    assert (column["width"], column["height"]) == (18, 900)


def test_heatmap_refuses() -> None:
    table = pl.DataFrame({"model": ["a"], "count": [3], "ece": [0.1], "overconfidence": [0.1]})
    with pytest.raises(ArgumentError, match="value= takes 'overconfidence' or 'ece'"):
        calibration_heatmap(table, value="mce")
    with pytest.raises(ArgumentError, match="not a group key"):
        calibration_heatmap(table, label="task")
    with pytest.raises(TableError, match="no group key"):
        calibration_heatmap(table.drop("model"))
    with pytest.raises(TableError, match="missing columns"):
        calibration_heatmap(table.drop("overconfidence"))


def test_heatmap_leaves_out_groups_without_predictions(shipped: pl.DataFrame) -> None:
    tokens = pl.read_parquet(DATA / "synthetic_tokens.parquet").with_columns(
        task=pl.lit("wikitext")
    )
    ppl = cf.perplexity(tokens, by=["model", "task"], tokens="tokens", bytes="bytes")
    table = cf.comparison_table(
        cf.metrics_from_bin_statistics(
            cf.bin_statistics(
                pl.read_parquet(DATA / "synthetic_predictions.parquet"), by=["model", "task"]
            )
        ),
        ppl,
    )
    assert "wikitext" in table.get_column("task").to_list()
    cells = rows_of(calibration_heatmap(table).to_dict())
    assert len(cells) == shipped.height  # the token-only task has no cell
    with pytest.raises(TableError, match="no group of the table has predictions"):
        calibration_heatmap(table.filter(pl.col("task") == "wikitext"))


def test_scatter_past_the_palette(many: pl.DataFrame) -> None:
    assert many.get_column("model").n_unique() > PALETTE_LIMIT > LABEL_LIMIT
    spec = metric_scatter(many).to_dict()
    point, *texts = [layer for layer in layers(spec) if layer["mark"]["type"] in ("point", "text")]
    # grey points, the picked one dark; the pick comes from a click or the dropdown
    assert point["encoding"]["color"]["value"] == "#9e9e9e"
    (param,) = [p for p in spec.get("params", []) if p["name"] == "highlight_points"]
    assert param["bind"]["input"] == "select"
    assert len(param["bind"]["options"]) == 31  # every model and "none"
    rows = rows_of(spec)
    for panel in ("a", "b"):
        in_panel = [r for r in rows if r["_panel"] == panel]
        labelled = sorted(r["ece"] for r in in_panel if r["_extreme"])
        assert labelled == [min(r["ece"] for r in in_panel), max(r["ece"] for r in in_panel)]
    # label text is dark, never the point's (palette) colour
    assert all(t["mark"]["color"] == "#333333" for t in texts)
    middle = max(r["ece"] for r in rows) / 2
    assert all((r["_side"] == "right") == (r["ece"] > middle) for r in rows)
    vlc.vegalite_to_vega(spec)


def test_scatter_labels_one_line_apart(shipped: pl.DataFrame) -> None:
    spec = metric_scatter(shipped, height=220).to_dict()
    rows = rows_of(spec)
    low, high = layers(spec)[-1]["encoding"]["y"]["scale"]["domain"]
    gap = 12 * (high - low) / 220
    for panel in {r["_panel"] for r in rows}:
        for side in ("left", "right"):
            heights = sorted(
                r["_label_y"] for r in rows if (r["_panel"], r["_side"]) == (panel, side)
            )
            assert all(b - a >= gap - 1e-12 for a, b in itertools.pairwise(heights))
    # few groups: every point labelled, in the legend's colours
    assert {r["model"] for r in rows} == set(shipped.get_column("model"))
    assert json.dumps(spec).count('"bind": "legend"') == 1


@pytest.mark.parametrize("seed", range(5))
def test_label_heights_spacing_and_order(seed: int) -> None:
    heights = prediction_rows(seed, 12, low=0.0, high=1.0).select(
        panel=pl.lit("p"), y=pl.col("confidence")
    )
    out = label_heights(heights, "y", by=["panel"], labelled=pl.lit(True), gap=0.1, floor=0.0)
    placed = out.get_column("_label_y").to_list()
    # order kept, a gap apart, never under the floor, and a label moves only when crowded
    assert all(a - b >= 0.1 - 1e-12 for a, b in itertools.pairwise(placed))
    assert min(placed) >= 0.0


def test_label_heights_move_only_crowded_labels() -> None:
    table = pl.DataFrame({"p": "x", "y": [0.1, 0.48, 0.9, 0.5, 0.02, 0.01]})
    out = label_heights(table, "y", by=["p"], labelled=pl.col("y") > 0.015, gap=0.05, floor=0.0)
    # sorted by falling y; 0.48 moves under 0.5; 0.02 stays (0.1 is far); 0.01 unlabelled
    assert out.get_column("y").to_list() == [0.9, 0.5, 0.48, 0.1, 0.02, 0.01]
    assert out.get_column("_label_y").to_list() == pytest.approx([0.9, 0.5, 0.45, 0.1, 0.02, 0.01])
    # labels pushed under the floor come back up, a gap apart
    low = label_heights(
        pl.DataFrame({"p": "x", "y": [0.02, 0.01, 0.0]}),
        "y",
        by=["p"],
        labelled=pl.lit(True),
        gap=0.05,
        floor=0.0,
    )
    assert low.get_column("_label_y").to_list() == pytest.approx([0.1, 0.05, 0.0])


def test_reliability_diagram_of_a_picked_group(shipped: pl.DataFrame) -> None:
    predictions = pl.read_parquet(DATA / "synthetic_predictions.parquet")
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    spec = reliability_diagram(stats, metrics=shipped, pick=["model", "task"]).to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert sorted(params) == ["pick_0", "pick_1"]
    assert params["pick_0"]["bind"]["options"] == sorted(set(predictions["model"]))
    assert params["pick_1"]["bind"]["options"] == sorted(set(predictions["task"]))
    assert params["pick_0"]["value"] == "calibrated"
    # both parts filter on the picks; every group's bins are in the data, once
    expected = 'datum["model"] === pick_0 && datum["task"] === pick_1'
    assert [part["transform"] for part in spec["vconcat"]] == [[{"filter": expected}]] * 2
    populated, every_bin = spec["datasets"].values()
    assert len(every_bin) == stats.height
    assert len(populated) == stats.filter(pl.col("count") > 0).height
    assert "legend" not in json.dumps(spec["vconcat"][0]["layer"][0]["encoding"]["color"])
    vlc.vegalite_to_vega(spec)
    with pytest.raises(ArgumentError, match="not group keys"):
        reliability_diagram(stats, pick="split")
    with pytest.raises(ArgumentError, match="leave facet= unset"):
        reliability_diagram(stats, pick="model", facet="task")
    with pytest.raises(ArgumentError, match="pick= takes a group key or a list"):
        reliability_diagram(stats, pick=5)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="pick= takes a group key or a list"):
        reliability_diagram(stats, pick=[pl.col("model")])  # type: ignore[list-item]


def test_heatmap_outlines_a_picked_group(shipped: pl.DataFrame) -> None:
    """``pick=``: parameters named as the picked diagram's, null at first (no outline)."""
    spec = calibration_heatmap(shipped, pick=["task", "model"]).to_dict()
    assert spec["params"] == [{"name": "pick_0", "value": None}, {"name": "pick_1", "value": None}]
    cells, _, outline = layers(spec)
    diagram = reliability_diagram(
        cf.bin_statistics(
            pl.read_parquet(DATA / "synthetic_predictions.parquet"), by=["model", "task"]
        ),
        pick=["task", "model"],
    ).to_dict()
    # the same parameters, the same test of a row: the page sets one from the other
    assert outline["transform"] == diagram["vconcat"][0]["transform"]
    assert outline["transform"] == [
        {"filter": 'datum["task"] === pick_0 && datum["model"] === pick_1'}
    ]
    assert outline["mark"]["filled"] is False and outline["mark"]["aria"] is False
    assert outline["encoding"]["x"] == cells["encoding"]["x"]
    assert "params" not in calibration_heatmap(shipped).to_dict()  # nothing to set

    def outlined(values: list[object]) -> int:
        for param, value in zip(spec["params"], values, strict=True):
            param["value"] = value
        svg = vlc.vegalite_to_svg(spec)
        # the outline layer's mark group (self-closing when empty): a path per outlined cell
        group = re.search(r'<g class="mark-rect role-mark layer_2_marks"[^>]*?(/>|>.*?</g>)', svg)
        assert group is not None
        return group.group(1).count("<path")

    assert outlined([None, None]) == 0  # no group picked yet: nothing outlined
    assert outlined(["reading", "calibrated"]) == 1
    with pytest.raises(ArgumentError, match="not group keys"):
        calibration_heatmap(shipped, pick="split")


def test_heatmap_scale_of_a_sweep_of_small_groups() -> None:
    """Every cell too small for the noise floor: the scale spans them all, not ±1."""
    sweep = pl.DataFrame(
        {
            "model": [f"m{i}" for i in range(40)],
            "task": "t",
            "count": 20,
            "overconfidence": [0.01 * (i % 5) for i in range(40)],
            "ece": 0.05,
            "ece_beyond_noise": False,
            "verdict": "too few predictions",
        }
    )
    spec = calibration_heatmap(sweep).to_dict()
    assert {r["_status"] for r in rows_of(spec)} == {"too few predictions"}
    # grey cells, the gap in a small square inside each, on a scale of their spread
    cell, square = layers(spec)
    assert cell["mark"]["fill"] == "#ececec" and "color" not in cell["encoding"]
    assert square["mark"]["type"] == "square"
    assert square["encoding"]["color"]["scale"]["domain"] == [-0.04, 0.04]


HOSTILE_NAMES = [
    "constructor",
    "toString",
    "valueOf",
    "hasOwnProperty",
    "line\u2028separator",
    "paragraph\u2029separator",
    "(null)",
    None,
    "nul\x00byte",
]


def test_hostile_names_draw_every_report_chart() -> None:
    """Names of Object.prototype, U+2028/U+2029 and NUL broke 3 of 7 charts, and a null
    model shared a heatmap row with one named "(null)" (issue 32.5, 32.7): every chart of
    the report renders, each group its own row, and PNG text holds no NUL."""
    from calib_frames.plot.export import xml_safe
    from calib_frames.report import report_charts

    rows = prediction_rows(4, len(HOSTILE_NAMES) * 2 * 120, models=[f"m{k}" for k in range(9)])
    predictions = rows.with_columns(
        pl.col("model").replace_strict(
            [f"m{k}" for k in range(9)], HOSTILE_NAMES, return_dtype=pl.String
        ),
        task=pl.when(pl.int_range(pl.len()) % 2 == 0)
        .then(pl.lit("toString"))
        .otherwise(pl.lit("b\u2028c")),
    )
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    tables = cf.comparison.report_tables(stats, model="model", replicates=20)
    charts = report_charts(
        tables.comparison, bin_statistics=stats, leaderboard=tables.leaderboard, limit=9
    )
    assert len(charts) == 6
    for title, _, chart in charts:
        spec = chart.to_dict()
        svg = vlc.vegalite_to_svg(xml_safe(spec))  # raises on a Vega error
        assert "<path" in svg, title
    # the heatmap: one row per model, null apart from "(null)"
    heatmap = rows_of(charts[0][2].to_dict())
    labels = {row["model"]: row["_color"] for row in heatmap if row["_draw"] != "gap"}
    assert len(set(labels.values())) == len(HOSTILE_NAMES)
    assert labels[None] == "(null)" and labels["(null)"] == "(null) #2"
    assert labels["nul\x00byte"] == "nul\ufffdbyte" and labels["valueOf"] == "valueOf\u200b"


def test_a_diagram_of_one_group_names_it(shipped: pl.DataFrame) -> None:
    """A saved diagram of one group is titled by it; the picked diagram by the group picked
    (the page's dropdowns set pick_0, pick_1 …): issue 31.4."""
    stats = cf.bin_statistics(
        pl.read_parquet(DATA / "synthetic_predictions.parquet"), by=["model", "task"]
    )
    one = stats.filter(pl.col("model") == "overconfident", pl.col("task") == "code")
    assert reliability_diagram(one).to_dict()["title"]["text"] == (
        "Reliability diagram of overconfident · code"
    )
    assert reliability_diagram(stats, facet="task").to_dict()["title"]["text"] == (
        "Reliability diagram"
    )
    picked = reliability_diagram(stats, pick=["model", "task"]).to_dict()
    expression = picked["title"]["text"]["expr"]
    assert expression == "'Reliability diagram of ' + toString(pick_0) + ' · ' + toString(pick_1)"
    svg = vlc.vegalite_to_svg(picked)  # the first group, as the dropdowns start
    assert "Reliability diagram of calibrated · arithmetic" in svg
