"""The API grammar of calib_frames.estimators: by= through the kernel, default replicates."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import pytest

import calib_frames.estimators as E
from calib_frames.exceptions import ArgumentError

PREDICTIONS = pl.DataFrame(
    {
        "model": ["a", "a", "b", "b"],
        "item": [1, 2, 1, 2],
        "confidence": [0.9, 0.3, 0.6, 0.8],
        "correct": [True, False, True, False],
        "nll": [1.0, 2.0, 0.5, 0.7],
        "p_value": [0.01, 0.2, 0.03, 0.5],
    }
)

BY: dict[str, Callable[..., object]] = {
    "calibration_intervals": lambda by: E.calibration_intervals(PREDICTIONS, by=by),
    "calibration_noise_floor": lambda by: E.calibration_noise_floor(PREDICTIONS, by=by),
    "paired_comparison": lambda by: E.paired_comparison(PREDICTIONS, by=by, replicates=5),
    "perplexity_intervals": lambda by: E.perplexity_intervals(PREDICTIONS, tokens=1, by=by),
    "smooth_ece": lambda by: E.smooth_ece(PREDICTIONS, by=by),
    "smooth_reliability_curve": lambda by: E.smooth_reliability_curve(PREDICTIONS, by=by),
    "corp_reliability": lambda by: E.corp_reliability(PREDICTIONS, by=by),
    "corp_decomposition": lambda by: E.corp_decomposition(PREDICTIONS, by=by),
    "adaptive_ece": lambda by: E.adaptive_ece(PREDICTIONS, by=by),
    "ece_by_bin_count": lambda by: E.ece_by_bin_count(PREDICTIONS, by=by),
    "isotonic_blocks": lambda by: E.isotonic_blocks(
        PREDICTIONS, x="confidence", y="correct", by=by
    ),
    "adjust_p_values": lambda by: E.adjust_p_values(PREDICTIONS, by=by),
}


@pytest.mark.parametrize("name", BY)
@pytest.mark.parametrize("by", [5, [5], ["model", "model"]], ids=["int", "list-of-int", "twice"])
def test_a_malformed_by_is_an_argument_error(name: str, by: object) -> None:
    with pytest.raises(ArgumentError, match="by="):
        BY[name](by)


def test_default_replicates() -> None:
    """1000 for intervals; 10000 for the paired test (its p-values are corrected across
    many pairs and cannot fall below 1/(replicates + 1)); none for the noise floor, whose
    null distribution is exact."""
    import inspect

    for function in (
        E.calibration_intervals,
        E.intervals_from_bin_statistics,
        E.perplexity_intervals,
        E.uncertainty_from_bin_statistics,
    ):
        assert inspect.signature(function).parameters["replicates"].default == 1000, function
    assert "replicates" not in inspect.signature(E.calibration_noise_floor).parameters
    assert inspect.signature(E.paired_comparison).parameters["replicates"].default == 10_000
