"""Property-based tests of bin statistics and metrics (hypothesis, derandomized).

Confidences mix arbitrary floats in [0, 1] with the exact edges k/M and 0.0/1.0, so
edge handling, empty bins, infinite log losses and single-row groups are all exercised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pytest
from columns import METRICS, SUM_COLUMNS
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_frames as cf

SETTINGS = settings(derandomize=True, deadline=None, max_examples=100, database=None)

FLOAT_METRICS = ("weight", *METRICS)
SUMS = SUM_COLUMNS
GROUPS = ("a", "b", "c", None)


@dataclass(frozen=True)
class Case:
    frame: pl.DataFrame
    binning: cf.Binning
    weight: str | None

    @property
    def n_bins(self) -> int:
        return self.binning.n_bins


@st.composite
def cases(
    draw: st.DrawFn,
    *,
    min_rows: int = 0,
    weights: str = "optional",
    groups: bool = True,
) -> Case:
    """Predictions with 1-4 groups (one may be null), optional positive weights,
    1-30 equal-width bins, left- or right-closed."""
    n_bins = draw(st.integers(1, 30))
    closed = draw(st.sampled_from(["left", "right"]))
    edge = st.integers(0, n_bins).map(lambda k: k / n_bins)
    confidence = st.one_of(
        edge,
        st.sampled_from([0.0, 1.0]),
        st.floats(0.0, 1.0, allow_nan=False),
    )
    rows = draw(st.integers(min_rows, 40))
    p = draw(st.lists(confidence, min_size=rows, max_size=rows))
    y = draw(st.lists(st.booleans(), min_size=rows, max_size=rows))
    columns: dict[str, Any] = {
        "confidence": pl.Series(p, dtype=pl.Float64),
        "correct": pl.Series(y, dtype=pl.Boolean),
    }
    if groups:
        alphabet = draw(st.lists(st.sampled_from(GROUPS), min_size=1, max_size=4, unique=True))
        g = draw(st.lists(st.sampled_from(alphabet), min_size=rows, max_size=rows))
        columns["g"] = pl.Series(g, dtype=pl.String)
    weighted = weights == "always" or (weights == "optional" and draw(st.booleans()))
    if weighted:
        w = draw(st.lists(st.floats(1e-3, 100.0, allow_nan=False), min_size=rows, max_size=rows))
        columns["w"] = pl.Series(w, dtype=pl.Float64)
    binning = cf.Binning.uniform(n_bins, closed=closed)
    return Case(pl.DataFrame(columns), binning, "w" if weighted else None)


def metrics(case: Case, frame: pl.DataFrame | None = None, **kwargs: Any) -> pl.DataFrame:
    params: dict[str, Any] = {"bins": case.binning, "weight": case.weight} | kwargs
    return cf.calibration_metrics(case.frame if frame is None else frame, **params)


def stats(case: Case, frame: pl.DataFrame | None = None, **kwargs: Any) -> pl.DataFrame:
    params: dict[str, Any] = {"bins": case.binning, "weight": case.weight} | kwargs
    return cf.bin_statistics(case.frame if frame is None else frame, **params)


def assert_metric_rows_close(
    got: dict[str, Any],
    expected: dict[str, Any],
    *,
    rel: float = 1e-12,
    abs_: float = 1e-12,
    skip: tuple[str, ...] = (),
) -> None:
    for name in FLOAT_METRICS:
        if name in skip:
            continue
        if expected[name] is None:  # mce_guarded: no bin of mce_min_count predictions
            assert got[name] is None, name
            continue
        assert got[name] == pytest.approx(expected[name], rel=rel, abs=abs_, nan_ok=True), name
    assert got["populated_bins"] == expected["populated_bins"]
    if "count" not in skip:
        assert got["count"] == expected["count"]


def assert_stats_close(got: pl.DataFrame, expected: pl.DataFrame, keys: list[str]) -> None:
    assert got.columns == expected.columns
    on = [*keys, "bin"]
    assert got.select(*on, "count").rows() == expected.select(*on, "count").rows()
    for name in ("bin_lower", "bin_upper"):
        assert got[name].to_list() == expected[name].to_list(), name
    floats = [name for name, dtype in got.schema.items() if dtype == pl.Float64]
    assert set(SUMS) <= set(floats)
    for name in sorted(set(floats) - {"bin_lower", "bin_upper"}):
        assert got[name].is_null().to_list() == expected[name].is_null().to_list(), name
        assert got[name].fill_null(0.0).to_list() == pytest.approx(
            expected[name].fill_null(0.0).to_list(), rel=1e-12, abs=0.0
        ), name


def group_filter(key: str | None) -> pl.Expr:
    return pl.col("g").is_null() if key is None else pl.col("g") == key


# --------------------------------------------------------------------------------------


@SETTINGS
@given(cases())
def test_grouped_equals_per_group(case: Case) -> None:
    grouped = metrics(case, by="g")
    keys = grouped["g"].to_list()
    present = case.frame["g"].unique().to_list()
    assert sorted(keys, key=lambda k: (k is None, k or "")) == keys
    assert set(keys) == set(present)
    for row in grouped.iter_rows(named=True):
        part = case.frame.filter(group_filter(row["g"]))
        alone = metrics(case, part).row(0, named=True)
        assert_metric_rows_close(row, alone)


@pytest.mark.slow
@SETTINGS
@given(cases(), st.data())
def test_merge_equals_stats_of_union(case: Case, data: st.DataObject) -> None:
    n = case.frame.height
    in_a = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    mask = pl.Series(in_a, dtype=pl.Boolean)
    a, b = case.frame.filter(mask), case.frame.filter(~mask)
    for by in (None, "g"):
        keys = [] if by is None else [by]
        merged = cf.merge_bin_statistics(stats(case, a, by=by), stats(case, b, by=by))
        whole = stats(case, by=by)
        assert_stats_close(merged, whole, keys)
        from_merge = cf.metrics_from_bin_statistics(merged)
        direct = metrics(case, by=by)
        assert from_merge.height == direct.height
        for got, expected in zip(
            from_merge.iter_rows(named=True), direct.iter_rows(named=True), strict=True
        ):
            assert all(got[key] == expected[key] for key in keys)
            assert_metric_rows_close(got, expected)


@pytest.mark.slow
@SETTINGS
@given(cases(), st.randoms(use_true_random=False))
def test_row_order_does_not_matter(case: Case, random: Any) -> None:
    order = list(range(case.frame.height))
    random.shuffle(order)
    shuffled = case.frame[order]
    for by in (None, "g"):
        keys = [] if by is None else [by]
        assert_stats_close(stats(case, shuffled, by=by), stats(case, by=by), keys)
        for got, expected in zip(
            metrics(case, shuffled, by=by).iter_rows(named=True),
            metrics(case, by=by).iter_rows(named=True),
            strict=True,
        ):
            assert_metric_rows_close(got, expected)


@SETTINGS
@given(cases())
def test_decomposition_and_bounds(case: Case) -> None:
    for row in metrics(case, by="g").iter_rows(named=True):
        total = (
            row["reliability"]
            - row["resolution"]
            + row["uncertainty"]
            + row["within_bin_variance"]
            + row["within_bin_covariance"]
        )
        assert total == pytest.approx(row["brier"], abs=1e-12)
        assert row["mce"] >= row["ece"] - 1e-15
        assert row["mce_guarded"] is None or row["mce_guarded"] <= row["mce"]
        assert row["rmsce"] >= row["ece"] - 1e-15
        assert 0.0 <= row["ece"] <= 1.0
        assert 0.0 <= row["brier"] <= 1.0 + 1e-15
        assert row["reliability"] == pytest.approx(row["rmsce"] ** 2, rel=1e-9, abs=1e-15)
        assert 0.0 <= row["uncertainty"] <= 0.25
        assert row["resolution"] >= 0.0
        assert row["within_bin_variance"] >= -1e-15
        assert row["log_loss"] >= 0.0
        assert 1 <= row["populated_bins"] <= case.n_bins


@SETTINGS
@given(cases(weights="never"), st.floats(1e-3, 1e3, allow_nan=False))
def test_equal_weights_are_no_weights(case: Case, c: float) -> None:
    weighted = case.frame.with_columns(w=pl.lit(c, dtype=pl.Float64))
    got = metrics(case, weighted, by="g", weight="w")
    expected = metrics(case, by="g")
    assert got["g"].to_list() == expected["g"].to_list()
    for a, b in zip(got.iter_rows(named=True), expected.iter_rows(named=True), strict=True):
        # weights are frequencies: a weight c counts c predictions in mce_guarded's bins
        assert_metric_rows_close(a, b, rel=1e-9, abs_=1e-12, skip=("weight", "mce_guarded"))
        assert a["weight"] == pytest.approx(c * b["count"], rel=1e-12, abs=0)


@SETTINGS
@given(cases(weights="never"), st.data())
def test_integer_weights_equal_duplication(case: Case, data: st.DataObject) -> None:
    n = case.frame.height
    counts = data.draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    weighted = case.frame.with_columns(w=pl.Series(counts, dtype=pl.Float64))
    duplicated = case.frame[np.repeat(np.arange(n), np.array(counts, dtype=np.int64)).tolist()]
    assert duplicated.height == sum(counts)
    got = metrics(case, weighted, by="g", weight="w")
    expected = metrics(case, duplicated, by="g")
    for a, b in zip(got.iter_rows(named=True), expected.iter_rows(named=True), strict=True):
        assert a["g"] == b["g"]
        # a weight of k is k predictions everywhere, mce_guarded's bins included
        assert_metric_rows_close(a, b, rel=1e-9, abs_=1e-12, skip=("count",))
    stats_w = stats(case, weighted, by="g", weight="w")
    stats_d = stats(case, duplicated, by="g")
    assert stats_w["weight"].to_list() == pytest.approx(stats_d["count"].cast(pl.Float64).to_list())


@SETTINGS
@given(cases(groups=False))
def test_array_api_agrees_with_frame_api(case: Case) -> None:
    frame = case.frame
    weights = None if case.weight is None else frame["w"].to_numpy()
    report = cf.CalibrationReport.from_predictions(
        frame["confidence"].to_numpy(), frame["correct"].to_numpy(), case.binning, weights=weights
    )
    row = metrics(case).row(0, named=True)
    assert report.mce_guarded == row["mce_guarded"] or report.mce_guarded == pytest.approx(
        row["mce_guarded"], rel=1e-12, abs=0
    )
    for name in ("ece", "rmsce", "mce", "brier", "log_loss", "accuracy", "mean_confidence"):
        if row[name] is None:  # no weight: null there, NaN among the array API's numbers
            assert math.isnan(getattr(report, name)), name
            continue
        assert getattr(report, name) == pytest.approx(row[name], rel=1e-12, abs=0, nan_ok=True)
    assert report.populated_bins == row["populated_bins"]
    for name in (
        "reliability",
        "resolution",
        "uncertainty",
        "within_bin_variance",
        "within_bin_covariance",
    ):
        value = getattr(report.decomposition, name)
        if row[name] is None:
            assert math.isnan(value), name
            continue
        # two passes sum in polars' order: a term is good to ~1e-13 × brier (module docs)
        assert value == pytest.approx(row[name], rel=1e-12, abs=1e-12 * row["brier"]), name
    if case.frame.height:
        assert report.decomposition.total == pytest.approx(report.brier, abs=1e-12)
    table = stats(case)
    mean_confidence, accuracy, count = report.reliability
    assert count.tolist() == table["count"].to_list()
    # the array API keeps zero-filled arrays where the frame API has null means
    assert mean_confidence.tolist() == pytest.approx(
        table["mean_confidence"].fill_null(0.0).to_list(), rel=1e-12, abs=0
    )
    assert accuracy.tolist() == pytest.approx(
        table["accuracy"].fill_null(0.0).to_list(), rel=1e-12, abs=0
    )
    assert report.bin_edges is not None
    assert report.bin_edges.tolist() == [k / case.n_bins for k in range(case.n_bins + 1)]
    assert math.isnan(report.accuracy) == math.isnan(report.ece) == (row["weight"] == 0)
