"""Bin statistics and calibration metrics: worked examples, an independent reference,
empty-input conventions, accumulation accuracy, lazy/eager kinds, grouping and merging.

Expected values come from hand arithmetic (commented) or from ``reference_metrics`` below:
a straightforward two-pass numpy/``math.fsum`` implementation of the formulas in the
docstring of :mod:`calib_frames.metrics`, with its own bin assignment
(``np.searchsorted`` on the edges ``k / M``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl
import pytest
from columns import METRICS, SUM_COLUMNS
from factories import assert_frames_close, exact_bin_index, prediction_rows

import calib_frames as cf

FloatArray = npt.NDArray[np.float64]


# --------------------------------------------------------------------------------------
# Independent reference
# --------------------------------------------------------------------------------------


def reference_bins(
    p: FloatArray, y: FloatArray, w: FloatArray, n_bins: int, closed: str
) -> dict[str, Any]:
    """Per-bin sums with math.fsum (first pass), as the stats docstring defines them."""
    idx = exact_bin_index(p, n_bins, closed)
    with np.errstate(divide="ignore"):
        loss = np.where(y == 1.0, -np.log(p), -np.log1p(-p))
    # A zero-weight row contributes nothing (also when its loss is infinite).
    weighted_loss = np.where(w > 0, w * np.where(w > 0, loss, 0.0), 0.0)
    right, wrong = y == 1.0, y == 0.0
    residual = np.where(right, 1.0 - p, p)  # |p - y|

    def per_bin(values: FloatArray, rows: Any = True) -> FloatArray:
        return np.array([math.fsum(values[(idx == b) & rows]) for b in range(n_bins)])

    return {
        "idx": idx,
        "count": np.bincount(idx, minlength=n_bins),
        "weight": per_bin(w),
        "sum_confidence": per_bin(w * p),
        "sum_correct": per_bin(w * y),
        "weight_correct": per_bin(w, right),
        "weight_wrong": per_bin(w, wrong),
        "sum_confidence_correct": per_bin(w * p, right),
        "sum_residual_correct": per_bin(w * residual, right),
        "sum_residual_wrong": per_bin(w * residual, wrong),
        "sum_sq_residual_correct": per_bin(w * residual**2, right),
        "sum_sq_residual_wrong": per_bin(w * residual**2, wrong),
        "sum_log_loss": per_bin(weighted_loss),
    }


def reference_metrics(
    confidence: Any,
    correct: Any,
    weight: Any = None,
    *,
    n_bins: int = 10,
    closed: str = "left",
) -> dict[str, float]:
    """Every metric of :mod:`calib_frames.metrics` from its definition, two passes."""
    p = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    w = np.ones_like(p) if weight is None else np.asarray(weight, dtype=np.float64)
    per_bin = reference_bins(p, y, w, n_bins, closed)
    idx = per_bin["idx"]
    big_w, big_s, big_y = per_bin["weight"], per_bin["sum_confidence"], per_bin["sum_correct"]
    n = math.fsum(w)
    if n == 0:  # no weight: no metric (null), never the 0.0 of a perfect model
        return dict.fromkeys(METRICS) | {"count": p.size, "weight": 0.0, "populated_bins": 0}
    populated = big_w > 0
    p_bar = np.zeros(n_bins)
    y_bar = np.zeros(n_bins)
    p_bar[populated] = big_s[populated] / big_w[populated]
    y_bar[populated] = big_y[populated] / big_w[populated]
    accuracy = math.fsum(big_y) / n
    mean_confidence = math.fsum(big_s) / n
    gap = np.abs(p_bar - y_bar)[populated]
    counted = gap[big_w[populated] >= 10]  # mce_min_count's default, in predictions (weight)
    reliability = math.fsum(big_w[populated] * gap**2) / n
    # second pass: deviations from the per-bin means
    dp = p - p_bar[idx]
    dy = y - y_bar[idx]
    return {
        "accuracy": accuracy,
        "mean_confidence": mean_confidence,
        "overconfidence": mean_confidence - accuracy,
        "ece": math.fsum(big_w[populated] * gap) / n,
        "rmsce": math.sqrt(reliability),
        "mce": float(gap.max()),
        "mce_guarded": float(counted.max()) if counted.size else None,
        "brier": math.fsum(w * (p - y) ** 2) / n,
        "reliability": reliability,
        "resolution": math.fsum(big_w[populated] * (y_bar[populated] - accuracy) ** 2) / n,
        "uncertainty": accuracy * (1 - accuracy),
        "within_bin_variance": math.fsum(w * dp * dp) / n,
        "within_bin_covariance": -2 * math.fsum(w * dp * dy) / n,
        "log_loss": math.fsum(per_bin["sum_log_loss"]) / n,
        "populated_bins": int(populated.sum()),
        "count": p.size,
        "weight": n,
    }


def assert_close(got: dict[str, Any], expected: dict[str, Any], *, rel: float, abs_: float) -> None:
    for name, value in expected.items():
        if value is None or isinstance(value, int):
            assert got[name] == value, name
        else:
            assert got[name] == pytest.approx(value, rel=rel, abs=abs_, nan_ok=True), name


def decomposition_total(row: dict[str, Any]) -> float:
    return (
        row["reliability"]
        - row["resolution"]
        + row["uncertainty"]
        + row["within_bin_variance"]
        + row["within_bin_covariance"]
    )


def random_predictions(
    seed: int, n: int, n_bins: int, *, weighted: bool, groups: int
) -> pl.DataFrame:
    """Confidences: uniform, 30 % on the exact edges k/M (0.0 and 1.0 among them); outcomes
    ~ Bernoulli(p^1.3); weights with exact zeros on a tenth of the rows of finite loss."""
    rows = prediction_rows(
        seed, n, on_edges=(0.3, n_bins), power=1.3, models=[f"g{k}" for k in range(groups or 1)],
        weight=(0.0, 2.0) if weighted else None,
    )  # fmt: skip
    if weighted:  # zeros only where the loss is finite (test_zero_weight_row_with_infinite_loss)
        finite = (pl.col("confidence") > 0) & (pl.col("confidence") < 1)
        tenth = pl.int_range(pl.len()) % 10 == 0
        rows = rows.with_columns(w=pl.when(finite & tenth).then(0.0).otherwise("w"))
    return rows.rename({"model": "g"}) if groups else rows.drop("model")


# --------------------------------------------------------------------------------------
# Worked examples
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("confidence", "ece", "brier", "overconfidence"),
    [
        # one populated bin: ECE = MCE = RMSCE = |p - 0.6|
        # brier = (6 (1-p)^2 + 4 p^2) / 10
        (0.6, 0.0, (6 * 0.4**2 + 4 * 0.6**2) / 10, 0.0),  # 0.24
        (0.95, 0.35, (6 * 0.05**2 + 4 * 0.95**2) / 10, 0.35),  # 0.3625
        (0.25, 0.35, (6 * 0.75**2 + 4 * 0.25**2) / 10, -0.35),  # 0.3625
    ],
)
def test_worked_example_ten_predictions(
    confidence: float, ece: float, brier: float, overconfidence: float
) -> None:
    df = pl.DataFrame({"confidence": [confidence] * 10, "correct": [True] * 6 + [False] * 4})
    row = cf.calibration_metrics(df).row(0, named=True)
    tight = {"abs": 1e-12}
    assert brier == pytest.approx({0.6: 0.24, 0.95: 0.3625, 0.25: 0.3625}[confidence], **tight)
    assert row["count"] == 10
    assert row["weight"] == 10.0
    assert row["populated_bins"] == 1
    assert row["accuracy"] == pytest.approx(0.6, **tight)
    assert row["mean_confidence"] == pytest.approx(confidence, **tight)
    assert row["ece"] == pytest.approx(ece, **tight)
    assert row["mce"] == pytest.approx(ece, **tight)
    assert row["rmsce"] == pytest.approx(ece, **tight)
    assert row["overconfidence"] == pytest.approx(overconfidence, **tight)
    assert row["brier"] == pytest.approx(brier, **tight)
    # one bin: reliability = gap^2, no resolution, uncertainty = 0.6 * 0.4, no spread
    assert row["reliability"] == pytest.approx(ece**2, **tight)
    assert row["resolution"] == pytest.approx(0.0, **tight)
    assert row["uncertainty"] == pytest.approx(0.24, **tight)
    assert row["within_bin_variance"] == pytest.approx(0.0, **tight)
    assert row["within_bin_covariance"] == pytest.approx(0.0, **tight)
    log_loss = (-6 * math.log(confidence) - 4 * math.log(1 - confidence)) / 10
    assert row["log_loss"] == pytest.approx(log_loss, **tight)


def test_worked_example_overconfidence_sign() -> None:
    high = pl.DataFrame({"confidence": [0.95] * 10, "correct": [True] * 6 + [False] * 4})
    low = high.with_columns(confidence=pl.lit(0.25))
    assert cf.calibration_metrics(high)["overconfidence"].item() > 0
    assert cf.calibration_metrics(low)["overconfidence"].item() < 0


def test_worked_example_reliability_table() -> None:
    df = pl.DataFrame({"confidence": [0.25] * 10, "correct": [True] * 6 + [False] * 4})
    table = cf.reliability_table(df)
    assert table.columns == [
        "bin",
        "bin_lower",
        "bin_upper",
        "count",
        "mean_confidence",
        "accuracy",
    ]
    assert table["bin"].to_list() == list(range(10))
    assert table["count"].to_list() == [0, 0, 10, 0, 0, 0, 0, 0, 0, 0]  # 0.25 in [0.2, 0.3)
    assert table.row(2) == pytest.approx((2, 0.2, 0.3, 10, 0.25, 0.6), abs=1e-12)
    assert table["mean_confidence"].to_list()[3:] == [None] * 7  # empty: null, not 0.0
    assert table["accuracy"].to_list()[:2] == [None] * 2


def test_worked_example_three_predictions() -> None:
    # A (0.80, correct) -> bin 8 = [0.8, 0.9);  B (0.50, correct), C (0.55, wrong) -> bin 5
    df = pl.DataFrame({"confidence": [0.80, 0.50, 0.55], "correct": [True, True, False]})
    row = cf.calibration_metrics(df).row(0, named=True)
    f = Fraction
    # bin 5: mean confidence (0.50 + 0.55)/2 = 0.525, accuracy 1/2, gap 0.025
    # bin 8: mean confidence 0.80, accuracy 1, gap 0.2
    ece = f(2, 3) * f(25, 1000) + f(1, 3) * f(2, 10)  # 0.25/3 = 0.08333...
    reliability = (2 * f(25, 1000) ** 2 + f(2, 10) ** 2) / 3  # 0.04125/3 = 0.01375
    accuracy = f(2, 3)
    mean_confidence = f(185, 100) / 3  # 1.85/3
    brier = (f(2, 10) ** 2 + f(5, 10) ** 2 + f(55, 100) ** 2) / 3  # 0.5925/3 = 0.1975
    # resolution: bin 5 has accuracy 1/2, bin 8 accuracy 1, overall 2/3
    resolution = (2 * (f(1, 2) - accuracy) ** 2 + (1 - accuracy) ** 2) / 3  # (2/36+4/36)/3
    uncertainty = accuracy * (1 - accuracy)  # 2/9
    # within bin 5: p - p_bar = -0.025, +0.025; y - y_bar = +0.5, -0.5; bin 8 has one row
    variance = (2 * f(25, 1000) ** 2) / 3  # 0.00125/3
    covariance = -f(2, 3) * (f(-25, 1000) * f(1, 2) + f(25, 1000) * f(-1, 2))  # 0.05/3
    assert reliability - resolution + uncertainty + variance + covariance == brier
    expected = {
        "count": 3,
        "populated_bins": 2,
        "accuracy": accuracy,
        "mean_confidence": mean_confidence,
        "overconfidence": mean_confidence - accuracy,  # -0.05
        "ece": ece,
        "mce": f(2, 10),
        "mce_guarded": None,  # no bin holds 10 predictions
        "rmsce": math.sqrt(reliability),
        "brier": brier,
        "reliability": reliability,
        "resolution": resolution,
        "uncertainty": uncertainty,
        "within_bin_variance": variance,
        "within_bin_covariance": covariance,
        "log_loss": -(math.log(0.8) + math.log(0.5) + math.log(0.45)) / 3,
    }
    for name, value in expected.items():
        if value is None or isinstance(value, int):
            assert row[name] == value, name
        else:
            assert row[name] == pytest.approx(float(value), abs=1e-12), name

    stats = cf.bin_statistics(df).filter(pl.col("count") > 0)
    assert stats["bin"].to_list() == [5, 8]
    assert stats["count"].to_list() == [2, 1]
    assert stats["mean_confidence"].to_list() == pytest.approx([0.525, 0.8], abs=1e-12)
    assert stats["accuracy"].to_list() == [0.5, 1.0]
    assert stats["weight_correct"].to_list() == [1.0, 1.0]
    assert stats["weight_wrong"].to_list() == [1.0, 0.0]
    assert stats["sum_confidence_correct"].to_list() == [0.5, 0.8]
    # residuals |p - y|: B 0.5, C 0.55 (bin 5); A 0.2 (bin 8)
    assert stats["sum_residual_correct"].to_list() == pytest.approx([0.5, 0.2], abs=1e-12)
    assert stats["sum_residual_wrong"].to_list() == pytest.approx([0.55, 0.0], abs=1e-12)
    assert stats["sum_sq_residual_correct"].to_list() == pytest.approx([0.25, 0.04], abs=1e-12)
    assert stats["sum_sq_residual_wrong"].to_list() == pytest.approx([0.3025, 0.0], abs=1e-12)


# --------------------------------------------------------------------------------------
# Against the independent reference
# --------------------------------------------------------------------------------------

CASES = [
    # seed, rows, bins, closed, weighted, groups
    (1, 500, 10, "left", False, 0),
    (2, 800, 15, "right", False, 3),
    (3, 700, 7, "left", True, 0),
    (4, 1000, 20, "right", True, 4),
    (5, 300, 1, "left", True, 2),
    (6, 600, 49, "left", False, 2),
    (7, 50, 30, "right", True, 0),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_metrics_match_reference(case: tuple[int, int, int, str, bool, int]) -> None:
    seed, rows, n_bins, closed, weighted, groups = case
    df = random_predictions(seed, rows, n_bins, weighted=weighted, groups=groups)
    by = "g" if groups else None
    result = cf.calibration_metrics(
        df,
        by=by,
        bins=cf.Binning.uniform(n_bins, closed=closed),  # type: ignore[arg-type]
        weight="w" if weighted else None,
    )
    parts = df.partition_by("g", as_dict=True) if groups else {(None,): df}
    assert result.height == len(parts)
    for row in result.iter_rows(named=True):
        part = parts[(row["g"],)] if groups else df
        expected = reference_metrics(
            part["confidence"].to_numpy(),
            part["correct"].to_numpy(),
            part["w"].to_numpy() if weighted else None,
            n_bins=n_bins,
            closed=closed,
        )
        assert_close(row, expected, rel=1e-9, abs_=1e-12)
        assert decomposition_total(row) == pytest.approx(row["brier"], abs=1e-12)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bin_statistics_match_reference(case: tuple[int, int, int, str, bool, int]) -> None:
    seed, rows, n_bins, closed, weighted, groups = case
    df = random_predictions(seed, rows, n_bins, weighted=weighted, groups=groups)
    by = "g" if groups else None
    stats = cf.bin_statistics(
        df,
        by=by,
        bins=cf.Binning.uniform(n_bins, closed=closed),  # type: ignore[arg-type]
        weight="w" if weighted else None,
    )
    parts = df.partition_by("g", as_dict=True) if groups else {(None,): df}
    assert stats.height == n_bins * len(parts)
    edges = [k / n_bins for k in range(n_bins + 1)]
    for key, part in parts.items():
        table = stats.filter(pl.col("g") == key[0]) if groups else stats
        p = part["confidence"].to_numpy()
        y = part["correct"].to_numpy().astype(np.float64)
        w = part["w"].to_numpy() if weighted else np.ones_like(p)
        ref = reference_bins(p, y, w, n_bins, closed)
        unchecked = set(table.columns) - {"g", "bin", "bin_lower", "bin_upper", "closed"}
        unchecked -= {"count"}
        unchecked -= {*SUM_COLUMNS, "mean_confidence", "accuracy"}
        assert not unchecked, f"columns without a reference: {unchecked}"
        assert table["bin"].to_list() == list(range(n_bins))
        assert table["bin_lower"].to_list() == edges[:-1]
        assert table["bin_upper"].to_list() == edges[1:]
        assert table["closed"].to_list() == [closed] * n_bins
        assert table["count"].to_list() == ref["count"].tolist()
        for name in SUM_COLUMNS:
            assert table[name].to_list() == pytest.approx(ref[name], rel=1e-12, abs=1e-300), name
        populated = ref["weight"] > 0
        mean_confidence = np.where(
            populated, ref["sum_confidence"] / np.where(populated, ref["weight"], 1), 0
        )
        accuracy = np.where(
            populated, ref["sum_correct"] / np.where(populated, ref["weight"], 1), 0
        )
        # empty bins have null means (count 0 says why), never a fake 0.0
        for name in ("mean_confidence", "accuracy"):
            assert table[name].is_null().to_list() == (~populated).tolist(), name
        assert table["mean_confidence"].fill_null(0.0).to_list() == pytest.approx(
            mean_confidence, rel=1e-12, abs=0
        )
        assert table["accuracy"].fill_null(0.0).to_list() == pytest.approx(
            accuracy, rel=1e-12, abs=0
        )


def test_edge_values_land_by_closedness() -> None:
    # every exact edge k/M for M = 1..60, both closednesses
    for n_bins in range(1, 61):
        p = np.array([k / n_bins for k in range(n_bins + 1)])
        df = pl.DataFrame({"confidence": p, "correct": np.ones(p.size, dtype=bool)})
        for closed in ("left", "right"):
            stats = cf.bin_statistics(df, bins=cf.Binning.uniform(n_bins, closed=closed))  # type: ignore[arg-type]
            expected = np.ones(n_bins, dtype=np.int64)
            if closed == "left":
                expected[-1] = 2  # [k/M, (k+1)/M) and 1.0 in the last bin
            else:
                expected[0] = 2  # (k/M, (k+1)/M] and 0.0 in the first bin
            assert stats["count"].to_list() == expected.tolist(), (n_bins, closed)
            counts = np.bincount(exact_bin_index(p, n_bins, closed), minlength=n_bins)
            assert counts.tolist() == expected.tolist()


def test_custom_edges_match_reference() -> None:
    rng = np.random.default_rng(11)
    edges = [0.0, 0.05, 0.3, 0.31, 0.7, 1.0]
    p = np.concatenate([rng.random(400), np.array(edges)])
    y = rng.random(p.size) < p
    w = rng.exponential(size=p.size)
    df = pl.DataFrame({"confidence": p, "correct": y, "w": w})
    row = cf.calibration_metrics(df, bins=edges, weight="w").row(0, named=True)
    # reference: left-closed bins between the given edges, last one closed at 1.0
    idx = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, len(edges) - 2)
    big_w = np.bincount(idx, weights=w, minlength=5)
    big_s = np.bincount(idx, weights=w * p, minlength=5)
    big_y = np.bincount(idx, weights=w * y, minlength=5)
    n = w.sum()
    gap = np.abs(big_s - big_y) / big_w
    assert row["ece"] == pytest.approx(float((big_w * gap).sum() / n), rel=1e-9, abs=1e-12)
    assert row["mce"] == pytest.approx(float(gap.max()), rel=1e-9, abs=1e-12)
    assert row["populated_bins"] == 5
    assert decomposition_total(row) == pytest.approx(row["brier"], abs=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_scalar_metrics_match_reference_with_weights(weighted: bool) -> None:
    rng = np.random.default_rng(21)
    p = rng.beta(5, 2, 2000)
    y = rng.random(2000) < p - 0.1
    w = rng.integers(1, 5, 2000).astype(np.float64) if weighted else None
    columns: dict[str, Any] = {"confidence": p, "correct": y}
    if w is not None:
        columns["w"] = w
    df = pl.DataFrame(columns)
    row = cf.calibration_metrics(df, bins=15, weight="w" if weighted else None).row(0, named=True)
    expected = reference_metrics(p, y, w, n_bins=15)
    for name in ("ece", "rmsce", "mce", "log_loss", "accuracy", "brier"):
        assert row[name] == pytest.approx(expected[name], rel=1e-10, abs=1e-12), name
    # the data are overconfident by construction
    assert row["overconfidence"] > 0.05


def test_brier_matches_scikit_learn() -> None:
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    p = rng.random(1000)
    y = rng.random(1000) < p
    w = rng.exponential(size=1000)
    df = pl.DataFrame({"confidence": p, "correct": y, "w": w})
    row = cf.calibration_metrics(df, weight="w").row(0, named=True)
    brier = sklearn_metrics.brier_score_loss(y, p, sample_weight=w)
    log_loss = sklearn_metrics.log_loss(y, p, sample_weight=w)
    assert row["brier"] == pytest.approx(brier, rel=1e-12, abs=0)
    assert row["log_loss"] == pytest.approx(log_loss, rel=1e-9, abs=0)


def test_zero_weight_row_with_infinite_loss_contributes_nothing() -> None:
    # A weight-0 row is no data (integer weight k == k copies, k = 0 == removed), even
    # when its own loss is infinite (confidence 1.0, wrong). 0 * inf must not give NaN.
    df = pl.DataFrame(
        {"confidence": [1.0, 0.5, 0.0], "correct": [False, True, True], "w": [0.0, 1.0, 0.0]}
    )
    row = cf.calibration_metrics(df, weight="w").row(0, named=True)
    assert row["log_loss"] == pytest.approx(math.log(2.0), abs=1e-12)
    stats = cf.bin_statistics(df, weight="w")
    assert stats["sum_log_loss"].to_list() == pytest.approx(
        [0.0] * 5 + [math.log(2.0)] + [0.0] * 4, abs=1e-12
    )


def test_infinite_log_loss_is_not_clipped() -> None:
    df = pl.DataFrame({"confidence": [1.0, 0.5], "correct": [False, True]})
    assert cf.calibration_metrics(df)["log_loss"].item() == math.inf


# --------------------------------------------------------------------------------------
# Empty input
# --------------------------------------------------------------------------------------


def empty_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "confidence": pl.Series([], dtype=pl.Float64),
            "correct": pl.Series([], dtype=pl.Boolean),
            "w": pl.Series([], dtype=pl.Float64),
            "g": pl.Series([], dtype=pl.String),
        }
    )


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("weight", [None, "w"])
def test_empty_whole_frame(lazy: bool, weight: str | None) -> None:
    frame: pl.DataFrame | pl.LazyFrame = empty_frame().lazy() if lazy else empty_frame()
    metrics = cf.calibration_metrics(frame, weight=weight)
    metrics = metrics.collect() if isinstance(metrics, pl.LazyFrame) else metrics
    assert metrics.height == 1
    row = metrics.row(0, named=True)
    # no weight, no number: every metric is null (issue 29.3), never 0.0 or NaN
    for name in METRICS:
        if name not in ("count", "weight", "populated_bins"):
            assert row[name] is None, name
    assert row["populated_bins"] == 0
    assert row["count"] == 0
    assert row["weight"] == 0.0

    stats = cf.bin_statistics(frame, bins=7, weight=weight)
    stats = stats.collect() if isinstance(stats, pl.LazyFrame) else stats
    assert stats["bin"].to_list() == list(range(7))
    assert stats["bin_lower"].to_list() == [k / 7 for k in range(7)]
    assert stats["bin_upper"].to_list() == [k / 7 for k in range(1, 8)]
    assert stats["count"].to_list() == [0] * 7
    for name in SUM_COLUMNS:
        assert stats[name].to_list() == [0.0] * 7, name
    for name in ("mean_confidence", "accuracy"):
        assert stats[name].to_list() == [None] * 7, name


@pytest.mark.parametrize("by", ["g", ["g", "w"]])
def test_empty_grouped_frame_gives_no_rows(by: str | list[str]) -> None:
    df = empty_frame()
    assert cf.calibration_metrics(df, by=by).height == 0
    assert cf.bin_statistics(df, by=by).height == 0
    assert cf.reliability_table(df, by=by).height == 0
    assert cf.calibration_metrics(df.lazy(), by=by).collect().height == 0


def test_empty_arrays_report() -> None:
    report = cf.CalibrationReport.from_predictions(np.array([]), np.array([], dtype=bool), 5)
    assert all(math.isnan(v) for v in (report.ece, report.mce, report.rmsce, report.brier))
    assert report.mce_guarded is None
    assert report.populated_bins == 0
    assert report.reliability[2].tolist() == [0] * 5
    assert report.reliability[0].tolist() == [0.0] * 5
    assert report.reliability[1].tolist() == [0.0] * 5


# --------------------------------------------------------------------------------------
# Accumulation accuracy
# --------------------------------------------------------------------------------------


def exact_mean(values: FloatArray) -> float:
    """Correctly rounded mean of the float64 values (math.fsum)."""
    return math.fsum(values.tolist()) / values.size


@pytest.mark.slow
def test_near_certain_predictions_keep_their_precision() -> None:
    # 10**7 predictions with p = 1 - 1e-6·u, all in the last bin; ten of them wrong,
    # so the Brier score is about 10 / 1e7 = 1e-6 and everything else is tiny.
    rows = 10**7
    rng = np.random.default_rng(2024)
    d = 1e-6 * rng.random(rows)
    p = 1.0 - d
    d = 1.0 - p  # exact (Sterbenz): the distance of each stored p from 1
    y = np.ones(rows, dtype=bool)
    y[rng.choice(rows, 10, replace=False)] = False
    stats = cf.bin_statistics(pl.DataFrame({"confidence": p, "correct": y}))
    row = cf.metrics_from_bin_statistics(stats).row(0, named=True)
    assert row["populated_bins"] == 1

    # Exactly rounded references (one bin, so p̄_b and ȳ_b are the overall means).
    error = p - y  # exact: Sterbenz for y = 1, trivially for y = 0
    brier = exact_mean(error * error)
    gap = exact_mean(error)  # p̄ − ȳ: each p − y is exact
    del error
    accuracy = (rows - 10) / rows
    d_bar = exact_mean(d)
    deviation = d_bar - d  # p − p̄, computed in the small scale of d
    variance = exact_mean(deviation * deviation)
    covariance = -2 * exact_mean(deviation * (y - accuracy))
    del deviation
    assert 5e-7 < brier < 2e-6
    assert abs(row["brier"] - brier) / brier < 1e-9
    assert abs(row["ece"] - abs(gap)) / abs(gap) < 1e-9
    assert row["mce"] == pytest.approx(row["ece"], rel=1e-12, abs=0)
    assert row["overconfidence"] == pytest.approx(gap, rel=1e-9, abs=0)
    assert row["reliability"] == pytest.approx(gap * gap, rel=1e-9, abs=0)
    assert row["resolution"] == pytest.approx(0.0, abs=1e-300)
    assert row["uncertainty"] == pytest.approx(accuracy * (1 - accuracy), rel=1e-12, abs=0)
    # the within-bin terms are accurate relative to the Brier score's scale
    assert row["within_bin_variance"] == pytest.approx(variance, abs=1e-9 * brier)
    assert row["within_bin_covariance"] == pytest.approx(covariance, abs=1e-9 * brier)
    assert decomposition_total(row) == pytest.approx(row["brier"], abs=1e-12)
    assert decomposition_total(row) == pytest.approx(row["brier"], rel=1e-9, abs=0)

    # Why the table does not store Σp, Σp², Σpy: the textbook Brier sum
    # Σp² − 2Σpy + Σy is three sums of about 1e7 that differ by about 10, and loses
    # most of its digits; the stored residual sums do not.
    naive = (np.sum(p * p) - 2 * np.sum(p * y) + np.sum(y)) / rows
    naive_error = abs(naive - brier) / brier
    ours = abs(row["brier"] - brier) / brier
    assert naive_error > 100 * max(ours, 1e-15)


def test_log_loss_of_tiny_probabilities_keeps_its_precision() -> None:
    # Rare events predicted with probability p ~ 1e-10 that did not happen: each row's
    # loss is -ln(1 - p) ≈ p + p²/2. Computed as -log1p(-p) it is exact to rounding;
    # ln(fl(1 - p)) keeps only about 6 of its digits (fl(1 - p) is off by up to 1e-16).
    for p in (1.2345e-10, 3.3e-10, 7.77e-11):
        df = pl.DataFrame({"confidence": [p] * 10, "correct": [False] * 10})
        expected = p + p * p / 2  # Taylor series; the next term p³/3 is below 1e-30
        assert -math.log1p(-p) == pytest.approx(expected, rel=1e-15, abs=0)
        got = cf.calibration_metrics(df)["log_loss"].item()
        assert got == pytest.approx(expected, rel=1e-12, abs=0), p


def test_mean_confidence_of_tiny_probabilities_keeps_its_precision() -> None:
    # Events predicted with p ~ 1e-10 that did happen: the mean confidence is Σp/N and
    # must not be derived as (Σ1 − Σ(1 − p))/N, which cancels to noise.
    rng = np.random.default_rng(4)
    p = 1e-10 * (1.0 + rng.random(1000))
    df = pl.DataFrame({"confidence": p, "correct": np.ones(p.size, dtype=bool)})
    row = cf.calibration_metrics(df).row(0, named=True)
    assert row["mean_confidence"] == pytest.approx(exact_mean(p), rel=1e-12, abs=0)
    assert row["ece"] == pytest.approx(1.0 - exact_mean(p), rel=1e-12, abs=0)
    stats = cf.bin_statistics(df).filter(pl.col("count") > 0)
    assert stats["mean_confidence"].item() == pytest.approx(exact_mean(p), rel=1e-12, abs=0)


# --------------------------------------------------------------------------------------
# Scanned files (lazy in, lazy out for every function: tests/test_common.py)
# --------------------------------------------------------------------------------------


def small_frame() -> pl.DataFrame:
    return random_predictions(31, 200, 10, weighted=True, groups=3)


def test_scan_parquet_gives_the_same_numbers(tmp_path: Path) -> None:
    df = small_frame()
    path = tmp_path / "predictions.parquet"
    df.write_parquet(path)
    scanned = pl.scan_parquet(path)
    metrics = cf.calibration_metrics(scanned, by="g", weight="w", bins=12)
    stats = cf.bin_statistics(scanned, by="g", weight="w", bins=12)
    assert isinstance(metrics, pl.LazyFrame)
    assert_frames_close(metrics.collect(), cf.calibration_metrics(df, by="g", weight="w", bins=12))
    assert_frames_close(stats.collect(), cf.bin_statistics(df, by="g", weight="w", bins=12))


# --------------------------------------------------------------------------------------
# Grouping
# --------------------------------------------------------------------------------------


def test_grouping_by_several_keys_with_nulls() -> None:
    rng = np.random.default_rng(8)
    n = 600
    model = rng.choice(["m2", "m1"], n)
    task = rng.choice(np.array(["t2", "t1", "null"]), n)
    p = rng.random(n)
    y = rng.random(n) < p
    df = pl.DataFrame({"model": model, "task": task, "confidence": p, "correct": y}).with_columns(
        task=pl.when(pl.col("task") != "null").then(pl.col("task"))
    )
    result = cf.calibration_metrics(df, by=["model", "task"])
    # sorted by keys, the null task forms its own group (placed last)
    assert result.select("model", "task").rows() == [
        ("m1", "t1"),
        ("m1", "t2"),
        ("m1", None),
        ("m2", "t1"),
        ("m2", "t2"),
        ("m2", None),
    ]
    for row in result.iter_rows(named=True):
        mask = (model == row["model"]) & (
            task == (row["task"] if row["task"] is not None else "null")
        )
        expected = reference_metrics(p[mask], y[mask])
        assert_close(row, expected, rel=1e-9, abs_=1e-12)

    stats = cf.bin_statistics(df, by=["model", "task"])
    assert stats.height == 6 * 10
    assert stats.select("model", "task", "bin").rows() == sorted(
        stats.select("model", "task", "bin").rows(),
        key=lambda r: (r[0], r[1] is None, r[1] or "", r[2]),
    )
    assert int(stats["count"].sum()) == n


def test_integer_group_keys_sorted() -> None:
    df = pl.DataFrame(
        {"k": [3, 1, 2, 1, 3], "confidence": [0.1, 0.2, 0.3, 0.4, 0.5], "correct": [1, 0, 1, 1, 0]}
    )
    result = cf.calibration_metrics(df, by="k")
    assert result["k"].to_list() == [1, 2, 3]
    assert result["count"].to_list() == [2, 1, 2]
    # group k=1: 0.2 wrong, 0.4 right -> brier (0.04 + 0.36)/2 = 0.2
    assert result["brier"][0] == pytest.approx(0.2, abs=1e-12)
