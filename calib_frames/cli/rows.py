"""The row inputs of ``compare``, ``report`` and ``stats``: arguments, queries, engines.

Prediction files (or evaluation logs, read by :func:`calib_frames.sources.scan_eval_logs`
with their format's default keys) become a lazy bin-statistics query, token files a lazy
NLL-sums query; :func:`collect_statistics` runs them on the chosen engine (polars
streaming, in-memory, GPU with fallback, or Spark for the prediction pass).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from calib_frames.binning import Binning
from calib_frames.cli import common
from calib_frames.exceptions import ArgumentError
from calib_frames.nll import nll_sums
from calib_frames.sources.logs import LogFormat, detect_log_format, scan_eval_logs
from calib_frames.sources.paths import Location
from calib_frames.stats import bin_statistics

__all__ = ["RowQueries", "add_prediction_arguments", "collect_statistics", "row_queries"]


def add_prediction_arguments(
    parser: argparse.ArgumentParser, *, inputs_required: bool = True
) -> None:
    """Inputs and column roles shared by compare, report and stats."""
    parser.add_argument(
        "inputs",
        nargs="+" if inputs_required else "*",
        help="prediction files, globs or directories",
    )
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
    tokens.add_argument(
        "--tokens",
        default=None,
        metavar="COL",
        help="token-count column (default: the column named tokens, if the token files "
        "have one; else give --token-level)",
    )
    tokens.add_argument(
        "--token-level", action="store_true", help="each token-file row is one token"
    )
    parser.add_argument(
        "--bytes", default=None, metavar="COL", help="byte-count column (default: bytes, if any)"
    )
    parser.add_argument(
        "--words", default=None, metavar="COL", help="word-count column (default: words, if any)"
    )
    parser.add_argument(
        "--tokens-by",
        action="append",
        default=None,
        metavar="KEYS",
        help="group keys of the token files (default: the --by keys they have)",
    )
    parser.add_argument(
        "--engine",
        choices=["streaming", "in-memory", "gpu", "spark"],
        default="streaming",
        help="polars engine (gpu falls back to streaming without cudf-polars); spark runs "
        "the prediction pass on the active Spark session",
    )


@dataclass(frozen=True)
class RowQueries:
    """The lazy queries over the row inputs, and what they were built from."""

    stats: pl.LazyFrame
    sums: pl.LazyFrame | None
    files: list[Location]
    prediction_files: list[Location]
    by: list[str]
    tokens_by: list[str]
    binning: Binning
    predictions: pl.LazyFrame | None = None  # the prediction rows the statistics are of
    losses: pl.LazyFrame | None = None  # the token rows the sums are of
    tokens: str | int | None = None
    bytes: str | None = None
    words: str | None = None
    log_format: LogFormat | None = None  # the evaluation-log format of the inputs


def row_queries(args: argparse.Namespace) -> RowQueries:
    """Build (not run) the bin-statistics and NLL-sums queries of the arguments."""
    token_flags = {
        "--tokens-by": args.tokens_by,
        "--tokens": args.tokens,
        "--token-level": args.token_level,
        "--bytes": args.bytes,
        "--words": args.words,
    }
    given = [flag for flag, value in token_flags.items() if value]
    if given and not args.token_file:
        raise ArgumentError(f"{', '.join(given)} describe token files: give --token-file too")
    if args.engine == "spark" and importlib.util.find_spec("pyspark") is None:
        raise ArgumentError(
            "--engine spark needs pyspark, which is not installed: "
            "pip install 'calib-frames[spark]'"
        )
    by = common.by_from(args.by)
    if args.pooled and by:
        raise ArgumentError("--pooled puts every row in one group: give it or --by, not both")
    binning = common.binning_from(args)
    log_confidence = args.log_confidence
    token_format = args.format
    log_format = detect_log_format(args.inputs, format=args.format)
    if log_format is not None:
        if args.engine == "spark":
            raise ArgumentError(
                f"--engine spark reads prediction files; {log_format.name} logs are read by "
                "polars (use --engine streaming or in-memory)"
            )
        logs = scan_eval_logs(args.inputs, format=log_format.name)
        if logs.note is not None:
            print(f"calib-frames: {logs.note}", file=sys.stderr)
        predictions, files = logs.predictions, list[Location](logs.files)
        by = by or log_format.by
        log_confidence = log_confidence or "log_confidence"
        token_format = None
    else:
        roles = {args.confidence: pl.Float64(), args.correct: pl.Boolean()}
        roles.update({c: pl.Float64() for c in (args.weight, args.log_confidence) if c})
        predictions, files = common.scan_inputs(
            args.inputs,
            format=args.format,
            schema=args.schema,
            columns=args.columns,
            on_bad_record=args.on_bad_record,
            roles=roles,
            storage_options=common.storage_options_from(args),
        )
        if not by and not args.pooled:
            raise ArgumentError(
                "give the group keys with --by (e.g. --by model,task): keys are never "
                "guessed; --pooled puts every row in one group"
            )
    stats = bin_statistics(
        predictions,
        confidence=args.confidence,
        correct=args.correct,
        weight=args.weight,
        log_confidence=log_confidence,
        by=by,
        bins=binning,
    )
    sums, tokens_by, all_files = None, [], list(files)
    if args.token_file:
        tokens, token_files = common.scan_inputs(
            args.token_file,
            format=token_format,
            schema=args.schema,
            columns=args.columns,
            on_bad_record=args.on_bad_record,
            roles={
                args.nll: pl.Float64(),
                **{c: pl.Int64() for c in (args.tokens, args.bytes, args.words) if c},
            },
            storage_options=common.storage_options_from(args),
        )
        all_files += token_files
        names = tokens.collect_schema().names()
        count_tokens, count_bytes, count_words = token_counts(args, names)
        tokens_by = (
            common.by_from(args.tokens_by) if args.tokens_by else [k for k in by if k in names]
        )
        sums = nll_sums(
            tokens,
            nll=args.nll,
            tokens=count_tokens,
            bytes=count_bytes,
            words=count_words,
            by=tokens_by,
        )
        return RowQueries(
            stats,
            sums,
            all_files,
            files,
            by,
            tokens_by,
            binning,
            predictions,
            tokens,
            tokens=count_tokens,
            bytes=count_bytes,
            words=count_words,
            log_format=log_format,
        )
    return RowQueries(
        stats, sums, all_files, files, by, tokens_by, binning, predictions, log_format=log_format
    )


def token_counts(
    args: argparse.Namespace, names: list[str]
) -> tuple[str | int | None, str | None, str | None]:
    """``tokens``, ``bytes``, ``words`` of the token files: the flags, else the named columns.

    A column named ``tokens`` (``bytes``, ``words``) is taken as that count when no flag
    names one: the name is the role, so this cannot count something else. Without a
    ``tokens`` column and without ``--token-level`` the library's own rule applies
    (each row one token only when said).
    """
    tokens: str | int | None = 1 if args.token_level else args.tokens
    if tokens is None and "tokens" in names:
        tokens = "tokens"
    byte_count: str | None = args.bytes or ("bytes" if "bytes" in names else None)
    word_count: str | None = args.words or ("words" if "words" in names else None)
    return tokens, byte_count, word_count


def collect_statistics(
    queries: RowQueries, args: argparse.Namespace
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """Run the queries: the bin statistics and (with token files) the NLL sums.

    One progress line on stderr when the pass takes over a second (files, MiB, rows,
    rows/s), on a terminal or not; none with ``--quiet``
    (:func:`calib_frames.cli.common.stage`).
    """
    started = time.perf_counter()
    if args.engine == "spark":
        stats = _spark_statistics(queries, args)
        engine = "streaming"
    else:
        stats = common.collect(queries.stats, engine=args.engine, files=queries.files)
        engine = args.engine
    sums = None
    if queries.sums is not None:
        sums = common.collect(queries.sums, engine=engine, files=queries.files)
    seconds = time.perf_counter() - started
    if common.says_progress(args, seconds):
        rows = int(stats["count"].sum()) + (0 if sums is None else int(sums["count"].sum()))
        size = sum(p.stat().st_size for p in queries.files if isinstance(p, Path)) / 2**20
        print(
            f"calib-frames: read {len(queries.files)} file(s), {size:,.1f} MiB, {rows:,} rows "
            f"in {seconds:.1f} s ({rows / seconds:,.0f} rows/s)",
            file=sys.stderr,
            flush=True,
        )
    return stats, sums


def _spark_statistics(queries: RowQueries, args: argparse.Namespace) -> pl.DataFrame:
    from pyspark.sql import SparkSession

    from calib_frames.stats import spark_bin_statistics

    spark = SparkSession.builder.appName("calib-frames").getOrCreate()
    local = [p for p in queries.prediction_files if isinstance(p, Path)]
    if len(local) < len(queries.prediction_files):
        raise ArgumentError("--engine spark reads local prediction files (not object storage)")
    paths = [str(p) for p in local]
    from calib_frames.sources.paths import FORMATS

    kinds = {args.format or FORMATS[p.suffix.lower()] for p in local}
    if len(kinds) != 1:
        raise ArgumentError("--engine spark reads inputs of one format at a time")
    kind = kinds.pop()
    reader = spark.read
    frame = (
        reader.parquet(*paths)
        if kind == "parquet"
        else reader.json(paths)
        if kind == "jsonl"
        else reader.option("header", True).option("inferSchema", True).csv(paths)
    )
    if queries.sums is not None:
        print(
            "calib-frames: token files are summed on polars (Spark runs the predictions)",
            file=sys.stderr,
        )
    return spark_bin_statistics(
        frame,
        confidence=args.confidence,
        correct=args.correct,
        weight=args.weight,
        log_confidence=args.log_confidence,
        by=queries.by,
        bins=queries.binning,
    )
