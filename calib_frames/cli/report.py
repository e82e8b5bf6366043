"""``calib-frames report``: every output of one evaluation in a directory.

    calib-frames report PREDICTIONS… --by model,task --out DIR [--token-file TOKENS…]
    calib-frames report --from-stats STATS… [--nll-stats NLL…] --out DIR

Prints the summary table and writes ``comparison.parquet``, ``comparison.csv``,
``comparison.json``, ``comparison.md`` (the per-group table) and
``bin_statistics.parquet`` into DIR (created if its parent exists), each atomically.
With ``--from-stats`` it reports from merged statistics files without touching raw rows.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.cli import common
from calib_frames.cli.compare import print_summary
from calib_frames.cli.rows import add_prediction_arguments, collect_statistics, row_queries
from calib_frames.compare import comparison_table
from calib_frames.exceptions import ArgumentError
from calib_frames.metrics import metrics_from_bin_statistics
from calib_frames.perplexity import perplexity_from_nll_sums
from calib_frames.schema import METRICS, PERPLEXITY
from calib_frames.storage import read_statistics

__all__ = ["add_parser", "run"]

TABLES = ("comparison.parquet", "comparison.csv", "comparison.json", "comparison.md")


def add_parser(commands: Any) -> None:
    """Register the subcommand."""
    parser = commands.add_parser("report", help="write tables, HTML report and charts")
    add_prediction_arguments(parser, inputs_required=False)
    parser.add_argument("--out", type=Path, required=True, help="output directory (must exist)")
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
    parser.set_defaults(run=run)


def _outputs(out: Path) -> list[Path]:
    """The files ``report`` writes; DIR is created if its parent exists."""
    if out.exists() and not out.is_dir():
        raise ArgumentError(f"--out {out}: exists and is not a directory")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise ArgumentError(f"--out {out}: directory {parent} does not exist")
    out.mkdir(exist_ok=True)
    return [out / name for name in (*TABLES, "bin_statistics.parquet")]


def run(args: argparse.Namespace) -> int:
    """Run ``report``."""
    outputs = _outputs(args.out)
    if args.from_stats:
        if args.inputs or args.token_file:
            raise ArgumentError("--from-stats reports from statistics; give no row inputs")
        files = [Path(p) for p in (*args.from_stats, *args.nll_stats)]
        common.check_outputs(outputs, files)
        stats = read_statistics(*args.from_stats).merged()
        table = metrics_from_bin_statistics(stats)
        if args.nll_stats:
            table = comparison_table(
                table, perplexity_from_nll_sums(read_statistics(*args.nll_stats).merged())
            )
    else:
        if not args.inputs:
            raise ArgumentError("report needs prediction inputs or --from-stats")
        queries = row_queries(args)
        common.check_outputs(outputs, queries.files)
        stats, sums = collect_statistics(queries, args)
        table = metrics_from_bin_statistics(stats)
        if sums is not None:
            table = comparison_table(table, perplexity_from_nll_sums(sums))
    result = table if isinstance(table, pl.DataFrame) else table.collect()
    for path in outputs[: len(TABLES)]:
        common.write_frame(result, path)
    common.write_frame(stats, outputs[-1])
    keys = [c for c in result.columns if c not in METRICS.columns and c not in PERPLEXITY.columns]
    print_summary(result, keys)
    print(f"wrote {result.height} groups to {args.out}: {', '.join(p.name for p in outputs)}")
    return 0
