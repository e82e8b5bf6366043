"""The model × task grid: one cell per row of a comparison table, coloured by miscalibration.

:func:`calibration_heatmap` draws the calibration gap (or ECE) of every group at once, with
the noise floor's verdict on each cell. Every value drawn is read from the table. Its data
step, :func:`heatmap_data`, is polars alone: which groups have a cell, the rows and columns
in order, the colour scale's domain and the cell size; the chart only encodes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from calib_frames.arguments import Integer, Options, check_arguments
from calib_frames.exceptions import TableError
from calib_frames.metrics.registry import metric
from calib_frames.plot._common import (
    PIXELS,
    inline_data,
    key_tooltips,
    metric_tooltips,
    pick_keys,
    picked_group,
    share_parts,
)
from calib_frames.plot.frames import (
    BEYOND,
    COLOR,
    NULL_KEY,
    PANEL,
    TOO_FEW,
    frame,
    label_keys,
    metric_table,
    noise_status,
    prepare,
)

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "HEATMAP_HEIGHT",
    "HEATMAP_WIDTH",
    "HeatmapData",
    "calibration_heatmap",
    "heatmap_data",
    "heatmap_rows",
]

HEATMAP_WIDTH, HEATMAP_HEIGHT = 900, 900
"""Pixels the cells of :func:`calibration_heatmap` take across and down at most (labels and
legend aside), unless a cell would be under 10 pixels."""
ROW_LIMIT, COLUMN_LIMIT = 30, 30
"""Most characters of a row label and of a column label (see
:func:`~calib_frames.plot.frames.group_labels`)."""
CHAR_WIDTH = 6.5
"""Pixels of an axis label's character, about (10–11 pixel text)."""
NO_CELL, NO_WEIGHT = "no predictions", "no weight"
"""The cell of a row and column without predictions, and of a group whose weights sum to 0."""
MIXED_RANGE = ["#c2a5cf", "#40004b"]
"""The mixed cells' colours, from ECE 0 to the top of their scale: purple, never as pale as
a calibrated cell nor as blue as an underconfident one."""
MISSING_FILL, FEW_FILL = "#c8c8c8", "#ececec"
"""Grey for cells without a number; light grey around the small square of a cell with too
few predictions (never white, which is a perfect cell)."""


@dataclass(frozen=True)
class HeatmapData:
    """What :func:`calibration_heatmap` draws, as :func:`heatmap_data` prepares it."""

    cells: pl.DataFrame
    """One row per row × column of the grid: its keys, ``_color`` (its row's label),
    ``_panel`` (its column's label), the tooltips' metric columns (Float64), ``_status``
    (:func:`~calib_frames.plot.frames.noise_status`, or ``"no predictions"`` for a row and
    column the table has no predictions of, ``"no weight"`` for a group whose weights sum
    to 0), ``_mixed`` (its bins over- and underconfident: ``ece_direction`` is mixed),
    ``_verdict``, ``_said`` (its whole names and verdict: the cell's description for a
    screen reader, the axes showing short labels) and ``_draw`` (how it is drawn:
    ``"colour"``, ``"mixed"``, ``"few"`` or ``"none"``); with rows left out, one more row
    (``_draw`` ``"gap"``) holds the :attr:`gap` label."""
    keys: list[str]
    row_keys: list[str]
    """The keys that make the rows (the label key); the others make the columns."""
    column_keys: list[str]
    rows: list[str]
    """Row labels, top to bottom (with :attr:`gap` where rows are left out)."""
    columns: list[str]
    """Column labels, left to right."""
    gap: str | None
    """The label of the row that stands for the rows left out (None: every row drawn)."""
    value: str
    """The column the colour shows."""
    shown: list[str]
    """The metric columns of the tooltips."""
    domain: list[float]
    """The colour scale's domain: [0, top] for ECE, [−top, top] for the gap."""
    mixed_domain: list[float]
    """The domain of the mixed cells' scale: [0, the 98th percentile of their ECE]."""
    cell: float
    """The side of a cell in pixels."""
    angle: int
    """The column labels' angle: 0 when each fits its cell, else −45, or −90 for cells
    under 16 pixels (so that no two labels overlap)."""
    picked: list[str]
    """The keys of a picked group to outline (none: no outline)."""
    noise: bool
    """Whether the table has the noise floor's columns (dots)."""
    mixed: bool
    """Whether the table says which cells are mixed (``ece_direction``)."""
    shared: str = ""
    """What the folded row labels leave out (the axis title's second line)."""


def heatmap_rows(
    table: pl.DataFrame,
    keys: list[str],
    *,
    order: pl.DataFrame | pl.LazyFrame | None = None,
    rows: int | None = None,
) -> tuple[pl.DataFrame, int]:
    """The rows a heatmap draws, top to bottom, and how many it leaves out.

    The distinct values of ``keys`` in ``table`` (the groups with predictions), in the
    order of ``order`` (a table holding ``keys``, such as a leaderboard: its rows' order)
    and after those, or without ``order``, by the mean ECE of their cells, lowest first
    (rows without one last). With ``rows``, at most that many: the first ``rows // 2``
    and the last ``rows - rows // 2``.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.heatmap import heatmap_rows
    >>> table = pl.DataFrame({"model": ["a", "a", "b", "c", "d"],
    ...                       "ece": [0.1, 0.3, 0.05, 0.4, 0.2]})
    >>> drawn, left_out = heatmap_rows(table, ["model"], rows=2)
    >>> drawn.get_column("model").to_list(), left_out  # by mean ECE: b, a, d, c
    (['b', 'c'], 2)
    >>> board = pl.DataFrame({"model": ["d", "c"], "rank": [1, 2]})
    >>> heatmap_rows(table, ["model"], order=board)[0].get_column("model").to_list()
    ['d', 'c', 'b', 'a']
    """
    score = pl.col("ece") if "ece" in table.columns else pl.lit(None, dtype=pl.Float64)
    ranked = (
        table.group_by(keys, maintain_order=True)
        .agg(score.filter(score.is_finite()).mean().alias("_mean"))
        .sort("_mean", *keys, nulls_last=True, maintain_order=True)
    )
    if order is not None:
        given = frame(order, "heatmap order").select(keys).unique(maintain_order=True)
        given = given.with_row_index("_given").join(
            ranked.select(keys), on=keys, how="semi", nulls_equal=True
        )
        ranked = ranked.join(given, on=keys, how="left", nulls_equal=True).sort(
            "_given", nulls_last=True, maintain_order=True
        )
    ordered = ranked.select(keys)
    if rows is None or ordered.height <= rows:
        return ordered, 0
    first = rows // 2
    return pl.concat([ordered.head(first), ordered.tail(rows - first)]), ordered.height - rows


_HEATMAP = {
    "value": Options("overconfidence", "ece"),
    "cell": PIXELS | None,
    "rows": Integer(2) | None,
}


@check_arguments(**_HEATMAP)
def heatmap_data(
    comparison: pl.DataFrame | pl.LazyFrame,
    *,
    value: str = "overconfidence",
    label: str | None = None,
    cell: float | None = None,
    pick: str | Sequence[str] | None = None,
    order: pl.DataFrame | pl.LazyFrame | None = None,
    rows: int | None = None,
) -> HeatmapData:
    """The cells of :func:`calibration_heatmap` and its scales, in polars (no altair).

    Groups without predictions (``count`` 0 or null) have no number: a column where no
    row has one (a perplexity-only task) is left out, else the cell reads "no
    predictions", as does every row and column the table has no group of. Rows follow
    :func:`heatmap_rows` (``order``, ``rows``); columns the other keys' values (the order
    of :func:`~calib_frames.plot.frames.prepare`). The colour scale ends at the 98th
    percentile of ``|value|`` over the cells with enough predictions (over every cell
    when none has), 1 when that is 0 or missing. Without ``cell``, a cell's side fits
    the columns in :data:`HEATMAP_WIDTH` and the rows in :data:`HEATMAP_HEIGHT` pixels,
    between 10 and 28.

    Takes the table and arguments of :func:`calibration_heatmap` and raises its errors.

    Returns
    -------
    HeatmapData
        The cells, their order, the domain and the cell size.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.heatmap import heatmap_data
    >>> table = pl.DataFrame({"model": ["a", "a", "b", "b"], "task": ["x", "y", "x", "y"],
    ...                       "count": [50, 0, 40, 30], "ece": [0.1, 0.0, 0.2, 0.05],
    ...                       "overconfidence": [0.1, 0.0, -0.2, 0.05]})
    >>> data = heatmap_data(table)
    >>> data.rows, data.columns  # by mean ECE: a (0.1) over b (0.125)
    (['a', 'b'], ['x', 'y'])
    >>> data.cells.select("model", "task", "_status").rows()  # a has nothing on task y
    [('a', 'x', None), ('a', 'y', 'no predictions'), ('b', 'x', None), ('b', 'y', None)]
    >>> [round(bound, 3) for bound in data.domain], data.cell, data.angle
    ([-0.2, 0.2], 28.0, 0)
    """
    data, keys = metric_table(
        comparison,
        "calibration_heatmap",
        [value],
        role="comparison table",
        built_by="compare",
    )
    if not keys:
        raise TableError("calibration_heatmap: the table has no group key (use by= with a key)")
    picked = pick_keys(pick, keys)
    row_keys = label_keys(label, keys)
    column_keys = [k for k in keys if k not in row_keys]
    predicted = pl.col("count").fill_null(0) > 0 if "count" in data.columns else pl.lit(value=True)
    with_predictions = data.filter(predicted)
    if with_predictions.is_empty():
        raise TableError("calibration_heatmap: no group of the table has predictions")
    # the rows drawn (in order) and the columns that have predictions
    drawn, left_out = heatmap_rows(with_predictions, row_keys, order=order, rows=rows)
    names = data.columns
    shown: list[str] = [
        c
        for c in ("ece", "ece_ci_low", "ece_ci_high", "overconfidence", "count")
        if c in names and data.schema[c].is_numeric()
    ]
    mixed = "ece_direction" in names
    present = (
        data.filter(predicted)
        .join(drawn, on=row_keys, how="semi", nulls_equal=True)
        .select(
            *keys,
            *[pl.col(c).cast(pl.Float64) for c in shown],
            _cell_status(names, value).alias("_status"),
            (
                pl.col("ece_direction").cast(pl.String).str.starts_with("mixed").fill_null(False)
                if mixed
                else pl.lit(value=False)
            ).alias("_mixed"),
            (pl.col("verdict") if "verdict" in names else pl.lit(None, dtype=pl.String)).alias(
                "_verdict"
            ),
        )
    )
    grid = (
        drawn.join(with_predictions.select(column_keys).unique(maintain_order=True), how="cross")
        if column_keys
        else drawn
    )
    absent = grid.join(present, on=keys, how="anti", nulls_equal=True).with_columns(
        pl.lit(NO_CELL).alias("_status"), pl.lit(NO_CELL).alias("_verdict")
    )
    cells = pl.concat([present, absent], how="diagonal_relaxed")
    # rows in the order drawn: a key that sorts by position, then the columns' order
    position = drawn.with_row_index("_row")
    cells = cells.join(position, on=row_keys, how="left", nulls_equal=True)
    prepared = prepare(
        cells.sort("_row", maintain_order=True).drop("_row"),
        keys,
        color=row_keys,
        facet=column_keys,
        color_limit=ROW_LIMIT,
        panel_limit=COLUMN_LIMIT,
    )
    ordered = prepared.data.join(position, on=row_keys, how="left", nulls_equal=True)
    row_labels = ordered.sort("_row").get_column(COLOR).unique(maintain_order=True).to_list()
    columns = prepared.panels
    draw = (
        pl.when(pl.col("_status").is_in([NO_CELL, NO_WEIGHT]))
        .then(pl.lit("none"))
        .when(pl.col("_status") == TOO_FEW)
        .then(pl.lit("few"))
        .when(pl.col("_mixed"))
        .then(pl.lit("mixed"))
        .otherwise(pl.lit("colour"))
    )
    # what a screen reader says of a cell: the whole names (the axes show short ones)
    said = pl.concat_str(
        [pl.format(f"{key}: {{}}", pl.col(key).cast(pl.String).fill_null(NULL_KEY)) for key in keys]
        + [pl.coalesce("_verdict", "_status", pl.lit(""))],
        separator="; ",
    )
    cells = ordered.sort("_row", maintain_order=True).select(
        *keys,
        COLOR,
        PANEL,
        *shown,
        "_status",
        "_mixed",
        "_verdict",
        draw.alias("_draw"),
        said.alias("_said"),
    )
    gap = None
    if left_out:
        gap = f"⋯ {left_out:,} left out ⋯"
        half = rows // 2 if rows is not None else 0
        row_labels = [*row_labels[:half], gap, *row_labels[half:]]
        filler = pl.DataFrame({COLOR: [gap], PANEL: [columns[0]], "_draw": ["gap"]})
        cells = pl.concat([cells, filler], how="diagonal_relaxed")
    if cell is None:
        fit = min(HEATMAP_WIDTH / max(len(columns), 1), HEATMAP_HEIGHT / max(len(row_labels), 1))
        cell = min(28.0, max(10.0, fit))
    widest = max((len(c) for c in columns), default=0) * CHAR_WIDTH
    angle = 0 if widest <= cell - 2 else (-45 if cell >= 16 else -90)
    # the scale spans the cells it colours that have enough predictions (a 5-prediction
    # cell's gap is noise), or every one when none has; the mixed cells' scale theirs
    kinds = cells.get_column("_draw")
    basis = cells.filter(kinds == "colour") if (kinds == "colour").any() else cells
    top = _top(basis.filter(pl.col("_draw").is_in(["colour", "few"])).get_column(value))
    mixed_cells = cells.filter(pl.col("_draw") == "mixed")
    return HeatmapData(
        cells=cells,
        keys=keys,
        row_keys=row_keys,
        column_keys=column_keys,
        rows=row_labels,
        columns=columns,
        gap=gap,
        value=value,
        shown=shown,
        domain=[0, top] if value == "ece" else [-top, top],
        mixed_domain=[0, _top(mixed_cells.get_column("ece")) if "ece" in shown else 1.0],
        cell=cell,
        angle=angle,
        picked=picked,
        noise="ece_beyond_noise" in names,
        mixed=mixed,
        shared=prepared.color_shared,
    )


def _top(values: pl.Series) -> float:
    """The 98th percentile of ``|values|``, or 1 when that is 0 or missing."""
    top = values.cast(pl.Float64).abs().quantile(0.98)
    return float(top) if top is not None and top > 0 else 1.0


def _cell_status(names: Sequence[str], value: str) -> pl.Expr:
    """A cell's status: "no weight" (weights summing to 0: no number), else the noise floor's."""
    no_weight = pl.col(value).is_null()
    if "verdict" in names:
        no_weight = no_weight | (pl.col("verdict") == NO_WEIGHT)
    return pl.when(no_weight).then(pl.lit(NO_WEIGHT)).otherwise(noise_status(names))


@check_arguments(**_HEATMAP)
def calibration_heatmap(
    comparison: pl.DataFrame | pl.LazyFrame,
    *,
    value: str = "overconfidence",
    label: str | None = None,
    cell: float | None = None,
    title: str | None = None,
    pick: str | Sequence[str] | None = None,
    order: pl.DataFrame | pl.LazyFrame | None = None,
    rows: int | None = None,
) -> alt.LayerChart:
    """A grid of groups, one row per model and one column per task, coloured by miscalibration.

    Each cell is one row of a comparison (or metrics) table. Its colour is ``value``: by
    default the signed calibration gap ``overconfidence`` = mean confidence − accuracy
    (red: overconfident, more confident than right; blue: underconfident; white: 0, on a
    scale symmetric about 0), or ``ece`` (white at 0 to red). A cell whose bins are
    over- and underconfident (``ece_direction`` "mixed") is purple by its ECE instead, on
    a scale of its own: its mean gap can be near 0 and would read as calibrated. With the
    noise-floor columns (``ece_beyond_noise``, ``verdict``) a dark dot marks each cell
    whose ECE is beyond the noise of a calibrated model (after the table's correction),
    and a cell with too few predictions (or one populated bin) is light grey with its
    colour in a small square. A row and column without predictions, and a group whose
    weights sum to 0 (∅), are grey: never white, which is a perfect cell. The colour
    scale ends at the 98th percentile of the value over the cells with enough
    predictions (over every cell when none has), so that a few noisy cells do not wash
    the rest out. Rows run best first (:func:`heatmap_rows`: ``order``'s, else by mean
    ECE); with ``rows``, the first and the last half, a grey row between them saying how
    many are left out. Labels keep the part that tells the names apart
    (:func:`~calib_frames.plot.frames.group_labels`: 30 characters a row or a column);
    column labels turn when they do not fit their cells, so that none overlap; tooltips
    give the whole names, ECE with its interval, the gap, the verdict and the number of
    predictions.

    Parameters
    ----------
    comparison
        A comparison table (:func:`~calib_frames.compare`) or metrics table.
    value
        The column the colour shows: ``"overconfidence"`` (default, diverging about 0)
        or ``"ece"`` (from 0).
    label
        The key of the rows (default: the first key); the other keys together make the
        columns (one column, "all", when there is no other key).
    cell
        Side of a cell in pixels (default: what fits the columns in 900 pixels across and
        the rows in 900 down, between 10 and 28).
    title
        Chart title (default "Calibration gap by group" or "ECE by group").
    pick
        Keys of a group to outline (default none): the chart then holds one parameter
        per key, ``pick_0``, ``pick_1`` … in this order, null at first (nothing
        outlined), and outlines the cell whose keys equal them. A page sets them: the
        report's script sets them to the group picked in its reliability diagram of one
        group (:func:`~calib_frames.plot.reliability_diagram` with the same ``pick=``).
    order
        A table holding the row key (a leaderboard): the rows in its order.
    rows
        Most rows drawn (default: all).

    Returns
    -------
    altair.LayerChart
        The cells (coloured, mixed, too few, without a number), the dots (then, with
        rows left out, the gap row; with ``pick``, the outline).

    Raises
    ------
    TableError
        If ``value`` is missing or not numeric, or the table has no key.
    ArgumentError
        If ``value`` is neither ``"overconfidence"`` nor ``"ece"``, ``label`` is not a
        key, ``cell`` is not a positive number or ``rows`` not an integer of at least 2.

    See Also
    --------
    metric_scatter : each group placed by two metrics.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot import calibration_heatmap
    >>> preds = pl.read_parquet("data/synthetic_predictions.parquet")
    >>> table = cf.comparison_from_bin_statistics(cf.bin_statistics(preds, by=["model", "task"]))
    >>> spec = calibration_heatmap(table).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]  # the cells, the noise dots
    ['rect', 'point']
    >>> rows = next(iter(spec["datasets"].values()))
    >>> len(rows), sorted({row["_status"] for row in rows})
    (12, ['beyond noise', 'within noise'])
    """
    import altair as alt

    data = heatmap_data(
        comparison, value=value, label=label, cell=cell, pick=pick, order=order, rows=rows
    )
    value, cell = data.value, data.cell
    if value == "ece":
        scale = alt.Scale(scheme="reds", domain=data.domain, clamp=True)
    else:
        scale = alt.Scale(
            scheme="redblue", reverse=True, domain=data.domain, domainMid=0, clamp=True
        )
    tooltips = [
        *key_tooltips(data.keys),
        *metric_tooltips(data.shown),
        alt.Tooltip("_verdict:N", title=metric("verdict").title),
    ]
    turned = data.angle != 0
    x = alt.X(
        f"{PANEL}:N",
        sort=data.columns,
        title=" × ".join(data.column_keys) or None,
        axis=alt.Axis(
            orient="top",
            labelAngle=data.angle,
            labelAlign="left" if turned else "center",
            labelBaseline="middle" if turned else "bottom",
            labelLimit=COLUMN_LIMIT * CHAR_WIDTH + 8,
            labelOverlap=False,
        ),
    )
    rows_title = " × ".join(data.row_keys)
    y = alt.Y(
        f"{COLOR}:N",
        sort=data.rows,
        title=[rows_title, data.shared] if data.shared else rows_title,
        axis=alt.Axis(labelLimit=ROW_LIMIT * CHAR_WIDTH + 8, labelOverlap=False),
    )

    said = alt.Description("_said:N")

    def drawn(kind: str) -> alt.Chart:
        return alt.Chart().transform_filter(alt.FieldEqualPredicate(field="_draw", equal=kind))

    colour = alt.Color(field=value, type="quantitative", title=metric(value).title, scale=scale)
    quiet = alt.Color(field=value, type="quantitative", scale=scale, legend=None)
    cells = drawn("colour").mark_rect(stroke="#ffffff", strokeWidth=0.5)
    mixed = drawn("mixed").mark_rect(stroke="#ffffff", strokeWidth=0.5)
    few = drawn("few").mark_rect(fill=FEW_FILL, stroke="#ffffff", strokeWidth=0.5)
    inner = drawn("few").mark_square(size=(cell / 2) ** 2, opacity=1)
    none = drawn("none").mark_rect(fill=MISSING_FILL, stroke="#ffffff", strokeWidth=0.5)
    empty = (
        alt.Chart()
        .transform_filter(alt.FieldEqualPredicate(field="_status", equal=NO_WEIGHT))
        .mark_text(text="∅", color="#555555", fontSize=max(8.0, cell * 0.6))
    )
    kinds = set(data.cells.get_column("_draw").to_list())
    statuses = set(data.cells.get_column("_status").drop_nulls().to_list())
    layers = []
    if "colour" in kinds:
        layers.append(cells.encode(x=x, y=y, color=colour, tooltip=tooltips, description=said))
    if "mixed" in kinds:
        purple = alt.Scale(range=MIXED_RANGE, domain=data.mixed_domain, clamp=True)
        mixed_colour = alt.Color(
            field="ece", type="quantitative", title="ECE (mixed)", scale=purple
        )
        layers.append(
            mixed.encode(x=x, y=y, color=mixed_colour, tooltip=tooltips, description=said)
        )
    if "few" in kinds:
        layers += [
            few.encode(x=x, y=y, tooltip=tooltips, description=said),
            inner.encode(x=x, y=y, color=quiet if "colour" in kinds else colour, tooltip=tooltips),
        ]
    if "none" in kinds:
        layers.append(none.encode(x=x, y=y, tooltip=tooltips, description=said))
    if NO_WEIGHT in statuses:
        layers.append(empty.encode(x=x, y=y, tooltip=tooltips))
    if BEYOND in statuses:
        layers.append(
            alt.Chart()
            .transform_filter(alt.FieldEqualPredicate(field="_status", equal=BEYOND))
            .mark_point(  # a white ring: seen on dark cells too
                filled=True,
                color="#212121",
                size=max(6.0, cell * cell / 12),
                opacity=0.9,
                stroke="#ffffff",
                strokeWidth=1,
            )
            .encode(x=x, y=y, tooltip=tooltips)
        )
    if data.gap is not None:  # no x: the row spans the grid
        layers.append(drawn("gap").mark_rect(fill="#f4f4f4", aria=False).encode(y=y))
    names, test = picked_group(data.picked)
    if data.picked:  # unfilled, so a click inside still lands on the cell below
        outline = (
            alt.Chart()
            .transform_filter(test)
            .mark_rect(filled=False, stroke="#000000", strokeWidth=2.5, aria=False)
        )
        layers.append(outline.encode(x=x, y=y))
    heading = (
        title
        if title is not None
        else ("ECE by group" if value == "ece" else "Calibration gap by group")
    )
    chart = alt.LayerChart(layer=list(share_parts(*layers)), data=inline_data(data.cells))
    return (  # type: ignore[no-any-return]
        chart.add_params(*(alt.param(name=name, value=None) for name in names))
        .resolve_scale(color="independent")
        .properties(
            width=cell * len(data.columns),
            height=cell * len(data.rows),
            title=alt.Title(heading, subtitle=_legend_lines(data)),
        )
    )


def _legend_lines(data: HeatmapData) -> list[str]:
    """The subtitle, a short line each: what the dots, purple, small squares and grey mean.

    Only what the chart draws; a line is at most about 50 characters, so that the
    subtitle is never wider than the grid beside its legend.
    """
    drawn = set(data.cells.get_column("_draw").to_list())
    statuses = set(data.cells.get_column("_status").drop_nulls().to_list())
    lines = []
    if BEYOND in statuses:
        lines.append("dot: ECE beyond the noise of a calibrated model")
    if "mixed" in drawn:
        lines.append("purple: over- and underconfident bins (mixed)")
    if "few" in drawn:
        lines.append("small square on light grey: too few predictions")
    grey = []
    if NO_CELL in statuses:
        grey.append("grey: no predictions")
    if NO_WEIGHT in statuses:
        grey.append("∅: weights sum to 0")
    if grey:
        lines.append("; ".join(grey))
    return lines
