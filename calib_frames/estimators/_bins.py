"""A bin-statistics table as (groups, bins) numpy arrays: the input of the numpy estimators.

The noise floor (:mod:`calib_frames.estimators.noise`), the ECE interval
(:mod:`calib_frames.estimators.ece_interval`) and the bin-table bootstrap
(:mod:`calib_frames.estimators.bootstrap`) work on the collected, sorted table with every
group holding the same bins (as :func:`~calib_frames.bin_statistics` builds it), one
group per row of each array.

Weights are frequencies (a weight of k is k identical predictions), so a bin's number of
trials is its weight W_b, its expected number of correct predictions under perfect
calibration μ_b = Σwp, their variance V_b = Σwp(1 − p), and its observed number of correct
predictions W¹_b; μ_b − W¹_b = W_b(p̄_b − ȳ_b) = R⁰_b − R¹_b, the difference of the two
residual sums (precise near p = 1). Σwp is ``sum_confidence_correct + sum_residual_wrong``;
because
p(1 − p) = r − r² for the residual r = |p − y| of either outcome,
V_b = (sum_residual_correct − sum_sq_residual_correct) + (sum_residual_wrong −
sum_sq_residual_wrong).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from calib_frames.exceptions import TableError

__all__ = ["BinArrays", "bin_arrays", "grid_shape"]


def grid_shape(frame: pl.DataFrame, keys: list[str]) -> tuple[int, int]:
    """(groups, bins) of a sorted, complete bin-statistics table (raises if ragged)."""
    if keys:
        group = frame.select(pl.struct(keys).rle_id()).to_series().to_numpy()
    else:
        group = np.zeros(frame.height, dtype=np.int64)
    groups = int(group.max()) + 1
    sizes = np.bincount(group, minlength=groups)
    if not (sizes == sizes[0]).all():
        raise TableError(
            "bin-statistics groups have different numbers of bins "
            f"({int(sizes.min())} to {int(sizes.max())}); bootstrap needs complete tables "
            "as bin_statistics builds them"
        )
    return groups, int(sizes[0])


@dataclass(frozen=True)
class BinArrays:
    """The sums of each (group, bin) that the estimators read, shape (groups, bins).

    Attributes
    ----------
    weight
        W_b, the bin's weight (its number of predictions).
    expected
        μ_b = Σwp, the expected number of correct predictions of a calibrated model.
    variance
        V_b = Σwp(1 − p), their variance.
    excess
        μ_b − W¹_b = W_b(p̄_b − ȳ_b): how many more correct predictions the confidences
        announced than came (> 0: overconfident).
    lower
        The bins' lower edges.
    """

    weight: np.ndarray
    expected: np.ndarray
    variance: np.ndarray
    excess: np.ndarray
    lower: np.ndarray

    @property
    def total(self) -> np.ndarray:
        """N per group, the total weight (groups,)."""
        total: np.ndarray = self.weight.sum(axis=1)
        return total


def bin_arrays(frame: pl.DataFrame, keys: list[str]) -> BinArrays:
    """The :class:`BinArrays` of a bin-statistics table sorted by its keys and ``bin``."""
    groups, bins = grid_shape(frame, keys)

    def col(name: str) -> np.ndarray:
        values: np.ndarray = frame[name].cast(pl.Float64).fill_null(0.0).to_numpy()
        return values.reshape(groups, bins)

    r1, q1 = col("sum_residual_correct"), col("sum_sq_residual_correct")
    r0, q0 = col("sum_residual_wrong"), col("sum_sq_residual_wrong")
    return BinArrays(
        weight=col("weight"),
        expected=col("sum_confidence_correct") + r0,
        variance=np.maximum((r1 - q1) + (r0 - q0), 0.0),
        excess=r0 - r1,
        lower=col("bin_lower"),
    )
