#!/usr/bin/env python
"""Benchmark: how long ``import calib_frames`` takes, and that it does not import altair.

Each measurement is a fresh interpreter (``python -c``) timing the import with
``time.perf_counter``; the median of ``--repeats`` runs is printed, with altair's own import
time beside it as the reference the lazy import avoids. Run from the repository root::

    .venv/bin/python -m benchmarks.bench_import              # 15 runs each
    .venv/bin/python benchmarks/bench_import.py --repeats 5  # shorter
    .venv/bin/python benchmarks/bench_import.py --quick      # 3 runs each (smoke test)

Rows:

* ``calib_frames``: ``import calib_frames`` (what every user pays);
* ``+ plot, report``: also ``import calib_frames.plot, calib_frames.report`` (chart and report
  functions available; altair is still not imported);
* ``altair``: ``import altair`` alone (paid on the first chart, not at import);
* ``first chart``: ``import calib_frames.plot`` and build one reliability diagram's spec.

The rows are the peers of a :class:`~benchmarks.peers.Registry` (``calib_frames`` the
subject); they are not timed by ``harness.time_interleaved`` because each measurement is a
median of fresh interpreters timed inside the child. The check: altair must not be imported
by the first two rows and must be by the last two; otherwise the script exits 1.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))

from benchmarks import harness, report
from benchmarks.peers import Peer, Registry
from benchmarks.workload import Source, Spec, frame_source

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


ALTAIR_EXPECTED = {"calib_frames": False, "+ plot, report": False, "altair": True,
                   "first chart": True}  # fmt: skip


def snippet_peer(name: str, code: str) -> Peer:
    """One row: ``run(src)`` is the (median seconds, altair imported) of ``code``."""

    def run(src: Source) -> tuple[float, bool]:
        return measure(code, src.extra["repeats"])

    return Peer(name, run, role="subject" if name == "calib_frames" else "peer", what=code)


REGISTRY = Registry({name: snippet_peer(name, code) for name, code in SNIPPETS.items()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="3 runs each: seconds")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else args.repeats
    env = harness.environment()
    report.print_header("import calib_frames: time, and altair left unimported", env)
    print(f"\nmedian of {repeats} fresh interpreters\n")
    src = frame_source(None, Spec(0, 1, 1), repeats=repeats)
    results: dict[str, Any] = {p.name: p.run(src) for p in REGISTRY}
    base = results[REGISTRY.reference][0]
    body, failed = [], 0
    for name, (seconds, altair) in results.items():
        ok = altair == ALTAIR_EXPECTED[name]
        failed += not ok
        check = "ok" if ok else f"**MISMATCH** (expected {ALTAIR_EXPECTED[name]})"
        body.append([name, f"{seconds * 1000:.1f}", f"{seconds / base:.2f}", altair, check])
    head = ["row", "median ms", "ratio (row / import calib_frames)", "altair imported", "check"]
    print(report.markdown(head, body, "lrrll"))
    runs = [{"source": "import", "repeats": repeats,
             "seconds": {n: r[0] for n, r in results.items()},
             "altair_imported": {n: r[1] for n, r in results.items()}}]  # fmt: skip
    report.save_json(args.json, environment=env, runs=runs)
    print("\ncross-check ok" if not failed else f"\n{failed} check(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
