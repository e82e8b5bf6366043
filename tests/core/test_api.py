"""Public API: the polars namespace, comparison_table, CalibrationReport, __all__, and the
shipped synthetic predictions whose calibration is known by construction."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from types import ModuleType

import numpy as np
import polars as pl
import pytest
from factories import DATA, ROOT, exact_bin_index, prediction_rows
from polars.testing import assert_frame_equal

import calib_frames as cf

# Test-only reference libraries: a missing one skips this module, it does not break collection.
brier_score_loss = pytest.importorskip("sklearn.metrics").brier_score_loss
log_loss = pytest.importorskip("sklearn.metrics").log_loss

PREDICTIONS = DATA / "synthetic_predictions.parquet"
MODELS = ["calibrated", "overconfident", "underconfident"]
TASKS = ["arithmetic", "code", "reading", "trivia"]


def load_generator() -> ModuleType:
    """data/make_synthetic.py as a module (for its documented ground truth)."""
    spec = importlib.util.spec_from_file_location("make_synthetic", DATA / "make_synthetic.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def small_predictions() -> pl.DataFrame:
    return prediction_rows(3, 600, models=("a", "b", "c"), tasks=("x", "y"), weight=(0.5, 2.0))


# -- comparison_table ---------------------------------------------------------------------


def test_comparison_table_full_join_on_shared_key() -> None:
    predictions = pl.DataFrame(
        {
            "model": ["a", "a", "a", "b", "b"],
            "task": ["x", "x", "y", "x", "y"],
            "confidence": [0.9, 0.6, 0.7, 0.8, 0.3],
            "correct": [1, 0, 1, 1, 0],
        }
    )
    tokens = pl.DataFrame({"model": ["b", "c"], "nll": [6.0, 2.0], "tokens": [3, 4]})
    calibration = cf.calibration_metrics(predictions, by=["model", "task"])
    ppl = cf.perplexity(tokens, by="model", tokens="tokens")
    table = cf.comparison_table(calibration, ppl)

    # keys first, then calibration metrics, then perplexity columns
    assert table.columns[:2] == ["model", "task"]
    # the perplexity table's row count is renamed: ``count`` is the predictions'
    assert set(table.columns) == set(calibration.columns) | set(
        ppl.rename({"count": "nll_count"}).columns
    )
    keys = table.select("model", "task").rows()
    assert sorted(keys, key=repr) == sorted(
        [("a", "x"), ("a", "y"), ("b", "x"), ("b", "y"), ("c", None)], key=repr
    )
    rows = {(r["model"], r["task"]): r for r in table.iter_rows(named=True)}
    # model 'a': calibration only, perplexity columns null
    assert rows["a", "x"]["count"] == 2
    assert rows["a", "x"]["perplexity"] is None
    assert rows["a", "x"]["tokens"] is None
    # model 'b': both; the perplexity row repeats on each of its tasks
    for task in ("x", "y"):
        assert rows["b", task]["count"] == 1
        assert rows["b", task]["tokens"] == 3
        assert rows["b", task]["perplexity"] == pytest.approx(math.exp(2.0), rel=1e-15, abs=0)
    assert rows["b", "x"]["accuracy"] == 1.0
    assert rows["b", "y"]["accuracy"] == 0.0
    # model 'c': perplexity only, calibration columns null
    assert rows["c", None]["count"] is None
    assert rows["c", None]["ece"] is None
    assert rows["c", None]["perplexity"] == pytest.approx(math.exp(0.5), rel=1e-15, abs=0)
    # each side's values are carried unchanged
    joined_calibration = table.filter(pl.col("count").is_not_null()).select(calibration.columns)
    assert_frame_equal(joined_calibration.sort("model", "task"), calibration.sort("model", "task"))


def test_comparison_table_without_shared_key_raises() -> None:
    calibration = cf.calibration_metrics(small_predictions(), by="model")
    ppl = cf.perplexity(pl.DataFrame({"run": ["r1"], "nll": [1.0]}), by="run")
    with pytest.raises(cf.CalibrationInputError, match="share no group key"):
        cf.comparison_table(calibration, ppl)


def test_comparison_table_on_synthetic_files() -> None:
    calibration = cf.calibration_metrics(pl.scan_parquet(PREDICTIONS), by=["model", "task"])
    ppl = cf.perplexity(
        pl.scan_parquet(DATA / "synthetic_tokens.parquet"), by="model", tokens="tokens"
    )
    table = cf.comparison_table(calibration, ppl).collect()
    assert table.height == 12
    assert table["perplexity"].null_count() == 0
    per_model = ppl.collect()
    for row in table.iter_rows(named=True):
        expected = per_model.filter(pl.col("model") == row["model"])["perplexity"].item()
        assert row["perplexity"] == expected


# -- CalibrationReport --------------------------------------------------------------------


@pytest.mark.parametrize("m", [10, 15, 7])
def test_calibration_report_against_frame_api_and_references(m: int) -> None:
    rng = np.random.default_rng(m)
    p = rng.beta(2, 2, size=2_000)
    y = rng.uniform(size=2_000) < p**1.3
    report = cf.CalibrationReport.from_predictions(p, y, m)
    frame = pl.DataFrame({"confidence": p, "correct": y})
    metrics = cf.calibration_metrics(frame, bins=m).row(0, named=True)
    stats = cf.bin_statistics(frame, bins=m)

    # the same engine on the same rows; float sums may be ordered differently (threads)
    for name in ("ece", "rmsce", "mce", "brier", "log_loss", "accuracy", "mean_confidence"):
        assert getattr(report, name) == pytest.approx(metrics[name], rel=1e-14, abs=0), name
    assert report.populated_bins == metrics["populated_bins"]
    for name in (
        "reliability",
        "resolution",
        "uncertainty",
        "within_bin_variance",
        "within_bin_covariance",
    ):
        assert getattr(report.decomposition, name) == pytest.approx(
            metrics[name], rel=1e-12, abs=1e-17
        ), name
    assert report.decomposition.total == pytest.approx(report.brier, rel=1e-12, abs=0)

    # independent references
    assert report.brier == pytest.approx(brier_score_loss(y, p), rel=1e-12, abs=0)
    assert report.log_loss == pytest.approx(log_loss(y, p), rel=1e-12, abs=0)
    index = exact_bin_index(p, m)
    counts = np.bincount(index, minlength=m)
    sum_p = np.bincount(index, weights=p, minlength=m)
    sum_y = np.bincount(index, weights=y.astype(float), minlength=m)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = np.where(counts > 0, sum_p / counts, 0.0)
        acc = np.where(counts > 0, sum_y / counts, 0.0)
    assert report.ece == pytest.approx(np.sum(np.abs(sum_p - sum_y)) / p.size, rel=1e-12, abs=0)
    assert report.mce == pytest.approx(np.max(np.abs(mean_p - acc)[counts > 0]), rel=1e-12, abs=0)

    mean_confidence, accuracy, count = report.reliability
    assert len(mean_confidence) == len(accuracy) == len(count) == m
    np.testing.assert_array_equal(count, counts)
    np.testing.assert_allclose(mean_confidence, mean_p, rtol=1e-12)
    np.testing.assert_allclose(accuracy, acc, rtol=1e-12)
    np.testing.assert_allclose(mean_confidence, stats["mean_confidence"], rtol=1e-14)
    assert report.bin_edges is not None
    assert report.bin_edges.tolist() == [k / m for k in range(m + 1)]


def test_calibration_report_reliability_is_zero_filled() -> None:
    # 0.05 and 0.95 only: bins 0 and 9 of 10 populated
    report = cf.CalibrationReport.from_predictions(
        [0.05, 0.05, 0.95, 0.95], [True, False, True, True]
    )
    mean_confidence, accuracy, count = report.reliability
    assert count.tolist() == [2, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    np.testing.assert_allclose(mean_confidence, [0.05, 0, 0, 0, 0, 0, 0, 0, 0, 0.95], rtol=1e-15)
    assert accuracy.tolist() == [0.5, 0, 0, 0, 0, 0, 0, 0, 0, 1.0]
    assert report.populated_bins == 2
    # by hand: ECE = (2·|0.05 − 0.5| + 2·|0.95 − 1|) / 4 = 0.25, MCE = 0.45
    assert report.ece == pytest.approx(0.25, rel=1e-15, abs=0)
    assert report.mce == pytest.approx(0.45, rel=1e-15, abs=0)
    # Brier = (0.05² + 0.95² + 2·0.05²) / 4
    assert report.brier == pytest.approx((3 * 0.05**2 + 0.95**2) / 4, rel=1e-15, abs=0)


@pytest.mark.parametrize("p", [1e-10, 0.003, 0.5, 1 - 1e-9])
def test_reliability_mean_confidence_of_identical_values(p: float) -> None:
    """The mean confidence of a bin whose rows all say p is p (to a few ulp), whatever the
    outcomes: low-confidence bins of rare-event forecasts keep their relative precision."""
    correct = [True, False, True, True, True, False, True, True]
    report = cf.CalibrationReport.from_predictions([p] * 8, correct)
    mean_confidence, accuracy, count = report.reliability
    populated = count > 0
    assert count[populated].tolist() == [8]
    assert mean_confidence[populated][0] == pytest.approx(p, rel=1e-14, abs=0)
    assert accuracy[populated][0] == 0.75
    assert report.mean_confidence == pytest.approx(p, rel=1e-14, abs=0)
    # by hand: ECE = MCE = |p - 0.75|; Brier = (6·(1 - p)² + 2·p²) / 8
    assert report.ece == pytest.approx(abs(p - 0.75), rel=1e-14, abs=0)
    assert report.mce == pytest.approx(abs(p - 0.75), rel=1e-14, abs=0)
    assert report.brier == pytest.approx((6 * (1 - p) ** 2 + 2 * p**2) / 8, rel=1e-14, abs=0)


def test_calibration_report_empty() -> None:
    report = cf.CalibrationReport.from_predictions(np.array([]), np.array([], dtype=bool), 5)
    # no weight, no number: NaN in the array API (the frame API's null)
    assert all(math.isnan(v) for v in (report.ece, report.mce, report.brier, report.accuracy))
    assert report.populated_bins == 0
    for array in report.reliability:
        assert array.tolist() == [0, 0, 0, 0, 0]


def test_calibration_report_with_weights_equals_repeated_rows() -> None:
    p = np.array([0.1, 0.35, 0.62, 0.9, 0.97])
    y = np.array([0, 1, 1, 0, 1])
    w = np.array([1, 3, 2, 1, 4])
    weighted = cf.CalibrationReport.from_predictions(p, y, weights=w.astype(float))
    repeated = cf.CalibrationReport.from_predictions(np.repeat(p, w), np.repeat(y, w))
    # a weight of k is k predictions: no bin holds 10 either way
    assert weighted.mce_guarded is None and repeated.mce_guarded is None
    for name in ("ece", "mce", "brier", "log_loss", "accuracy"):
        assert getattr(weighted, name) == pytest.approx(getattr(repeated, name), rel=1e-14, abs=0)


def test_calibration_report_equal_mass_bins_have_no_edges() -> None:
    report = cf.CalibrationReport.from_predictions(
        np.linspace(0.01, 0.99, 50), np.arange(50) % 2, cf.Binning.quantile(5)
    )
    assert report.bin_edges is None
    assert report.reliability[2].tolist() == [10, 10, 10, 10, 10]


# -- synthetic predictions ----------------------------------------------------------------


def test_overconfidence_sign_on_synthetic_predictions() -> None:
    generator = load_generator()
    table = cf.calibration_metrics(pl.scan_parquet(PREDICTIONS), by=["model", "task"]).collect()
    assert table.select("model", "task").rows() == [(m, t) for m in MODELS for t in TASKS]
    assert table["count"].to_list() == [2_000] * 12
    for row in table.iter_rows(named=True):
        gap = row["overconfidence"]
        # standard error of a mean of 2,000 (c - y) terms is at most ~0.0112
        assert gap == pytest.approx(generator.expected_gap(row["model"], row["task"]), abs=0.04)
        if row["model"] == "overconfident":
            assert gap > 0.04
        elif row["model"] == "underconfident":
            assert gap < -0.04
        else:
            assert abs(gap) < 0.04
        assert gap == pytest.approx(row["mean_confidence"] - row["accuracy"], abs=1e-12)


def test_import_calib_frames_leaves_the_heavy_libraries_unimported() -> None:
    # numpy, scipy, pyarrow and altair are imported where first used (import time)
    code = (
        "import sys, calib_frames;"
        "print(sorted(m for m in ('numpy', 'scipy', 'pyarrow', 'altair') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == "[]"
