"""calib_frames: how far to trust a model's probabilities, computed over polars frames.

Predictions (confidence, correct) become an additive bin-statistics table, which reduces
to per-group calibration metrics; token log-likelihoods become additive NLL sums, which
reduce to perplexity. Lazy in, lazy out; eager in, eager out. Importing the package
registers the ``calib`` namespace on DataFrame and LazyFrame; everything else is imported
when first used, so ``import calib_frames`` stays cheap.

Layers beyond the additive core live in subpackages: :mod:`calib_frames.sources`
(eval logs and option log-likelihoods → frames), :mod:`calib_frames.estimators`
(per-group estimators, intervals, noise floor, paired tests; the most used are exported
here), :mod:`calib_frames.multiclass`, :mod:`calib_frames.recalibrate`,
:mod:`calib_frames.ranking` (Hit/P/R/F1@k, MRR, MAP, NDCG from TREC-style runs),
:mod:`calib_frames.comparison` (groups side by side), :mod:`calib_frames.plot` (altair
charts of the tables) and :mod:`calib_frames.report` (the self-contained HTML report).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from calib_frames import namespace as _namespace  # noqa: F401  (registers frame.calib)
from calib_frames._deprecated import moved
from calib_frames._version import __version__
from calib_frames.exceptions import (
    ArgumentError,
    CalibFramesError,
    CalibrationInputError,
    DataError,
    ReadError,
    TableError,
)

if TYPE_CHECKING:
    from calib_frames import (
        comparison,
        estimators,
        metrics,
        multiclass,
        plot,
        ranking,
        recalibrate,
        report,
        sources,
    )
    from calib_frames.arrays import BrierDecomposition, CalibrationReport, PerplexityResult
    from calib_frames.binning import Binning
    from calib_frames.comparison import (
        compare,
        comparison_from_bin_statistics,
        comparison_table,
        leaderboard,
    )
    from calib_frames.estimators import (
        adaptive_ece,
        adjust_p_values,
        calibration_change,
        calibration_intervals,
        calibration_noise_floor,
        corp_decomposition,
        corp_reliability,
        ece_by_bin_count,
        metrics_over_batches,
        paired_comparison,
        perplexity_intervals,
        selective_curve,
        selective_intervals,
        selective_metrics,
        smooth_ece,
        smooth_reliability_curve,
        with_accuracy_intervals,
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
    from calib_frames.metrics import (
        calibration_metrics,
        metrics_from_bin_statistics,
        perplexity,
        perplexity_from_nll_sums,
    )
    from calib_frames.multiclass import multiclass_calibration
    from calib_frames.nll import merge_nll_sums, nll_sums
    from calib_frames.ranking import (
        paired_significance,
        ranking_metrics,
        ranking_metrics_per_query,
        scan_trec_qrels,
        scan_trec_run,
    )
    from calib_frames.recalibrate import helm_calibration
    from calib_frames.report import write_report
    from calib_frames.stats import bin_statistics, merge_bin_statistics, reliability_table
    from calib_frames.storage import read_statistics, write_statistics

# Where each exported name lives; imported on first use (PEP 562).
_HOMES: dict[str, tuple[str, ...]] = {
    "calib_frames.stats": ("bin_statistics", "merge_bin_statistics", "reliability_table"),
    "calib_frames.nll": ("merge_nll_sums", "nll_sums"),
    "calib_frames.metrics": (
        "calibration_metrics",
        "metrics_from_bin_statistics",
        "perplexity",
        "perplexity_from_nll_sums",
    ),
    "calib_frames.comparison": (
        "compare",
        "comparison_from_bin_statistics",
        "comparison_table",
        "leaderboard",
    ),
    "calib_frames.expr": (
        "binned_metrics",
        "bits_per_byte",
        "bits_per_token",
        "brier",
        "byte_perplexity",
        "ece",
        "log_loss",
        "mce",
        "mce_guarded",
        "mean_nll",
        "rmsce",
        "token_perplexity",
        "word_perplexity",
    ),
    "calib_frames.estimators": (
        "adaptive_ece",
        "adjust_p_values",
        "calibration_change",
        "calibration_intervals",
        "calibration_noise_floor",
        "corp_decomposition",
        "corp_reliability",
        "ece_by_bin_count",
        "metrics_over_batches",
        "paired_comparison",
        "perplexity_intervals",
        "selective_curve",
        "selective_intervals",
        "selective_metrics",
        "smooth_ece",
        "smooth_reliability_curve",
        "with_accuracy_intervals",
    ),
    "calib_frames.recalibrate": ("helm_calibration",),
    "calib_frames.multiclass": ("multiclass_calibration",),
    "calib_frames.ranking": (
        "paired_significance",
        "ranking_metrics",
        "ranking_metrics_per_query",
        "scan_trec_qrels",
        "scan_trec_run",
    ),
    "calib_frames.storage": ("read_statistics", "write_statistics"),
    "calib_frames.report": ("write_report",),
    "calib_frames.arrays": ("BrierDecomposition", "CalibrationReport", "PerplexityResult"),
    "calib_frames.binning": ("Binning",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}
_SUBPACKAGES = (
    "comparison",
    "estimators",
    "metrics",
    "multiclass",
    "plot",
    "ranking",
    "recalibrate",
    "report",
    "sources",
)


def __getattr__(name: str) -> object:
    """Import an exported name or a subpackage on first use."""
    if name == "SchemaError":  # renamed TableError in 0.2
        return _deprecated_names(name)
    if name in _SUBPACKAGES:
        return importlib.import_module(f"calib_frames.{name}")
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'calib_frames' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


_deprecated_names = moved("calib_frames", {"SchemaError": "calib_frames.exceptions.TableError"})


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [  # noqa: RUF022  (grouped by layer, as polars groups its own)
    # additive tables: rows → bin statistics / NLL sums, merged exactly
    "bin_statistics",
    "merge_bin_statistics",
    "merge_nll_sums",
    "nll_sums",
    "reliability_table",
    # metrics: closed-form reductions of the tables
    "calibration_metrics",
    "comparison_table",
    "metrics_from_bin_statistics",
    # the report's tables in one call: per group, per model across tasks
    "compare",
    "comparison_from_bin_statistics",
    "leaderboard",
    "perplexity",
    "perplexity_from_nll_sums",
    # expressions inside your own aggregation
    "binned_metrics",
    "bits_per_byte",
    "bits_per_token",
    "brier",
    "byte_perplexity",
    "ece",
    "log_loss",
    "mce",
    "mce_guarded",
    "mean_nll",
    "rmsce",
    "token_perplexity",
    "word_perplexity",
    # how far to trust a number
    "adjust_p_values",
    "calibration_intervals",
    "calibration_noise_floor",
    "paired_comparison",
    "perplexity_intervals",
    "with_accuracy_intervals",
    # beyond fixed bins, multi-class
    "adaptive_ece",
    "corp_decomposition",
    "corp_reliability",
    "ece_by_bin_count",
    "multiclass_calibration",
    "smooth_ece",
    "smooth_reliability_curve",
    # selective prediction, HELM's calibration suite
    "helm_calibration",
    "selective_curve",
    "selective_intervals",
    "selective_metrics",
    # calibration over time (nightly statistics)
    "calibration_change",
    "metrics_over_batches",
    # ranking
    "paired_significance",
    "ranking_metrics",
    "ranking_metrics_per_query",
    "scan_trec_qrels",
    "scan_trec_run",
    # storage and pictures
    "read_statistics",
    "write_report",
    "write_statistics",
    # binning, the array API of the prototype
    "Binning",
    "BrierDecomposition",
    "CalibrationReport",
    "PerplexityResult",
    # errors
    "ArgumentError",
    "CalibFramesError",
    "CalibrationInputError",
    "DataError",
    "ReadError",
    "TableError",
    # subpackages
    "comparison",
    "estimators",
    "metrics",
    "multiclass",
    "plot",
    "ranking",
    "recalibrate",
    "report",
    "sources",
    "__version__",
]
