"""``calib-frames compare``: print the per-group comparison table (and optionally write it).

calib-frames compare PREDICTIONS… [--token-file TOKENS…] --by model,task [--bins 10]
                     [--tokens COL | --token-level] [--no-uncertainty] [--output table.csv]

The table is :func:`calib_frames.compare`'s (built by
:func:`calib_frames.comparison.report_tables`): metrics, and unless ``--no-uncertainty``
their intervals, the ECE noise floor and the verdict (``--replicates``, ``--level``,
``--seed``, ``--correction``, as ``report``), and with token files the perplexity with its
intervals. ``report`` writes the same table as ``comparison.*``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.cli import common
from calib_frames.cli.rows import (
    RowQueries,
    add_prediction_arguments,
    collect_statistics,
    row_queries,
)
from calib_frames.comparison.pipeline import REPLICATES, ReportTables, report_tables
from calib_frames.exceptions import ArgumentError
from calib_frames.metrics.registry import SUMMARY_COLUMNS
from calib_frames.plot.frames import group_labels
from calib_frames.report.summary import summary_lines
from calib_frames.schema import BIN_STATISTICS, PERPLEXITY
from calib_frames.validation import CORRECTIONS, Frame

__all__ = [
    "add_parser",
    "add_uncertainty_arguments",
    "check_uncertainty_arguments",
    "print_lines",
    "print_summary",
    "run",
    "table_keys",
    "tables_of",
]


def add_parser(commands: Any) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "compare",
        help="print the per-group comparison table",
        description="print the per-group comparison table: metrics, intervals, noise floor, "
        "verdict and perplexity (the table of calib_frames.compare)",
        epilog=(
            "example:\n  calib-frames compare data/synthetic_predictions.parquet \\\n    "
            "--token-file data/synthetic_tokens.parquet --by model,task"
        ),
    )
    add_prediction_arguments(parser)
    add_uncertainty_arguments(parser)
    parser.add_argument("--output", type=Path, help="write the table (.csv, .parquet, .json, .md)")
    parser.add_argument(
        "--all-columns",
        action="store_true",
        help="print every column (default: keys and a summary; --output always has all)",
    )
    parser.set_defaults(run=run)


def add_uncertainty_arguments(parser: argparse.ArgumentParser) -> None:
    """The uncertainty flags of compare and report (``--no-uncertainty``, ``--correction``…)."""
    parser.add_argument(
        "--no-uncertainty",
        action="store_true",
        help="skip the bootstrap intervals and the ECE noise floor (faster)",
    )
    parser.add_argument("--replicates", type=int, default=REPLICATES, help="bootstrap replicates")
    parser.add_argument("--level", type=float, default=0.95, help="interval level")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling")
    parser.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default=CORRECTIONS[0],
        help="correction of the noise floor's p-values across the table's groups "
        "(default bh: Benjamini-Hochberg; holm; none)",
    )


def check_uncertainty_arguments(args: argparse.Namespace) -> None:
    """Refuse ``--replicates`` below 1 and a ``--level`` outside (0, 1)."""
    if args.replicates < 1 or not 0 < args.level < 1:
        raise ArgumentError("--replicates must be >= 1 and --level in (0, 1)")


def tables_of(
    args: argparse.Namespace,
    stats: pl.DataFrame,
    sums: pl.DataFrame | None,
    queries: RowQueries | None,
    *,
    model: str | None = None,
    not_tasks: Sequence[str] = (),
    beside: pl.DataFrame | None = None,
) -> ReportTables[pl.DataFrame]:
    """The report's tables of the statistics (:func:`calib_frames.comparison.report_tables`).

    With the token rows of ``queries`` (none from statistics files) the perplexity has
    its intervals; ``not_tasks`` are the keys the leaderboard does not pool as tasks.
    """
    with common.stage(
        args, "metrics" + ("" if args.no_uncertainty else ", intervals and noise floor")
    ):
        return report_tables(
            stats,
            sums,
            None if queries is None else queries.losses,
            nll=args.nll,
            tokens=None if queries is None else queries.tokens,
            bytes=None if queries is None else queries.bytes,
            model=model,
            not_tasks=not_tasks,
            beside=beside,
            uncertainty=not args.no_uncertainty,
            correction=args.correction,
            replicates=args.replicates,
            level=args.level,
            seed=args.seed,
        )


def table_keys(stats: pl.DataFrame, perplexity: Frame | None) -> list[str]:
    """The keys of the comparison table: those of the statistics, then the perplexity's own."""
    keys: list[str] = BIN_STATISTICS.keys(stats.schema)
    if perplexity is not None:
        keys += [k for k in PERPLEXITY.keys(perplexity.collect_schema()) if k not in keys]
    return keys


NAME_LIMIT = 48
"""Most characters of a name in a printed table: longer ones keep the part that tells the
names shown apart (:func:`calib_frames.plot.frames.group_labels`); files keep them whole."""


def print_lines(lines: Sequence[tuple[str, str]]) -> None:
    """Print labelled lines (:func:`calib_frames.report.summary.summary_lines`), aligned."""
    width = max((len(label) for label, _ in lines), default=0) + 1
    for label, text in lines:
        print(f"{label + ':':<{width}} {text}")


def _shown_names(result: pl.DataFrame, keys: Sequence[str], rows: int | None) -> pl.DataFrame:
    """``result`` with each long text key shortened among the rows printed.

    The rows printed are all, or with ``rows`` the first and the last half of that many.
    """
    long = [
        key
        for key in keys
        if result.schema[key] == pl.String
        and int(result.get_column(key).str.len_chars().max() or 0) > NAME_LIMIT  # type: ignore[arg-type]
    ]
    if not long:
        return result
    index = pl.int_range(pl.len())
    shown = (
        (index < rows // 2) | (index >= pl.len() - (rows - rows // 2))
        if rows is not None
        else pl.lit(value=True)
    )
    printed = result.filter(shown)
    labels = {
        key: printed.select(key, group_labels(printed, [key], NAME_LIMIT).alias("_label"))
        .drop_nulls(key)
        .unique(key)
        for key in long
    }
    return result.with_columns(
        pl.when(shown)
        .then(
            pl.col(key).replace_strict(
                labels[key].get_column(key), labels[key].get_column("_label"), default=pl.col(key)
            )
        )
        .otherwise(pl.col(key))
        .alias(key)
        for key in long
    )


def print_summary(
    result: pl.DataFrame,
    keys: list[str],
    *,
    title: str,
    all_columns: bool = False,
    columns: Sequence[str] = SUMMARY_COLUMNS,
    rows: int | None = None,
    written: str | None = None,
) -> None:
    """Print ``title``, then the keys and the summary ``columns`` it has (``all_columns``: all).

    Every row, or with ``rows`` at most that many (the first and the last half; the title
    names the file ``written`` that has them all). Names longer than :data:`NAME_LIMIT`
    keep the part that tells the rows printed apart; no shape or type lines.
    """
    shown = (
        result
        if all_columns
        else result.select(*keys, *(name for name in columns if name in result.columns))
    )
    cut = rows is not None and result.height > rows
    count = f"{result.height:,} row{'s' if result.height != 1 else ''}"
    where = f"; {rows} shown, all of them in {written}" if cut else ""
    print(f"\n{title} ({count}{where})")
    with pl.Config(
        tbl_rows=rows if cut else -1,
        tbl_cols=-1,
        tbl_width_chars=10_000,
        float_precision=4,
        fmt_str_lengths=NAME_LIMIT + 40,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
    ):
        print(_shown_names(shown, keys, rows if cut else None))


def run(args: argparse.Namespace) -> int:
    """Run ``compare``."""
    if args.output is not None:
        common.check_output_type(args.output)
    check_uncertainty_arguments(args)
    queries = row_queries(args)
    common.check_outputs([args.output], queries.files)
    stats, sums = collect_statistics(queries, args)
    common.require_rows(stats, queries.prediction_files)
    if sums is not None:
        token_files = [f for f in queries.files if f not in queries.prediction_files]
        common.require_rows(sums, token_files, what="token rows")
    tables = tables_of(args, stats, sums, queries)
    result = tables.comparison
    assert isinstance(result, pl.DataFrame)
    keys = table_keys(stats, tables.perplexity)
    print_lines(summary_lines(result))
    print_summary(
        result,
        keys,
        title=f"Comparison: one row per {' × '.join(keys) or 'group'}",
        all_columns=args.all_columns,
    )
    if args.output is not None:
        common.write_frame(result, args.output)
        print(f"wrote {result.height} rows to {args.output}")
    return 0
