"""Measuring: interleaved best-of-N timing, the cross-check, fresh-subprocess peak RSS and the
environment.

* :func:`time_interleaved` runs every peer once per repeat, in turn (so that a slow phase of
  a shared machine hits all of them), keeps each peer's best wall-clock time, normalises each
  peer's first output (not timed) and cross-checks it against the reference peer's.
* :func:`compare` is the cross-check: max abs difference per Result field; any difference in
  an ``exact`` field (counts), any other above the tolerance, a NaN on either side, or a
  required field missing is a mismatch.
* :func:`peak_rss` runs ``module:function`` in a fresh interpreter (``python -m
  benchmarks.harness``): the function gets a JSON payload and returns a zero-argument callable;
  imports and setup happen before the kernel's high-water mark is reset (``/proc/self/
  clear_refs``), the callable is timed, and its peak resident memory is read from ``VmHWM``
  (``ru_maxrss`` where /proc is missing, then including the imports).
* :func:`environment` and :func:`load` record the machine, versions and load average.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import report
from benchmarks.peers import Peer, Result
from benchmarks.workload import Source, Spec, memory_source

TOLERANCE = 1e-9
HERE = Path(__file__).resolve().parent  # the child's working directory: no calib_frames here
REPO = HERE.parent


# ---------------------------------------------------------------------------------------------
# the cross-check


def _diff(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    d = np.abs(a - b)  # NaN anywhere (a group missing on either side) counts as infinite
    return float("inf") if np.isnan(d).any() else float(d.max(initial=0.0))


def compare(
    ref: Result,
    other: Result,
    *,
    tolerance: float = TOLERANCE,
    required: Sequence[str] | None = None,
    highlight: Sequence[str] = ("count", "ece", "brier"),
) -> dict[str, Any]:
    """Max abs differences of ``other`` against ``ref``, field by field.

    ``required``: the fields ``other`` must have (default: all of ``ref``'s). Returns
    ``diffs`` (every common field), the ``highlight`` fields by name, ``other`` /
    ``other_name`` (the worst of the rest), ``missing`` and ``ok``.
    """
    need = list(required) if required is not None else list(ref.values)
    missing = [n for n in need if n not in ref.values or n not in other.values]
    common = [n for n in ref.values if n in other.values]
    diffs = {n: _diff(ref.values[n], other.values[n]) for n in common}
    exact = set(ref.exact) | set(other.exact)
    ok = bool(common) and not missing
    for name, d in diffs.items():
        if d > (0.0 if name in exact else tolerance):
            ok = False
    out: dict[str, Any] = {n: diffs.get(n, float("nan")) for n in highlight}
    rest = {n: d for n, d in diffs.items() if n not in highlight}
    worst = max(rest, key=lambda k: rest[k]) if rest else "-"
    out.update(
        other=rest.get(worst, float("nan")),
        other_name=worst,
        missing=missing,
        ok=ok,
        diffs=diffs,
        tolerance=tolerance,
    )
    return out


# ---------------------------------------------------------------------------------------------
# timing


def time_interleaved(
    src: Source,
    peers: Sequence[Peer],
    repeats: int,
    *,
    reference: str | None = None,
    tolerance: float = TOLERANCE,
    highlight: Sequence[str] = ("count", "ece", "brier"),
    check: Callable[[Result, Source], str | None] | None = None,
    cpu: dict[str, float] | None = None,
    once: Sequence[str] = (),
) -> tuple[dict[str, float], dict[str, dict[str, Any]], dict[str, str]]:
    """Best-of-``repeats`` seconds per peer, the cross-checks, and errors by peer name.

    ``reference``: the peer the others are checked against (default: the first subject).
    ``check(result, src)``: an extra test of the reference's own result; a message = failure.
    ``cpu``: if given, filled with each peer's CPU seconds (``time.process_time``, all
    threads) of its best wall-clock run.
    ``once``: peers run in the first repeat only (the expensive ones, or those with state).
    A peer that raises is reported in ``errors`` and not run again; the others go on.
    """
    if reference is None:
        reference = next((p.name for p in peers if p.role == "subject"), peers[0].name)
    best: dict[str, float] = {}
    results: dict[str, Result | None] = {}
    errors: dict[str, str] = {}
    for repeat in range(repeats):
        for peer in peers:
            if peer.name in errors or (repeat and peer.name in once):
                continue
            gc.collect()
            try:
                t0, c0 = time.perf_counter(), time.process_time()
                out = peer.run(src)
                seconds = time.perf_counter() - t0
                cpu_seconds = time.process_time() - c0
            except Exception as exc:  # keep going: report the failure, time the others
                errors[peer.name] = f"{type(exc).__name__}: {exc}"
                print(f"  !! {peer.name} FAILED: {errors[peer.name]}", flush=True)
                continue
            if seconds < best.get(peer.name, float("inf")):
                best[peer.name] = seconds
                if cpu is not None:
                    cpu[peer.name] = cpu_seconds
            if peer.name not in results:
                try:
                    results[peer.name] = peer.normalise(out, src)
                except Exception as exc:
                    errors[peer.name + " (output)"] = f"{type(exc).__name__}: {exc}"
                    print(f"  !! {peer.name}: unexpected output: {exc}", flush=True)
                    results[peer.name] = None
            del out
    checks = _cross_check(results, peers, reference, tolerance, highlight)
    ref = results.get(reference)
    if ref is not None and check is not None:
        problem = check(ref, src)
        if problem:
            errors[reference] = problem
    elif ref is None and reference not in errors:
        errors[reference] = "no result to cross-check against"
    return best, checks, errors


def _cross_check(
    results: dict[str, Result | None],
    peers: Sequence[Peer],
    reference: str,
    tolerance: float,
    highlight: Sequence[str],
) -> dict[str, dict[str, Any]]:
    ref = results.get(reference)
    checks: dict[str, dict[str, Any]] = {}
    if ref is None:  # a failed reference leaves nothing to compare against
        return checks
    for peer in peers:
        result = results.get(peer.name)
        if peer.name != reference and result is not None:
            checks[peer.name] = compare(
                ref, result, tolerance=tolerance, required=peer.fields, highlight=highlight
            )
    return checks


def counts_add_up(result: Result, src: Source) -> str | None:
    """The reference's own consistency for the metrics workloads: counts sum to the rows."""
    if "count" not in result.values:
        return None
    total = int(result.values["count"].sum())
    return None if total == src.spec.rows else f"counts sum to {total}, not {src.spec.rows} rows"


def run_sources(
    spec: Spec,
    path: Path,
    kinds: Sequence[str],
    peers: Sequence[Peer],
    repeats: int,
    *,
    chunk_rows: int = 2**16,
    reference: str | None = None,
    tolerance: float = TOLERANCE,
    highlight: Sequence[str] = ("count", "ece", "brier"),
    check: Callable[[Result, Source], str | None] | None = counts_add_up,
) -> tuple[list[dict[str, Any]], int]:
    """Time ``peers`` on one workload for each source kind, print a table per kind.

    Kinds: ``memory``, ``memory-str`` (in memory with String group keys) and ``parquet``.
    Returns the run records (for :func:`benchmarks.report.summary` and the JSON) and the
    number of mismatches and failures.
    """
    runs, failed = [], 0
    for kind in kinds:
        base = "parquet" if kind == "parquet" else "memory"
        if base == "memory":
            src = memory_source(spec, path, chunk_rows, string_keys=kind == "memory-str")
        else:
            src = Source("parquet", spec, path, chunk_rows)
        todo = [p for p in peers if base in p.sources]
        best, checks, errors = time_interleaved(
            src,
            todo,
            repeats,
            reference=reference,
            tolerance=tolerance,
            highlight=highlight,
            check=check,
        )
        src.close()
        del src
        gc.collect()
        ref = reference or next((p.name for p in todo if p.role == "subject"), todo[0].name)
        report.print_table(
            f"{spec.label}, source={kind}",
            best,
            checks,
            errors,
            reference=ref,
            rows=spec.rows,
            highlight=highlight,
        )
        failed += report.failures(checks, errors)
        runs.append(
            {
                "rows": spec.rows,
                "groups": spec.groups,
                "models": spec.n_models,
                "tasks": spec.n_tasks,
                "source": kind,
                "repeats": repeats,
                "seconds": best,
                "checks": checks,
                "errors": errors,
                "load": report.load(),
            }
        )
    return runs, failed


# ---------------------------------------------------------------------------------------------
# peak memory in a fresh subprocess


def _status_mb(field_name: str) -> float | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def child(target: str, payload: dict[str, Any]) -> dict[str, Any]:
    """In the fresh interpreter: prepare, reset the high-water mark, run once, measure."""
    with_imports = payload.get("preload", ["duckdb"])  # same imports for every run
    for module in with_imports:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    module_name, func_name = target.split(":")
    prepare = getattr(importlib.import_module(module_name), func_name)
    work = prepare(payload)
    gc.collect()
    reset = False
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        reset = True
    except OSError:
        pass
    baseline = _status_mb("VmRSS") if reset else None
    if baseline is None:
        baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    out = work()
    seconds = time.perf_counter() - t0
    peak = _status_mb("VmHWM") if reset else None
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    info = out if isinstance(out, dict) else {}
    measured = sys.modules.get("calib_frames")
    return {
        "calib_frames": str(Path(measured.__file__).parent) if measured else "not imported",
        "baseline_mb": baseline,
        "peak_mb": peak,
        "seconds": seconds,
        "peak_source": "VmHWM after reset" if reset else "ru_maxrss",
        **{k: v for k, v in info.items() if isinstance(v, int | float | str | bool)},
    }


def peak_rss(
    target: str, payload: dict[str, Any], *, timeout: float = 3600, nice: int = 0
) -> dict[str, Any]:
    """Run ``target`` (``"module:prepare"``) in a fresh interpreter; its peak RSS and time.

    ``prepare(payload)`` returns the zero-argument callable to measure; a dict it returns is
    merged into the answer (numbers and strings only). On failure: ``{"error": ...}``.
    """
    cmd = [sys.executable, "-m", "benchmarks.harness", target, json.dumps(payload)]
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]
    import calib_frames

    # the child imports the calib_frames this process measures, then finds ``benchmarks``
    measured = str(Path(calib_frames.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (measured, env.get("PYTHONPATH"), str(REPO)) if p
    )
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, check=False, timeout=timeout, env=env, cwd=HERE
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = " / ".join(proc.stderr.strip().splitlines()[-3:]) or f"exit {proc.returncode}"
        print(f"  !! memory run of {target} failed: {tail}", flush=True)
        return {"error": tail}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def prepare_peer(payload: dict[str, Any]) -> Callable[[], Any]:
    """``prepare`` for one peer on a parquet source (the payload of :func:`peer_peak_rss`)."""
    from benchmarks.workload import Spec

    module_name, attr = payload["registry"].split(":")
    registry = getattr(importlib.import_module(module_name), attr)
    peer = registry[payload["peer"]]
    spec = Spec(**payload["spec"])
    src = Source("parquet", spec, Path(payload["path"]), payload.get("chunk_rows", 2**16))

    def work() -> Any:
        return peer.run(src)  # kept by child() until VmHWM has been read

    return work


def peer_peak_rss(
    registry: str, peer: str, src: Source, *, nice: int = 0, timeout: float = 3600
) -> dict[str, Any]:
    """Peak RSS and seconds of one run of ``peer`` on ``src`` (parquet) in a fresh process.

    ``registry``: where the fresh interpreter finds it, ``"module:ATTRIBUTE"`` (for example
    ``"benchmarks.peers:METRICS"``).
    """
    payload = {
        "registry": registry,
        "peer": peer,
        "path": str(src.path.resolve()),
        "chunk_rows": src.chunk_rows,
        "spec": {
            "rows": src.spec.rows,
            "n_models": src.spec.n_models,
            "n_tasks": src.spec.n_tasks,
            "n_bins": src.spec.n_bins,
            "seed": src.spec.seed,
        },
    }
    return peak_rss("benchmarks.harness:prepare_peer", payload, nice=nice, timeout=timeout)


# ---------------------------------------------------------------------------------------------
# environment


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def environment() -> dict[str, Any]:
    """Machine, versions, thread counts and the calib_frames commit being measured."""
    import polars as pl
    import pyarrow as pa

    import calib_frames as cf

    env: dict[str, Any] = {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "polars": pl.__version__,
        "polars_threads": pl.thread_pool_size(),
        "numpy": np.__version__,
        "pyarrow": pa.__version__,
        "calib_frames": f"{getattr(cf, '__version__', 'source')} at {Path(cf.__file__).parent}",
    }
    try:
        repo = Path(cf.__file__).resolve().parent.parent
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", "calib_frames"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirt = " + uncommitted changes in calib_frames/" if dirty else ""
        env["calib_frames_git"] = head + dirt
    except (OSError, subprocess.CalledProcessError):
        pass
    try:
        with open("/proc/cpuinfo") as fh:
            env["cpu"] = next(
                (ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "?"
            )
        with open("/proc/meminfo") as fh:
            env["mem_total_gb"] = round(int(fh.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    for module in ("duckdb", "sklearn"):
        try:
            env[module] = importlib.import_module(module).__version__
        except ImportError:
            env[module] = "not installed (its peer is skipped)"
    if not str(env["duckdb"]).startswith("not"):
        import duckdb

        with duckdb.connect() as con:
            row = con.execute("SELECT current_setting('threads')").fetchall()[0]
            env["duckdb_threads"] = row[0]
    return env


if __name__ == "__main__":  # the fresh interpreter of peak_rss
    print(json.dumps(child(sys.argv[1], json.loads(sys.argv[2]))))
