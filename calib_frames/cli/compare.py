"""``calib-frames compare``: print the comparison table (and optionally write it).

calib-frames compare PREDICTIONS… [--token-file TOKENS…] --by model,task [--bins 10]
                     [--tokens COL | --token-level] [--output table.csv]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.cli import common
from calib_frames.cli.rows import add_prediction_arguments, collect_statistics, row_queries
from calib_frames.comparison.table import comparison_table
from calib_frames.metrics.calibration import metrics_from_bin_statistics
from calib_frames.metrics.tokens import perplexity_from_nll_sums

__all__ = ["add_parser", "build_table", "run"]

SUMMARY = (
    "count",
    "accuracy",
    "overconfidence",
    "ece",
    "ece_ci_low",
    "ece_ci_high",
    "ece_noise_floor",
    "verdict",
    "mce",
    "brier",
    "log_loss",
    "perplexity",
    "bits_per_byte",
)


def add_parser(commands: Any) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "compare",
        help="print the per-group comparison table",
        description="print the per-group comparison table",
        epilog=(
            "example:\n  calib-frames compare data/synthetic_predictions.parquet \\\n    "
            "--token-file data/synthetic_tokens.parquet --by model,task"
        ),
    )
    add_prediction_arguments(parser)
    parser.add_argument("--output", type=Path, help="write the table (.csv, .parquet, .json, .md)")
    parser.add_argument(
        "--all-columns",
        action="store_true",
        help="print every column (default: keys and a summary; --output always has all)",
    )
    parser.set_defaults(run=run)


def build_table(args: argparse.Namespace) -> tuple[pl.DataFrame, list[str], list[Path]]:
    """The comparison table of the arguments, its keys, and every input file."""
    queries = row_queries(args)
    common.check_outputs([args.output], queries.files)
    stats, sums = collect_statistics(queries, args)
    common.require_rows(stats, queries.prediction_files)
    if sums is not None:
        token_files = [f for f in queries.files if f not in queries.prediction_files]
        common.require_rows(sums, token_files, what="token rows")
    table = metrics_from_bin_statistics(stats)
    keys = list(queries.by)
    if sums is not None:
        table = comparison_table(table, perplexity_from_nll_sums(sums))
        keys += [k for k in queries.tokens_by if k not in keys]
    return table, keys, queries.files


def print_summary(
    result: pl.DataFrame,
    keys: list[str],
    *,
    all_columns: bool = False,
    columns: Sequence[str] = SUMMARY,
    rows: int | None = None,
    written: str | None = None,
) -> None:
    """Print the keys and the summary ``columns`` it has (every column with ``all_columns``).

    Every row, or with ``rows`` at most that many (the first and the last half, and a line
    naming the file ``written`` that has them all).
    """
    shown = (
        result
        if all_columns
        else result.select(*keys, *(name for name in columns if name in result.columns))
    )
    cut = rows is not None and result.height > rows
    with pl.Config(
        tbl_rows=rows if cut else -1, tbl_cols=-1, tbl_width_chars=10_000, float_precision=4
    ):
        print(shown)
    if cut:
        print(f"{result.height:,} rows, {rows} of them shown; all of them in {written}")


def run(args: argparse.Namespace) -> int:
    """Run ``compare``."""
    if args.output is not None:
        common.check_output_type(args.output)
    result, keys, _ = build_table(args)
    print_summary(result, keys, all_columns=args.all_columns)
    if args.output is not None:
        common.write_frame(result, args.output)
        print(f"wrote {result.height} rows to {args.output}")
    return 0
