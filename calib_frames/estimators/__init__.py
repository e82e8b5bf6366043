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
:func:`adaptive_ece`              count, bins, adaptive_ece, populated_bins
:func:`ece_by_bin_count`          bins, ece (one pass over the rows; additive)
:func:`selective_metrics`         count, weight, accuracy, aurc, aurc_oracle, e_aurc,
                                  accuracy_at_coverage, coverage_at_accuracy
:func:`selective_curve`           threshold, coverage, accuracy, risk
================================  ===========================================================

How far to trust a number (from the additive tables where possible, so they stay cheap at
any row count; each says in its docstring what it estimates and how):

======================================  =====================================================
function                                output columns (after the group keys)
======================================  =====================================================
:func:`calibration_intervals`           ``<metric>_ci_low``, ``<metric>_ci_high``
                                        (the ECE's: a test inversion that covers small
                                        ECEs; the others: the bootstrap)
:func:`intervals_from_bin_statistics`   the same, from a bin-statistics table
:func:`perplexity_intervals`            ``<measure>_ci_low/_high`` of the perplexity family
:func:`calibration_noise_floor`         count, weight, populated_bins, ece,
                                        ece_direction, ece_null_mean, ece_noise_floor,
                                        ece_p_value, ece_p_adjusted (corrected across
                                        the table), ece_beyond_noise, verdict
:func:`uncertainty_from_bin_statistics` every interval column and the noise-floor columns
:func:`paired_comparison`               one row per (keys, model_a, model_b): differences,
                                        intervals, raw and adjusted p-values
:func:`adjust_p_values`                 the table plus ``p_value_adjusted`` (Holm or BH)
:func:`metrics_over_batches`            per batch × group of stored statistics: metrics,
                                        closed-form intervals (batch, batch_id, batch_time)
:func:`calibration_change`              per group, the batches after a reference window
                                        against it: onset, differences, p-values, verdict
:func:`with_accuracy_intervals`         the table plus ``accuracy_ci_low/_high`` (Wilson)
:func:`selective_intervals`             ``<metric>_ci_low/_high`` of AURC, E-AURC and the
                                        selective accuracy/coverage (row bootstrap)
======================================  =====================================================
"""

from calib_frames.estimators.bootstrap import calibration_intervals, intervals_from_bin_statistics
from calib_frames.estimators.corp import corp_decomposition, corp_reliability
from calib_frames.estimators.drift import calibration_change, metrics_over_batches
from calib_frames.estimators.intervals import with_accuracy_intervals
from calib_frames.estimators.multiple_testing import adjust_p_values
from calib_frames.estimators.noise import calibration_noise_floor, uncertainty_from_bin_statistics
from calib_frames.estimators.paired import paired_comparison
from calib_frames.estimators.pav import isotonic_blocks
from calib_frames.estimators.perplexity_bootstrap import perplexity_intervals
from calib_frames.estimators.selective import (
    selective_curve,
    selective_intervals,
    selective_metrics,
)
from calib_frames.estimators.sensitivity import adaptive_ece, ece_by_bin_count
from calib_frames.estimators.smooth import smooth_ece, smooth_reliability_curve

__all__ = [
    "adaptive_ece",
    "adjust_p_values",
    "calibration_change",
    "calibration_intervals",
    "calibration_noise_floor",
    "corp_decomposition",
    "corp_reliability",
    "ece_by_bin_count",
    "intervals_from_bin_statistics",
    "isotonic_blocks",
    "metrics_over_batches",
    "paired_comparison",
    "perplexity_intervals",
    "selective_curve",
    "selective_intervals",
    "selective_metrics",
    "smooth_ece",
    "smooth_reliability_curve",
    "uncertainty_from_bin_statistics",
    "with_accuracy_intervals",
]
