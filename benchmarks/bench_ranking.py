#!/usr/bin/env python
"""Benchmark: calib_frames' ranking metrics side by side with ranx and torchmetrics, in one run.

Run from the repository root::

    python benchmarks/bench_ranking.py                          # 10^4 queries
    python benchmarks/bench_ranking.py --queries 1e5 1e6 --peer-max-queries 1e5
    python benchmarks/bench_ranking.py --quick                  # seconds (smoke test)

Workload
--------
``Q`` queries × ``--items`` (100) retrieved items each: ``query`` and ``item`` Int64, ``score``
Float64 uniform (no ties), in query order. Qrels: ``--judged`` (10) distinct items per query,
relevance uniform in {0, 1, 2, 3}; every judged item is retrieved, so R and the ideal DCG are
the same whether a library takes them from the qrels (calib_frames, ranx) or from the
retrieved list (torchmetrics).

Methods (same numbers, cross-checked by ``harness.time_interleaved``: ranx against
calib_frames_all, tolerance 1e-9; torchmetrics against calib_frames_k10, tolerance 1e-6)
-----------------------------------------------------------------------------------------
calib_frames_all   ``ranking_metrics(run.lazy(), qrels.lazy(), k=(1, 5, 10),
                   no_relevant="zero").collect()`` (the peers' convention for a query whose
                   judged items all have relevance 0, about 1 in 10^6 here): the
                   29 columns hit/precision/recall/f1/mrr/map/ndcg/ndcg_exp @1,5,10 and
                   mrr, map, ndcg, ndcg_exp, r_precision, with every input check.
ranx               ``ranx.evaluate(qrels, run, <the same 29 metrics>)`` (best of the calls after
                   the first; the first call is reported too) on prebuilt
                   ``Qrels``/``Run`` (numba, parallel). Reported apart: ``ranx_build`` (from
                   Python dicts, built from the numpy arrays — the dict building itself is not
                   timed) and ``ranx_compile`` (the first evaluate on a 2-query run: numba
                   compilation, or loading numba's on-disk cache when warm).
calib_frames_k10   ``ranking_metrics(..., k=10)`` (13 columns), the peer of torchmetrics.
torchmetrics       ``Retrieval{HitRate, Precision, Recall, MRR, MAP, NormalizedDCG}(top_k=10)``
                   and ``RetrievalRPrecision``: ``update(preds, target, indexes)`` +
                   ``compute()`` on CPU tensors (tensor building not timed), timed once.
                   torchmetrics computes in float32 (differences ~1e-8) and its MAP@k divides
                   by the relevant items found in the top k instead of R (trec_eval, ranx,
                   calib_frames), so map@10 is left out of its cross-check.

Sizes above ``--peer-max-queries`` run calib_frames only: ranx's Python dict of dicts for
10^8 (query, item) pairs does not fit in memory next to the other workers of this machine,
and torchmetrics groups the queries in a Python loop. ``ratio`` = peer seconds /
calib_frames seconds (> 1: calib_frames is faster), from the same process and data, best of
``--repeats`` (2) calls each, interleaved. A mismatch exits 1. ``--quick``: 300 queries x
20 items, 5 judged, one repeat, every peer.

Scale: ``calib_frames_all`` seconds at each size divided by (size / smallest size) x the
smallest size's seconds (1.0: linear in the run's size). Peak memory (``--no-memory`` skips
it): one call of ``calib_frames_all`` in a fresh interpreter per size and source, its peak
resident memory (``harness.peak_rss``: VmHWM, reset after the setup) — ``memory``: the run
and qrels built in the child as above (the peak includes the run itself, ``baseline``),
``parquet``: ``pl.scan_parquet`` of the same frames written once under ``--data-dir``
(``benchmarks/results/data/``; sorted by query, row groups of 2^20 rows), nothing held before
the call.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))

import numpy as np
import polars as pl
import polars.selectors as cs

from benchmarks import harness, report
from benchmarks.peers import Registry, Result
from benchmarks.workload import DATA_DIR, Source, Spec, frame_source
from calib_frames.ranking import ranking_metrics

K = (1, 5, 10)
RANX_FOR = {
    "hit": "hit_rate",
    "precision": "precision",
    "recall": "recall",
    "f1": "f1",
    "mrr": "mrr",
    "map": "map",
    "ndcg": "ndcg",
    "ndcg_exp": "ndcg_burges",
}


def make_data(n_queries: int, n_items: int, n_judged: int, seed: int) -> tuple[pl.DataFrame, ...]:
    rng = np.random.default_rng(seed)
    run = pl.DataFrame(
        {
            "query": np.repeat(np.arange(n_queries, dtype=np.int64), n_items),
            "item": np.tile(np.arange(n_items, dtype=np.int64), n_queries),
            "score": rng.random(n_queries * n_items),
        }
    )
    # n_judged distinct items per query: the first n_judged of a random permutation
    keys = rng.random((n_queries, n_items)).argsort(axis=1)[:, :n_judged]
    qrels = pl.DataFrame(
        {
            "query": np.repeat(np.arange(n_queries, dtype=np.int64), n_judged),
            "item": keys.ravel().astype(np.int64),
            "relevance": rng.integers(0, 4, n_queries * n_judged),
        }
    )
    return run, qrels


TM_TOLERANCE = 1e-6  # torchmetrics computes in float32
TM_NAMES = ("hit@10", "precision@10", "recall@10", "mrr@10", "ndcg@10", "r_precision")
ALL, K10 = Registry(), Registry()


def seconds_of(function: Any) -> tuple[float, Any]:
    """Wall-clock seconds of one call (the setup steps reported apart) and its value."""
    start = time.perf_counter()
    value = function()
    return time.perf_counter() - start, value


def metrics_row(table: pl.DataFrame) -> Result:
    """The metric columns of a one-row table (its text columns, such as ``item_desc``,
    left out)."""
    row = table.select(cs.numeric()).row(0, named=True)
    return Result({n: np.array([float(v)]) for n, v in row.items()})


def ranx_names() -> dict[str, str]:
    names = {f"{m}@{k}": f"{RANX_FOR[m]}@{k}" for k in K for m in RANX_FOR}
    names |= {"mrr": "mrr", "map": "map", "ndcg": "ndcg", "ndcg_exp": "ndcg_burges",
              "r_precision": "r-precision"}  # fmt: skip
    return names


@ALL.peer(
    "calib_frames_all",
    role="subject",
    what='ranking_metrics(run.lazy(), qrels.lazy(), k=(1, 5, 10), no_relevant="zero")',
    normalise=lambda out, src: metrics_row(out),
)
def run_all(src: Source) -> pl.DataFrame:
    return ranking_metrics(
        src.table().lazy(), src.extra["qrels"].lazy(), k=K, no_relevant="zero"
    ).collect()


@ALL.peer(
    "ranx",
    what="ranx.evaluate(qrels, run, <the same 29 metrics>) on prebuilt Qrels/Run, warm",
    normalise=lambda out, src: Result(
        {name: np.array([float(out[theirs])]) for name, theirs in ranx_names().items()}
    ),
    needs="ranx",
    fields=tuple(ranx_names()),
)
def run_ranx(src: Source) -> dict[str, Any]:
    import ranx

    r_qrels, r_run = src.extra["ranx"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ranx.evaluate(r_qrels, r_run, list(ranx_names().values()))


def prepare_ranx(run: pl.DataFrame, qrels: pl.DataFrame) -> tuple[dict[str, float], Any]:
    """Compile (a 2-query run), build Qrels/Run from dicts and the first call: timed apart.

    Returns their seconds and the prebuilt (Qrels, Run), which ``run_ranx`` gets through the
    source.
    """
    import ranx

    def as_dict(frame: pl.DataFrame, value: str) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        grouped = frame.group_by("query", maintain_order=True).agg("item", value)
        for q, items, values in grouped.iter_rows():
            out[str(q)] = dict(zip(map(str, items), values, strict=True))
        return out

    run_dict, qrels_dict = as_dict(run, "score"), as_dict(qrels, "relevance")
    names = list(ranx_names().values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiny_q = ranx.Qrels({"a": {"x": 1}, "b": {"y": 2}})
        tiny_r = ranx.Run({"a": {"x": 1.0, "z": 0.5}, "b": {"y": 0.3, "x": 0.9}})
        compile_s, _ = seconds_of(lambda: ranx.evaluate(tiny_q, tiny_r, names))
        build_s, built = seconds_of(lambda: (ranx.Qrels(qrels_dict), ranx.Run(run_dict)))
        first_s, _ = seconds_of(lambda: ranx.evaluate(*built, names))
    return {"ranx_compile": compile_s, "ranx_build": build_s, "ranx_first_call": first_s}, built


@K10.peer(
    "calib_frames_k10",
    role="subject",
    what='ranking_metrics(..., k=10, no_relevant="zero") (13 columns)',
    normalise=lambda out, src: metrics_row(out),
)
def run_k10(src: Source) -> pl.DataFrame:
    return ranking_metrics(
        src.table().lazy(), src.extra["qrels"].lazy(), k=10, no_relevant="zero"
    ).collect()


@K10.peer(
    "torchmetrics",
    what="Retrieval{HitRate, Precision, Recall, MRR, MAP, NormalizedDCG}(top_k=10), "
    "RetrievalRPrecision: update + compute (timed once)",
    # torchmetrics' MAP@k divides by the relevant items found in the top k, not by R
    normalise=lambda out, src: Result({n: np.array([out[n]]) for n in TM_NAMES}),
    needs="torchmetrics",
    fields=TM_NAMES,
)
def run_torchmetrics(src: Source) -> dict[str, float]:
    preds, graded, indexes, metrics = src.extra["torch"]
    binary = graded >= 1
    values = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, metric in metrics.items():
            target = graded if name == "ndcg@10" else binary
            metric.update(preds, target, indexes=indexes)
            values[name] = float(metric.compute())
    return values


def prepare_torchmetrics(run: pl.DataFrame, qrels: pl.DataFrame) -> tuple[Any, ...]:
    """The tensors and metric objects (not timed)."""
    import torch
    from torchmetrics import retrieval as tr

    joined = run.join(qrels, on=["query", "item"], how="left").with_columns(
        pl.col("relevance").fill_null(0)
    )
    metrics = {
        "hit@10": tr.RetrievalHitRate(top_k=10),
        "precision@10": tr.RetrievalPrecision(top_k=10),
        "recall@10": tr.RetrievalRecall(top_k=10),
        "mrr@10": tr.RetrievalMRR(top_k=10),
        "map@10": tr.RetrievalMAP(top_k=10),
        "ndcg@10": tr.RetrievalNormalizedDCG(top_k=10),
        "r_precision": tr.RetrievalRPrecision(),
    }
    return (
        torch.tensor(joined["score"].to_numpy()),
        torch.tensor(joined["relevance"].to_numpy()),
        torch.tensor(joined["query"].to_numpy()),
        metrics,
    )


def ranking_paths(n_queries: int, args: argparse.Namespace) -> tuple[Path, Path]:
    """Parquet copies of the run and qrels of one size (written once, then reused)."""
    tag = f"v1_q{n_queries}_i{args.items}_j{args.judged}_s{args.seed}"
    paths = (args.data_dir / f"ranking_run_{tag}.parquet",
             args.data_dir / f"ranking_qrels_{tag}.parquet")  # fmt: skip
    if not all(path.exists() for path in paths):
        args.data_dir.mkdir(parents=True, exist_ok=True)
        for frame, path in zip(
            make_data(n_queries, args.items, args.judged, args.seed), paths, strict=True
        ):
            frame.write_parquet(path, row_group_size=2**20)
    return paths


def prepare_memory(payload: dict[str, Any]) -> Any:
    """``prepare`` of one peak-memory run (``harness.peak_rss``): the call to measure."""
    if payload["source"] == "parquet":
        run, qrels = pl.scan_parquet(payload["run"]), pl.scan_parquet(payload["qrels"])
    else:
        built = make_data(payload["queries"], payload["items"], payload["judged"], payload["seed"])
        run, qrels = built[0].lazy(), built[1].lazy()
    return lambda: ranking_metrics(run, qrels, k=K, no_relevant="zero").collect()


def memory_runs(n_queries: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Peak RSS of one ``calib_frames_all`` call per source in a fresh interpreter."""
    run_path, qrels_path = ranking_paths(n_queries, args)
    out = []
    for source in ("memory", "parquet"):
        payload = {"source": source, "queries": n_queries, "items": args.items,
                   "judged": args.judged, "seed": args.seed, "run": str(run_path),
                   "qrels": str(qrels_path), "preload": []}  # fmt: skip
        peak = harness.peak_rss("benchmarks.bench_ranking:prepare_memory", payload)
        out.append({"queries": n_queries, "source": source, **peak})
    return out


def print_scale(runs: list[dict[str, Any]], memory: list[dict[str, Any]]) -> None:
    """Seconds against linear growth from the smallest size; the peak memory per source."""
    timed = [r for r in runs if "calib_frames_all" in r["seconds"]]
    if len(timed) > 1:
        first = timed[0]
        print("\n## Scale (calib_frames_all seconds / (size ratio x smallest size's seconds))\n")
        for r in timed:
            linear = r["rows"] / first["rows"] * first["seconds"]["calib_frames_all"]
            print(f"{r['groups']:.0e} queries: {r['seconds']['calib_frames_all']:.2f} s, "
                  f"{r['seconds']['calib_frames_all'] / linear:.2f} x linear")  # fmt: skip
    if memory:
        print("\n## Peak memory of one calib_frames_all call (fresh interpreter)\n")
        print("| queries | source | seconds | baseline MiB | peak MiB | peak - baseline MiB |")
        print("|---|---|---|---|---|---|")
        for m in memory:
            if "error" in m:
                print(f"| {m['queries']:.0e} | {m['source']} | error: {m['error']} | | | |")
                continue
            print(f"| {m['queries']:.0e} | {m['source']} | {m['seconds']:.2f} "
                  f"| {m['baseline_mb']:,.0f} | {m['peak_mb']:,.0f} "
                  f"| {m['peak_mb'] - m['baseline_mb']:,.0f} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=float, nargs="+", default=[1e4])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--judged", type=int, default=10)
    parser.add_argument("--peer-max-queries", type=float, default=1e5)
    parser.add_argument("--no-torchmetrics", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2, help="best of N (torchmetrics: 1)")
    parser.add_argument("--quick", action="store_true", help="300 queries x 20 items: seconds")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="the parquet copies")
    parser.add_argument(
        "--no-memory", action="store_true", help="skip the fresh-process peak-memory runs"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.queries, args.items, args.judged, args.repeats = [300], 20, 5, 1
    env = harness.environment()
    report.print_header("Ranking metrics against ranx and torchmetrics", env)
    print(f"\n{args.items} items per query, {args.judged} judged")
    runs: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    failed = 0
    for q in args.queries:
        got, bad = bench_size(int(q), args)
        runs += got
        failed += bad
        if not args.no_memory:
            memory += memory_runs(int(q), args)
    failed += sum("error" in m for m in memory)
    report.summary(runs, reference="calib_frames_all")
    report.summary(runs, reference="calib_frames_k10")
    print_scale(runs, memory)
    report.save_json(args.json, environment=env, runs=runs, memory=memory)
    print("\ncross-check ok" if not failed else f"\n{failed} check(s) FAILED")
    return 1 if failed else 0


def bench_size(n_queries: int, args: argparse.Namespace) -> tuple[list[dict[str, Any]], int]:
    """One size: calib_frames, then the peers on the same frames (two tables)."""
    run, qrels = make_data(n_queries, args.items, args.judged, args.seed)
    rows = run.height
    peers_too = n_queries <= args.peer_max_queries
    if not peers_too:
        print(f"\n(peers not run above --peer-max-queries {args.peer_max_queries:g})")
    setup: dict[str, float] = {}
    extra: dict[str, Any] = {"qrels": qrels}
    if peers_too and ALL["ranx"].available():
        setup, extra["ranx"] = prepare_ranx(run, qrels)
    if peers_too and not args.no_torchmetrics and K10["torchmetrics"].available():
        extra["torch"] = prepare_torchmetrics(run, qrels)
    src = frame_source(run, Spec(rows, n_queries, 1), **extra)
    out, failed = [], 0
    for registry, names in ((ALL, ["ranx"]), (K10, ["torchmetrics"])):
        wanted = names if peers_too and not (registry is K10 and args.no_torchmetrics) else []
        best, checks, errors = harness.time_interleaved(
            src, registry.select(wanted), args.repeats, once=("torchmetrics",),
            tolerance=TM_TOLERANCE if registry is K10 else harness.TOLERANCE,
            highlight=("ndcg@10", "recall@10"),
        )  # fmt: skip
        title = f"{n_queries:.0e} queries x {args.items} items, {registry.reference}"
        report.print_table(title, best, checks, errors, reference=registry.reference,
                           rows=rows, highlight=("ndcg@10", "recall@10"))  # fmt: skip
        failed += report.failures(checks, errors)
        out.append({"rows": rows, "groups": n_queries, "source": registry.reference,
                    "repeats": args.repeats, "seconds": best, "checks": checks,
                    "errors": errors})  # fmt: skip
    if setup:
        print("\nranx, reported apart: " + ", ".join(f"{k} {v:.2f} s" for k, v in setup.items()))
        out[0]["ranx_setup_seconds"] = setup
    return out, failed


if __name__ == "__main__":
    sys.exit(main())
