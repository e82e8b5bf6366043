"""calib_frames: how far to trust a model's probabilities, computed over polars frames.

Predictions (confidence, correct) become an additive bin-statistics table, which reduces
to per-group calibration metrics; token log-likelihoods become additive NLL sums, which
reduce to perplexity. Lazy in, lazy out; eager in, eager out. Importing the package
registers the ``calib`` namespace on DataFrame and LazyFrame.

Layers beyond the additive core live in subpackages: :mod:`calib_frames.sources`
(eval logs and option log-likelihoods → frames), :mod:`calib_frames.estimators`
(per-group estimators, intervals, noise floor, paired tests; the most used are exported
here), :mod:`calib_frames.multiclass`, :mod:`calib_frames.recalibrate`, :mod:`calib_frames.ranking`
(Hit/P/R/F1@k, MRR, MAP, NDCG from TREC-style runs),
:mod:`calib_frames.plot` (altair charts of the tables) and :mod:`calib_frames.report`
(the self-contained HTML report).
"""

from calib_frames import estimators, multiclass, plot, ranking, recalibrate, report, sources
from calib_frames import namespace as _namespace  # noqa: F401  (registers frame.calib)
from calib_frames.arrays import BrierDecomposition, CalibrationReport, PerplexityResult
from calib_frames.binning import Binning
from calib_frames.compare import comparison_table
from calib_frames.estimators import (
    adaptive_ece,
    adjust_p_values,
    calibration_intervals,
    calibration_noise_floor,
    corp_decomposition,
    corp_reliability,
    ece_by_bin_count,
    paired_comparison,
    perplexity_intervals,
    smooth_ece,
    smooth_reliability_curve,
    with_accuracy_intervals,
)
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
from calib_frames.multiclass import multiclass_calibration
from calib_frames.perplexity import merge_nll_sums, nll_sums, perplexity, perplexity_from_nll_sums
from calib_frames.ranking import (
    paired_significance,
    ranking_metrics,
    ranking_metrics_per_query,
    scan_trec_qrels,
    scan_trec_run,
)
from calib_frames.report import write_report
from calib_frames.stats import bin_statistics, merge_bin_statistics, reliability_table
from calib_frames.storage import read_statistics, write_statistics


def __getattr__(name: str) -> str:
    """``calib_frames.__version__``, read from the installed metadata on first use."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("calib-frames")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            return "0+unknown"
    raise AttributeError(f"module 'calib_frames' has no attribute {name!r}")


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
    "adaptive_ece",
    "adjust_p_values",
    "bin_statistics",
    "binned_metrics",
    "bits_per_byte",
    "bits_per_token",
    "brier",
    "byte_perplexity",
    "calibration_intervals",
    "calibration_metrics",
    "calibration_noise_floor",
    "comparison_table",
    "corp_decomposition",
    "corp_reliability",
    "ece",
    "ece_by_bin_count",
    "estimators",
    "log_loss",
    "mce",
    "mean_nll",
    "merge_bin_statistics",
    "merge_nll_sums",
    "metrics_from_bin_statistics",
    "multiclass",
    "multiclass_calibration",
    "nll_sums",
    "paired_comparison",
    "paired_significance",
    "perplexity",
    "perplexity_from_nll_sums",
    "perplexity_intervals",
    "plot",
    "ranking",
    "ranking_metrics",
    "ranking_metrics_per_query",
    "read_statistics",
    "recalibrate",
    "reliability_table",
    "report",
    "rmsce",
    "scan_trec_qrels",
    "scan_trec_run",
    "smooth_ece",
    "smooth_reliability_curve",
    "sources",
    "token_perplexity",
    "with_accuracy_intervals",
    "word_perplexity",
    "write_report",
    "write_statistics",
]
