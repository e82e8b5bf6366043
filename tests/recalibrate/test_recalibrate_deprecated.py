"""Names of calib_frames.recalibrate that moved or were renamed still work, with a warning."""

from __future__ import annotations

import importlib

import polars as pl
import pytest

from calib_frames.exceptions import ArgumentError
from calib_frames.recalibrate import assign_folds, corp_recalibrate


@pytest.mark.parametrize("module", ["calib_frames.estimators", "calib_frames.estimators.corp"])
def test_corp_recalibrate_moved_from_estimators(module: str) -> None:
    old_home = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match="corp_recalibrate has moved to"):
        assert old_home.corp_recalibrate is corp_recalibrate


def test_assign_folds_name_is_output() -> None:
    frame = pl.DataFrame({"question": ["q1", "q2", "q1"]})
    with pytest.warns(DeprecationWarning, match=r"assign_folds\(name=\) is deprecated"):
        old = assign_folds(frame, item="question", name="k")
    assert old.equals(assign_folds(frame, item="question", output="k"))
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(ArgumentError, match="output= only"),
    ):
        assign_folds(frame, item="question", name="k", output="j")
