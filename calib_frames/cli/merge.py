"""``calib-frames merge``: fold statistics files into one.

    calib-frames merge STATS… --out STATS.parquet

Each batch is kept once (merging a batch twice does not double-count), the order of the
inputs does not matter, and files of other bins, keys or format versions are refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from calib_frames.cli import common
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
    parser.add_argument("inputs", nargs="+", type=Path, help="statistics files")
    parser.add_argument("--out", type=Path, required=True, help="the merged statistics file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``merge``."""
    common.check_outputs([args.out], list(args.inputs))
    stored = merge_statistics_files(args.inputs, args.out)
    print(
        f"wrote {len(stored.batches)} batch(es), {stored.table.height} rows, keys "
        f"{stored.keys} to {args.out}"
    )
    return 0
