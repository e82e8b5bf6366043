"""The API grammar of calib_frames.estimators: the default replicates (CONTRIBUTING rule 4).

by= and the other careless inputs of every public function: tests/test_common.py."""

from __future__ import annotations

import calib_frames.estimators as E


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
