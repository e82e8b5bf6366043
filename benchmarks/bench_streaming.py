#!/usr/bin/env python
"""Benchmark: peak memory and throughput of the full metrics path over large parquet files.

Run from the repository root (see BENCHMARKS.md; the full run writes up to 2 x 16 GiB)::

    nice -n 10 python benchmarks/bench_streaming.py --json benchmarks/results/streaming.json
    python -m benchmarks.bench_streaming --quick        # tiny files, seconds

Part 1, sized datasets (``--gb 1,4,16``): a predictions dataset and a token dataset of about
that many GiB each, as parquet parts of ``--part-gb`` (1 GiB; zstd, row groups of 2^20 rows;
part i drawn with its own seed, like one more night of eval runs). The parts are written
block by block (one block of 2^20 rows in memory at a time) under ``--data-dir``; the 4 GiB
dataset is the 1 GiB one plus three parts, and so on. All parts are deleted at the end unless
``--keep-data``. Each of these runs once per size in a fresh subprocess, its peak RSS read
from ``VmHWM`` after resetting it past the imports:

* ``calibration_metrics``: ``cf.calibration_metrics(pl.scan_parquet(parts), by=["model",
  "task"]).collect()``; checked: the per-group counts add up to the dataset's rows, and
  every group is there;
* ``perplexity``: ``cf.perplexity(pl.scan_parquet(token_parts), by=["model",
  "task"]).collect()``; checked: the token counts add up to the rows, every group is there
  and every perplexity is finite;
* ``floor``: ``pl.scan_parquet(parts).select(<sum of each column>).collect()``, the reader's
  own cost and buffers.

Printed: rows, seconds, M rows/s and peak MB per size, and how the peak grows with the input.
Before writing a size the free disk space is checked: a size is skipped with a message when
less than 2 x (its new parts) + 8 GiB is free; 16 GiB and more also need ``--min-free-gb``
(40 GiB) free.

Part 2, end to end from parquet (``--e2e-sizes 1e7,1e8``, 200 groups; the cached files of
bench_metrics): ``cf.calibration_metrics(...)`` against DuckDB SQL and the naive polars
two-stage plan (the ``METRICS`` peers), best of ``--repeats`` interleaved (1 at 10^8), the
metrics cross-checked to 1e-9, and each method's peak RSS in a fresh subprocess.

The exit status is 1 on a failed check, a mismatch or a failed run.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the ``benchmarks`` package importable
    sys.path.append(str(Path(__file__).resolve().parent.parent))  # last: PYTHONPATH wins

import polars as pl

import calib_frames as cf
from benchmarks import harness, report
from benchmarks.peers import METRICS, Registry
from benchmarks.workload import (
    COLUMNS,
    DATA_DIR,
    KEYS,
    Spec,
    ensure_data,
    ensure_part,
    parquet_source,
    parse_sizes,
)

GIB = 2**30
ROW_BYTES = {"preds": 4 + 4 + 8 + 1, "tokens": 4 + 4 + 8}  # Int32, Int32, Float64, Boolean
SIZED_BLOCK = 2**20
REGISTRY = Registry()
REGISTRY.add(replace(METRICS["calib_frames_metrics"], role="subject", fields=None))
for _name in ("duckdb", "polars_naive"):
    REGISTRY.add(METRICS[_name])
REGISTRY_REF = "benchmarks.bench_streaming:REGISTRY"


# ---------------------------------------------------------------------------------------------
# the runs of part 1 (each in a fresh subprocess: benchmarks.harness.peak_rss)


def _count_column(frame: pl.DataFrame) -> str:
    return "count" if "count" in frame.columns else "n"  # main renames n -> count


def prepare_metrics(payload: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    paths, rows = payload["paths"], payload["rows"]

    def work() -> dict[str, Any]:
        out = cf.calibration_metrics(pl.scan_parquet(paths), by=KEYS).collect()
        seen = int(out[_count_column(out)].sum())
        ok = seen == rows and out.height == payload["groups"]
        return {"rows_seen": seen, "groups_seen": out.height, "ok": ok}

    return work


def prepare_perplexity(payload: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    paths, rows = payload["paths"], payload["rows"]

    def work() -> dict[str, Any]:
        out = cf.perplexity(pl.scan_parquet(paths), by=KEYS).collect()
        seen = int(out["tokens"].sum())
        finite = bool(out["perplexity"].is_finite().all())
        ok = seen == rows and finite and out.height == payload["groups"]
        return {"rows_seen": seen, "groups_seen": out.height, "ok": ok}

    return work


def prepare_floor(payload: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    paths, rows = payload["paths"], payload["rows"]

    def work() -> dict[str, Any]:
        sums = [pl.col(name).sum() for name in COLUMNS]
        out = pl.scan_parquet(paths).select(sums, rows=pl.len()).collect()
        return {"rows_seen": int(out["rows"][0]), "ok": int(out["rows"][0]) == rows}

    return work


RUNS = {
    "calibration_metrics": ("preds", "benchmarks.bench_streaming:prepare_metrics"),
    "perplexity": ("tokens", "benchmarks.bench_streaming:prepare_perplexity"),
    "floor": ("preds", "benchmarks.bench_streaming:prepare_floor"),
}


def free_gib(path: Path) -> float:
    probe = path
    while not probe.exists():
        probe = probe.parent
    return shutil.disk_usage(probe).free / GIB


def sized(args: argparse.Namespace) -> tuple[list[dict[str, Any]], int]:
    """Part 1: for each size, write the missing parts, measure; at the end delete the parts."""
    print("\n## Part 1: the full metrics path over sized parquet datasets\n")
    results: list[dict[str, Any]] = []
    failed = 0
    parts: dict[str, list[tuple[Path, int]]] = {"preds": [], "tokens": []}
    try:
        for gb in sorted(float(x) for x in args.gb.split(",") if x.strip()):
            n_parts = max(1, round(gb / args.part_gb))
            missing = (n_parts - len(parts["preds"])) * args.part_gb
            free = free_gib(args.data_dir)
            need = 2 * missing + (8 if gb >= 1 else 0.5)
            if gb >= 16:
                need = max(need, args.min_free_gb)
            print(f"{gb:g} GiB ({n_parts} parts): {free:.0f} GiB free on {args.data_dir}")
            if free < need:
                print(f"!! skipping {gb:g} GiB: {free:.0f} GiB free, {need:.0f} GiB needed")
                results.append({"gb": gb, "skipped": f"{free:.0f} GiB free, {need:.0f} needed"})
                continue
            for kind in ("preds", "tokens"):
                t0 = time.perf_counter()
                while len(parts[kind]) < n_parts:
                    path, rows, _ = ensure_part(
                        len(parts[kind]),
                        args.part_gb,
                        args.models,
                        args.tasks,
                        kind=kind,
                        seed=args.seed,
                        data_dir=args.data_dir,
                        block=SIZED_BLOCK,
                    )
                    parts[kind].append((path, rows))
                total = sum(r for _, r in parts[kind])
                print(
                    f"  {kind}: {n_parts} parts, {total:,} rows, "
                    f"{sum(p.stat().st_size for p, _ in parts[kind]) / GIB:.2f} GiB "
                    f"({time.perf_counter() - t0:.0f} s to write the new parts)",
                    flush=True,
                )
            for name, (kind, target) in RUNS.items():
                if name not in args.runs.split(","):
                    continue
                files = parts[kind][:n_parts]
                rows = sum(r for _, r in files)
                size = sum(p.stat().st_size for p, _ in files) / GIB
                payload = {
                    "paths": [str(p.resolve()) for p, _ in files],
                    "rows": rows,
                    "groups": args.models * args.tasks,
                }
                out = harness.peak_rss(target, payload)
                row = {"gb": gb, "run": name, "parts": n_parts, "rows": rows, "file_gib": size}
                row.update(out)
                if "error" not in out:
                    row["rows_per_s"] = rows / out["seconds"]
                    speed = rows / out["seconds"] / 1e6
                    verdict = "ok" if out.get("ok") else "FAILED"
                    print(
                        f"  {name}: {out['seconds']:.1f} s, {speed:.1f} M rows/s, "
                        f"peak {out['peak_mb']:.0f} MB, check {verdict}  (load {report.load()})",
                        flush=True,
                    )
                failed += "error" in out or not out.get("ok", False)
                results.append(row)
                report.save_json(args.json, quiet=True, partial=True, sized=results)
    finally:
        if not args.keep_data:
            for path, _ in parts["preds"] + parts["tokens"]:
                path.unlink(missing_ok=True)
    return results, failed


def print_sized(results: list[dict[str, Any]]) -> None:
    rows = [r for r in results if "run" in r]
    if not rows:
        return
    print("\n### Peak RSS and throughput vs input size (fresh subprocess per run)\n")
    body = []
    for r in sorted(rows, key=lambda r: (list(RUNS).index(r["run"]), r["gb"])):
        if "error" in r:
            body.append([r["run"], f"{r['gb']:g}", "", r["rows"], "error", "", "", r["error"][:60]])
            continue
        decoded = r["rows"] * ROW_BYTES[RUNS[r["run"]][0]] / GIB
        body.append(
            [
                r["run"],
                f"{r['file_gib']:.2f} ({r['parts']})",
                f"{decoded:.2f}",
                f"{r['rows']:,}",
                f"{r['seconds']:.1f}",
                f"{r['rows_per_s'] / 1e6:.1f}",
                f"{r['peak_mb']:.0f}",
                "ok" if r.get("ok") else "**FAILED**",
            ]
        )
    head = [
        "run",
        "parquet GiB (parts)",
        "decoded GiB",
        "rows",
        "seconds",
        "M rows/s",
        "peak RSS MB",
        "check",
    ]
    print(report.markdown(head, body, "lrrrrrrl"))
    print(
        "\ndecoded GiB: the columns read, as they would take in memory "
        "(predictions 17 bytes a row, tokens 16)."
    )
    for name in dict.fromkeys(r["run"] for r in rows):
        points = sorted(
            (r["file_gib"], r["peak_mb"]) for r in rows if r["run"] == name and "peak_mb" in r
        )
        if len(points) >= 2:
            (g0, p0), (g1, p1) = points[0], points[-1]
            print(f"- {name}: peak x{p1 / p0:.2f} for x{g1 / g0:.1f} input")
    for r in results:
        if "skipped" in r:
            print(f"- {r['gb']:g} GiB skipped: {r['skipped']}")


# ---------------------------------------------------------------------------------------------
# part 2


def end_to_end(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    print("\n## Part 2: end to end from parquet against DuckDB and the naive polars plan")
    peers = REGISTRY.select([n for n in REGISTRY.names() if n != REGISTRY.reference])
    runs: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    failed = 0
    for rows in parse_sizes(args.e2e_sizes):
        spec = Spec(rows, args.models, args.tasks, args.bins, args.seed)
        path, made = ensure_data(spec, args.data_dir)
        if made:
            print(f"\n(wrote {path.name} in {made:.1f} s)")
        repeats = 1 if rows >= 1e8 else args.repeats
        done, bad = harness.run_sources(
            spec, path, ["parquet"], peers, repeats, check=None, highlight=("ece", "brier")
        )
        runs += done
        failed += bad
        if args.e2e_memory:
            src = parquet_source(spec, path)
            for peer in peers:
                peak = harness.peer_peak_rss(REGISTRY_REF, peer.name, src)
                memory.append({"rows": rows, "groups": spec.groups, "method": peer.name, **peak})
                failed += "error" in peak
    return runs, memory, failed


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--gb", default="1,4,16", help="sizes of the part-1 datasets in GiB")
    ap.add_argument("--part-gb", type=float, default=1.0, help="GiB per parquet part file")
    ap.add_argument("--runs", default="calibration_metrics,perplexity,floor")
    ap.add_argument("--e2e-sizes", default="1e7,1e8", help="rows of part 2 ('' to skip)")
    ap.add_argument("--e2e-memory", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--tasks", type=int, default=10)
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--min-free-gb", type=float, default=40.0)
    ap.add_argument("--keep-data", action="store_true", help="keep the part-1 parquet parts")
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes (0.01, 0.02 GiB in parts of 0.01; 1e5 rows end to end, 1 repeat)",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.gb, args.part_gb, args.e2e_sizes, args.repeats = "0.01,0.02", 0.01, "1e5", 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    env = harness.environment()
    report.print_header("calib_frames streaming benchmark", env)
    t0 = time.perf_counter()
    results, failed = sized(args) if args.gb.strip() else ([], 0)
    print_sized(results)
    runs, memory, bad = end_to_end(args) if args.e2e_sizes.strip() else ([], [], 0)
    failed += bad
    summary = report.summary(runs, reference="calib_frames_metrics") if runs else []
    report.print_memory(memory)
    print(f"\nload average at end: {report.load()}; {time.perf_counter() - t0:.0f} s in all")
    if failed:
        print(f"\n!! {failed} MISMATCH(ES) OR FAILURE(S) - see above")
    report.save_json(
        args.json, environment=env, sized=results, runs=runs, memory=memory, summary=summary
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
