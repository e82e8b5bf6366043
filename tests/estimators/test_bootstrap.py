"""Bootstrap intervals: bin-level resampling vs the exact row-level bootstrap, coverage on
simulated data of known truth, and bad inputs."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from factories import prediction_rows

import calib_frames as cf
from calib_frames.estimators.bootstrap import (
    CI_METRICS,
    REPLICATE,
    bootstrap_bin_statistics,
    calibration_intervals,
    intervals_from_bin_statistics,
)
from calib_frames.exceptions import ArgumentError, DataError, TableError


def simulated(groups: int, rows: int, seed: int, power: float = 1.3) -> pl.DataFrame:
    """Confidences ~ Beta(5, 2), outcomes ~ Bernoulli(p**power) (overconfident)."""
    drawn = prediction_rows(seed, groups * rows, beta=(5, 2), power=power)
    return drawn.select(g=np.repeat(np.arange(groups), rows), confidence="confidence",
                        correct="correct")  # fmt: skip


@pytest.fixture(scope="module")
def both() -> tuple[pl.DataFrame, pl.DataFrame]:
    df = simulated(12, 1500, seed=0)
    bins = calibration_intervals(df, by="g", replicates=300, seed=1)
    rows = calibration_intervals(df, by="g", replicates=300, seed=2, resample="rows")
    return bins, rows


@pytest.mark.parametrize("metric", CI_METRICS)
def test_bin_level_matches_row_level_bootstrap(
    both: tuple[pl.DataFrame, pl.DataFrame], metric: str
) -> None:
    bins, rows = both
    low, high = f"{metric}_ci_low", f"{metric}_ci_high"
    width_bins = (bins[high] - bins[low]).to_numpy()
    width_rows = (rows[high] - rows[low]).to_numpy()
    if metric == "uncertainty":  # ȳ(1 − ȳ) near its maximum: tiny, noisy widths
        width_rows = np.maximum(width_rows, 1e-12)
    ratio = width_bins / width_rows
    # 12 groups × 300 replicates: the Monte-Carlo error of the mean ratio is ~3%
    assert 0.88 < ratio.mean() < 1.12, (metric, ratio)
    centre = (bins[high] + bins[low] - rows[high] - rows[low]).to_numpy() / 2
    assert np.abs(centre / width_rows).mean() < 0.15, metric


def test_coverage_on_known_truth() -> None:
    datasets, n, power, level = 400, 200, 2.0, 0.9
    df = simulated(datasets, n, seed=7, power=power)
    ci = calibration_intervals(df, by="g", replicates=200, level=level, seed=3)
    # population values under p ~ Beta(5, 2), y ~ Bernoulli(p²), by fine quadrature
    grid = (np.arange(200_000) + 0.5) / 200_000
    density = grid**4 * (1 - grid)
    density /= density.sum()
    truth = {
        "accuracy": (density * grid**power).sum(),
        "brier": (density * (grid**2 - 2 * grid**3 + grid**power)).sum(),
        "ece": np.abs(
            np.bincount(np.minimum((grid * 10).astype(int), 9), weights=density * (grid - grid**2))
        ).sum(),
    }
    for metric, true in truth.items():
        value = float(true)
        covered = (ci[f"{metric}_ci_low"] <= value) & (value <= ci[f"{metric}_ci_high"])
        # binomial sd of the coverage over 400 datasets is 1.5%; allow 4 sd
        assert abs(covered.mean() - level) < 0.06, (metric, covered.mean())  # type: ignore[operator]


def test_replicate_table_is_a_bin_statistics_table() -> None:
    df = simulated(3, 200, seed=1)
    stats = cf.bin_statistics(df, by="g")
    boot = bootstrap_bin_statistics(stats, replicates=5, seed=4)
    assert boot.columns == ["g", REPLICATE, *stats.columns[1:]]
    assert boot.height == 3 * 5 * 10
    per = boot.group_by("g", REPLICATE).agg(pl.col("count").sum(), pl.col("weight").sum())
    assert (per["count"] == 200).all() and (per["weight"] - 200).abs().max() < 1e-9  # type: ignore[operator]
    # bin bounds unchanged, class sums consistent, residual means inside the bin
    assert (
        boot.filter(pl.col(REPLICATE) == 0)
        .select(stats.columns[1:4])
        .equals(stats.select(stats.columns[1:4]))
    )
    correct = boot.filter(pl.col("weight_correct") > 0)
    mean_p = 1 - correct["sum_residual_correct"] / correct["weight_correct"]
    assert ((mean_p >= correct["bin_lower"] - 1e-12) & (mean_p <= correct["bin_upper"])).all()
    np.testing.assert_allclose(
        correct["sum_confidence_correct"] + correct["sum_residual_correct"],
        correct["weight_correct"],
    )
    metrics = cf.metrics_from_bin_statistics(boot)
    assert metrics.height == 15 and metrics.columns[:2] == ["g", REPLICATE]


def test_seeded_and_reproducible_lazy_in_lazy_out() -> None:
    df = simulated(4, 300, seed=2)
    first = calibration_intervals(df, by="g", replicates=50, seed=11)
    again = calibration_intervals(df.lazy(), by="g", replicates=50, seed=11)
    assert isinstance(again, pl.LazyFrame)
    # the same draws; the bin sums may differ in the last bit (polars' summation order)
    np.testing.assert_allclose(first.to_numpy(), again.collect().to_numpy(), rtol=1e-9)
    other = calibration_intervals(df, by="g", replicates=50, seed=12)
    assert np.abs(first.to_numpy() - other.to_numpy()).max() > 1e-4
    assert first.columns == ["g", *[f"{m}_ci_{s}" for m in CI_METRICS for s in ("low", "high")]]


def test_intervals_contain_the_estimate_and_order() -> None:
    df = simulated(5, 800, seed=3)
    ci = calibration_intervals(df, by="g", replicates=200, seed=0)
    point = cf.calibration_metrics(df, by="g")
    for metric in ("accuracy", "brier", "ece", "mean_confidence"):
        low, high = ci[f"{metric}_ci_low"], ci[f"{metric}_ci_high"]
        assert (low <= high).all()
        assert ((low <= point[metric]) & (point[metric] <= high)).all(), metric


def test_weighted_matches_repeated_rows() -> None:
    # integer weights = repeated rows (bins mode apportions rows by weight: exact here)
    df = pl.DataFrame(
        {"confidence": [0.9, 0.8, 0.3, 0.95, 0.6], "correct": [1, 1, 0, 0, 1], "w": [1.0] * 5}
    )
    plain = calibration_intervals(df, replicates=100, seed=5)
    weighted = calibration_intervals(df, weight="w", replicates=100, seed=5)
    np.testing.assert_allclose(plain.to_numpy(), weighted.to_numpy())


def test_degenerate_groups() -> None:
    df = pl.DataFrame(
        {
            "g": ["one", "same", "same", "same", "right", "right"],
            "confidence": [0.7, 0.6, 0.6, 0.6, 0.9, 0.95],
            "correct": [True, True, False, True, True, True],
        }
    )
    ci = calibration_intervals(df, by="g", replicates=100)
    point = cf.calibration_metrics(df, by="g")
    one = ci.filter(pl.col("g") == "one")
    # a single prediction: every replicate is that prediction
    assert one["brier_ci_low"].item() == pytest.approx(
        point.filter(pl.col("g") == "one")["brier"].item()
    )
    assert one["brier_ci_low"].item() == pytest.approx(one["brier_ci_high"].item())
    # and its ECE interval (a test inversion) cannot exclude a calibrated model
    assert one["ece_ci_low"].item() == 0.0
    assert one["ece_ci_high"].item() >= 0.3  # its ECE, |0.7 − 1|
    right = ci.filter(pl.col("g") == "right")  # a single class: accuracy is always 1
    assert right["accuracy_ci_low"].item() == right["accuracy_ci_high"].item() == 1.0
    same = ci.filter(pl.col("g") == "same")  # all-equal confidences
    assert same["mean_confidence_ci_low"].item() == pytest.approx(0.6)
    assert same["accuracy_ci_low"].item() < same["accuracy_ci_high"].item()
    empty = calibration_intervals(df.clear(), by="g", replicates=10)
    assert empty.height == 0
    whole = calibration_intervals(df.clear(), replicates=10)
    assert whole.height == 1


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"replicates": 0}, ArgumentError),
        ({"replicates": -3}, ArgumentError),
        ({"replicates": 2.5}, ArgumentError),
        ({"level": 0.0}, ArgumentError),
        ({"level": 1.0}, ArgumentError),
        ({"level": 95}, ArgumentError),
        ({"seed": -1}, ArgumentError),
        ({"resample": "cells"}, ArgumentError),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], error: type[Exception]) -> None:
    df = simulated(1, 10, seed=0)
    with pytest.raises(error):
        calibration_intervals(df, **kwargs)  # type: ignore[arg-type]


def test_bad_tables_and_rows() -> None:
    with pytest.raises(TableError, match="bin-statistics"):
        intervals_from_bin_statistics(pl.DataFrame({"bin": [0]}))
    clash = simulated(1, 10, seed=0).with_columns(replicate=pl.lit(1))
    with pytest.raises(TableError, match="replicate"):
        calibration_intervals(clash, by="replicate")
    with pytest.raises(TableError, match="replicate"):
        calibration_intervals(clash, resample="rows")
    bad = pl.DataFrame({"confidence": [0.5, 1.5], "correct": [1, 0]})
    with pytest.raises(cf.CalibFramesError):
        calibration_intervals(bad, replicates=5)
    stats = cf.bin_statistics(simulated(2, 50, seed=0), by="g")
    ragged = stats.filter(~((pl.col("g") == 0) & (pl.col("bin") == 3)))
    with pytest.raises(TableError, match="numbers of bins"):
        intervals_from_bin_statistics(ragged, replicates=5)


# ---- weights are frequencies ------------------------------------------------------


def test_count_weighted_rows_resample_as_the_rows_they_stand_for() -> None:
    """Identical rows merged into one row weighted by their count: the same intervals as
    the rows themselves, up to resampling noise (issue 29.8: they were 1.8× apart)."""
    rng = np.random.default_rng(8)
    p = rng.choice(np.linspace(0.5, 0.98, 12), (20, 600))
    y = rng.random(p.shape) < p - 0.05
    rows = pl.DataFrame({"g": np.repeat(np.arange(20), 600), "confidence": p.ravel(),
                         "correct": y.ravel()})  # fmt: skip
    merged = rows.group_by("g", "confidence", "correct").agg(w=pl.len().cast(pl.Float64))
    assert merged.height < rows.height / 10
    plain = calibration_intervals(rows, by="g", replicates=400, seed=1)
    weighted = calibration_intervals(merged, by="g", weight="w", replicates=400, seed=2)
    for metric in ("accuracy", "brier", "mce", "ece"):
        width = {
            name: (t[f"{metric}_ci_high"] - t[f"{metric}_ci_low"]).to_numpy()
            for name, t in (("rows", plain), ("weighted", weighted))
        }
        ratio = (width["weighted"] / width["rows"]).mean()
        assert 0.93 < ratio < 1.07, (metric, ratio)  # 20 groups × 400 replicates: ~2% noise
    # the row-level reference repeats a row of weight k k times: the same bootstrap
    exact = calibration_intervals(merged.filter(pl.col("g") < 4), by="g", weight="w",
                                  replicates=300, seed=3, resample="rows")  # fmt: skip
    ratio = ((exact["brier_ci_high"] - exact["brier_ci_low"])
             / (plain["brier_ci_high"] - plain["brier_ci_low"]).head(4)).mean()  # fmt: skip
    assert 0.85 < ratio < 1.15, ratio
    with pytest.raises(DataError, match="whole numbers"):
        calibration_intervals(merged.with_columns(pl.col("w") / 3), weight="w", replicates=5,
                              resample="rows")  # fmt: skip


def test_a_total_weight_past_2_to_the_53_is_refused_by_name() -> None:
    """A weight of 1e30 reached numpy's multinomial as a negative count (ValueError: n < 0)."""
    df = pl.DataFrame(
        {"g": ["a", "a", "b"], "confidence": [0.9, 0.8, 0.7], "correct": [True, False, True],
         "w": [1e30, 1.0, 2.0]}
    )  # fmt: skip
    with pytest.raises(DataError, match=r"1 of 2 group\(s\) weigh more than 2\*\*53.*'g': 'a'"):
        calibration_intervals(df, by="g", weight="w", replicates=20)
    fine = calibration_intervals(df.filter(pl.col("g") == "b"), by="g", weight="w", replicates=20)
    assert fine["brier_ci_low"].is_not_null().all()
