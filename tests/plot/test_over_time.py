"""The trend chart: what it draws from a table of batches and how it marks a change."""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl
import pytest

from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.plot import trend_chart


def batches(timed: bool = True) -> pl.DataFrame:
    days = [dt.datetime(2026, 12, 1 + d, tzinfo=dt.UTC) for d in range(3)]
    return pl.DataFrame(
        {
            "batch": pl.Series([0, 1, 2] * 3, dtype=pl.UInt32),
            "batch_id": ["x", "y", "z"] * 3,
            "batch_time": days * 3 if timed else pl.Series([None] * 9, dtype=pl.Datetime),
            "model": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
            "count": [500] * 9,
            "ece": [0.02, 0.03, 0.02, 0.04, 0.05, 0.04, 0.03, 0.02, 0.12],
            "ece_ci_low": [0.01] * 9,
            "ece_ci_high": [0.06] * 8 + [0.15],
            "ece_noise_floor": [0.035] * 9,
        }
    )


CHANGES = pl.DataFrame(
    {
        "model": ["a", "b", "c"],
        "batch_id": ["z"] * 3,
        "baseline": ["x..x"] * 3,
        "onset": [None, None, "y"],
        "changed": [False, False, True],
        "verdict": ["no change beyond noise"] * 2
        + ["accuracy down 0.05, p = 0.01; ECE up 0.09, p = 0.002"],
    }
)


def panels(spec: dict[str, Any]) -> list[str]:
    rows = next(iter(spec["datasets"].values()))
    return list(dict.fromkeys(row["_panel"] for row in rows))


def test_band_floor_window_onset_and_the_change_in_the_panel() -> None:
    spec = trend_chart(batches(), CHANGES).to_dict()
    layers = spec["spec"]["layer"]
    marks = [layer["mark"]["type"] for layer in layers]
    assert marks == ["area", "line", "rect", "rule", "line", "point", "text"]
    assert layers[1]["mark"]["strokeDash"] == [3, 2]  # the noise floor
    assert layers[4]["encoding"]["x"]["type"] == "temporal"
    # the changed group first; panel titles are the keys, the change is written inside
    assert panels(spec) == ["c", "a", "b"]
    rows = next(iter(spec["datasets"].values()))
    assert [r["batch_id"] for r in rows if r["_since"]] == ["y", "z"]  # from the onset on
    assert [r["batch_id"] for r in rows if r["_onset"]] == ["y"]
    assert {r["batch_id"] for r in rows if r["_baseline"]} == {"x"}
    assert [r["_label"] for r in rows if r["_label"]] == ["▲ ECE +0.09 since y"]
    accuracy = trend_chart(batches().with_columns(accuracy=pl.lit(0.7)), CHANGES, metric="accuracy")
    labels = [
        r["_label"] for r in next(iter(accuracy.to_dict()["datasets"].values())) if r["_label"]
    ]
    assert labels == ["▲ accuracy −0.05 since y"]


def test_without_times_the_axis_counts_batches() -> None:
    spec = trend_chart(batches(timed=False)).to_dict()
    line = next(layer for layer in spec["spec"]["layer"] if "tooltip" in layer["encoding"])
    assert line["encoding"]["x"]["type"] == "quantitative"
    assert line["encoding"]["x"]["title"] == "batch"
    assert panels(spec) == ["a", "b", "c"]


def test_refuses_other_tables() -> None:
    with pytest.raises(TableError, match="not a table of batches"):
        trend_chart(batches().drop("batch"))
    with pytest.raises(TableError, match="missing columns \\['brier'\\]"):
        trend_chart(batches(), metric="brier")
    with pytest.raises(TableError, match="change table"):
        trend_chart(batches(), CHANGES.drop("verdict"))
    with pytest.raises(ArgumentError, match="facet"):
        trend_chart(batches(), facet="task")
