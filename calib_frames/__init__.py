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
A function exported here and by its subpackage is one object, documented once, where it
is defined.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from calib_frames import namespace as _namespace  # noqa: F401  (registers frame.calib)

# isort: off
if TYPE_CHECKING:
    # THE ONE LIST of the package's names, grouped by layer. `__all__` and the imports on
    # first use (`__getattr__`) are read from these lines; `name as name` marks each as
    # exported for type checkers.

    # additive tables: rows → bin statistics / NLL sums, merged exactly
    from calib_frames.stats import (
        bin_statistics as bin_statistics,
        merge_bin_statistics as merge_bin_statistics,
        reliability_table as reliability_table,
    )
    from calib_frames.nll import (
        merge_nll_sums as merge_nll_sums,
        nll_sums as nll_sums,
    )

    # metrics: closed-form reductions of the tables
    from calib_frames.metrics import (
        calibration_metrics as calibration_metrics,
        metrics_from_bin_statistics as metrics_from_bin_statistics,
        perplexity as perplexity,
        perplexity_from_nll_sums as perplexity_from_nll_sums,
    )

    # groups side by side; the report's tables in one call: per group, per model
    from calib_frames.comparison import (
        compare as compare,
        comparison_from_bin_statistics as comparison_from_bin_statistics,
        comparison_table as comparison_table,
        leaderboard as leaderboard,
    )

    # expressions inside your own aggregation
    from calib_frames.expr import (
        binned_metrics as binned_metrics,
        bits_per_byte as bits_per_byte,
        bits_per_token as bits_per_token,
        brier as brier,
        byte_perplexity as byte_perplexity,
        ece as ece,
        log_loss as log_loss,
        mce as mce,
        mce_guarded as mce_guarded,
        mean_nll as mean_nll,
        rmsce as rmsce,
        token_perplexity as token_perplexity,
        word_perplexity as word_perplexity,
    )

    # estimators: how far to trust a number; beyond fixed bins; selective prediction;
    # calibration over time (nightly statistics)
    from calib_frames.estimators import (
        adjust_p_values as adjust_p_values,
        calibration_intervals as calibration_intervals,
        calibration_noise_floor as calibration_noise_floor,
        paired_comparison as paired_comparison,
        perplexity_intervals as perplexity_intervals,
        with_accuracy_intervals as with_accuracy_intervals,
        adaptive_ece as adaptive_ece,
        corp_decomposition as corp_decomposition,
        corp_reliability as corp_reliability,
        ece_by_bin_count as ece_by_bin_count,
        smooth_ece as smooth_ece,
        smooth_reliability_curve as smooth_reliability_curve,
        selective_curve as selective_curve,
        selective_intervals as selective_intervals,
        selective_metrics as selective_metrics,
        calibration_change as calibration_change,
        metrics_over_batches as metrics_over_batches,
    )
    from calib_frames.multiclass import multiclass_calibration as multiclass_calibration
    from calib_frames.recalibrate import helm_calibration as helm_calibration

    # ranking
    from calib_frames.ranking import (
        paired_significance as paired_significance,
        ranking_metrics as ranking_metrics,
        ranking_metrics_per_query as ranking_metrics_per_query,
        scan_trec_qrels as scan_trec_qrels,
        scan_trec_run as scan_trec_run,
    )

    # storage and pictures
    from calib_frames.storage import (
        read_statistics as read_statistics,
        write_statistics as write_statistics,
    )
    from calib_frames.report import write_report as write_report

    # binning, the array API of the prototype
    from calib_frames.binning import Binning as Binning
    from calib_frames.arrays import (
        BrierDecomposition as BrierDecomposition,
        CalibrationReport as CalibrationReport,
        PerplexityResult as PerplexityResult,
    )

    # errors
    from calib_frames.exceptions import (
        ArgumentError as ArgumentError,
        CalibFramesError as CalibFramesError,
        CalibrationInputError as CalibrationInputError,
        DataError as DataError,
        ReadError as ReadError,
        TableError as TableError,
    )

    # subpackages
    from calib_frames import (
        comparison as comparison,
        estimators as estimators,
        metrics as metrics,
        multiclass as multiclass,
        plot as plot,
        ranking as ranking,
        recalibrate as recalibrate,
        report as report,
        sources as sources,
    )

    from calib_frames._version import __version__ as __version__
# isort: on


def _exports() -> dict[str, str]:
    """Each exported name → the module it is imported from, read from the list above.

    (As scientific-python's ``lazy_loader`` reads a stub: one list serves the type
    checkers, ``__all__`` and the imports on first use.)
    """
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    (block,) = (
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names
    }


_HOME_OF = _exports()
__all__ = list(_HOME_OF)


def __getattr__(name: str) -> object:
    """Import an exported name or a subpackage on first use (PEP 562)."""
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'calib_frames' has no attribute {name!r}")
    if home == __name__:  # a subpackage
        value: object = importlib.import_module(f"{__name__}.{name}")
    else:
        value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
