"""The charts' data steps, in polars alone: which groups and bins each chart keeps, in which
order, the scales' domains and sizes. No altair here (one test checks that none is imported);
the specs built from these are tested in test_plot.py and test_views.py."""

from __future__ import annotations

import itertools
import subprocess
import sys

import polars as pl
import pytest
from factories import DATA, ROOT, prediction_rows

import calib_frames as cf
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.plot.curves import curve_data, isotonic_data, log_axis
from calib_frames.plot.frames import bin_counts, bin_rows, prepare
from calib_frames.plot.groups import LABEL_LIMIT, decomposition_data, scatter_data
from calib_frames.plot.heatmap import heatmap_data
from calib_frames.plot.histogram import histogram_data
from calib_frames.plot.over_time import trend_data
from calib_frames.plot.perplexity import perplexity_data
from calib_frames.plot.reliability import diagram_data


def grid(
    overconfidence: list[float], count: list[int], status: list[str] | None = None
) -> pl.DataFrame:
    """Two models × len/2 tasks, with the heatmap's columns."""
    n = len(overconfidence)
    table = pl.DataFrame(
        {
            "model": ["m1"] * (n // 2) + ["m0"] * (n - n // 2),
            "task": [f"t{i % (n // 2)}" for i in range(n)],
            "count": count,
            "ece": [abs(v) for v in overconfidence],
            "overconfidence": overconfidence,
        }
    )
    if status is not None:
        beyond = [s == "beyond" for s in status]
        verdict = ["too few predictions" if s == "few" else "ok" for s in status]
        table = table.with_columns(ece_beyond_noise=pl.Series(beyond), verdict=pl.Series(verdict))
    return table


def test_heatmap_cells_order_and_domain() -> None:
    table = grid(
        [0.10, -0.30, 0.05, 0.02, 0.50, -0.04],
        [100, 100, 0, 100, 3, 100],
        ["within", "beyond", "within", "within", "few", "within"],
    )
    data = heatmap_data(table)
    # m1's t2 has no predictions: a grey cell; rows best first (mean ECE of the cells
    # with predictions: m0 0.187, m1 0.2), columns by name
    assert data.cells.height == 6
    assert (data.rows, data.columns) == (["m0", "m1"], ["t0", "t1", "t2"])
    status = {(m, t): (s, d) for m, t, s, d in data.cells.select(
        "model", "task", "_status", "_draw").iter_rows()}  # fmt: skip
    assert status[("m1", "t2")] == ("no predictions", "none")
    assert status[("m0", "t1")] == ("too few predictions", "few")
    assert status[("m1", "t1")] == ("beyond noise", "colour")
    # the scale ends at the 98th percentile (nearest) of |gap| over the cells with enough
    # predictions: 0.02, 0.04, 0.10, 0.30 (the 3-prediction cell's 0.50 is left out)
    assert data.domain == [-0.30, 0.30]
    assert heatmap_data(table, value="ece").domain == [0, 0.30]
    assert data.noise and data.picked == [] and data.cell == 28.0 and data.gap is None
    # rows by the label key: tasks down (mean ECE t2 0.04, t0 0.06, t1 0.4), models across
    swapped = heatmap_data(table, label="task")
    assert (swapped.rows, swapped.columns) == (["t2", "t0", "t1"], ["m0", "m1"])
    assert (swapped.row_keys, swapped.column_keys) == (["task"], ["model"])


def test_heatmap_rows_follow_an_order_and_mark_what_they_leave_out() -> None:
    table = pl.DataFrame(
        {
            "model": [f"m{i}" for i in range(6) for _ in range(2)],
            "task": ["a", "b"] * 6,
            "count": 100,
            "ece": [i / 10 for i in range(6) for _ in range(2)],
            "overconfidence": 0.01,
        }
    )
    board = pl.DataFrame({"model": ["m5", "m3", "m1", "m0", "m2", "m4"]})
    assert heatmap_data(table, order=board).rows == board.get_column("model").to_list()
    # four rows: the first two and the last two, the grey row between says how many
    four = heatmap_data(table, order=board, rows=4)
    assert four.rows == ["m5", "m3", "⋯ 2 left out ⋯", "m2", "m4"]
    assert four.gap == "⋯ 2 left out ⋯"
    gap = four.cells.filter(pl.col("_draw") == "gap")
    assert gap.select("_color", "model").rows() == [("⋯ 2 left out ⋯", None)]
    assert four.cells.filter(pl.col("_draw") != "gap").get_column("model").n_unique() == 4
    with pytest.raises(ArgumentError, match="rows= takes an integer >= 2 or None, got"):
        heatmap_data(table, rows=1)


def test_heatmap_marks_mixed_and_weightless_cells() -> None:
    """Mixed cells get their own colour (not a near-zero gap), weightless ones none."""
    table = pl.DataFrame(
        {
            "model": ["a", "a", "b", "b"],
            "task": ["x", "y", "x", "y"],
            "count": [200, 200, 200, 200],
            "ece": [0.12, 0.05, None, 0.02],
            "overconfidence": [0.3, 0.05, None, -0.02],
            "ece_beyond_noise": [True, False, None, False],
            "verdict": [
                "mixed: overconfident above 0.7, underconfident below",
                "within noise",
                "no weight",
                "within noise",
            ],
            "ece_direction": ["mixed", "over", None, "under"],
        }
    )
    data = heatmap_data(table)
    draw = dict(zip(data.cells.select(pl.concat_str("model", "task")).to_series(),
                    data.cells.get_column("_draw"), strict=True))  # fmt: skip
    assert draw == {"ax": "mixed", "ay": "colour", "bx": "none", "by": "colour"}
    assert data.cells.filter(pl.col("_draw") == "none").get_column("_status").to_list() == [
        "no weight"
    ]
    # the gap's scale spans the cells it colours (0.05, 0.02), not the mixed one (0.3);
    # the mixed cells have a scale of their own, of their ECE
    assert data.domain == [-0.05, 0.05]
    assert data.mixed and data.mixed_domain == [0, 0.12]


def test_heatmap_column_labels_turn_when_they_do_not_fit() -> None:
    def angle(tasks: list[str], models: int) -> int:
        table = pl.DataFrame(
            {
                "model": [f"m{i}" for i in range(models) for _ in tasks],
                "task": tasks * models,
                "overconfidence": 0.1,
            }
        )
        return heatmap_data(table).angle

    assert angle(["a", "b"], 2) == 0  # 28-pixel cells hold one letter
    assert angle(["mmlu_college_physics", "mmlu_college_chemistry"], 2) == -45
    assert angle(["mmlu_college_physics", "mmlu_college_chemistry"], 80) == -90  # 11-pixel cells


def test_group_labels_keep_what_tells_names_apart() -> None:
    from calib_frames.plot.frames import group_labels

    sweep = pl.DataFrame(
        {
            "model": [
                "acme-instruct-7b-checkpoint-012000",
                "acme-instruct-70b-checkpoint-012000",
                "acme-instruct-70b-checkpoint-096000",
            ]
        }
    )
    assert group_labels(sweep, ["model"], 20).to_list() == [
        "…7b…012000",
        "…70b…012000",
        "…70b…096000",
    ]
    # the legend says what the labels leave out; names kept whole need no such line
    folded = prepare(sweep.with_columns(task=pl.lit("t")), ["model", "task"], color="model",
                     facet="task", color_limit=20)  # fmt: skip
    assert folded.color_shared == "acme-instruct-…-checkpoint-…"
    whole = prepare(sweep, ["model"], color="model", facet=None, color_limit=40)
    assert whole.color_shared == ""
    # within the limit the names stay whole; no keys: "all"
    assert group_labels(sweep, ["model"], 40).to_list() == sweep.get_column("model").to_list()
    assert group_labels(sweep, [], 20).to_list() == ["all"] * 3
    # a label cut in the middle that would read like another keeps its folded name
    twins = pl.DataFrame({"model": ["x" * 30 + "a" + "y" * 30, "x" * 30 + "b" + "y" * 30]})
    assert group_labels(twins, ["model"], 20).to_list() == twins.get_column("model").to_list()
    # text a chart cannot draw: line separators, NUL; Object.prototype names; nulls
    hostile = pl.DataFrame({"model": ["a\u2028b", "c\x00d", "valueOf", None, "(null)"]})
    assert group_labels(hostile, ["model"], 20).to_list() == [
        "a b", "c\ufffdd", "valueOf\u200b", "(null)", "(null) #2"
    ]  # fmt: skip


def test_heatmap_domain_of_small_and_empty_cells() -> None:
    # every cell too small: the scale spans them all; no spread at all: 1
    few = grid([0.2, -0.1, 0.05, 0.0], [3, 3, 3, 3], ["few"] * 4)
    assert heatmap_data(few).domain == [-0.2, 0.2]
    flat = grid([0.0, 0.0, 0.0, 0.0], [9, 9, 9, 9])
    assert heatmap_data(flat).domain == [-1.0, 1.0]
    with pytest.raises(TableError, match="no group of the table has predictions"):
        heatmap_data(grid([0.1, 0.2], [0, 0]))


@pytest.mark.parametrize(
    ("models", "tasks", "cell"),
    [(2, 3, 28.0), (50, 60, 15.0), (100, 1, 10.0), (40, 2, 22.5)],
)
def test_heatmap_cell_fits_900_pixels(models: int, tasks: int, cell: float) -> None:
    table = pl.DataFrame(
        {
            "model": [f"m{i:03d}" for i in range(models) for _ in range(tasks)],
            "task": [f"t{j:02d}" for _ in range(models) for j in range(tasks)],
            "overconfidence": 0.1,
        }
    )
    # min(900 / columns, 900 / rows), between 10 and 28
    assert heatmap_data(table).cell == cell
    assert heatmap_data(table, cell=12).cell == 12


def test_scatter_points_sides_extremes_and_domain() -> None:
    table = pl.DataFrame(
        {
            "model": ["a", "b", "c", "d"],
            "ece": [0.02, 0.08, 0.05, float("nan")],
            "accuracy": [0.70, 0.80, 0.75, 0.9],
            "accuracy_ci_low": [0.65, 0.78, 0.70, 0.8],
            "accuracy_ci_high": [0.72, 0.90, 0.76, 0.95],
        }
    )
    data = scatter_data(table, height=200)
    points = data.points.sort("model")
    assert points.get_column("model").to_list() == ["a", "b", "c"]  # d has no ECE
    # the x axis runs 0 to 0.08: labels face its middle, 0.04
    assert points.get_column("_side").to_list() == ["left", "right", "right"]
    assert points.get_column("_extreme").to_list() == [True, True, False]
    assert data.intervals == {"accuracy": ("accuracy_ci_low", "accuracy_ci_high")}
    # y spans the points and their intervals, 0.65 to 0.90, with a 5% margin
    assert data.y_domain == pytest.approx([0.6375, 0.9125])
    assert data.shown[:4] == ["ece", "accuracy", "accuracy_ci_low", "accuracy_ci_high"]
    assert not data.crowded and not data.floor


def test_scatter_crowded_panels_label_their_extremes() -> None:
    models = [f"m{i}" for i in range(LABEL_LIMIT + 1)]
    table = pl.DataFrame(
        {
            "model": models * 2,
            "task": ["x"] * len(models) + ["y"] * len(models),
            "ece": [0.01 * (i + 1) for i in range(2 * len(models))],
            "accuracy": 0.7,
        }
    )
    data = scatter_data(table)
    assert data.crowded and data.prepared.panels == ["x", "y"]
    extremes = data.points.filter(pl.col("_extreme")).sort("task", "ece")
    assert extremes.select("task", "model").rows() == [
        ("x", "m0"),
        ("x", f"m{LABEL_LIMIT}"),
        ("y", "m0"),
        ("y", f"m{LABEL_LIMIT}"),
    ]
    # labels a line (12 pixels of the 220) apart within a panel and side
    gap = 12 * (data.y_domain[1] - data.y_domain[0]) / 220
    for (_, _), group in data.points.group_by("_panel", "_side"):
        heights = group.filter(pl.col("_extreme")).get_column("_label_y").sort().to_list()
        assert all(b - a >= gap - 1e-12 for a, b in itertools.pairwise(heights))


def test_decomposition_bars() -> None:
    table = pl.DataFrame(
        {
            "model": ["a", "b"],
            "brier": [0.2, 0.25],
            "reliability": [0.03, float("nan")],
            "resolution": [0.08, 0.01],
        }
    )
    data = decomposition_data(table)
    assert data.bars.sort("model", "_term").select("model", "_term", "_signed").rows() == [
        ("a", "reliability (added)", 0.03),
        ("a", "resolution (subtracted)", -0.08),
        ("b", "resolution (subtracted)", -0.01),  # b's reliability is not a number
    ]
    assert data.extra == []


def test_perplexity_rows_best_first_and_colours_present() -> None:
    table = pl.DataFrame(
        {
            "model": ["a", "a", "b", "b", "c"],
            "task": ["x", "y", "x", "z", "x"],
            "perplexity": [9.0, 3.0, 5.0, None, 4.0],
            "bits_per_byte": [1.0, 0.5, 0.8, None, 0.6],
            "perplexity_ci_low": [8.0, 2.5, 4.5, None, 3.5],
            "perplexity_ci_high": [10.0, 3.5, 5.5, None, 4.5],
        }
    )
    data = perplexity_data(table)
    # models by their lowest perplexity: a (3.0), c (4.0), b (5.0)
    assert data.labels == ["a", "c", "b"]
    assert data.colors == ["x", "y"]  # b's task z has no value: no dot, no legend entry
    assert data.dots.height == 4
    assert data.measures == ["perplexity", "bits_per_byte"]
    assert data.intervals == {"perplexity": ("perplexity_ci_low", "perplexity_ci_high")}
    word = perplexity_data(
        pl.DataFrame({"task": ["w"], "word_perplexity": [30.0], "perplexity": [None]})
    )
    assert word.measures == ["word_perplexity"]


def test_trend_panels_changed_first() -> None:
    table = pl.DataFrame(
        {
            "batch": [0, 1] * 3,
            "batch_id": ["x", "y"] * 3,
            "batch_time": None,
            "model": ["a", "a", "b", "b", "c", "c"],
            "count": 10,
            "ece": [0.1, 0.1, 0.1, 0.3, 0.1, 0.1],
            "ece_ci_low": 0.0,
            "ece_ci_high": 0.5,
        }
    )
    changes = pl.DataFrame(
        {
            "model": ["a", "b", "c"],
            "batch_id": "y",
            "changed": [False, True, None],
            "verdict": ["no change beyond noise", "ECE up 0.2, p = 0.01", "not in this batch"],
            "onset": [None, "y", None],
            "baseline": "x..x",
        }
    )
    data = trend_data(table, changes)
    assert data.prepared.panels == ["b", "a", "c"]
    assert data.band == ("ece_ci_low", "ece_ci_high") and not data.timed and data.changes
    since = data.prepared.data.filter(pl.col("_since"))
    assert since.select("model", "batch_id").rows() == [("b", "y")]
    assert since["_label"].to_list() == ["▲ ECE +0.2 since y"]
    plain = trend_data(table, metric="ece")
    assert plain.prepared.panels == ["a", "b", "c"] and not plain.changes


def test_diagram_populated_bins_choices_and_metrics() -> None:
    predictions = prediction_rows(3, 400, models=("a", "b", "c"), low=0.5)
    stats = cf.bin_statistics(predictions, by="model")
    metrics = cf.calibration_metrics(predictions, by="model")
    data = diagram_data(stats, metrics=metrics, pick="model")
    # confidences in [0.5, 1): the lower five bins are empty, not drawn, counted
    assert data.populated.height == 15 and data.hist.height == 30
    assert set(data.populated.get_column("bin").to_list()) == {5, 6, 7, 8, 9}
    assert data.choices == {"model": ["a", "b", "c"]}
    assert data.hist_top is None  # a picked group's counts fit their own axis
    assert data.metrics_line == ""  # the picked group's metrics are in its tooltips
    overlaid = diagram_data(stats, metrics=metrics)  # a colour per model, one panel
    assert overlaid.group_metrics is not None
    assert overlaid.group_metrics.equals(
        metrics.select(pl.col("model").alias("_color"), "ece", "mce", "brier")
    )
    assert overlaid.metrics_line == ""  # several groups: their metrics sit beside
    assert overlaid.hist_top == overlaid.hist.get_column("count").max()
    # each bin's gap is accuracy − mean confidence, its direction its sign
    gaps = data.populated.select(
        (pl.col("_gap") - (pl.col("accuracy") - pl.col("mean_confidence")))
        .abs()
        .max()
        .alias("error"),
        ((pl.col("_gap") < 0) == (pl.col("_direction") == "overconfident")).all().alias("sign"),
    ).row(0)
    assert gaps == (0.0, True)
    alone = diagram_data(stats.filter(pl.col("model") == "a"), metrics=metrics)
    ece = metrics.filter(pl.col("model") == "a").get_column("ece").item()
    assert alone.metrics_line.startswith(f"ECE {ece:.3f} · MCE ")
    assert alone.hist_top == alone.hist.get_column("count").max()
    with pytest.raises(ArgumentError, match="pick= draws one chart"):
        diagram_data(stats, pick="model", facet="model")


def test_bin_counts_shares_sum_to_one_per_group() -> None:
    stats = cf.bin_statistics(prediction_rows(5, 300, models=("a", "b")), by="model")
    prepared, bins = histogram_data(stats)
    assert prepared.panels == ["a", "b"]
    shares = bins.group_by("_panel").agg(pl.col("_share").sum()).sort("_panel")
    assert shares.get_column("_share").to_list() == pytest.approx([1.0, 1.0])
    mids = bins.select((pl.col("_bin_mid") - (pl.col("bin_lower") + 0.05)).abs().max()).item()
    assert mids < 1e-12
    # the diagram counts the same bins
    diagram = diagram_data(stats)
    assert diagram.hist.select("_panel", "bin", "count").equals(
        bin_counts(bin_rows(prepare(stats, ["model"], color=None, facet=None)), ["model"]).select(
            "_panel", "bin", "count"
        )
    )


def test_curve_points_are_finite_and_ordered() -> None:
    table = pl.DataFrame(
        {
            "model": ["a"] * 4 + ["b"] * 2,
            "bins": [20, 5, 0, 10, 5, 200],
            "ece": [0.03, 0.01, 0.5, None, 0.02, 0.04],
        }
    )
    _, points = curve_data(table, ["bins", "ece"], x="bins", y="ece", positive=["bins"])
    assert points.select("model", "bins").rows() == [
        ("a", 5.0),
        ("a", 20.0),
        ("b", 5.0),
        ("b", 200.0),
    ]
    assert log_axis(points, "bins") and not log_axis(points.filter(pl.col("bins") < 100), "bins")
    with pytest.raises(TableError, match="missing columns"):
        curve_data(table, ["bins", "risk"], x="bins", y="risk")


def test_isotonic_steps_end_at_the_last_block() -> None:
    blocks = pl.DataFrame(
        {
            "model": ["a", "a", "b"],
            "block": [1, 0, 0],
            "confidence_lower": [0.5, 0.0, 0.2],
            "confidence_upper": [1.0, 0.5, 0.9],
            "count": [4, 6, 3],
            "recalibrated": [0.75, 0.2, 0.5],
        }
    )
    _, ordered, steps = isotonic_data(blocks)
    assert ordered.get_column("block").to_list() == [0, 1, 0]
    assert steps.select("model", "_x", "recalibrated").rows() == [
        ("a", 0.0, 0.2),
        ("a", 0.5, 0.75),
        ("a", 1.0, 0.75),
        ("b", 0.2, 0.5),
        ("b", 0.9, 0.5),
    ]


def test_data_steps_import_no_altair() -> None:
    code = """
import sys
import polars as pl
import calib_frames as cf
from calib_frames.plot.heatmap import heatmap_data
from calib_frames.plot.groups import scatter_data, decomposition_data
from calib_frames.plot.reliability import diagram_data
from calib_frames.plot.histogram import histogram_data
from calib_frames.plot.perplexity import perplexity_data
from calib_frames.report.charts import report_layout
from calib_frames.report.table_html import table_html
predictions = pl.read_parquet(sys.argv[1])
stats = cf.bin_statistics(predictions, by=["model", "task"])
table = cf.comparison_from_bin_statistics(stats, replicates=5)
heatmap_data(table); scatter_data(table); decomposition_data(table)
diagram_data(stats, metrics=table, pick=["model", "task"]); histogram_data(stats)
report_layout(table, stats, ["model", "task"], 4)
table_html(table, keys=["model", "task"], within=["task"])
print(sorted(m for m in ("altair", "vl_convert") if m in sys.modules))
"""
    result = subprocess.run(
        [sys.executable, "-c", code, str(DATA / "synthetic_predictions.parquet")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert result.stdout.strip() == "[]"
