"""The report's data steps, in polars alone: which models and groups each chart draws, in how
many panels, and what the table shows and marks best (report_layout, bounded_models,
table_layout). The charts built from them are tested in test_report.py."""

from __future__ import annotations

import polars as pl
import pytest

from calib_frames.report.charts import (
    HEATMAP_ROW_LIMIT,
    OVERLAY_LIMIT,
    bounded_models,
    report_layout,
)
from calib_frames.report.table_html import table_layout


def tables(models: int, tasks: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A comparison table (ECE = model index + task index / 100) and its bin rows."""
    table = pl.DataFrame(
        {
            "model": [f"m{i:03d}" for i in range(models) for _ in range(tasks)],
            "task": [f"t{j}" for _ in range(models) for j in range(tasks)],
            "count": 10,
            "ece": [i + j / 100 for i in range(models) for j in range(tasks)],
            "overconfidence": 0.0,
        }
    )
    bins = table.select("model", "task").join(
        pl.DataFrame({"bin": [0, 1]}).cast(pl.UInt32), how="cross"
    )
    return table, bins


def test_few_models_share_a_panel_per_task_tasks_bounded_by_their_worst_ece() -> None:
    table, bins = tables(OVERLAY_LIMIT, 8)
    layout = report_layout(table, bins, ["model", "task"], 4)
    assert layout.overlay and layout.facet == ["task"] and layout.columns == 4
    # a task's worst ECE is the last model's: t0 < t1 < … < t7; the 2 lowest and 2 highest
    assert layout.kept is not None
    assert layout.kept.get_column("task").to_list() == ["t0", "t1", "t6", "t7"]
    assert layout.table.get_column("task").unique().sort().to_list() == ["t0", "t1", "t6", "t7"]
    assert layout.bins.height == OVERLAY_LIMIT * 4 * 2
    assert "the 2 tasks of lowest ECE and the 2 of highest; 4 of 8 tasks are left out" in (
        layout.left_out
    )
    # the views draw every model and are linked to the picked diagram
    assert layout.views and layout.heatmap and layout.linked and layout.view_note == ""
    assert layout.groups == OVERLAY_LIMIT * 8 and layout.metrics is not None


def test_many_models_get_a_panel_per_group_groups_bounded_by_ece() -> None:
    table, bins = tables(OVERLAY_LIMIT + 1, 2)
    whole = report_layout(table, bins, ["model", "task"], 12)
    assert not whole.overlay and whole.facet == ["model", "task"]
    assert whole.columns is None  # a column per task
    assert whole.kept is None and whole.left_out == "" and whole.table.equals(table)
    # past the limit, the groups of lowest and highest ECE; the two models left then
    # share a panel per task
    layout = report_layout(table, bins, ["model", "task"], 4)
    assert layout.kept is not None
    assert layout.kept.rows() == [("m000", "t0"), ("m000", "t1"), ("m005", "t0"), ("m005", "t1")]
    assert "8 of 12 groups are left out" in layout.left_out
    assert layout.overlay and layout.facet == ["task"] and layout.columns == 2


def test_the_views_keep_the_extreme_models_past_the_row_limit() -> None:
    table, bins = tables(HEATMAP_ROW_LIMIT + 10, 2)
    layout = report_layout(table, bins, ["model", "task"], 8)
    models = layout.view_table.get_column("model").unique().sort().to_list()
    half = HEATMAP_ROW_LIMIT // 2
    assert models == [f"m{i:03d}" for i in range(half)] + [
        f"m{i:03d}" for i in range(half + 10, HEATMAP_ROW_LIMIT + 10)
    ]
    assert layout.view_bins.get_column("model").n_unique() == HEATMAP_ROW_LIMIT
    assert "10 of 60 models are left out here" in layout.view_note


def test_views_need_the_model_key_first_and_a_second_key_for_the_heatmap() -> None:
    table, bins = tables(3, 1)
    one_key = table.drop("task")
    layout = report_layout(one_key, bins.drop("task").unique(), ["model"], 8)
    assert layout.views and not layout.heatmap and not layout.linked and layout.groups == 3
    swapped = report_layout(table.select("task", "model", "count", "ece"), bins, ["model"], 8)
    assert not swapped.views


def test_bounded_models_rank_by_the_mean_over_tasks() -> None:
    table = pl.DataFrame(
        {
            "model": ["a", "a", "b", "b", "c", "d", "e"],
            "ppl": [1.0, 9.0, 4.0, 4.0, 2.0, float("inf"), None],
        }
    )
    # means: a 5, b 4, c 2 (d and e have no finite value and do not count)
    assert bounded_models(table, ["model"], "ppl", 3) == (None, 3)
    chosen, models = bounded_models(table, ["model"], "ppl", 2)
    assert models == 3 and chosen is not None
    assert chosen.get_column("model").to_list() == ["c", "a"]


@pytest.mark.parametrize(
    ("within", "best"),
    [([], [False, False, True, False]), (["task"], [False, True, True, False])],
)
def test_table_layout_marks_the_best_of_each_column(within: list[str], best: list[bool]) -> None:
    table = pl.DataFrame(
        {
            "model": ["a", "b", "a", "b"],
            "task": ["x", "x", "y", "y"],
            "accuracy": [0.6, 0.7, 0.9, 0.8],
            "ece": [0.05, 0.04, 0.01, 0.02],
            "verdict": "within noise",
        }
    )
    layout = table_layout(table, within=within)
    assert layout.order == [
        ("accuracy", "accuracy"),
        ("calibration", "ece"),
        ("noise", "verdict"),
    ]
    assert layout.groups == ["accuracy", "calibration", "noise"]
    assert layout.best.get_column("accuracy").to_list() == best
    assert layout.best.get_column("ece").to_list() == best  # lower is better
    assert not layout.best.get_column("verdict").any()  # text: no best
    assert layout.intervals == set()
