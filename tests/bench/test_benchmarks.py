"""Smoke tests of the benchmark entry points (tiny sizes) and of the harness's cross-check.

Each entry point runs in a subprocess, as a user runs it (script and ``-m`` forms), with its
data under a temporary directory; the test checks the exit status and that the cross-check
ran and passed. No timing is asserted.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import calib_frames as cf

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import compare  # noqa: E402
from benchmarks.peers import METRICS, Result  # noqa: E402

# Each test here starts a heavy component (Spark, a browser, a kernel or a benchmark process).
pytestmark = pytest.mark.slow


def run(*args: str, module: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    target = ["-m", f"benchmarks.{args[0]}"] if module else [f"benchmarks/{args[0]}.py"]
    proc = subprocess.run(
        [sys.executable, *target, *args[1:]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "MISMATCH" not in proc.stdout
    assert "FAILED" not in proc.stdout
    return proc


def test_bench_metrics_quick(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = run("bench_metrics", "--quick", "--data-dir", str(tmp_path), "--json", str(out))
    saved = json.loads(out.read_text())
    checked = [c for r in saved["runs"] for c in r["checks"].values()]
    assert {r["source"] for r in saved["runs"]} == {"memory", "parquet"}
    assert len(checked) >= 6
    assert all(c["ok"] and c["count"] == 0 for c in checked)
    assert all("peak_mb" in m for m in saved["memory"])
    assert "## Summary of ratios" in proc.stdout


def test_bench_metrics_as_module(tmp_path: Path) -> None:
    proc = run(
        "bench_metrics",
        "--sizes",
        "2e4",
        "--groups",
        "4x3",
        "--sources",
        "memory",
        "--methods",
        "numpy_chunked,polars_naive",
        "--repeats",
        "1",
        "--memory-methods",
        "",
        "--data-dir",
        str(tmp_path),
        module=True,
    )
    assert proc.stdout.count("| ok |") == 2


def test_bench_metrics_lists_every_method() -> None:
    proc = run("bench_metrics", "--list")
    for name in METRICS.names():
        assert name in proc.stdout


def test_bench_precision_quick() -> None:
    proc = run("bench_precision", "--quick", module=True)
    assert "cross-check ok" in proc.stdout


def test_bench_expr_quick(tmp_path: Path) -> None:
    out = tmp_path / "expr.json"
    proc = run("bench_expr", "--quick", "--data-dir", str(tmp_path), "--json", str(out))
    checks = json.loads(out.read_text())["runs"][0]["checks"]
    expected = {"polars_naive"}
    if hasattr(cf, "binned_metrics"):
        shared = ("ece", "mce", "brier", "log_loss")  # the metrics polarbearings also has
        expected |= {"expr_binned", "expr_five", "expr_binned_eager"}
        expected |= {f"expr_{n}{form}" for n in shared for form in ("", "_eager")}
        if importlib.util.find_spec("polarbearings") is not None:
            expected |= {f"polarbearings_{n}{form}" for n in shared for form in ("", "_eager")}
        assert len(checks["expr_binned"]["diffs"]) >= 10  # every metric column compared
    else:
        assert "skipping expr_binned" in proc.stdout
    assert set(checks) == expected
    assert all(c["ok"] for c in checks.values())


def test_bench_cli_quick(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    out = tmp_path / "cli.json"
    proc = run("bench_cli", "--quick", "--data-dir", str(tmp_path), "--json", str(out))
    assert "| ok |" in proc.stdout  # the tables and the ECE/MCE agree
    seconds = json.loads(out.read_text())["runs"][0]["seconds"]
    assert set(seconds) == {"calib_frames_cli", "duckdb_script", "duckdb_ece_mce"}


def test_bench_streaming_quick(tmp_path: Path) -> None:
    out = tmp_path / "streaming.json"
    run("bench_streaming", "--quick", "--data-dir", str(tmp_path), "--json", str(out))
    saved = json.loads(out.read_text())
    sized = [r for r in saved["sized"] if "run" in r]
    assert len(sized) == 6 and all(r["ok"] for r in sized)
    assert not list(tmp_path.glob("*gb_*.parquet"))  # the sized files are deleted again
    assert all(c["ok"] for r in saved["runs"] for c in r["checks"].values())
    assert {m["method"] for m in saved["memory"]} == {
        "calib_frames_metrics",
        "duckdb",
        "polars_naive",
    }


@pytest.fixture(scope="module")
def reference() -> Result:
    rng = np.random.default_rng(0)
    return Result(
        {"count": rng.integers(0, 9, 20), "ece": rng.random(4), "brier": rng.random(4)},
        exact=("count",),
    )


def test_compare_accepts_tiny_differences(reference: Result) -> None:
    other = Result({k: v + (1e-12 if k != "count" else 0) for k, v in reference.values.items()})
    assert compare(reference, other)["ok"]


@pytest.mark.parametrize(
    "change",
    ["count", "ece", "nan", "missing", "shape"],
)
def test_compare_flags_mismatches(reference: Result, change: str) -> None:
    values = {k: v.copy() for k, v in reference.values.items()}
    if change == "count":
        values["count"][3] += 1
    elif change == "ece":
        values["ece"][1] += 1e-6
    elif change == "nan":
        values["brier"][0] = np.nan
    elif change == "missing":
        del values["brier"]
    else:
        values["ece"] = values["ece"][:3]
    assert not compare(reference, Result(values))["ok"]


def test_registry_selects_reference_first_and_skips_missing_needs() -> None:
    from benchmarks.peers import Peer, Registry

    registry = Registry()
    registry.add(Peer("ref", lambda src: None, role="subject"))
    registry.add(Peer("other", lambda src: None))
    registry.add(Peer("absent", lambda src: None, needs="calib_frames:no_such_function"))
    assert [p.name for p in registry.select(["other", "absent"], quiet=True)] == ["ref", "other"]
    with pytest.raises(SystemExit, match="unknown"):
        registry.select(["nope"])
    with pytest.raises(ValueError, match="already registered"):
        registry.add(Peer("ref", lambda src: None))


def test_sized_parts_stop_at_their_size(tmp_path: Path) -> None:
    from benchmarks.workload import ensure_part

    path, rows, _ = ensure_part(0, 0.005, 4, 3, data_dir=tmp_path, block=2**16)
    size = path.stat().st_size
    assert 0.005 * 2**30 <= size < 0.005 * 2**30 + 2**20  # at most one block past the size
    assert rows % 2**16 == 0
    again, rows_again, seconds = ensure_part(0, 0.005, 4, 3, data_dir=tmp_path, block=2**16)
    assert (again, rows_again, seconds) == (path, rows, 0.0)  # cached


def checks_of(path: Path) -> list[dict[str, object]]:
    """Every cross-check of a saved --json run (at least one, all passed)."""
    saved = json.loads(path.read_text())
    checks = [c for r in saved["runs"] for c in r["checks"].values()]
    assert checks
    assert all(r["errors"] == {} for r in saved["runs"])
    return checks


def test_bench_uncertainty_quick(tmp_path: Path) -> None:
    out = tmp_path / "uncertainty.json"
    proc = run("bench_uncertainty", "--quick", "--json", str(out), module=True)
    checks = checks_of(out)
    assert all(c["ok"] for c in checks)
    assert json.loads(out.read_text())["interval_problems"] == []
    assert "cross-check ok" in proc.stdout
    assert "cf_row_bootstrap" in proc.stdout


def test_bench_estimators_quick(tmp_path: Path) -> None:
    out = tmp_path / "estimators.json"
    proc = run("bench_estimators", "--quick", "--json", str(out))
    assert all(c["ok"] for c in checks_of(out))
    runs = json.loads(out.read_text())["runs"]
    assert [r["pair"] for r in runs] == [
        "smooth", "corp", "isotonic", "bins", "selective", "curve", "intervals", "helm",
    ]  # fmt: skip
    for r in runs:  # each pair cross-checked, or its peer's library reported missing
        assert r["checks"] or r["pair"] == "intervals" or "skipping" in proc.stdout
    assert "numpy_boot_loop on calib_frames' multiplicities: max |diff|" in proc.stdout
    assert "cross-check ok" in proc.stdout


def test_bench_paired_quick(tmp_path: Path) -> None:
    out = tmp_path / "paired.json"
    proc = run("bench_paired", "--quick", "--json", str(out), module=True)
    assert json.loads(out.read_text())["problems"] == []
    assert "scipy_loop (2 pairs)" in proc.stdout
    assert "cross-check ok" in proc.stdout


def test_sim_paired_weights_quick() -> None:
    proc = run("sim_paired_weights", "--quick")
    for metric in ("accuracy", "ece", "brier"):
        for form in ("rows", "count-weighted rows"):  # a false-positive rate in [0, 1]
            row = rf"^\| {form} \| \d+ \| {metric} \| [01]\.\d{{3}} \| "
            assert re.search(row, proc.stdout, re.MULTILINE), (form, metric)
        assert re.search(rf"^\| {metric} \| \d\.\d{{4}} \| [01]\.\d{{3}} \|$", proc.stdout,
                         re.MULTILINE), metric  # fmt: skip


def test_bench_recalibrate_quick(tmp_path: Path) -> None:
    out = tmp_path / "recalibrate.json"
    proc = run("bench_recalibrate", "--quick", "--json", str(out), module=True)
    checks = checks_of(out)
    assert all(c["ok"] and c["tolerance"] == 1e-5 for c in checks)
    assert "cross-check ok" in proc.stdout


def test_bench_ranking_quick(tmp_path: Path) -> None:
    out = tmp_path / "ranking.json"
    proc = run("bench_ranking", "--quick", "--json", str(out), "--data-dir", str(tmp_path))
    checks = json.loads(out.read_text())["runs"]
    by_peer = {name: c for r in checks for name, c in r["checks"].items()}
    assert all(c["ok"] for c in checks_of(out))
    for peer, fields in (("ranx", 29), ("torchmetrics", 6)):  # map@10 is left out for torch
        assert peer in by_peer or f"skipping {peer}" in proc.stdout
        assert peer not in by_peer or len(by_peer[peer]["diffs"]) == fields
    memory = json.loads(out.read_text())["memory"]
    assert {m["source"] for m in memory} == {"memory", "parquet"}
    assert all(m["peak_mb"] >= m["baseline_mb"] > 0 for m in memory)
    assert "cross-check ok" in proc.stdout


def test_time_interleaved_runs_once_peers_once() -> None:
    from benchmarks.harness import time_interleaved
    from benchmarks.peers import Peer
    from benchmarks.workload import Spec, frame_source

    calls: list[str] = []

    def counting(name: str) -> Peer:
        return Peer(
            name,
            lambda src: calls.append(name),
            lambda out, src: Result({"x": np.zeros(1)}),
            role="subject" if name == "ref" else "peer",
        )

    src = frame_source(pl.DataFrame({"a": [1]}), Spec(1, 1, 1))
    cpu: dict[str, float] = {}
    best, checks, errors = time_interleaved(
        src, [counting("ref"), counting("slow")], 3, once=("slow",), cpu=cpu
    )
    assert calls.count("ref") == 3 and calls.count("slow") == 1
    assert set(best) == set(cpu) == {"ref", "slow"} and checks["slow"]["ok"] and not errors


def test_bench_sources_quick(tmp_path: Path) -> None:
    out = tmp_path / "sources.json"
    proc = run("bench_sources", "--quick", "--json", str(out), module=True)
    checks = checks_of(out)
    assert len(checks) == 6 and all(c["ok"] for c in checks)
    # every field compared: choice (x2), lm-eval, inspect_ai, HELM, lighteval
    assert [len(c["diffs"]) for c in checks] == [4, 4, 5, 2, 3, 4]
    assert "cross-check ok" in proc.stdout


def test_bench_import_quick(tmp_path: Path) -> None:
    out = tmp_path / "import.json"
    proc = run("bench_import", "--quick", "--json", str(out), module=True)
    saved = json.loads(out.read_text())["runs"][0]
    assert saved["altair_imported"] == {
        "calib_frames": False,
        "+ plot, report": False,
        "altair": True,
        "first chart": True,
    }
    assert all(s > 0 for s in saved["seconds"].values())
    assert "cross-check ok" in proc.stdout


def test_bench_report_quick(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    proc = run("bench_report", "--quick", "--data-dir", str(tmp_path), "--json", str(out))
    saved = json.loads(out.read_text())
    assert [r["groups"] for r in saved["runs"]] == [12, 40]
    exits = {"compare": 0, "report": 0, "tables": 0, "altair": 0}
    assert all(r["ok"] and r["exit"] == exits for r in saved["runs"])
    assert all(r["ratio"] > 0 and r["tables_s"] > 0 and r["altair_s"] > 0 for r in saved["runs"])
    assert "## Summary of ratios" in proc.stdout


def test_bench_over_time_quick(tmp_path: Path) -> None:
    proc = run("bench_over_time", "--quick", "--data-dir", str(tmp_path))
    assert "--over batch / without" in proc.stdout and "MISMATCH" not in proc.stdout
