r"""The report's page: header, summary, leaderboard, charts and the full table in one file.

:func:`report_html` assembles the page from the summary
(:mod:`calib_frames.report.summary`), the tables (:mod:`calib_frames.report.table_html`),
the charts (:mod:`calib_frames.report.charts`) and the page's style and sort script, which
ship as package data (``assets/report.css``, ``assets/report.js``); :func:`write_report`
writes it atomically. What a reader looks at first comes first: the summary, the
leaderboard and the heatmap; the comparison table of every group comes last.
"""

from __future__ import annotations

import datetime as _dt
import html
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.arguments import LEVEL, InstanceOf, check_arguments
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.plot.export import as_path, chart_spec, page_html, write_atomic
from calib_frames.plot.frames import COMPARISON_COLUMNS, frame, key_split, spec_keys
from calib_frames.report.charts import over_time_charts, report_charts
from calib_frames.report.summary import AMONG_BEST, board_order, summary_lines
from calib_frames.report.table_html import table_html
from calib_frames.schema import RELIABILITY

__all__ = ["report_html", "write_report"]


def _asset(name: str) -> str:
    """A file of the page's ``assets`` folder (package data), as text."""
    return resources.files("calib_frames.report").joinpath("assets", name).read_text("utf-8")


def _versions() -> dict[str, str]:
    import platform
    from importlib import metadata

    import altair as alt
    import vl_convert as vlc

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "calib_frames": version("calib-frames"),
        "polars": pl.__version__,
        "altair": alt.__version__,
        "Vega-Lite": alt.SCHEMA_VERSION.lstrip("v"),
        "Vega": vlc.get_vega_version(),
        "vl-convert": version("vl-convert-python"),
        "Python": platform.python_version(),
    }


def _summary_section(lines: Sequence[tuple[str, str]]) -> str:
    """The page's first section: the summary's labelled lines (:func:`summary_lines`)."""
    items = "\n".join(
        f"<dt>{html.escape(label)}</dt><dd>{html.escape(text)}</dd>" for label, text in lines
    )
    return f'<section><h2>Summary</h2>\n<dl class="summary">\n{items}\n</dl></section>'


def _leaderboard_section(table: pl.DataFrame | None, level: float) -> list[str]:
    """The leaderboard's section (one row per model), or nothing without one."""
    if table is None:
        return []
    model = table.columns[0]
    note = (
        f"One row per model across its tasks, {board_order(table)}; click a header to sort, "
        "type in the box to filter. "
        "Pooled: all the model's predictions together; mean over tasks: every task counts "
        "once. Miscalibrated tasks: ECE beyond the noise floor of a calibrated model."
    )
    if AMONG_BEST in table.columns:
        note += " A green bar marks the models indistinguishable from the best."
    return [
        f'<section><h2>Leaderboard</h2><p class="note">{html.escape(note)}</p>\n'
        f"{table_html(table, keys=[model], within=[], table_id='leaderboard', level=level)}"
        "</section>"
    ]


def _describe_binning(bins: pl.DataFrame, keys: list[str]) -> str:
    per_group = bins.group_by(keys).len() if keys else pl.DataFrame({"len": [bins.height]})
    sizes = sorted(set(per_group.get_column("len").to_list()))
    count = " or ".join(str(size) for size in sizes) or "0"
    closed = (
        sorted(str(c) for c in bins.get_column("closed").drop_nulls().unique().to_list())
        if "closed" in bins.columns
        else []
    )
    equal_mass = bins.get_column("bin_lower").null_count() > 0 or (
        "closed" in bins.columns and bins.get_column("closed").null_count() == bins.height
    )
    kind = "equal-mass" if equal_mass else "fixed-edge"
    side = f", {'/'.join(closed)}-closed" if closed else ""
    return f"{count} {kind} bins per group{side}"


def _meta_items(
    bins: pl.DataFrame,
    bin_keys: list[str],
    keys: list[str],
    *,
    ppl: pl.DataFrame | None,
    inputs: Mapping[str, int | None] | Sequence[str] | None,
    binning: str | None,
    generated: _dt.datetime,
) -> list[tuple[str, str]]:
    """The header's (name, value) lines: inputs, counts, keys, binning, date, versions."""
    total = int(bins.get_column("count").cast(pl.Int64).sum())
    groups = bins.select(bin_keys).n_unique() if bin_keys else 1
    meta: list[tuple[str, str]] = []
    if inputs:
        if isinstance(inputs, Mapping):
            listed = [
                f"{name} ({rows:,} rows)" if isinstance(rows, int) else str(name)
                for name, rows in inputs.items()
            ]
        elif isinstance(inputs, str):
            listed = [inputs]
        else:  # a sequence (report_html's constraint)
            listed = [str(name) for name in inputs]
        meta.append(("Inputs", "; ".join(listed)))
    meta.append(("Predictions", f"{total:,} in {groups:,} group{'s' if groups != 1 else ''}"))
    if ppl is not None and "tokens" in ppl.columns:
        tokens = ppl.get_column("tokens").cast(pl.Int64).sum()
        meta.append(("Tokens", f"{int(tokens):,}"))
    meta.append(("Grouped by", " × ".join(keys) if keys else "(all rows)"))
    meta.append(("Binning", binning if binning is not None else _describe_binning(bins, bin_keys)))
    meta.append(("Generated", generated.isoformat(timespec="seconds")))
    meta.append(("Versions", ", ".join(f"{k} {v}" for k, v in _versions().items())))
    return meta


def _checked_tables(
    comparison: pl.DataFrame | pl.LazyFrame,
    bin_statistics: pl.DataFrame | pl.LazyFrame,
    perplexity: pl.DataFrame | pl.LazyFrame | None,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | None, list[str], list[str]]:
    """The page's tables, collected and checked to agree, with their keys.

    Returns the comparison table, the bin statistics, the perplexity table (or None), the
    comparison's keys and the bin statistics' keys.
    """
    table = frame(comparison, "report comparison")
    bins = frame(bin_statistics, "report bin_statistics")
    ppl = None if perplexity is None else frame(perplexity, "report perplexity")
    keys = key_split(table.schema, COMPARISON_COLUMNS)
    if len(keys) == len(table.columns) or "ece" not in table.columns:
        raise TableError(
            "report: comparison= is not a metrics/comparison table (no ece column); build it "
            "with calib_frames.comparison_table or calib_frames.calibration_metrics"
        )
    if table.height == 0:
        raise ArgumentError("report: the comparison table has no rows: nothing to report")
    bin_keys = spec_keys(bins, RELIABILITY, "bin-statistics table")
    if sorted(bin_keys) != sorted(keys) and not set(bin_keys) <= set(keys):
        raise TableError(
            f"report: the bin statistics are grouped by {bin_keys} but the comparison table "
            f"by {keys}; compute both with the same by="
        )
    if ppl is not None and "perplexity" not in ppl.columns:
        raise TableError(
            "report: perplexity= has no perplexity column; build it with calib_frames.perplexity"
        )
    return table, bins, ppl, keys, bin_keys


_PAGE = {
    "level": LEVEL,
    "title": InstanceOf(str, "a title"),
    "inputs": InstanceOf((Sequence, Mapping), "file names or a mapping of them to row counts")
    | None,
    "binning": InstanceOf(str, "a description") | None,
}


@check_arguments(**_PAGE)
def report_html(
    comparison: pl.DataFrame | pl.LazyFrame,
    *,
    bin_statistics: pl.DataFrame | pl.LazyFrame,
    perplexity: pl.DataFrame | pl.LazyFrame | None = None,
    title: str = "Calibration report",
    inputs: Mapping[str, int | None] | Sequence[str] | None = None,
    binning: str | None = None,
    best_within: Sequence[str] | None = None,
    over_batches: pl.DataFrame | pl.LazyFrame | None = None,
    changes: pl.DataFrame | pl.LazyFrame | None = None,
    leaderboard: pl.DataFrame | pl.LazyFrame | None = None,
    charts: Sequence[tuple[str, str, Any]] | None = None,
    generated: _dt.datetime | None = None,
    selective: pl.DataFrame | pl.LazyFrame | None = None,
    level: float = 0.95,
) -> str:
    """The report as one self-contained HTML string; :func:`write_report` writes it.

    Parameters
    ----------
    comparison, bin_statistics, perplexity, title, inputs, binning, best_within
        The tables and what the page says about them, as in :func:`write_report`.
    over_batches, changes
        The section over time, as in :func:`write_report`.
    leaderboard, charts
        The leaderboard shown first and the charts built once, as in :func:`write_report`.
    generated
        The date written in the header (default: now, UTC).
    selective, level
        An optional selective curve table and the intervals' level, as in
        :func:`write_report`.

    Returns
    -------
    str
        The HTML page.

    Raises
    ------
    TableError
        If a table is not what its argument needs, or the tables have other keys.
    ArgumentError
        If the comparison table is empty or an argument is invalid.

    See Also
    --------
    write_report : the same, written atomically to a file.

    Examples
    --------
    >>> import datetime
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.report import report_html
    >>> preds = pl.DataFrame({"confidence": [0.9, 0.2], "correct": [True, False]})
    >>> stats = cf.bin_statistics(preds)
    >>> page = report_html(
    ...     cf.metrics_from_bin_statistics(stats), bin_statistics=stats,
    ...     generated=datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC),
    ... )
    >>> "<dd>2026-01-02T00:00:00+00:00</dd>" in page
    True
    """
    table, bins, ppl, keys, bin_keys = _checked_tables(comparison, bin_statistics, perplexity)
    if isinstance(best_within, str):  # one key, as by= takes it
        best_within = [best_within]
    within = list(best_within) if best_within is not None else keys[1:]
    unknown = [k for k in within if k not in keys]
    if unknown:
        raise ArgumentError(f"best_within= names {unknown}, which are not keys {keys}")
    sorted_table = table.sort(keys, nulls_last=True) if keys else table
    generated = generated or _dt.datetime.now(_dt.UTC)
    meta = _meta_items(
        bins, bin_keys, keys, ppl=ppl, inputs=inputs, binning=binning, generated=generated
    )
    header = "\n".join(
        f"<dt>{html.escape(name)}</dt><dd>{html.escape(value)}</dd>" for name, value in meta
    )
    best_note = (
        f"Bold green: best value of its column among rows with the same {' × '.join(within)}."
        if within
        else "Bold green: best value of its column."
    )
    board = None if leaderboard is None else frame(leaderboard, "report leaderboard")
    specs: dict[str, dict[str, Any]] = {}
    changes_first, trends = _over_time_sections(over_batches, changes, specs)
    sections = [
        f'<header><h1>{html.escape(title)}</h1>\n<dl class="meta">\n{header}\n</dl></header>',
        *changes_first,  # tonight first: what changed and since when
        _summary_section(summary_lines(table, board)),
        *_leaderboard_section(board, level),
        *trends,
    ]
    if charts is None:
        charts = report_charts(
            sorted_table,
            bin_statistics=bins,
            perplexity=ppl,
            selective=selective,
            leaderboard=board,
            level=level,
        )
    sections += _chart_sections(charts, specs)
    sections.append(
        "<section><h2>Comparison</h2>"
        f'<p class="note">Every group: click a column header to sort; type a model or task in '
        f"the box to show only its rows. {html.escape(best_note)} Hover a value for its "
        "interval, or tick “intervals” to show them all.</p>\n"
        f"{table_html(sorted_table, keys=keys, within=within, level=level)}</section>"
    )
    body = "\n".join(sections) + f"\n<script>\n{_asset('report.js')}</script>"
    return page_html(title, body, specs=specs, style=_asset("report.css"))


def _over_time_sections(
    over_batches: pl.DataFrame | pl.LazyFrame | None,
    changes: pl.DataFrame | pl.LazyFrame | None,
    specs: dict[str, dict[str, Any]],
) -> tuple[list[str], list[str]]:
    """The change table (the page's first section) and the trend charts (after the leaderboard).

    Their specs are added to ``specs``; nothing without ``over_batches``.
    """
    if over_batches is None:
        return [], []
    batches = frame(over_batches, "report over_batches")
    charts = over_time_charts(batches, changes)
    untimed = "batch_time" in batches.columns and batches["batch_time"].null_count() > 0
    first = (
        [_changes_section(frame(changes, "report changes"), untimed=untimed)]
        if charts and changes is not None
        else []
    )
    return first, _chart_sections(charts, specs)


def _chart_sections(
    charts: Sequence[tuple[str, str, Any]], specs: dict[str, dict[str, Any]]
) -> list[str]:
    """A section per chart (title, note, its place), its spec added to ``specs``."""
    sections = []
    for number, (name, note, chart) in enumerate(charts, start=len(specs)):
        spec_id = f"chart-spec-{number}"
        specs[spec_id] = chart_spec(chart, validate=False)  # tests/plot validate them
        sections.append(
            f'<section><h2>{html.escape(name)}</h2><p class="note">{html.escape(note)}</p>'
            f'<div class="chart" id="chart-{number}" data-vega-spec="{spec_id}"></div></section>'
        )
    return sections


def _changes_section(changes: pl.DataFrame, *, untimed: bool = False) -> str:
    """What changed tonight and since when: changed groups first, names escaped.

    One narrow column each (keys, since, onset, change), so that no header overlaps
    another at 1366 pixels; the numbers are in ``changes.csv``.
    """
    keys = changes.columns[: changes.columns.index("batch_id")]
    rows = changes.sort(
        pl.col("changed"), pl.col("onset_time"), descending=[True, False], nulls_last=True,
        maintain_order=True,
    ).with_columns(
        pl.col("onset_time").dt.strftime("%Y-%m-%d").fill_null("").alias("since"),
        pl.col("onset").fill_null(""),
    )  # fmt: skip
    shown = [*keys, "since", "onset", "verdict"]
    heads = {"since": "since", "onset": "onset batch", "verdict": "change tonight"}

    def cell(tag: str, column: str, text: str, changed: bool = False) -> str:
        style = (
            ' class="key"' if column in keys else ' class="change"' if column == "verdict" else ""
        )
        text = html.escape(text)
        return f"<{tag}{style}>{f'<b>{text}</b>' if changed else text}</{tag}>"

    head = "".join(cell("th", c, heads.get(c, c)) for c in shown)
    body = "\n".join(
        "<tr>"
        + "".join(cell("td", c, str(row[c]), c == "verdict" and row["changed"]) for c in shown)
        + "</tr>"
        for row in rows.iter_rows(named=True)
    )
    first = changes.row(0, named=True) if changes.height else {}
    changed = int(changes.get_column("changed").sum())
    summary = (
        f"{changed} of {changes.height} group{'s' if changes.height != 1 else ''} changed "
        f"tonight (batch {first.get('batch_id', '')}) against the reference window "
        f"{first.get('baseline', '')} ({first.get('baseline_batches', '')} batches). Each of "
        f"the {first.get('tested_batches', '')} batches after the window is compared with it "
        "per group (accuracy, ECE, Brier score; p-values corrected across batches × groups × "
        "metrics); the onset is the first changed batch of the run of batches that ends "
        "tonight."
    ) + (
        " Some batches have no stored time: the batches are in the order the files list "
        "them (never sorted by id)."
        if untimed
        else ""
    )
    return (
        f'<section><h2>Changed tonight</h2><p class="note">{html.escape(summary)}</p>'
        f'<div class="scroll"><table class="comparison"><thead><tr>{head}</tr></thead>'
        f"<tbody>\n{body}\n</tbody></table></div></section>"
    )


@check_arguments(**_PAGE)
def write_report(
    path: str | os.PathLike[str],
    *,
    comparison: pl.DataFrame | pl.LazyFrame,
    bin_statistics: pl.DataFrame | pl.LazyFrame,
    perplexity: pl.DataFrame | pl.LazyFrame | None = None,
    title: str = "Calibration report",
    inputs: Mapping[str, int | None] | Sequence[str] | None = None,
    binning: str | None = None,
    best_within: Sequence[str] | None = None,
    over_batches: pl.DataFrame | pl.LazyFrame | None = None,
    changes: pl.DataFrame | pl.LazyFrame | None = None,
    selective: pl.DataFrame | pl.LazyFrame | None = None,
    leaderboard: pl.DataFrame | pl.LazyFrame | None = None,
    charts: Sequence[tuple[str, str, Any]] | None = None,
    level: float = 0.95,
) -> Path:
    """Write a self-contained HTML report of a comparison table and its bin statistics.

    The file has a header (inputs with their row counts, predictions and groups, group
    keys, binning, date, versions), a summary
    (:func:`~calib_frames.report.summary.summary_lines`: the best and the worst model, the
    groups beyond noise), the leaderboard when given, the charts (with two keys the
    heatmap and the reliability diagram of a picked group first, then reliability
    diagrams, confidence histograms, accuracy against ECE, the Brier decomposition, when
    there are token or byte counts perplexity (or word / byte perplexity) and bits per
    byte, and with ``selective=`` the risk–coverage curves), and last the comparison table
    (one row per group, numbers formatted, sortable by clicking a header, filtered by the
    text typed above it, its columns in groups shown or hidden by tick boxes, the best
    value of each column marked, and ``<metric>_ci_low``/``_ci_high`` shown as intervals
    on hover or on request) in a box that scrolls inside the page. It opens
    with no network (Vega inlined, a Content-Security-Policy allowing no request). The
    file is written atomically (a temporary file in the same folder, then
    ``os.replace``).

    Parameters
    ----------
    path
        The HTML file to write; its folder must exist.
    comparison
        A comparison table (:func:`~calib_frames.comparison_table`) or metrics table
        (:func:`~calib_frames.calibration_metrics`).
    bin_statistics
        The bin-statistics (or reliability) table the metrics were reduced from, grouped
        by the same keys.
    perplexity
        Optional perplexity table for the perplexity chart (default: the comparison
        table's perplexity columns, if any).
    title
        The report's title.
    inputs
        What was read: file names, or a mapping of file name to row count.
    binning
        How the bins were built, in words (default: described from the table).
    best_within
        Keys within which the best value of a column is marked (default: every key but
        the first, e.g. best model per task).
    over_batches
        Optional table of :func:`~calib_frames.estimators.metrics_over_batches`: with two
        batches or more, trend charts over the batches (after the leaderboard).
    changes
        Optional table of :func:`~calib_frames.estimators.calibration_change`: what
        changed tonight and since when, the page's first section, and the changed groups
        marked in the trend charts.
    selective
        Optional selective curve table (:func:`~calib_frames.selective_curve`, grouped
        by the bin statistics' keys): adds the risk–coverage curves.
    leaderboard
        Optional leaderboard (:func:`~calib_frames.leaderboard`), shown after the
        summary; its order is the charts' (:func:`~calib_frames.report.report_charts`).
    charts
        The charts as :func:`~calib_frames.report.report_charts` returns them (default:
        built here; pass them when they are also saved as PNG, to build them once).
    level
        The level of the tables' intervals, as the page says it (default 0.95).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    TableError
        If a table is not what its argument needs, or the tables have other keys.
    ArgumentError
        If the comparison table is empty or an argument is invalid.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.report import write_report
    >>> preds = pl.DataFrame({
    ...     "model": ["a", "a", "b", "b"], "confidence": [0.9, 0.8, 0.6, 0.7],
    ...     "correct": [True, False, True, True],
    ... })
    >>> stats = cf.bin_statistics(preds, by="model")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     page = write_report(pathlib.Path(folder) / "report.html",
    ...                         comparison=cf.metrics_from_bin_statistics(stats),
    ...                         bin_statistics=stats, inputs={"preds.parquet": 4})
    ...     text = page.read_text()
    >>> "preds.parquet (4 rows)" in text, "https://" in text.split("<script>")[0]
    (True, False)
    """
    target = as_path(path)
    if target.suffix.lower() not in (".html", ".htm"):
        raise ArgumentError(f"write_report writes HTML: give a .html path, not {target.name!r}")
    page = report_html(
        comparison,
        bin_statistics=bin_statistics,
        perplexity=perplexity,
        title=title,
        inputs=inputs,
        binning=binning,
        best_within=best_within,
        over_batches=over_batches,
        changes=changes,
        selective=selective,
        leaderboard=leaderboard,
        charts=charts,
        level=level,
    )
    return write_atomic(target, page)
