"""The report's comparison table: one row per group, sortable, the best values marked.

Markup only: every key, column name and value is HTML-escaped here, and the page's sort
script (``assets/report.js``) reads the raw values from ``data-value``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import polars as pl

__all__ = ["REPORT_COLUMNS", "table_html"]

# Comparison-table columns shown in the report, in order, with how "best" is decided:
# "max" (higher is better), "min" (lower is better), "zero" (closest to zero), None.
REPORT_COLUMNS: dict[str, str | None] = {
    "tasks": None,
    "count": None,
    "accuracy": "max",
    "acc_norm": "max",
    "mean_confidence": None,
    "overconfidence": "zero",
    "ece": "min",
    "ece_noise_floor": None,
    "ece_p_value": None,
    "verdict": None,
    "rmsce": "min",
    "rmsce_debiased": "min",
    "mce": "min",
    "brier": "min",
    "reliability": "min",
    "resolution": "max",
    "uncertainty": None,
    "log_loss": "min",
    "brier_multiclass": "min",
    "perplexity": "min",
    "bits_per_token": "min",
    "byte_perplexity": "min",
    "bits_per_byte": "min",
    "word_perplexity": "min",
    # the leaderboard's means over tasks and its count of miscalibrated tasks
    "accuracy_task_mean": "max",
    "ece_task_mean": "min",
    "mce_task_mean": "min",
    "brier_task_mean": "min",
    "log_loss_task_mean": "min",
    "perplexity_task_mean": "min",
    "miscalibrated_tasks": "min",
}
"""Columns of the report's table (when present) and the direction of "best"."""

_TITLES = {
    "count": "predictions",
    "acc_norm": "acc_norm",
    "ece_p_value": "ECE p-value",
    "verdict": "calibration vs noise",
    "brier_multiclass": "Brier (all options)",
    "byte_perplexity": "byte ppl",
    "mean_confidence": "mean conf.",
    "ece_noise_floor": "ECE noise floor",
    "ece": "ECE",
    "rmsce": "RMSCE",
    "rmsce_debiased": "RMSCE (debiased)",
    "mce": "MCE",
    "brier": "Brier",
    "log_loss": "log loss",
    "bits_per_token": "bits/token",
    "bits_per_byte": "bits/byte",
    "word_perplexity": "word ppl",
    "overconfidence": "overconf.",
    "accuracy_task_mean": "accuracy, task mean",
    "ece_task_mean": "ECE, task mean",
    "mce_task_mean": "MCE, task mean",
    "brier_task_mean": "Brier, task mean",
    "log_loss_task_mean": "log loss, task mean",
    "perplexity_task_mean": "perplexity, task mean",
    "miscalibrated_tasks": "miscalibrated tasks",
}


def _format(value: object, column: str) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "∞" if value > 0 else "−∞"
        if column in ("perplexity", "word_perplexity", "byte_perplexity"):
            return f"{value:,.3f}" if abs(value) < 1e6 else f"{value:.4g}"
        if column in ("count", "nll_count", "weight"):
            return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:.4g}"
    return str(value)


def _raw(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def _best_flags(table: pl.DataFrame, columns: Sequence[str], within: Sequence[str]) -> pl.DataFrame:
    """Flag, per ranked column, whether each row's value is the best of its group."""
    flags = []
    for column in columns:
        direction = REPORT_COLUMNS.get(column)
        value = pl.col(column).cast(pl.Float64)
        value = pl.when(value.is_finite()).then(value)
        if direction is None:
            flags.append(pl.lit(False).alias(column))
            continue
        score = value.abs() if direction == "zero" else value
        target = score.max() if direction == "max" else score.min()
        peers = pl.len() if not within else pl.len().over(within)
        best_value = target if not within else target.over(within)
        flags.append(((score == best_value) & (peers > 1)).fill_null(False).alias(column))
    return table.select(flags)


def table_html(comparison: pl.DataFrame, *, keys: list[str], within: list[str]) -> str:
    """The comparison table as a sortable HTML table, the best value of each column marked.

    One row per row of ``comparison`` (in its order), the ``keys`` first, then the
    columns of :data:`REPORT_COLUMNS` it has, numbers formatted and, where the table has
    ``<column>_ci_low`` / ``_ci_high``, the interval in brackets. Each cell keeps its raw
    value in ``data-value`` for the page's sort script; every name and value is
    HTML-escaped.

    Parameters
    ----------
    comparison
        A comparison or metrics table.
    keys
        Its group keys.
    within
        Keys within which the best value of a column is marked (``[]``: among all rows).

    Returns
    -------
    str
        The ``<table>`` (inside a scrolling ``<div>``).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.report.table import table_html
    >>> table = pl.DataFrame({"model": ["a", "<b>"], "ece": [0.05, 0.02]})
    >>> page = table_html(table, keys=["model"], within=[])
    >>> '<td class="best" data-value="0.02">0.0200</td>' in page, "&lt;b&gt;" in page
    (True, True)
    """
    shown = [
        c
        for c in REPORT_COLUMNS
        if c in comparison.columns
        and (comparison.schema[c].is_numeric() or comparison.schema[c] == pl.String)
    ]
    best = _best_flags(comparison, shown, within)
    head = [f'<th class="key" scope="col" data-type="text">{html.escape(key)}</th>' for key in keys]
    for column in shown:
        label = _TITLES.get(column, column.replace("_", " "))
        ci = f"{column}_ci_low" in comparison.columns and f"{column}_ci_high" in comparison.columns
        note = " (95% interval)" if ci else ""
        kind = "number" if comparison.schema[column].is_numeric() else "text"
        head.append(
            f'<th scope="col" data-type="{kind}" title="{html.escape(column + note)}">'
            f"{html.escape(label)}</th>"
        )
    body = []
    rows = comparison.to_dicts()
    flags = best.to_dicts()
    for row, flag in zip(rows, flags, strict=True):
        cells = []
        for key in keys:
            value = row[key]
            text = "(null)" if value is None else str(value)
            cells.append(
                f'<td class="key" data-value="{html.escape(text)}">{html.escape(text)}</td>'
            )
        for column in shown:
            value = row[column]
            text = html.escape(_format(value, column))
            low, high = row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high")
            if f"{column}_ci_low" in row and (low is not None or high is not None):
                text += (
                    f' <span class="ci">[{html.escape(_format(low, column))}, '
                    f"{html.escape(_format(high, column))}]</span>"
                )
            css = ' class="best"' if flag[column] else ""
            cells.append(f'<td{css} data-value="{html.escape(_raw(value))}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        '<div class="scroll"><table class="comparison" id="comparison">\n<thead><tr>'
        + "".join(head)
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(body)
        + "\n</tbody></table></div>"
    )
