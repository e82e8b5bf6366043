"""Reporting: markdown tables of seconds and ratios, cross-check columns, peak memory, JSON.

Ratios are always ``peer seconds / reference seconds`` (> 1: the reference, calib_frames, is
faster). The code prints ratios only; the targets they are judged against are prose in
BENCHMARKS.md.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FLOORS = ("floor", "floor_read")


def fmt_diff(x: float) -> str:
    if math.isnan(x):  # the field is absent
        return "-"
    return "0" if x == 0 else f"{x:.1e}"


def markdown(head: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """A markdown table; ``align``: one of ``l``/``r`` per column (default: first l, rest r)."""
    align = align or "l" + "r" * (len(head) - 1)
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(map(str, head)) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)


def print_table(
    title: str,
    best: dict[str, float],
    checks: dict[str, dict[str, Any]],
    errors: dict[str, str],
    *,
    reference: str = "calib_frames",
    rows: int | None = None,
    highlight: Sequence[str] = ("count", "ece", "brier"),
) -> None:
    """One (workload, source) block: seconds, ratio, the cross-check columns."""
    ref_t = best.get(reference)
    print(f"\n### {title}  (load average after: {load()})\n")
    head = [
        "method",
        "best s",
        f"ratio (method / {reference})",
        *(f"max abs diff: {h}" for h in highlight),
        "other (worst)",
        "check",
    ]
    body = []
    for name, seconds in sorted(best.items(), key=lambda kv: kv[1]):
        ratio = f"{seconds / ref_t:.2f}" if ref_t else "-"
        if name in checks:
            c = checks[name]
            cells = [
                *(fmt_diff(c[h]) for h in highlight),
                f"{fmt_diff(c['other'])} ({c['other_name']})",
                "ok" if c["ok"] else "**MISMATCH**",
            ]
        elif name == reference:
            cells = ["ref"] * (len(highlight) + 2)
        else:
            cells = ["-"] * (len(highlight) + 1) + ["n/a"]
        shown = f"{seconds:.3f}" if seconds >= 0.1 else f"{seconds:.4f}"  # 0.1 ms below 0.1 s
        body.append([name, shown, ratio, *cells])
    print(markdown(head, body, "lrr" + "r" * len(highlight) + "ll"))
    floors = [best[k] for k in FLOORS if k in best]
    if ref_t and floors:
        speed = f"  ({rows / ref_t / 1e6:.1f} M rows/s for {reference})" if rows else ""
        print(f"\n{reference} / floor = {ref_t / min(floors):.2f}{speed}")
    elif ref_t and rows:
        print(f"\n{rows / ref_t / 1e6:.1f} M rows/s for {reference}")
    for name, message in errors.items():
        print(f"!! {name}: {message}")
    for name, c in checks.items():
        if c["missing"]:
            print(f"!! {name}: fields not compared (absent in one output): {c['missing']}")
    bad = [name for name, c in checks.items() if not c["ok"]]
    if bad:
        tol = max(c["tolerance"] for c in checks.values())
        print(f"!! MISMATCH against {reference} (> {tol:g} or a count differs): " + ", ".join(bad))


def failures(checks: dict[str, dict[str, Any]], errors: dict[str, str]) -> int:
    return sum(not c["ok"] for c in checks.values()) + len(errors)


def summary(runs: list[dict[str, Any]], *, reference: str = "calib_frames") -> list[str]:
    """One compact matrix per source: the reference's seconds, then each method's ratio."""
    lines: list[str] = []
    for source in dict.fromkeys(r["source"] for r in runs):
        rs = [r for r in runs if r["source"] == source and reference in r["seconds"]]
        if not rs:
            continue
        names = list(dict.fromkeys(n for r in rs for n in r["seconds"] if n != reference))
        head = ["", *(f"{r['rows']:.0e} x {r['groups']}" for r in rs)]
        body = [[f"{reference} seconds", *(f"{r['seconds'][reference]:.3f}" for r in rs)]]
        for name in names:
            body.append(
                [
                    name,
                    *(
                        f"{r['seconds'][name] / r['seconds'][reference]:.2f}"
                        if name in r["seconds"]
                        else "-"
                        for r in rs
                    ),
                ]
            )
        floors = []
        for r in rs:
            t = [r["seconds"][k] for k in FLOORS if k in r["seconds"]]
            floors.append(f"{r['seconds'][reference] / min(t):.1f}" if t else "-")
        if any(f != "-" for f in floors):
            body.append([f"{reference} / floor", *floors])
        lines += [
            f"\nsource={source}: ratio = method seconds / {reference} seconds "
            f"(> 1: {reference} faster)\n",
            markdown(head, body),
        ]
    print("\n## Summary of ratios\n" + "\n".join(lines))
    return lines


def peaks(memory: list[dict[str, Any]], name: str, groups: int) -> list[tuple[int, float]]:
    return sorted(
        (r["rows"], r["peak_mb"])
        for r in memory
        if r["method"] == name and r["groups"] == groups and "peak_mb" in r
    )


def growth(memory: list[dict[str, Any]], name: str, groups: int) -> str:
    """How the peak grows over the sizes measured (first to last, and the last step)."""
    points = peaks(memory, name, groups)
    if len(points) < 2:
        return "n/a (one size)"
    (n0, p0), (n1, p1), (n2, p2) = points[0], points[-2], points[-1]
    verdict = "flat" if p2 < 1.25 * p1 else "grows"
    text = f"{verdict}: x{p2 / p0:.2f} for x{n2 / n0:.0f} rows"
    if len(points) > 2:
        text += f", x{p2 / p1:.2f} for the last x{n2 / n1:.0f}"
    return text


def print_memory(memory: list[dict[str, Any]], *, title: str = "parquet source") -> None:
    """Peak RSS per method and size, with the difference to the same-size ``floor`` run."""
    if not memory:
        return
    print(f"\n## Peak memory, {title} (fresh subprocess per method and size)\n")
    text = "Peak resident memory (VmHWM, reset after the imports) in MB"
    if any(r["method"] == "floor" for r in memory):
        text += (
            "; in brackets the difference to the same-size `floor` run (polars streaming over "
            "the same file: the reader's own buffers)"
        )
    print(text + ".\n")
    by_groups: dict[int, list[dict[str, Any]]] = {}
    for row in memory:
        by_groups.setdefault(row["groups"], []).append(row)
    for groups, rows in by_groups.items():
        sizes = sorted({r["rows"] for r in rows})
        names = list(dict.fromkeys(r["method"] for r in rows))
        floor = {r["rows"]: r["peak_mb"] for r in rows if r["method"] == "floor" and "peak_mb" in r}
        body = []
        for name in names:
            cells = []
            for n in sizes:
                r = next((r for r in rows if r["method"] == name and r["rows"] == n), None)
                if r is None or "error" in r:
                    cells.append("error" if r else "-")
                    continue
                above = (
                    f" ({r['peak_mb'] - floor[n]:+.0f})" if n in floor and name != "floor" else ""
                )
                cells.append(f"{r['peak_mb']:.0f}{above}")
            body.append([name, *cells, growth(memory, name, groups)])
        print(f"{groups} groups\n")
        head = ["method", *(f"{n:.0e} rows" for n in sizes), "growth"]
        print(markdown(head, body, "l" + "r" * len(sizes) + "l"))
        print()
    print(
        "growth: peak at the largest size / peak at the smallest, and between the two largest "
        "sizes; 'flat' when the latter is below 1.25x."
    )


def save_json(path: Path | None, *, quiet: bool = False, **sections: Any) -> None:
    """Write everything (environment, argv, runs, memory, ...) as indented JSON."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"argv": sys.argv, **sections}, indent=2, default=str))
    if not quiet:
        print(f"\nsaved {path}")


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def print_header(title: str, env: dict[str, Any]) -> None:
    print(f"# {title}\n")
    print("command: " + " ".join([Path(sys.executable).name, *sys.argv]))
    for key, value in env.items():
        print(f"- {key}: {value}")
    print(f"- load average at start: {load()}")
