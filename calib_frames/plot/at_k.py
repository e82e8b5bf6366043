"""The chart of a ranking-metrics table: metric@k against k, one line per group.

The chart is built from the small table of :func:`~calib_frames.ranking.ranking_metrics`
(one row per group), never from run rows; :func:`at_k_data` is its data step. altair
(and :mod:`calib_frames.ranking`, for the names of its metrics) is imported when a chart
is built; save it offline with :func:`calib_frames.plot.save_chart`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from calib_frames.arguments import ListOf, Options, check_arguments
from calib_frames.exceptions import ArgumentError
from calib_frames.plot._common import PIXELS
from calib_frames.plot.frames import frame
from calib_frames.ranking.metrics import CUT_METRICS

__all__ = ["at_k_data", "metric_at_k_chart"]

_CUT = re.compile(r"^(?P<metric>[a-z_0-9]+)@(?P<k>\d+)$")


_METRIC = Options(*CUT_METRICS)
_METRICS = _METRIC | ListOf(_METRIC)


@check_arguments(metrics=_METRICS)
def at_k_data(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    metrics: str | Sequence[str] = ("ndcg", "precision", "recall"),
) -> tuple[pl.DataFrame, list[str], list[str]]:
    """The lines of :func:`metric_at_k_chart`: one row per group, metric and cut-off k.

    Takes the table and arguments of :func:`metric_at_k_chart` and raises its errors.

    Returns
    -------
    tuple of (polars.DataFrame, list of str, list of str)
        The rows (``group``, ``metric``, ``k``, ``value``, ``queries``), the metrics in
        panel order and the table's keys.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.at_k import at_k_data
    >>> from calib_frames.ranking import ranking_metrics
    >>> run = pl.DataFrame({"model": ["a", "a"], "query": [1, 1], "item": [1, 2],
    ...                     "score": [0.9, 0.1]})
    >>> qrels = pl.DataFrame({"query": [1], "item": [2], "relevance": [1]})
    >>> long, names, keys = at_k_data(ranking_metrics(run, qrels, by="model", k=(1, 2)),
    ...                               metrics="recall")
    >>> long.rows(), names, keys
    ([('model=a', 'recall', 1, 0.0, 1), ('model=a', 'recall', 2, 1.0, 1)], ['recall'], ['model'])
    """
    from calib_frames.ranking.metrics import RANKING_METRICS

    names = [metrics] if isinstance(metrics, str) else list(metrics)
    data = frame(table, "metric_at_k_chart")
    keys = RANKING_METRICS.keys(data.schema)
    columns = {
        c: (m["metric"], int(m["k"]))
        for c in data.columns
        if (m := _CUT.match(c)) and m["metric"] in names
    }
    absent = [n for n in names if n not in {metric for metric, _ in columns.values()}]
    if absent:
        raise ArgumentError(f"the table has no @k columns for {absent}")
    if keys:
        label = pl.concat_str(
            [pl.format(f"{key}={{}}", pl.col(key).cast(pl.String).fill_null("null"))
             for key in keys],
            separator=", ",
        )  # fmt: skip
    else:
        label = pl.lit("all")
    long = (
        data.select(label.alias("group"), "queries", *columns)
        .unpivot(index=["group", "queries"], variable_name="column", value_name="value")
        .with_columns(
            pl.col("column")
            .replace_strict({c: m for c, (m, _) in columns.items()})
            .alias("metric"),
            pl.col("column").replace_strict({c: k for c, (_, k) in columns.items()}).alias("k"),
        )
        .select("group", "metric", "k", "value", "queries")
        .sort("metric", "group", "k")
    )
    return long, names, keys


@check_arguments(metrics=_METRICS, width=PIXELS, height=PIXELS)
def metric_at_k_chart(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    metrics: str | Sequence[str] = ("ndcg", "precision", "recall"),
    width: float = 200,
    height: float = 160,
) -> Any:
    """Line chart of ``<metric>@<k>`` against k, one panel per metric, one line per group.

    Parameters
    ----------
    table
        A ranking-metrics table (its keys are the columns before ``queries``); a
        LazyFrame is collected (it is one row per group).
    metrics
        Metric names among ``hit, precision, recall, f1, mrr, map, ndcg, ndcg_exp``.
    width, height
        Size of each panel in pixels.

    Returns
    -------
    altair.FacetChart
        Data columns ``group`` (the keys joined as ``key=value, ...``, or ``"all"``),
        ``metric``, ``k``, ``value`` and the number of ``queries``.

    Raises
    ------
    TableError
        If ``table`` is not a ranking-metrics table.
    ArgumentError
        If a metric is unknown or has no ``@k`` column in the table, or a size is not > 0.

    See Also
    --------
    calib_frames.ranking.ranking_metrics : the table.
    calib_frames.plot.save_chart : HTML / PNG / SVG export.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot import metric_at_k_chart
    >>> from calib_frames.ranking import ranking_metrics
    >>> run = pl.DataFrame({"model": ["a", "a", "b", "b"], "query": [1, 1, 1, 1],
    ...                     "item": [1, 2, 1, 2], "score": [0.9, 0.1, 0.1, 0.9]})
    >>> qrels = pl.DataFrame({"query": [1], "item": [1], "relevance": [1]})
    >>> chart = metric_at_k_chart(ranking_metrics(run, qrels, by="model", k=(1, 2)))
    >>> sorted({row["group"] for row in chart.data.to_dicts()})
    ['model=a', 'model=b']
    """
    import altair as alt

    long, names, keys = at_k_data(table, metrics=metrics)
    base = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("k:Q", title="cut-off k", axis=alt.Axis(tickMinStep=1)),
            y=alt.Y("value:Q", title="metric@k", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("group:N", title=", ".join(keys) or "group"),
            tooltip=[
                "group:N",
                "metric:N",
                "k:Q",
                alt.Tooltip("value:Q", format=".4f"),
                "queries:Q",
            ],
        )
        .properties(width=width, height=height)
    )
    return base.facet(column=alt.Column("metric:N", title=None, sort=names))
