"""Groups side by side on their metrics: one mark per row of a metrics or comparison table.

:func:`metric_scatter` places each group by two metrics and :func:`brier_decomposition_chart`
splits its Brier score into reliability and resolution (the model × task grid has its own
module, :mod:`calib_frames.plot.heatmap`, and perplexity too,
:mod:`calib_frames.plot.perplexity`). Every value drawn is read from the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from calib_frames.arguments import check_arguments
from calib_frames.exceptions import TableError
from calib_frames.metrics.registry import metric
from calib_frames.plot._common import (
    LEGEND_TITLE,
    PANELS,
    PIXELS,
    SINGLE,
    emphasis,
    field,
    group_color,
    in_panels,
    inline_data,
    key_tooltips,
    metric_tooltips,
    share_parts,
    sized_panels,
)
from calib_frames.plot.frames import (
    COLOR,
    PANEL,
    Prepared,
    by_label,
    check_columns,
    interval_columns,
    label_heights,
    metric_table,
)

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "DECOMPOSITION_TERMS",
    "LABEL_LIMIT",
    "PALETTE_LIMIT",
    "DecompositionData",
    "ScatterData",
    "brier_decomposition_chart",
    "decomposition_data",
    "metric_scatter",
    "scatter_data",
]

LABEL_LIMIT = 6
"""Above this many points in one panel of :func:`metric_scatter`, only the best and the
worst on ``x`` and the picked group are labelled; tooltips name every point."""
PALETTE_LIMIT = 20
"""Above this many groups :func:`metric_scatter` draws every point grey and the picked one
dark (clicked, or chosen in a dropdown): twenty colours are as many as the eye tells apart."""
TERM_FORMAT = ".5f"
"""The Brier decomposition's numbers, to five decimals: small terms that add up to the score."""
GREY = "#9e9e9e"
POINT_LABEL = 24
"""Most characters of a point's label (:func:`~calib_frames.plot.frames.group_labels`)."""
LABEL_TEXT = "#333333"
"""Point labels: dark text whatever the point's colour (pale palette colours do not read)."""


@dataclass(frozen=True)
class ScatterData:
    """What :func:`metric_scatter` draws, as :func:`scatter_data` prepares it."""

    prepared: Prepared
    """The groups: one colour per value of the label key, a panel per value of the others."""
    points: pl.DataFrame
    """One row per group with finite ``x`` and ``y``: its keys, ``_color``, ``_panel``, the
    :attr:`shown` columns (Float64), ``_extreme`` (lowest or highest ``x`` of its panel),
    ``_side`` (of its label: facing the middle of the x axis) and ``_label_y`` (the label's
    height, :func:`~calib_frames.plot.frames.label_heights`)."""
    x: str
    y: str
    shown: list[str]
    """The metric columns of the tooltips: ``x``, ``y``, their intervals, the noise floor,
    then ECE, MCE, Brier score and accuracy where present."""
    intervals: dict[str, tuple[str, str]]
    """The interval bounds of ``x`` and ``y`` that the table has."""
    floor: bool
    """Whether the noise floor is drawn (``x`` is ECE and the table has it)."""
    y_domain: list[float]
    """The y axis: the points and their intervals, with a 5% margin."""
    crowded: bool
    """Whether a panel holds over :data:`LABEL_LIMIT` points (only its extremes labelled)."""


@check_arguments(height=PIXELS)
def scatter_data(
    metrics: pl.DataFrame | pl.LazyFrame,
    *,
    x: str = "ece",
    y: str = "accuracy",
    label: str | None = None,
    facet: str | Sequence[str] | None = None,
    height: float = 220,
) -> ScatterData:
    """The points of :func:`metric_scatter`, their labels' places and the y axis (no altair).

    Takes the table and arguments of :func:`metric_scatter` (``height`` spaces the labels
    a line apart) and raises its errors.

    Returns
    -------
    ScatterData
        The points and what the chart needs to place them.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.groups import scatter_data
    >>> table = pl.DataFrame({"model": ["a", "b", "c"], "ece": [0.02, 0.10, 0.05],
    ...                       "accuracy": [0.70, 0.72, float("nan")]})
    >>> data = scatter_data(table)  # c has no accuracy: no point
    >>> data.points.select("model", "_side", "_extreme").rows()  # highest accuracy first
    [('b', 'right', True), ('a', 'left', True)]
    >>> [round(bound, 3) for bound in data.y_domain]
    [0.699, 0.721]
    """
    data, keys = metric_table(
        metrics, "metric_scatter", [x, y], role="metrics table", built_by="calibration_metrics"
    )
    prepared = by_label(data, keys, label, facet, color_limit=POINT_LABEL)
    extra: list[str] = []
    intervals = {}
    for name in (x, y):
        bounds = interval_columns(data.schema, name, role="metrics table")
        if bounds is not None:
            intervals[name] = bounds
            extra += bounds
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
    if points.is_empty():
        raise TableError(
            f"metric_scatter: no group of the {data.height:,} rows has a finite {x} and {y}; "
            "nothing to draw"
        )
    # the panels share the x axis, which starts at zero: a label faces its middle
    middle = pl.max_horizontal(pl.col(x).max(), 0) / 2 + pl.min_horizontal(pl.col(x).min(), 0) / 2
    points = points.select(
        *keys,
        COLOR,
        PANEL,
        *shown,
        (
            (pl.col(x) == pl.col(x).min().over(PANEL)) | (pl.col(x) == pl.col(x).max().over(PANEL))
        ).alias("_extreme"),
        pl.when(pl.col(x) > middle).then(pl.lit("right")).otherwise(pl.lit("left")).alias("_side"),
    )
    points, y_domain, crowded = _placed_labels(points, y, intervals.get(y, ()), height)
    return ScatterData(
        prepared=prepared,
        points=points,
        x=x,
        y=y,
        shown=shown,
        intervals=intervals,
        floor=floor,
        y_domain=y_domain,
        crowded=crowded > LABEL_LIMIT,
    )


@check_arguments(columns=PANELS, width=PIXELS, height=PIXELS)
def metric_scatter(
    metrics: pl.DataFrame | pl.LazyFrame,
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

    Labels: with up to :data:`LABEL_LIMIT` (6) points in a panel every point is labelled;
    beyond, only the best and the worst on ``x`` and the picked group (every point has a
    tooltip). Labels are dark, cut in the middle past 24 characters, and sit beside the
    point on the side facing the panel's middle, so they stay inside it, and at least a
    line apart (:func:`~calib_frames.plot.frames.label_heights`); the y axis spans the
    points and their intervals. Up to
    :data:`PALETTE_LIMIT` (20) groups get a colour each and a legend that picks one;
    beyond, the points are grey and the group picked by a click (or in the dropdown under
    the chart) is drawn dark.

    Parameters
    ----------
    metrics
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

    See Also
    --------
    brier_decomposition_chart : where each group's Brier score comes from.

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
    >>> [layer["mark"]["type"] for layer in spec["layer"]]  # labels left and right
    ['point', 'text', 'text']
    """
    import altair as alt

    data = scatter_data(metrics, x=x, y=y, label=label, facet=facet, height=height)
    prepared, points, y_domain, keys = data.prepared, data.points, data.y_domain, data.prepared.keys
    x_title, y_title = metric(x).title, metric(y).title
    tooltips = [*key_tooltips(keys), *metric_tooltips(data.shown)]
    many = len(prepared.colors) > PALETTE_LIMIT
    if many:
        # past the palette's 20 colours: every point grey, the picked group dark
        highlight = alt.selection_point(
            name="highlight_points",
            fields=[COLOR],
            on="click",
            clear="dblclick",
            bind=alt.binding_select(options=[None, *prepared.colors], name="highlight "),
        )
        color: Any = alt.ColorValue(
            **alt.when(highlight, empty=False).then(alt.value(SINGLE)).otherwise(alt.value(GREY))
        )
        faded: Any = alt.OpacityValue(0.8)
    else:
        highlight = alt.selection_point(name="highlight_points", fields=[COLOR], bind="legend")
        color = group_color(prepared, alt.Legend(labelLimit=200, titleLimit=LEGEND_TITLE))
        faded = emphasis(highlight, 0.15)
    # the x metric (a miscalibration) from zero; the y metric fitted to its range
    x_enc, y_enc = (
        channel(
            field=field(name),
            type="quantitative",
            title=axis_title,
            scale=scale,
            axis=alt.Axis(tickCount=5),
        )
        for channel, name, axis_title, scale in (
            (alt.X, x, x_title, alt.Scale(zero=True, nice=True)),
            (alt.Y, y, y_title, alt.Scale(domain=y_domain, nice=False)),
        )
    )
    layers = _scatter_extras(
        data.intervals,
        floor=data.floor,
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
    # a crowded panel labels its best and worst group and the picked one; the rest have
    # tooltips
    picked = alt.when(highlight, empty=False).then(alt.value(1.0))
    label_opacity = (
        alt.OpacityValue(
            **picked.when(alt.datum["_extreme"]).then(alt.value(1.0)).otherwise(alt.value(0.0))
        )
        if data.crowded
        else (alt.OpacityValue(1.0) if many else faded)
    )
    layers += _label_layers(x_enc, y_domain, label_opacity)
    heading = title if title is not None else f"{y_title} against {x_title}"
    subtitle = "grey tick: ECE noise floor" if data.floor else ""
    return sized_panels(
        alt.layer(*share_parts(*layers)),
        prepared,
        points,
        (width, height),
        heading,
        columns=columns,
        subtitle=subtitle,
    )


def _placed_labels(
    points: pl.DataFrame, y: str, y_interval: Sequence[str], height: float
) -> tuple[pl.DataFrame, list[float], int]:
    """The points with their label heights, the y axis's domain and the most points a panel.

    The y axis spans the points and their interval (5% margin), so that label heights can
    be spaced in pixels: 12, a line of 10-pixel text, over the whole panel (labels on
    either side of their points never share a line). A crowded panel (over
    :data:`LABEL_LIMIT` points) spaces the labels of its best and worst only.
    """
    crowded = int(points.group_by(PANEL).len().get_column("len").max() or 0)  # type: ignore[arg-type]
    labelled = pl.col("_extreme") if crowded > LABEL_LIMIT else pl.lit(True)
    spans = [pl.col(c) for c in (y, *y_interval)]
    y_low = float(points.select(pl.min_horizontal(spans).min()).item())
    y_high = float(points.select(pl.max_horizontal(spans).max()).item())
    margin = 0.05 * (y_high - y_low) or 0.01
    y_domain = [y_low - margin, y_high + margin]
    placed = label_heights(
        points,
        y,
        by=[PANEL],
        labelled=labelled,
        gap=12 * (y_domain[1] - y_domain[0]) / height,
        floor=y_domain[0],
    )
    return placed, y_domain, crowded


def _label_layers(x_enc: Any, y_domain: list[float], opacity: Any) -> list[Any]:
    """Labels beside their point, on the side facing the middle, and just over it.

    The intervals and the noise-floor line run through the point, not through its label;
    labels of points close in height were moved apart (:func:`label_heights`).
    """
    import altair as alt

    label_y = alt.Y("_label_y:Q", scale=alt.Scale(domain=y_domain, nice=False))
    sides: dict[str, dict[str, Any]] = {
        "left": {"align": "left", "dx": 5},
        "right": {"align": "right", "dx": -5},
    }
    return [
        alt.Chart()
        .transform_filter(alt.FieldEqualPredicate(field="_side", equal=side))
        .mark_text(baseline="bottom", dy=-3, fontSize=10, color=LABEL_TEXT, **place)
        .encode(x=x_enc, y=label_y, text=alt.Text(f"{COLOR}:N"), opacity=opacity)
        for side, place in sides.items()
    ]


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
        at_floor = alt.X(f"{field('ece_noise_floor')}:Q")
        layers.append(
            alt.Chart()
            .mark_rule(color="#bdbdbd", strokeWidth=1)
            .encode(
                x=at_floor, x2=alt.X2(f"{field(x)}:Q"), y=y_enc, opacity=faded, tooltip=tooltips
            )
        )
        layers.append(
            alt.Chart()
            .mark_tick(color="#757575", thickness=2, size=12)
            .encode(x=at_floor, y=y_enc, opacity=faded, tooltip=tooltips)
        )
    # an interval along each axis whose metric has one, across the point
    spans = ((x, "x", alt.X, alt.X2, {"y": y_enc}), (y, "y", alt.Y, alt.Y2, {"x": x_enc}))
    for name, axis, start, end, across in spans:
        if name in intervals:
            low, high = intervals[name]
            along = {axis: start(f"{field(low)}:Q"), f"{axis}2": end(f"{field(high)}:Q")}
            layers.append(
                alt.Chart().mark_rule().encode(**along, **across, color=color, opacity=faded)
            )
    return layers


@dataclass(frozen=True)
class DecompositionData:
    """What :func:`brier_decomposition_chart` draws, as :func:`decomposition_data` prepares it."""

    prepared: Prepared
    """The groups: one bar row per value of the label key, a panel per value of the others."""
    bars: pl.DataFrame
    """Two rows per group, one per term: its keys, ``_color``, ``_panel``, ``brier``, the
    :attr:`extra` columns, ``_term`` ("reliability (added)", "resolution (subtracted)"),
    ``_value`` (the term) and ``_signed`` (resolution negated); terms that are not finite
    are left out."""
    extra: list[str]
    """The other Brier terms the table has, for the tooltips."""


DECOMPOSITION_TERMS = ("reliability (added)", "resolution (subtracted)")
"""The two bars of a group, as :func:`decomposition_data` names them."""


def decomposition_data(
    metrics: pl.DataFrame | pl.LazyFrame,
    *,
    label: str | None = None,
    facet: str | Sequence[str] | None = None,
) -> DecompositionData:
    """The bars of :func:`brier_decomposition_chart`: reliability and resolution per group.

    Takes the table and arguments of :func:`brier_decomposition_chart` and raises its errors.

    Returns
    -------
    DecompositionData
        The groups and their two signed bars.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.groups import decomposition_data
    >>> table = pl.DataFrame({"model": ["a"], "brier": [0.2], "reliability": [0.03],
    ...                       "resolution": [0.08], "uncertainty": [0.25]})
    >>> data = decomposition_data(table)
    >>> data.bars.select("_term", "_signed").rows(), data.extra
    ([('reliability (added)', 0.03), ('resolution (subtracted)', -0.08)], ['uncertainty'])
    """
    terms = ["reliability", "resolution", "brier"]
    data, keys = metric_table(
        metrics,
        "brier_decomposition_chart",
        terms,
        role="metrics table",
        built_by="calibration_metrics",
    )
    prepared = by_label(data, keys, label, facet)
    extra: list[str] = [
        c
        for c in ("uncertainty", "within_bin_variance", "within_bin_covariance")
        if c in data.columns and data.schema[c].is_numeric()
    ]
    wide = prepared.data.select(
        *keys, COLOR, PANEL, *[pl.col(c).cast(pl.Float64) for c in [*terms, *extra]]
    )
    added, subtracted = DECOMPOSITION_TERMS
    bars = (
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
            .then(pl.lit(subtracted))
            .otherwise(pl.lit(added))
            .alias("_term"),
        )
        .filter(pl.col("_signed").is_finite())
    )
    return DecompositionData(prepared=prepared, bars=bars, extra=extra)


@check_arguments(columns=PANELS, width=PIXELS)
def brier_decomposition_chart(
    metrics: pl.DataFrame | pl.LazyFrame,
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
    metrics
        A metrics or comparison table (columns ``reliability``, ``resolution``,
        ``brier``).
    label
        Key on the vertical axis (default: the first key); other keys facet.
    facet
        Key(s) making panels (default: the keys other than ``label``).
    columns
        Panels per row (default: up to 4 for one facet key, 4 for several).
    width
        Width of one panel in pixels; the height follows the number of groups.
    title
        Chart title (default "Brier decomposition").

    Returns
    -------
    altair.TopLevelMixin
        A ``Chart`` (every group on one axis) or a ``FacetChart`` (a panel per facet
        value).

    Raises
    ------
    TableError
        If a decomposition column is missing.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot import brier_decomposition_chart
    >>> preds = pl.DataFrame({"model": ["a", "b"] * 4, "task": ["x"] * 4 + ["y"] * 4,
    ...                       "confidence": [0.9, 0.6, 0.8, 0.7, 0.3, 0.6, 0.9, 0.2],
    ...                       "correct": [1, 1, 0, 1, 0, 1, 1, 0]})
    >>> metrics = cf.calibration_metrics(preds, by=["model", "task"])
    >>> spec = brier_decomposition_chart(metrics).to_dict()  # models on the axis, a panel a task
    >>> spec["facet"]["field"], spec["spec"]["mark"]["type"], spec["columns"]
    ('_panel', 'bar', 2)
    >>> rows = next(iter(spec["datasets"].values()))  # two terms per model and task
    >>> len(rows), sorted({row["_term"] for row in rows})
    (8, ['reliability (added)', 'resolution (subtracted)'])
    """
    import altair as alt

    data = decomposition_data(metrics, label=label, facet=facet)
    prepared, long, keys = data.prepared, data.bars, data.prepared.keys
    tooltips = [
        *key_tooltips(keys),
        alt.Tooltip("_term:N", title="term"),
        alt.Tooltip("_value:Q", title="value", format=TERM_FORMAT),
        *metric_tooltips(["brier", *data.extra], format=TERM_FORMAT),
    ]
    labels = prepared.colors
    height = max(60, 18 * len(labels))
    chart = (
        alt.Chart(inline_data(long))
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
                    domain=list(DECOMPOSITION_TERMS),
                    range=["#d6604d", "#4d9221"],
                ),
            ),
            tooltip=tooltips,
        )
        .properties(width=width, height=height)
    )
    # several facet keys: four panels a row unless columns= says otherwise
    wanted = columns if columns else (None if len(prepared.facet) < 2 else 4)
    return in_panels(
        chart,
        prepared,
        long,
        title=title if title is not None else "Brier decomposition",
        columns=wanted,
        inline=False,
    )
