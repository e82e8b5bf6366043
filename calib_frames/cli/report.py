"""``calib-frames report``: every output of one evaluation in a directory.

    calib-frames report PREDICTIONS… --by model,task --out DIR [--token-file TOKENS…]
    calib-frames report LM_EVAL_OUTPUT_DIR… --out DIR
    calib-frames report --from-stats STATS… [--nll-stats NLL…] --out DIR
                        [--over batch [--batch ID]] [--last N]

Prints the leaderboard and the summary table and writes into DIR (created if its parent
exists; built in a hidden temporary sibling and swapped in whole, so DIR only ever holds
one run's files, listed in its ``.calib-frames-report``):

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
``batches.*``, ``changes.*`` with ``--over batch``: the figures per batch and the change of
                          the tested batch against the pooled earlier ones
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
stored) and ``--over batch`` adds the figures over time, still reading no raw row:
``batches.parquet``/``.csv`` (one row per batch × group: every metric, intervals and the
noise floor per batch), ``changes.parquet``/``.csv`` (per group, the last batch, or the
one ``--batch`` names, against the pooled earlier ones: differences in accuracy, ECE and
Brier, intervals, Holm/BH-corrected p-values from ``--change-replicates`` bootstrap draws,
a verdict), ``ece_over_batches.png``, ``accuracy_over_batches.png`` and a section of the
HTML report; the table printed is then the verdicts (with a single batch in the window
there is nothing to compare yet: no change table). The comparison table pools the
batches of the window.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.cli import common
from calib_frames.cli.compare import (
    add_uncertainty_arguments,
    check_uncertainty_arguments,
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
from calib_frames.exceptions import ArgumentError
from calib_frames.metrics.registry import LEADERBOARD_SUMMARY_COLUMNS
from calib_frames.schema import BIN_STATISTICS
from calib_frames.storage import StoredStatistics, read_statistics

__all__ = ["add_parser", "run"]

PRINTED_ROWS = 40
"""Most rows of the leaderboard and of the comparison table that ``report`` prints (the
files have them all: a nightly job's log should not hold 2,000 rows of each)."""

TABLES = ("comparison.parquet", "comparison.csv", "comparison.json", "comparison.md")
STATS_FILE = "bin_statistics.parquet"
HTML_FILE = "report.html"
OVER_TIME = ("batches.parquet", "batches.csv", "changes.parquet", "changes.csv")
LEADERBOARD_TABLES = ("leaderboard.parquet", "leaderboard.csv", "leaderboard.md")
LEADERBOARD_MODEL = "model"
"""The key that names a model by default (without it, the first key: ``--model-key``)."""
MANIFEST = ".calib-frames-report"
"""The file that marks a folder as a report's (and lists its files)."""


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
    parser.add_argument(
        "--over",
        choices=["batch"],
        default=None,
        help="with --from-stats: the figures per batch and the change of the last batch",
    )
    parser.add_argument(
        "--last",
        type=int,
        default=None,
        metavar="N",
        help="with --from-stats: the N latest batches",
    )
    parser.add_argument(
        "--batch",
        default=None,
        metavar="ID",
        help="with --over batch: the batch tested (default: the last)",
    )
    parser.add_argument(
        "--change-replicates",
        type=int,
        default=10_000,
        help="bootstrap replicates of the change test (default 10000: its p-values are "
        "corrected across groups)",
    )
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


def _stored(paths: list[str], last: int | None) -> StoredStatistics:
    """The statistics files read, the ``last`` latest batches kept."""
    stored = read_statistics(*paths)
    return stored if last is None else stored.latest(last)


OverTime = tuple[pl.DataFrame, pl.DataFrame | None]
"""The per-batch table and the change table (None for a single batch)."""


def _over_time(args: argparse.Namespace) -> OverTime:
    """The per-batch table and the change table of the statistics files."""
    from calib_frames.estimators.drift import calibration_change, metrics_over_batches

    stored = _stored(args.from_stats, args.last)
    sums = _stored(args.nll_stats, args.last) if args.nll_stats else None
    over = metrics_over_batches(
        stored,
        sums,
        uncertainty=not args.no_uncertainty,
        replicates=args.replicates,
        level=args.level,
        seed=args.seed,
    )
    if len(stored.batch_order) < 2 and args.batch is None:
        return over, None  # the first night: nothing to compare with yet
    changes = calibration_change(
        stored, batch=args.batch, replicates=args.change_replicates, level=args.level,
        seed=args.seed,
    )  # fmt: skip
    return over, changes


def _read(
    args: argparse.Namespace, outputs: list[Path]
) -> tuple[pl.DataFrame, pl.DataFrame | None, list[Path], RowQueries | None]:
    """Bin statistics, NLL sums, the files read and the row queries (None from statistics).

    The outputs are checked against the inputs before anything is computed.
    """
    if args.from_stats:
        files = [Path(p) for p in (*args.from_stats, *args.nll_stats)]
        common.check_outputs(outputs, files)
        with common.stage(args, f"read {len(files)} statistics file(s)"):
            stats = _stored(args.from_stats, args.last).merged()
            sums = _stored(args.nll_stats, args.last).merged() if args.nll_stats else None
        return stats, sums, files, None
    queries = row_queries(args)
    common.check_outputs(outputs, queries.files)
    stats, sums = collect_statistics(queries, args)
    return stats, sums, queries.files, queries


def _staging(out: Path) -> Path:
    """A fresh temporary sibling of ``out`` to build the report in (swapped in at the end).

    Raises
    ------
    ArgumentError
        ``out`` is a file, its parent is missing, or it is a folder holding files that no
        report wrote (the swap replaces the folder whole).
    """
    if out.exists() and not out.is_dir():
        raise ArgumentError(f"--out {out}: exists and is not a directory")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise ArgumentError(f"--out {out}: directory {parent} does not exist")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise ArgumentError(
            f"--out {out}: the folder holds files no calib-frames report wrote; a report "
            "replaces its folder whole, so give a new or empty folder"
        )
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=parent))
    umask = os.umask(0o022)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # as mkdir would make it (mkdtemp makes it private)
    return staging


def _swap_in(staging: Path, out: Path, written: list[str]) -> None:
    """Replace ``out`` by ``staging`` (two renames): never two runs' files side by side."""
    (staging / MANIFEST).write_text(
        json.dumps({"written_by": "calib-frames report", "files": written}, indent=1) + "\n",
        encoding="utf-8",
    )
    if not out.exists():
        os.replace(staging, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=staging.parent))
    os.replace(out, old / out.name)
    os.replace(staging, out)
    shutil.rmtree(old, ignore_errors=True)


def _check_arguments(args: argparse.Namespace) -> None:
    """Refuse what does not go together, before anything is read."""
    if args.from_stats and (args.inputs or args.token_file):
        raise ArgumentError("--from-stats reports from statistics; give no row inputs")
    if not args.from_stats and not args.inputs:
        raise ArgumentError("report needs prediction inputs, lm-eval folders or --from-stats")
    check_uncertainty_arguments(args)
    if args.change_replicates < 1:
        raise ArgumentError(f"--change-replicates must be >= 1, got {args.change_replicates}")
    if (args.over or args.last is not None) and not args.from_stats:
        raise ArgumentError("--over and --last read statistics files: give --from-stats")
    if args.batch is not None and not args.over:
        raise ArgumentError("--batch names the batch tested by --over batch")
    if args.last is not None and args.last < 1:
        raise ArgumentError(f"--last must be >= 1, got {args.last}")


def run(args: argparse.Namespace) -> int:
    """Run ``report``: build every file in a temporary sibling of ``--out``, then swap it in.

    A failed or interrupted run leaves the previous report whole (and no half-built folder
    beside it, but for a killed process's hidden ``.NAME.*.partial``).
    """
    _check_arguments(args)
    out: Path = args.out
    # the previous report's files: refused as inputs (they are replaced)
    previous = (*TABLES, STATS_FILE, HTML_FILE, *LEADERBOARD_TABLES, *OVER_TIME)
    outputs = [out / name for name in previous] if out.is_dir() else []
    staging = _staging(out)
    try:
        written = _build(args, outputs, staging)
        _swap_in(staging, out, written)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return 0


def _build(args: argparse.Namespace, outputs: list[Path], staging: Path) -> list[str]:
    """Compute the tables, write every file into ``staging``; the names written."""
    stats, sums, files, queries = _read(args, outputs)
    beside = None if queries is None else _lm_eval_figures(args, queries)
    over = None
    if args.over:
        with common.stage(args, "figures per batch and the change test"):
            over = _over_time(args)
    if beside is None:
        common.require_rows(stats, files)
        if sums is not None:
            common.require_rows(sums, files, what="token rows")
    if not args.no_charts:
        # importing altair takes ~0.4 s of one core: let it overlap the tables' polars
        # queries, which release the GIL (the import lock keeps the main thread safe)
        threading.Thread(target=importlib.import_module, args=("altair",), daemon=True).start()
    model = _model_key(args, BIN_STATISTICS.keys(stats.schema))
    tables = tables_of(args, stats, sums, queries, model=model, beside=beside)
    table, ppl, board = tables.comparison, tables.perplexity, tables.leaderboard
    assert isinstance(table, pl.DataFrame)
    assert ppl is None or isinstance(ppl, pl.DataFrame)
    assert board is None or isinstance(board, pl.DataFrame)
    with common.stage(args, "wrote the tables"):
        written = _write_tables(table, stats, board, over, staging)
    if not args.no_charts:
        curve = _risk_coverage(queries, stats, args, files)
        written += _write_charts(
            table, stats, ppl, board, args=args, curve=curve, over=over, staging=staging
        )
    if board is not None and model is not None:
        print_summary(
            board, [model], columns=LEADERBOARD_SUMMARY_COLUMNS, rows=PRINTED_ROWS,
            written="leaderboard.csv",
        )  # fmt: skip
    _print_table(table, table_keys(stats, ppl), over)
    print(f"wrote {table.height} groups to {args.out}: {', '.join(written)}")
    return written


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
    over: OverTime | None,
    staging: Path,
) -> list[str]:
    """The comparison, bin-statistics, over-time and leaderboard files; their names."""
    for name in TABLES:
        common.write_frame(table, staging / name)
    common.write_frame(stats, staging / STATS_FILE)
    written = [*TABLES, STATS_FILE, *_write_over_time(over, staging)]
    if board is not None:
        for name in LEADERBOARD_TABLES:
            common.write_frame(board, staging / name)
        written += list(LEADERBOARD_TABLES)
    return written


def _risk_coverage(
    queries: RowQueries | None, stats: pl.DataFrame, args: argparse.Namespace, files: list[Path]
) -> pl.DataFrame | None:
    """The risk–coverage curves of prediction files (none from statistics or lm-eval)."""
    if queries is None or queries.predictions is None:
        return None
    with common.stage(args, "risk–coverage curves"):
        return _selective_curve(queries.predictions, stats, args, files)


def _write_over_time(over: OverTime | None, out: Path) -> list[str]:
    """The per-batch and change tables (``--over batch``), their names."""
    if over is None:
        return []
    written = []
    for name, frame in zip(OVER_TIME, (over[0], over[0], over[1], over[1]), strict=True):
        if frame is not None:
            common.write_frame(frame, out / name)
            written.append(name)
    return written


def _print_table(table: pl.DataFrame, keys: list[str], over: OverTime | None) -> None:
    """The summary of the comparison table, or with ``--over batch`` the verdicts."""
    changes = None if over is None else over[1]
    if changes is None:
        print_summary(table, keys, rows=PRINTED_ROWS, written="comparison.csv")
        if over is not None:
            print("one batch: no earlier batch to compare it with yet")
        return
    shown = [*changes.columns[: changes.columns.index("batch_id") + 2], "verdict"]
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=10_000, fmt_str_lengths=200):
        print(changes.sort("changed", descending=True, maintain_order=True).select(shown))


def _selective_curve(
    predictions: pl.LazyFrame, stats: pl.DataFrame, args: argparse.Namespace, files: list[Path]
) -> pl.DataFrame:
    """The risk–coverage curves of the rows, 100 points per group (a second read)."""
    from calib_frames.estimators.selective import selective_curve

    query = selective_curve(
        predictions,
        confidence=args.confidence,
        correct=args.correct,
        by=BIN_STATISTICS.keys(stats.schema),
        weight=args.weight,
        points=100,
    )
    assert isinstance(query, pl.LazyFrame)
    engine = "in-memory" if args.engine == "in-memory" else "streaming"
    return common.collect(query, engine=engine, files=files)


def _write_charts(
    table: pl.DataFrame,
    stats: pl.DataFrame,
    ppl: pl.DataFrame | None,
    board: pl.DataFrame | None,
    *,
    args: argparse.Namespace,
    curve: pl.DataFrame | None,
    over: OverTime | None,
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
            level=args.level,
        )  # fmt: skip
    with common.stage(args, "wrote report.html"):
        write_report(
            staging / HTML_FILE,
            comparison=table,
            bin_statistics=with_intervals,
            perplexity=ppl,
            leaderboard=board,
            charts=charts,
            over_batches=None if over is None else over[0],
            changes=None if over is None else over[1],
            title=args.title,
            inputs=[str(p) for p in (args.inputs or args.from_stats)] + list(args.token_file),
            level=args.level,
        )
    if not args.png:
        return [HTML_FILE]
    # the picked diagram's dropdowns need the page; the reliability diagrams are its PNG
    charts = [chart for chart in charts if chart[0] != PICKED_DIAGRAM]
    if over is not None:
        charts = [*charts, *over_time_charts(*over)]
    names = [
        re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_") + ".png" for title, _, _ in charts
    ]
    with common.stage(args, f"rendered {len(charts)} PNG charts"):
        for name, (_, _, chart) in zip(names, charts, strict=True):
            save_chart(chart, staging / name)
    return [HTML_FILE, *names]
