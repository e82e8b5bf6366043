"""CORP's in-sample isotonic recalibration (moved from calib_frames.estimators)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from factories import NIAMEY_FORECASTERS

import calib_frames as cf
from calib_frames.estimators import corp_reliability
from calib_frames.recalibrate import apply_isotonic, corp_recalibrate, fit_isotonic

# Test-only reference libraries: a missing one skips this module, it does not break collection.
IsotonicRegression = pytest.importorskip("sklearn.isotonic").IsotonicRegression


def test_matches_sklearn_isotonic(niamey: pl.DataFrame) -> None:
    recal = corp_recalibrate(niamey, confidence="p", correct="obs", by="forecast")
    assert recal.columns == [*niamey.columns, "recalibrated"]
    assert recal.drop("recalibrated").equals(niamey)
    for name in NIAMEY_FORECASTERS:
        rows = niamey.filter(pl.col("forecast") == name)
        model = IsotonicRegression(y_min=0, y_max=1).fit(rows["p"], rows["obs"])
        want = model.predict(rows["p"].to_numpy())
        got = recal.filter(pl.col("forecast") == name)["recalibrated"].to_numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)


def test_is_the_in_sample_isotonic_map_and_the_corp_curve(niamey: pl.DataFrame) -> None:
    """The same numbers as fit_isotonic(in_sample=True) + apply_isotonic, and the CORP blocks."""
    recal = corp_recalibrate(niamey, confidence="p", correct="obs", by="forecast")
    params = fit_isotonic(niamey, confidence="p", correct="obs", by="forecast", in_sample=True)
    for interpolation in ("linear", "step"):
        applied = apply_isotonic(niamey, params, confidence="p", interpolation=interpolation)
        assert applied["in_sample"].all()
        assert applied["recalibrated"].equals(recal["recalibrated"])
    curve = corp_reliability(niamey, confidence="p", correct="obs", by="forecast")
    assert params["value"].to_list() == curve["recalibrated"].to_list()
    assert params["x_lower"].to_list() == curve["confidence_lower"].to_list()


def test_null_keys_and_an_in_sample_column_are_kept() -> None:
    frame = pl.DataFrame(
        {
            "g": ["a", "a", None, None],
            "p": [0.2, 0.8, 0.3, 0.6],
            "y": [0, 1, 1, 0],
            "in_sample": [True, False, True, False],
        }
    )
    out = corp_recalibrate(frame, confidence="p", correct="y", by="g")
    assert out["recalibrated"].to_list() == [0.0, 1.0, 0.5, 0.5]
    assert out["in_sample"].equals(frame["in_sample"])


def test_bad_input() -> None:
    frame = pl.DataFrame({"p": [0.5, 0.2], "y": [1, 0], "w": [1.0, -1.0]})
    with pytest.raises(cf.TableError, match="exists"):
        corp_recalibrate(frame, confidence="p", correct="y", output="w")
    with pytest.raises(cf.DataError, match=r"'w': 1 of 2 rows is not a finite weight > 0"):
        corp_recalibrate(frame, confidence="p", correct="y", weight="w")
    with pytest.raises(cf.DataError, match=r"'p': 1 of 2 rows is not a probability"):
        corp_recalibrate(frame.with_columns(p=pl.Series([0.5, 1.5])), confidence="p", correct="y")
