"""smooth_ece and smooth_reliability_curve against relplot (Błasiok and Nakkiran 2023)."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from factories import prediction_rows

import calib_frames as cf
from calib_frames.estimators.smooth import (
    smooth_ece,
    smooth_reliability_curve,
)
from calib_frames.schema import SMOOTH_ECE, SMOOTH_RELIABILITY_CURVE

relplot = pytest.importorskip("relplot")


def relplot_smece(f: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, width = relplot.smECE(f, y, return_width=True)
    return float(value), float(width)


def relplot_curve(f: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return relplot.prepare_rel_diagram(f, y, plot_confidence_band=False, report_CE_std=False)


@pytest.fixture(scope="module")
def grouped() -> pl.DataFrame:
    """12 groups of 50 to 3000 predictions with different miscalibration."""
    sizes = [2648, 331, 1290, 2017, 67, 1604, 886, 2942, 513, 1477, 2210, 758]
    return pl.concat(
        prediction_rows(11 + g, n, beta=(2 + g % 3, 2), shift=(g - 6) * 0.04, models=(f"m{g:02d}",))
        for g, n in enumerate(sizes)
    )


def test_smooth_ece_matches_relplot_per_group(grouped: pl.DataFrame) -> None:
    out = smooth_ece(grouped, by="model")
    assert out.columns == ["model", *SMOOTH_ECE.names]
    assert out["model"].to_list() == sorted(grouped["model"].unique().to_list())
    for row in out.iter_rows(named=True):
        rows = grouped.filter(pl.col("model") == row["model"])
        f = rows["confidence"].to_numpy()
        y = rows["correct"].cast(pl.Float64).to_numpy()
        value, width = relplot_smece(f, y)
        assert row["count"] == rows.height
        assert row["bandwidth"] == width  # same bisection path, exactly
        assert row["smooth_ece"] == pytest.approx(value, rel=1e-12, abs=1e-15)


def test_small_bandwidth_uses_a_finer_grid() -> None:
    """Well-calibrated large groups get σ < 0.01, where relplot's grid is finer than 1001."""
    rng = np.random.default_rng(2)
    n = 60000
    f = rng.random(n)
    y = (rng.random(n) < f).astype(float)
    g = np.repeat([0, 1], n // 2)
    out = smooth_ece(pl.DataFrame({"g": g, "confidence": f, "correct": y}), by="g")
    widths = out["bandwidth"].to_list()
    assert max(widths) < 0.01
    for k in (0, 1):
        value, width = relplot_smece(f[g == k], y[g == k])
        assert widths[k] == width
        assert out["smooth_ece"][k] == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("sigma", [0.003, 0.05, 0.3, 1.0])
def test_fixed_bandwidth_matches_smece_sigma(grouped: pl.DataFrame, sigma: float) -> None:
    out = smooth_ece(grouped, by="model", bandwidth=sigma)
    assert out["bandwidth"].to_list() == [sigma] * out.height
    for row in out.head(4).iter_rows(named=True):
        rows = grouped.filter(pl.col("model") == row["model"])
        want = relplot.smECE_sigma(
            rows["confidence"].to_numpy(), rows["correct"].cast(pl.Float64).to_numpy(), sigma
        )
        assert row["smooth_ece"] == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_curve_matches_relplot(grouped: pl.DataFrame) -> None:
    curve = smooth_reliability_curve(grouped, by="model")
    assert curve.columns == ["model", *SMOOTH_RELIABILITY_CURVE.names]
    assert curve.height == 200 * grouped["model"].n_unique()
    for model in ["m00", "m05", "m11"]:
        rows = grouped.filter(pl.col("model") == model)
        want = relplot_curve(rows["confidence"].to_numpy(), rows["correct"].to_numpy())
        got = curve.filter(pl.col("model") == model)
        np.testing.assert_array_equal(got["x"].to_numpy(), want["mesh"])
        np.testing.assert_allclose(got["y"].to_numpy(), want["mu"], rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(
            got["density"].to_numpy(), want["density"], rtol=1e-11, atol=1e-13
        )


def test_curve_has_its_points_per_group(grouped: pl.DataFrame) -> None:
    curve = smooth_reliability_curve(grouped, by=["model"], points=11)
    assert curve.height == 11 * 12


@pytest.mark.parametrize(
    ("f", "y"),
    [
        ([0.7], [1.0]),  # a group of one prediction
        ([0.5] * 10, [1, 0] * 5),  # all-equal confidences, calibrated
        ([0.9] * 6, [0] * 6),  # all-equal confidences, all wrong
        ([0.0, 1.0, 1.0], [0, 1, 1]),  # the end points
    ],
)
def test_degenerate_groups_match_relplot(f: list[float], y: list[float]) -> None:
    fa, ya = np.asarray(f, dtype=float), np.asarray(y, dtype=float)
    value, width = relplot_smece(fa, ya)
    out = smooth_ece(pl.DataFrame({"confidence": fa, "correct": ya}))
    assert out.row(0) == (len(f), pytest.approx(value, rel=1e-12, abs=1e-15), width)


def test_properties(grouped: pl.DataFrame) -> None:
    out = smooth_ece(grouped, by="model")
    # 0 <= smECE <= 1 and the bandwidth is the bisection's upper end: σ >= smECE_σ
    assert out.filter((pl.col("smooth_ece") < 0) | (pl.col("smooth_ece") > 1)).height == 0
    assert (out["bandwidth"] >= out["smooth_ece"]).all()
    # the curve is a frequency in [0, 1] over a non-negative density
    curve = smooth_reliability_curve(grouped, by="model")
    assert curve.filter((pl.col("y") < 0) | (pl.col("y") > 1)).height == 0
    assert (curve["density"] >= 0).all()


def test_empty_input() -> None:
    empty = pl.DataFrame(schema={"m": pl.String, "confidence": pl.Float64, "correct": pl.Boolean})
    assert smooth_ece(empty, by="m").height == 0
    assert smooth_ece(empty).rows() == [(0, 0.0, None)]
    assert smooth_reliability_curve(empty).height == 0


def test_bad_rows() -> None:
    frame = pl.DataFrame({"m": ["a", "b"], "confidence": [0.5, 1.5], "correct": [1, 0]})
    with pytest.raises(cf.DataError, match=r"'confidence': 1 of 2 rows.*m='b'.*1\.5"):
        smooth_ece(frame, by="m")
    frame = pl.DataFrame({"confidence": [0.5, 0.2], "correct": [1, 2]})
    with pytest.raises(cf.DataError, match="'correct'"):
        smooth_reliability_curve(frame)
    frame = pl.DataFrame({"confidence": [0.5, None], "correct": [1, 0]})
    with pytest.raises(cf.DataError, match="'confidence'"):
        smooth_ece(frame.lazy()).collect()


def test_bad_arguments() -> None:
    frame = pl.DataFrame({"confidence": [0.5], "correct": [True], "name": ["x"]})
    with pytest.raises(cf.TableError, match="column not found"):
        smooth_ece(frame, confidence="p")
    with pytest.raises(cf.TableError, match="numeric"):
        smooth_ece(frame, confidence="name")
    with pytest.raises(cf.TableError, match="clash"):
        smooth_ece(frame.rename({"name": "bandwidth"}), by="bandwidth")
    for bad in (0, -0.1, 1.5, float("nan"), "0.1"):
        with pytest.raises(cf.ArgumentError, match="bandwidth"):
            smooth_ece(frame, bandwidth=bad)  # type: ignore[arg-type]
    with pytest.raises(cf.ArgumentError, match="points"):
        smooth_reliability_curve(frame, points=1)
    with pytest.raises(cf.ArgumentError, match="eps"):
        smooth_ece(frame, eps=0)


def test_boolean_confidence_is_refused() -> None:
    frame = pl.DataFrame({"confidence": [True, False], "correct": [0.5, 0.2]})
    with pytest.raises(cf.TableError, match="swapped"):
        smooth_ece(frame)


@pytest.mark.parametrize("sigma", [0.001, 0.004, 0.2])
def test_curve_at_fixed_bandwidth_matches_relplot_kernel(sigma: float) -> None:
    """Small σ means a fine grid (E up to 10001): the curve still equals relplot's smooth."""
    ReflectedGaussianKernel = pytest.importorskip("relplot.kernels").ReflectedGaussianKernel

    rng = np.random.default_rng(3)
    f = rng.random(5000)
    y = (rng.random(5000) < f).astype(float)
    curve = smooth_reliability_curve(pl.DataFrame({"confidence": f, "correct": y}), bandwidth=sigma)
    mu, density = ReflectedGaussianKernel(sigma).smooth(f, y, np.linspace(0, 1, 200))
    np.testing.assert_allclose(curve["y"].to_numpy(), mu, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(
        curve["density"].to_numpy(), (density - 1e-4) / f.size, rtol=1e-11, atol=1e-13
    )
