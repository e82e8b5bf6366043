"""Perplexity per group: one dot per row of a perplexity or comparison table, with intervals.

:func:`perplexity_chart` draws what the table has of perplexity (per token, else per word
or per byte) and of bits per byte (else bits per token), each in its own panel, with the
bootstrap interval as a bar where the table has ``<measure>_ci_low`` / ``_ci_high``. The
rolling tasks of lm-evaluation-harness give word and byte perplexity and bits per byte
only; ``cf.perplexity`` gives all of them from token counts. Every value drawn is read from
the table.
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
    PIXELS,
    SINGLE,
    emphasis,
    inline_data,
    key_tooltips,
    metric_tooltips,
    palette,
    share_parts,
)
from calib_frames.plot.frames import (
    COLOR,
    PANEL,
    Prepared,
    interval_columns,
    label_keys,
    metric_table,
    prepare,
)

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "PERPLEXITY_MEASURES",
    "PerplexityData",
    "perplexity_chart",
    "perplexity_data",
    "perplexity_measures",
]

PERPLEXITY_MEASURES: tuple[tuple[str, ...], ...] = (
    ("perplexity", "word_perplexity", "byte_perplexity"),
    ("bits_per_byte", "bits_per_token"),
)
"""The chart's panels: each draws the first of its columns that has a finite value."""


def perplexity_measures(table: pl.DataFrame) -> list[str]:
    """The columns :func:`perplexity_chart` draws from ``table`` (empty: none has values).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.perplexity import perplexity_measures
    >>> perplexity_measures(pl.DataFrame({"task": ["wiki"], "word_perplexity": [40.0],
    ...                                   "bits_per_byte": [1.1], "perplexity": [None]}))
    ['word_perplexity', 'bits_per_byte']
    """
    measures = []
    for candidates in PERPLEXITY_MEASURES:
        for candidate in candidates:
            if (
                candidate in table.columns
                and table.schema[candidate].is_numeric()
                and table.get_column(candidate).cast(pl.Float64).is_finite().any()
            ):
                measures.append(candidate)
                break
    return measures


@dataclass(frozen=True)
class PerplexityData:
    """What :func:`perplexity_chart` draws, as :func:`perplexity_data` prepares it."""

    prepared: Prepared
    """The groups: a row of the axis per value of the label key, colours for the others."""
    dots: pl.DataFrame
    """One row per group with a finite measure: its keys, ``_color``, ``_panel`` (its
    row's label), the measures and their bounds (Float64) and the :attr:`extra` counts."""
    measures: list[str]
    """The columns drawn, one panel each (:func:`perplexity_measures`)."""
    intervals: dict[str, tuple[str, str]]
    """The bounds of each measure's interval that the table has."""
    extra: list[str]
    """The counts of the tooltips (tokens, bytes, words) the table has."""
    labels: list[str]
    """The rows of the axis, best first (by their best value of the first measure)."""
    colors: list[str]
    """The colour groups that have a dot, in legend order."""


def perplexity_data(
    metrics: pl.DataFrame | pl.LazyFrame,
    *,
    label: str | None = None,
    color: str | Sequence[str] | None = None,
) -> PerplexityData:
    """The dots of :func:`perplexity_chart`, its measures and its rows in order (no altair).

    Takes the table and arguments of :func:`perplexity_chart` and raises its errors.

    Returns
    -------
    PerplexityData
        The dots and what the chart needs to place them.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.perplexity import perplexity_data
    >>> table = pl.DataFrame({"model": ["a", "b", "c"], "perplexity": [9.0, 4.0, None],
    ...                       "bits_per_byte": [1.2, 0.9, None]})
    >>> data = perplexity_data(table)  # c has no value: no dot
    >>> data.measures, data.labels
    (['perplexity', 'bits_per_byte'], ['b', 'a'])
    """
    columns = [c for group in PERPLEXITY_MEASURES for c in group]
    data, keys = metric_table(
        metrics, "perplexity_chart", [], role="perplexity table", built_by="perplexity"
    )
    if not any(c in data.columns for c in columns):
        raise TableError(
            "perplexity table: no perplexity column (one of "
            f"{', '.join(columns)}); build it with calib_frames.perplexity"
        )
    measures = perplexity_measures(data)
    if not measures:
        raise TableError("perplexity table: no row has a finite perplexity or bits per byte")
    on_axis = label_keys(label, keys)
    prepared = prepare(
        data,
        keys,
        color=color if color is not None else [k for k in keys if k not in on_axis],
        facet=on_axis,
    )
    intervals = {
        m: pair
        for m in measures
        if (pair := interval_columns(data.schema, m, role="perplexity table")) is not None
    }
    bounds = [bound for pair in intervals.values() for bound in pair]
    extra: list[str] = [c for c in ("tokens", "bytes", "words") if c in data.columns]
    dots = (
        prepared.data.with_columns(pl.col(*measures, *bounds).cast(pl.Float64))
        .filter(pl.any_horizontal(pl.col(*measures).is_finite()))
        .select(*keys, COLOR, PANEL, *measures, *bounds, *extra)
    )
    # best first: the groups on the axis by their best value of the first measure
    first = metric(measures[0])
    best = pl.col(first.column).max() if first.descending else pl.col(first.column).min()
    labels = (
        dots.group_by(PANEL, maintain_order=True)
        .agg(best)
        .sort(first.column, descending=first.descending, nulls_last=True, maintain_order=True)
        .get_column(PANEL)
        .to_list()
    )
    present = set(dots.get_column(COLOR))
    return PerplexityData(
        prepared=prepared,
        dots=dots,
        measures=measures,
        intervals=intervals,
        extra=extra,
        labels=labels,
        colors=[c for c in prepared.colors if c in present],
    )


@check_arguments(width=PIXELS)
def perplexity_chart(
    metrics: pl.DataFrame | pl.LazyFrame,
    *,
    label: str | None = None,
    color: str | Sequence[str] | None = None,
    width: float = 240,
    title: str | None = None,
) -> alt.TopLevelMixin:
    r"""Perplexity and bits per byte side by side, one dot per group, intervals as bars.

    With :math:`L = \sum \mathrm{nll}` (nats) over a group's documents, the measures are,
    as lm-evaluation-harness defines them: perplexity :math:`\exp(L / \text{tokens})`,
    word perplexity :math:`\exp(L / \text{words})`, byte perplexity
    :math:`\exp(L / \text{bytes})` and bits per byte :math:`L / (\text{bytes} \ln 2)`.
    The left panel draws the first of perplexity, word perplexity and byte perplexity
    that the table has values of; the right one bits per byte, else bits per token.
    Lower is better in both. Groups are on the vertical axis, lowest first; the other
    keys are colours (e.g. model on the axis, one colour per task). A bar through a dot spans
    ``<measure>_ci_low`` to ``<measure>_ci_high`` where the table has them (the bootstrap
    intervals of :func:`~calib_frames.estimators.perplexity_intervals`). Rows with no
    value (a comparison table's calibration-only rows) are left out.

    Parameters
    ----------
    metrics
        A perplexity table (:func:`~calib_frames.perplexity`), a comparison table, or
        lm-eval's aggregates (:func:`~calib_frames.comparison.lm_eval_comparison`).
    label
        Key on the vertical axis (default: the first key).
    color
        Key(s) told apart by colour (default: the other keys).
    width
        Width of each of the two panels in pixels.
    title
        Chart title (default "Perplexity").

    Returns
    -------
    altair.TopLevelMixin
        An ``HConcatChart`` (or a ``LayerChart`` when there is one measure).

    Raises
    ------
    TableError
        If the table has no perplexity or bits-per-byte column, or no finite value.

    See Also
    --------
    calib_frames.perplexity : the table, from NLL rows.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot import perplexity_chart
    >>> toks = pl.DataFrame({"model": ["a", "b"], "nll": [8.0, 6.0], "tokens": [4, 4],
    ...                      "bytes": [16, 16]})
    >>> table = cf.perplexity(toks, by="model", tokens="tokens", bytes="bytes")
    >>> spec = perplexity_chart(table).to_dict()
    >>> [panel["layer"][0]["encoding"]["x"]["field"] for panel in spec["hconcat"]]
    ['perplexity', 'bits_per_byte']
    """
    import altair as alt

    data = perplexity_data(metrics, label=label, color=color)
    prepared, measures, labels = data.prepared, data.measures, data.labels
    bounds = [bound for pair in data.intervals.values() for bound in pair]
    tooltips = [*key_tooltips(prepared.keys), *metric_tooltips([*measures, *bounds, *data.extra])]
    if prepared.color:
        highlight = alt.selection_point(name="highlight_ppl", fields=[COLOR], bind="legend")
        dot_color: Any = alt.Color(
            f"{COLOR}:N",
            title=" × ".join(prepared.color),
            scale=alt.Scale(domain=data.colors, scheme=palette(len(data.colors))),
            legend=alt.Legend(labelLimit=200),
        )
        opacity: Any = emphasis(highlight, 0.15)
    else:
        highlight = None
        dot_color = alt.ColorValue(SINGLE)
        opacity = alt.OpacityValue(1.0)
    # several colours on one row get a line each (an offset), so no bar hides another
    shades = len(data.colors) if prepared.color else 1
    offset: dict[str, Any] = {"yOffset": alt.YOffset(f"{COLOR}:N")} if shades > 1 else {}
    height = max(60, len(labels) * max(20, 9 * shades))
    base = alt.Chart()
    panels = []
    for position, measure in enumerate(measures):
        y = alt.Y(
            f"{PANEL}:N",
            title=None,
            sort=labels,
            axis=alt.Axis(labelLimit=180, grid=True)
            if position == 0
            else alt.Axis(labels=False, ticks=False, grid=True),
        )
        x = alt.X(
            f"{measure}:Q",
            title=metric(measure).title,
            scale=alt.Scale(zero=False, nice=True),
            axis=alt.Axis(labelOverlap="greedy", labelSeparation=6, tickCount=6),
        )
        dot = base.mark_point(filled=True, size=60).encode(
            x=x, y=y, color=dot_color, opacity=opacity, tooltip=tooltips, **offset
        )
        if highlight is not None and position == 0:
            dot = dot.add_params(highlight)
        layers = [dot]
        if measure in data.intervals:
            low, high = data.intervals[measure]
            layers.insert(
                0,
                base.mark_rule(strokeWidth=2).encode(
                    x=alt.X(f"{low}:Q", title=metric(measure).title),
                    x2=alt.X2(f"{high}:Q"),
                    y=y,
                    **offset,
                    color=dot_color,
                    opacity=opacity,
                    tooltip=tooltips,
                ),
            )
        panels.append(
            alt.layer(*share_parts(*layers), data=inline_data(data.dots))
            .transform_filter(f"isFinite(datum.{measure})")
            .properties(width=width, height=height)
        )
    heading = title if title is not None else "Perplexity"
    if len(panels) == 1:
        return panels[0].properties(title=heading)
    return alt.hconcat(*panels, spacing=12, title=alt.Title(heading))
