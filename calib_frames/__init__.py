"""calib_frames: how far to trust a model's probabilities, computed over polars frames.

Predictions (confidence, correct) become an additive bin-statistics table, which reduces
to per-group calibration metrics; token log-likelihoods become additive NLL sums, which
reduce to perplexity. Lazy in, lazy out; eager in, eager out. Importing the package
registers the ``calib`` namespace on DataFrame and LazyFrame.
"""

from calib_frames import namespace as _namespace  # noqa: F401  (registers frame.calib)
from calib_frames.arrays import BrierDecomposition, CalibrationReport, PerplexityResult
from calib_frames.binning import Binning
from calib_frames.compare import comparison_table
from calib_frames.exceptions import (
    ArgumentError,
    CalibFramesError,
    CalibrationInputError,
    DataError,
    ReadError,
    SchemaError,
)
from calib_frames.metrics import calibration_metrics, metrics_from_bin_statistics
from calib_frames.perplexity import merge_nll_sums, nll_sums, perplexity, perplexity_from_nll_sums
from calib_frames.stats import bin_statistics, merge_bin_statistics, reliability_table

__all__ = [
    "ArgumentError",
    "CalibFramesError",
    "DataError",
    "ReadError",
    "SchemaError",
    "Binning",
    "BrierDecomposition",
    "CalibrationInputError",
    "CalibrationReport",
    "PerplexityResult",
    "bin_statistics",
    "calibration_metrics",
    "comparison_table",
    "merge_bin_statistics",
    "merge_nll_sums",
    "metrics_from_bin_statistics",
    "nll_sums",
    "perplexity",
    "perplexity_from_nll_sums",
    "reliability_table",
]
