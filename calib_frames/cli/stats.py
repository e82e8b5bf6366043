"""``calib-frames stats``: the mergeable statistics of the inputs, as one batch.

    calib-frames stats PREDICTIONS… --by model,task --out STATS.parquet [--batch-id ID]
                       [--batch-time ISO] [--token-file TOKENS… --nll-out NLL.parquet]

The batch id defaults to a digest of the inputs' names, sizes and modification times, so
that the same input gives the same id and merging it twice counts it once. The batch
time (``--batch-time 2026-12-01`` or a full ISO 8601 time) orders the batches of
``report --from-stats … --over batch``; it defaults to the inputs' newest modification
time (UTC). An empty or unparsable ``--batch-time`` is refused, and so is one more than a
day in the future unless ``--allow-future``. Inputs and ``--out``/``--nll-out`` may be
object-storage URLs (``s3://``, ``gs://``, ``az://``); with inputs there, give
``--batch-id`` and ``--batch-time`` (an object's size and time are not read).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
from pathlib import Path
from typing import Any

from calib_frames.cli import common
from calib_frames.cli.rows import add_prediction_arguments, collect_statistics, row_queries
from calib_frames.exceptions import ArgumentError
from calib_frames.storage import batch_time_of, write_statistics

__all__ = ["add_allow_future", "add_parser", "batch_id_of", "batch_time_from", "run"]


def add_parser(commands: Any) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "stats",
        help="write mergeable statistics (one batch)",
        description="write mergeable statistics (one batch)",
        epilog=(
            "example:\n  calib-frames stats data/synthetic_predictions.parquet --by \\\n    "
            "model,task --out nightly/2026-12-02.parquet"
        ),
    )
    add_prediction_arguments(parser)
    parser.add_argument(
        "--out", type=common.location, required=True, help="bin-statistics parquet file or URL"
    )
    parser.add_argument(
        "--nll-out", type=common.location, default=None, help="NLL-sums parquet file or URL"
    )
    parser.add_argument("--batch-id", default=None, help="batch id (default: from the inputs)")
    parser.add_argument(
        "--batch-time",
        default=None,
        metavar="ISO",
        help="when the batch ran, an ISO 8601 date or time (default: the inputs' newest "
        "modification time)",
    )
    add_allow_future(parser)
    parser.set_defaults(run=run)


def add_allow_future(parser: argparse.ArgumentParser) -> None:
    """``--allow-future``: accept batch times more than a day after now."""
    parser.add_argument(
        "--allow-future",
        action="store_true",
        help="accept batch times more than a day in the future (refused by default: a "
        "mistyped year would stay the last batch)",
    )


def batch_id_of(files: list[Path]) -> str:
    """A stable id of the inputs: a digest of their resolved paths, sizes and mtimes."""
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: str(p.resolve())):
        info = path.stat()
        digest.update(f"{path.resolve()}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def batch_time_from(files: list[Path]) -> str:
    """The default batch time: the newest modification time of the inputs, in UTC."""
    newest = max(path.stat().st_mtime for path in files)
    return batch_time_of(dt.datetime.fromtimestamp(newest, dt.UTC))


def run(args: argparse.Namespace) -> int:
    """Run ``stats``."""
    if args.token_file and args.nll_out is None:
        raise ArgumentError("--token-file needs --nll-out for the NLL sums")
    if args.nll_out is not None and not args.token_file:
        raise ArgumentError("--nll-out needs --token-file")
    for flag, out in (("--out", args.out), ("--nll-out", args.nll_out)):
        if out is not None and not str(out).lower().endswith(".parquet"):
            raise ArgumentError(f"{flag} {out}: statistics files are parquet (.parquet)")
    when = None if args.batch_time is None else batch_time_of(args.batch_time)
    queries = row_queries(args)
    if not queries.binning.additive:
        raise ArgumentError("equal-mass bins are not mergeable: stats needs --binning uniform")
    files = queries.files
    local = [file for file in files if isinstance(file, Path)]
    if len(local) < len(files) and (args.batch_id is None or when is None):
        raise ArgumentError(
            "inputs in object storage: give --batch-id and --batch-time (the defaults come "
            "from local files' sizes and modification times)"
        )
    common.check_outputs([args.out, args.nll_out], files)
    batch = batch_id_of(local) if args.batch_id is None else args.batch_id
    when = batch_time_from(local) if when is None else when
    stats, sums = collect_statistics(queries, args)
    options = {
        "batch_id": batch,
        "batch_time": when,
        "allow_future": args.allow_future,
        "storage_options": common.storage_options_from(args),
    }
    write_statistics(stats, args.out, binning=queries.binning, **options)
    print(f"wrote {stats.height} (group, bin) rows of batch {batch} to {args.out}")
    if sums is not None:
        write_statistics(sums, args.nll_out, **options)
        print(f"wrote {sums.height} NLL-sum rows of batch {batch} to {args.nll_out}")
    return 0
