"""``calib-frames report``: every output of one evaluation in a directory.

    calib-frames report PREDICTIONS… --by model,task --out DIR [--token-file TOKENS…]
    calib-frames report LM_EVAL_OUTPUT_DIR… --out DIR
    calib-frames report --from-stats STATS… [--nll-stats NLL…] --out DIR
                        [--over batch [--baseline A..B] [--batch ID] [--fail-on-change]]
                    [--last N]

Prints the leaderboard and the summary table and writes into DIR (created if its parent
exists; built in a hidden temporary sibling and swapped in whole, so DIR only ever holds
one run's files, listed in its ``.calib-frames-report``; a DIR holding anything else is
refused before any work: :mod:`calib_frames.cli.report_folder`):

========================  =================================================================
file                      content
========================  =================================================================
``comparison.*``          the per-group table as parquet, CSV, JSON and markdown: metrics,
                          perplexity, and (unless ``--no-uncertainty``) bootstrap intervals
                          ``<metric>_ci_low/_high``, the ECE noise floor, its p-value and
                          ``ece_beyond_noise`` and its ``verdict`` in words
``bin_statistics.parquet`` the additive bin-statistics table
``report.html``           the self-contained HTML report (opens offline)
``leaderboard.*``         one row per model across its tasks (with a ``model`` key and
                          another), as parquet, CSV and markdown
``batches.*``, ``changes.*`` with ``--over batch``: the figures per batch, and per group
                          the change against the reference window (``changes.json``:
                          the changed groups, for a job to forward)
``*.png``                 with ``--png``: the report's charts (reliability diagrams,
                          confidence histograms, accuracy against ECE, Brier
                          decomposition, perplexity, from prediction files the risk–coverage
                          curves, with ``--over batch`` the trends); bounded at 8 groups
========================  =================================================================

Inputs are prediction files (parquet/CSV/JSONL, globs, hive folders), evaluation logs
(lm-evaluation-harness, inspect_ai, HELM, lighteval: :mod:`calib_frames.sources.logs`
finds and reads them), or statistics files from ``calib-frames stats``/``merge``
(``--from-stats``: no raw row is read). The tables are those of
:func:`calib_frames.comparison.report_tables`. From lm-eval folders the table has one row
per model × task (its latest run), lm-eval's own aggregates beside calib_frames'
(``*_lm_eval``, the ``run`` column). The leaderboard names models by ``--model-key``
(default: the key ``model``, else the first key, said on stderr); with a single key
there is none.

From statistics, ``--last N`` keeps the N latest batches (by the batch time ``stats``
stored) and ``--over batch`` adds the nightly view, still reading no raw row
(:mod:`calib_frames.cli.over_time`): every batch after a reference window
(``--baseline A..B``) against it, ``changes.parquet``/``.csv``/``.json``, the figures per
batch in ``batches.parquet``/``.csv``, the trend charts, and tonight's comparison table
and leaderboard; ``--fail-on-change`` exits with status 3 when a group changed tonight.
Without ``--over`` the comparison table pools the batches read.
"""

from __future__ import annotations

import argparse
import importlib
import re
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.cli import common, report_folder
from calib_frames.cli import over_time as nightly
from calib_frames.cli.compare import (
    add_uncertainty_arguments,
    check_uncertainty_arguments,
    print_lines,
    print_summary,
    table_keys,
    tables_of,
)
from calib_frames.cli.rows import (
    RowQueries,
    add_prediction_arguments,
    collect_statistics,
    row_queries,
)
from calib_frames.comparison.across_tasks import RANK_COLUMNS
from calib_frames.exceptions import ArgumentError
from calib_frames.metrics.registry import LEADERBOARD_SUMMARY_COLUMNS
from calib_frames.report.summary import board_order, summary_lines
from calib_frames.schema import BIN_STATISTICS
from calib_frames.sources.paths import Location

__all__ = ["add_parser", "run"]

"""The leaderboard's rank, its interval and the mark of the models indistinguishable from
the best, printed after the model's name when the leaderboard has them."""
PRINTED_ROWS = 40
"""Most rows of the leaderboard and of the comparison table that ``report`` prints (the
files have them all: a nightly job's log should not hold 2,000 rows of each)."""

TABLES = ("comparison.parquet", "comparison.csv", "comparison.json", "comparison.md")
STATS_FILE = "bin_statistics.parquet"
HTML_FILE = "report.html"
LEADERBOARD_TABLES = ("leaderboard.parquet", "leaderboard.csv", "leaderboard.md")
LEADERBOARD_MODEL = "model"
"""The key that names a model by default (without it, the first key: ``--model-key``)."""


def add_parser(commands: Any) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "report",
        help="write tables, HTML report and charts",
        description="write tables, HTML report and charts",
        epilog=(
            "example:\n  calib-frames report data/synthetic_predictions.parquet \\\n    "
            "--token-file data/synthetic_tokens.parquet --by model,task \\\n    "
            "--out report"
        ),
    )
    add_prediction_arguments(parser, inputs_required=False)
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument(
        "--from-stats",
        action="append",
        default=[],
        metavar="STATS",
        help="report from bin-statistics files (calib-frames stats/merge) instead of rows",
    )
    parser.add_argument(
        "--nll-stats", action="append", default=[], metavar="NLL", help="NLL-sums files"
    )
    add_uncertainty_arguments(parser)
    parser.add_argument(
        "--model-key",
        default=None,
        metavar="KEY",
        help="the key that names a model in the leaderboard (default: the key 'model', "
        "else the first key)",
    )
    nightly.add_arguments(parser)
    parser.add_argument("--no-charts", action="store_true", help="skip report.html and PNGs")
    parser.add_argument(
        "--png",
        action="store_true",
        help="also save each chart as a PNG (about half a second per chart; the HTML page "
        "draws them in the browser from its embedded specs)",
    )
    parser.add_argument("--title", default="Calibration report", help="the report's title")
    parser.set_defaults(run=run)


def _lm_eval_figures(args: argparse.Namespace, queries: RowQueries) -> pl.DataFrame | None:
    """lm-eval's own figures of the latest runs, to put beside ours (lm-eval folders only).

    Per model × task: with other ``--by`` keys they are left out (said on stderr).
    """
    from calib_frames.comparison.beside_lm_eval import lm_eval_comparison
    from calib_frames.sources.logs import latest_runs

    log_format = queries.log_format
    if log_format is None or log_format.name != "lm-eval":
        return None
    if queries.by != log_format.by:
        print(
            f"calib-frames: lm-eval's own figures are per {' × '.join(log_format.by)}; "
            f"left out of a table by {', '.join(queries.by)}",
            file=sys.stderr,
        )
        return None
    with common.stage(args, "lm-eval's own figures"):
        figures = lm_eval_comparison(list(args.inputs), bins=queries.binning.n_bins)
        latest = latest_runs(figures, by=log_format.by, run=log_format.run)
    assert isinstance(latest, pl.DataFrame)
    return latest


def _read(
    args: argparse.Namespace, outputs: list[Path]
) -> tuple[
    pl.DataFrame, pl.DataFrame | None, list[Location], RowQueries | None, nightly.OverTime | None
]:
    """Bin statistics, NLL sums, files read, row queries and tables over time.

    The row queries are None from statistics; the tables over time need ``--over batch``.
    The outputs are checked against the inputs before anything is computed.
    """
    if args.from_stats:
        files = [common.location(p) for p in (*args.from_stats, *args.nll_stats)]
        common.check_outputs(outputs, files)
        with common.stage(args, f"read {len(files)} statistics file(s)"):
            stored = nightly.read_stored(args, args.from_stats)
            stored_sums = nightly.read_stored(args, args.nll_stats) if args.nll_stats else None
            stats = nightly.tonight_statistics(args, stored)
            sums = None if stored_sums is None else nightly.tonight_statistics(args, stored_sums)
        over = None
        if args.over:
            with common.stage(args, "figures per batch and the change test"):
                over = nightly.over_time(args, stored, stored_sums)
        return stats, sums, files, None, over
    queries = row_queries(args)
    common.check_outputs(outputs, queries.files)
    stats, sums = collect_statistics(queries, args)
    return stats, sums, queries.files, queries, None


def _check_arguments(args: argparse.Namespace) -> None:
    """Refuse what does not go together, before anything is read."""
    if args.from_stats and (args.inputs or args.token_file):
        raise ArgumentError("--from-stats reports from statistics; give no row inputs")
    if not args.from_stats and not args.inputs:
        raise ArgumentError("report needs prediction inputs, lm-eval folders or --from-stats")
    check_uncertainty_arguments(args)
    nightly.check_arguments(args)


def run(args: argparse.Namespace) -> int:
    """Run ``report``: build every file in a temporary sibling of ``--out``, then swap it in.

    A failed or interrupted run leaves the previous report whole (and no half-built folder
    beside it, but for a killed process's hidden ``.NAME.*.partial``).
    """
    _check_arguments(args)
    out: Path = args.out
    # the previous report's files: refused as inputs (they are replaced)
    previous = (*TABLES, STATS_FILE, HTML_FILE, *LEADERBOARD_TABLES, *nightly.FILES)
    outputs = [out / name for name in previous] if out.is_dir() else []
    staging: Path | None = None
    try:
        target, staging = report_folder.prepare(out)
        written, over = _build(args, outputs, staging)
        report_folder.swap_in(staging, target, written)
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return nightly.status(args, over)


def _build(
    args: argparse.Namespace, outputs: list[Path], staging: Path
) -> tuple[list[str], nightly.OverTime | None]:
    """Compute the tables, write every file into ``staging``; the names written."""
    stats, sums, files, queries, over = _read(args, outputs)
    beside = None if queries is None else _lm_eval_figures(args, queries)
    if beside is None:
        common.require_rows(stats, files)
        if sums is not None:
            common.require_rows(sums, files, what="token rows")
    if not args.no_charts:
        # importing altair is slow (BENCHMARKS.md, the import): let it overlap the tables' polars
        # queries, which release the GIL (the import lock keeps the main thread safe)
        threading.Thread(target=importlib.import_module, args=("altair",), daemon=True).start()
    keys = BIN_STATISTICS.keys(stats.schema)
    model = _model_key(args, keys)
    log_format = None if queries is None else queries.log_format
    named = () if log_format is None else log_format.not_tasks  # a scorer, a perturbation
    not_tasks = [key for key in named if key in keys and key != model]
    tables = tables_of(args, stats, sums, queries, model=model, not_tasks=not_tasks, beside=beside)
    table, ppl, board = tables.comparison, tables.perplexity, tables.leaderboard
    assert isinstance(table, pl.DataFrame)
    assert ppl is None or isinstance(ppl, pl.DataFrame)
    assert board is None or isinstance(board, pl.DataFrame)
    with common.stage(args, "wrote the tables"):
        written = _write_tables(table, stats, board, over, staging)
    if not args.no_charts:
        from calib_frames.report.charts import report_layout

        # the groups the small multiples draw: the risk–coverage curves of those only
        drawn = report_layout(table, stats, BIN_STATISTICS.keys(stats.schema), order=board).kept
        curve = _risk_coverage(queries, stats, args, files, drawn)
        written += _write_charts(
            table, stats, ppl, board, args=args, curve=curve, over=over, staging=staging
        )
    if over is not None:  # tonight first
        nightly.print_over_time(over, rows=PRINTED_ROWS)
    lines = summary_lines(table, board)
    if HTML_FILE in written:
        lines.append(("report", f"{args.out / HTML_FILE} (open it in a browser)"))
    print_lines(lines)
    if board is not None and model is not None:
        print_summary(
            board, [model], title=f"Leaderboard: one row per {model}, {board_order(board)}",
            columns=(*RANK_COLUMNS, *LEADERBOARD_SUMMARY_COLUMNS), rows=PRINTED_ROWS,
            written="leaderboard.csv",
        )  # fmt: skip
    keys = table_keys(stats, ppl)
    print_summary(
        table, keys, title=f"Comparison: one row per {' × '.join(keys) or 'group'}",
        rows=PRINTED_ROWS, written="comparison.csv",
    )  # fmt: skip
    print(f"\nwrote {table.height:,} groups to {args.out}: {', '.join(written)}")
    return written, over


def _model_key(args: argparse.Namespace, keys: list[str]) -> str | None:
    """The key that names a model in the leaderboard, or None for no leaderboard.

    ``--model-key``, else the key ``model``, else the first key (said on stderr): a
    table of two keys or more always has its leaderboard. A single key has none (there
    are no tasks to pool).
    """
    chosen: str | None = args.model_key
    if chosen is not None and chosen not in keys:
        raise ArgumentError(f"--model-key {chosen}: not a key of the table (keys: {keys})")
    if len(keys) < 2:
        if chosen is not None:
            print(
                f"calib-frames: no leaderboard: the table has one key ({keys[0]}), no task to pool",
                file=sys.stderr,
            )
        return None
    if chosen is None and LEADERBOARD_MODEL not in keys:
        chosen = keys[0]
        print(
            f"calib-frames: the leaderboard names models by the first key, {chosen!r} (no "
            f"key is named {LEADERBOARD_MODEL!r}; say another with --model-key)",
            file=sys.stderr,
        )
    return chosen or LEADERBOARD_MODEL


def _write_tables(
    table: pl.DataFrame,
    stats: pl.DataFrame,
    board: pl.DataFrame | None,
    over: nightly.OverTime | None,
    staging: Path,
) -> list[str]:
    """The comparison, bin-statistics, over-time and leaderboard files; their names."""
    for name in TABLES:
        common.write_frame(table, staging / name)
    common.write_frame(stats, staging / STATS_FILE)
    written = [*TABLES, STATS_FILE, *nightly.write_over_time(over, staging)]
    if board is not None:
        for name in LEADERBOARD_TABLES:
            common.write_frame(board, staging / name)
        written += list(LEADERBOARD_TABLES)
    return written


def _risk_coverage(
    queries: RowQueries | None,
    stats: pl.DataFrame,
    args: argparse.Namespace,
    files: list[Location],
    drawn: pl.DataFrame | None,
) -> pl.DataFrame | None:
    """The risk–coverage curves of prediction files (none from statistics).

    Of the groups ``drawn`` (the keys the report's small multiples draw; None: every
    group).
    """
    if queries is None or queries.predictions is None:
        return None
    rows = queries.predictions
    if drawn is not None:
        rows = rows.join(drawn.lazy(), on=drawn.columns, how="semi", nulls_equal=True)
    with common.stage(args, "risk–coverage curves"):
        return _selective_curve(rows, stats, args, files)


def _selective_curve(
    predictions: pl.LazyFrame, stats: pl.DataFrame, args: argparse.Namespace, files: list[Location]
) -> pl.DataFrame:
    """The risk–coverage curves of the rows, from a bounded summary per group.

    A second streaming pass over the rows counts them in the 200 fixed bins of
    :func:`~calib_frames.estimators.selective.selective_binning` (flat memory, however
    many rows a group holds); the curves are read from that table.
    """
    from calib_frames.estimators.selective import (
        selective_binning,
        selective_curve_from_bin_statistics,
    )
    from calib_frames.stats import bin_statistics

    query = bin_statistics(
        predictions,
        confidence=args.confidence,
        correct=args.correct,
        by=BIN_STATISTICS.keys(stats.schema),
        bins=selective_binning(),
        weight=args.weight,
    )
    assert isinstance(query, pl.LazyFrame)
    engine = "in-memory" if args.engine == "in-memory" else "streaming"
    summary = common.collect(query, engine=engine, files=files)
    curve = selective_curve_from_bin_statistics(summary)
    assert isinstance(curve, pl.DataFrame)
    return curve


def _write_charts(
    table: pl.DataFrame,
    stats: pl.DataFrame,
    ppl: pl.DataFrame | None,
    board: pl.DataFrame | None,
    *,
    args: argparse.Namespace,
    curve: pl.DataFrame | None,
    over: nightly.OverTime | None,
    staging: Path,
) -> list[str]:
    from calib_frames.estimators import with_accuracy_intervals
    from calib_frames.plot import save_chart
    from calib_frames.report import report_charts, write_report
    from calib_frames.report.charts import PICKED_DIAGRAM, over_time_charts

    with_intervals = with_accuracy_intervals(stats, level=args.level)
    assert isinstance(with_intervals, pl.DataFrame)
    with common.stage(args, "built the charts"):
        charts = report_charts(
            table, bin_statistics=with_intervals, perplexity=ppl, selective=curve,
            leaderboard=board, level=args.level,
        )  # fmt: skip
    with common.stage(args, "wrote report.html"):
        write_report(
            staging / HTML_FILE,
            comparison=table,
            bin_statistics=with_intervals,
            perplexity=ppl,
            leaderboard=board,
            charts=charts,
            over_batches=None if over is None else over.batches,
            changes=None if over is None else over.changes,
            title=args.title,
            inputs=[str(p) for p in (args.inputs or args.from_stats)] + list(args.token_file),
            level=args.level,
        )
    if not args.png:
        return [HTML_FILE]
    # the picked diagram's dropdowns need the page; the reliability diagrams are its PNG
    charts = [chart for chart in charts if chart[0] != PICKED_DIAGRAM]
    if over is not None:
        charts = [*charts, *over_time_charts(over.batches, over.changes)]
    names = [
        re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_") + ".png" for title, _, _ in charts
    ]
    with common.stage(args, f"rendered {len(charts)} PNG charts"):
        for name, (_, _, chart) in zip(names, charts, strict=True):
            save_chart(chart, staging / name)
    return [HTML_FILE, *names]
