"""adaptive_ece and ece_by_bin_count: references, exact edges, bad input."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from factories import prediction_rows

import calib_frames as cf
from calib_frames.estimators.sensitivity import (
    adaptive_ece,
    ece_by_bin_count,
)
from calib_frames.schema import ADAPTIVE_ECE, ECE_BY_BIN_COUNT

utils = pytest.importorskip("calibration.utils")


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    """A third of the rows exactly on an edge k/M of some M in 5..30, weights from 0."""
    return prediction_rows(
        8, 6000, on_edges=(0.33, range(5, 31)), shift=-0.08, models=range(4), weight=(0, 2)
    ).rename({"model": "g"})


@pytest.mark.parametrize("closed", ["left", "right"])
@pytest.mark.parametrize("weighted", [False, True])
def test_equals_calibration_metrics_for_every_m(
    frame: pl.DataFrame, closed: str, weighted: bool
) -> None:
    counts = [1, 2, 3, 5, 7, 10, 15, 30, 49]
    weight = "w" if weighted else None
    out = ece_by_bin_count(frame, by="g", bin_counts=counts, closed=closed, weight=weight)  # type: ignore[arg-type]
    assert out.columns == ["g", *ECE_BY_BIN_COUNT.names]
    assert out.height == 4 * len(counts)
    for m in counts:
        want = cf.calibration_metrics(
            frame,
            by="g",
            bins=cf.Binning.uniform(m, closed=closed),
            weight=weight,  # type: ignore[arg-type]
        ).sort("g")
        got = out.filter(pl.col("bins") == m).sort("g")
        np.testing.assert_allclose(got["ece"].to_numpy(), want["ece"].to_numpy(), rtol=1e-12)


def test_default_range(frame: pl.DataFrame) -> None:
    out = ece_by_bin_count(frame)
    assert out["bins"].to_list() == list(range(5, 31))
    assert out.schema == pl.Schema(ECE_BY_BIN_COUNT.columns)


def test_adaptive_ece_matches_equal_mass_plugin_of_uncertainty_calibration() -> None:
    """n divisible by M, distinct values: both split the sorted values into equal runs."""
    rng = np.random.default_rng(2)
    p = rng.random(3000)
    y = (rng.random(3000) < p**1.5).astype(np.int64)
    want = utils.get_ece_em(p, y, num_bins=15)  # plug-in L1 over equal-mass bins
    out = adaptive_ece(pl.DataFrame({"confidence": p, "correct": y}), bins=15)
    assert out.columns == list(ADAPTIVE_ECE.names)
    assert out["adaptive_ece"][0] == pytest.approx(want, rel=1e-12)
    assert out["populated_bins"][0] == 15


def test_adaptive_ece_rank_rule_by_hand() -> None:
    """Ties stay together: bin = floor(r·M/n) with r the number of smaller confidences."""
    p = np.array([0.1, 0.1, 0.1, 0.4, 0.6, 0.9])
    y = np.array([0, 1, 0, 1, 1, 1])
    out = adaptive_ece(pl.DataFrame({"confidence": p, "correct": y}), bins=3)
    # r = 0,0,0,3,4,5 -> bins 0,0,0,1,2,2: |0.1-1/3|*3 + |0.4-1| + |1.5-2| over 6
    want = (abs(0.3 - 1) + abs(0.4 - 1) + abs(1.5 - 2)) / 6
    assert out.row(0) == (6, 3, pytest.approx(want, rel=1e-14), 3)


def test_adaptive_ece_grouped(frame: pl.DataFrame) -> None:
    got = adaptive_ece(frame, by="g", bins=10)
    assert got.columns == ["g", *ADAPTIVE_ECE.names]
    assert got["count"].sum() == frame.height


def test_degenerate_inputs() -> None:
    one = pl.DataFrame({"confidence": [0.7], "correct": [True]})
    assert ece_by_bin_count(one, bin_counts=[5, 10])["ece"].to_list() == pytest.approx([0.3, 0.3])
    same = pl.DataFrame({"confidence": [0.5] * 4, "correct": [1, 1, 0, 0]})
    assert ece_by_bin_count(same, bin_counts=[2, 3])["ece"].to_list() == [0.0, 0.0]
    assert adaptive_ece(same, bins=4).row(0) == (4, 4, 0.0, 1)
    empty = pl.DataFrame(schema={"confidence": pl.Float64, "correct": pl.Boolean})
    assert ece_by_bin_count(empty).height == 0


def test_bad_input() -> None:
    bad = pl.DataFrame({"g": ["a", "b"], "confidence": [0.2, -0.1], "correct": [1, 0]})
    with pytest.raises(cf.DataError, match=r"'confidence': 1 of 2 rows.*g='b'"):
        ece_by_bin_count(bad, by="g")
    bad = pl.DataFrame({"confidence": [0.2, 0.3], "correct": [1, None]})
    with pytest.raises(cf.DataError, match=r"'correct': 1 of 2 rows"):
        ece_by_bin_count(bad)
    ok = pl.DataFrame({"confidence": [0.2], "correct": [1]})
    for counts in ([], [0], [5, 5], [2.5], "10"):
        with pytest.raises(cf.ArgumentError):
            ece_by_bin_count(ok, bin_counts=counts)  # type: ignore[arg-type]
    with pytest.raises(cf.ArgumentError):
        ece_by_bin_count(ok, closed="both")  # type: ignore[arg-type]
    with pytest.raises(cf.ArgumentError):
        adaptive_ece(ok, bins=0)
    with pytest.raises(cf.TableError, match="column not found"):
        ece_by_bin_count(ok, confidence="p")
