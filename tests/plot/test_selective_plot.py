"""risk_coverage_chart draws a selective curve table (one line per group, facets)."""

from __future__ import annotations

import polars as pl
import pytest
from factories import prediction_rows

import calib_frames as cf
from calib_frames.exceptions import TableError
from calib_frames.plot import risk_coverage_chart


def test_draws_the_curve_table_one_line_per_group() -> None:
    rows = prediction_rows(1, 400, models=("a", "b", "c"))
    curve = cf.selective_curve(rows, by="model", points=20)
    spec = risk_coverage_chart(curve).to_dict()
    assert spec["mark"]["type"] == "line"
    assert spec["encoding"]["x"]["field"] == "coverage"
    assert spec["encoding"]["y"]["field"] == "risk"
    (values,) = spec["datasets"].values()
    assert len(values) == curve.height
    assert {v["model"] for v in values} == {"a", "b", "c"}
    # drawn in coverage order within each group
    for model in ("a", "b", "c"):
        xs = [v["coverage"] for v in values if v["model"] == model]
        assert xs == sorted(xs) and xs[-1] == 1.0


def test_facets_and_bad_tables() -> None:
    rows = prediction_rows(2, 300, models=("a", "b")).with_columns(
        pl.Series("task", ["x", "y"] * 150)
    )
    spec = risk_coverage_chart(cf.selective_curve(rows, by=["model", "task"]), facet="task")
    assert spec.to_dict()["facet"]["field"]
    with pytest.raises(TableError, match="risk"):
        risk_coverage_chart(pl.DataFrame({"model": ["a"], "coverage": [1.0]}))
