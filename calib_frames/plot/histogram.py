"""Predictions per confidence bin: one histogram per group, or a line per group in a panel.

:func:`confidence_histogram` reads a bin-statistics or reliability table (the ``count`` of
each bin is all it draws); :func:`histogram_data` is its data step, in polars alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from calib_frames.arguments import FLAG, check_arguments
from calib_frames.plot._common import (
    COUNT_LABEL,
    PANELS,
    PIXELS,
    bin_tooltips,
    count_marks,
    group_encoding,
    in_panels,
    inline_data,
)
from calib_frames.plot.frames import Prepared, bin_counts, bin_rows, frame, prepare, spec_keys
from calib_frames.schema import RELIABILITY

if TYPE_CHECKING:
    import altair as alt

__all__ = ["confidence_histogram", "histogram_data"]


def histogram_data(
    stats: pl.DataFrame | pl.LazyFrame,
    *,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
) -> tuple[Prepared, pl.DataFrame]:
    """The groups of :func:`confidence_histogram` and their bins (no altair).

    By default every key makes panels; keys given to ``color`` share a panel.

    Takes the table and arguments of :func:`confidence_histogram` and raises its errors.

    Returns
    -------
    tuple of (Prepared, polars.DataFrame)
        The groups (colours and panels) and every bin with bounds
        (:func:`~calib_frames.plot.frames.bin_counts`).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot.histogram import histogram_data
    >>> preds = pl.DataFrame({"model": ["a", "a", "b"], "confidence": [0.1, 0.9, 0.8],
    ...                       "correct": [0, 1, 1]})
    >>> prepared, bins = histogram_data(cf.bin_statistics(preds, by="model", bins=2))
    >>> prepared.panels, bins.select("_panel", "count", "_share").rows()
    (['a', 'b'], [('a', 1, 0.5), ('a', 1, 0.5), ('b', 0, 0.0), ('b', 1, 1.0)])
    """
    data = frame(stats, "confidence_histogram")
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
    return prepared, bin_counts(bin_rows(prepared), keys)


@check_arguments(columns=PANELS, share=FLAG, width=PIXELS, height=PIXELS)
def confidence_histogram(
    stats: pl.DataFrame | pl.LazyFrame,
    *,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
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
    stats
        A bin-statistics or reliability table (the ``count`` per bin is all it reads).
    color
        Key(s) drawn as coloured lines in one panel (default: none).
    facet
        Key(s) making one panel each (default: every key not in ``color``).
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
        If ``stats`` is not a bin table.
    ArgumentError
        If ``facet=``/``color=`` name a column that is not a key.

    See Also
    --------
    reliability_diagram : the same counts under the diagram of each panel.

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

    prepared, hist = histogram_data(stats, color=color, facet=facet)
    keys = prepared.keys
    y = alt.Y(
        "_share:Q" if share else "count:Q",
        title="share of predictions" if share else "predictions",
        axis=alt.Axis(format=".0%", tickCount=4)
        if share
        else alt.Axis(tickCount=4, tickMinStep=1, labelExpr=COUNT_LABEL),
    )
    tooltips = [
        *bin_tooltips(keys),
        alt.Tooltip("_share:Q", title="share of group", format=".1%"),
    ]
    if prepared.color:
        colors, opacity, highlight = group_encoding(prepared, "highlight_hist")
        chart = count_marks(y, tooltips, color=colors, opacity=opacity).add_params(highlight)
    else:
        chart = count_marks(y, tooltips)
    chart = chart.properties(data=inline_data(hist), width=width, height=height)
    return in_panels(
        chart,
        prepared,
        hist,
        title=title if title is not None else "Predictions per confidence bin",
        columns=columns,
        inline=False,
    )
