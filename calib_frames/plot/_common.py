"""What the charts' altair layers share: colours, the palette, field names, tooltips, panels.

Each chart module (:mod:`~calib_frames.plot.reliability`, :mod:`~calib_frames.plot.heatmap`,
:mod:`~calib_frames.plot.groups`, :mod:`~calib_frames.plot.curves`, …) encodes the frames
its data step prepared (on :mod:`calib_frames.plot.frames`) with these pieces, so that
every chart colours, highlights, facets and refuses arguments the same way. altair is
imported inside each function.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import polars as pl

from calib_frames.arguments import Integer, Number
from calib_frames.exceptions import ArgumentError
from calib_frames.metrics.registry import metric
from calib_frames.plot.frames import COLOR, PANEL, Prepared, facet_columns, records

if TYPE_CHECKING:
    import altair as alt

T = TypeVar("T")

DIAGONAL = "#9e9e9e"
"""The perfect-calibration diagonal."""
SINGLE = "#1f3b73"
"""Marks of a chart with one group (no colour key)."""
FACET_SPACING = {"row": 48, "column": 20}
"""Wrapped facets with flush bounds: room for each row's x axis and the next header."""
NO_FRAME = {"stroke": None}
"""A view without its border (text tables beside or under a chart)."""
LEGEND_TITLE = 200
"""Pixels of a legend's title (as wide as its labels): the key, and under it the parts its
folded labels share (at most :data:`~calib_frames.plot.frames.SHARED_LIMIT` characters)."""


def field(name: str) -> str:
    """A column name as a Vega-Lite field reference (dots and brackets escaped)."""
    return re.sub(r"([.\[\]\\])", r"\\\1", name)


def inline_data(data: pl.DataFrame) -> alt.InlineData:
    """Inline rows (altair gathers identical ones into one top-level dataset), shared.

    Built without altair's check at construction, which validates every row against the
    Vega-Lite schema (slow for a few thousand rows); the chart's ``to_dict`` still
    validates the whole spec, rows included.
    """
    import altair as alt
    from altair.utils.schemapi import debug_mode

    with debug_mode(False):
        return shared(alt.InlineData(values=records(data)))


def _itself(part: Any, memo: Any = None) -> Any:
    return part


def shared(part: T) -> T:
    """``part`` (an altair schema object), kept by reference in altair's deep copies.

    altair deep-copies every subchart, down to each tooltip and scale, each time charts
    are layered, faceted or concatenated and again in ``to_dict`` (BENCHMARKS.md has what
    that cost a report's nested charts). A shared part's copy is the part
    itself (``__deepcopy__``), so compose charts from parts that are not changed in
    place afterwards (altair's own methods never do: ``encode`` makes a new encoding,
    it does not edit the old one).
    """
    object.__setattr__(part, "__deepcopy__", functools.partial(_itself, part))
    return part


def share_parts(*charts: T) -> tuple[T, ...]:
    """``charts``, their encodings and marks :func:`shared`, for layering or concatenating.

    Walks compound charts (layers, facets, concatenations) down to the unit charts and
    shares the encoding (with every channel in it: a copy otherwise walks all ~60 of its
    channel slots) and the mark of each.
    """
    from altair.utils.schemapi import SchemaBase

    def walk(chart: Any) -> None:
        kwds = getattr(chart, "_kwds", {})
        for name in ("layer", "vconcat", "hconcat", "concat"):
            for sub in kwds.get(name) or ():
                walk(sub)
        if isinstance(kwds.get("spec"), SchemaBase):
            walk(kwds["spec"])
        for part in (kwds.get("mark"), kwds.get("encoding")):
            if isinstance(part, SchemaBase):
                shared(part)

    for chart in charts:
        walk(chart)
    return charts


def pick_keys(pick: str | Sequence[str] | None, keys: Sequence[str]) -> list[str]:
    """The group keys of a ``pick=`` argument, checked against the chart's ``keys``."""
    if pick is None:
        return []
    if not isinstance(pick, str | Sequence) or not all(isinstance(k, str) for k in pick):
        raise ArgumentError(
            f"pick= takes a group key or a list of group keys, got {pick!r} of type "
            f"{type(pick).__name__}"
        )
    chosen = [pick] if isinstance(pick, str) else list(pick)
    unknown = [key for key in chosen if key not in keys]
    if unknown or not chosen:
        raise ArgumentError(
            f"pick= names {unknown or chosen}, which are not group keys {list(keys)}"
        )
    return chosen


def picked_group(keys: Sequence[str]) -> tuple[list[str], str]:
    """The parameters that name a picked group, one per key, and the test of a row.

    The parameters are ``pick_0``, ``pick_1`` … in the order of ``keys`` (the names a
    page's script sets: the report links a heatmap's cells to a picked diagram by them);
    the test is the Vega expression true on the picked group's rows.
    """
    names = [f"pick_{position}" for position in range(len(keys))]
    test = " && ".join(
        f"datum[{json.dumps(key)}] === {name}" for key, name in zip(keys, names, strict=True)
    )
    return names, test


def palette(count: int) -> Literal["dark2", "tableau20"]:
    """The colour scheme for ``count`` groups."""
    # dark2 has no pure red or blue, which the gap bars use for over/underconfidence
    return "dark2" if count <= 8 else "tableau20"


def color_scale(prepared: Prepared) -> alt.Scale:
    """The colour groups of a prepared table, in legend order, on the palette."""
    import altair as alt

    domain = prepared.colors
    return alt.Scale(domain=domain, scheme=palette(len(domain)))


def unit_scale() -> alt.Scale:
    """A probability axis: 0 to 1, not rounded out."""
    import altair as alt

    return alt.Scale(domain=[0, 1], nice=False)


def group_color(prepared: Prepared, legend: alt.Legend | None) -> alt.Color:
    """One colour per colour group, titled by the colour keys (and what their labels fold)."""
    import altair as alt

    title = " × ".join(prepared.color) or "group"
    return alt.Color(
        f"{COLOR}:N",
        # the folded labels' shared parts under the key (acme-instruct-…-checkpoint-…)
        title=[title, prepared.color_shared] if prepared.color_shared else title,
        scale=color_scale(prepared),
        legend=legend,
    )


def emphasis(highlight: Any, dim: float, *, empty: bool | None = None) -> Any:
    """Opacity 1 for the groups picked in the legend, ``dim`` for the others.

    ``empty`` says whether every group counts as picked while none is (Vega-Lite's
    default: yes).
    """
    import altair as alt

    picked = alt.when(highlight) if empty is None else alt.when(highlight, empty=empty)
    return alt.OpacityValue(**picked.then(alt.value(1.0)).otherwise(alt.value(dim)))


def group_encoding(prepared: Prepared, name: str | None = None) -> tuple[Any, Any, Any]:
    """Colour, opacity and legend selection of a chart with one line per colour group.

    One group (no colour key): a single colour, full opacity and no selection.
    """
    import altair as alt

    if not prepared.color:
        return alt.ColorValue(SINGLE), alt.OpacityValue(1.0), None
    highlight = alt.selection_point(name=name, fields=[COLOR], bind="legend")
    color = group_color(
        prepared, alt.Legend(labelLimit=200, titleLimit=LEGEND_TITLE, symbolType="stroke")
    )
    return color, emphasis(highlight, 0.12), highlight


def group_lines(line: Any, *, color: Any, opacity: Any, order: str, **channels: Any) -> Any:
    """``line`` (a line mark) drawn once per colour group, its points joined in ``order``."""
    import altair as alt

    return line.encode(
        color=color,
        detail=alt.Detail(f"{COLOR}:N"),
        order=alt.Order(order),
        opacity=opacity,
        **channels,
    )


def key_tooltips(keys: Sequence[str]) -> list[alt.Tooltip]:
    """A tooltip line per group key."""
    import altair as alt

    # field=/type= rather than the "name:N" shorthand, which misreads a ':' in a name
    return [alt.Tooltip(field=field(key), type="nominal", title=key) for key in keys]


def metric_tooltips(columns: Sequence[str], *, format: str | None = None) -> list[alt.Tooltip]:
    """A tooltip line per metric column: its registered title and number format.

    ``format`` overrides the registered formats (a chart that shows more digits).
    """
    import altair as alt

    return [
        alt.Tooltip(
            field=field(column),
            type="quantitative",
            title=metric(column).title,
            format=metric(column).format if format is None else format,
        )
        for column in columns
    ]


def label_expr(columns: Sequence[str]) -> str:
    """A Vega label expression writing each of ``columns`` as its registered label."""
    cases = "".join(
        f"datum.value == {json.dumps(column)} ? {json.dumps(metric(column).label)} : "
        for column in columns
    )
    return cases + "datum.value"


COUNT_LABEL = "datum.value % 1 ? '' : format(datum.value, '~s')"
"""Count axis labels: whole numbers only (a small count must not read "500m")."""
BAR = "#8c9bb5"
"""The bars of one group's predictions per bin."""


def bin_tooltips(keys: Sequence[str]) -> list[alt.Tooltip]:
    """The group's keys, the bin's range and its number of predictions."""
    import altair as alt

    return [
        *key_tooltips(keys),
        alt.Tooltip("_bin_range:N", title="bin"),
        alt.Tooltip("count:Q", title="predictions", format=","),
    ]


def count_marks(y: alt.Y, tooltips: list[Any], *, color: Any = None, opacity: Any = None) -> Any:
    """Predictions per bin: a bar over each bin's range, or a line per colour group.

    The lines (``color`` given) run through the bins' midpoints.
    """
    import altair as alt

    unit = unit_scale()
    if color is None:
        return (
            alt.Chart()
            .mark_bar(color=BAR, stroke="white", strokeWidth=0.5)
            .encode(
                x=alt.X("bin_lower:Q", scale=unit, title="confidence"),
                x2=alt.X2("bin_upper:Q"),
                y=y,
                y2=alt.Y2Datum(0),
                tooltip=tooltips,
            )
        )
    return group_lines(
        alt.Chart().mark_line(strokeWidth=1.5, point=alt.OverlayMarkDef(size=18, filled=True)),
        color=color,
        opacity=opacity,
        order="bin:Q",
        x=alt.X("_bin_mid:Q", scale=unit, title="confidence"),
        y=y,
        tooltip=tooltips,
    )


def diagonal(**mark: Any) -> alt.Chart:
    """The diagonal from (0, 0) to (1, 1), drawn once per panel."""
    import altair as alt

    return (  # type: ignore[no-any-return]
        alt.Chart()
        .transform_aggregate(_rows="count()")
        .mark_rule(color=DIAGONAL, strokeDash=[4, 3], **mark)
        .encode(x=alt.XDatum(0), y=alt.YDatum(0), x2=alt.X2Datum(1), y2=alt.Y2Datum(1))
    )


def header(labels: bool = True, width: Any = None) -> alt.Header:
    """The panel titles of a faceted chart, bold, at most the panel's ``width`` wide.

    The titles are the ``_panel`` labels, already shortened to what tells the panels
    apart (:func:`~calib_frames.plot.frames.group_labels`); without a width (or with a
    width that is not a number), titles run to 240 pixels.
    """
    import altair as alt

    room = width if isinstance(width, int | float) and not isinstance(width, bool) else 240
    return alt.Header(labels=labels, labelLimit=room, labelFontSize=11, labelFontWeight="bold")


def in_panels(
    chart: Any,
    prepared: Prepared,
    data: pl.DataFrame,
    *,
    title: str | alt.Title,
    columns: int | None,
    inline: bool = True,
) -> alt.TopLevelMixin:
    """``chart`` alone, or one panel per combination of the facet keys.

    ``data`` counts the panels per row (:func:`facet_columns`) and, with ``inline``, is
    the chart's data; without, the chart carries its own.
    """
    import altair as alt

    rows = {"data": inline_data(data)} if inline else {}
    if not prepared.facet:
        return chart.properties(**rows, title=title)  # type: ignore[no-any-return]
    panels = prepared.panels
    return chart.facet(  # type: ignore[no-any-return]
        facet=alt.Facet(f"{PANEL}:N", sort=panels, title=None, header=header(width=chart["width"])),
        bounds="flush",
        spacing=FACET_SPACING,
        columns=facet_columns(len(panels), prepared.facet, data, columns),
        **rows,
    ).properties(title=title)


def sized_panels(
    chart: Any,
    prepared: Prepared,
    data: pl.DataFrame,
    size: tuple[float, float],
    title: str,
    *,
    columns: int | None,
    subtitle: str = "",
) -> alt.TopLevelMixin:
    """``chart`` at ``size`` (width, height) a panel, titled (with ``subtitle``), in panels.

    The scaffolding the families' charts end with: :func:`in_panels` on ``data``.
    """
    import altair as alt

    width, height = size
    return in_panels(
        chart.properties(width=width, height=height),
        prepared,
        data,
        title=alt.Title(title, subtitle=subtitle) if subtitle else title,
        columns=columns,
    )


PIXELS = Number(greater_than=0)
"""``width=``, ``height=``, ``cell=``: a size in pixels."""
PANELS = Integer(1) | None
"""``columns=``: panels per row (None: from the number of panels)."""


def check_size(name: str, value: float | None) -> None:
    """Refuse a size that is not a number of pixels > 0 (None: the default)."""
    (PIXELS | None).check(value, name)
