"""The ECE interval (least-favourable test inversion): coverage of known population ECEs,
the zero lower bound exactly when calibration is not rejected, and its edges."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import calib_frames as cf
from calib_frames.estimators import calibration_intervals, calibration_noise_floor
from calib_frames.estimators._bins import BinArrays
from calib_frames.estimators.ece_interval import ece_bounds


def groups_of(ece: float, n: int, datasets: int, seed: int) -> pl.DataFrame:
    """``datasets`` groups of n predictions, confidences U(0.5, 1), right with p − ece:
    the population ECE (10 bins) is ``ece`` exactly (no clipping: p − ece ≥ 0.35)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.5, 1.0, datasets * n)
    return pl.DataFrame(
        {"g": np.repeat(np.arange(datasets), n), "confidence": p,
         "correct": rng.random(p.size) < p - ece}
    )  # fmt: skip


@pytest.mark.parametrize(("ece", "n"), [(0.0, 200), (0.02, 200), (0.02, 2000), (0.14, 200)])
def test_coverage_of_the_population_ece(ece: float, n: int) -> None:
    """At least nominal (the percentile bootstrap covered 0.00 at ECE 0.02, n = 200)."""
    df = groups_of(ece, n, 300, seed=int(ece * 100) + n)
    ci = calibration_intervals(df, by="g", replicates=20)  # the ECE's bounds draw nothing
    covered = ((ci["ece_ci_low"] <= ece + 1e-12) & (ece - 1e-12 <= ci["ece_ci_high"])).mean()
    # 300 groups: the binomial sd of a coverage of 0.95 is 1.3 points
    assert covered >= 0.92, covered  # type: ignore[operator]


def test_zero_lower_bound_exactly_when_calibration_is_not_rejected() -> None:
    df = pl.concat([groups_of(0.0, 400, 40, seed=1), groups_of(0.1, 400, 40, seed=2)
                    .with_columns(pl.col("g") + 100)])  # fmt: skip
    ci = calibration_intervals(df, by="g", replicates=20, level=0.9)
    floor = calibration_noise_floor(df, by="g", correction="none", min_count=0)
    # one-sided at (1 − level)/2: L = 0 iff the exact test's p-value is above 0.05
    assert ((ci["ece_ci_low"] == 0) == (floor["ece_p_value"] > 0.05)).all()
    assert (ci["ece_ci_low"] == 0).sum() > 30 and (ci["ece_ci_low"] > 0).sum() > 30
    metrics = cf.calibration_metrics(df, by="g")
    assert (ci["ece_ci_low"] <= metrics["ece"]).all()  # below the upward-biased plug-in


def test_bounds_by_hand() -> None:
    """Two bins of 1,000: a gap of 0.05 in one, none in the other: θ̂ = 0.025, and the
    interval (not the plug-in's bootstrap) is around it, the exact test rejecting 0."""
    two = lambda a, b: np.array([[a, b]], dtype=float)  # noqa: E731
    arrays = BinArrays(weight=two(1000, 1000), expected=two(900, 600), variance=two(90, 240),
                       excess=two(50, 0), lower=two(0.9, 0.6))  # fmt: skip
    low, high = ece_bounds(arrays, np.array([1e-6]), 0.95)
    assert 0.005 < low[0] < 0.025 < high[0] < 0.045
    wider_low, wider_high = ece_bounds(arrays, np.array([1e-6]), 0.99)
    assert wider_low[0] < low[0] and wider_high[0] > high[0]
    # a p-value above (1 − level)/2: the lower bound is 0 whatever the gap
    assert ece_bounds(arrays, np.array([0.2]), 0.95)[0][0] == 0.0


def test_no_weight_has_no_interval() -> None:
    df = pl.DataFrame(
        {"g": ["a", "a", "b", "b"], "confidence": [0.9, 0.6, 0.8, 0.7],
         "correct": [True, False, True, True], "w": [0.0, 0.0, 1.0, 2.0]}
    )  # fmt: skip
    ci = calibration_intervals(df, by="g", weight="w", replicates=20)
    row = ci.filter(g="a").row(0, named=True)
    assert all(value is None for name, value in row.items() if name != "g")
    assert ci.filter(g="b")["ece_ci_high"].item() > 0
