"""Careless-user inputs to calib_frames.multiclass (regression tests).

Each test is a regression test for a defect found by feeding the entry points wrong
dtypes, hostile key names and degenerate groups: every such call must give a correct
result or raise the package's own error with a clear message.
"""

from __future__ import annotations

import polars as pl
import pytest

import calib_frames.multiclass as M
from calib_frames.exceptions import ArgumentError, DataError, TableError


def test_multiclass_ragged_probability_lists() -> None:
    # [0.5, 0.5] beside [0.2, 0.3, 0.5]: the short item had no row for class 2
    frame = pl.DataFrame({"probs": [[0.5, 0.5], [0.2, 0.3, 0.5]], "label": [0, 1]})
    for call in (M.multiclass_calibration, M.classwise_metrics, M.class_probability_rows):
        with pytest.raises(DataError, match="1 of 2 items is short of classes"):
            call(frame, probabilities="probs", label="label")


def test_multiclass_by_the_label_column() -> None:
    frame = pl.DataFrame({"p_a": [0.7, 0.4], "p_b": [0.3, 0.6], "label": ["a", "b"]})
    with pytest.raises(TableError, match="also input columns: label='label'"):
        M.top_label_metrics(frame, probabilities=["p_a", "p_b"], label="label", by="label")


def test_multiclass_boolean_probability_column() -> None:
    frame = pl.DataFrame({"p_a": [True, False], "p_b": [0.3, 0.6], "label": ["a", "b"]})
    with pytest.raises(TableError, match=r"'p_a' \(probabilities\[0\]\) is Boolean"):
        M.pooled_metrics(frame, probabilities=["p_a", "p_b"], label="label")


@pytest.mark.parametrize("flag", ["multilabel", "renormalize"])
def test_multiclass_int_where_a_bool_goes(flag: str) -> None:
    # multilabel=1 used to switch to the multilabel reading: null accuracy, NaN ECE
    frame = pl.DataFrame({"p_a": [0.7, 0.4], "p_b": [0.3, 0.6], "label": ["a", "b"]})
    with pytest.raises(ArgumentError, match=rf"{flag}= takes True or False, got 1"):
        M.multiclass_calibration(
            frame,
            probabilities=["p_a", "p_b"],
            label="label",
            **{flag: 1},  # type: ignore[arg-type]
        )


def test_multiclass_empty_input_follows_the_empty_convention() -> None:
    """Empty input gave null items and 0.0 error metrics: now null, as the binary tables."""
    empty = pl.DataFrame({"probs": [[0.7, 0.2, 0.1]], "label": [0]}).head(0)
    out = M.multiclass_calibration(empty, probabilities="probs", label="label").row(0, named=True)
    assert (out["items"], out["classes"]) == (0, 0)
    errors = [
        "accuracy",
        "top_label_ece",
        "classwise_ece",
        "classwise_ece_weighted",
        "pooled_ece",
        "brier",
        "log_loss",
    ]
    assert [out[name] for name in errors] == [None] * len(errors)
    # as the pooled table (the binary engine) says
    assert M.pooled_metrics(empty, probabilities="probs", label="label")["ece"].to_list() == [None]
    # a group without rows is absent, as in the binary tables
    keyed = empty.with_columns(model=pl.lit("a"))
    by_model = M.multiclass_calibration(keyed, probabilities="probs", label="label", by="model")
    assert by_model.height == 0
