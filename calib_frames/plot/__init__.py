"""Altair charts of the engine's tables, and offline export (HTML, PNG, SVG).

Charts are built from the small tables of calib_frames (bin statistics / reliability
tables, metrics, perplexity and comparison tables, and the estimators' curve tables),
never from prediction rows: a reliability diagram of 10⁸ predictions carries one point
per group and bin. Each function returns an altair chart for the caller to compose,
theme or save; nothing is rendered or written as a side effect.

=================================  ==============================================
function                           draws
=================================  ==============================================
:func:`reliability_diagram`        accuracy vs mean confidence per bin, gaps to the
                                   diagonal, counts per bin under it
:func:`confidence_histogram`       predictions per confidence bin, per group
:func:`metric_scatter`             accuracy vs ECE (or Brier, ...), one point per group
:func:`brier_decomposition_chart`  reliability vs resolution, diverging bars
:func:`perplexity_chart`           perplexity and bits per byte side by side
:func:`smooth_reliability_chart`   a smooth reliability curve table (x, y)
:func:`isotonic_reliability_chart` CORP / isotonic blocks as a step curve
:func:`ece_bins_chart`             ECE against the number of bins
:func:`save_chart`                 HTML (Vega inlined), PNG or SVG, offline
=================================  ==============================================

altair and vl-convert are imported when a chart is built or saved, so ``import
calib_frames`` (and this module) stays fast.
"""

from calib_frames.plot.charts import (
    brier_decomposition_chart,
    confidence_histogram,
    ece_bins_chart,
    isotonic_reliability_chart,
    metric_scatter,
    perplexity_chart,
    reliability_diagram,
    smooth_reliability_chart,
)
from calib_frames.plot.export import chart_html, embed_json, save_chart

__all__ = [
    "brier_decomposition_chart",
    "chart_html",
    "confidence_histogram",
    "ece_bins_chart",
    "embed_json",
    "isotonic_reliability_chart",
    "metric_scatter",
    "perplexity_chart",
    "reliability_diagram",
    "save_chart",
    "smooth_reliability_chart",
]
