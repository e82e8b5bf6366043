"""``calib-frames report --from-stats … --over batch``: tonight against a reference window.

    calib-frames report --from-stats STATS… --over batch [--baseline A..B] [--batch ID]
                        [--last N] [--fail-on-change] --out DIR

What a nightly job needs from the statistics files, reading no raw row:

* **the change**: every batch after the reference window (``--baseline A..B``: batch
  ids or dates, inclusive, in batch order; default the first batch) against the window
  pooled (:func:`calib_frames.estimators.calibration_change`): per group whether it
  changed tonight, since when (the onset), by how much with its interval and corrected
  p-value. ``changes.parquet``/``.csv`` hold one row per group, ``changes.json`` the
  changed groups in compact form for a job to forward;
* **tonight's figures**: the comparison table and leaderboard are those of the last
  batch (``--batch ID`` reads another batch as tonight), not pooled over every night;
* **the figures per batch**: ``batches.parquet``/``.csv`` and the trend charts;
* ``--fail-on-change``: exit status 3 when a group changed tonight (0 when none did),
  so that cron, Airflow or a CI job fails loudly.

stdout and the page open with what changed and since when, then tonight's leaderboard,
then the trends. The batch order is never guessed: by the stored batch times, else
(some batch without a time) in the order first read, which the report says.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.cli import common
from calib_frames.exceptions import ArgumentError
from calib_frames.storage import StoredStatistics, atomic_write, read_statistics

__all__ = [
    "CHANGED_STATUS",
    "CHANGE_REPLICATES",
    "FILES",
    "OverTime",
    "add_arguments",
    "check_arguments",
    "over_time",
    "print_over_time",
    "read_stored",
    "status",
    "tonight_statistics",
    "write_over_time",
]

CHANGED_STATUS = 3
"""The exit status of ``--fail-on-change`` when a group changed tonight."""

CHANGE_REPLICATES = 200
"""Default ``--change-replicates``: fewer than the API's 1000, because a nightly job pays
for them at every run (1,000 groups: about 4 s per 100 replicates on a loaded 2-core
machine) and they make only the ECE difference's interval, not a verdict."""

FILES = ("batches.parquet", "batches.csv", "changes.parquet", "changes.csv", "changes.json")
"""The files ``--over batch`` writes (the change files from the first batch after the
window on)."""


@dataclass(frozen=True)
class OverTime:
    """The tables of ``--over batch``."""

    batches: pl.DataFrame
    """:func:`~calib_frames.estimators.metrics_over_batches` of the window."""
    changes: pl.DataFrame | None
    """:func:`~calib_frames.estimators.calibration_change` (None: no batch after the
    reference window yet)."""
    tonight: str
    """The batch read as tonight."""
    baseline: list[str]
    """The reference window's batch ids."""
    notes: list[str]
    """What the reader must know (batch order from the files, nothing to compare yet)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--over``, ``--baseline``, ``--last``, ``--batch`` and the other nightly flags."""
    parser.add_argument(
        "--over",
        choices=["batch"],
        default=None,
        help="with --from-stats: every batch after the reference window against it, the "
        "figures per batch, tonight's tables",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="A..B",
        help="with --over batch: the reference window, batch ids or dates A to B "
        "(inclusive, in batch order; default: the first batch)",
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
        help="with --over batch: the batch read as tonight (default: the last)",
    )
    parser.add_argument(
        "--change-replicates",
        type=int,
        default=CHANGE_REPLICATES,
        help="bootstrap replicates of tonight's ECE-difference interval (the verdicts are "
        "closed form; this interval costs groups × bins × replicates)",
    )
    parser.add_argument(
        "--fail-on-change",
        action="store_true",
        help=f"with --over batch: exit with status {CHANGED_STATUS} when a group changed "
        "tonight beyond noise",
    )
    parser.add_argument(
        "--allow-future",
        action="store_true",
        help="accept batch times more than a day in the future (refused by default)",
    )


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse what does not go together, before anything is read."""
    if args.change_replicates < 1:
        raise ArgumentError(f"--change-replicates must be >= 1, got {args.change_replicates}")
    if (args.over or args.last is not None) and not args.from_stats:
        raise ArgumentError("--over and --last read statistics files: give --from-stats")
    for flag, value in (
        ("--batch", args.batch),
        ("--baseline", args.baseline),
        ("--fail-on-change", args.fail_on_change or None),
    ):
        if value is not None and not args.over:
            raise ArgumentError(f"{flag} goes with --over batch")
    if args.last is not None and args.last < 1:
        raise ArgumentError(f"--last must be >= 1, got {args.last}")


def read_stored(args: argparse.Namespace, paths: list[str]) -> StoredStatistics:
    """The statistics files read once (object storage too), the ``--last`` latest kept."""
    stored = read_statistics(
        *paths,
        storage_options=common.storage_options_from(args),
        allow_future=args.allow_future,
    )
    return stored if args.last is None else stored.latest(args.last)


def tonight_statistics(args: argparse.Namespace, stored: StoredStatistics) -> pl.DataFrame:
    """The summed statistics the tables report: tonight's with ``--over batch``, else all."""
    if not args.over:
        return stored.merged()
    tonight = _tonight(args, stored)
    from calib_frames.nll import merge_nll_sums
    from calib_frames.stats import merge_bin_statistics

    merge = merge_bin_statistics if stored.kind == "bin_statistics" else merge_nll_sums
    merged = merge(stored.table.filter(pl.col("batch_id") == tonight), by=stored.keys)
    assert isinstance(merged, pl.DataFrame)
    return merged


def _tonight(args: argparse.Namespace, stored: StoredStatistics) -> str:
    order = stored.batch_order
    if args.batch is None:
        return order[-1]
    if args.batch not in order:
        raise ArgumentError(
            f"--batch {args.batch!r} is not among the {len(order)} batches (the last: "
            f"{', '.join(order[-5:])})"
        )
    return str(args.batch)


def over_time(
    args: argparse.Namespace, stored: StoredStatistics, sums: StoredStatistics | None
) -> OverTime:
    """The figures per batch and the change of every batch after the reference window."""
    from calib_frames.estimators.drift import (
        baseline_window,
        calibration_change,
        metrics_over_batches,
    )

    tonight = _tonight(args, stored)
    order = stored.batch_order[: stored.batch_order.index(tonight) + 1]
    baseline = baseline_window(stored, args.baseline)
    notes = []
    if not stored.timed:
        untimed = sum(batch not in stored.batch_times for batch in stored.batch_order)
        notes.append(
            f"{untimed} of {len(stored.batch_order)} batches have no batch time: the batch "
            "order is the order in which the files list them (never guessed from ids)"
        )
    batches = metrics_over_batches(
        stored, sums, uncertainty=not args.no_uncertainty, level=args.level
    ).filter(pl.col("batch_id").is_in(order))
    if stored.batch_order.index(tonight) <= stored.batch_order.index(baseline[-1]):
        return OverTime(batches, None, tonight, baseline, notes)  # nothing to compare yet
    changes = calibration_change(
        stored,
        baseline=(baseline[0], baseline[-1]),
        batch=tonight,
        correction=_correction(args),
        replicates=args.change_replicates,
        level=args.level,
        seed=args.seed,
    )
    return OverTime(batches, changes, tonight, baseline, notes)


def _correction(args: argparse.Namespace) -> Any:
    """``--correction`` where the command has it (BH by default)."""
    return getattr(args, "correction", None) or "bh"


def write_over_time(over: OverTime | None, out: Path) -> list[str]:
    """``batches.*`` and, with a change table, ``changes.*`` and ``changes.json``."""
    if over is None:
        return []
    written = []
    for name in FILES[:2]:
        common.write_frame(over.batches, out / name)
        written.append(name)
    if over.changes is not None:
        for name in FILES[2:4]:
            common.write_frame(over.changes, out / name)
            written.append(name)
        text = json.dumps(alert(over), indent=1, default=str) + "\n"
        atomic_write(out / FILES[4], lambda tmp: tmp.write_text(text, encoding="utf-8"))
        written.append(FILES[4])
    return written


def alert(over: OverTime) -> dict[str, Any]:
    """``changes.json``: tonight, the window, and the changed groups in a few fields each."""
    assert over.changes is not None
    changes = over.changes
    keys = changes.columns[: changes.columns.index("batch_id")]
    numbers = [
        f"{m}_{s}" for m in ("accuracy", "ece", "brier") for s in ("difference", "p_adjusted")
    ]
    changed = changes.filter(pl.col("changed")).select(
        *keys, "onset", pl.col("onset_time").dt.to_string("%Y-%m-%dT%H:%M:%S%z"), "verdict",
        *numbers,
    )  # fmt: skip
    return {
        "batch_id": over.tonight,
        "baseline": [over.baseline[0], over.baseline[-1]],
        "groups": changes.height,
        "changed_groups": changed.height,
        "changed": changed.to_dicts(),
    }


def print_over_time(over: OverTime, *, rows: int) -> None:
    """Tonight first: what changed and since when (at most ``rows`` groups), or why nothing."""
    for note in over.notes:
        print(f"calib-frames: {note}", file=sys.stderr)
    window = f"{over.baseline[0]}..{over.baseline[-1]}"
    if over.changes is None:
        print(
            f"tonight {over.tonight}: no batch after the reference window {window} yet, "
            "nothing to compare with it"
        )
        return
    changes = over.changes
    changed = changes.filter(pl.col("changed"))
    tested = changes.select(pl.col("tested_batches", "baseline_batches").max()).row(0)
    print(
        f"tonight {over.tonight} against the reference window {window} "
        f"({tested[1]} batch(es); {tested[0]} batch(es) tested): "
        f"{changed.height} of {changes.height} group(s) changed beyond noise"
    )
    if changed.is_empty():
        return
    keys = changes.columns[: changes.columns.index("batch_id")]
    shown = changed.sort("onset_time", "onset", nulls_last=True).select(
        *keys,
        "onset",
        pl.col("onset_time").dt.strftime("%Y-%m-%d").alias("since"),
        "verdict",
    )
    with pl.Config(
        tbl_rows=rows, tbl_cols=-1, tbl_width_chars=10_000, fmt_str_lengths=200,
        tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True,
    ):  # fmt: skip
        print(shown)
    if changed.height > rows:
        print(f"{changed.height} changed groups, {rows} of them shown; all in changes.json")


def status(args: argparse.Namespace, over: OverTime | None) -> int:
    """The exit status: :data:`CHANGED_STATUS` with ``--fail-on-change`` and a change."""
    changes = None if over is None else over.changes
    if args.fail_on_change and changes is not None and changes["changed"].any():
        return CHANGED_STATUS
    return 0
