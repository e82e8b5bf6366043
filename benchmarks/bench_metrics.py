#!/usr/bin/env python
"""Benchmark: calib_frames' grouped calibration metrics side by side with peers, in one run.

Run from the repository root (see BENCHMARKS.md)::

    python benchmarks/bench_metrics.py                                   # full workload
    python -m benchmarks.bench_metrics --quick                           # under a minute

The workload is :mod:`benchmarks.workload` (predictions keyed by ``model`` x ``task``), the
methods are the ``METRICS`` registry of :mod:`benchmarks.peers` (their one-line descriptions:
``--list``), the timing and cross-check are :mod:`benchmarks.harness`.

Output: for each (rows, groups, source) best-of-N wall-clock seconds per method (repeats
interleaved in one process), ``ratio`` = method seconds / calib_frames seconds (> 1:
calib_frames is faster), calib_frames / floor, and the cross-check against calib_frames (max
abs difference of per-(group, bin) counts, per-group ECE and Brier and of every other output;
any count difference or other difference > 1e-9 is a MISMATCH and the exit status is 1). For
the parquet source, the peak RSS of a fresh subprocess per method and size
(``--memory-methods``). ``--json PATH`` saves everything. Targets: BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the ``benchmarks`` package importable
    sys.path.append(str(Path(__file__).resolve().parent.parent))  # last: PYTHONPATH wins

from benchmarks import harness, report
from benchmarks.peers import METRICS
from benchmarks.workload import (
    DATA_DIR,
    Spec,
    ensure_data,
    parquet_source,
    parse_groups,
    parse_sizes,
)

REGISTRY = "benchmarks.peers:METRICS"
DEFAULT_METHODS = [
    "floor",
    "floor_read",
    "numpy_whole",
    "numpy_chunked",
    "duckdb",
    "polars_naive",
    "polars_exactbin",
    "sklearn_loop",
]
QUICK = {"sizes": "1e5", "groups": "200", "repeats": 1, "memory_methods": "floor,calib_frames"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        epilog="Workload and methods: benchmarks/workload.py, benchmarks/peers.py, BENCHMARKS.md.",
    )
    ap.add_argument("--sizes", default="1e6,1e7,1e8", help="rows, comma-separated (1e6,1e7,1e8)")
    ap.add_argument(
        "--groups", default="200,2000", help="group counts: 200 (=20x10), 2000 (=50x40) or AxB"
    )
    ap.add_argument(
        "--sources", default="memory,parquet", help="memory,memory-str (String keys),parquet"
    )
    ap.add_argument(
        "--methods",
        default=",".join(DEFAULT_METHODS),
        help="methods to time (calib_frames is always included); --list shows them all",
    )
    ap.add_argument("--list", action="store_true", help="list the methods and exit")
    ap.add_argument("--repeats", type=int, default=3, help="best of N (default 3)")
    ap.add_argument(
        "--repeats-large", type=int, default=1, help="repeats from --large-rows rows on (default 1)"
    )
    ap.add_argument("--large-rows", type=float, default=1e8)
    ap.add_argument(
        "--sklearn-max-rows",
        type=float,
        default=1e7,
        help="skip sklearn_loop above this many rows (default 1e7)",
    )
    ap.add_argument(
        "--memory-methods",
        default="floor,calib_frames,polars_naive,duckdb,numpy_chunked",
        help="parquet peak-RSS subprocess runs; empty string to skip",
    )
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--chunk-rows", type=int, default=2**16)
    ap.add_argument("--row-group-rows", type=int, default=2**20)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ap.add_argument("--json", type=Path, default=None, help="save all results as JSON here")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: 1e5 rows x 200 groups, 1 repeat, memory runs of floor and "
        "calib_frames only (explicit options still win)",
    )
    args = ap.parse_args(argv)
    if args.quick:
        given = {a.split("=")[0] for a in (argv if argv is not None else sys.argv[1:])}
        for key, value in QUICK.items():
            if "--" + key.replace("_", "-") not in given:
                setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for peer in METRICS:
            print(f"{peer.name:22s} {peer.role:9s} {peer.what}")
        return 0
    peers = METRICS.select([n.strip() for n in args.methods.split(",") if n.strip()])
    sizes, groups = parse_sizes(args.sizes), parse_groups(args.groups)
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    memory_methods = [m.strip() for m in args.memory_methods.split(",") if m.strip()]
    env = harness.environment()
    report.print_header("calib_frames grouped-metrics benchmark", env)
    print(
        "\nratio = method seconds / calib_frames seconds (> 1: calib_frames is faster); "
        f"best of {args.repeats} interleaved repeats ({args.repeats_large} from "
        f"{args.large_rows:.0e} rows). Peers bin with floor(p*M) clipped (calib_frames uses "
        "exact edges k/M); random doubles essentially never lie on an edge, so they agree."
    )

    runs: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    failed = 0
    for models, tasks in groups:
        for rows in sizes:
            spec = Spec(rows, models, tasks, args.bins, args.seed)
            path, made = ensure_data(spec, args.data_dir, args.row_group_rows)
            if made:
                print(f"\n(wrote {path.name} in {made:.1f} s)")
            repeats = args.repeats_large if rows >= args.large_rows else args.repeats
            active = [
                p for p in peers if not (p.name == "sklearn_loop" and rows > args.sklearn_max_rows)
            ]
            done, bad = harness.run_sources(
                spec, path, sources, active, repeats, chunk_rows=args.chunk_rows
            )
            runs += done
            failed += bad
            if "parquet" in sources:
                src = parquet_source(spec, path, args.chunk_rows)
                for name in memory_methods:
                    if name not in METRICS or not METRICS[name].available():
                        print(f"(no memory run of {name}: unknown or not installed)")
                        continue
                    peak = harness.peer_peak_rss(REGISTRY, name, src)
                    memory.append({"rows": rows, "groups": spec.groups, "method": name, **peak})
                    failed += "error" in peak
    report.print_memory(memory)
    summary = report.summary(runs)
    print(f"\nload average at end: {report.load()}")
    if failed:
        print(f"\n!! {failed} MISMATCH(ES) OR FAILURE(S) - see the tables above")
    report.save_json(args.json, environment=env, runs=runs, memory=memory, summary=summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
