"""Altair charts of the engine's tables, and offline export (HTML, PNG, SVG).

Charts are built from the small tables of calib_frames (bin statistics / reliability
tables, metrics, perplexity and comparison tables, the estimators' curve tables and the
ranking-metrics table), never from prediction rows: a reliability diagram of 10⁸
predictions carries one point per group and bin. Each function returns an altair chart
for the caller to compose (``+``, ``|``, ``&``), size (``.properties``), theme or save;
nothing is rendered or written as a side effect, and no ``configure_*`` is applied.

Group keys decide colour and panels. ``facet=`` names the keys that make small multiples
(one panel per combination, wrapped after ``columns=``); ``color=`` names the keys told
apart by colour inside a panel (default: the keys not faceted). Names are data: they
reach the chart as values, never as field names or expressions.

=================================  ==============================================
function                           draws
=================================  ==============================================
:func:`reliability_diagram`        accuracy vs mean confidence per bin, gaps to the
                                   diagonal, counts per bin under it
:func:`confidence_histogram`       predictions per confidence bin, per group
:func:`metric_scatter`             accuracy vs ECE (or Brier, ...), one point per group
:func:`brier_decomposition_chart`  reliability vs resolution, diverging bars
:func:`calibration_heatmap`        model × task grid of the calibration gap (or
                                   ECE), noise-floor verdict on each cell
:func:`perplexity_chart`           perplexity (or word / byte perplexity) and bits per
                                   byte side by side, intervals as bars
:func:`smooth_reliability_chart`   a smooth reliability curve table (x, y)
:func:`isotonic_reliability_chart` CORP / isotonic blocks as a step curve
:func:`ece_bins_chart`             ECE against the number of bins
:func:`risk_coverage_chart`        selective risk against coverage (a selective curve)
:func:`metric_at_k_chart`          metric@k against k for a ranking-metrics table
:func:`trend_chart`                a metric per batch (stored nightly statistics),
                                   interval band, noise floor, changed groups marked
:func:`save_chart`                 HTML (Vega inlined), PNG or SVG, offline
=================================  ==============================================

One module per family of charts, named after what it draws:
:mod:`~calib_frames.plot.reliability` and :mod:`~calib_frames.plot.histogram` (a bin
table), :mod:`~calib_frames.plot.heatmap`
(the model × task grid of a comparison table), :mod:`~calib_frames.plot.groups` (a metrics
or comparison table, one mark per group), :mod:`~calib_frames.plot.perplexity` (its
perplexity columns), :mod:`~calib_frames.plot.curves` (an estimator's curve table),
:mod:`~calib_frames.plot.over_time` (a table of batches) and
:mod:`~calib_frames.plot.at_k` (a ranking-metrics table);
:mod:`~calib_frames.plot.export` saves them. Each chart is two steps: a data step in
polars (``*_data``: checks the table, picks and orders the groups, computes the scales'
domains, the label positions and the sizes; no altair) and the altair layer that only
encodes what it returns. :mod:`calib_frames.plot.frames` holds what the data steps share
(table checks, group labels, panels; the report reads its tables through it too),
``_common`` what the altair layers share (colours, the palette, highlighting, tooltips,
panels and the argument checks), and :mod:`calib_frames.metrics.registry` every metric's
title, better direction and number format. A new family is a new module on those.

altair and vl-convert are imported when a chart is built or saved, so ``import
calib_frames`` (and this module) stays fast.
"""

from calib_frames.plot.at_k import metric_at_k_chart
from calib_frames.plot.curves import (
    ece_bins_chart,
    isotonic_reliability_chart,
    risk_coverage_chart,
    smooth_reliability_chart,
)
from calib_frames.plot.export import chart_html, embed_json, save_chart
from calib_frames.plot.groups import brier_decomposition_chart, metric_scatter
from calib_frames.plot.heatmap import calibration_heatmap
from calib_frames.plot.histogram import confidence_histogram
from calib_frames.plot.over_time import trend_chart
from calib_frames.plot.perplexity import perplexity_chart
from calib_frames.plot.reliability import reliability_diagram

__all__ = [
    "brier_decomposition_chart",
    "calibration_heatmap",
    "chart_html",
    "confidence_histogram",
    "ece_bins_chart",
    "embed_json",
    "isotonic_reliability_chart",
    "metric_at_k_chart",
    "metric_scatter",
    "perplexity_chart",
    "reliability_diagram",
    "risk_coverage_chart",
    "save_chart",
    "smooth_reliability_chart",
    "trend_chart",
]
