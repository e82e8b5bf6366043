"""Curves from the estimators' tables: smooth and isotonic reliability, ECE against bins, risk.

Each chart draws a table an estimator has already computed
(:func:`~calib_frames.smooth_reliability_curve`, :func:`~calib_frames.corp_reliability`,
:func:`~calib_frames.ece_by_bin_count`, :func:`~calib_frames.selective_curve`, or any table
with the same columns), one line per group; nothing is estimated here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from calib_frames.arguments import check_arguments
from calib_frames.metrics.registry import metric
from calib_frames.plot._common import (
    PANELS,
    PIXELS,
    diagonal,
    group_encoding,
    group_lines,
    inline_data,
    key_tooltips,
    metric_tooltips,
    share_parts,
    sized_panels,
    unit_scale,
)
from calib_frames.plot.frames import (
    COLOR,
    PANEL,
    Prepared,
    check_columns,
    facet_columns,
    frame,
    key_split,
    prepare,
)

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "CURVE_COLUMNS",
    "ECE_BINS_COLUMNS",
    "ISOTONIC_COLUMNS",
    "RISK_COVERAGE_COLUMNS",
    "curve_data",
    "ece_bins_chart",
    "isotonic_data",
    "isotonic_reliability_chart",
    "log_axis",
    "risk_coverage_chart",
    "smooth_reliability_chart",
]

CURVE_COLUMNS = ("x", "y")
"""Columns after the keys of a smooth reliability curve table (one row per curve point)."""
ISOTONIC_COLUMNS = ("block", "confidence_lower", "confidence_upper", "count", "recalibrated")
"""Columns after the keys of a CORP / isotonic blocks table (one row per PAV block)."""
ECE_BINS_COLUMNS = ("bins", "ece")
"""Columns after the keys of an ECE-versus-bin-count table."""
RISK_COVERAGE_COLUMNS = ("coverage", "risk")
"""Columns after the keys (and ``threshold``) of a selective (risk–coverage) curve table."""


def _curve_table(
    table: object,
    columns: Sequence[str],
    role: str,
    name: str,
    *,
    color: str | Sequence[str] | None,
    facet: str | Sequence[str] | None,
    before: Sequence[str] = (),
) -> Prepared:
    """The table checked to hold the numeric ``columns`` after its keys, and prepared.

    The keys end at the first of ``columns`` or of the optional ``before`` columns.
    """
    data = frame(table, name)
    keys = key_split(data.schema, frozenset((*before, *columns[:1])))
    check_columns(data.schema, list(columns), role=role, built_by="", numeric=list(columns))
    return prepare(data, keys, color=color, facet=facet)


def isotonic_data(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
) -> tuple[Prepared, pl.DataFrame, pl.DataFrame]:
    """The blocks of :func:`isotonic_reliability_chart` and the vertices of its steps.

    Takes the table and arguments of :func:`isotonic_reliability_chart` and raises its
    errors.

    Returns
    -------
    tuple of (Prepared, polars.DataFrame, polars.DataFrame)
        The groups; the blocks with a finite recalibrated value and lower bound (the
        table's columns as Float64 and ``_mid``, the middle of the block's range), in
        panel, colour and block order; the step curve's vertices (``_order``, ``_x``,
        ``recalibrated``): each block's left end and the last block's right end.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.curves import isotonic_data
    >>> blocks = pl.DataFrame({"block": [0, 1], "confidence_lower": [0.1, 0.6],
    ...                        "confidence_upper": [0.5, 0.9], "count": [3, 5],
    ...                        "recalibrated": [0.2, 0.8]})
    >>> _, blocks, steps = isotonic_data(blocks)
    >>> steps.select("_x", "recalibrated").rows()
    [(0.1, 0.2), (0.6, 0.8), (0.9, 0.8)]
    """
    prepared = _curve_table(
        table,
        ISOTONIC_COLUMNS,
        "isotonic blocks table",
        "isotonic_reliability_chart",
        color=color,
        facet=facet,
    )
    keys = prepared.keys
    blocks = prepared.data.with_columns(
        pl.col("confidence_lower", "confidence_upper", "recalibrated").cast(pl.Float64),
        pl.col("count").cast(pl.Float64),
        ((pl.col("confidence_lower") + pl.col("confidence_upper")) / 2)
        .cast(pl.Float64)
        .alias("_mid"),
    ).filter(pl.col("recalibrated").is_finite(), pl.col("confidence_lower").is_finite())
    blocks = blocks.select(*keys, COLOR, PANEL, *ISOTONIC_COLUMNS, "_mid").sort(
        PANEL, COLOR, "block", maintain_order=True
    )
    return prepared, blocks, _steps(blocks, keys)


def curve_data(
    table: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    *,
    x: str,
    y: str,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
    role: str = "curve table",
    name: str = "curve chart",
    before: Sequence[str] = (),
    positive: Sequence[str] = (),
) -> tuple[Prepared, pl.DataFrame]:
    """The groups of a curve table and its points, in polars (the curve charts' data step).

    The table is checked to hold the numeric ``columns`` after its keys (the keys end at
    the first of ``columns`` or of the optional ``before`` columns). The points are the
    rows with finite ``x`` and ``y`` (Float64) and ``positive`` columns over 0: the keys,
    ``_color``, ``_panel``, the ``before`` columns the table has, ``x`` and ``y``, in
    panel, colour and ``x`` order.

    Parameters
    ----------
    table
        A curve table (keys…, [``before``…,] ``columns``…).
    columns
        Its columns after the keys.
    x, y
        The columns drawn across and up.
    color, facet
        Colour and panel keys, as the charts take them.
    role, name
        How error messages call the table and the chart.
    before
        Optional columns between the keys and ``columns``.
    positive
        Columns a point needs over 0 (a logarithmic axis).

    Returns
    -------
    tuple of (Prepared, polars.DataFrame)
        The groups and the points.

    Raises
    ------
    TableError
        If a column is missing or not numeric.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.curves import curve_data
    >>> curve = pl.DataFrame({"model": ["a"] * 3, "x": [0.9, 0.1, None], "y": [0.7, 0.2, 0.5]})
    >>> prepared, points = curve_data(curve, ["x", "y"], x="x", y="y")
    >>> points.select("_color", "x", "y").rows()
    [('a', 0.1, 0.2), ('a', 0.9, 0.7)]
    """
    prepared = _curve_table(table, columns, role, name, color=color, facet=facet, before=before)
    keys = prepared.keys
    extra = [c for c in before if c in prepared.data.columns]
    points = (
        prepared.data.with_columns(pl.col(x, y).cast(pl.Float64))
        .filter(pl.col(x).is_finite(), pl.col(y).is_finite(), *(pl.col(c) > 0 for c in positive))
        .select(*keys, COLOR, PANEL, *extra, x, y)
        .sort(PANEL, COLOR, x, maintain_order=True)
    )
    return prepared, points


def log_axis(points: pl.DataFrame, column: str, *, spread: float = 20) -> bool:
    """Whether ``column``'s positive values span more than a factor of ``spread``.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.curves import log_axis
    >>> log_axis(pl.DataFrame({"bins": [5.0, 200.0]}), "bins")
    True
    """
    low = points.get_column(column).min()
    high = points.get_column(column).max()
    return isinstance(low, float) and isinstance(high, float) and low > 0 and high / low > spread


def _curve(line: Any, groups: tuple[Any, Any, Any], *, order: str, **channels: Any) -> Any:
    """A line per colour group (``groups``: :func:`group_encoding`), highlighted in the legend."""
    color, opacity, highlight = groups
    line = group_lines(line, color=color, opacity=opacity, order=order, **channels)
    return line if highlight is None else line.add_params(highlight)


@check_arguments(columns=PANELS, width=PIXELS, height=PIXELS)
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
        keys…, ``x`` (confidence), ``y`` (estimated accuracy), as
        :func:`~calib_frames.smooth_reliability_curve` returns it.
    color, facet, columns
        Colour keys, panel keys and panels per row, as in
        :func:`~calib_frames.plot.reliability_diagram`.
    width, height
        Size of one square panel in pixels (default 260 × 260).
    title
        Chart title (default "Smooth reliability curve").

    Returns
    -------
    altair.TopLevelMixin
        A ``LayerChart`` (diagonal and curves), or a ``FacetChart`` of them.

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

    prepared, points = curve_data(
        table,
        CURVE_COLUMNS,
        x="x",
        y="y",
        color=color,
        facet=facet,
        role="smooth reliability curve table",
        name="smooth_reliability_chart",
    )
    keys = prepared.keys
    unit = unit_scale()
    line = _curve(
        alt.Chart().mark_line(strokeWidth=2),
        group_encoding(prepared),
        order="x:Q",
        x=alt.X("x:Q", scale=unit, title="confidence"),
        y=alt.Y("y:Q", scale=unit, title="estimated accuracy"),
        tooltip=[
            *key_tooltips(keys),
            alt.Tooltip("x:Q", format=".3f"),
            alt.Tooltip("y:Q", format=".3f"),
        ],
    )
    heading = title if title is not None else "Smooth reliability curve"
    return sized_panels(
        alt.layer(*share_parts(diagonal(), line)),
        prepared,
        points,
        (width, height),
        heading,
        columns=columns,
    )


@check_arguments(columns=PANELS, width=PIXELS, height=PIXELS)
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
        The blocks table of :func:`~calib_frames.corp_reliability`, one row per block,
        ``block`` ordering blocks in a group.
    color, facet, columns
        Which keys colour the steps, which make panels, and how many panels a row.
    width, height
        Size of one panel in pixels; each panel is its own view.
    title
        Chart title (default "Isotonic (CORP) reliability curve").

    Returns
    -------
    altair.TopLevelMixin
        A ``LayerChart`` (one panel) or a ``ConcatChart`` of one layered panel per facet
        value (layers with their own data cannot be faceted).

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

    prepared, blocks, steps = isotonic_data(table, color=color, facet=facet)
    keys = prepared.keys
    groups = group_encoding(prepared)
    group_color, opacity, _ = groups
    unit = unit_scale()
    line = _curve(
        alt.Chart(inline_data(steps)).mark_line(interpolate="step-after", strokeWidth=2),
        groups,
        order="_order:Q",
        x=alt.X("_x:Q", scale=unit, title="confidence"),
        y=alt.Y("recalibrated:Q", scale=unit, title="recalibrated probability (CORP)"),
    )
    marks = (
        alt.Chart(inline_data(blocks))
        .mark_point(filled=True)
        .encode(
            x=alt.X("_mid:Q", scale=unit),
            y=alt.Y("recalibrated:Q", scale=unit),
            size=alt.Size("count:Q", title="rows in block", scale=alt.Scale(range=[10, 160])),
            color=group_color,
            opacity=opacity,
            tooltip=[
                *key_tooltips(keys),
                alt.Tooltip("block:Q"),
                alt.Tooltip("confidence_lower:Q", title="confidence from", format=".3f"),
                alt.Tooltip("confidence_upper:Q", title="confidence to", format=".3f"),
                alt.Tooltip("count:Q", title="rows", format=","),
                alt.Tooltip("recalibrated:Q", format=".3f"),
            ],
        )
    )
    rule = diagonal().properties(data=inline_data(blocks))
    layer = alt.layer(*share_parts(rule, line, marks)).properties(width=width, height=height)
    heading = title if title is not None else "Isotonic (CORP) reliability curve"
    if not prepared.facet:
        return layer.properties(title=heading)
    panels = prepared.panels
    pick_columns = facet_columns(len(panels), prepared.facet, blocks, columns)
    # layers with their own data cannot be faceted by Vega-Lite: one panel per group
    cells = []
    for name in panels:
        pick = alt.FieldEqualPredicate(field=PANEL, equal=name)
        cells.append(
            alt.layer(
                rule.transform_filter(pick),
                line.transform_filter(pick),
                marks.transform_filter(pick),
            ).properties(width=width, height=height, title=alt.Title(name, fontSize=11))
        )
    return alt.concat(*cells, columns=pick_columns, title=heading)


def _steps(blocks: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The step curve's vertices: each block's left end, and the last block's right end."""
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
    return pl.concat([left, last]).sort(PANEL, COLOR, "_order", maintain_order=True)


@check_arguments(columns=PANELS, width=PIXELS, height=PIXELS)
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
        keys…, ``bins`` (number of bins), ``ece``, as
        :func:`~calib_frames.ece_by_bin_count` returns it.
    color, facet, columns
        Keys told apart by colour, keys making panels, and panels per row.
    width, height
        Size of one panel in pixels (default 300 × 200).
    title
        Chart title (default "ECE against the number of bins").

    Returns
    -------
    altair.TopLevelMixin
        A ``Chart`` of one panel, or a ``FacetChart`` with one panel per facet value.

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

    prepared, points = curve_data(
        table,
        ECE_BINS_COLUMNS,
        x="bins",
        y="ece",
        color=color,
        facet=facet,
        role="ECE-versus-bins table",
        name="ece_bins_chart",
        positive=["bins"],
    )
    keys = prepared.keys
    groups = group_encoding(prepared)
    scale = alt.Scale(type="log") if log_axis(points, "bins") else alt.Scale(zero=False)
    chart = _curve(
        alt.Chart().mark_line(point=alt.OverlayMarkDef(filled=True, size=30)),
        groups,
        order="bins:Q",
        x=alt.X(
            "bins:Q", title="number of bins", scale=scale, axis=alt.Axis(format="~d", tickMinStep=1)
        ),
        y=alt.Y("ece:Q", title=metric("ece").title, scale=alt.Scale(zero=True)),
        tooltip=[
            *key_tooltips(keys),
            alt.Tooltip("bins:Q", format="~d"),
            *metric_tooltips(["ece"]),
        ],
    )
    heading = title if title is not None else "ECE against the number of bins"
    return sized_panels(chart, prepared, points, (width, height), heading, columns=columns)


@check_arguments(columns=PANELS, width=PIXELS, height=PIXELS)
def risk_coverage_chart(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    color: str | Sequence[str] | None = None,
    facet: str | Sequence[str] | None = None,
    columns: int | None = None,
    width: float = 300,
    height: float = 220,
    title: str | None = None,
) -> alt.TopLevelMixin:
    """The risk–coverage curve per group: selective risk against the share answered.

    Reads a curve table (keys…, [``threshold``,] ``coverage``, ``risk``): at coverage c
    the group answers its c most confident predictions and ``risk`` is the error rate
    among them; the lower the curve, the better the confidence ranks right answers above
    wrong ones (the area under it is AURC). One line per group, drawn in coverage order.

    Parameters
    ----------
    table
        keys…, ``coverage``, ``risk``, as :func:`~calib_frames.selective_curve` returns
        it (``points=`` keeps charts of large groups small).
    color, facet, columns, width, height, title
        As for :func:`ece_bins_chart`; here a panel is 300 × 220 pixels and the title
        "Risk–coverage curves" by default.

    Returns
    -------
    altair.TopLevelMixin
        As :func:`ece_bins_chart` returns.

    Raises
    ------
    TableError
        If ``coverage`` or ``risk`` is missing or not numeric.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot import risk_coverage_chart
    >>> curve = pl.DataFrame(
    ...     {"model": ["a"] * 3, "coverage": [0.2, 0.6, 1.0], "risk": [0.0, 0.1, 0.3]}
    ... )
    >>> spec = risk_coverage_chart(curve).to_dict()
    >>> spec["mark"]["type"], spec["encoding"]["x"]["field"], spec["encoding"]["y"]["field"]
    ('line', 'coverage', 'risk')
    """
    import altair as alt

    prepared, points = curve_data(
        table,
        RISK_COVERAGE_COLUMNS,
        x="coverage",
        y="risk",
        color=color,
        facet=facet,
        role="selective curve table",
        name="risk_coverage_chart",
        before=("threshold",),
    )
    keys = prepared.keys
    extra = ["threshold"] if "threshold" in points.columns else []
    tooltips = [
        *key_tooltips(keys),
        *(alt.Tooltip(f"{name}:Q", format=".3f") for name in extra),
        alt.Tooltip("coverage:Q", format=".3f"),
        alt.Tooltip("risk:Q", format=".3f"),
    ]
    chart = _curve(
        alt.Chart().mark_line(strokeWidth=2),
        group_encoding(prepared),
        order="coverage:Q",
        x=alt.X(
            "coverage:Q",
            scale=unit_scale(),
            axis=alt.Axis(tickCount=5),
            title="coverage (share answered)",
        ),
        y=alt.Y("risk:Q", scale=alt.Scale(zero=True), title="risk (error rate of answered)"),
        tooltip=tooltips,
    )
    heading = title if title is not None else "Risk–coverage curves"
    return sized_panels(chart, prepared, points, (width, height), heading, columns=columns)
