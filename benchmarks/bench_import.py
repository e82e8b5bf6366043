#!/usr/bin/env python
"""Benchmark: how long ``import calib_frames`` takes, and that it does not import altair.

Each measurement is a fresh interpreter (``python -c``) timing the import with
``time.perf_counter``; the median of ``--repeats`` runs is printed, with altair's own import
time beside it as the reference the lazy import avoids. Run from the repository root::

    .venv/bin/python -m benchmarks.bench_import              # 15 runs each
    .venv/bin/python benchmarks/bench_import.py --repeats 5  # quick

Rows:

* ``calib_frames``: ``import calib_frames`` (what every user pays);
* ``+ plot, report``: also ``import calib_frames.plot, calib_frames.report`` (chart and report
  functions available; altair is still not imported);
* ``altair``: ``import altair`` alone (paid on the first chart, not at import);
* ``first chart``: ``import calib_frames.plot`` and build one reliability diagram's spec.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SNIPPETS = {
    "calib_frames": "import calib_frames",
    "+ plot, report": "import calib_frames, calib_frames.plot, calib_frames.report",
    "altair": "import altair",
    "first chart": (
        "import polars as pl, calib_frames as cf\n"
        "from calib_frames.plot import reliability_diagram\n"
        "t = cf.reliability_table(pl.DataFrame({'confidence': [0.2, 0.9], 'correct': [0, 1]}))\n"
        "reliability_diagram(t).to_dict()"
    ),
}

TIMER = (
    "import time, sys\n"
    "start = time.perf_counter()\n"
    "exec(compile({code!r}, 'bench', 'exec'))\n"
    "elapsed = time.perf_counter() - start\n"
    "print(elapsed, 'altair' in sys.modules)\n"
)


def measure(code: str, repeats: int) -> tuple[float, bool]:
    """Median seconds over fresh interpreters, and whether altair ended up imported."""
    times, loaded = [], False
    for _ in range(repeats):
        result = subprocess.run(
            [sys.executable, "-c", TIMER.format(code=code)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        seconds, altair = result.stdout.split()
        times.append(float(seconds))
        loaded = altair == "True"
    return statistics.median(times), loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, median of {args.repeats} fresh interpreters")
    results = {name: measure(code, args.repeats) for name, code in SNIPPETS.items()}
    base = results["calib_frames"][0]
    for name, (seconds, altair) in results.items():
        print(
            f"{name:<16} {seconds * 1000:8.1f} ms  {seconds / base:5.2f}x import calib_frames"
            f"  altair imported: {altair}"
        )


if __name__ == "__main__":
    main()
