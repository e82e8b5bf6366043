#!/usr/bin/env python
"""Benchmark: the peak memory of ``calib-frames report`` against ``compare`` on the same input.

Four commands run as a user runs them (``python -m calib_frames …`` in a fresh process) on
the checkpoint sweep of ``data/make_scale_inputs.py`` (2,000 models × 2 tasks, long
names): ``compare --no-uncertainty``, ``compare`` (which computes the intervals and the
noise floor too), ``report --no-uncertainty`` and ``report`` (tables, leaderboard, HTML
page with the risk–coverage curves; no PNG). The table gives each one's peak resident
memory (``wait4``'s ``ru_maxrss``) and seconds, and the two ratios the target reads:
``report`` / ``compare`` (the same computations) and ``report --no-uncertainty`` /
``compare --no-uncertainty``. Run from the repository root::

    .venv/bin/python -m benchmarks.bench_report_memory             # 120 and 8,000 rows a group
    .venv/bin/python benchmarks/bench_report_memory.py --quick     # 50 models, small
    .venv/bin/python -m benchmarks.bench_report_memory --root /tmp/before   # another checkout

The check: every run exits 0. ``--root`` runs the package of another checkout (its
``calib_frames`` folder), to measure a change before and after on the same inputs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_report import timed  # noqa: E402
from benchmarks.harness import environment  # noqa: E402

SIZES = {"sweep": (2000, 120), "sweep, 8,000 a group": (2000, 8000)}
"""Name → (models, predictions per model × task) of ``data/make_scale_inputs.py``'s inputs
(2,000 models: the sweep of 2 tasks)."""
QUICK = {"50 models": (50, 20)}


def _input(data: Path, models: int, per_group: int) -> Path:
    """The predictions of ``data/make_scale_inputs.py`` (made in a process of their own: a
    child forked from a process holding them would count them in its peak)."""
    path = data / f"m{models}x{per_group}" / "predictions.parquet"
    if not path.is_file():
        script = ROOT / "data" / "make_scale_inputs.py"
        command = [sys.executable, str(script), "--out", str(data), "--models", str(models)]
        subprocess.run([*command, "--per-group", str(per_group)], check=True, cwd=ROOT)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 models, 20 rows a group")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--data-dir", type=Path, default=None, help="where the inputs go")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else SIZES
    rows: list[dict[str, Any]] = []
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        data = args.data_dir or Path(folder)
        for name, (models, per_group) in sizes.items():
            path = _input(data, models, per_group)
            count = pl.scan_parquet(path).select(pl.len()).collect().item()
            cli = ["-m", "calib_frames"]
            source = [str(path), "--by", "model,task", "--quiet"]
            commands = {
                "compare --no-uncertainty": [*cli, "compare", *source, "--no-uncertainty"],
                "compare": [*cli, "compare", *source],
                "report --no-uncertainty": [
                    *cli, "report", *source, "--no-uncertainty", "--out", f"{folder}/n",
                ],
                "report": [*cli, "report", *source, "--out", f"{folder}/r"],
            }  # fmt: skip
            results = {label: timed(command, args.root) for label, command in commands.items()}
            status = {label: result[2] for label, result in results.items()}
            ok = all(code == 0 for code in status.values())
            failed |= not ok
            if not ok:
                tails = {k: r[3] for k, r in results.items() if r[2] != 0}
                print(f"  !! {name} FAILED: {status} {tails}")
            rows.append(
                {
                    "input": name,
                    "models": models,
                    "rows": count,
                    **{f"{label} MiB": result[1] for label, result in results.items()},
                    **{f"{label} s": result[0] for label, result in results.items()},
                    "ok": ok,
                }
            )
    print(f"\n## Peak memory of report and compare ({args.root})\n")
    print(
        "| input | rows | compare --no-unc. MiB | compare MiB | report --no-unc. MiB | "
        "report MiB | report / compare | report --no-unc. / compare --no-unc. | ok |"
    )
    print("| :-- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :-: |")
    for r in rows:
        print(
            f"| {r['input']} | {r['rows']:,} | {r['compare --no-uncertainty MiB']:,.0f} "
            f"| {r['compare MiB']:,.0f} | {r['report --no-uncertainty MiB']:,.0f} "
            f"| {r['report MiB']:,.0f} | {r['report MiB'] / r['compare MiB']:.2f}× "
            f"| {r['report --no-uncertainty MiB'] / r['compare --no-uncertainty MiB']:.2f}× "
            f"| {'yes' if r['ok'] else 'FAILED'} |"
        )
    for r in rows:
        timings = ", ".join(f"{k[:-2]} {v:.1f} s" for k, v in r.items() if k.endswith(" s"))
        print(f"\n{r['input']}: {timings}")
    if args.json is not None:
        args.json.write_text(json.dumps({"environment": environment(), "runs": rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
