"""Careless-user inputs to calib_frames.plot and calib_frames.report.write_report.

Also the spec of the colour order: a colour key keeps its values' order (an Enum's
categories, a Categorical's first appearance, numbers numerically), not the order of
the labels as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from factories import prediction_rows

import calib_frames as cf
import calib_frames.plot as P
import calib_frames.recalibrate as R
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.report import write_report


@pytest.fixture(scope="module")
def preds() -> pl.DataFrame:
    return prediction_rows(2, 240, low=0.05, high=0.95)


def _domains(spec: Any) -> list[list[Any]]:
    """Every scale domain that is a list, in the spec's order."""
    found: list[list[Any]] = []
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key == "domain" and isinstance(value, list):
                found.append(value)
            else:
                found.extend(_domains(value))
    elif isinstance(spec, list):
        for value in spec:
            found.extend(_domains(value))
    return found


def _walk(spec: Any) -> list[dict[str, Any]]:
    """Every dict in the spec."""
    if isinstance(spec, dict):
        return [spec, *[d for value in spec.values() for d in _walk(value)]]
    if isinstance(spec, list):
        return [d for value in spec for d in _walk(value)]
    return []


def _colour_domain(chart: Any) -> list[Any]:
    text = [d for d in _domains(chart.to_dict()) if d and all(isinstance(v, str) for v in d)]
    assert text, "no colour domain in the spec"
    return text[0]


def test_stage_of_recalibration_reliability_in_enum_order(preds: pl.DataFrame) -> None:
    out = R.recalibrate(preds, in_sample=True)
    table = R.recalibration_reliability(out, in_sample=True)
    assert table.schema["stage"] == pl.Enum(["before", "after"])
    chart = P.reliability_diagram(table, color="stage")
    assert _colour_domain(chart) == ["before", "after"]  # as text: "after" < "before"


def test_enum_key_in_its_categories_order(preds: pl.DataFrame) -> None:
    frame = preds.with_columns(pl.col("model").replace({"a": "zeta", "b": "alpha"}))
    frame = frame.with_columns(pl.col("model").cast(pl.Enum(["zeta", "alpha"])))
    chart = P.reliability_diagram(cf.reliability_table(frame, by="model"))
    assert _colour_domain(chart) == ["zeta", "alpha"]


def test_categorical_key_in_order_of_first_appearance(preds: pl.DataFrame) -> None:
    table = cf.reliability_table(preds, by="model").with_columns(
        pl.col("model").replace({"a": "zeta", "b": "alpha"}).cast(pl.Categorical)
    )
    chart = P.reliability_diagram(table)
    assert _colour_domain(chart) == ["zeta", "alpha"]
    flipped = table.sort(pl.col("model").cast(pl.String))  # alpha's rows first
    assert _colour_domain(P.reliability_diagram(flipped)) == ["alpha", "zeta"]


def test_integer_key_in_numeric_order(preds: pl.DataFrame) -> None:
    frame = preds.with_columns(model=pl.when(pl.col("model") == "a").then(10).otherwise(9))
    chart = P.reliability_diagram(cf.reliability_table(frame, by="model"))
    assert _colour_domain(chart) == ["9", "10"]  # as text: "10" < "9"


def test_string_key_alphabetical(preds: pl.DataFrame) -> None:
    table = cf.reliability_table(preds, by="model").sort("model", descending=True)
    assert _colour_domain(P.reliability_diagram(table)) == ["a", "b"]


@pytest.mark.parametrize("name", ["_color", "_panel", "_gap"])
def test_key_named_like_a_chart_column(preds: pl.DataFrame, name: str) -> None:
    table = cf.reliability_table(preds.rename({"model": name}), by=name)
    with pytest.raises(TableError, match=rf"\['{name}'\] clash with the chart's own columns"):
        P.reliability_diagram(table)


def test_key_with_a_colon_and_brackets(preds: pl.DataFrame) -> None:
    # the "name:N" shorthand misread the ':' and altair raised a bare ValueError
    name = "ключ:[0]"
    table = cf.reliability_table(preds.rename({"model": name}), by=name)
    spec = P.reliability_diagram(table).to_dict()
    tooltips = [t for t in _walk(spec) if t.get("title") == name and t.get("field") != "_color"]
    assert tooltips
    assert all(t["field"] == "ключ:\\[0\\]" for t in tooltips)  # brackets escaped
    metrics = cf.calibration_metrics(preds.rename({"model": name}), by=name)
    assert P.metric_scatter(metrics).to_dict()


@pytest.mark.parametrize("columns", [1.5, True, 0])
def test_columns_not_a_positive_int(preds: pl.DataFrame, columns: object) -> None:
    table = cf.reliability_table(preds, by="model")
    with pytest.raises(ArgumentError, match="columns= takes an integer >= 1 or None"):
        P.reliability_diagram(table, facet="model", columns=columns)  # type: ignore[arg-type]


def test_save_chart_over_a_folder(preds: pl.DataFrame, tmp_path: Path) -> None:
    chart = P.metric_scatter(cf.calibration_metrics(preds, by="model"))
    folder = tmp_path / "chart.html"
    folder.mkdir()
    with pytest.raises(ArgumentError, match="it is a folder"):
        P.save_chart(chart, folder)
    with pytest.raises(ArgumentError, match="expected a file path"):
        P.save_chart(chart, 3)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="does not exist"):
        P.save_chart(chart, tmp_path / "missing" / "chart.html")


@pytest.fixture(scope="module")
def report_inputs(preds: pl.DataFrame) -> dict[str, pl.DataFrame]:
    tokens = pl.DataFrame({"model": ["a", "b"], "nll": [2.0, 1.0], "tokens": [4, 4]})
    comparison = cf.comparison_table(
        cf.calibration_metrics(preds, by="model"),
        cf.perplexity(tokens, by="model", tokens="tokens"),
    )
    return {"comparison": comparison, "bin_statistics": cf.bin_statistics(preds, by="model")}


def test_write_report_over_a_folder_or_not_a_path(
    report_inputs: dict[str, pl.DataFrame], tmp_path: Path
) -> None:
    folder = tmp_path / "report.html"
    folder.mkdir()
    with pytest.raises(ArgumentError, match="it is a folder"):
        write_report(folder, **report_inputs)
    with pytest.raises(ArgumentError, match="expected a file path"):
        write_report(3, **report_inputs)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="does not exist"):
        write_report(tmp_path / "missing" / "report.html", **report_inputs)


def test_write_report_inputs_not_names(
    report_inputs: dict[str, pl.DataFrame], tmp_path: Path
) -> None:
    with pytest.raises(ArgumentError, match="inputs= takes file names"):
        write_report(tmp_path / "r.html", inputs=3, **report_inputs)  # type: ignore[arg-type]


def test_write_report_best_within_one_name(
    report_inputs: dict[str, pl.DataFrame], tmp_path: Path
) -> None:
    # a str used to be split into its letters: "best_within= names ['m', 'o', ...]"
    one = write_report(tmp_path / "one.html", best_within="model", **report_inputs)
    listed = write_report(tmp_path / "listed.html", best_within=["model"], **report_inputs)
    assert len(one.read_text()) == len(listed.read_text())


def test_int_where_a_bool_goes(preds: pl.DataFrame) -> None:
    table = cf.reliability_table(preds)
    with pytest.raises(ArgumentError, match="histogram= takes True or False, got 0"):
        P.reliability_diagram(table, histogram=0)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="share= takes True or False, got 1"):
        P.confidence_histogram(table, share=1)  # type: ignore[arg-type]


def test_write_report_binning_not_text(
    report_inputs: dict[str, pl.DataFrame], tmp_path: Path
) -> None:
    # used to fail inside html.escape with an AttributeError
    with pytest.raises(ArgumentError, match="binning= takes a description or None"):
        write_report(tmp_path / "r.html", binning=3, **report_inputs)  # type: ignore[arg-type]


def test_write_report_escapes_a_hostile_title(
    report_inputs: dict[str, pl.DataFrame], tmp_path: Path
) -> None:
    page = write_report(tmp_path / "t.html", title="<script>alert(1)</script>", **report_inputs)
    text = page.read_text()
    assert "<script>alert(1)" not in text
    assert "&lt;script&gt;alert(1)" in text


@pytest.mark.parametrize("rows", [0, 3])
def test_scatter_with_nothing_to_draw_says_so(rows: int) -> None:
    """0 rows, or metrics that are all NaN: the package's error, not a TypeError (32.11)."""
    table = pl.DataFrame(
        {
            "model": [f"m{k}" for k in range(rows)],
            "ece": [float("nan")] * rows,
            "accuracy": [0.5] * rows,
        },
        schema={"model": pl.String, "ece": pl.Float64, "accuracy": pl.Float64},
    )
    with pytest.raises(TableError, match=f"no group of the {rows} rows has a finite ece"):
        P.metric_scatter(table)
