"""The charts: engine tables in, altair charts out.

Every function takes one of the engine's small tables (never prediction rows), checks it
against its spec in :mod:`calib_frames.schema` and returns an altair chart that the caller
can compose (``+``, ``|``, ``&``), size (``.properties``), theme or save; nothing renders
or writes as a side effect, and no ``configure_*`` is applied (so charts stay composable).
No chart computes a metric: ECE, MCE, Brier and its terms, perplexity and bits per byte
are read from the tables; the charts only draw them (the per-bin gap drawn on the
reliability diagram is accuracy − mean confidence of that bin, which is what the diagram
shows).

Group keys decide colour and panels. ``facet=`` names the keys that make small multiples
(one panel per combination, wrapped after ``columns=``); ``color=`` names the keys told
apart by colour inside a panel (default: the keys not faceted). Names are data: they
reach the chart as values, never as field names or expressions.

altair is imported when a chart is built, not when :mod:`calib_frames` is imported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.plot._tables import (
    COLOR,
    COMPARISON_COLUMNS,
    PANEL,
    Prepared,
    bin_label,
    check_columns,
    frame,
    key_split,
    metrics_columns,
    prepare,
    records,
    spec_keys,
)
from calib_frames.schema import RELIABILITY

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "CURVE_COLUMNS",
    "ECE_BINS_COLUMNS",
    "ISOTONIC_COLUMNS",
    "brier_decomposition_chart",
    "confidence_histogram",
    "ece_bins_chart",
    "isotonic_reliability_chart",
    "metric_scatter",
    "perplexity_chart",
    "reliability_diagram",
    "smooth_reliability_chart",
]

CURVE_COLUMNS = ("x", "y")
"""Columns after the keys of a smooth reliability curve table (one row per curve point)."""
ISOTONIC_COLUMNS = ("block", "confidence_lower", "confidence_upper", "count", "recalibrated")
"""Columns after the keys of a CORP / isotonic blocks table (one row per PAV block)."""
ECE_BINS_COLUMNS = ("bins", "ece")
"""Columns after the keys of an ECE-versus-bin-count table."""

OVER, UNDER = "overconfident", "underconfident"
DIRECTION_COLORS = {OVER: "#d6604d", UNDER: "#4393c3", "calibrated": "#7f7f7f"}
# Above this many colour groups in one panel the gaps and metric lines are drawn for the
# highlighted group only (20 overlaid gap bars are not readable).
MANY_COLORS = 5
# Above this many points in one panel of metric_scatter, only the highlighted group's
# points are labelled (the rest overlap); the legend and tooltips name every point.
LABEL_LIMIT = 10
_DIAGONAL = "#9e9e9e"
_SINGLE = "#1f3b73"


def _alt() -> Any:
    import altair as alt

    return alt


def field(name: str) -> str:
    """A column name as a Vega-Lite field reference (dots and brackets escaped)."""
    return re.sub(r"([.\[\]\\])", r"\\\1", name)


def _data(data: pl.DataFrame) -> alt.InlineData:
    """Inline rows (altair gathers identical ones into one top-level dataset)."""
    import altair as alt

    return alt.InlineData(values=records(data))


def _palette(count: int) -> Literal["dark2", "tableau20"]:
    # dark2 has no pure red or blue, which the gap bars use for over/underconfidence
    return "dark2" if count <= 8 else "tableau20"


def _color_scale(prepared: Prepared) -> alt.Scale:
    import altair as alt

    domain = prepared.colors
    return alt.Scale(domain=domain, scheme=_palette(len(domain)))


def _key_tooltips(keys: Sequence[str]) -> list[alt.Tooltip]:
    import altair as alt

    # field=/type= rather than the "name:N" shorthand, which misreads a ':' in a name
    return [alt.Tooltip(field=field(key), type="nominal", title=key) for key in keys]


def _columns(panels: int, facet_keys: Sequence[str], data: pl.DataFrame, wanted: int | None) -> int:
    if wanted is not None:
        if isinstance(wanted, bool) or not isinstance(wanted, int) or wanted < 1:
            raise ArgumentError(f"columns= must be a positive integer, got {wanted}")
        return wanted
    if len(facet_keys) >= 2:
        return max(1, data.get_column(facet_keys[-1]).n_unique())
    return max(1, min(panels, 4))


def _check_flag(name: str, value: bool) -> None:
    if not isinstance(value, bool):
        raise ArgumentError(f"{name}= takes True or False, got {value!r}")


def _check_size(name: str, value: float | None) -> None:
    if value is not None and not (isinstance(value, int | float) and value > 0):
        raise ArgumentError(f"{name}= must be a positive number of pixels, got {value!r}")


# --------------------------------------------------------------------------------------
# 1. Reliability diagram
# --------------------------------------------------------------------------------------


def reliability_diagram(
    table: pl.DataFrame | pl.LazyFrame,
    metrics: pl.DataFrame | pl.LazyFrame | None = None,
    *,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
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
    and the metric line are drawn for the highlighted group only.

    Parameters
    ----------
    table
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
        If ``table`` is not a reliability/bin-statistics table, or ``metrics`` lacks a
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
    >>> chart = reliability_diagram(table, cf.calibration_metrics(preds, by="model"))
    >>> type(chart).__name__  # diagram over histogram, the metrics table beside
    'HConcatChart'
    >>> spec = chart.to_dict()
    >>> [len(rows) for rows in spec["datasets"].values()]  # populated bins, all bins, models
    [6, 20, 2]
    """
    import altair as alt

    _check_size("width", width)
    _check_size("height", height)
    _check_flag("histogram", histogram)
    data = frame(table, "reliability_diagram")
    keys = spec_keys(data, RELIABILITY, "reliability table")
    has_ci = "accuracy_ci_low" in data.columns and "accuracy_ci_high" in data.columns
    if has_ci:
        check_columns(
            data.schema,
            ["accuracy_ci_low", "accuracy_ci_high"],
            role="reliability table",
            built_by="",
            numeric=["accuracy_ci_low", "accuracy_ci_high"],
        )
    prepared = prepare(data, keys, color=color, facet=facet)
    populated, hist = _diagram_frames(prepared, keys, metrics, has_ci)
    panels = prepared.panels
    several = len(prepared.colors) > 1
    faceted = bool(prepared.facet)
    if width is None:
        width = 320 if not faceted else (170 if len(panels) <= 12 else 130)
    if height is None:
        height = width
    highlight = (
        alt.selection_point(name="highlight", fields=[COLOR], bind="legend") if several else None
    )
    heading = title if title is not None else "Reliability diagram"
    with_metrics = metrics is not None
    subtitle: list[str] = []
    if with_metrics and not several and not faceted and populated.height:
        first = populated.row(0, named=True)
        subtitle = [_metrics_line(first)]

    def diagram(define: bool) -> Any:
        layer = _diagram_layer(
            prepared,
            False,
            has_ci,
            highlight,
            define=define,
            tooltip_metrics=with_metrics,
            x_labels=not (faceted and histogram),
        )
        return layer.properties(width=width, height=height)

    if not histogram:
        if not faceted:
            return diagram(True).properties(  # type: ignore[no-any-return]
                data=_data(populated), title=alt.Title(heading, subtitle=subtitle)
            )
        return (  # type: ignore[no-any-return]
            diagram(True)
            .facet(
                facet=alt.Facet(f"{PANEL}:N", sort=panels, title=None, header=_header()),
                bounds="flush",
                spacing=_FACET_SPACING,
                columns=_columns(len(panels), prepared.facet, populated, columns),
                data=_data(populated),
            )
            .properties(title=heading)
        )
    hist_top = max(int(hist.get_column("count").max() or 0), 1)  # type: ignore[arg-type]
    bars = _histogram_layer(prepared, highlight, hist_top).properties(
        width=width, height=max(50.0, 0.3 * height)
    )
    if not faceted:
        parts = [diagram(True).properties(data=_data(populated)), bars.properties(data=_data(hist))]
        stacked = alt.vconcat(*parts, spacing=6)
        if with_metrics and several:
            side = _metrics_table(populated, prepared, highlight, height)
            return alt.hconcat(stacked, side, spacing=24, title=alt.Title(heading))
        return stacked.properties(title=alt.Title(heading, subtitle=subtitle))
    n_cols = _columns(len(panels), prepared.facet, populated, columns)
    return _faceted_diagram(
        prepared,
        populated,
        hist,
        diagram=diagram,
        bars=bars,
        highlight=highlight,
        n_cols=n_cols,
        width=width,
        heading=heading,
        with_metrics=with_metrics,
    )


def _faceted_diagram(
    prepared: Prepared,
    populated: pl.DataFrame,
    hist: pl.DataFrame,
    *,
    diagram: Any,
    bars: Any,
    highlight: Any,
    n_cols: int,
    width: float,
    heading: str,
    with_metrics: bool,
) -> alt.VConcatChart:
    """Draw small multiples from one dataset.

    Rows of ``n_cols`` panels, each a diagram over its histogram (over its metric lines).
    """
    import altair as alt

    panels = prepared.panels
    summary = _panel_metrics(populated, prepared, highlight, width) if with_metrics else None
    # One dataset for every row of panels (facets inside a concat do not share inline
    # data otherwise): the diagram's bins, the histogram's bins and the metric lines,
    # told apart by ``_part``.
    frames = [
        populated.with_columns(pl.lit("diagram").alias("_part")),
        hist.with_columns(pl.lit("histogram").alias("_part")),
    ]
    if summary is not None:
        frames.append(summary[1].with_columns(pl.lit("metrics").alias("_part")))
    combined = pl.concat(frames, how="diagonal_relaxed")
    last_start = (len(panels) - 1) // n_cols * n_cols
    rows = []
    for start in range(0, len(panels), n_cols):
        chunk = panels[start : start + n_cols]

        def row(chart: Any, part: str, labels: bool, chunk: list[str] = chunk) -> Any:
            # FacetChart directly: its data comes from the enclosing vconcat
            column = alt.Column(f"{PANEL}:N", sort=chunk, title=None, header=_header(labels))
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
                bars.encode(
                    x=alt.X(
                        _hist_x(highlight),
                        axis=hist_axis,
                        scale=alt.Scale(domain=[0, 1], nice=False),
                    )
                ),
                "histogram",
                False,
            ),
        ]
        if summary is not None:
            parts.append(row(summary[0], "metrics", False))
        rows.append(alt.vconcat(*parts, spacing=4))
    return alt.vconcat(*rows, spacing=18, title=alt.Title(heading), data=_data(combined))


def _hist_x(highlight: Any) -> str:
    return "bin_lower:Q" if highlight is None else "_bin_mid:Q"


def _panel_metrics(
    populated: pl.DataFrame, prepared: Prepared, highlight: Any, width: float
) -> tuple[Any, pl.DataFrame]:
    """Under each panel: one line per colour group with its ECE, MCE and Brier score."""
    import altair as alt

    summary = (
        populated.group_by(PANEL, COLOR, maintain_order=True)
        .agg(pl.col("ece", "mce", "brier").first())
        .sort(PANEL, COLOR, maintain_order=True)
    )
    lines = summary.group_by(PANEL).len().get_column("len").max() or 1
    several = highlight is not None

    def short(name: str) -> str:
        return f"(isValid(datum.{name}) ? replace(format(datum.{name}, '.3f'), '0.', '.') : 'n/a')"

    text = f"'ECE ' + {short('ece')} + '  MCE ' + {short('mce')} + '  Brier ' + {short('brier')}"
    y = alt.Y(f"{COLOR}:N", sort=prepared.colors, axis=None, title=None)
    layers = []
    if several:
        faded = alt.when(highlight).then(alt.value(1.0)).otherwise(alt.value(0.2))
        layers.append(
            alt.Chart()
            .mark_point(filled=True, shape="square", size=40)
            .encode(
                y=y,
                x=alt.value(4),
                color=alt.Color(f"{COLOR}:N", scale=_color_scale(prepared), legend=None),
                opacity=faded,
            )
        )
        text_opacity: Any = faded
    else:
        text_opacity = alt.value(1.0)
    layers.append(
        alt.Chart()
        .transform_calculate(_summary=text)
        .mark_text(align="left", fontSize=10 if width >= 160 else 9, limit=width + 12)
        .encode(y=y, x=alt.value(14 if several else 0), text="_summary:N", opacity=text_opacity)
    )
    height = 13 * int(lines)  # type: ignore[arg-type]
    chart = alt.layer(*layers).properties(width=width, height=height, view=_NO_FRAME)
    return chart, summary


def _metrics_line(row: dict[str, Any]) -> str:
    values = [row.get(name) for name in ("ece", "mce", "brier")]
    shown = ["n/a" if not isinstance(v, float) else f"{v:.3f}" for v in values]
    return f"ECE {shown[0]} · MCE {shown[1]} · Brier {shown[2]}"


def _metrics_table(
    populated: pl.DataFrame, prepared: Prepared, highlight: Any, height: float
) -> Any:
    """ECE, MCE and Brier per group as a small text table beside the diagram."""
    import altair as alt

    summary = populated.group_by(COLOR).agg(pl.col("ece", "mce", "brier").first()).sort(COLOR)
    labels = prepared.colors
    row_height = max(14.0, min(22.0, height / max(len(labels), 1)))
    y = alt.Y(
        f"{COLOR}:N",
        sort=labels,
        title=None,
        axis=alt.Axis(orient="left", labelLimit=170, domain=False, ticks=False, labelPadding=14),
    )
    faded = alt.when(highlight).then(alt.value(1.0)).otherwise(alt.value(0.2))
    color = alt.Color(f"{COLOR}:N", scale=_color_scale(prepared), legend=None)
    swatch = (
        alt.Chart()
        .mark_point(filled=True, size=70, shape="square")
        .encode(y=y, x=alt.value(-8), color=color, opacity=faded)
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
                sort=["ece", "mce", "brier"],
                title=None,
                axis=alt.Axis(
                    orient="top",
                    labelAngle=0,
                    domain=False,
                    ticks=False,
                    labelFontWeight="bold",
                    labelExpr="datum.value == 'brier' ? 'Brier' : upper(datum.value)",
                ),
                scale=alt.Scale(paddingInner=0, paddingOuter=0.1, align=1),
            ),
            text=alt.Text("_text:N"),
            opacity=faded,
        )
    )
    return alt.layer(swatch, numbers, data=_data(summary)).properties(
        width=180, height=row_height * len(labels), view=_NO_FRAME
    )


def _header(labels: bool = True) -> alt.Header:
    import altair as alt

    return alt.Header(labels=labels, labelLimit=240, labelFontSize=11, labelFontWeight="bold")


_DIAGRAM_METRICS = ["ece", "mce", "brier"]


def _diagram_frames(
    prepared: Prepared, keys: list[str], metrics: Any, has_ci: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split a bin table into the diagram's rows and the histogram's rows.

    The diagram's: populated bins, with gap, direction and the group's metrics; the
    histogram's: every bin with bounds.
    """
    base = prepared.data.with_columns(
        pl.col("count").cast(pl.Int64),
        pl.col("mean_confidence", "accuracy", "bin_lower", "bin_upper").cast(pl.Float64),
    )
    base = base.with_columns(bin_label("closed" in base.columns).alias("_bin_range"))
    populated = base.filter(
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
    populated = populated.select(*keep, *_DIAGRAM_METRICS)
    hist = base.filter(pl.col("bin_lower").is_not_null(), pl.col("bin_upper").is_not_null())
    hist = hist.select(
        *keys, COLOR, PANEL, "bin", "_bin_range", "count", "bin_lower", "bin_upper"
    ).with_columns(((pl.col("bin_lower") + pl.col("bin_upper")) / 2).alias("_bin_mid"))

    return populated, hist


def _diagram_layer(
    prepared: Prepared,
    metrics_text: bool,
    has_ci: bool,
    highlight: Any,
    *,
    define: bool,
    tooltip_metrics: bool = True,
    x_labels: bool = True,
) -> alt.LayerChart:
    """Build the diagram's layers.

    Group lines first (they carry the legend selection), then the diagonal, the gap bars
    (``stroke`` by direction, a scale of its own), intervals and the metrics text.
    """
    import altair as alt

    unit = alt.Scale(domain=[0, 1], nice=False)
    x_axis = alt.Axis() if x_labels else alt.Axis(labels=False, title=None)
    x = alt.X("mean_confidence:Q", scale=unit, title="mean confidence", axis=x_axis)
    y = alt.Y("accuracy:Q", scale=unit, title="accuracy")
    many = len(prepared.colors) > MANY_COLORS
    tooltips = [
        *_key_tooltips(prepared.keys),
        alt.Tooltip("_bin_range:N", title="bin"),
        alt.Tooltip("count:Q", title="predictions", format=","),
        alt.Tooltip("accuracy:Q", format=".3f"),
        alt.Tooltip("mean_confidence:Q", title="mean confidence", format=".3f"),
        alt.Tooltip("_gap:Q", title="gap (accuracy − confidence)", format="+.3f"),
    ]
    if has_ci:
        tooltips += [
            alt.Tooltip("accuracy_ci_low:Q", title="accuracy CI low", format=".3f"),
            alt.Tooltip("accuracy_ci_high:Q", title="accuracy CI high", format=".3f"),
        ]
    if tooltip_metrics:
        tooltips += [
            alt.Tooltip("ece:Q", title="group ECE", format=".4f"),
            alt.Tooltip("mce:Q", title="group MCE", format=".4f"),
            alt.Tooltip("brier:Q", title="group Brier", format=".4f"),
        ]
    base = alt.Chart()
    if highlight is None:
        group_color: Any = alt.value(_SINGLE)
        line_opacity: Any = alt.value(1.0)
        gap_opacity: Any = alt.value(0.75)
    else:
        group_color = alt.Color(
            f"{COLOR}:N",
            title=" × ".join(prepared.color),
            scale=_color_scale(prepared),
            legend=alt.Legend(
                orient="right",
                labelLimit=200,
                symbolType="stroke",
                columns=2 if len(prepared.colors) > 24 else 1,
            ),
        )
        line_opacity = alt.when(highlight).then(alt.value(1.0)).otherwise(alt.value(0.12))
        gap_opacity = (
            alt.when(highlight, empty=not many).then(alt.value(0.7)).otherwise(alt.value(0.0))
        )
    line = base.mark_line(strokeWidth=1.8, point=alt.OverlayMarkDef(size=28, filled=True)).encode(
        x=x,
        y=y,
        color=group_color,
        detail=alt.Detail(f"{COLOR}:N"),
        order=alt.Order("bin:Q"),
        opacity=line_opacity,
        tooltip=tooltips,
    )
    if highlight is not None and define:
        line = line.properties(name="reliability_line").add_params(highlight)
    diagonal = (
        base.transform_aggregate(_rows="count()")
        .mark_rule(color=_DIAGONAL, strokeDash=[4, 3], strokeWidth=1)
        .encode(x=alt.datum(0), y=alt.datum(0), x2=alt.datum(1), y2=alt.datum(1))
    )
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
    gaps = (
        base.transform_filter("datum._gap != 0")
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
    layers = [line, diagonal, gaps]
    if has_ci:
        layers.append(
            base.mark_errorbar(ticks=True).encode(
                x=x,
                y=alt.Y("accuracy_ci_low:Q", scale=unit, title="accuracy"),
                y2=alt.Y2("accuracy_ci_high:Q"),
                color=group_color,
                opacity=line_opacity,
                tooltip=tooltips,
            )
        )
    if metrics_text:
        layers.append(_metrics_text(prepared, group_color, highlight, many))
    return alt.LayerChart(layer=layers)


def _direction_labels() -> str:
    return (
        "datum.label == 'overconfident' ? 'overconfident (below)' : "
        "datum.label == 'underconfident' ? 'underconfident (above)' : datum.label"
    )


def _metrics_text(prepared: Prepared, group_color: Any, highlight: Any, many: bool) -> Any:
    """The groups' ECE / MCE / Brier as text in the panel's upper left corner."""
    import altair as alt

    several = highlight is not None
    prefix = "datum._color + ': ' + " if several else ""
    text = (
        prefix + "'ECE ' + format(datum.ece, '.3f') + ' · MCE ' + format(datum.mce, '.3f')"
        " + ' · Brier ' + format(datum.brier, '.3f')"
    )
    chart = alt.Chart().transform_aggregate(
        ece="max(ece)", mce="max(mce)", brier="max(brier)", groupby=[COLOR, PANEL]
    )
    if several and not many:
        # one line per group, stacked from the top
        chart = chart.transform_window(
            _line="rank()", sort=[alt.SortField(COLOR)], groupby=[PANEL]
        ).transform_calculate(_y="0.985 - 0.07 * (datum._line - 1)")
    else:
        chart = chart.transform_calculate(_y="0.985")
    chart = chart.transform_filter("isValid(datum.ece)").transform_calculate(_summary=text)
    opacity: Any = alt.value(1.0)
    if several and many:
        opacity = alt.when(highlight, empty=False).then(alt.value(1.0)).otherwise(alt.value(0.0))
    return chart.mark_text(
        align="left", baseline="top", fontSize=10 if prepared.facet else 11, dx=4
    ).encode(
        x=alt.datum(0),
        y=alt.Y("_y:Q", scale=alt.Scale(domain=[0, 1], nice=False)),
        text=alt.Text("_summary:N"),
        color=group_color,
        opacity=opacity,
    )


def _histogram_layer(prepared: Prepared, highlight: Any, top: int) -> alt.Chart:
    import altair as alt

    unit = alt.Scale(domain=[0, 1], nice=False)
    tooltips = [
        *_key_tooltips(prepared.keys),
        alt.Tooltip("_bin_range:N", title="bin"),
        alt.Tooltip("count:Q", title="predictions", format=","),
    ]
    y = alt.Y(
        "count:Q",
        title="predictions",
        scale=alt.Scale(domain=[0, top], nice=True),
        axis=alt.Axis(tickCount=3, labelExpr=_COUNT_LABEL),
    )
    if highlight is None:
        return (  # type: ignore[no-any-return]
            alt.Chart()
            .mark_bar(color="#8c9bb5", stroke="white", strokeWidth=0.5)
            .encode(
                x=alt.X("bin_lower:Q", scale=unit, title="confidence"),
                x2="bin_upper:Q",
                y=y,
                y2=alt.datum(0),
                tooltip=tooltips,
            )
        )
    return (  # type: ignore[no-any-return]
        alt.Chart()
        .mark_line(strokeWidth=1.5, point=alt.OverlayMarkDef(size=18, filled=True))
        .encode(
            x=alt.X("_bin_mid:Q", scale=unit, title="confidence"),
            y=y,
            color=alt.Color(f"{COLOR}:N", scale=_color_scale(prepared), legend=None),
            detail=alt.Detail(f"{COLOR}:N"),
            order=alt.Order("bin:Q"),
            opacity=alt.when(highlight).then(alt.value(1.0)).otherwise(alt.value(0.12)),
            tooltip=tooltips,
        )
    )


_NO_FRAME = {"stroke": None}
# wrapped facets with flush bounds: room for each row's x axis and the next header
_FACET_SPACING = {"row": 48, "column": 20}
_COUNT_LABEL = "datum.value == 0 ? '0' : format(datum.value, '~s')"


# --------------------------------------------------------------------------------------
# 2. Confidence histogram
# --------------------------------------------------------------------------------------


def confidence_histogram(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    facet: str | Sequence[str] | None = None,
    color: str | Sequence[str] | None = None,
    columns: int | None = None,
    share: bool = False,
    width: float = 170,
    height: float = 110,
    title: str | None = None,
) -> alt.TopLevelMixin:
    """How the predictions of each group spread over the confidence bins.

    One bar per bin spanning the bin's range, its height the bin's ``count`` (or, with
    ``share=True``, the bin's share of its group's predictions). By default every key
    facets (one panel per group); keys given to ``color=`` are drawn as coloured lines
    in the same panel instead.

    Parameters
    ----------
    table
        A bin-statistics or reliability table (the ``count`` per bin is all it reads).
    facet
        Key(s) making one panel each (default: every key not in ``color``).
    color
        Key(s) drawn as coloured lines in one panel (default: none).
    columns
        Panels per row (default as in :func:`reliability_diagram`).
    share
        Draw each bin's share of the group's predictions instead of its count.
    width, height
        Size of one panel in pixels.
    title
        Chart title (default "Predictions per confidence bin").

    Returns
    -------
    altair.TopLevelMixin
        A ``Chart`` (one panel) or ``FacetChart``.

    Raises
    ------
    TableError
        If ``table`` is not a bin table.
    ArgumentError
        If ``facet=``/``color=`` name a column that is not a key.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot import confidence_histogram
    >>> preds = pl.DataFrame({"confidence": [0.1, 0.55, 0.58, 0.9], "correct": [0, 1, 0, 1]})
    >>> chart = confidence_histogram(cf.bin_statistics(preds, bins=5))
    >>> spec = chart.to_dict()
    >>> spec["mark"]["type"], len(next(iter(spec["datasets"].values())))
    ('bar', 5)
    """
    import altair as alt

    _check_flag("share", share)
    _check_size("width", width)
    _check_size("height", height)
    data = frame(table, "confidence_histogram")
    keys = spec_keys(data, RELIABILITY, "bin table")
    color_keys = [] if color is None else ([color] if isinstance(color, str) else list(color))
    default_facet = [key for key in keys if key not in color_keys]
    prepared = prepare(
        data,
        keys,
        color=color if color is not None else [],
        facet=facet,
        default_facet=default_facet,
    )
    hist = prepared.data.filter(
        pl.col("bin_lower").is_not_null(), pl.col("bin_upper").is_not_null()
    ).with_columns(pl.col("count").cast(pl.Int64))
    hist = hist.with_columns(
        bin_label("closed" in hist.columns).alias("_bin_range"),
        ((pl.col("bin_lower") + pl.col("bin_upper")) / 2).alias("_bin_mid"),
        (pl.col("count") / pl.col("count").sum().over(PANEL, COLOR)).alias("_share"),
    ).select(
        *keys,
        COLOR,
        PANEL,
        "bin",
        "_bin_range",
        "bin_lower",
        "bin_upper",
        "_bin_mid",
        "count",
        "_share",
    )
    unit = alt.Scale(domain=[0, 1], nice=False)
    value = "_share:Q" if share else "count:Q"
    y = alt.Y(
        value,
        title="share of predictions" if share else "predictions",
        axis=alt.Axis(format=".0%" if share else "~s", tickCount=4),
    )
    tooltips = [
        *_key_tooltips(keys),
        alt.Tooltip("_bin_range:N", title="bin"),
        alt.Tooltip("count:Q", title="predictions", format=","),
        alt.Tooltip("_share:Q", title="share of group", format=".1%"),
    ]
    if prepared.color:
        highlight = alt.selection_point(name="highlight_hist", fields=[COLOR], bind="legend")
        chart = (
            alt.Chart(_data(hist))
            .mark_line(strokeWidth=1.5, point=alt.OverlayMarkDef(size=18, filled=True))
            .encode(
                x=alt.X("_bin_mid:Q", scale=unit, title="confidence"),
                y=y,
                color=alt.Color(
                    f"{COLOR}:N",
                    title=" × ".join(prepared.color),
                    scale=_color_scale(prepared),
                    legend=alt.Legend(labelLimit=200, symbolType="stroke"),
                ),
                detail=alt.Detail(f"{COLOR}:N"),
                order=alt.Order("bin:Q"),
                opacity=alt.when(highlight).then(alt.value(1.0)).otherwise(alt.value(0.12)),
                tooltip=tooltips,
            )
            .add_params(highlight)
        )
    else:
        chart = (
            alt.Chart(_data(hist))
            .mark_bar(color="#8c9bb5", stroke="white", strokeWidth=0.5)
            .encode(
                x=alt.X("bin_lower:Q", scale=unit, title="confidence"),
                x2="bin_upper:Q",
                y=y,
                y2=alt.datum(0),
                tooltip=tooltips,
            )
        )
    chart = chart.properties(width=width, height=height)
    heading = title if title is not None else "Predictions per confidence bin"
    if not prepared.facet:
        return chart.properties(title=heading)  # type: ignore[no-any-return]
    panels = prepared.panels
    return chart.facet(  # type: ignore[no-any-return]
        facet=alt.Facet(f"{PANEL}:N", sort=panels, title=None, header=_header()),
        bounds="flush",
        spacing=_FACET_SPACING,
        columns=_columns(len(panels), prepared.facet, hist, columns),
    ).properties(title=heading)


# --------------------------------------------------------------------------------------
# 3. Model comparison
# --------------------------------------------------------------------------------------

_METRIC_TITLES = {
    "accuracy": "accuracy",
    "ece": "ECE",
    "mce": "MCE",
    "rmsce": "RMSCE",
    "brier": "Brier score",
    "log_loss": "log loss",
    "overconfidence": "overconfidence",
    "reliability": "reliability",
    "resolution": "resolution",
}


def _comparison_keys(data: pl.DataFrame, role: str) -> list[str]:
    keys = key_split(data.schema, COMPARISON_COLUMNS)
    if len(keys) == len(data.columns):
        raise TableError(
            f"not a {role}: no metric column found; build one with "
            "calib_frames.calibration_metrics or calib_frames.comparison_table"
        )
    return keys


def metric_scatter(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    x: str = "ece",
    y: str = "accuracy",
    label: str | None = None,
    facet: str | Sequence[str] | None = None,
    columns: int | None = None,
    width: float = 260,
    height: float = 220,
    title: str | None = None,
) -> alt.TopLevelMixin:
    """One labelled point per group: a calibration metric against accuracy (or another).

    ``x`` and ``y`` are columns of a metrics or comparison table (``ece``, ``brier``,
    ``log_loss``, ...). When the table has ``<metric>_ci_low`` and ``<metric>_ci_high``
    they are drawn as error bars; when ``x`` is ``ece`` and the table has
    ``ece_noise_floor``, a grey tick at the noise floor sits beside each point, joined
    to it by a thin line (an ECE at its tick is indistinguishable from sampling noise).

    Parameters
    ----------
    table
        A metrics table (:func:`~calib_frames.calibration_metrics`) or comparison table.
    x, y
        Metric columns for the axes.
    label
        The key whose values label the points (default: the first key). The other keys
        facet (one panel per combination) unless ``facet`` says otherwise.
    facet
        Key(s) making panels; ``[]`` draws everything in one panel.
    columns
        Panels per row.
    width, height
        Size of one panel in pixels.
    title
        Chart title (default "<y> against <x>").

    Returns
    -------
    altair.TopLevelMixin
        A ``LayerChart`` or ``FacetChart``.

    Raises
    ------
    TableError
        If ``x``/``y`` are missing or not numeric.
    ArgumentError
        If ``label``/``facet`` are not keys.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot import metric_scatter
    >>> preds = pl.DataFrame({
    ...     "model": ["a", "a", "b", "b"], "confidence": [0.9, 0.8, 0.6, 0.7],
    ...     "correct": [1, 0, 1, 1],
    ... })
    >>> spec = metric_scatter(cf.calibration_metrics(preds, by="model")).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['point', 'text']
    """
    import altair as alt

    _check_size("width", width)
    _check_size("height", height)
    data = frame(table, "metric_scatter")
    keys = _comparison_keys(data, "metrics table")
    check_columns(
        data.schema, [x, y], role="metrics table", built_by="calibration_metrics", numeric=[x, y]
    )
    if label is not None and label not in keys:
        raise ArgumentError(f"label= names {label!r}, which is not a group key {keys}")
    label_keys = [label] if label is not None else keys[:1]
    default_facet = [key for key in keys if key not in label_keys]
    prepared = prepare(data, keys, color=label_keys, facet=facet, default_facet=default_facet)
    extra = []
    intervals = {}
    for name in (x, y):
        low, high = f"{name}_ci_low", f"{name}_ci_high"
        if low in data.columns and high in data.columns:
            check_columns(
                data.schema, [low, high], role="metrics table", built_by="", numeric=[low, high]
            )
            intervals[name] = (low, high)
            extra += [low, high]
    floor = x == "ece" and "ece_noise_floor" in data.columns
    if floor:
        check_columns(
            data.schema,
            ["ece_noise_floor"],
            role="metrics table",
            built_by="",
            numeric=["ece_noise_floor"],
        )
        extra.append("ece_noise_floor")
    other_columns = [c for c in ("ece", "mce", "brier", "accuracy") if c in data.columns]
    shown = list(dict.fromkeys([x, y, *extra, *other_columns]))
    points = prepared.data.with_columns([pl.col(c).cast(pl.Float64) for c in shown]).filter(
        pl.col(x).is_finite(), pl.col(y).is_finite()
    )
    points = points.select(*keys, COLOR, PANEL, *shown)
    x_title, y_title = _METRIC_TITLES.get(x, x), _METRIC_TITLES.get(y, y)
    tooltips = [
        *_key_tooltips(keys),
        *[
            alt.Tooltip(
                field=field(c), type="quantitative", title=_METRIC_TITLES.get(c, c), format=".4f"
            )
            for c in shown
        ],
    ]
    highlight = alt.selection_point(name="highlight_points", fields=[COLOR], bind="legend")
    color = alt.Color(
        f"{COLOR}:N",
        title=" × ".join(prepared.color) or "group",
        scale=_color_scale(prepared),
        legend=alt.Legend(labelLimit=200),
    )
    faded = alt.when(highlight).then(alt.value(1.0)).otherwise(alt.value(0.15))
    x_enc = alt.X(
        field=field(x),
        type="quantitative",
        title=x_title,
        scale=alt.Scale(zero=True, nice=True),
        axis=alt.Axis(tickCount=5),
    )
    y_enc = alt.Y(
        field=field(y),
        type="quantitative",
        title=y_title,
        scale=alt.Scale(zero=False, nice=True),
        axis=alt.Axis(tickCount=5),
    )
    layers = _scatter_extras(
        intervals,
        floor=floor,
        x=x,
        y=y,
        x_enc=x_enc,
        y_enc=y_enc,
        color=color,
        faded=faded,
        tooltips=tooltips,
    )
    layers.append(
        alt.Chart()
        .mark_point(filled=True, size=55)
        .encode(x=x_enc, y=y_enc, color=color, opacity=faded, tooltip=tooltips)
        .add_params(highlight)
    )
    crowded = int(points.group_by(PANEL).len().get_column("len").max() or 0)  # type: ignore[arg-type]
    # more than ten labels in a panel overlap: then only the highlighted group's show
    label_opacity = (
        alt.when(highlight, empty=False).then(alt.value(1.0)).otherwise(alt.value(0.0))
        if crowded > LABEL_LIMIT
        else faded
    )
    layers.append(
        alt.Chart()
        .mark_text(align="left", dx=6, dy=-4, fontSize=10, limit=140)
        .encode(
            x=x_enc,
            y=y_enc,
            text=alt.Text(f"{COLOR}:N"),
            color=color,
            opacity=label_opacity,
        )
    )
    chart = alt.layer(*layers).properties(width=width, height=height)
    heading = title if title is not None else f"{y_title} against {x_title}"
    subtitle = "grey tick: ECE noise floor" if floor else None
    if not prepared.facet:
        return chart.properties(
            data=_data(points), title=alt.Title(heading, subtitle=subtitle or [])
        )
    panels = prepared.panels
    return chart.facet(
        facet=alt.Facet(f"{PANEL}:N", sort=panels, title=None, header=_header()),
        bounds="flush",
        spacing=_FACET_SPACING,
        columns=_columns(len(panels), prepared.facet, points, columns),
        data=_data(points),
    ).properties(title=alt.Title(heading, subtitle=subtitle or []))


def _scatter_extras(
    intervals: dict[str, tuple[str, str]],
    *,
    floor: bool,
    x: str,
    y: str,
    x_enc: Any,
    y_enc: Any,
    color: Any,
    faded: Any,
    tooltips: list[Any],
) -> list[Any]:
    """The noise-floor tick and rule, and interval rules, drawn under the points."""
    import altair as alt

    layers: list[Any] = []
    if floor:
        layers.append(
            alt.Chart()
            .mark_rule(color="#bdbdbd", strokeWidth=1)
            .encode(
                x=alt.X(f"{field('ece_noise_floor')}:Q"),
                x2=alt.X2(f"{field(x)}:Q"),
                y=y_enc,
                opacity=faded,
                tooltip=tooltips,
            )
        )
        layers.append(
            alt.Chart()
            .mark_tick(color="#757575", thickness=2, size=12)
            .encode(
                x=alt.X(f"{field('ece_noise_floor')}:Q"),
                y=y_enc,
                opacity=faded,
                tooltip=tooltips,
            )
        )
    if x in intervals:
        low, high = intervals[x]
        layers.append(
            alt.Chart()
            .mark_rule()
            .encode(
                x=alt.X(f"{field(low)}:Q"),
                x2=alt.X2(f"{field(high)}:Q"),
                y=y_enc,
                color=color,
                opacity=faded,
            )
        )
    if y in intervals:
        low, high = intervals[y]
        layers.append(
            alt.Chart()
            .mark_rule()
            .encode(
                y=alt.Y(f"{field(low)}:Q"),
                y2=alt.Y2(f"{field(high)}:Q"),
                x=x_enc,
                color=color,
                opacity=faded,
            )
        )
    return layers


def brier_decomposition_chart(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    label: str | None = None,
    facet: str | Sequence[str] | None = None,
    columns: int | None = None,
    width: float = 240,
    title: str | None = None,
) -> alt.TopLevelMixin:
    """The Brier decomposition as diverging bars: reliability right, resolution left.

    Per group, ``reliability`` (miscalibration: it adds to the Brier score) is drawn to
    the right of zero and ``resolution`` (discrimination: it is subtracted) to the left,
    both read from the table. Tooltips give ``brier``, ``uncertainty`` and the within-bin
    terms when present: brier = reliability − resolution + uncertainty + within-bin terms.

    Parameters
    ----------
    table
        A metrics or comparison table (columns ``reliability``, ``resolution``,
        ``brier``).
    label
        Key on the vertical axis (default: the first key); other keys facet.
    facet
        Key(s) making panels (default: the keys other than ``label``).
    columns
        Panels per row.
    width
        Width of one panel in pixels; the height follows the number of groups.
    title
        Chart title.

    Returns
    -------
    altair.TopLevelMixin
        A ``Chart`` or ``FacetChart``.

    Raises
    ------
    TableError
        If a decomposition column is missing.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot import brier_decomposition_chart
    >>> preds = pl.DataFrame({
    ...     "model": ["a", "a", "b", "b"], "confidence": [0.9, 0.8, 0.6, 0.7],
    ...     "correct": [1, 0, 1, 1],
    ... })
    >>> spec = brier_decomposition_chart(cf.calibration_metrics(preds, by="model")).to_dict()
    >>> spec["mark"]["type"], len(next(iter(spec["datasets"].values())))
    ('bar', 4)
    """
    import altair as alt

    _check_size("width", width)
    data = frame(table, "brier_decomposition_chart")
    keys = _comparison_keys(data, "metrics table")
    terms = ["reliability", "resolution", "brier"]
    check_columns(
        data.schema, terms, role="metrics table", built_by="calibration_metrics", numeric=terms
    )
    if label is not None and label not in keys:
        raise ArgumentError(f"label= names {label!r}, which is not a group key {keys}")
    label_keys = [label] if label is not None else keys[:1]
    default_facet = [key for key in keys if key not in label_keys]
    prepared = prepare(data, keys, color=label_keys, facet=facet, default_facet=default_facet)
    extra = [
        c
        for c in ("uncertainty", "within_bin_variance", "within_bin_covariance")
        if c in data.columns and data.schema[c].is_numeric()
    ]
    wide = prepared.data.select(
        *keys, COLOR, PANEL, *[pl.col(c).cast(pl.Float64) for c in [*terms, *extra]]
    )
    long = (
        wide.unpivot(
            on=["reliability", "resolution"],
            index=[*keys, COLOR, PANEL, "brier", *extra],
            variable_name="_term",
            value_name="_value",
        )
        .with_columns(
            pl.when(pl.col("_term") == "resolution")
            .then(-pl.col("_value"))
            .otherwise(pl.col("_value"))
            .alias("_signed"),
            pl.when(pl.col("_term") == "resolution")
            .then(pl.lit("resolution (subtracted)"))
            .otherwise(pl.lit("reliability (added)"))
            .alias("_term"),
        )
        .filter(pl.col("_signed").is_finite())
    )
    tooltips = [
        *_key_tooltips(keys),
        alt.Tooltip("_term:N", title="term"),
        alt.Tooltip("_value:Q", title="value", format=".5f"),
        alt.Tooltip("brier:Q", title="Brier score", format=".5f"),
        *[alt.Tooltip(f"{c}:Q", format=".5f") for c in extra],
    ]
    labels = prepared.colors
    height = max(60, 18 * len(labels))
    chart = (
        alt.Chart(_data(long))
        .mark_bar(height={"band": 0.7})
        .encode(
            x=alt.X(
                "_signed:Q",
                title="← resolution · reliability →",
                axis=alt.Axis(labelExpr="format(abs(datum.value), '~g')", tickCount=4),
            ),
            y=alt.Y(f"{COLOR}:N", title=None, sort=labels, axis=alt.Axis(labelLimit=180)),
            color=alt.Color(
                "_term:N",
                title="Brier term",
                scale=alt.Scale(
                    domain=["reliability (added)", "resolution (subtracted)"],
                    range=["#d6604d", "#4d9221"],
                ),
            ),
            tooltip=tooltips,
        )
        .properties(width=width, height=height)
    )
    heading = title if title is not None else "Brier decomposition"
    if not prepared.facet:
        return chart.properties(title=heading)  # type: ignore[no-any-return]
    panels = prepared.panels
    return chart.facet(  # type: ignore[no-any-return]
        facet=alt.Facet(f"{PANEL}:N", sort=panels, title=None, header=_header()),
        bounds="flush",
        spacing=_FACET_SPACING,
        columns=_columns(len(panels), prepared.facet, long, columns if columns else None)
        if columns or len(prepared.facet) < 2
        else 4,
    ).properties(title=heading)


# --------------------------------------------------------------------------------------
# 4. Perplexity
# --------------------------------------------------------------------------------------


def perplexity_chart(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    label: str | None = None,
    color: str | Sequence[str] | None = None,
    width: float = 240,
    title: str | None = None,
) -> alt.TopLevelMixin:
    """Perplexity and bits per byte side by side, one dot per group.

    A dot plot per measure (``perplexity``, and ``bits_per_byte`` when the table has it
    with values; else ``bits_per_token``), groups on the vertical axis, other keys as
    colours (e.g. model on the axis, one colour per task). Values are read from the
    table. Groups with no perplexity (a comparison table's calibration-only rows) are
    left out.

    Parameters
    ----------
    table
        A perplexity table (:func:`~calib_frames.perplexity`) or comparison table.
    label
        Key on the vertical axis (default: the first key).
    color
        Key(s) told apart by colour (default: the other keys).
    width
        Width of each of the two panels in pixels.
    title
        Chart title.

    Returns
    -------
    altair.TopLevelMixin
        An ``HConcatChart`` (or a ``Chart`` when there is one measure).

    Raises
    ------
    TableError
        If there is no ``perplexity`` column, or no row has a perplexity.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot import perplexity_chart
    >>> toks = pl.DataFrame({"model": ["a", "b"], "nll": [8.0, 6.0], "tokens": [4, 4],
    ...                      "bytes": [16, 16]})
    >>> table = cf.perplexity(toks, by="model", tokens="tokens", bytes="bytes")
    >>> spec = perplexity_chart(table).to_dict()
    >>> [panel["encoding"]["x"]["field"] for panel in spec["hconcat"]]
    ['perplexity', 'bits_per_byte']
    """
    import altair as alt

    _check_size("width", width)
    data = frame(table, "perplexity_chart")
    keys = _comparison_keys(data, "perplexity table")
    check_columns(
        data.schema,
        ["perplexity"],
        role="perplexity table",
        built_by="perplexity",
        numeric=["perplexity"],
    )
    if label is not None and label not in keys:
        raise ArgumentError(f"label= names {label!r}, which is not a group key {keys}")
    label_keys = [label] if label is not None else keys[:1]
    prepared = prepare(
        data,
        keys,
        color=color if color is not None else [k for k in keys if k not in label_keys],
        facet=label_keys,
    )
    measures = ["perplexity"]
    for candidate in ("bits_per_byte", "bits_per_token"):
        if (
            candidate in data.columns
            and data.schema[candidate].is_numeric()
            and data.get_column(candidate).cast(pl.Float64).is_finite().any()
        ):
            measures.append(candidate)
            break
    dots = prepared.data.with_columns(pl.col(measures).cast(pl.Float64)).filter(
        pl.col("perplexity").is_finite()
    )
    if dots.height == 0 and data.height > 0:
        raise TableError("perplexity table: no row has a finite perplexity")
    extra = [c for c in ("tokens", "bytes") if c in data.columns]
    dots = dots.select(*keys, COLOR, PANEL, *measures, *extra)
    labels = dots.get_column(PANEL).unique(maintain_order=True).to_list()
    n_colors = dots.get_column(COLOR).n_unique()
    tooltips = [
        *_key_tooltips(keys),
        *[alt.Tooltip(f"{m}:Q", format=".4f") for m in measures],
        *[alt.Tooltip(f"{c}:Q", format=",") for c in extra],
    ]
    titles = {
        "perplexity": "perplexity (per token)",
        "bits_per_byte": "bits per byte",
        "bits_per_token": "bits per token",
    }
    if prepared.color:
        highlight = alt.selection_point(name="highlight_ppl", fields=[COLOR], bind="legend")
        dot_color: Any = alt.Color(
            f"{COLOR}:N",
            title=" × ".join(prepared.color),
            scale=alt.Scale(
                domain=[c for c in prepared.colors if c in set(dots.get_column(COLOR))],
                scheme=_palette(n_colors),
            ),
            legend=alt.Legend(labelLimit=200),
        )
        opacity: Any = alt.when(highlight).then(alt.value(1.0)).otherwise(alt.value(0.15))
    else:
        highlight = None
        dot_color = alt.value(_SINGLE)
        opacity = alt.value(1.0)
    height = max(60, 20 * len(labels))
    panels = []
    for position, measure in enumerate(measures):
        panel = (
            alt.Chart(_data(dots))
            .mark_point(filled=True, size=60)
            .encode(
                x=alt.X(
                    f"{measure}:Q", title=titles[measure], scale=alt.Scale(zero=False, nice=True)
                ),
                y=alt.Y(
                    f"{PANEL}:N",
                    title=None,
                    sort=labels,
                    axis=alt.Axis(labelLimit=180, grid=True)
                    if position == 0
                    else alt.Axis(labels=False, ticks=False, grid=True),
                ),
                color=dot_color,
                opacity=opacity,
                tooltip=tooltips,
            )
            .properties(width=width, height=height)
        )
        if highlight is not None and position == 0:
            panel = panel.add_params(highlight)
        panels.append(panel)
    heading = title if title is not None else "Perplexity"
    if len(panels) == 1:
        return panels[0].properties(title=heading)  # type: ignore[no-any-return]
    return alt.hconcat(*panels, spacing=12, title=alt.Title(heading))


# --------------------------------------------------------------------------------------
# 5. Curves from the estimators' tables
# --------------------------------------------------------------------------------------


def _curve_table(
    table: object, columns: Sequence[str], role: str, name: str
) -> tuple[pl.DataFrame, list[str]]:
    data = frame(table, name)
    keys = key_split(data.schema, frozenset(columns[:1]))
    check_columns(data.schema, list(columns), role=role, built_by="", numeric=list(columns))
    return data, keys


def _diagonal() -> Any:
    import altair as alt

    return (
        alt.Chart()
        .transform_aggregate(_rows="count()")
        .mark_rule(color=_DIAGONAL, strokeDash=[4, 3])
        .encode(x=alt.datum(0), y=alt.datum(0), x2=alt.datum(1), y2=alt.datum(1))
    )


def _group_encoding(prepared: Prepared) -> tuple[Any, Any, Any]:
    import altair as alt

    if not prepared.color:
        return alt.value(_SINGLE), alt.value(1.0), None
    highlight = alt.selection_point(fields=[COLOR], bind="legend")
    color = alt.Color(
        f"{COLOR}:N",
        title=" × ".join(prepared.color),
        scale=_color_scale(prepared),
        legend=alt.Legend(labelLimit=200, symbolType="stroke"),
    )
    opacity = alt.when(highlight).then(alt.value(1.0)).otherwise(alt.value(0.12))
    return color, opacity, highlight


def _finish(
    layer: Any, data: pl.DataFrame, prepared: Prepared, columns: int | None, heading: str
) -> alt.TopLevelMixin:
    import altair as alt

    if not prepared.facet:
        return layer.properties(data=_data(data), title=heading)  # type: ignore[no-any-return]
    panels = prepared.panels
    return layer.facet(  # type: ignore[no-any-return]
        facet=alt.Facet(f"{PANEL}:N", sort=panels, title=None, header=_header()),
        bounds="flush",
        spacing=_FACET_SPACING,
        columns=_columns(len(panels), prepared.facet, data, columns),
        data=_data(data),
    ).properties(title=heading)


def smooth_reliability_chart(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
    columns: int | None = None,
    width: float = 260,
    height: float = 260,
    title: str | None = None,
) -> alt.TopLevelMixin:
    """A smooth reliability curve per group: the table's ``y`` against ``x``, and the diagonal.

    The table (keys…, ``x``, ``y``) holds the points of an already estimated curve (e.g.
    kernel-smoothed accuracy as a function of confidence); this draws them in ``x``
    order, one line per group.

    Parameters
    ----------
    table
        keys…, ``x`` (confidence), ``y`` (estimated accuracy).
    color, facet, columns
        As in :func:`reliability_diagram`.
    width, height
        Size of one panel in pixels.
    title
        Chart title.

    Returns
    -------
    altair.TopLevelMixin
        A ``LayerChart`` or ``FacetChart``.

    Raises
    ------
    TableError
        If ``x`` or ``y`` is missing or not numeric.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot import smooth_reliability_chart
    >>> curve = pl.DataFrame({"model": ["a"] * 3, "x": [0.1, 0.5, 0.9], "y": [0.2, 0.5, 0.7]})
    >>> spec = smooth_reliability_chart(curve).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['rule', 'line']
    """
    import altair as alt

    data, keys = _curve_table(
        table, CURVE_COLUMNS, "smooth reliability curve table", "smooth_reliability_chart"
    )
    prepared = prepare(data, keys, color=color, facet=facet)
    points = (
        prepared.data.with_columns(pl.col("x", "y").cast(pl.Float64))
        .filter(pl.col("x").is_finite(), pl.col("y").is_finite())
        .select(*keys, COLOR, PANEL, "x", "y")
        .sort(PANEL, COLOR, "x", maintain_order=True)
    )
    group_color, opacity, highlight = _group_encoding(prepared)
    unit = alt.Scale(domain=[0, 1], nice=False)
    line = (
        alt.Chart()
        .mark_line(strokeWidth=2)
        .encode(
            x=alt.X("x:Q", scale=unit, title="confidence"),
            y=alt.Y("y:Q", scale=unit, title="estimated accuracy"),
            color=group_color,
            detail=alt.Detail(f"{COLOR}:N"),
            order=alt.Order("x:Q"),
            opacity=opacity,
            tooltip=[
                *_key_tooltips(keys),
                alt.Tooltip("x:Q", format=".3f"),
                alt.Tooltip("y:Q", format=".3f"),
            ],
        )
    )
    if highlight is not None:
        line = line.add_params(highlight)
    layer = alt.layer(_diagonal(), line).properties(width=width, height=height)
    return _finish(
        layer, points, prepared, columns, title if title is not None else "Smooth reliability curve"
    )


def isotonic_reliability_chart(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
    columns: int | None = None,
    width: float = 260,
    height: float = 260,
    title: str | None = None,
) -> alt.TopLevelMixin:
    """The CORP (isotonic) reliability curve: a step per PAV block, and the diagonal.

    Each block of the table (keys…, ``block``, ``confidence_lower``,
    ``confidence_upper``, ``count``, ``recalibrated``) is a horizontal segment at its
    recalibrated probability over its confidence range; consecutive blocks are joined by
    vertical steps. Points mark the blocks, sized by ``count``.

    Parameters
    ----------
    table
        The blocks table, one row per block, ``block`` ordering blocks in a group.
    color, facet, columns
        As in :func:`reliability_diagram`.
    width, height
        Size of one panel in pixels.
    title
        Chart title.

    Returns
    -------
    altair.TopLevelMixin
        A ``LayerChart`` or ``FacetChart``.

    Raises
    ------
    TableError
        If a column is missing or not numeric.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot import isotonic_reliability_chart
    >>> blocks = pl.DataFrame({
    ...     "block": [0, 1], "confidence_lower": [0.1, 0.6], "confidence_upper": [0.5, 0.9],
    ...     "count": [3, 5], "recalibrated": [0.2, 0.8],
    ... })
    >>> spec = isotonic_reliability_chart(blocks).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['rule', 'line', 'point']
    >>> sorted(len(rows) for rows in spec["datasets"].values())  # 2 blocks, 3 step vertices
    [2, 3]
    """
    import altair as alt

    data, keys = _curve_table(
        table, ISOTONIC_COLUMNS, "isotonic blocks table", "isotonic_reliability_chart"
    )
    prepared = prepare(data, keys, color=color, facet=facet)
    blocks = prepared.data.with_columns(
        pl.col("confidence_lower", "confidence_upper", "recalibrated").cast(pl.Float64),
        pl.col("count").cast(pl.Float64),
        ((pl.col("confidence_lower") + pl.col("confidence_upper")) / 2)
        .cast(pl.Float64)
        .alias("_mid"),
    ).filter(pl.col("recalibrated").is_finite(), pl.col("confidence_lower").is_finite())
    blocks = blocks.select(
        *keys,
        COLOR,
        PANEL,
        "block",
        "confidence_lower",
        "confidence_upper",
        "count",
        "recalibrated",
        "_mid",
    ).sort(PANEL, COLOR, "block", maintain_order=True)
    # Step vertices: each block's left end, and the last block's right end.
    left = blocks.select(
        *keys,
        COLOR,
        PANEL,
        pl.col("block").cast(pl.Float64).alias("_order"),
        pl.col("confidence_lower").alias("_x"),
        pl.col("recalibrated"),
    )
    last = (
        blocks.group_by(PANEL, COLOR, maintain_order=True)
        .agg(
            *[pl.col(k).last() for k in keys],
            pl.col("block").max().cast(pl.Float64) + 0.5,
            pl.col("confidence_upper").last(),
            pl.col("recalibrated").last(),
        )
        .select(
            *keys,
            COLOR,
            PANEL,
            pl.col("block").alias("_order"),
            pl.col("confidence_upper").alias("_x"),
            pl.col("recalibrated"),
        )
    )
    steps = pl.concat([left, last]).sort(PANEL, COLOR, "_order", maintain_order=True)
    group_color, opacity, highlight = _group_encoding(prepared)
    unit = alt.Scale(domain=[0, 1], nice=False)
    line = (
        alt.Chart(_data(steps))
        .mark_line(interpolate="step-after", strokeWidth=2)
        .encode(
            x=alt.X("_x:Q", scale=unit, title="confidence"),
            y=alt.Y("recalibrated:Q", scale=unit, title="recalibrated probability (CORP)"),
            color=group_color,
            detail=alt.Detail(f"{COLOR}:N"),
            order=alt.Order("_order:Q"),
            opacity=opacity,
        )
    )
    if highlight is not None:
        line = line.add_params(highlight)
    marks = (
        alt.Chart(_data(blocks))
        .mark_point(filled=True)
        .encode(
            x=alt.X("_mid:Q", scale=unit),
            y=alt.Y("recalibrated:Q", scale=unit),
            size=alt.Size("count:Q", title="rows in block", scale=alt.Scale(range=[10, 160])),
            color=group_color,
            opacity=opacity,
            tooltip=[
                *_key_tooltips(keys),
                alt.Tooltip("block:Q"),
                alt.Tooltip("confidence_lower:Q", title="confidence from", format=".3f"),
                alt.Tooltip("confidence_upper:Q", title="confidence to", format=".3f"),
                alt.Tooltip("count:Q", title="rows", format=","),
                alt.Tooltip("recalibrated:Q", format=".3f"),
            ],
        )
    )
    diagonal = _diagonal().properties(data=_data(blocks))
    layer = alt.layer(diagonal, line, marks).properties(width=width, height=height)
    heading = title if title is not None else "Isotonic (CORP) reliability curve"
    if not prepared.facet:
        return layer.properties(title=heading)
    panels = prepared.panels
    pick_columns = _columns(len(panels), prepared.facet, blocks, columns)
    # layers with their own data cannot be faceted by Vega-Lite: one panel per group
    cells = []
    for name in panels:
        pick = alt.FieldEqualPredicate(field=PANEL, equal=name)
        cells.append(
            alt.layer(
                diagonal.transform_filter(pick),
                line.transform_filter(pick),
                marks.transform_filter(pick),
            ).properties(width=width, height=height, title=alt.Title(name, fontSize=11))
        )
    return alt.concat(*cells, columns=pick_columns, title=heading)


def ece_bins_chart(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
    columns: int | None = None,
    width: float = 300,
    height: float = 200,
    title: str | None = None,
) -> alt.TopLevelMixin:
    """ECE as a function of the number of bins, one line of points per group.

    Reads a table (keys…, ``bins``, ``ece``): how much of a group's ECE depends on the
    binning. The bin-count axis is logarithmic when the counts span more than a factor
    of 20.

    Parameters
    ----------
    table
        keys…, ``bins`` (number of bins), ``ece``.
    color, facet, columns
        As in :func:`reliability_diagram`.
    width, height
        Size of one panel in pixels.
    title
        Chart title.

    Returns
    -------
    altair.TopLevelMixin
        A ``Chart`` or ``FacetChart``.

    Raises
    ------
    TableError
        If ``bins`` or ``ece`` is missing or not numeric.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot import ece_bins_chart
    >>> table = pl.DataFrame({"model": ["a"] * 3, "bins": [5, 10, 20], "ece": [0.02, 0.03, 0.05]})
    >>> spec = ece_bins_chart(table).to_dict()
    >>> spec["mark"]["type"], spec["encoding"]["x"]["field"]
    ('line', 'bins')
    """
    import altair as alt

    data, keys = _curve_table(table, ECE_BINS_COLUMNS, "ECE-versus-bins table", "ece_bins_chart")
    prepared = prepare(data, keys, color=color, facet=facet)
    points = prepared.data.with_columns(
        pl.col("bins").cast(pl.Float64), pl.col("ece").cast(pl.Float64)
    ).filter(pl.col("ece").is_finite(), pl.col("bins") > 0)
    points = points.select(*keys, COLOR, PANEL, "bins", "ece").sort(
        PANEL, COLOR, "bins", maintain_order=True
    )
    group_color, opacity, highlight = _group_encoding(prepared)
    low = points.get_column("bins").min()
    high = points.get_column("bins").max()
    spread = isinstance(low, float) and isinstance(high, float) and low > 0 and high / low > 20
    scale = alt.Scale(type="log") if spread else alt.Scale(zero=False)
    chart = (
        alt.Chart()
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=30))
        .encode(
            x=alt.X(
                "bins:Q",
                title="number of bins",
                scale=scale,
                axis=alt.Axis(format="~d", tickMinStep=1),
            ),
            y=alt.Y("ece:Q", title="ECE", scale=alt.Scale(zero=True)),
            color=group_color,
            detail=alt.Detail(f"{COLOR}:N"),
            order=alt.Order("bins:Q"),
            opacity=opacity,
            tooltip=[
                *_key_tooltips(keys),
                alt.Tooltip("bins:Q", format="~d"),
                alt.Tooltip("ece:Q", format=".4f"),
            ],
        )
    )
    if highlight is not None:
        chart = chart.add_params(highlight)
    chart = chart.properties(width=width, height=height)
    return _finish(
        chart,
        points,
        prepared,
        columns,
        title if title is not None else "ECE against the number of bins",
    )
