#!/usr/bin/env python
"""Benchmark: what the declarative argument checks cost, per call and at import.

Every public function declares its arguments' constraints with
``calib_frames.arguments.check_arguments``; the decorator checks the arguments given before
the function runs. Two costs:

* **per call**: each call below, decorated against the same function undecorated
  (``function.__wrapped__``), best of ``--repeats`` timeit runs of ``--number`` calls. The
  expression builders are the calls users make in tight loops;
* **at import**: decorating again every decorated public function (``check_arguments`` on
  its ``__wrapped__`` with its ``constraints``), the work ``import calib_frames`` and the
  subpackages do once.

Run from the repository root::

    .venv/bin/python benchmarks/bench_arguments.py            # 9 repeats of 5,000 calls
    .venv/bin/python -m benchmarks.bench_arguments --quick    # a smoke test

The cross-check: each decorated call must return what the undecorated one returns (the same
expression, ``meta.eq``); otherwise the script exits 1.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))

import polars as pl

import calib_frames as cf
from calib_frames.arguments import check_arguments
from calib_frames.ranking import expr as ranking_expr
from calib_frames.sources import verbalized_confidence

CALLS: dict[str, tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = {
    "cf.ece('confidence', 'correct', bins=10)": (cf.ece, ("confidence", "correct"), {"bins": 10}),
    "cf.mce(..., min_count=5)": (cf.mce, ("confidence", "correct"), {"min_count": 5}),
    "cf.binned_metrics(bins=[0, 0.5, 1])": (cf.binned_metrics, (), {"bins": [0.0, 0.5, 1.0]}),
    "ranking.expr.ndcg('r', k=10)": (ranking_expr.ndcg, ("r",), {"k": 10}),
    "verbalized_confidence(pl.col('t'), scale=100)": (
        verbalized_confidence,
        (pl.col("t"),),
        {"scale": 100.0},
    ),
}
SUBPACKAGES = ("comparison", "estimators", "metrics", "multiclass", "plot", "ranking",
               "ranking.expr", "recalibrate", "report", "sources")  # fmt: skip


def per_call(number: int, repeats: int) -> bool:
    """Print each call's cost decorated and undecorated; whether every result agreed."""
    agreed = True
    print("| call | decorated ns | undecorated ns | checks ns |")
    print("|---|---:|---:|---:|")
    for label, (function, args, kwargs) in CALLS.items():
        bare = function.__wrapped__  # type: ignore[attr-defined]
        agreed &= function(*args, **kwargs).meta.eq(bare(*args, **kwargs))
        costs = [
            min(
                timeit.repeat(
                    lambda f=f, a=args, k=kwargs: f(*a, **k), number=number, repeat=repeats
                )
            )
            / number
            * 1e9
            for f in (function, bare)
        ]
        print(f"| `{label}` | {costs[0]:,.0f} | {costs[1]:,.0f} | {costs[0] - costs[1]:,.0f} |")
    return agreed


def at_import() -> None:
    """Print how long decorating every decorated public function takes."""
    functions = {}
    for module in [cf, *(importlib.import_module(f"calib_frames.{n}") for n in SUBPACKAGES)]:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value) and hasattr(value, "constraints"):
                functions[f"{value.__module__}.{value.__qualname__}"] = value
    start = time.perf_counter()
    for function in functions.values():
        check_arguments(**function.constraints)(function.__wrapped__)
    spent = time.perf_counter() - start
    print(f"\ndecorating the {len(functions)} decorated public functions: {spent * 1e3:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 1 when a decorated call returns something else."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=5_000, help="calls per timeit run")
    parser.add_argument("--repeats", type=int, default=9, help="timeit runs (best is kept)")
    parser.add_argument("--quick", action="store_true", help="200 calls, 3 runs")
    args = parser.parse_args(argv)
    number, repeats = (200, 3) if args.quick else (args.number, args.repeats)
    agreed = per_call(number, repeats)
    at_import()
    print("\ncross-check", "ok" if agreed else "FAILED: a decorated call returned another result")
    return 0 if agreed else 1


if __name__ == "__main__":
    sys.exit(main())
