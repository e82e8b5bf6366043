"""A metric over batches: one small panel per group, its interval band and the noise floor.

:func:`trend_chart` draws the table of :func:`~calib_frames.estimators.metrics_over_batches`
(one row per batch × group); given the table of :func:`~calib_frames.estimators.
calibration_change` it shades the reference window, marks the groups that changed
tonight (red line, red points from the onset on, a dashed rule at the onset, the change
written inside the panel) and puts their panels first, so that at 50 models × 60 nights
the changed ones are found without scanning the grid. Panel titles are the group's keys
only (model · task), so a long change never pushes the task out of the title.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from calib_frames.arguments import check_arguments
from calib_frames.estimators.drift import BATCH_COLUMNS
from calib_frames.exceptions import TableError
from calib_frames.metrics import registry
from calib_frames.plot._common import (
    PANELS,
    PIXELS,
    SINGLE,
    field,
    key_tooltips,
    metric_tooltips,
    share_parts,
    sized_panels,
)
from calib_frames.plot.frames import (
    COMPARISON_COLUMNS,
    PANEL,
    SEPARATOR,
    Prepared,
    check_columns,
    frame,
    interval_columns,
    key_split,
    prepare,
)

if TYPE_CHECKING:
    import altair as alt

__all__ = ["CHANGED", "TrendData", "trend_chart", "trend_data"]

CHANGED = "#c0392b"
"""Line, band and mark of a group whose tested batch changed."""

_STATUS = "_status"
_X = "_x"


@dataclass(frozen=True)
class TrendData:
    """What :func:`trend_chart` draws, as :func:`trend_data` prepares it."""

    prepared: Prepared
    """A panel per group (changed groups first), its batches as rows: the batch keys,
    ``_x`` (the batch time, else its number), the :attr:`shown` columns (Float64),
    ``_status`` (changed / no change), ``_since`` (a changed group's batches from its
    onset on), ``_onset``, ``_baseline`` (in the reference window), ``_label`` (the
    change in short, on tonight's row of a changed group) and ``_verdict``."""
    metric: str
    shown: list[str]
    """The metric, its interval's bounds and the noise floor, as the table has them."""
    band: tuple[str, str] | None
    """The bounds of the metric's interval (None: the table has none)."""
    floor: bool
    """Whether the ECE noise floor is drawn."""
    timed: bool
    """Whether every batch has a time (the x axis is time, else the batch number)."""
    changes: bool
    """Whether a change table marks the changed groups."""


def trend_data(
    metrics: pl.DataFrame | pl.LazyFrame,
    changes: pl.DataFrame | pl.LazyFrame | None = None,
    *,
    metric: str = "ece",
    facet: str | Sequence[str] | None = None,
) -> TrendData:
    """The panels of :func:`trend_chart`: batches per group, changed groups first (no altair).

    Takes the table and arguments of :func:`trend_chart` and raises its errors.

    Returns
    -------
    TrendData
        The batches of each panel and what the chart draws of them.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.over_time import trend_data
    >>> table = pl.DataFrame({
    ...     "batch": [0, 1, 0, 1], "batch_id": ["x", "y", "x", "y"], "batch_time": None,
    ...     "model": ["a", "a", "b", "b"], "count": [100] * 4, "ece": [0.02, 0.03, 0.05, 0.12],
    ... })
    >>> changes = pl.DataFrame({"model": ["a", "b"], "changed": [False, True],
    ...                         "verdict": ["no change beyond noise", "ECE up 0.07, p = 0.001"],
    ...                         "batch_id": ["y", "y"], "baseline": ["x..x", "x..x"],
    ...                         "onset": [None, "y"]})
    >>> data = trend_data(table, changes)
    >>> data.prepared.panels, data.timed  # b changed: first
    (['b', 'a'], False)
    >>> data.prepared.data.filter(pl.col("_label") != "")["_label"].to_list()
    ['▲ ECE +0.07 since y']
    """
    data = frame(metrics, "trend_chart")
    all_keys = key_split(data.schema, COMPARISON_COLUMNS)
    if not all_keys or all_keys[: len(BATCH_COLUMNS)] != list(BATCH_COLUMNS):
        raise TableError(
            "trend_chart: not a table of batches (its first columns are not batch, batch_id, "
            "batch_time); build one with calib_frames.estimators.metrics_over_batches"
        )
    keys = all_keys[len(BATCH_COLUMNS) :]
    check_columns(data.schema, [metric], role="metrics table", built_by="", numeric=[metric])
    band = interval_columns(data.schema, metric, role="metrics table")
    floor = metric == "ece" and "ece_noise_floor" in data.columns
    shown = [metric, *(band or ()), *(["ece_noise_floor"] if floor else [])]
    timed = data.get_column("batch_time").null_count() == 0
    data = data.select(
        *all_keys,
        pl.col("batch_time" if timed else "batch").alias(_X),
        *[pl.col(c).cast(pl.Float64) for c in shown],
    )
    data, status = _with_changes(data, changes, keys, registry.metric(metric).label)
    prepared = prepare(data, keys, color=[], facet=facet, default_facet=keys)
    return TrendData(
        prepared=_changed_first(prepared),
        metric=metric,
        shown=shown,
        band=band,
        floor=floor,
        timed=timed,
        changes=status,
    )


@check_arguments(columns=PANELS, width=PIXELS, height=PIXELS)
def trend_chart(
    metrics: pl.DataFrame | pl.LazyFrame,
    changes: pl.DataFrame | pl.LazyFrame | None = None,
    *,
    metric: str = "ece",
    facet: str | Sequence[str] | None = None,
    columns: int | None = None,
    width: float = 170,
    height: float = 70,
    title: str | None = None,
) -> alt.TopLevelMixin:
    """A metric per batch, one small panel per group: line, interval band, noise floor.

    Per group (panel), the metric of each batch as a line over the batch time (or the
    batch number when a batch has no stored time), its ``<metric>_ci_low/high`` as a band
    where the table has them, and for ECE the noise floor ``ece_noise_floor`` as a dashed
    grey line (an ECE under it is indistinguishable from a calibrated model's noise).
    With ``changes``, the reference window is shaded, the groups whose ``changed`` is
    true are drawn in red with points from their ``onset`` on, a dashed rule at the onset
    and the change written inside the panel, and their panels come first.
    Every panel shares one y axis.

    Parameters
    ----------
    metrics
        A table of :func:`~calib_frames.estimators.metrics_over_batches`.
    changes
        Optional table of :func:`~calib_frames.estimators.calibration_change` of the same
        groups.
    metric
        The metric drawn (a column of ``metrics``).
    facet
        The group keys that make panels (default: every group key); the other keys share
        a panel.
    columns
        Panels per row (default: up to five).
    width, height
        Size of one panel in pixels.
    title
        Chart title (default "<metric> per batch").

    Returns
    -------
    altair.TopLevelMixin
        A ``LayerChart`` or ``FacetChart``.

    Raises
    ------
    TableError
        ``metrics`` has no batch columns or no ``metric`` column, or ``changes`` lacks
        the group keys, ``changed`` or ``verdict``.
    ArgumentError
        ``facet`` names something that is not a group key; a bad size.

    See Also
    --------
    calib_frames.estimators.metrics_over_batches : the table drawn.

    Examples
    --------
    >>> import datetime
    >>> import polars as pl
    >>> from calib_frames.plot import trend_chart
    >>> table = pl.DataFrame({
    ...     "batch": [0, 1, 0, 1], "batch_id": ["x", "y", "x", "y"],
    ...     "batch_time": [datetime.datetime(2026, 12, d) for d in (1, 2, 1, 2)],
    ...     "model": ["a", "a", "b", "b"], "count": [100] * 4, "ece": [0.02, 0.03, 0.05, 0.12],
    ... })
    >>> changes = pl.DataFrame({"model": ["a", "b"], "changed": [False, True],
    ...                         "verdict": ["no change beyond noise", "ECE up 0.07, p = 0.001"]})
    >>> spec = trend_chart(table, changes).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["spec"]["layer"]]
    ['rect', 'rule', 'line', 'point', 'text']
    """
    import altair as alt

    data = trend_data(metrics, changes, metric=metric, facet=facet)
    prepared, timed, status = data.prepared, data.timed, data.changes
    keys, shown, band, floor = prepared.keys, data.shown, data.band, data.floor
    x = (
        alt.X(f"{_X}:T", title=None, axis=alt.Axis(format="%b %d", tickCount=4, labelAngle=0))
        if timed
        else alt.X(f"{_X}:Q", title="batch", axis=alt.Axis(tickMinStep=1, tickCount=4))
    )
    metric_title = registry.metric(metric).title
    # a miscalibration from zero; accuracy and the like fitted to their range
    zero = metric in ("ece", "mce", "rmsce", "reliability")
    y = alt.Y(
        field(metric),
        type="quantitative",
        title=metric_title,
        scale=alt.Scale(zero=zero),
        axis=alt.Axis(tickCount=3),
    )
    color = alt.Color(
        f"{_STATUS}:N",
        scale=alt.Scale(domain=["no change", "changed"], range=[SINGLE, CHANGED]),
        legend=alt.Legend(title=None, orient="top", symbolType="stroke", symbolOpacity=1)
        if status
        else None,
    )
    tooltips = [
        *key_tooltips(["batch_id", *keys]),
        alt.Tooltip(field="_verdict", type="nominal", title="change"),
        alt.Tooltip(
            field="batch_time", type="temporal", title="batch time", format="%Y-%m-%d %H:%M"
        ),
        *metric_tooltips(shown),
    ]
    base = alt.Chart()
    layers = []
    if band is not None:
        low, high = band
        layers.append(
            base.mark_area(opacity=0.22).encode(
                x=x,
                y=alt.Y(field(low), type="quantitative", title=metric_title),
                y2=alt.Y2(field(high)),
                color=color,
                detail=alt.Detail(f"{_STATUS}:N"),
            )
        )
    if floor:
        layers.append(
            base.mark_line(color="#8a8a8a", strokeDash=[3, 2], strokeWidth=1).encode(
                x=x, y=alt.Y(field("ece_noise_floor"), type="quantitative", title=metric_title)
            )
        )
    if status:
        layers.append(
            base.transform_filter(alt.datum["_baseline"])
            .mark_rect(color="#8a8a8a", opacity=0.12)
            .encode(x=alt.X(f"min({_X})", type="temporal" if timed else "quantitative",
                            title=None), x2=alt.X2(f"max({_X})"))
        )  # fmt: skip
        layers.append(
            base.transform_filter(alt.datum["_onset"])
            .mark_rule(color=CHANGED, strokeDash=[4, 2], strokeWidth=1)
            .encode(x=x)
        )
    layers.append(base.mark_line(strokeWidth=1.5).encode(x=x, y=y, color=color, tooltip=tooltips))
    layers.append(
        base.transform_filter(alt.datum["_since"])
        .mark_point(filled=True, size=18, color=CHANGED)
        .encode(x=x, y=y, tooltip=tooltips)
    )
    if status:
        layers.append(
            base.transform_filter(alt.datum["_label"] != "")
            .mark_text(align="left", baseline="top", color=CHANGED, fontSize=10, dx=3, dy=2)
            .encode(x=alt.value(0), y=alt.value(0), text=alt.Text("_label:N"))
        )
    chart = alt.layer(*share_parts(*layers))
    notes = ["band: interval"] if band is not None else []
    notes += ["dashed: ECE noise floor"] if floor else []
    notes += (
        ["grey: reference window; red: changed tonight (points from the onset, dashed rule)"]
        if status
        else []
    )
    wrap = columns if columns is not None else min(5, max(1, len(prepared.panels)))
    heading = title if title is not None else f"{metric_title} per batch"
    panels = sized_panels(
        chart,
        prepared,
        prepared.data,
        (width, height),
        heading,
        columns=wrap,
        subtitle="; ".join(notes),
    )
    if len(prepared.facet) > 1 and isinstance(panels, alt.FacetChart):
        # one title line per key: model above task, neither cut off
        panels.facet.header = alt.Header(
            labelExpr=f"split(datum.value, '{SEPARATOR}')",
            labelLimit=width,
            labelFontSize=11,
            labelFontWeight="bold",
        )
    return panels


def _with_changes(
    data: pl.DataFrame,
    changes: pl.DataFrame | pl.LazyFrame | None,
    keys: list[str],
    metric_label: str,
) -> tuple[pl.DataFrame, bool]:
    """The change marks of each batch row (:attr:`TrendData.prepared`'s columns)."""
    if changes is None:
        return data.with_columns(
            pl.lit("no change").alias(_STATUS), pl.lit(False).alias("_since"),
            pl.lit(False).alias("_onset"), pl.lit(False).alias("_baseline"),
            pl.lit("").alias("_label"), pl.lit("").alias("_verdict"),
        ), False  # fmt: skip
    table = frame(changes, "trend_chart changes")
    check_columns(
        table.schema, [*keys, "changed", "verdict"], role="change table",
        built_by="estimators.calibration_change",
    )  # fmt: skip
    optional = {"batch_id": "_tonight", "onset": "_onset_batch", "baseline": "_window"}
    marks = table.select(
        *keys,
        pl.col("changed").fill_null(False).alias("_changed"),
        pl.col("verdict").alias("_verdict"),
        *[pl.col(c).cast(pl.String).alias(a) for c, a in optional.items() if c in table.columns],
    )
    for name in optional.values():
        if name not in marks.columns:
            marks = marks.with_columns(pl.lit(None, pl.String).alias(name))
    joined = data.join(marks, on=keys, how="left", nulls_equal=True) if keys else (
        data.with_columns(pl.lit(v).alias(k) for k, v in marks.row(0, named=True).items())
        if marks.height else data.with_columns(pl.lit(None).alias(c) for c in marks.columns)
    )  # fmt: skip
    changed = pl.col("_changed").fill_null(False)
    window = pl.col("_window").str.split("..")

    def batch_of(batch_id: pl.Expr) -> pl.Expr:  # the batch number of an id, per panel
        found = pl.col("batch").filter(pl.col("batch_id") == batch_id).first()
        return found.over(keys) if keys else found

    first, last = batch_of(window.list.first()), batch_of(window.list.last())
    onset = batch_of(pl.col("_onset_batch"))
    since = changed & (pl.col("batch") >= onset).fill_null(False)
    tonight = pl.col("batch_id") == pl.col("_tonight")
    label = pl.concat_str(
        pl.lit("▲ "),
        _short_verdict(metric_label),
        pl.lit(" since "),
        pl.col("_onset_batch"),
        ignore_nulls=True,
    )
    return joined.with_columns(
        pl.when(changed).then(pl.lit("changed")).otherwise(pl.lit("no change")).alias(_STATUS),
        since.alias("_since"),
        (changed & (pl.col("batch_id") == pl.col("_onset_batch"))).fill_null(False).alias("_onset"),
        pl.col("batch").is_between(first, last).fill_null(False).alias("_baseline"),
        pl.when(changed & tonight).then(label).otherwise(pl.lit("")).alias("_label"),
        pl.when(changed).then(pl.col("_verdict")).otherwise(pl.lit("")).alias("_verdict"),
    ).drop("_changed", *optional.values()), True


def _short_verdict(metric: str) -> pl.Expr:
    """The verdict's clause of ``metric`` (else its first) in short: "ECE +0.12"."""
    clauses = pl.col("_verdict").str.split("; ")
    own = clauses.list.eval(pl.element().filter(pl.element().str.starts_with(metric)))
    return (
        pl.coalesce(own.list.first(), clauses.list.first())
        .str.replace(r",\s*p [=<] .*$", "")
        .str.replace(" up ", " +", literal=True)
        .str.replace(" down ", " −", literal=True)
    )


def _changed_first(prepared: Prepared) -> Prepared:
    """Panels of changed groups first (their titles stay the group's keys)."""
    first = (pl.col(_STATUS) == "changed").any().over(PANEL)
    data = prepared.data.sort(first, descending=True, maintain_order=True)
    return Prepared(data, prepared.keys, prepared.color, prepared.facet, prepared.color_order)
