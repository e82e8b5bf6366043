"""``calib-frames compare``: print the comparison table (and optionally write it).

calib-frames compare PREDICTIONS… [--token-file TOKENS…] --by model,task [--bins 10]
                     [--tokens COL | --token-level] [--output table.csv]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.cli import common
from calib_frames.compare import comparison_table
from calib_frames.metrics import calibration_metrics
from calib_frames.perplexity import perplexity

__all__ = ["add_parser", "build_table", "run"]

SUMMARY = (
    "count",
    "accuracy",
    "overconfidence",
    "ece",
    "mce",
    "brier",
    "log_loss",
    "perplexity",
    "bits_per_byte",
)


def add_prediction_arguments(parser: argparse.ArgumentParser) -> None:
    """Inputs and column roles shared by compare, report and stats."""
    parser.add_argument("inputs", nargs="+", help="prediction files, globs or directories")
    parser.add_argument(
        "--token-file",
        action="append",
        default=[],
        metavar="PATH",
        help="file(s) of token or sequence NLL rows (repeatable)",
    )
    common.add_input_arguments(parser)
    common.add_binning_arguments(parser)
    parser.add_argument("--confidence", default="confidence", help="confidence column")
    parser.add_argument("--correct", default="correct", help="outcome column (bool or 0/1)")
    parser.add_argument("--weight", default=None, help="row-weight column")
    parser.add_argument("--log-confidence", default=None, help="ln(confidence) column")
    parser.add_argument("--nll", default="nll", help="NLL column (nats) of the token files")
    tokens = parser.add_mutually_exclusive_group()
    tokens.add_argument("--tokens", default=None, metavar="COL", help="token-count column")
    tokens.add_argument(
        "--token-level", action="store_true", help="each token-file row is one token"
    )
    parser.add_argument("--bytes", default=None, metavar="COL", help="byte-count column")
    parser.add_argument("--words", default=None, metavar="COL", help="word-count column")
    parser.add_argument(
        "--tokens-by",
        action="append",
        default=None,
        metavar="KEYS",
        help="group keys of the token files (default: the --by keys they have)",
    )
    parser.add_argument(
        "--engine",
        choices=["streaming", "in-memory", "gpu"],
        default="streaming",
        help="polars engine (gpu falls back to streaming without cudf-polars)",
    )


def add_parser(commands: Any) -> None:
    """Register the subcommand."""
    parser = commands.add_parser("compare", help="print the per-group comparison table")
    add_prediction_arguments(parser)
    parser.add_argument("--output", type=Path, help="write the table (.csv, .parquet, .json, .md)")
    parser.add_argument(
        "--all-columns",
        action="store_true",
        help="print every column (default: keys and a summary; --output always has all)",
    )
    parser.set_defaults(run=run)


def build_table(args: argparse.Namespace) -> tuple[pl.LazyFrame, list[str], list[Path]]:
    """The lazy comparison table of the arguments, its keys, and every input file."""
    by = common.by_from(args.by)
    binning = common.binning_from(args)
    predictions, files = common.scan_inputs(
        args.inputs,
        format=args.format,
        schema=args.schema,
        numeric=[args.confidence, args.weight, args.log_confidence],
    )
    table = calibration_metrics(
        predictions,
        confidence=args.confidence,
        correct=args.correct,
        weight=args.weight,
        log_confidence=args.log_confidence,
        by=by,
        bins=binning,
    )
    keys = list(by)
    if args.token_file:
        tokens, token_files = common.scan_inputs(
            args.token_file,
            format=args.format,
            schema=args.schema,
            numeric=[args.nll, args.tokens, args.bytes, args.words],
        )
        files += token_files
        names = tokens.collect_schema().names()
        tokens_by = (
            common.by_from(args.tokens_by) if args.tokens_by else [k for k in by if k in names]
        )
        ppl = perplexity(
            tokens,
            nll=args.nll,
            tokens=1 if args.token_level else args.tokens,
            bytes=args.bytes,
            words=args.words,
            by=tokens_by,
        )
        table = comparison_table(table, ppl)
        keys += [k for k in tokens_by if k not in keys]
    return table, keys, files


def print_summary(result: pl.DataFrame, keys: list[str], *, all_columns: bool = False) -> None:
    """Print the keys and the summary columns (every column with ``all_columns``)."""
    shown = (
        result
        if all_columns
        else result.select(*keys, *(name for name in SUMMARY if name in result.columns))
    )
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=10_000, float_precision=4):
        print(shown)


def run(args: argparse.Namespace) -> int:
    """Run ``compare``."""
    if args.output is not None:
        common.check_output_type(args.output)
    table, keys, files = build_table(args)
    common.check_outputs([args.output], files)
    result = common.collect(table, engine=args.engine, files=files)
    print_summary(result, keys, all_columns=args.all_columns)
    if args.output is not None:
        common.write_frame(result, args.output)
        print(f"wrote {result.height} rows to {args.output}")
    return 0
