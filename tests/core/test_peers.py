"""Differential tests against the peer libraries, with each peer's binning mapped.

* scikit-learn ``calibration_curve(strategy="uniform")``: ``Binning.like_sklearn(M)``.
* netcal ``ECE(bins=M)`` / ``MCE(bins=M)``: ``Binning.like_netcal(M)``. netcal clips the
  confidences to ``[eps, 1 - eps]``, which moves 0.0 and 1.0 by about 1e-16, hence the
  tolerance.
* torchmetrics ``binary_calibration_error``: the edges of ``torch.linspace(0, 1, M + 1)``
  in the confidence dtype, left-closed, plus a last bin ``[1, 1 + ulp)`` that holds
  exactly the confidences equal to 1.0 (torchmetrics' hidden bin M).

The peers are imported at module level on purpose: a missing peer is an error, not a skip.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from factories import NIAMEY_FORECASTERS, niamey_wide, prediction_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calib_frames as cf
from calib_frames import Binning

# Test-only reference libraries: a missing one skips this module, it does not break collection.
netcal = pytest.importorskip("netcal")
pytest.importorskip("netcal.metrics")
torch = pytest.importorskip("torch")
calibration_curve = pytest.importorskip("sklearn.calibration").calibration_curve
brier_score_loss = pytest.importorskip("sklearn.metrics").brier_score_loss
log_loss = pytest.importorskip("sklearn.metrics").log_loss
binary_calibration_error = pytest.importorskip(
    "torchmetrics.functional.classification"
).binary_calibration_error

BIN_COUNTS = (5, 10, 13, 15, 22, 49, 100)
DETERMINISTIC = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# -- data -------------------------------------------------------------------------------


def frame(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> pl.DataFrame:
    columns: dict[str, np.ndarray] = {
        "confidence": np.asarray(p, dtype=np.float64),
        "correct": np.asarray(y, dtype=bool),
    }
    if w is not None:
        columns["w"] = np.asarray(w, dtype=np.float64)
    return pl.DataFrame(columns)


def random_data(seed: int, n: int = 500) -> tuple[np.ndarray, np.ndarray]:
    rows = prediction_rows(seed, n, power=1.3)
    return rows["confidence"].to_numpy(writable=True), rows["correct"].cast(pl.Int64).to_numpy()


def edge_data(m: int, edges: list[float], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every given edge, every exact k/m, their neighbours, 0.0 and 1.0 (some repeated)."""
    candidates = [*edges, *(k / m for k in range(m + 1))]
    values = set()
    for value in candidates:
        values |= {value, float(np.nextafter(value, -np.inf)), float(np.nextafter(value, np.inf))}
    pool = np.array(sorted(v for v in values if 0.0 <= v <= 1.0))
    rng = np.random.default_rng(seed)
    p = np.concatenate([pool, rng.choice(pool, size=pool.size)])
    y = rng.integers(0, 2, size=p.size)
    return p, y


def netcal_edges(m: int) -> list[float]:
    return [float(e) for e in np.linspace(0.0, 1.0, m + 1)]


def torch_edges(m: int) -> list[float]:
    """torchmetrics' edges in float64, plus the hidden last bin for p == 1.0."""
    edges = torch.linspace(0, 1, m + 1, dtype=torch.float64).tolist()
    return [*edges, float(np.nextafter(1.0, 2.0))]


def like_torchmetrics(m: int) -> Binning:
    return Binning.edges(torch_edges(m), closed="left")


def ours(p: np.ndarray, y: np.ndarray, bins: cf.Binning) -> dict[str, float]:
    return cf.calibration_metrics(frame(p, y), bins=bins).row(0, named=True)


# -- scikit-learn -----------------------------------------------------------------------


def assert_matches_calibration_curve(p: np.ndarray, y: np.ndarray, m: int) -> None:
    prob_true, prob_pred = calibration_curve(y, p, n_bins=m, strategy="uniform")
    table = cf.reliability_table(frame(p, y), bins=Binning.like_sklearn(m)).filter(
        pl.col("count") > 0
    )
    assert table.height == prob_true.size
    np.testing.assert_allclose(table["accuracy"].to_numpy(), prob_true, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        table["mean_confidence"].to_numpy(), prob_pred, rtol=1e-12, atol=1e-15
    )


@pytest.mark.parametrize("m", BIN_COUNTS)
@pytest.mark.parametrize("seed", (0, 1))
def test_calibration_curve_random(m: int, seed: int) -> None:
    p, y = random_data(seed)
    assert_matches_calibration_curve(p, y, m)


@pytest.mark.parametrize("m", BIN_COUNTS)
def test_calibration_curve_on_edges(m: int) -> None:
    p, y = edge_data(m, np.linspace(0.0, 1.0, m + 1).tolist(), seed=m)
    assert_matches_calibration_curve(p, y, m)


@pytest.mark.parametrize("m", (3, 5, 10))
@pytest.mark.parametrize("seed", (0, 1))
def test_calibration_curve_quantile_strategy(m: int, seed: int) -> None:
    # scikit-learn's strategy="quantile": np.percentile edges, right-closed (binning.py).
    p, y = random_data(seed)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=m, strategy="quantile")
    edges = np.percentile(p, np.linspace(0, 100, m + 1))
    bins = Binning.edges(edges.tolist(), closed="right")
    table = cf.reliability_table(frame(p, y), bins=bins).filter(pl.col("count") > 0)
    np.testing.assert_allclose(table["accuracy"].to_numpy(), prob_true, rtol=1e-12, atol=0)
    np.testing.assert_allclose(table["mean_confidence"].to_numpy(), prob_pred, rtol=1e-12, atol=0)


def test_calibration_curve_needs_the_sklearn_convention() -> None:
    # On edge values the default (exact, left-closed) bins give a different curve, so the
    # tests above do check the mapping.
    m = 10
    p, y = edge_data(m, np.linspace(0.0, 1.0, m + 1).tolist(), seed=3)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=m, strategy="uniform")
    table = cf.reliability_table(frame(p, y), bins=m).filter(pl.col("count") > 0)
    same = table.height == prob_true.size and np.allclose(
        table["mean_confidence"].to_numpy(), prob_pred, rtol=1e-12
    )
    assert not same


@DETERMINISTIC
@given(m=st.integers(1, 60), data=st.data())
def test_calibration_curve_hypothesis(m: int, data: st.DataObject) -> None:
    edges = np.linspace(0.0, 1.0, m + 1).tolist()
    near = [v for e in edges for v in (np.nextafter(e, -1.0), e, np.nextafter(e, 2.0))]
    near = [float(v) for v in near if 0.0 <= v <= 1.0]
    value = st.one_of(st.sampled_from(near), st.floats(0.0, 1.0, allow_nan=False))
    p = np.array(data.draw(st.lists(value, min_size=2, max_size=50)))
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=p.size, max_size=p.size)))
    assert_matches_calibration_curve(p, y, m)


@pytest.mark.parametrize("seed", (0, 1, 2))
def test_brier_matches_sklearn(seed: int) -> None:
    p, y = random_data(seed)
    w = np.random.default_rng(seed + 10).exponential(size=p.size)
    got = cf.calibration_metrics(frame(p, y, w), weight="w")["brier"].item()
    assert got == pytest.approx(brier_score_loss(y, p, sample_weight=w), rel=1e-12)
    assert ours(p, y, Binning.uniform(10))["brier"] == pytest.approx(
        brier_score_loss(y, p), rel=1e-12
    )


def test_brier_on_edges_matches_sklearn() -> None:
    p, y = edge_data(10, [], seed=5)
    assert ours(p, y, Binning.uniform(10))["brier"] == pytest.approx(
        brier_score_loss(y, p), rel=1e-12
    )


@pytest.mark.parametrize("seed", (0, 1, 2))
def test_log_loss_matches_sklearn(seed: int) -> None:
    p, y = random_data(seed)
    p = np.clip(p, 1e-6, 1 - 1e-6)  # strictly inside (0, 1): sklearn would clip at eps
    assert ours(p, y, Binning.uniform(10))["log_loss"] == pytest.approx(
        log_loss(y, p, labels=[0, 1]), rel=1e-12
    )
    w = np.random.default_rng(seed + 20).exponential(size=p.size)
    got = cf.calibration_metrics(frame(p, y, w), weight="w")["log_loss"].item()
    assert got == pytest.approx(log_loss(y, p, sample_weight=w, labels=[0, 1]), rel=1e-12)


@pytest.mark.parametrize("forecaster", NIAMEY_FORECASTERS)
def test_niamey_brier_and_curve(forecaster: str) -> None:
    data = niamey_wide()
    p = data[forecaster].to_numpy()
    y = data["obs"].to_numpy()
    got = cf.calibration_metrics(data, confidence=forecaster, correct="obs")
    assert got["count"].item() == 92
    assert got["brier"].item() == pytest.approx(brier_score_loss(y, p), rel=1e-12)
    for m in (5, 10, 13):
        assert_matches_calibration_curve(p, y, m)
    if forecaster != "ENS":  # ENS says 1.0 on dry days: an infinite log loss
        assert got["log_loss"].item() == pytest.approx(log_loss(y, p), rel=1e-12)


def test_niamey_grouped_brier() -> None:
    long = niamey_wide().unpivot(
        index=["date", "obs"], on=list(NIAMEY_FORECASTERS), variable_name="model"
    )
    got = cf.calibration_metrics(long, confidence="value", correct="obs", by="model")
    data = niamey_wide()
    want = {
        f: brier_score_loss(data["obs"].to_numpy(), data[f].to_numpy()) for f in NIAMEY_FORECASTERS
    }
    assert got["model"].to_list() == sorted(NIAMEY_FORECASTERS)
    for model, brier in got.select("model", "brier").rows():
        assert brier == pytest.approx(want[model], rel=1e-12)


# -- netcal -----------------------------------------------------------------------------


def assert_matches_netcal(p: np.ndarray, y: np.ndarray, m: int) -> None:
    got = ours(p, y, Binning.like_netcal(m))
    ece = netcal.metrics.ECE(bins=m).measure(p, y)
    mce = netcal.metrics.MCE(bins=m).measure(p, y)
    assert got["ece"] == pytest.approx(ece, rel=1e-12, abs=1e-12)
    assert got["mce"] == pytest.approx(mce, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("m", BIN_COUNTS)
@pytest.mark.parametrize("seed", (0, 1))
def test_netcal_random(m: int, seed: int) -> None:
    p, y = random_data(seed)
    assert_matches_netcal(p, y, m)


@pytest.mark.parametrize("m", BIN_COUNTS)
def test_netcal_on_edges(m: int) -> None:
    p, y = edge_data(m, netcal_edges(m), seed=m)
    assert {0.0, 1.0} <= set(p.tolist())
    assert_matches_netcal(p, y, m)


def test_netcal_needs_its_convention() -> None:
    # Right-closed linspace bins give another ECE on edge values: the mapping matters.
    m = 10
    p, y = edge_data(m, netcal_edges(m), seed=4)
    ece = netcal.metrics.ECE(bins=m).measure(p, y)
    other = ours(p, y, Binning.like_sklearn(m))["ece"]
    assert abs(other - ece) > 1e-6


@DETERMINISTIC
@given(m=st.integers(1, 60), data=st.data())
def test_netcal_hypothesis(m: int, data: st.DataObject) -> None:
    near = [
        float(v)
        for e in netcal_edges(m)
        for v in (np.nextafter(e, -1.0), e, np.nextafter(e, 2.0))
        if 0.0 <= v <= 1.0
    ]
    value = st.one_of(st.sampled_from(near), st.floats(0.0, 1.0, allow_nan=False))
    p = np.array(data.draw(st.lists(value, min_size=2, max_size=50)))
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=p.size, max_size=p.size)))
    assert_matches_netcal(p, y, m)


@pytest.mark.parametrize("forecaster", NIAMEY_FORECASTERS)
def test_netcal_niamey(forecaster: str) -> None:
    data = niamey_wide()
    for m in (5, 10, 13, 26):
        assert_matches_netcal(data[forecaster].to_numpy(), data["obs"].to_numpy(), m)


# -- torchmetrics -----------------------------------------------------------------------


def assert_matches_torchmetrics(p: np.ndarray, y: np.ndarray, m: int) -> None:
    preds = torch.tensor(p, dtype=torch.float64)
    target = torch.tensor(y, dtype=torch.int64)
    ece = binary_calibration_error(preds, target, n_bins=m, norm="l1").item()
    mce = binary_calibration_error(preds, target, n_bins=m, norm="max").item()
    got = ours(p, y, like_torchmetrics(m))
    assert got["ece"] == pytest.approx(ece, rel=1e-12, abs=1e-15)
    assert got["mce"] == pytest.approx(mce, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("m", BIN_COUNTS)
@pytest.mark.parametrize("seed", (0, 1))
def test_torchmetrics_random(m: int, seed: int) -> None:
    p, y = random_data(seed)
    p[:7] = 1.0  # the hidden bin
    assert_matches_torchmetrics(p, y, m)


@pytest.mark.parametrize("m", BIN_COUNTS)
def test_torchmetrics_on_edges(m: int) -> None:
    p, y = edge_data(m, torch_edges(m)[:-1], seed=m)
    assert 1.0 in p.tolist()
    assert_matches_torchmetrics(p, y, m)


@DETERMINISTIC
@given(m=st.integers(1, 60), data=st.data())
def test_torchmetrics_hypothesis(m: int, data: st.DataObject) -> None:
    near = [
        float(v)
        for e in torch_edges(m)[:-1]
        for v in (np.nextafter(e, -1.0), e, np.nextafter(e, 2.0))
        if 0.0 <= v <= 1.0
    ]
    value = st.one_of(st.sampled_from([*near, 1.0]), st.floats(0.0, 1.0, allow_nan=False))
    p = np.array(data.draw(st.lists(value, min_size=2, max_size=50)))
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=p.size, max_size=p.size)))
    assert_matches_torchmetrics(p, y, m)


@pytest.mark.parametrize("forecaster", NIAMEY_FORECASTERS)
def test_torchmetrics_niamey(forecaster: str) -> None:
    data = niamey_wide()
    for m in (5, 10, 13, 26):
        assert_matches_torchmetrics(data[forecaster].to_numpy(), data["obs"].to_numpy(), m)


def test_torchmetrics_hidden_bin_for_one() -> None:
    # Two predictions at 1.0 (one wrong) and one at 0.95 (right), 10 bins: torchmetrics
    # keeps 1.0 apart from 0.95, so ECE = 1/3 * 0.05 + 2/3 * 0.5 = 0.35, MCE = 0.5,
    # where our default bins pool them (|0.9833... - 0.6667|, ECE = MCE = 0.31666...).
    p = np.array([1.0, 1.0, 0.95])
    y = np.array([1, 0, 1])
    preds = torch.tensor(p, dtype=torch.float64)
    target = torch.tensor(y)
    assert binary_calibration_error(preds, target, n_bins=10).item() == pytest.approx(0.35)
    assert binary_calibration_error(preds, target, n_bins=10, norm="max").item() == (
        pytest.approx(0.5)
    )
    assert ours(p, y, like_torchmetrics(10))["ece"] == pytest.approx(0.35, rel=1e-12)
    assert ours(p, y, like_torchmetrics(10))["mce"] == pytest.approx(0.5, rel=1e-12)
    assert ours(p, y, Binning.uniform(10))["ece"] == pytest.approx(0.95 / 3, rel=1e-12)


def test_torch_linspace_edges_differ_from_numpy() -> None:
    # torch.linspace fills from both ends, np.linspace from 0: for M = 10 torch has exactly
    # 0.6 and 0.7, numpy 0.6000000000000001 and 0.7000000000000001. Edges built with
    # np.linspace therefore put p = 0.6 in another bin than torchmetrics does.
    m = 10
    torch_linspace = torch_edges(m)[:-1]
    numpy_linspace = np.linspace(0.0, 1.0, m + 1).tolist()
    assert torch_linspace[6] == 0.6
    assert numpy_linspace[6] > 0.6
    p = np.array([0.6, 0.6, 0.55, 0.7, 0.75])
    y = np.array([1, 1, 0, 0, 1])
    preds = torch.tensor(p, dtype=torch.float64)
    ece = binary_calibration_error(preds, torch.tensor(y), n_bins=m).item()
    assert ours(p, y, like_torchmetrics(m))["ece"] == pytest.approx(ece, rel=1e-12)
    numpy_recipe = Binning.edges([*numpy_linspace, float(np.nextafter(1.0, 2.0))])
    assert abs(ours(p, y, numpy_recipe)["ece"] - ece) > 0.01


def test_torch_linspace_needs_the_confidence_dtype() -> None:
    # torch.linspace without dtype= gives float32 edges (0.10000000149011612 for 1/10):
    # float64 confidences must be binned with float64 edges, float32 ones with float32 edges.
    m = 10
    float32_edges = [*torch.linspace(0, 1, m + 1).tolist(), float(np.nextafter(1.0, 2.0))]
    assert float32_edges[1] > 0.1
    p = np.array([0.1, 0.1, 0.05, 0.3, 0.35, 1.0])
    y = np.array([0, 0, 1, 1, 0, 1])
    p64 = torch.tensor(p, dtype=torch.float64)
    ece64 = binary_calibration_error(p64, torch.tensor(y), n_bins=m).item()
    assert ours(p, y, like_torchmetrics(m))["ece"] == pytest.approx(ece64, rel=1e-12)
    assert abs(ours(p, y, Binning.edges(float32_edges))["ece"] - ece64) > 0.01
    # float32 confidences: the float32 edges reproduce torchmetrics' bins; the sums are
    # float32 there, hence the looser tolerance
    p32 = torch.tensor(p, dtype=torch.float32)
    ece32 = binary_calibration_error(p32, torch.tensor(y), n_bins=m).item()
    got = ours(p32.double().numpy(), y, Binning.edges(float32_edges))["ece"]
    assert got == pytest.approx(ece32, rel=1e-6)
