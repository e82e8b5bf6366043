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

from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.metrics.registry import metric
from calib_frames.plot._common import (
    check_size,
    inline_data,
    key_tooltips,
    metric_tooltips,
    pick_keys,
    picked_group,
    share_parts,
    short_label,
)
from calib_frames.plot.frames import (
    COLOR,
    PANEL,
    TOO_FEW,
    label_keys,
    metric_table,
    noise_status,
    prepare,
)

if TYPE_CHECKING:
    import altair as alt

__all__ = ["HEATMAP_HEIGHT", "HEATMAP_WIDTH", "HeatmapData", "calibration_heatmap", "heatmap_data"]

HEATMAP_WIDTH, HEATMAP_HEIGHT = 900, 900
"""Pixels the cells of :func:`calibration_heatmap` take across and down at most (labels and
legend aside), unless a cell would be under 10 pixels."""


@dataclass(frozen=True)
class HeatmapData:
    """What :func:`calibration_heatmap` draws, as :func:`heatmap_data` prepares it."""

    cells: pl.DataFrame
    """One row per group with predictions: its keys, ``_color`` (its row's label),
    ``_panel`` (its column's label), the tooltips' metric columns (Float64), ``_status``
    (:func:`~calib_frames.plot.frames.noise_status`) and ``_verdict``."""
    keys: list[str]
    row_keys: list[str]
    """The keys that make the rows (the label key); the others make the columns."""
    column_keys: list[str]
    rows: list[str]
    """Row labels, top to bottom."""
    columns: list[str]
    """Column labels, left to right."""
    value: str
    """The column the colour shows."""
    shown: list[str]
    """The metric columns of the tooltips."""
    domain: list[float]
    """The colour scale's domain: [0, top] for ECE, [−top, top] for the gap."""
    cell: float
    """The side of a cell in pixels."""
    picked: list[str]
    """The keys of a picked group to outline (none: no outline)."""
    noise: bool
    """Whether the table has the noise floor's columns (dots, faint cells)."""


def heatmap_data(
    comparison: pl.DataFrame | pl.LazyFrame,
    *,
    value: str = "overconfidence",
    label: str | None = None,
    cell: float | None = None,
    pick: str | Sequence[str] | None = None,
) -> HeatmapData:
    """The cells of :func:`calibration_heatmap` and its scales, in polars (no altair).

    Groups without predictions (``count`` 0 or null: a perplexity-only task) have no
    cell. Rows follow the label key's values and columns the other keys' (the order of
    :func:`~calib_frames.plot.frames.prepare`). The colour scale ends at the 98th
    percentile of ``|value|`` over the cells with enough predictions (over every cell when
    none has), 1 when that is 0 or missing. Without ``cell``, a cell's side fits the
    columns in :data:`HEATMAP_WIDTH` and the rows in :data:`HEATMAP_HEIGHT` pixels,
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
    >>> data.rows, data.columns, data.cells.height  # a's task y has no predictions
    (['a', 'b'], ['x', 'y'], 3)
    >>> [round(bound, 3) for bound in data.domain], data.cell
    ([-0.2, 0.2], 28.0)
    """
    if value not in ("overconfidence", "ece"):
        raise ArgumentError(f'value= takes "overconfidence" or "ece", got {value!r}')
    check_size("cell", cell)
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
    if "count" in data.columns:  # groups with tokens only (a perplexity task) have no cell
        data = data.filter(pl.col("count").fill_null(0) > 0)
    if data.is_empty():
        raise TableError("calibration_heatmap: no group of the table has predictions")
    row_keys = label_keys(label, keys)
    prepared = prepare(data, keys, color=row_keys, facet=[k for k in keys if k not in row_keys])
    names = data.columns
    shown: list[str] = [
        c
        for c in ("ece", "ece_ci_low", "ece_ci_high", "overconfidence", "count")
        if c in names and data.schema[c].is_numeric()
    ]
    cells = prepared.data.select(
        *keys,
        COLOR,
        PANEL,
        *[pl.col(c).cast(pl.Float64) for c in shown],
        noise_status(names).alias("_status"),
        (pl.col("verdict") if "verdict" in names else pl.lit(None, dtype=pl.String)).alias(
            "_verdict"
        ),
    )
    rows, columns = prepared.colors, prepared.panels
    if cell is None:
        fit = min(HEATMAP_WIDTH / max(len(columns), 1), HEATMAP_HEIGHT / max(len(rows), 1))
        cell = min(28.0, max(10.0, fit))
    # the scale spans the cells with enough predictions (a 5-prediction cell's gap is
    # noise), or every cell when none has enough (a sweep of small groups)
    enough = cells.filter(pl.col("_status").ne_missing(TOO_FEW))
    basis = enough if enough.height else cells
    top = basis.get_column(value).abs().quantile(0.98)
    top = float(top) if top is not None and top > 0 else 1.0
    return HeatmapData(
        cells=cells,
        keys=keys,
        row_keys=prepared.color,
        column_keys=prepared.facet,
        rows=rows,
        columns=columns,
        value=value,
        shown=shown,
        domain=[0, top] if value == "ece" else [-top, top],
        cell=cell,
        picked=picked,
        noise="ece_beyond_noise" in names,
    )


def calibration_heatmap(
    comparison: pl.DataFrame | pl.LazyFrame,
    *,
    value: str = "overconfidence",
    label: str | None = None,
    cell: float | None = None,
    title: str | None = None,
    pick: str | Sequence[str] | None = None,
) -> alt.LayerChart:
    """A grid of groups, one row per model and one column per task, coloured by miscalibration.

    Each cell is one row of a comparison (or metrics) table. Its colour is ``value``: by
    default the signed calibration gap ``overconfidence`` = mean confidence − accuracy
    (red: overconfident, more confident than right; blue: underconfident; white: 0, on a
    scale symmetric about 0), or ``ece`` (white at 0 to red). When the table has the
    noise-floor columns (``ece_beyond_noise``, ``verdict``), a dark dot marks each cell
    whose ECE is beyond the noise of a calibrated model, and cells with too few
    predictions (or one populated bin) are drawn faint; the colour scale ends at the 98th
    percentile of the value over the other cells (over every cell when all are faint), so
    that a few noisy cells do not wash the rest out. Tooltips give the whole group
    names, ECE with its interval (``ece_ci_low``/``ece_ci_high``), the gap, the verdict
    and the number of predictions. Axis labels longer than 22 (tasks) or 30 (models)
    characters are cut in the middle; the tooltips keep the names whole.

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

    Returns
    -------
    altair.LayerChart
        The cells, then the dots (then, with ``pick``, the outline).

    Raises
    ------
    TableError
        If ``value`` is missing or not numeric, or the table has no key.
    ArgumentError
        If ``value`` is neither ``"overconfidence"`` nor ``"ece"``, ``label`` is not a
        key, or ``cell`` is not a positive number.

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
    >>> [layer["mark"]["type"] for layer in spec["layer"]]  # cells, then the noise dots
    ['rect', 'point']
    >>> rows = next(iter(spec["datasets"].values()))
    >>> len(rows), sorted({row["_status"] for row in rows})
    (12, ['beyond noise', 'within noise'])
    """
    import altair as alt

    data = heatmap_data(comparison, value=value, label=label, cell=cell, pick=pick)
    value, rows, columns, cell = data.value, data.rows, data.columns, data.cell
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
    x = alt.X(
        f"{PANEL}:N",
        sort=columns,
        title=" × ".join(data.column_keys) or None,
        axis=alt.Axis(
            orient="top",
            labelAngle=-45 if len(columns) > 3 else 0,
            labelAlign="left" if len(columns) > 3 else "center",
            labelExpr=short_label(),
        ),
    )
    y = alt.Y(
        f"{COLOR}:N",
        sort=rows,
        title=" × ".join(data.row_keys),
        axis=alt.Axis(labelExpr=short_label(limit=30)),
    )
    faint = alt.when(alt.FieldEqualPredicate(field="_status", equal=TOO_FEW))
    rects = (
        alt.Chart()
        .mark_rect(stroke="#ffffff", strokeWidth=0.5)
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                field=value, type="quantitative", title=metric(value).title, scale=scale
            ),
            opacity=alt.OpacityValue(**faint.then(alt.value(0.3)).otherwise(alt.value(1.0))),
            tooltip=tooltips,
        )
    )
    dots = (
        alt.Chart()
        .transform_filter(alt.FieldEqualPredicate(field="_status", equal="beyond noise"))
        .mark_point(filled=True, color="#212121", size=max(6.0, cell * cell / 12), opacity=0.85)
        .encode(x=x, y=y, tooltip=tooltips)
    )
    heading = (
        title
        if title is not None
        else ("ECE by group" if value == "ece" else "Calibration gap by group")
    )
    subtitle = "dot: ECE beyond the noise floor; faint: too few predictions" if data.noise else []
    layers = [rects, dots]
    names, test = picked_group(data.picked)
    if data.picked:  # unfilled, so a click inside still lands on the cell below
        outline = (
            alt.Chart()
            .transform_filter(test)
            .mark_rect(filled=False, stroke="#000000", strokeWidth=2.5, aria=False)
        )
        layers.append(outline.encode(x=x, y=y))
    chart = alt.LayerChart(layer=list(share_parts(*layers)), data=inline_data(data.cells))
    return chart.add_params(*(alt.param(name=name, value=None) for name in names)).properties(
        width=cell * len(columns),
        height=cell * len(rows),
        title=alt.Title(heading, subtitle=subtitle),
    )
