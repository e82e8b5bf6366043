"""calib_frames: how far to trust a model's probabilities, computed over polars frames.

Predictions (confidence, correct) become an additive bin-statistics table, which reduces
to per-group calibration metrics; token log-likelihoods become additive NLL sums, which
reduce to perplexity. Lazy in, lazy out; eager in, eager out. Importing the package
registers the ``calib`` namespace on DataFrame and LazyFrame.
"""

from importlib.metadata import PackageNotFoundError, version

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
from calib_frames.expr import (
    binned_metrics,
    bits_per_byte,
    bits_per_token,
    brier,
    byte_perplexity,
    ece,
    log_loss,
    mce,
    mean_nll,
    rmsce,
    token_perplexity,
    word_perplexity,
)
from calib_frames.metrics import calibration_metrics, metrics_from_bin_statistics
from calib_frames.perplexity import merge_nll_sums, nll_sums, perplexity, perplexity_from_nll_sums
from calib_frames.stats import bin_statistics, merge_bin_statistics, reliability_table
from calib_frames.storage import read_statistics, write_statistics

try:
    __version__ = version("calib-frames")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "ArgumentError",
    "Binning",
    "BrierDecomposition",
    "CalibFramesError",
    "CalibrationInputError",
    "CalibrationReport",
    "DataError",
    "PerplexityResult",
    "ReadError",
    "SchemaError",
    "__version__",
    "bin_statistics",
    "binned_metrics",
    "bits_per_byte",
    "bits_per_token",
    "brier",
    "byte_perplexity",
    "calibration_metrics",
    "comparison_table",
    "ece",
    "log_loss",
    "mce",
    "mean_nll",
    "merge_bin_statistics",
    "merge_nll_sums",
    "metrics_from_bin_statistics",
    "nll_sums",
    "perplexity",
    "perplexity_from_nll_sums",
    "read_statistics",
    "reliability_table",
    "rmsce",
    "token_perplexity",
    "word_perplexity",
    "write_statistics",
]
