"""The report's data steps, in polars alone: which models and groups each chart draws, in how
many panels, and what the table shows and marks best (report_layout, bounded_models,
table_layout). The charts built from them are tested in test_report.py."""

from __future__ import annotations

import polars as pl
import pytest

from calib_frames.report.charts import (
    HEATMAP_ROW_LIMIT,
    MODEL_LIMIT,
    TASK_LIMIT,
    ReportLayout,
    bounded_models,
    report_layout,
)
from calib_frames.report.table_html import table_layout


def tables(models: int, tasks: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A comparison table (ECE = model index + task index / 100) and its bin rows."""
    table = pl.DataFrame(
        {
            "model": [f"m{i:03d}" for i in range(models) for _ in range(tasks)],
            "task": [f"t{j:02d}" for _ in range(models) for j in range(tasks)],
            "count": 10,
            "ece": [i + j / 100 for i in range(models) for j in range(tasks)],
            "overconfidence": 0.0,
        }
    )
    bins = table.select("model", "task").join(
        pl.DataFrame({"bin": [0, 1]}).cast(pl.UInt32), how="cross"
    )
    return table, bins


def drawn_models(layout: ReportLayout) -> list[str]:
    """The models the small multiples draw, in their legend's order (the Enum's)."""
    dtype = layout.table.schema["model"]
    assert isinstance(dtype, pl.Enum)
    assert set(layout.table.get_column("model").cast(pl.String)) == set(dtype.categories)
    assert list(dtype.categories) == layout.models
    return layout.models


def test_small_multiples_draw_the_best_and_worst_models_across_their_tasks() -> None:
    table, bins = tables(12, 8)
    layout = report_layout(table, bins, ["model", "task"], MODEL_LIMIT)
    # by mean ECE: m000 best … m011 worst; the 2 first and the 2 last, best first
    assert drawn_models(layout) == ["m000", "m001", "m010", "m011"]
    assert layout.bins.get_column("model").n_unique() == 4
    # every task, a panel each, four a row: no panel without a model
    assert layout.facet == ["task"] and layout.columns == 4
    assert layout.table.get_column("task").n_unique() == 8
    assert "the 2 first and the 2 last of 12 models" in layout.left_out
    assert layout.kept is not None and layout.kept.height == 4 * 8
    # the views draw every model and are linked to the picked diagram
    assert layout.views and layout.heatmap and layout.linked and layout.view_note == ""
    assert layout.groups == 12 * 8 and layout.metrics is not None


def test_the_leaderboard_orders_every_chart() -> None:
    table, bins = tables(6, 2)
    board = pl.DataFrame({"model": [f"m{i:03d}" for i in (5, 4, 3, 2, 1, 0)], "ece": 0.0})
    layout = report_layout(table, bins, ["model", "task"], 2, order=board)
    assert drawn_models(layout) == ["m005", "m000"]
    assert layout.order is not None
    assert layout.order.get_column("model").to_list() == board.get_column("model").to_list()
    # up to the limit, nothing left out
    whole = report_layout(table, bins, ["model", "task"], 6, order=board)
    assert whole.kept is None and whole.left_out == "" and whole.table.height == table.height


def test_tasks_past_the_panel_limit_and_no_empty_panel() -> None:
    table, bins = tables(3, TASK_LIMIT + 3)
    layout = report_layout(table, bins, ["model", "task"], MODEL_LIMIT)
    tasks = layout.table.get_column("task").unique().sort().to_list()
    assert tasks == [f"t{j:02d}" for j in range(TASK_LIMIT)]
    assert f"the first {TASK_LIMIT} of {TASK_LIMIT + 3} tasks by name" in layout.left_out
    # a task none of the drawn models has (no predictions) gets no panel
    empty = table.with_columns(
        count=pl.when(pl.col("task") == "t00").then(0).otherwise(pl.col("count"))
    )
    layout = report_layout(empty, bins, ["model", "task"], MODEL_LIMIT)
    assert "t00" not in layout.table.get_column("task").to_list()


def test_the_views_keep_the_first_and_last_models_past_the_row_limit() -> None:
    table, bins = tables(HEATMAP_ROW_LIMIT + 10, 2)
    layout = report_layout(table, bins, ["model", "task"], 8)
    models = layout.view_bins.get_column("model").unique().sort().to_list()
    half = HEATMAP_ROW_LIMIT // 2
    assert models == [f"m{i:03d}" for i in range(half)] + [
        f"m{i:03d}" for i in range(half + 10, HEATMAP_ROW_LIMIT + 10)
    ]
    assert "10 of 60 models are left out here" in layout.view_note


def test_views_need_the_model_key_first_and_a_second_key_for_the_heatmap() -> None:
    table, bins = tables(3, 1)
    one_key = table.drop("task")
    layout = report_layout(one_key, bins.drop("task").unique(), ["model"], 8)
    assert layout.views and not layout.heatmap and not layout.linked and layout.groups == 3
    assert layout.facet == [] and layout.columns is None  # one panel, the models overlaid
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
