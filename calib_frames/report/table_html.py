"""The report's comparison table: one row per group, sortable, filterable, best values marked.

Markup only: every key, column name and value is HTML-escaped here, and the page's sort
script (``assets/report.js``) reads the raw values from ``data-value``.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from calib_frames.arguments import LEVEL, Rule, check_arguments
from calib_frames.metrics.registry import metric
from calib_frames.report.summary import AMONG_BEST

__all__ = ["COLUMN_GROUPS", "REPORT_COLUMNS", "TableLayout", "table_html", "table_layout"]

REPORT_COLUMNS = (
    "rank",
    "tasks",
    "count",
    "accuracy",
    "acc_norm",
    "mean_confidence",
    "overconfidence",
    "ece",
    "ece_noise_floor",
    "ece_p_value",
    "verdict",
    "rmsce",
    "rmsce_debiased",
    "mce_guarded",
    "brier",
    "reliability",
    "resolution",
    "uncertainty",
    "log_loss",
    "brier_multiclass",
    "perplexity",
    "bits_per_token",
    "byte_perplexity",
    "bits_per_byte",
    "word_perplexity",
    # the leaderboard's means over tasks and its count of miscalibrated tasks
    "accuracy_task_mean",
    "ece_task_mean",
    "mce_guarded_task_mean",
    "brier_task_mean",
    "log_loss_task_mean",
    "perplexity_task_mean",
    "miscalibrated_tasks",
)
"""Columns of the report's table (when present); their headers, formats and which value
is best come from :mod:`calib_frames.metrics.registry` (a leaderboard's ``rank`` with its
interval ``rank_ci_low``/``_high`` in the cell's title)."""


def _format(value: object, column: str) -> str:
    """``value`` in its column's registered format.

    Whole numbers get thousands separators; a float in a count's format (``","``) has no
    decimals when whole, else two; other floats switch to four significant digits from
    10⁶ when their format separates thousands (perplexities), else from 1,000.
    """
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
        spec = metric(column).format
        if spec == ",":
            return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"
        limit = 1e6 if spec.startswith(",") else 1e3
        return f"{value:{spec or '.4f'}}" if abs(value) < limit else f"{value:.4g}"
    return str(value)


def _raw(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def _best_flags(table: pl.DataFrame, columns: Sequence[str], within: Sequence[str]) -> pl.DataFrame:
    """Flag, per ranked column, whether each row's value is the best of its group."""
    flags = []
    for column in columns:
        better = metric(column).better
        value = pl.col(column).cast(pl.Float64)
        value = pl.when(value.is_finite()).then(value)
        if better == "none":
            flags.append(pl.lit(False).alias(column))
            continue
        score = value.abs() if better == "zero" else value
        target = score.max() if better == "higher" else score.min()
        peers = pl.len() if not within else pl.len().over(within)
        best_value = target if not within else target.over(within)
        flags.append(((score == best_value) & (peers > 1)).fill_null(False).alias(column))
    return table.select(flags)


# Column groups of the table, in order, each with its columns in display order; a
# toolbar above the table shows or hides a group. Columns in no group (tasks, count)
# are always shown.
COLUMN_GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "accuracy": ("accuracy", ("accuracy", "accuracy_task_mean", "acc_norm")),
    "calibration": (
        "calibration",
        (
            "ece",
            "ece_task_mean",
            "mce_guarded",
            "mce_guarded_task_mean",
            "overconfidence",
            "mean_confidence",
            "rmsce",
            "rmsce_debiased",
        ),
    ),
    "noise": (
        "noise floor",
        ("verdict", "miscalibrated_tasks", "ece_p_value", "ece_noise_floor"),
    ),
    "scores": (
        "Brier and log loss",
        (
            "brier",
            "brier_task_mean",
            "log_loss",
            "log_loss_task_mean",
            "reliability",
            "resolution",
            "uncertainty",
            "brier_multiclass",
        ),
    ),
    "perplexity": (
        "perplexity",
        (
            "perplexity",
            "perplexity_task_mean",
            "bits_per_byte",
            "bits_per_token",
            "byte_perplexity",
            "word_perplexity",
        ),
    ),
}
"""The table's column groups: slug → (label, columns), in the table's order."""

# Shown only with "all columns" ticked: the columns a first reading does without.
_DETAIL = frozenset(
    {
        "mean_confidence",
        "rmsce",
        "rmsce_debiased",
        "ece_noise_floor",
        "ece_p_value",
        "mce_guarded_task_mean",
        "brier_task_mean",
        "log_loss_task_mean",
        "reliability",
        "resolution",
        "uncertainty",
        "bits_per_token",
        "byte_perplexity",
        "word_perplexity",
    }
)


def _ordered(columns: Sequence[str]) -> list[tuple[str | None, str]]:
    """(group slug or None, column) for the shown columns: ungrouped first, then by group."""
    present = set(columns)
    grouped = {c for _, members in COLUMN_GROUPS.values() for c in members}
    order: list[tuple[str | None, str]] = [(None, c) for c in columns if c not in grouped]
    for slug, (_, members) in COLUMN_GROUPS.items():
        order += [(slug, c) for c in members if c in present]
    return order


def _classes(*names: str) -> str:
    joined = " ".join(n for n in names if n)
    return f' class="{joined}"' if joined else ""


def _toolbar(table_id: str, groups: list[str], *, details: bool, intervals: bool) -> str:
    """The filter box and the column toggles above a table (wired by ``report.js``)."""
    boxes = [
        f'<label><input type="checkbox" data-toggle="g-{slug}" checked> '
        f"{html.escape(COLUMN_GROUPS[slug][0])}</label>"
        for slug in groups
    ]
    if details:
        boxes.append('<label><input type="checkbox" data-toggle="detail"> all columns</label>')
    if intervals:
        boxes.append('<label><input type="checkbox" data-toggle="ci"> intervals</label>')
    return (
        f'<div class="toolbar" data-table="{html.escape(table_id)}">'
        '<input type="search" class="filter" placeholder="Filter: model or task" '
        f'aria-label="Filter the rows of {html.escape(table_id)} by model or task">'
        f'<span class="toggles">Columns: {" ".join(boxes)}</span>'
        '<span class="shown" aria-live="polite"></span></div>'
    )


def _column_style(
    table_id: str, leading: int, order: list[tuple[str | None, str]], schema: pl.Schema
) -> str:
    """The table's own style: which body cells each toggle hides, by column position.

    The header cells carry their group as a class; body cells do not (at 2,000 models
    that is 200,000 class attributes), so their rules go by ``nth-child``.
    """
    hides: dict[str, list[int]] = {}
    text: list[int] = []
    for position, (slug, column) in enumerate(order, start=leading + 1):
        if slug is not None:
            hides.setdefault(f"g-{slug}", []).append(position)
        if column in _DETAIL:
            hides.setdefault("detail", []).append(position)
        if not schema[column].is_numeric():
            text.append(position)
    cell = f"#{table_id} > tbody > tr > td"
    rules = [
        ", ".join(f"#{table_id}.hide-{name} > tbody > tr > td:nth-child({k})" for k in columns)
        + " { display: none; }"
        for name, columns in hides.items()
    ]
    if text:
        rules.append(", ".join(f"{cell}:nth-child({k})" for k in text) + " { text-align: left; }")
    return "<style>\n" + "\n".join(rules) + "\n</style>"


_HTML_ID = Rule(
    "a plain HTML id (a letter, then letters, digits, - or _)",
    lambda value: (
        isinstance(value, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", value) is not None
    ),
    refused=("1st", "a b"),
)


@check_arguments(table_id=_HTML_ID, level=LEVEL)
def table_html(
    comparison: pl.DataFrame,
    *,
    keys: list[str],
    within: list[str],
    table_id: str = "comparison",
    level: float = 0.95,
) -> str:
    """The comparison table as a sortable, filterable HTML table, best values marked.

    One row per row of ``comparison`` (in its order), the ``keys`` first, then the
    columns of :data:`REPORT_COLUMNS` it has, in the groups of :data:`COLUMN_GROUPS`
    (a header row names them), numbers formatted. Where the table has
    ``<column>_ci_low`` / ``_ci_high``, the interval is the cell's title (shown on
    hover) and, with "intervals" ticked, in brackets in the cell (written there by the
    script: a 2,000-model page does not carry each interval twice). A toolbar above the
    table filters its rows by the keys' text, shows or hides each group, the less-read
    columns ("all columns") and the intervals. Each cell keeps its raw value in
    ``data-value`` for the page's script (``assets/report.js``); every name and value is
    HTML-escaped, and the script writes text only. A row whose ``among_best`` is true (a
    leaderboard's models indistinguishable from the best) has the class ``among-best``.

    Parameters
    ----------
    comparison
        A comparison or metrics table.
    keys
        Its group keys.
    within
        Keys within which the best value of a column is marked (``[]``: among all rows).
    table_id
        The ``id`` of the ``<table>`` (one per table on a page).
    level
        The level of the table's intervals, as their titles say it ("95% interval").

    Returns
    -------
    str
        The toolbar, the table's style (the toggles' rules) and the ``<table>`` (inside
        a ``<div>`` that scrolls, not the page).

    Raises
    ------
    ArgumentError
        If ``table_id`` is not a plain HTML id.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.report.table_html import table_html
    >>> table = pl.DataFrame({"model": ["a", "<b>"], "ece": [0.05, 0.02]})
    >>> page = table_html(table, keys=["model"], within=[])
    >>> '<td class="best" data-value="0.02">0.0200</td>' in page
    True
    >>> "&lt;b&gt;" in page, "<b>" in page
    (True, False)
    """
    layout = table_layout(comparison, within=within)
    head = _header_rows(layout, keys, comparison.schema, level)
    body = _body_rows(comparison, layout, keys, level)
    details = any(c in _DETAIL for _, c in layout.order)
    hidden = ["hide-ci"] + (["hide-detail"] if details else [])
    return (
        _toolbar(table_id, layout.groups, details=details, intervals=bool(layout.intervals))
        + _column_style(table_id, len(keys), layout.order, comparison.schema)
        + f'<div class="scroll"><table class="comparison sortable {" ".join(hidden)}" '
        f'id="{html.escape(table_id)}">\n<thead>'
        + head
        + "</thead>\n<tbody>\n"
        + "\n".join(body)
        + "\n</tbody></table></div>"
    )


@dataclass(frozen=True)
class TableLayout:
    """What :func:`table_html` writes of a table, as :func:`table_layout` decides it."""

    order: list[tuple[str | None, str]]
    """(group slug or None, column) of each shown column, in the table's order."""
    best: pl.DataFrame
    """Per row, whether each shown column's value is the best of its rows."""
    intervals: set[str]
    """The shown columns whose interval the table has."""
    groups: list[str]
    """The slugs of the column groups shown, in order."""


def table_layout(comparison: pl.DataFrame, *, within: Sequence[str]) -> TableLayout:
    """The columns :func:`table_html` shows, in its order, and the best value of each.

    The columns of :data:`REPORT_COLUMNS` the table has (numbers or text), ungrouped first
    then by :data:`COLUMN_GROUPS`; the best value of a column by the registry's better
    direction (:mod:`calib_frames.metrics.registry`), among the rows with the same
    ``within`` keys. Polars alone, no markup.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.report.table_html import table_layout
    >>> table = pl.DataFrame({"model": ["a", "b"], "ece": [0.05, 0.02], "count": [5, 9]})
    >>> layout = table_layout(table, within=[])
    >>> layout.order, layout.best.rows()
    ([(None, 'count'), ('calibration', 'ece')], [(False, False), (False, True)])
    """
    shown = [
        c
        for c in REPORT_COLUMNS
        if c in comparison.columns
        and (comparison.schema[c].is_numeric() or comparison.schema[c] == pl.String)
    ]
    order = _ordered(shown)
    return TableLayout(
        order=order,
        best=_best_flags(comparison, [c for _, c in order], within),
        intervals={
            c for c in shown if all(bound in comparison.columns for bound in metric(c).bounds)
        },
        groups=[slug for slug in COLUMN_GROUPS if any(s == slug for s, _ in order)],
    )


def _header_rows(layout: TableLayout, keys: Sequence[str], schema: pl.Schema, level: float) -> str:
    """The two header rows: the column groups, then the columns (keys first)."""
    order = layout.order
    head = [f'<th class="key" scope="col" data-type="text">{html.escape(key)}</th>' for key in keys]
    for slug, column in order:
        label = metric(column).label
        note = f" (hover a cell for its {100 * level:.4g}% interval)"
        note = note if column in layout.intervals else ""
        kind = "number" if schema[column].is_numeric() else "text"
        classes = _classes(
            f"g-{slug}" if slug else "",
            "detail" if column in _DETAIL else "",
            "" if schema[column].is_numeric() else "text",
        )
        head.append(
            f'<th{classes} scope="col" data-type="{kind}" '
            f'title="{html.escape(column + note)}">{html.escape(label)}</th>'
        )
    leading = len(keys) + sum(1 for slug, _ in order if slug is None)
    # the first column's cell stays in place (sticky) with its column
    group_row = ['<th class="key"></th>'] if leading else []
    if leading > 1:
        group_row.append(f'<th class="key" colspan="{leading - 1}"></th>')
    for slug in layout.groups:
        visible = sum(1 for s, c in order if s == slug and c not in _DETAIL)
        only_details = " detail" if visible == 0 else ""  # shown with "all columns"
        group_row.append(
            f'<th class="group g-{slug}{only_details}" scope="colgroup" '
            f'colspan="{max(visible, 1)}">{html.escape(COLUMN_GROUPS[slug][0])}</th>'
        )
    return '<tr class="groups">' + "".join(group_row) + "</tr><tr>" + "".join(head) + "</tr>"


def _body_rows(
    comparison: pl.DataFrame, layout: TableLayout, keys: Sequence[str], level: float
) -> list[str]:
    """One ``<tr>`` per row: the keys, then each shown column's formatted value."""
    body = []
    for row, flag in zip(comparison.to_dicts(), layout.best.to_dicts(), strict=True):
        cells = []
        for key in keys:
            value = row[key]
            text = html.escape("(null)" if value is None else str(value))
            # a null reads (null) in italics, apart from a name spelled "(null)"
            kind = "key null" if value is None else "key"
            cells.append(f'<td class="{kind}" data-value="{text}" title="{text}">{text}</td>')
        for _, column in layout.order:
            value = row[column]
            text = html.escape(_format(value, column))
            title = ""
            low, high = (row.get(bound) for bound in metric(column).bounds)
            if column in layout.intervals and (low is not None or high is not None):
                interval = html.escape(f"[{_format(low, column)}, {_format(high, column)}]")
                title = f' title="{100 * level:.4g}% interval {interval}"'  # shown on request
            classes = ' class="best"' if flag[column] else ""
            cells.append(f'<td{classes} data-value="{html.escape(_raw(value))}"{title}>{text}</td>')
        # a leaderboard marks the models indistinguishable from the best
        marked = ' class="among-best"' if row.get(AMONG_BEST) is True else ""
        body.append(f"<tr{marked}>" + "".join(cells) + "</tr>")
    return body
