"""Per-bin Wilson intervals against statsmodels' proportion_confint, and their coverage."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import calib_frames as cf
from calib_frames.estimators.intervals import (
    accuracy_interval,
    normal_quantile,
    with_accuracy_intervals,
)
from calib_frames.exceptions import ArgumentError, TableError

# Test-only reference libraries: a missing one skips this module, it does not break collection.
proportion_confint = pytest.importorskip("statsmodels.stats.proportion").proportion_confint


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.999])
def test_wilson_matches_statsmodels(level: float) -> None:
    pairs = [(x, n) for n in (1, 2, 3, 7, 10, 50, 1000) for x in range(0, n + 1, max(1, n // 7))]
    pairs += [(1000, 1000), (0, 1000), (7, 7)]
    frame = pl.DataFrame({"x": [x for x, _ in pairs], "n": [n for _, n in pairs]})
    low, high = accuracy_interval("n", "x", level=level)
    got = frame.select(low.alias("low"), high.alias("high"))
    lo_ref, hi_ref = proportion_confint(frame["x"], frame["n"], alpha=1 - level, method="wilson")
    np.testing.assert_allclose(got["low"].to_numpy(), np.clip(lo_ref, 0, 1), atol=1e-12)
    np.testing.assert_allclose(got["high"].to_numpy(), np.clip(hi_ref, 0, 1), atol=1e-12)


def test_coverage_near_nominal() -> None:
    rng = np.random.default_rng(3)
    reps, n = 4000, 40
    theta = rng.uniform(0.2, 0.8, reps)
    x = rng.binomial(n, theta)
    low, high = accuracy_interval("n", "x", level=0.9)
    bounds = pl.DataFrame({"n": np.full(reps, n), "x": x}).select(low.alias("l"), high.alias("h"))
    covered = (bounds["l"].to_numpy() <= theta) & (theta <= bounds["h"].to_numpy())
    # Wilson is close to nominal for n = 40 (within ±2 percentage points on average)
    assert abs(covered.mean() - 0.9) < 0.025


def test_with_accuracy_intervals_on_tables() -> None:
    df = pl.DataFrame(
        {
            "model": ["a"] * 5 + ["b"] * 3,
            "confidence": [0.05, 0.15, 0.15, 0.95, 0.97, 0.5, 0.5, 0.55],
            "correct": [False, True, False, True, True, True, False, True],
        }
    )
    stats = cf.bin_statistics(df, by="model")
    out = with_accuracy_intervals(stats, level=0.8)
    assert out.columns[-2:] == ["accuracy_ci_low", "accuracy_ci_high"]
    empty = out.filter(pl.col("count") == 0)
    assert empty["accuracy_ci_low"].null_count() == empty.height > 0
    full = out.filter(pl.col("count") > 0)
    x = (full["accuracy"] * full["count"]).round().to_numpy()
    lo, hi = proportion_confint(x, full["count"].to_numpy(), alpha=0.2, method="wilson")
    np.testing.assert_allclose(full["accuracy_ci_low"].to_numpy(), lo, atol=1e-12)
    np.testing.assert_allclose(full["accuracy_ci_high"].to_numpy(), hi, atol=1e-12)
    assert (full["accuracy_ci_low"] <= full["accuracy"]).all()
    assert (full["accuracy"] <= full["accuracy_ci_high"]).all()
    lazy = with_accuracy_intervals(cf.reliability_table(df.lazy(), by="model"))
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().height == 20


def test_bad_arguments() -> None:
    for level in (0.0, 1.0, -0.1, 1.5, float("nan"), True, "0.9"):
        with pytest.raises(ArgumentError, match="level"):
            accuracy_interval("n", "x", level=level)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="method"):
        accuracy_interval("n", "x", method="wald")  # type: ignore[arg-type]
    with pytest.raises(TableError, match="accuracy"):
        with_accuracy_intervals(pl.DataFrame({"count": [1]}))
    assert normal_quantile(0.6826894921370859) == pytest.approx(1.0)
