#!/usr/bin/env python
"""Benchmark: ``calib-frames report`` against ``calib-frames compare`` on the same input.

Both run as a user runs them (``python -m calib_frames …`` in a fresh process, reading the
same parquet file of the synthetic workload, :mod:`benchmarks.workload`), interleaved,
best of ``--repeats``; the table gives their seconds, the ratio report / compare from the
same run, report's peak resident memory (``wait4``'s ``ru_maxrss``) and its exit status. The
commands run from cached bytecode, as an installed package does (a first, untimed run of
each writes it; not with ``--quick``). The report runs with its defaults (tables with
intervals and noise floor, leaderboard, HTML page; no PNG). Two more commands show where
the report's time goes, as ratios to compare from the same run: ``report --no-charts``
(the same tables with intervals and noise floor, no page) and ``python -c "import
altair"`` (what the charts cost before the first one is built). Run from the repository
root::

    .venv/bin/python -m benchmarks.bench_report             # 12, 100 and 2,000 groups
    .venv/bin/python benchmarks/bench_report.py --quick     # 12 and 40 groups, once

Groups are models × tasks: 12 = 3 × 4, 100 = 10 × 10, 2,000 = 2,000 models × 1 task
(a sweep), ``--rows-per-group`` predictions each (default 500; the sweep gets 20). The
check: every run exits 0, and report's comparison table has one row per group.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import environment  # noqa: E402
from benchmarks.workload import DATA_DIR, Spec, ensure_data  # noqa: E402

SIZES = {12: (3, 4, 500), 100: (10, 10, 500), 2000: (2000, 1, 20)}
QUICK = {12: (3, 4, 200), 40: (40, 1, 50)}


def timed(argv: list[str], root: Path = ROOT) -> tuple[float, float, int, str]:
    """Seconds, peak RSS in MiB and exit status of ``python ARGV…`` (the package of the
    checkout ``root``), and its stderr's tail."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    # as an installed package runs: from its cached bytecode (a PYTHONDONTWRITEBYTECODE
    # left in the environment would recompile the package's modules on every start)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(  # from root: ``-m`` puts the folder first on sys.path
            [sys.executable, *argv],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=root,
            env=env,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        err.seek(0)
        tail = err.read()[-500:]
    return seconds, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="12 and 40 groups, one repeat")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="parquet cache")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else SIZES
    repeats = 1 if args.quick else args.repeats
    rows: list[dict[str, Any]] = []
    failed = False
    for groups, (models, tasks, per_group) in sizes.items():
        spec = Spec(rows=groups * per_group, n_models=models, n_tasks=tasks)
        path, _ = ensure_data(spec, args.data_dir)
        best: dict[str, tuple[float, float, int, str]] = {}
        with tempfile.TemporaryDirectory() as folder:
            cli = ["-m", "calib_frames"]
            commands = {
                "compare": [*cli, "compare", str(path), "--by", "model,task"],
                "report": [*cli, "report", str(path), "--by", "model,task", "--out", f"{folder}/r"],
                "tables": [
                    *cli, "report", str(path), "--by", "model,task", "--out", f"{folder}/t",
                    "--no-charts",
                ],
                "altair": ["-c", "import altair"],
            }  # fmt: skip
            if not args.quick:  # untimed: writes the bytecode, warms the page cache
                for command in commands.values():
                    timed(command)
            for _ in range(repeats):
                for name, command in commands.items():  # interleaved
                    result = timed(command)
                    if name not in best or result[0] < best[name][0]:
                        best[name] = result
            table = Path(folder) / "r" / "comparison.parquet"
            height = pl.read_parquet(table).height if table.is_file() else 0
        status = {name: result[2] for name, result in best.items()}
        ok = all(code == 0 for code in status.values()) and height == groups
        failed |= not ok
        row = {
            "groups": groups,
            "rows": spec.rows,
            "compare_s": best["compare"][0],
            "report_s": best["report"][0],
            "ratio": best["report"][0] / best["compare"][0],
            "tables_s": best["tables"][0],
            "altair_s": best["altair"][0],
            "report_peak_mb": best["report"][1],
            "compare_peak_mb": best["compare"][1],
            "exit": status,
            "ok": ok,
        }
        rows.append(row)
        if not ok:
            print(f"  !! {groups} groups FAILED: {status}, {height} rows; {best['report'][3]}")
    print("\n## Summary of ratios (to compare, best of the same run)\n")
    print(
        "| groups | rows | compare s | report s | report / compare | report --no-charts "
        "/ compare | import altair / compare | report peak MiB | ok |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :-: |")
    for r in rows:
        base = r["compare_s"]
        print(
            f"| {r['groups']:,} | {r['rows']:,} | {base:.2f} | {r['report_s']:.2f} "
            f"| {r['ratio']:.1f}× | {r['tables_s'] / base:.1f}× | {r['altair_s'] / base:.1f}× "
            f"| {r['report_peak_mb']:,.0f} | {'yes' if r['ok'] else 'FAILED'} |"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"environment": environment(), "runs": rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
