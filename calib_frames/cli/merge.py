"""``calib-frames merge``: fold statistics files into one.

    calib-frames merge STATS… --out STATS.parquet

Each batch is kept once (merging a batch twice does not double-count), the order of the
inputs does not matter for the numbers, and files of other bins, keys or format versions
are refused. The merged file keeps every batch's time and lists the batches in batch
order (batches without a time in their order of first appearance, never sorted by id).
Inputs and ``--out`` may be object-storage URLs (prefixes and globs too); ``--out`` is a
``.parquet`` file.
"""

from __future__ import annotations

import argparse
from typing import Any

from calib_frames.cli import common
from calib_frames.cli.stats import add_allow_future
from calib_frames.storage import merge_statistics_files

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "merge",
        help="fold statistics files into one",
        description="fold statistics files into one",
        epilog="example:\n  calib-frames merge nightly/*.parquet --out all.parquet",
    )
    parser.add_argument(
        "inputs", nargs="+", type=common.location, help="statistics files, folders or URLs"
    )
    parser.add_argument(
        "--out", type=common.location, required=True, help="the merged statistics file (.parquet)"
    )
    add_allow_future(parser)
    common.add_storage_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``merge``."""
    common.check_outputs([args.out], list(args.inputs))
    with common.stage(args, f"merged {len(args.inputs)} input(s)"):  # none with --quiet
        stored = merge_statistics_files(
            args.inputs,
            args.out,
            storage_options=common.storage_options_from(args),
            allow_future=args.allow_future,
        )
    print(
        f"wrote {len(stored.batches)} batch(es), {stored.table.height} rows, keys "
        f"{stored.keys} to {args.out}"
    )
    return 0
