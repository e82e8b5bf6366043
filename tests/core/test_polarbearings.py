"""The expressions against polarbearings' (0.3.0), a polars-native peer, in ``group_by().agg``.

Where the conventions agree the numbers are the same (to 1e-12):

* bins: polarbearings' bin of p is the number of inner edges k/M strictly below p, i.e.
  right-closed bins with exact edges and the first bin closed at 0:
  ``Binning.uniform(M, closed="right")``. calib_frames' default is left-closed, so a
  confidence exactly on an edge lands one bin up (checked below to differ);
* ECE, MCE (populated bins only), Brier, weighted or not; ties need no convention here
  (rows with equal confidence always share a bin in both).

Where they do not:

* an empty group: polarbearings gives null, calib_frames 0.0 (ECE, MCE, Brier, log loss);
* log loss: polarbearings clips p to [1e-15, 1 - 1e-15], calib_frames does not (a wrong
  prediction at confidence 1 is +inf), so they agree only away from 0 and 1;
* invalid rows: both give null for a group with a null or NaN input; calib_frames also
  for a confidence outside [0, 1] or an outcome other than 0/1.
"""

from __future__ import annotations

import math

import polars as pl
import pytest
from factories import prediction_rows

import calib_frames as cf

pb = pytest.importorskip("polarbearings")


def predictions(seed: int, n: int = 4000) -> pl.DataFrame:
    """Calibrated predictions in seven groups ``g``, a tenth on the edges k/10, weights."""
    return prediction_rows(
        seed, n, beta=(2, 1.5), on_edges=(0.1, 10), power=1.0, models=range(7),
        weight=(0.1, 2.0),
    ).select("confidence", pl.col("correct").cast(pl.Int8), g="model", w="w")  # fmt: skip


def both(frame: pl.DataFrame, ours: pl.Expr, theirs: pl.Expr) -> tuple[list[float], list[float]]:
    out = frame.group_by("g").agg(ours.alias("ours"), theirs.alias("theirs")).sort("g")
    return out["ours"].to_list(), out["theirs"].to_list()


@pytest.mark.parametrize("m", [5, 10, 15])
@pytest.mark.parametrize("weight", [None, "w"])
@pytest.mark.parametrize("name", ["ece", "mce"])
def test_binned_metrics_agree_with_right_closed_exact_edges(
    name: str, weight: str | None, m: int
) -> None:
    frame = predictions(m)
    function = {"ece": pb.expected_calibration_error, "mce": pb.maximum_calibration_error}[name]
    ours, theirs = both(
        frame,
        getattr(cf, name)(bins=cf.Binning.uniform(m, closed="right"), weight=weight),
        function("correct", "confidence", n_bins=m, weight=weight),
    )
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)


def test_the_default_left_closed_bins_differ_on_edges() -> None:
    frame = predictions(1)
    ours, theirs = both(frame, cf.ece(), pb.expected_calibration_error("correct", "confidence"))
    assert max(abs(a - b) for a, b in zip(ours, theirs, strict=True)) > 1e-6


@pytest.mark.parametrize("weight", [None, "w"])
def test_brier_agrees(weight: str | None) -> None:
    ours, theirs = both(
        predictions(2),
        cf.brier(weight=weight),
        pb.brier_score("correct", "confidence", weight=weight),
    )
    assert ours == pytest.approx(theirs, rel=1e-12)


def test_log_loss_agrees_away_from_0_and_1_only() -> None:
    frame = predictions(3).with_columns(pl.col("confidence").clip(1e-6, 1 - 1e-6))
    ours, theirs = both(frame, cf.log_loss(), pb.log_loss("correct", "confidence"))
    assert ours == pytest.approx(theirs, rel=1e-12)
    certain = pl.DataFrame({"g": [0], "confidence": [1.0], "correct": [0]})
    ours, theirs = both(certain, cf.log_loss(), pb.log_loss("correct", "confidence"))
    assert ours == [math.inf]
    assert theirs[0] == pytest.approx(-math.log(1.0 - (1.0 - 1e-15)))  # clipped to 1 - 1e-15


def test_an_empty_frame_is_null_in_both() -> None:
    # no weight, no number (issue 29.3): it was 0.0 here, a perfect score
    empty = pl.DataFrame(schema={"confidence": pl.Float64, "correct": pl.Int8})
    out = empty.select(
        cf.ece().alias("ours"), pb.expected_calibration_error("correct", "confidence")
    )
    assert out.row(0) == (None, None)


def test_a_null_confidence_is_null_in_both() -> None:
    frame = pl.DataFrame({"g": [0, 0], "confidence": [0.3, None], "correct": [1, 0]})
    assert both(frame, cf.ece(), pb.expected_calibration_error("correct", "confidence")) == (
        [None],
        [None],
    )
