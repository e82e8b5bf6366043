"""rmsce_debiased (calibration_metrics) against uncertainty-calibration (Kumar et al. 2019).

The reference is the ``uncertainty-calibration`` package (import name ``calibration``):
its debiased L2 error ``unbiased_l2_ce`` is
√max(0, Σ_b (n_b/N)·[(p̄_b − ȳ_b)² − ȳ_b(1 − ȳ_b)/(n_b − 1)]) over bins with n_b ≥ 2.
Its bins are given by their upper edges and found with ``np.searchsorted(edges, p)``
(side left), i.e. right-closed ``(e_{k−1}, e_k]`` with the first bin closed at 0:

* ``get_equal_prob_bins(M)``: edges k/M → ``Binning.uniform(M, closed="right")``;
* ``get_discrete_bins`` (what ``get_calibration_error`` uses for predictions with few
  distinct values): midpoints between consecutive distinct values →
  ``Binning.edges([0, *midpoints, 1], closed="right")``;
* ``get_equal_bins`` (its default for continuous predictions, 15 equal-mass bins):
  midpoints between the bins of the sorted values → the same custom edges.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from factories import prediction_rows

import calib_frames as cf
from calib_frames import Binning

calibration = pytest.importorskip("calibration")
utils = pytest.importorskip("calibration.utils")


def ours(p: np.ndarray, y: np.ndarray, bins: Binning) -> float:
    frame = pl.DataFrame({"confidence": p, "correct": y.astype(bool)})
    return float(cf.calibration_metrics(frame, bins=bins)["rmsce_debiased"][0])


def sample(n: int, seed: int, *, bias: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    rows = prediction_rows(seed, n, shift=-bias)  # outcomes ~ Bernoulli(p − bias)
    return rows["confidence"].to_numpy(), rows["correct"].cast(pl.Int64).to_numpy()


@pytest.mark.parametrize("n_bins", [1, 5, 10, 15, 20])
@pytest.mark.parametrize("n", [30, 1000, 20000])
def test_uniform_bins_match(n_bins: int, n: int) -> None:
    p, y = sample(n, seed=n + n_bins)
    want = utils.lower_bound_scaling_ce(
        p, y, p=2, debias=True, num_bins=n_bins, binning_scheme=utils.get_equal_prob_bins
    )
    assert ours(p, y, Binning.uniform(n_bins, closed="right")) == pytest.approx(
        want, rel=1e-12, abs=1e-15
    )


@pytest.mark.parametrize("n_bins", [3, 10, 49])
def test_confidences_on_the_edges(n_bins: int) -> None:
    """p = k/M lands in bin k − 1 (right-closed) in both, 0 in the first bin."""
    rng = np.random.default_rng(n_bins)
    p = rng.integers(0, n_bins + 1, 3000) / n_bins
    y = (rng.random(3000) < p * 0.8).astype(np.int64)
    want = utils.lower_bound_scaling_ce(
        p, y, p=2, debias=True, num_bins=n_bins, binning_scheme=utils.get_equal_prob_bins
    )
    assert ours(p, y, Binning.uniform(n_bins, closed="right")) == pytest.approx(want, rel=1e-12)


def test_discrete_predictions_get_calibration_error() -> None:
    """Few distinct values: get_calibration_error bins at midpoints between them."""
    rng = np.random.default_rng(3)
    values = np.array([0.0, 0.15, 0.4, 0.55, 0.8, 1.0])
    p = rng.choice(values, 5000)
    y = (rng.random(5000) < np.clip(p + 0.05, 0, 1)).astype(np.int64)
    assert utils.is_discrete(p)
    want = calibration.get_calibration_error(p, y)  # p=2, debias=True
    edges = [0.0, *utils.get_discrete_bins(p)]
    assert ours(p, y, Binning.edges(edges, closed="right")) == pytest.approx(want, rel=1e-12)


def test_equal_mass_default_of_get_calibration_error() -> None:
    p, y = sample(6000, seed=9, bias=0.05)
    assert not utils.is_discrete(p)
    want = calibration.get_calibration_error(p, y)  # 15 equal-mass bins, debiased
    edges = [0.0, *utils.get_equal_bins(p, num_bins=15)]
    assert ours(p, y, Binning.edges(edges, closed="right")) == pytest.approx(want, rel=1e-12)


def test_negative_estimate_is_clipped_to_zero() -> None:
    """A calibrated small sample has a negative debiased square error: both report 0."""
    p = np.full(40, 0.5)
    y = np.repeat([1, 0], 20)  # exactly calibrated: plug-in 0, debiased negative
    want = utils.lower_bound_scaling_ce(
        p, y, p=2, debias=True, num_bins=10, binning_scheme=utils.get_equal_prob_bins
    )
    assert want == 0.0
    assert ours(p, y, Binning.uniform(10, closed="right")) == 0.0


def test_bins_with_one_row_contribute_nothing() -> None:
    p = np.array([0.05, 0.31, 0.32, 0.33, 0.95])  # bins 0 and 9 have a single row
    y = np.array([1, 0, 0, 1, 0])
    want = utils.lower_bound_scaling_ce(
        p, y, p=2, debias=True, num_bins=10, binning_scheme=utils.get_equal_prob_bins
    )
    assert ours(p, y, Binning.uniform(10, closed="right")) == pytest.approx(want, rel=1e-12)


def test_grouped_matches_per_group() -> None:
    frames, want = [], {}
    for g in range(4):
        p, y = sample(500 + 300 * g, seed=100 + g, bias=0.03 * g)
        frames.append(pl.DataFrame({"m": f"m{g}", "confidence": p, "correct": y.astype(bool)}))
        want[f"m{g}"] = utils.lower_bound_scaling_ce(
            p, y, p=2, debias=True, num_bins=15, binning_scheme=utils.get_equal_prob_bins
        )
    table = cf.calibration_metrics(
        pl.concat(frames), by="m", bins=Binning.uniform(15, closed="right")
    )
    for row in table.iter_rows(named=True):
        assert row["rmsce_debiased"] == pytest.approx(want[row["m"]], rel=1e-12)
        # debiasing only removes sampling noise: never above the plug-in RMSCE
        assert row["rmsce_debiased"] <= row["rmsce"] + 1e-15
