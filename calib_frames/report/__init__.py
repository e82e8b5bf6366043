r"""A self-contained HTML report: what was evaluated, the comparison table, the charts.

:func:`write_report` writes one file that opens in a browser with no network: the Vega
JavaScript is inlined (:mod:`calib_frames.plot.export`), the table is sorted in the page
by a few lines of inline script, and a Content-Security-Policy forbids every request.

Names are data. Every model, task or column name written as markup is HTML-escaped, and
every chart spec is JSON escaped for a ``<script>`` element (``<``, ``>``, ``&`` as
``\u003c``...), so a model named ``</script><script>alert(1)</script>`` is shown as
text and runs nothing.
"""

from __future__ import annotations

import datetime as _dt
import html
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.plot._tables import COMPARISON_COLUMNS, frame, key_split, spec_keys
from calib_frames.schema import BIN_STATISTICS, RELIABILITY

__all__ = ["REPORT_COLUMNS", "report_charts", "report_html", "write_report"]

# Comparison-table columns shown in the report, in order, with how "best" is decided:
# "max" (higher is better), "min" (lower is better), "zero" (closest to zero), None.
REPORT_COLUMNS: dict[str, str | None] = {
    "count": None,
    "accuracy": "max",
    "acc_norm": "max",
    "mean_confidence": None,
    "overconfidence": "zero",
    "ece": "min",
    "ece_noise_floor": None,
    "ece_p_value": None,
    "reportable": None,
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
}
"""Columns of the report's table (when present) and the direction of "best"."""

OVERLAY_LIMIT = 5
"""Most models drawn together in one reliability panel of the report."""

_TITLES = {
    "count": "predictions",
    "acc_norm": "acc_norm",
    "ece_p_value": "ECE p-value",
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
}

_STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
       max-width: 1500px; padding: 0 16px; color: #1d1d1f; }
h1 { font-size: 24px; margin: 0 0 8px; } h2 { font-size: 18px; margin: 28px 0 8px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.meta dt { font-weight: 600; color: #555; } dl.meta dd { margin: 0; }
.scroll { overflow-x: auto; }
table.comparison { border-collapse: collapse; font-variant-numeric: tabular-nums; }
table.comparison th, table.comparison td { padding: 4px 10px; border-bottom: 1px solid #e3e3e3;
       text-align: right; white-space: nowrap; }
table.comparison th.key, table.comparison td.key { text-align: left; }
table.comparison th { background: #f4f5f7; cursor: pointer; user-select: none;
       position: sticky; top: 0; }
table.comparison th[aria-sort="ascending"]::after { content: " \\25B2"; font-size: 10px; }
table.comparison th[aria-sort="descending"]::after { content: " \\25BC"; font-size: 10px; }
table.comparison td.best { font-weight: 700; background: #e3f4e1; }
table.comparison .ci { color: #666; font-size: 12px; }
.note { color: #555; font-size: 13px; }
.chart { margin: 8px 0 16px; overflow-x: auto; }
"""

_SORT_SCRIPT = """
(function () {
  "use strict";
  var table = document.getElementById("comparison");
  if (!table) { return; }
  var headers = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(headers, function (header, column) {
    header.setAttribute("tabindex", "0");
    function sort() {
      var ascending = header.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var numeric = header.getAttribute("data-type") === "number";
      rows.sort(function (a, b) {
        var x = a.cells[column].getAttribute("data-value");
        var y = b.cells[column].getAttribute("data-value");
        if (numeric) {
          var p = x === "" ? NaN : Number(x), q = y === "" ? NaN : Number(y);
          if (isNaN(p) && isNaN(q)) { return 0; }
          if (isNaN(p)) { return 1; }
          if (isNaN(q)) { return -1; }
          return ascending ? p - q : q - p;
        }
        return ascending ? x.localeCompare(y) : y.localeCompare(x);
      });
      rows.forEach(function (row) { body.appendChild(row); });
    }
    header.addEventListener("click", sort);
    header.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
    });
  });
})();
"""


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


def _table_html(table: pl.DataFrame, keys: list[str], within: list[str]) -> str:
    shown = [c for c in REPORT_COLUMNS if c in table.columns and table.schema[c].is_numeric()]
    best = _best_flags(table, shown, within)
    head = [f'<th class="key" scope="col" data-type="text">{html.escape(key)}</th>' for key in keys]
    for column in shown:
        label = _TITLES.get(column, column.replace("_", " "))
        ci = f"{column}_ci_low" in table.columns and f"{column}_ci_high" in table.columns
        note = " (95% interval)" if ci else ""
        head.append(
            f'<th scope="col" data-type="number" title="{html.escape(column + note)}">'
            f"{html.escape(label)}</th>"
        )
    body = []
    rows = table.to_dicts()
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


def report_charts(
    comparison: pl.DataFrame,
    bins: pl.DataFrame,
    bin_keys: list[str],
    perplexity: pl.DataFrame | None,
) -> list[tuple[str, str, Any]]:
    """The report's charts as ``(title, note, chart)``; the command line saves them as PNG.

    Parameters
    ----------
    comparison
        The comparison (or metrics) table.
    bins
        The bin-statistics table (optionally with ``accuracy_ci_low/_high``).
    bin_keys
        The group keys of ``bins``.
    perplexity
        An optional perplexity table (default: the comparison table's columns).

    Returns
    -------
    list of (str, str, altair chart)
        One entry per chart, in report order.
    """
    from calib_frames.plot import charts

    metrics = (
        comparison
        if sorted(key_split(comparison.schema, COMPARISON_COLUMNS)) == sorted(bin_keys)
        else None
    )
    # Up to five models share a panel (one per task); more get a panel each (a grid of
    # model × task), where twenty overlaid curves would not be readable.
    many = bool(bin_keys) and bins.get_column(bin_keys[0]).n_unique() > OVERLAY_LIMIT
    facet = list(bin_keys) if many else bin_keys[1:]
    panels = bins.select(facet).n_unique() if facet else 1
    columns = None if many and len(facet) >= 2 else (min(panels, 4) if facet else None)
    overlay = bool(facet) and not many
    note = (
        "Accuracy against mean confidence per bin; bars to the diagonal show each bin's "
        "gap (red: overconfident, below; blue: underconfident, above); predictions per bin "
        "below, ECE, MCE and Brier score under each panel."
    )
    if overlay:
        note += " Click a legend entry to highlight a model."
    built: list[tuple[str, str, Any]] = [
        (
            "Reliability diagrams",
            note,
            charts.reliability_diagram(bins, metrics, facet=facet, columns=columns),
        ),
        (
            "Confidence histograms",
            "Share of each group's predictions per confidence bin."
            if overlay
            else "Predictions per confidence bin.",
            charts.confidence_histogram(
                bins,
                facet=facet or None,
                color=bin_keys[:1] if overlay else None,
                share=overlay,
                columns=columns,
            ),
        ),
    ]
    if "ece" in comparison.columns and "accuracy" in comparison.columns:
        built.append(
            (
                "Accuracy against ECE",
                "One point per group.",
                charts.metric_scatter(comparison, columns=columns),
            )
        )
    if all(c in comparison.columns for c in ("reliability", "resolution", "brier")):
        built.append(
            (
                "Brier decomposition",
                "Reliability (miscalibration, added to the Brier score) to the right; "
                "resolution (subtracted) to the left.",
                charts.brier_decomposition_chart(comparison, columns=columns),
            )
        )
    source = perplexity if perplexity is not None else comparison
    if "perplexity" in source.columns and source.get_column("perplexity").is_not_null().any():
        built.append(
            ("Perplexity", "Per token, and bits per byte.", charts.perplexity_chart(source))
        )
    return built


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
        elif isinstance(inputs, Sequence):
            listed = [str(name) for name in inputs]
        else:
            raise ArgumentError(
                "inputs= takes file names, or a mapping of file name to row count, got "
                f"{type(inputs).__name__}"
            )
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


def report_html(
    *,
    comparison: pl.DataFrame | pl.LazyFrame,
    bin_statistics: pl.DataFrame | pl.LazyFrame,
    perplexity: pl.DataFrame | pl.LazyFrame | None = None,
    title: str = "Calibration report",
    inputs: Mapping[str, int | None] | Sequence[str] | None = None,
    binning: str | None = None,
    best_within: Sequence[str] | None = None,
    generated: _dt.datetime | None = None,
) -> str:
    """The report as one self-contained HTML string; :func:`write_report` writes it.

    Parameters
    ----------
    comparison
        A comparison or metrics table (one row per group).
    bin_statistics
        The bin-statistics (or reliability) table, grouped by the same keys.
    perplexity
        Optional perplexity table for the perplexity chart.
    title
        The report's title.
    inputs
        What was read: file names, or a mapping of file name to row count.
    binning
        How the bins were built, in words (default: described from the table).
    best_within
        Keys within which the best value of a column is marked (default: every key
        but the first).
    generated
        The date written in the header (default: now, UTC).

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
    ...     comparison=cf.metrics_from_bin_statistics(stats), bin_statistics=stats,
    ...     generated=datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC),
    ... )
    >>> "<dd>2026-01-02T00:00:00+00:00</dd>" in page
    True
    """
    if not isinstance(title, str):
        raise ArgumentError(f"title= must be a string, got {type(title).__name__}")
    if binning is not None and not isinstance(binning, str):
        raise ArgumentError(f"binning= must be a string (or None), got {type(binning).__name__}")
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
    if ppl is not None:
        keys_ppl = key_split(ppl.schema, COMPARISON_COLUMNS)
        if "perplexity" not in ppl.columns:
            raise TableError(
                "report: perplexity= has no perplexity column; build it with "
                "calib_frames.perplexity"
            )
        _ = keys_ppl
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
    sections = [
        f'<header><h1>{html.escape(title)}</h1>\n<dl class="meta">\n{header}\n</dl></header>',
        "<section><h2>Comparison</h2>"
        f'<p class="note">Click a column header to sort. {html.escape(best_note)} '
        "Intervals in brackets where the table has them.</p>\n"
        f"{_table_html(sorted_table, keys, within)}</section>",
    ]
    from calib_frames.plot.export import chart_spec, page_html

    specs: dict[str, dict[str, Any]] = {}
    for number, (name, note, chart) in enumerate(report_charts(sorted_table, bins, bin_keys, ppl)):
        spec_id = f"chart-spec-{number}"
        specs[spec_id] = chart_spec(chart)
        sections.append(
            f'<section><h2>{html.escape(name)}</h2><p class="note">{html.escape(note)}</p>'
            f'<div class="chart" id="chart-{number}" data-vega-spec="{spec_id}"></div></section>'
        )
    body = "\n".join(sections) + f"\n<script>\n{_SORT_SCRIPT}</script>"
    return page_html(title, body, specs=specs, style=_STYLE)


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
) -> Path:
    """Write a self-contained HTML report of a comparison table and its bin statistics.

    The file has a header (inputs with their row counts, predictions and groups, group
    keys, binning, date, versions), the comparison table (one row per group, numbers
    formatted, sortable by clicking a header, the best value of each column marked, and
    ``<metric>_ci_low``/``_ci_high`` shown as intervals when present) and the charts:
    reliability diagrams, confidence histograms, accuracy against ECE, the Brier
    decomposition and, when there is perplexity, perplexity and bits per byte. It opens
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
    from calib_frames.plot.export import as_path, write_atomic

    target = as_path(path)
    if target.suffix.lower() not in (".html", ".htm"):
        raise ArgumentError(f"write_report writes HTML: give a .html path, not {target.name!r}")
    page = report_html(
        comparison=comparison,
        bin_statistics=bin_statistics,
        perplexity=perplexity,
        title=title,
        inputs=inputs,
        binning=binning,
        best_within=best_within,
    )
    return write_atomic(target, page)


_ = BIN_STATISTICS
