"""The reliability diagram of a bin table, with the counts per bin under it.

It reads a reliability or bin-statistics table (one row per group and bin); the
confidence histogram alone is :mod:`calib_frames.plot.histogram`. No chart computes a
metric: the per-bin gap drawn on the diagram is accuracy − mean confidence of that bin,
which is what the diagram shows, and a group's ECE, MCE and Brier score are read from its
metrics table. :func:`diagram_data` is the data step, in polars alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from calib_frames.arguments import FLAG, check_arguments
from calib_frames.exceptions import ArgumentError
from calib_frames.metrics.calibration import MCE_MIN_COUNT
from calib_frames.metrics.registry import metric
from calib_frames.plot._common import (
    COUNT_LABEL,
    LEGEND_TITLE,
    NO_FRAME,
    PANELS,
    PIXELS,
    SINGLE,
    bin_tooltips,
    color_scale,
    count_marks,
    diagonal,
    emphasis,
    group_color,
    group_lines,
    header,
    in_panels,
    inline_data,
    label_expr,
    pick_keys,
    picked_group,
    share_parts,
    unit_scale,
)
from calib_frames.plot.frames import (
    COLOR,
    PANEL,
    Prepared,
    bin_counts,
    bin_rows,
    facet_columns,
    frame,
    group_labels,
    interval_columns,
    metrics_columns,
    prepare,
    spec_keys,
)
from calib_frames.schema import RELIABILITY

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "DIRECTION_COLORS",
    "MANY_COLORS",
    "DiagramData",
    "diagram_data",
    "reliability_diagram",
    "stacked_parts",
]

OVER, UNDER = "overconfident", "underconfident"
DIRECTION_COLORS = {OVER: "#d6604d", UNDER: "#4393c3", "calibrated": "#7f7f7f"}
"""Colours of a bin's gap to the diagonal, by the direction of the miscalibration."""
MANY_COLORS = 5
"""Above this many colour groups in one panel the gaps are drawn for the highlighted group
only (20 overlaid gap bars are not readable)."""

_DIAGRAM_METRICS = ["ece", "mce", "brier"]


@dataclass(frozen=True)
class DiagramData:
    """What :func:`reliability_diagram` draws, as :func:`diagram_data` prepares it."""

    prepared: Prepared
    """The groups: colours and panels."""
    populated: pl.DataFrame
    """The populated bins (count > 0, finite means): the keys, ``_color``, ``_panel``,
    ``bin``, ``_bin_range``, ``count``, ``mean_confidence``, ``accuracy``, ``_gap``
    (accuracy − mean confidence), ``_direction``, the accuracy's bounds when the table has
    them, and the group's ``ece``, ``mce``, ``brier`` (null without a metrics table)."""
    hist: pl.DataFrame
    """Every bin with bounds, for the counts under the diagram."""
    has_ci: bool
    """Whether the table has the accuracy's interval (error bars)."""
    picked: list[str]
    """The keys of ``pick=`` (none: every group drawn)."""
    choices: dict[str, list[Any]]
    """The values of each picked key, sorted, as its dropdown offers them."""
    hist_top: int | None
    """The top of the shared count axis (None: it fits the picked group)."""
    group_metrics: pl.DataFrame | None
    """ECE, MCE and Brier score per colour group (None without a metrics table)."""
    panel_metrics: pl.DataFrame | None
    """The same per panel and colour group, in panel order."""
    lines: int
    """The most colour groups of a panel (the metric lines under it)."""
    metrics_line: str
    """One group alone with its metrics: "ECE … · MCE … · Brier …" (else empty)."""
    group: str
    """The name of the one group of a table that has keys and one group (else empty)."""


def diagram_data(
    stats: pl.DataFrame | pl.LazyFrame,
    *,
    metrics: pl.DataFrame | pl.LazyFrame | None = None,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
    pick: str | Sequence[str] | None = None,
) -> DiagramData:
    """The bins of :func:`reliability_diagram`, its groups and their metrics (no altair).

    Takes the table and arguments of :func:`reliability_diagram` (``color`` defaults to
    the keys not picked) and raises its errors.

    Returns
    -------
    DiagramData
        The diagram's bins, the histogram's bins and the metrics lines.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot.reliability import diagram_data
    >>> preds = pl.DataFrame({"confidence": [0.9, 0.8, 0.3], "correct": [1, 0, 0]})
    >>> data = diagram_data(cf.bin_statistics(preds), metrics=cf.calibration_metrics(preds))
    >>> data.populated.select("_bin_range", "_direction").rows()
    [('[0.3, 0.4)', 'overconfident'), ('[0.8, 0.9)', 'overconfident'),
     ('[0.9, 1.0]', 'underconfident')]
    >>> data.hist.height, data.hist_top, data.metrics_line
    (10, 1, 'ECE 0.400 · MCE 0.800 · Brier 0.247')
    """
    data = frame(stats, "reliability_diagram")
    keys = spec_keys(data, RELIABILITY, "reliability table")
    has_ci = interval_columns(data.schema, "accuracy", role="reliability table") is not None
    picked = pick_keys(pick, keys)
    if picked and facet is not None:
        raise ArgumentError("pick= draws one chart: leave facet= unset and histogram=True")
    if picked and color is None:
        color = [key for key in keys if key not in picked]
    prepared = prepare(data, keys, color=color, facet=facet)
    bins = bin_rows(prepared)
    populated = _populated(bins, keys, metrics, has_ci)
    hist = bin_counts(bins, keys).select(
        *keys, COLOR, PANEL, "bin", "_bin_range", "count", "bin_lower", "bin_upper", "_bin_mid"
    )
    choices = {}
    for key in picked:
        column = data.get_column(key).drop_nulls()
        if not (column.dtype.is_numeric() or column.dtype in (pl.String, pl.Boolean)):
            column = column.cast(pl.String)  # as the chart's data carry it (records)
        choices[key] = column.unique().sort().to_list()
    group_metrics = panel_metrics = None
    lines, line = 1, ""
    if metrics is not None:
        first = pl.col(_DIAGRAM_METRICS).first()
        group_metrics = populated.group_by(COLOR).agg(first).sort(COLOR)
        panel_metrics = (
            populated.group_by(PANEL, COLOR, maintain_order=True)
            .agg(first)
            .sort(PANEL, COLOR, maintain_order=True)
        )
        lines = int(panel_metrics.group_by(PANEL).len().get_column("len").max() or 1)  # type: ignore[arg-type]
        alone = len(prepared.colors) == 1 and not prepared.facet and not picked
        if alone and populated.height:
            line = _metrics_line(populated.row(0, named=True))
    group = ""
    if keys and not picked and data.select(keys).n_unique() == 1:
        group = str(group_labels(data.head(1), keys, limit=None)[0])
    return DiagramData(
        group=group,
        prepared=prepared,
        populated=populated,
        hist=hist,
        has_ci=has_ci,
        picked=picked,
        choices=choices,
        hist_top=None if picked else max(int(hist.get_column("count").max() or 0), 1),  # type: ignore[arg-type]
        group_metrics=group_metrics,
        panel_metrics=panel_metrics,
        lines=lines,
        metrics_line=line,
    )


def _populated(
    bins: pl.DataFrame, keys: list[str], metrics: pl.DataFrame | pl.LazyFrame | None, has_ci: bool
) -> pl.DataFrame:
    """The populated bins with their gap, its direction and the group's metrics."""
    populated = bins.filter(
        pl.col("count") > 0,
        pl.col("mean_confidence").is_finite(),
        pl.col("accuracy").is_finite(),
    ).with_columns((pl.col("accuracy") - pl.col("mean_confidence")).alias("_gap"))
    populated = populated.with_columns(
        pl.when(pl.col("_gap") < 0)
        .then(pl.lit(OVER))
        .when(pl.col("_gap") > 0)
        .then(pl.lit(UNDER))
        .otherwise(pl.lit("calibrated"))
        .alias("_direction")
    )
    if metrics is None:
        populated = populated.with_columns(
            [pl.lit(None, dtype=pl.Float64).alias(name) for name in _DIAGRAM_METRICS]
        )
    else:
        summary = metrics_columns(
            frame(metrics, "reliability_diagram metrics"), keys, _DIAGRAM_METRICS, role="metrics"
        )
        summary = summary.with_columns(pl.col(_DIAGRAM_METRICS).cast(pl.Float64))
        populated = (
            populated.join(summary, on=keys, how="left", nulls_equal=True)
            if keys
            else populated.join(summary, how="cross")
        )
    keep = [
        *keys,
        COLOR,
        PANEL,
        "bin",
        "_bin_range",
        "count",
        "mean_confidence",
        "accuracy",
        "_gap",
        "_direction",
    ]
    if has_ci:
        keep += ["accuracy_ci_low", "accuracy_ci_high"]
    return populated.select(*keep, *_DIAGRAM_METRICS)


def stacked_parts(data: DiagramData) -> pl.DataFrame:
    """The one dataset of a faceted diagram: its bins, the histogram's and the metric lines.

    Facets inside a concatenation do not share inline data otherwise; ``_part`` tells the
    rows apart (``diagram``, ``histogram``, ``metrics``).
    """
    frames = [
        data.populated.with_columns(pl.lit("diagram").alias("_part")),
        data.hist.with_columns(pl.lit("histogram").alias("_part")),
    ]
    if data.panel_metrics is not None:
        frames.append(data.panel_metrics.with_columns(pl.lit("metrics").alias("_part")))
    return pl.concat(frames, how="diagonal_relaxed")


def _metrics_line(row: dict[str, Any]) -> str:
    values = [row.get(name) for name in _DIAGRAM_METRICS]
    shown = ["n/a" if not isinstance(v, float) else f"{v:.3f}" for v in values]
    return " · ".join(
        f"{metric(name).label} {text}" for name, text in zip(_DIAGRAM_METRICS, shown, strict=True)
    )


@check_arguments(columns=PANELS, histogram=FLAG, width=PIXELS | None, height=PIXELS | None)
def reliability_diagram(
    stats: pl.DataFrame | pl.LazyFrame,
    *,
    metrics: pl.DataFrame | pl.LazyFrame | None = None,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
    pick: str | Sequence[str] | None = None,
    columns: int | None = None,
    histogram: bool = True,
    width: float | None = None,
    height: float | None = None,
    title: str | None = None,
) -> alt.TopLevelMixin:
    """Reliability diagram: accuracy against mean confidence per bin, with the gaps.

    Per populated bin a point at (mean confidence, accuracy) joined per group by a line;
    the diagonal (perfect calibration); the gap from each point to the diagonal as a bar
    coloured by direction (red below the diagonal: overconfident, accuracy < confidence;
    blue above: underconfident); error bars when the table has ``accuracy_ci_low`` and
    ``accuracy_ci_high``; and, under it, the number of predictions per bin (bars for one
    group, lines for several), on the same confidence axis. Empty bins (``count`` 0, or
    null means) are not drawn. Tooltips give the bin range, count, accuracy, mean
    confidence, gap and the group's ECE, MCE and Brier score. With ``metrics``, each
    panel also writes each group's ECE, MCE and Brier score (read from the table, not
    recomputed).

    Several groups in one panel get one colour each and a legend that highlights the
    clicked group (shift-click for more). With more than five groups in a panel, the gaps
    are drawn for the highlighted group only.

    Parameters
    ----------
    stats
        A reliability table (:func:`~calib_frames.reliability_table`) or a bin-statistics
        table (:func:`~calib_frames.bin_statistics`); extra columns are ignored except
        ``accuracy_ci_low`` / ``accuracy_ci_high``.
    metrics
        Optional metrics or comparison table with the same group keys (columns ``ece``,
        ``mce``, ``brier``).
    color
        Key(s) told apart by colour in a panel; default: every key not in ``facet``.
    facet
        Key(s) that make small multiples, one panel per combination.
    pick
        Key(s) the reader picks a value of, each in a dropdown under the chart (first
        value preselected): the diagram and its histogram show the groups with the picked
        values, so that one chart carries every group (each group's bins once) in place
        of a panel per group. Not with ``facet`` or ``histogram=False``; ``color``
        defaults to the keys not picked, and the count axis fits the picked groups.
        Dropdowns need a browser (HTML); a PNG or SVG shows the first values.
    columns
        Panels per row (default: the number of values of the last facet key when two or
        more keys facet, else up to 4).
    histogram
        Draw the count histogram under the diagram. ``False`` returns a layered chart
        that the caller may ``.facet(...)`` itself (its data has the columns ``_color``
        and ``_panel`` with each row's group labels).
    width, height
        Size of one panel's diagram in pixels (default 320 alone, 170 in small
        multiples, 130 beyond 12 panels).
    title
        Chart title (default "Reliability diagram").

    Returns
    -------
    altair.TopLevelMixin
        With the histogram: a ``VConcatChart`` (an ``HConcatChart`` when several groups
        share the panel and ``metrics`` is given: their metrics table sits beside it).
        Without: a ``LayerChart`` (one panel) or ``FacetChart``.

    Raises
    ------
    TableError
        If ``stats`` is not a reliability/bin-statistics table, or ``metrics`` lacks a
        column or has other keys.
    ArgumentError
        If ``color=``/``facet=`` name something that is not a key, or a size is not
        positive.

    See Also
    --------
    confidence_histogram : the counts alone, one panel per group.
    save_chart : write a chart to HTML, PNG or SVG with no network.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot import reliability_diagram
    >>> preds = pl.DataFrame({
    ...     "model": ["a"] * 4 + ["b"] * 4,
    ...     "confidence": [0.9, 0.8, 0.3, 0.95, 0.6, 0.7, 0.65, 0.2],
    ...     "correct": [True, False, False, True, True, True, False, False],
    ... })
    >>> table = cf.reliability_table(preds, by="model")
    >>> chart = reliability_diagram(table, metrics=cf.calibration_metrics(preds, by="model"))
    >>> type(chart).__name__  # diagram over histogram, the metrics table beside
    'HConcatChart'
    >>> spec = chart.to_dict()
    >>> [len(rows) for rows in spec["datasets"].values()]  # populated bins, all bins, models
    [6, 20, 2]
    """
    import altair as alt

    data = diagram_data(stats, metrics=metrics, color=color, facet=facet, pick=pick)
    if data.picked and not histogram:
        raise ArgumentError("pick= draws one chart: leave facet= unset and histogram=True")
    prepared, picked = data.prepared, data.picked
    several = len(prepared.colors) > 1
    faceted = bool(prepared.facet)
    if width is None:
        width = 320 if not faceted else (170 if len(prepared.panels) <= 12 else 130)
    if height is None:
        height = width
    highlight = (
        alt.selection_point(name="highlight", fields=[COLOR], bind="legend") if several else None
    )
    heading: Any = title if title is not None else _heading(data)
    subtitle = [data.metrics_line] if data.metrics_line else []
    if picked:
        subtitle = [f"pick the {' and '.join(picked)} under the chart; hover for the numbers"]

    def diagram(define: bool) -> Any:
        layer = _diagram_layer(
            prepared,
            data.has_ci,
            highlight,
            define=define,
            tooltip_metrics=data.group_metrics is not None,
            x_labels=not (faceted and histogram),
        )
        return layer.properties(width=width, height=height)

    if not histogram:
        return in_panels(
            diagram(True),
            prepared,
            data.populated,
            title=heading if faceted else alt.Title(heading, subtitle=subtitle),
            columns=columns,
        )
    bars = _histogram_layer(prepared, highlight, data.hist_top).properties(
        width=width, height=max(50.0, 0.3 * height)
    )
    if not faceted:
        parts = [
            diagram(True).properties(data=inline_data(data.populated)),
            bars.properties(data=inline_data(data.hist)),
        ]
        if picked:
            params, chosen = _pick_params(data.choices)
            parts = [part.transform_filter(chosen) for part in parts]
            parts[0] = parts[0].add_params(*params)
        stacked = alt.vconcat(*share_parts(*parts), spacing=6)
        if data.group_metrics is not None and several:
            side = _metrics_table(data.group_metrics, prepared, highlight, height)
            return alt.hconcat(*share_parts(stacked, side), spacing=24, title=alt.Title(heading))
        return stacked.properties(title=alt.Title(heading, subtitle=subtitle))
    return _faceted_diagram(
        data,
        diagram=diagram,
        bars=bars,
        highlight=highlight,
        n_cols=facet_columns(len(prepared.panels), prepared.facet, data.populated, columns),
        width=width,
        heading=heading,
    )


def _heading(data: DiagramData) -> Any:
    """The default title: it names the group when there is one, or the picked one."""
    import altair as alt

    if data.picked:  # the values picked in the dropdowns (the parameters pick_0 …)
        names, _ = picked_group(data.picked)
        text = " + ' · ' + ".join(f"toString({name})" for name in names)
        return alt.ExprRef(expr=f"'Reliability diagram of ' + {text}")
    if data.group:
        return f"Reliability diagram of {data.group}"
    return "Reliability diagram"


def _faceted_diagram(
    data: DiagramData,
    *,
    diagram: Any,
    bars: Any,
    highlight: Any,
    n_cols: int,
    width: float,
    heading: str,
) -> alt.VConcatChart:
    """Draw small multiples from one dataset (:func:`stacked_parts`).

    Rows of ``n_cols`` panels, each a diagram over its histogram (over its metric lines).
    """
    import altair as alt

    prepared = data.prepared
    panels = prepared.panels
    summary = (
        None
        if data.panel_metrics is None
        else _panel_metrics(data.lines, prepared, highlight, width)
    )
    last_start = (len(panels) - 1) // n_cols * n_cols
    rows = []
    for start in range(0, len(panels), n_cols):
        chunk = panels[start : start + n_cols]

        def row(chart: Any, part: str, labels: bool, chunk: list[str] = chunk) -> Any:
            # FacetChart directly: its data comes from the enclosing vconcat
            column = alt.Column(f"{PANEL}:N", sort=chunk, title=None, header=header(labels, width))
            return (
                alt.FacetChart(
                    spec=chart, facet=alt.FacetMapping(column=column), spacing=16, bounds="flush"
                )
                .transform_filter(alt.FieldEqualPredicate(field="_part", equal=part))
                .transform_filter(alt.FieldOneOfPredicate(field=PANEL, oneOf=chunk))
            )

        hist_axis = alt.Axis(title="confidence" if start == last_start else None)
        parts = [
            row(diagram(start == 0), "diagram", True),
            row(
                bars.encode(x=alt.X(_hist_x(highlight), axis=hist_axis, scale=unit_scale())),
                "histogram",
                False,
            ),
        ]
        if summary is not None:
            parts.append(row(summary, "metrics", False))
        rows.append(alt.vconcat(*parts, spacing=4))
    combined = stacked_parts(data)
    return alt.vconcat(*rows, spacing=18, title=alt.Title(heading), data=inline_data(combined))


def _pick_params(choices: dict[str, list[Any]]) -> tuple[list[Any], str]:
    """A dropdown per picked key (its values, the first preselected) and the filter."""
    import altair as alt

    names, test = picked_group(list(choices))
    params = [
        alt.param(
            name=name,
            value=values[0] if values else None,
            bind=alt.binding_select(options=values, name=f"{key} "),
        )
        for name, (key, values) in zip(names, choices.items(), strict=True)
    ]
    return params, test


def _hist_x(highlight: Any) -> str:
    return "bin_lower:Q" if highlight is None else "_bin_mid:Q"


def _swatch_color(prepared: Prepared) -> alt.Color:
    """The colour groups' colours without a title or legend (the chart beside has it)."""
    import altair as alt

    return alt.Color(f"{COLOR}:N", scale=color_scale(prepared), legend=None)


def _panel_metrics(lines: int, prepared: Prepared, highlight: Any, width: float) -> Any:
    """Under each panel: one line per colour group with its ECE, MCE and Brier score."""
    import altair as alt

    several = highlight is not None

    def short(name: str) -> str:
        return f"(isValid(datum.{name}) ? replace(format(datum.{name}, '.3f'), '0.', '.') : 'n/a')"

    text = " + ".join(
        f"'{'  ' if position else ''}{metric(name).label} ' + {short(name)}"
        for position, name in enumerate(_DIAGRAM_METRICS)
    )
    y = alt.Y(f"{COLOR}:N", sort=prepared.colors, axis=None, title=None)
    layers = []
    if several:
        faded = emphasis(highlight, 0.2)
        layers.append(
            alt.Chart()
            .mark_point(filled=True, shape="square", size=40)
            .encode(y=y, x=alt.XValue(4), color=_swatch_color(prepared), opacity=faded)  # type: ignore[no-untyped-call]
        )
        text_opacity: Any = faded
    else:
        text_opacity = alt.OpacityValue(1.0)
    layers.append(
        alt.Chart()
        .transform_calculate(_summary=text)
        .mark_text(align="left", fontSize=10 if width >= 160 else 9, limit=width + 12)
        .encode(
            y=y,
            x=alt.XValue(14 if several else 0),  # type: ignore[no-untyped-call]
            text=alt.Text("_summary:N"),
            opacity=text_opacity,
        )
    )
    return alt.layer(*share_parts(*layers)).properties(
        width=width, height=13 * lines, view=NO_FRAME
    )


def _metrics_table(summary: pl.DataFrame, prepared: Prepared, highlight: Any, height: float) -> Any:
    """ECE, MCE and Brier per group (``summary``) as a small text table beside the diagram."""
    import altair as alt

    labels = prepared.colors
    row_height = max(14.0, min(22.0, height / max(len(labels), 1)))
    y = alt.Y(
        f"{COLOR}:N",
        sort=labels,
        title=None,
        axis=alt.Axis(orient="left", labelLimit=170, domain=False, ticks=False, labelPadding=14),
    )
    faded = emphasis(highlight, 0.2)
    swatch = (
        alt.Chart()
        .mark_point(filled=True, size=70, shape="square")
        .encode(y=y, x=alt.XValue(-8), color=_swatch_color(prepared), opacity=faded)  # type: ignore[no-untyped-call]
    )
    numbers = (
        alt.Chart()
        .transform_fold(["ece", "mce", "brier"], as_=["_metric", "_value"])
        .transform_calculate(_text="isValid(datum._value) ? format(datum._value, '.3f') : 'n/a'")
        .mark_text(align="right", fontSize=11)
        .encode(
            y=y,
            x=alt.X(
                "_metric:N",
                sort=_DIAGRAM_METRICS,
                title=None,
                axis=alt.Axis(
                    orient="top",
                    labelAngle=0,
                    domain=False,
                    ticks=False,
                    labelFontWeight="bold",
                    labelExpr=label_expr(_DIAGRAM_METRICS),
                ),
                scale=alt.Scale(paddingInner=0, paddingOuter=0.1, align=1),
            ),
            text=alt.Text("_text:N"),
            opacity=faded,
        )
    )
    return alt.layer(*share_parts(swatch, numbers), data=inline_data(summary)).properties(
        width=180, height=row_height * len(labels), view=NO_FRAME
    )


def _diagram_layer(
    prepared: Prepared,
    has_ci: bool,
    highlight: Any,
    *,
    define: bool,
    tooltip_metrics: bool,
    x_labels: bool,
) -> alt.LayerChart:
    """Build the diagram's layers.

    Group lines first (they carry the legend selection), then the diagonal, the gap bars
    (``stroke`` by direction, a scale of its own) and the intervals.
    """
    import altair as alt

    unit = unit_scale()
    x_axis = alt.Axis() if x_labels else alt.Axis(labels=False, title=None)
    x = alt.X("mean_confidence:Q", scale=unit, title="mean confidence", axis=x_axis)
    y = alt.Y("accuracy:Q", scale=unit, title="accuracy")
    many = len(prepared.colors) > MANY_COLORS
    tooltips = _bin_point_tooltips(prepared.keys, has_ci=has_ci, metrics=tooltip_metrics)
    base = alt.Chart()
    if highlight is None:
        colors: Any = alt.ColorValue(SINGLE)
        line_opacity: Any = alt.OpacityValue(1.0)
        gap_opacity: Any = alt.OpacityValue(0.75)
    else:
        legend = alt.Legend(
            orient="right",
            labelLimit=200,
            titleLimit=LEGEND_TITLE,
            symbolType="stroke",
            columns=2 if len(prepared.colors) > 24 else 1,
        )
        colors = group_color(prepared, legend)
        line_opacity = emphasis(highlight, 0.12)
        gap_opacity = alt.OpacityValue(
            **alt.when(highlight, empty=not many).then(alt.value(0.7)).otherwise(alt.value(0.0))
        )
    line = group_lines(
        base.mark_line(strokeWidth=1.8, point=alt.OverlayMarkDef(size=28, filled=True)),
        color=colors,
        opacity=line_opacity,
        order="bin:Q",
        x=x,
        y=y,
        tooltip=tooltips,
    )
    if highlight is not None and define:
        line = line.properties(name="reliability_line").add_params(highlight)
    direction = alt.Stroke(
        "_direction:N",
        title="gap to diagonal",
        scale=alt.Scale(
            domain=[OVER, UNDER], range=[DIRECTION_COLORS[OVER], DIRECTION_COLORS[UNDER]]
        ),
        legend=alt.Legend(
            orient="right", labelExpr=_direction_labels(), symbolType="stroke", symbolStrokeWidth=4
        ),
    )
    # a bin of few predictions is mostly noise (and left out of MCE): its gap is drawn
    # faint and thin, so that it cannot look like the worst calibrated confidence level
    small = f"datum.count < {MCE_MIN_COUNT}"
    gaps = (
        base.transform_filter(f"datum._gap != 0 && !({small})")
        .mark_rule(strokeWidth=4 if not prepared.facet else 3)
        .encode(
            x=x,
            y=y,
            y2=alt.Y2("mean_confidence:Q"),
            stroke=direction,
            opacity=gap_opacity,
            tooltip=tooltips,
        )
    )
    faint = (
        base.transform_filter(f"datum._gap != 0 && {small}")
        .mark_rule(strokeWidth=1.5, strokeDash=[2, 2])
        .encode(
            x=x,
            y=y,
            y2=alt.Y2("mean_confidence:Q"),
            stroke=direction,
            opacity=alt.OpacityValue(0.3),
            tooltip=tooltips,
        )
    )
    layers = [line, diagonal(strokeWidth=1), faint, gaps]
    if has_ci:
        layers.append(
            base.mark_errorbar(ticks=True).encode(
                x=x,
                y=alt.Y("accuracy_ci_low:Q", scale=unit, title="accuracy"),
                y2=alt.Y2("accuracy_ci_high:Q"),
                color=colors,
                opacity=line_opacity,
                tooltip=tooltips,
            )
        )
    return alt.LayerChart(layer=list(share_parts(*layers)))


def _bin_point_tooltips(keys: Sequence[str], *, has_ci: bool, metrics: bool) -> list[Any]:
    """A bin's tooltip lines: group, range, count, accuracy, confidence and gap.

    With the accuracy's interval (``has_ci``) and the group's metrics (``metrics``).
    """
    import altair as alt

    tooltips = [
        *bin_tooltips(keys),
        alt.Tooltip("accuracy:Q", format=".3f"),
        alt.Tooltip("mean_confidence:Q", title="mean confidence", format=".3f"),
        alt.Tooltip("_gap:Q", title="gap (accuracy − confidence)", format="+.3f"),
    ]
    if has_ci:
        tooltips += [
            alt.Tooltip("accuracy_ci_low:Q", title="accuracy CI low", format=".3f"),
            alt.Tooltip("accuracy_ci_high:Q", title="accuracy CI high", format=".3f"),
        ]
    if metrics:
        tooltips += [
            alt.Tooltip(
                field=name,
                type="quantitative",
                title=f"group {metric(name).label}",
                format=metric(name).format,
            )
            for name in _DIAGRAM_METRICS
        ]
    return tooltips


def _direction_labels() -> str:
    return (
        "datum.label == 'overconfident' ? 'overconfident (below)' : "
        "datum.label == 'underconfident' ? 'underconfident (above)' : datum.label"
    )


def _histogram_layer(prepared: Prepared, highlight: Any, top: int | None) -> alt.Chart:
    """The counts under the diagram, on a shared count axis from 0 to ``top`` (None: fit)."""
    import altair as alt

    y = alt.Y(
        "count:Q",
        title="predictions",
        scale=alt.Scale(domain=[0, top], nice=True) if top else alt.Scale(zero=True, nice=True),
        axis=alt.Axis(tickCount=3, tickMinStep=1, labelExpr=COUNT_LABEL),
    )
    tooltips = bin_tooltips(prepared.keys)
    if highlight is None:
        return count_marks(y, tooltips)  # type: ignore[no-any-return]
    return count_marks(  # type: ignore[no-any-return]
        y, tooltips, color=_swatch_color(prepared), opacity=emphasis(highlight, 0.12)
    )
