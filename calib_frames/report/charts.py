"""The report's charts: which charts of :mod:`calib_frames.plot` a report shows, and how.

The page (:mod:`calib_frames.report.page`) embeds them, the command line saves each as a
PNG beside it; both take them from :func:`report_charts`, so the two show the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from calib_frames.exceptions import ArgumentError
from calib_frames.metrics.calibration import MCE_MIN_COUNT
from calib_frames.plot import (
    brier_decomposition_chart,
    calibration_heatmap,
    confidence_histogram,
    metric_scatter,
    perplexity_chart,
    reliability_diagram,
    risk_coverage_chart,
    trend_chart,
)
from calib_frames.plot.frames import COMPARISON_COLUMNS, frame, key_split, spec_keys
from calib_frames.plot.perplexity import perplexity_measures
from calib_frames.schema import RELIABILITY

__all__ = [
    "CHART_GROUP_LIMIT",
    "HEATMAP_ROW_LIMIT",
    "OVERLAY_LIMIT",
    "PICKED_DIAGRAM",
    "ReportLayout",
    "bounded_models",
    "over_time_charts",
    "report_charts",
    "report_layout",
]

OVERLAY_LIMIT = 5
"""Most models drawn together in one reliability panel of the report."""

CHART_GROUP_LIMIT = 8
"""Most groups the report's charts draw: beyond it, the best and the worst by ECE."""


HEATMAP_ROW_LIMIT = 50
"""Most models (rows) of the report's heatmap: beyond it, the best and the worst by mean ECE."""


PICKED_DIAGRAM = "Reliability diagram of one group"
"""The title of the chart whose group the reader picks in dropdowns (no PNG: a static
image would show only the first group)."""


def _extremes(
    table: pl.DataFrame, keys: list[str], column: str, limit: int
) -> tuple[pl.DataFrame, int]:
    """The keys of the ``limit // 2`` lowest and the rest highest ``column``; the group count.

    All the groups when there are at most ``limit``. Groups without a ``column`` value
    (token-only groups for ECE, prediction-only ones for perplexity) are not counted.
    """
    ranked = (
        table.select(*keys, column)
        .drop_nulls(column)
        .unique(subset=keys, keep="first", maintain_order=True)
    )
    if ranked.height <= limit:
        return ranked.select(keys), ranked.height
    ranked = ranked.sort(column, *keys, nulls_last=True)
    low = limit // 2
    return pl.concat([ranked.head(low), ranked.tail(limit - low)]).select(keys), ranked.height


def _kept(frame_: pl.DataFrame, chosen: pl.DataFrame) -> pl.DataFrame:
    return frame_.join(chosen, on=chosen.columns, how="semi", nulls_equal=True)


def bounded_models(
    table: pl.DataFrame, model: list[str], column: str, limit: int
) -> tuple[pl.DataFrame | None, int]:
    """The models drawn when there are more than ``limit`` (None: all), and how many there are.

    Models rank by the mean of their finite ``column`` values over their tasks; beyond
    ``limit``, the ``limit // 2`` of lowest mean and the rest of highest are kept (the
    heatmap's rows by ECE, the perplexity chart's by its first measure).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.report.charts import bounded_models
    >>> table = pl.DataFrame({"model": ["a", "a", "b", "c", "d"],
    ...                       "ece": [0.1, 0.3, 0.05, 0.4, None]})
    >>> chosen, models = bounded_models(table, ["model"], "ece", 2)
    >>> chosen.get_column("model").to_list(), models  # d has no ECE: not counted
    (['b', 'c'], 3)
    """
    ranked = (
        table.filter(pl.col(column).is_finite())
        .group_by(model, maintain_order=True)
        .agg(pl.col(column).mean())
    )
    chosen, models = _extremes(ranked, model, column, limit)
    return (chosen if models > limit else None), models


@dataclass(frozen=True)
class ReportLayout:
    """What the report's charts draw, as :func:`report_layout` decides it from the tables."""

    bin_keys: list[str]
    """The bin statistics' keys (the groups of the diagrams)."""
    views: bool
    """Whether the views of every model are drawn (the heatmap and the picked diagram)."""
    view_table: pl.DataFrame
    """The comparison rows of the views' models."""
    view_bins: pl.DataFrame
    """The bin rows of the views' models."""
    view_note: str
    """The sentence saying which models the views leave out (empty: none)."""
    heatmap: bool
    """Whether the model × task heatmap is drawn (two or more keys, the gap column)."""
    linked: bool
    """Whether a click on a heatmap cell picks its group in the picked diagram."""
    groups: int
    """The groups of the views (the picked diagram offers each)."""
    table: pl.DataFrame
    """The comparison rows of the groups the other charts draw."""
    bins: pl.DataFrame
    """The bin rows of those groups."""
    kept: pl.DataFrame | None
    """Their keys when the charts summarise (None: every group)."""
    left_out: str
    """The sentence saying which groups the charts leave out (empty: none)."""
    metrics: pl.DataFrame | None
    """The metrics table of the reliability diagrams (None: keyed otherwise)."""
    facet: list[str]
    """The keys that make the reliability panels."""
    columns: int | None
    """Panels per row (None: one panel, or a column per task)."""
    overlay: bool
    """Whether several models share a panel (one colour each)."""


def report_layout(
    table: pl.DataFrame, bins: pl.DataFrame, bin_keys: list[str], limit: int
) -> ReportLayout:
    """Which models and groups each of the report's charts draws, and in how many panels.

    The views (heatmap, picked diagram) draw every model up to :data:`HEATMAP_ROW_LIMIT`,
    else the extremes of :func:`bounded_models` by mean ECE. Up to :data:`OVERLAY_LIMIT`
    models share a reliability panel per task, the tasks bounded to ``limit`` by their worst
    ECE; more models get a panel per group, the groups bounded to ``limit`` by ECE (the
    ``limit // 2`` lowest and the rest highest). Polars alone: no chart is built.

    Parameters
    ----------
    table
        The comparison (or metrics) table.
    bins
        The bin statistics.
    bin_keys
        Their keys.
    limit
        Most groups the charts draw.

    Returns
    -------
    ReportLayout
        The rows each chart draws and the notes that say what was left out.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.report.charts import report_layout
    >>> preds = pl.read_parquet("data/synthetic_predictions.parquet")
    >>> stats = cf.bin_statistics(preds, by=["model", "task"])
    >>> layout = report_layout(cf.metrics_from_bin_statistics(stats), stats, ["model", "task"], 2)
    >>> layout.heatmap, layout.overlay, layout.facet, layout.kept.height  # 2 of 4 tasks drawn
    (True, True, ['task'], 2)
    """
    keys = key_split(table.schema, COMPARISON_COLUMNS)
    views = bool(keys) and "ece" in table.columns and keys[:1] == bin_keys[:1]
    view_table, view_bins, view_note = table, bins, ""
    if views:
        chosen, models = bounded_models(table, keys[:1], "ece", HEATMAP_ROW_LIMIT)
        if chosen is not None:
            view_table, view_bins = _kept(table, chosen), _kept(bins, chosen)
            low = HEATMAP_ROW_LIMIT // 2
            view_note = (
                f" Drawn: the {low} models of lowest mean ECE over their tasks and the "
                f"{HEATMAP_ROW_LIMIT - low} of highest; {models - HEATMAP_ROW_LIMIT:,} of "
                f"{models:,} models are left out here (the tables have them all)."
            )
    groups = view_bins.select(bin_keys).n_unique()
    heatmap = views and len(keys) >= 2 and "overconfidence" in table.columns
    left_out = ""
    kept: pl.DataFrame | None = None  # the keys drawn, when the charts summarise
    if bin_keys and "ece" in table.columns and set(bin_keys) <= set(table.columns):
        overlaid = table.get_column(bin_keys[0]).n_unique() <= OVERLAY_LIMIT
        # overlaid models share a panel per task: bound the panels (tasks by their worst
        # ECE); else one panel per group: bound the groups
        unit, what = (bin_keys[1:], "tasks") if overlaid else (bin_keys, "groups")
        ranked = (
            table.group_by(unit, maintain_order=True).agg(pl.col("ece").max())
            if overlaid and unit
            else table
        )
        chosen, count = _extremes(ranked, unit, "ece", limit) if unit else (None, 1)
        if chosen is not None and count > limit:
            table, bins, kept = _kept(table, chosen), _kept(bins, chosen), chosen
            left_out = (
                f" Drawn: the {limit // 2} {what} of lowest ECE and the {limit - limit // 2} "
                f"of highest; {count - limit:,} of {count:,} {what} are left out here (the "
                "tables have them all)."
            )
    same_keys = sorted(key_split(table.schema, COMPARISON_COLUMNS)) == sorted(bin_keys)
    # Up to five models share a panel (one per task); more get a panel each (a grid of
    # model × task), where twenty overlaid curves would not be readable.
    many = bool(bin_keys) and bins.get_column(bin_keys[0]).n_unique() > OVERLAY_LIMIT
    facet = list(bin_keys) if many else bin_keys[1:]
    return ReportLayout(
        bin_keys=bin_keys,
        views=views,
        view_table=view_table,
        view_bins=view_bins,
        view_note=view_note,
        heatmap=heatmap,
        linked=heatmap and groups > 1 and sorted(keys) == sorted(bin_keys),
        groups=groups,
        table=table,
        bins=bins,
        kept=kept,
        left_out=left_out,
        metrics=table if same_keys else None,
        facet=facet,
        columns=_wall_columns(bins, facet, many=many),
        overlay=bool(facet) and not many,
    )


def _views(layout: ReportLayout) -> list[tuple[str, str, Any]]:
    """The heatmap (two or more keys) and the reliability diagram of a picked group.

    Both over the same models (:attr:`ReportLayout.view_table`). Their specs' ``usermeta``
    (``{"pick": "cells"}``, ``{"pick": [keys]}``) lets the page's script pick a clicked
    cell's group.
    """
    if not layout.views:
        return []
    table, bins, bin_keys = layout.view_table, layout.view_bins, layout.bin_keys
    views: list[tuple[str, str, Any]] = []
    linked = layout.linked
    if layout.heatmap:
        note = (
            "One cell per model and task, coloured by the calibration gap, mean confidence "
            "− accuracy (red: overconfident; blue: underconfident); a dot marks an ECE "
            "beyond the noise of a calibrated model, faint cells have too few predictions. "
            "Hover a cell for the whole names and numbers."
        )
        # linked, the page's script picks a clicked cell's group in the diagram below
        # and outlines the cell of the group that diagram draws
        heatmap = calibration_heatmap(table, pick=bin_keys if linked else None)
        if linked:
            heatmap = heatmap.properties(usermeta={"pick": "cells"})
            note += " Click a cell to draw its reliability diagram below (its cell is outlined)."
        views.append(("Calibration gap by model and task", note + layout.view_note, heatmap))
    if layout.groups > 1:
        keys = key_split(table.schema, COMPARISON_COLUMNS)
        metrics = table if sorted(keys) == sorted(bin_keys) else None
        note = (
            f"One group at a time, of {layout.groups:,}: pick it in the dropdowns under the "
            f"chart{' (or click its cell in the heatmap)' if linked else ''}. "
            "Bars to the diagonal show each bin's gap (red: overconfident; blue: "
            "underconfident), dashed and faint for bins of fewer than "
            f"{MCE_MIN_COUNT} predictions."
        )
        views.append(
            (
                PICKED_DIAGRAM,
                note + layout.view_note,
                reliability_diagram(bins, metrics=metrics, pick=bin_keys).properties(
                    usermeta={"pick": bin_keys}
                ),
            )
        )
    return views


def _wall_columns(bins: pl.DataFrame, facet: list[str], *, many: bool) -> int | None:
    """Panels per row of the reliability panels (None: one panel, or a column per task).

    A grid of model × task has a column per task, unless there is one task; else up to 4.
    """
    if not facet:
        return None
    if many and len(facet) >= 2 and bins.select(facet[-1]).n_unique() > 1:
        return None
    return min(bins.select(facet).n_unique(), 4)


def _perplexity_view(source: pl.DataFrame, limit: int, level: float) -> list[tuple[str, str, Any]]:
    """The perplexity chart of ``source`` (none without a perplexity measure).

    One row per model (the first key) with its tasks side by side, so beyond ``limit``
    models it draws the half of lowest mean perplexity (its first measure) over the tasks
    and the rest of highest, and its note says how many it left out.
    """
    measures = perplexity_measures(source)  # lm-eval's rolling tasks: word/byte, bits/byte
    if not measures:
        return []
    ppl_keys = key_split(source.schema, COMPARISON_COLUMNS)
    what = " and ".join(m.replace("_", " ") for m in measures)
    note = f"{what.capitalize()} per group, lower is better; bars: {100 * level:.4g}% intervals."
    if ppl_keys:
        first = measures[0]
        chosen, models = bounded_models(source, ppl_keys[:1], first, limit)
        if chosen is not None:
            source = _kept(source, chosen)
            note += (
                f" Drawn: the {limit // 2} models of lowest mean {first.replace('_', ' ')} "
                f"over the tasks and the {limit - limit // 2} of highest; "
                f"{models - limit:,} of {models:,} models are left out."
            )
    return [("Perplexity", note, perplexity_chart(source))]


def report_charts(
    comparison: pl.DataFrame | pl.LazyFrame,
    *,
    bin_statistics: pl.DataFrame | pl.LazyFrame,
    perplexity: pl.DataFrame | pl.LazyFrame | None = None,
    selective: pl.DataFrame | pl.LazyFrame | None = None,
    limit: int = CHART_GROUP_LIMIT,
    level: float = 0.95,
) -> list[tuple[str, str, Any]]:
    """The report's charts as ``(title, note, chart)``; the command line saves them as PNG.

    First the views of every model (beyond :data:`HEATMAP_ROW_LIMIT` models, the half of
    lowest mean ECE over the tasks and the half of highest): with two or more keys the
    model × task heatmap (:func:`~calib_frames.plot.calibration_heatmap`), and with
    more than one group a reliability diagram of the group the reader picks in
    dropdowns (``pick=`` of :func:`~calib_frames.plot.reliability_diagram`: each group's
    bins once, one diagram drawn). Then reliability diagrams and confidence histograms of
    the bin statistics, then, as the
    comparison table has the columns, accuracy against ECE, the Brier decomposition,
    perplexity (whichever of :data:`~calib_frames.plot.perplexity.PERPLEXITY_MEASURES` the
    tables have values of: lm-eval's rolling tasks give word and byte perplexity and bits
    per byte) and, with a selective curve table, the risk–coverage curves. Up to
    :data:`OVERLAY_LIMIT` models share a panel (one panel per task); more get a panel
    each. Charts stay bounded whatever the number of groups: beyond ``limit`` groups they
    summarise, drawing the ``limit // 2`` groups of lowest ECE and the rest of highest
    (perplexity: the models of lowest and highest mean of its first measure), and each
    chart's note says how many it left out.

    Parameters
    ----------
    comparison
        The comparison (or metrics) table.
    bin_statistics
        The bin-statistics table (optionally with ``accuracy_ci_low/_high``).
    perplexity
        An optional perplexity table (default: the comparison table's columns).
    selective
        An optional selective curve table (:func:`~calib_frames.selective_curve`, keyed
        like the bin statistics) for the risk–coverage chart.
    limit
        Most groups drawn (default 8, at least 2).
    level
        The level of the tables' intervals, as the notes say it.

    Returns
    -------
    list of (str, str, altair chart)
        One entry per chart, in report order.

    Raises
    ------
    TableError
        If ``bin_statistics`` is not a bin-statistics table.

    See Also
    --------
    write_report : the page that shows them.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.report import report_charts
    >>> preds = pl.DataFrame({"model": ["a", "a", "b"], "confidence": [0.9, 0.2, 0.7],
    ...                       "correct": [True, False, True]})
    >>> stats = cf.bin_statistics(preds, by="model")
    >>> table = cf.metrics_from_bin_statistics(stats)
    >>> [title for title, _, _ in report_charts(table, bin_statistics=stats)]
    ... # doctest: +NORMALIZE_WHITESPACE
    ['Reliability diagram of one group', 'Reliability diagrams', 'Confidence histograms',
     'Accuracy against ECE', 'Brier decomposition']
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
        raise ArgumentError(f"limit= must be an integer >= 2, got {limit!r}")
    from altair.utils.schemapi import debug_mode

    # altair validates every schema object as it is made (BENCHMARKS.md: the cost at 100
    # groups); these charts' whole specs are validated by the tests' to_dict instead
    with debug_mode(False):
        return _charts(comparison, bin_statistics, perplexity, selective, limit, level=level)


def _charts(
    comparison: pl.DataFrame | pl.LazyFrame,
    bin_statistics: pl.DataFrame | pl.LazyFrame,
    perplexity: pl.DataFrame | pl.LazyFrame | None,
    selective: pl.DataFrame | pl.LazyFrame | None,
    limit: int,
    *,
    level: float,
) -> list[tuple[str, str, Any]]:
    """The body of :func:`report_charts`: the charts of :func:`report_layout`'s rows."""
    # whole: the perplexity chart bounds its own groups (token-only ones too)
    whole = frame(comparison, "report comparison")
    bins = frame(bin_statistics, "report bin_statistics")
    bin_keys = spec_keys(bins, RELIABILITY, "bin-statistics table")
    layout = report_layout(whole, bins, bin_keys, limit)
    table, bins, left_out = layout.table, layout.bins, layout.left_out
    overlay, facet, columns = layout.overlay, layout.facet, layout.columns
    note = (
        "Accuracy against mean confidence per bin; bars to the diagonal show each bin's "
        "gap (red: overconfident, below; blue: underconfident, above), dashed and faint "
        f"for bins of fewer than {MCE_MIN_COUNT} predictions (which MCE leaves out); "
        "predictions per bin below, ECE, MCE and Brier score under each panel."
    )
    if overlay:
        note += " Click a legend entry to highlight a model."
    note += left_out
    built: list[tuple[str, str, Any]] = [
        *_views(layout),
        (
            "Reliability diagrams",
            note,
            reliability_diagram(bins, metrics=layout.metrics, facet=facet, columns=columns),
        ),
        (
            "Confidence histograms",
            (
                "Share of each group's predictions per confidence bin."
                if overlay
                else "Predictions per confidence bin."
            )
            + left_out,
            confidence_histogram(
                bins,
                color=bin_keys[:1] if overlay else None,
                facet=facet or None,
                columns=columns,
                share=overlay,
            ),
        ),
    ]
    if "ece" in table.columns and "accuracy" in table.columns:
        built.append(
            (
                "Accuracy against ECE",
                "One point per group." + left_out,
                metric_scatter(table, columns=columns),
            )
        )
    if all(c in table.columns for c in ("reliability", "resolution", "brier")):
        built.append(
            (
                "Brier decomposition",
                "Reliability (miscalibration, added to the Brier score) to the right; "
                "resolution (subtracted) to the left." + left_out,
                brier_decomposition_chart(table, columns=columns),
            )
        )
    source = whole if perplexity is None else frame(perplexity, "report perplexity")
    built.extend(_perplexity_view(source, limit, level))
    if selective is not None:
        # one colour per model (the first key), a panel per task (the other keys)
        curve = frame(selective, "report selective")
        if layout.kept is not None:
            curve = _kept(curve, layout.kept)
        by_task = bin_keys[1:]
        built.append(
            (
                "Risk–coverage curves",
                "Error rate among the most confident answers against the share answered "
                "(lower is better; the area under a curve is its AURC)." + left_out,
                risk_coverage_chart(
                    curve,
                    facet=by_task or None,
                    columns=min(curve.select(by_task).n_unique(), 4) if by_task else None,
                ),
            )
        )
    return built


def over_time_charts(
    over_batches: pl.DataFrame | pl.LazyFrame,
    changes: pl.DataFrame | pl.LazyFrame | None = None,
) -> list[tuple[str, str, Any]]:
    """The report's section over time, as ``(title, note, chart)``: none for one batch.

    The trend chart (:func:`~calib_frames.plot.trend_chart`) of the ECE per batch, and of
    accuracy, with the changed groups of ``changes`` marked.

    Parameters
    ----------
    over_batches
        A table of :func:`~calib_frames.estimators.metrics_over_batches`.
    changes
        Optional table of :func:`~calib_frames.estimators.calibration_change`.

    Returns
    -------
    list of (str, str, altair chart)
        Empty when the table holds fewer than two batches.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.report.charts import over_time_charts
    >>> one = pl.DataFrame({"batch": [0], "batch_id": ["x"], "batch_time": [None],
    ...                     "count": [10], "accuracy": [0.5], "ece": [0.1]})
    >>> over_time_charts(one)
    []
    """
    table = frame(over_batches, "report over_batches")
    if "batch_id" not in table.columns or table.get_column("batch_id").n_unique() < 2:
        return []
    note = (
        "One panel per group, one point per batch; the band is the bootstrap interval, the "
        "dashed line the ECE noise floor. Red panels (first): the tested batch differs from "
        "the pooled earlier batches beyond noise (corrected across groups × metrics)."
    )
    built = [("ECE over batches", note, trend_chart(table, changes, metric="ece"))]
    if "accuracy" in table.columns:
        built.append(
            (
                "Accuracy over batches",
                "The same panels for accuracy.",
                trend_chart(table, changes, metric="accuracy"),
            )
        )
    return built
