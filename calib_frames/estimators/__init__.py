"""Estimators that are not additive: each works per group on the rows of that group, in memory.

================================  ===========================================================
function                          output columns (after the group keys)
================================  ===========================================================
:func:`isotonic_blocks`           block, x_lower, x_upper, count, weight, value
:func:`smooth_ece`                count, smooth_ece, bandwidth
:func:`smooth_reliability_curve`  x, y, density
:func:`corp_reliability`          block, confidence_lower, confidence_upper, count, weight,
                                  recalibrated
:func:`corp_decomposition`        count, weight, mean_score, miscalibration, discrimination,
                                  uncertainty
:func:`corp_recalibrate`          the input rows plus ``recalibrated``
:func:`adaptive_ece`              count, bins, adaptive_ece, populated_bins
:func:`ece_by_bin_count`          bins, ece (one pass over the rows; additive)
================================  ===========================================================
"""

from calib_frames.estimators.corp import corp_decomposition, corp_recalibrate, corp_reliability
from calib_frames.estimators.isotonic import isotonic_blocks
from calib_frames.estimators.sensitivity import adaptive_ece, ece_by_bin_count
from calib_frames.estimators.smooth import smooth_ece, smooth_reliability_curve

__all__ = [
    "adaptive_ece",
    "corp_decomposition",
    "corp_recalibrate",
    "corp_reliability",
    "ece_by_bin_count",
    "isotonic_blocks",
    "smooth_ece",
    "smooth_reliability_curve",
]
