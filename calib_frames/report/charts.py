"""The report's charts: which charts of :mod:`calib_frames.plot` a report shows, and how.

The page (:mod:`calib_frames.report.page`) embeds them, the command line saves each as a
PNG beside it; both take them from :func:`report_charts`, so the two show the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from calib_frames.arguments import LEVEL, Integer, check_arguments
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
from calib_frames.plot.heatmap import heatmap_rows
from calib_frames.plot.perplexity import perplexity_measures
from calib_frames.schema import RELIABILITY

__all__ = [
    "HEATMAP_ROW_LIMIT",
    "MODEL_LIMIT",
    "PICKED_DIAGRAM",
    "TASK_LIMIT",
    "ReportLayout",
    "bounded_models",
    "over_time_charts",
    "report_charts",
    "report_layout",
]

MODEL_LIMIT = 4
"""Most models the report's small multiples draw: the best half and the worst half, in the
leaderboard's order (all of them when there are no more)."""

TASK_LIMIT = 12
"""Most panels (tasks) of a small multiple: the first tasks by name beyond it."""

HEATMAP_ROW_LIMIT = 50
"""Most models (rows) of the report's heatmap: beyond it, the first and the last half."""


PICKED_DIAGRAM = "Reliability diagram of one group"
"""The title of the chart whose group the reader picks in dropdowns (no PNG: a static
image would show only the first group)."""


def _kept(frame_: pl.DataFrame, chosen: pl.DataFrame) -> pl.DataFrame:
    return frame_.join(chosen, on=chosen.columns, how="semi", nulls_equal=True)


def bounded_models(
    table: pl.DataFrame, model: list[str], column: str, limit: int
) -> tuple[pl.DataFrame | None, int]:
    """The models drawn when there are more than ``limit`` (None: all), and how many there are.

    Models rank by the mean of their finite ``column`` values over their tasks; beyond
    ``limit``, the ``limit // 2`` of lowest mean and the rest of highest are kept (the
    perplexity chart's, by its first measure, when the report has no calibration order).

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
        .sort(column, *model, nulls_last=True)
    )
    if ranked.height <= limit:
        return None, ranked.height
    low = limit // 2
    chosen = pl.concat([ranked.head(low), ranked.tail(limit - low)]).select(model)
    return chosen, ranked.height


@dataclass(frozen=True)
class ReportLayout:
    """What the report's charts draw, as :func:`report_layout` decides it from the tables."""

    bin_keys: list[str]
    """The bin statistics' keys (the groups of the diagrams)."""
    model: str | None
    """The key that names a model (the leaderboard's; else the first key)."""
    order: pl.DataFrame | None
    """The models with predictions, best first (the leaderboard's order, else by mean ECE)."""
    models: list[str]
    """The models the small multiples draw, best first, as text (their legends' order)."""
    views: bool
    """Whether the views of every model are drawn (the heatmap and the picked diagram)."""
    view_bins: pl.DataFrame
    """The bin rows of the views' models (the heatmap's rows)."""
    view_note: str
    """The sentence saying which models the views leave out (empty: none)."""
    heatmap: bool
    """Whether the model × task heatmap is drawn (two or more keys, the gap column)."""
    linked: bool
    """Whether a click on a heatmap cell picks its group in the picked diagram."""
    groups: int
    """The groups of the views (the picked diagram offers each)."""
    table: pl.DataFrame
    """The comparison rows the small multiples draw (their models and tasks)."""
    bins: pl.DataFrame
    """The bin rows of those groups."""
    kept: pl.DataFrame | None
    """The keys of those groups when the small multiples leave some out (None: none)."""
    left_out: str
    """The sentence saying which models and tasks the small multiples draw (empty: all)."""
    metrics: pl.DataFrame | None
    """The metrics table of the reliability diagrams (None: keyed otherwise)."""
    facet: list[str]
    """The keys that make the panels (the task keys: every key but the model's)."""
    columns: int | None
    """Panels per row (None: one panel)."""


def report_layout(
    table: pl.DataFrame,
    bins: pl.DataFrame,
    bin_keys: list[str],
    limit: int = MODEL_LIMIT,
    *,
    order: pl.DataFrame | None = None,
) -> ReportLayout:
    """Which models and groups each of the report's charts draws, and in how many panels.

    One rule for every section. The models rank best first: in the order of ``order``
    (the leaderboard, whose first column names the model key), else by the mean ECE of
    their tasks (:func:`~calib_frames.plot.heatmap.heatmap_rows`). The views (heatmap,
    picked diagram) draw every model up to :data:`HEATMAP_ROW_LIMIT`, else the first and
    the last half. The small multiples (reliability diagrams, histograms, scatter, Brier
    decomposition, risk–coverage) draw the ``limit // 2`` best and the rest of ``limit``
    worst models across their tasks, one colour per model and a panel per task (up to
    :data:`TASK_LIMIT`, the first by name): at most ``limit`` lines in a panel, and no
    panel without a model. Polars alone: no chart is built.

    Parameters
    ----------
    table
        The comparison (or metrics) table.
    bins
        The bin statistics.
    bin_keys
        Their keys.
    limit
        Most models the small multiples draw (at least 2).
    order
        The leaderboard (or any table whose first column is the model key, in the order
        to draw); rows of other models follow by mean ECE.

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
    >>> layout.order.get_column("model").to_list()  # by mean ECE over the tasks
    ['calibrated', 'underconfident', 'overconfident']
    >>> layout.table.get_column("model").unique().sort().to_list(), layout.facet
    (['calibrated', 'overconfident'], ['task'])
    """
    keys = key_split(table.schema, COMPARISON_COLUMNS)
    model = _model_key(keys, bin_keys, order)
    kept: pl.DataFrame | None = None
    view_bins, view_note, left_out, ranked = bins, "", "", None
    drawn_table, drawn_bins, models = table, bins, []
    if model is not None:
        predicted = (
            table.filter(pl.col("count").fill_null(0) > 0) if "count" in table.columns else table
        )
        ranked, _ = heatmap_rows(predicted, [model], order=order)
        shown, hidden = heatmap_rows(predicted, [model], order=order, rows=HEATMAP_ROW_LIMIT)
        view_bins = _kept(bins, shown)
        if hidden:
            half = HEATMAP_ROW_LIMIT // 2
            view_note = (
                f" Drawn: the {half} first models and the {HEATMAP_ROW_LIMIT - half} last "
                f"({'the leaderboard' if order is not None else 'mean ECE'} order); "
                f"{hidden:,} of {ranked.height:,} models are left out here (the grey row; "
                "the tables have them all)."
            )
        drawn, skipped = heatmap_rows(predicted, [model], order=order, rows=limit)
        tasks = [k for k in bin_keys if k != model]
        chosen = predicted.join(drawn, on=[model], how="semi", nulls_equal=True)
        notes = []
        if skipped:
            notes.append(
                f"the {limit // 2} first and the {limit - limit // 2} last of "
                f"{ranked.height:,} models"
            )
        if tasks:
            names = chosen.select(tasks).unique().sort(tasks, nulls_last=True)
            if names.height > TASK_LIMIT:
                notes.append(f"the first {TASK_LIMIT} of {names.height:,} tasks by name")
                chosen = chosen.join(names.head(TASK_LIMIT), on=tasks, how="semi", nulls_equal=True)
        if notes:
            groups_ = chosen.select(model, *tasks).unique(maintain_order=True)
            kept = groups_
            drawn_table, drawn_bins = _kept(table, groups_), _kept(bins, groups_)
            left_out = f" Drawn: {' on '.join(notes)} (the heatmap and the tables have them all)."
        models = drawn.get_column(model).cast(pl.String).drop_nulls().to_list()
        drawn_table = _in_order(drawn_table, model, models)
        drawn_bins = _in_order(drawn_bins, model, models)
    views = model is not None and "ece" in table.columns
    groups = view_bins.select(bin_keys).n_unique() if bin_keys else 1
    heatmap = views and len(keys) >= 2 and "overconfidence" in table.columns
    same_keys = sorted(keys) == sorted(bin_keys)
    facet = [k for k in bin_keys if k != model]
    panels = drawn_bins.select(facet).n_unique() if facet else 1
    return ReportLayout(
        bin_keys=bin_keys,
        model=model,
        order=ranked,
        models=models,
        views=views,
        view_bins=view_bins,
        view_note=view_note,
        heatmap=heatmap,
        linked=heatmap and groups > 1 and same_keys,
        groups=groups,
        table=drawn_table,
        bins=drawn_bins,
        kept=kept,
        left_out=left_out,
        metrics=drawn_table if same_keys else None,
        facet=facet,
        columns=min(panels, 4) if facet else None,
    )


def _model_key(keys: list[str], bin_keys: list[str], order: pl.DataFrame | None) -> str | None:
    """The key that names a model: ``order``'s first column, else the first key (None: none)."""
    if (
        order is not None
        and order.columns
        and order.columns[0] in keys
        and order.columns[0] in bin_keys
    ):
        return order.columns[0]
    if keys and bin_keys and keys[0] == bin_keys[0]:
        return keys[0]
    return None


def _in_order(frame_: pl.DataFrame, model: str, models: list[str]) -> pl.DataFrame:
    """``frame_`` with the model key as an Enum of the drawn ``models``, best first.

    The charts order a legend by its key's values: an Enum's in its categories' order.
    """
    if not models:
        return frame_
    return frame_.with_columns(pl.col(model).cast(pl.String).cast(pl.Enum(models)))


def _views(
    layout: ReportLayout, table: pl.DataFrame, order: pl.DataFrame | None
) -> list[tuple[str, str, Any]]:
    """The heatmap (two or more keys) and the reliability diagram of a picked group.

    Both over the same models (:attr:`ReportLayout.view_bins`: the heatmap's rows). Their
    specs' ``usermeta`` (``{"pick": "cells"}``, ``{"pick": [keys]}``) lets the page's
    script pick a clicked cell's group.
    """
    if not layout.views:
        return []
    bins, bin_keys = layout.view_bins, layout.bin_keys
    views: list[tuple[str, str, Any]] = []
    linked = layout.linked
    if layout.heatmap:
        note = (
            "One cell per model and task, best models first, coloured by the calibration "
            "gap, mean confidence − accuracy (red: overconfident; blue: underconfident; "
            "purple: over- and underconfident bins, by ECE); a dot marks an ECE beyond the "
            "noise of a calibrated model; grey: no number (no predictions, or weights "
            "summing to 0), light grey with a small square: too few predictions. Hover a "
            "cell for the whole names and numbers."
        )
        # linked, the page's script picks a clicked cell's group in the diagram below
        # and outlines the cell of the group that diagram draws
        heatmap = calibration_heatmap(
            table,
            label=layout.model,
            pick=bin_keys if linked else None,
            order=order if order is not None else layout.order,
            rows=HEATMAP_ROW_LIMIT,
        )
        if linked:
            heatmap = heatmap.properties(usermeta={"pick": "cells"})
            note += " Click a cell to draw its reliability diagram below (its cell is outlined)."
        views.append(("Calibration gap by model and task", note + layout.view_note, heatmap))
    if layout.groups > 1:
        keys = key_split(table.schema, COMPARISON_COLUMNS)
        metrics = (
            _kept(table, bins.select(keys).unique()) if sorted(keys) == sorted(bin_keys) else None
        )
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


def _perplexity_view(
    source: pl.DataFrame, layout: ReportLayout, limit: int, level: float
) -> list[tuple[str, str, Any]]:
    """The perplexity chart of ``source`` (none without a perplexity measure).

    One row per model (the first key) with its tasks side by side: the models the small
    multiples draw (:attr:`ReportLayout.table`) when they have a perplexity, else (a table
    of perplexity alone) the ``limit // 2`` of lowest mean perplexity (its first measure)
    over the tasks and the rest of highest; its note says how many it left out.
    """
    measures = perplexity_measures(source)  # lm-eval's rolling tasks: word/byte, bits/byte
    if not measures:
        return []
    ppl_keys = key_split(source.schema, COMPARISON_COLUMNS)
    what = " and ".join(m.replace("_", " ") for m in measures)
    note = f"{what.capitalize()} per group, lower is better; bars: {100 * level:.4g}% intervals."
    first = measures[0]
    model = layout.model
    if model is not None and model in ppl_keys and layout.kept is not None:
        mine = source.filter(pl.col(model).cast(pl.String).is_in(layout.models))
        if mine.get_column(first).is_finite().any():
            source = _in_order(mine, model, layout.models)
            return [("Perplexity", note + layout.left_out, perplexity_chart(source))]
    if ppl_keys:
        chosen, count = bounded_models(source, ppl_keys[:1], first, limit)
        if chosen is not None:
            source = _kept(source, chosen)
            note += (
                f" Drawn: the {limit // 2} models of lowest mean {first.replace('_', ' ')} "
                f"over the tasks and the {limit - limit // 2} of highest; "
                f"{count - limit:,} of {count:,} models are left out."
            )
    return [("Perplexity", note, perplexity_chart(source))]


@check_arguments(limit=Integer(2), level=LEVEL)
def report_charts(
    comparison: pl.DataFrame | pl.LazyFrame,
    *,
    bin_statistics: pl.DataFrame | pl.LazyFrame,
    perplexity: pl.DataFrame | pl.LazyFrame | None = None,
    selective: pl.DataFrame | pl.LazyFrame | None = None,
    leaderboard: pl.DataFrame | pl.LazyFrame | None = None,
    limit: int = MODEL_LIMIT,
    level: float = 0.95,
) -> list[tuple[str, str, Any]]:
    """The report's charts as ``(title, note, chart)``; the command line saves them as PNG.

    One rule decides what every chart draws (:func:`report_layout`): the models rank best
    first, in the leaderboard's order (``leaderboard``), else by the mean ECE of their
    tasks. First the views of every model (beyond :data:`HEATMAP_ROW_LIMIT`, the first
    and the last half, a grey row between): with two or more keys the model × task
    heatmap (:func:`~calib_frames.plot.calibration_heatmap`), and with more than one
    group a reliability diagram of the group the reader picks in dropdowns (``pick=`` of
    :func:`~calib_frames.plot.reliability_diagram`: each group's bins once, one diagram
    drawn). Then the small multiples of the ``limit // 2`` best and the rest of
    ``limit`` worst models across their tasks (a colour per model, best first, and a
    panel per task): reliability diagrams, confidence histograms, and as the comparison
    table has the columns accuracy against ECE, the Brier decomposition, perplexity
    (whichever of :data:`~calib_frames.plot.perplexity.PERPLEXITY_MEASURES` the tables
    have values of) and, with a selective curve table, the risk–coverage curves. Each
    chart's note says what it left out.

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
    leaderboard
        An optional leaderboard (:func:`~calib_frames.leaderboard`): its first column
        names the models, its rows' order is the charts'.
    limit
        Most models the small multiples draw (default 4, at least 2).
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
    from altair.utils.schemapi import debug_mode

    # altair validates every schema object as it is made (BENCHMARKS.md: the cost at 100
    # groups); these charts' whole specs are validated by the tests' to_dict instead
    with debug_mode(False):
        return _charts(
            comparison,
            bin_statistics,
            perplexity=perplexity,
            selective=selective,
            leaderboard=leaderboard,
            limit=limit,
            level=level,
        )


def _charts(
    comparison: pl.DataFrame | pl.LazyFrame,
    bin_statistics: pl.DataFrame | pl.LazyFrame,
    *,
    perplexity: pl.DataFrame | pl.LazyFrame | None,
    selective: pl.DataFrame | pl.LazyFrame | None,
    leaderboard: pl.DataFrame | pl.LazyFrame | None,
    limit: int,
    level: float,
) -> list[tuple[str, str, Any]]:
    """The body of :func:`report_charts`: the charts of :func:`report_layout`'s rows."""
    # whole: the perplexity chart bounds its own groups (token-only ones too)
    whole = frame(comparison, "report comparison")
    bins = frame(bin_statistics, "report bin_statistics")
    order = None if leaderboard is None else frame(leaderboard, "report leaderboard")
    bin_keys = spec_keys(bins, RELIABILITY, "bin-statistics table")
    layout = report_layout(whole, bins, bin_keys, limit, order=order)
    table, bins, left_out = layout.table, layout.bins, layout.left_out
    facet, columns = layout.facet or None, layout.columns
    color = [layout.model] if layout.model is not None else None
    several = layout.model is not None and table.get_column(layout.model).n_unique() > 1
    note = (
        "Accuracy against mean confidence per bin; bars to the diagonal show each bin's "
        "gap (red: overconfident, below; blue: underconfident, above), dashed and faint "
        f"for bins of fewer than {MCE_MIN_COUNT} predictions (which MCE leaves out); "
        "predictions per bin below, ECE, MCE and Brier score under each panel."
    )
    if several:
        note += " Click a legend entry to highlight a model."
    note += left_out
    built: list[tuple[str, str, Any]] = [
        *_views(layout, whole, order),
        (
            "Reliability diagrams",
            note,
            reliability_diagram(
                bins, metrics=layout.metrics, color=color, facet=facet, columns=columns
            ),
        ),
        (
            "Confidence histograms",
            (
                "Share of each model's predictions per confidence bin."
                if several
                else "Predictions per confidence bin."
            )
            + left_out,
            confidence_histogram(
                bins,
                color=color if several else None,
                facet=facet,
                columns=columns,
                share=several,
            ),
        ),
    ]
    if "ece" in table.columns and "accuracy" in table.columns:
        built.append(
            (
                "Accuracy against ECE",
                "One point per model and task." + left_out,
                metric_scatter(table, label=layout.model, facet=facet or [], columns=columns),
            )
        )
    if all(c in table.columns for c in ("reliability", "resolution", "brier")):
        built.append(
            (
                "Brier decomposition",
                "Reliability (miscalibration, added to the Brier score) to the right; "
                "resolution (subtracted) to the left." + left_out,
                brier_decomposition_chart(
                    table, label=layout.model, facet=facet or [], columns=columns
                ),
            )
        )
    source = whole if perplexity is None else frame(perplexity, "report perplexity")
    built.extend(_perplexity_view(source, layout, limit, level))
    if selective is not None:
        curve = frame(selective, "report selective")
        if layout.kept is not None:
            curve = _kept(curve, layout.kept)
        if layout.model is not None:
            curve = _in_order(curve, layout.model, layout.models)
        built.append(
            (
                "Risk–coverage curves",
                "Error rate among the most confident answers against the share answered "
                "(lower is better; the area under a curve is its AURC)." + left_out,
                risk_coverage_chart(
                    curve, color=color, facet=facet, columns=columns, width=240, height=200
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
        "One panel per group (model · task), one value per batch; grey: the reference "
        "window. Red panels (first): the group changed tonight against the window beyond "
        "noise (p-values corrected across batches × groups × metrics); red points from the "
        "onset on, the dashed rule at the onset."
    )
    built = [("ECE over batches", note, trend_chart(table, changes, metric="ece"))]
    if "accuracy" in table.columns:
        built.append(
            (
                "Accuracy over batches",
                "The same panels for accuracy; the band is its Wilson interval per batch.",
                trend_chart(table, changes, metric="accuracy"),
            )
        )
    return built
