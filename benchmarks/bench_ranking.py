#!/usr/bin/env python
"""Benchmark: calib_frames' ranking metrics side by side with ranx and torchmetrics, in one run.

Run from the repository root::

    python benchmarks/bench_ranking.py                          # quick: 10^4 queries
    python benchmarks/bench_ranking.py --queries 1e5 1e6 --peer-max-queries 1e5

Workload
--------
``Q`` queries × ``--items`` (100) retrieved items each: ``query`` and ``item`` Int64, ``score``
Float64 uniform (no ties), in query order. Qrels: ``--judged`` (10) distinct items per query,
relevance uniform in {0, 1, 2, 3}; every judged item is retrieved, so R and the ideal DCG are
the same whether a library takes them from the qrels (calib_frames, ranx) or from the
retrieved list (torchmetrics).

Methods (same numbers, cross-checked below)
-------------------------------------------
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
``--repeats`` (2) calls each.
"""

from __future__ import annotations

import argparse
import gc
import time
import warnings
from collections.abc import Callable

import numpy as np
import polars as pl

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


REPEATS = 2


def timed(function: Callable[[], object], repeats: int | None = None) -> tuple[float, object]:
    """Best wall-clock seconds of ``repeats`` calls (default ``--repeats``) and the value."""
    best, value = float("inf"), None
    for _ in range(REPEATS if repeats is None else repeats):
        gc.collect()
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return best, value


def ranx_names() -> dict[str, str]:
    names = {f"{m}@{k}": f"{RANX_FOR[m]}@{k}" for k in K for m in RANX_FOR}
    names |= {"mrr": "mrr", "map": "map", "ndcg": "ndcg", "ndcg_exp": "ndcg_burges",
              "r_precision": "r-precision"}  # fmt: skip
    return names


def run_ranx(run: pl.DataFrame, qrels: pl.DataFrame, ours: dict[str, float]) -> dict[str, object]:
    import ranx

    def as_dict(frame: pl.DataFrame, value: str) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        grouped = frame.group_by("query", maintain_order=True).agg("item", value)
        for q, items, values in grouped.iter_rows():
            out[str(q)] = dict(zip(map(str, items), values, strict=True))
        return out

    run_dict, qrels_dict = as_dict(run, "score"), as_dict(qrels, "relevance")
    names = ranx_names()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tiny_q = ranx.Qrels({"a": {"x": 1}, "b": {"y": 2}})
        tiny_r = ranx.Run({"a": {"x": 1.0, "z": 0.5}, "b": {"y": 0.3, "x": 0.9}})
        compile_s, _ = timed(lambda: ranx.evaluate(tiny_q, tiny_r, list(names.values())), 1)
        build_s, built = timed(lambda: (ranx.Qrels(qrels_dict), ranx.Run(run_dict)), 1)
        r_qrels, r_run = built  # type: ignore[misc]
        first_s, result = timed(lambda: ranx.evaluate(r_qrels, r_run, list(names.values())), 1)
        seconds, result = timed(lambda: ranx.evaluate(r_qrels, r_run, list(names.values())))
    assert isinstance(result, dict)
    diffs = {name: abs(float(result[theirs]) - ours[name]) for name, theirs in names.items()}
    worst = max(diffs, key=lambda name: diffs[name])
    diff = diffs[worst]
    return {"seconds": seconds, "first": first_s, "build": build_s, "compile": compile_s,
            "max_abs_diff": diff, "worst": worst}  # fmt: skip


def run_torchmetrics(
    run: pl.DataFrame, qrels: pl.DataFrame, ours: dict[str, float]
) -> dict[str, object]:
    import torch
    from torchmetrics import retrieval as tr

    joined = run.join(qrels, on=["query", "item"], how="left").with_columns(
        pl.col("relevance").fill_null(0)
    )
    preds = torch.tensor(joined["score"].to_numpy())
    graded = torch.tensor(joined["relevance"].to_numpy())
    binary = graded >= 1
    indexes = torch.tensor(joined["query"].to_numpy())
    metrics = {
        "hit@10": (tr.RetrievalHitRate(top_k=10), binary),
        "precision@10": (tr.RetrievalPrecision(top_k=10), binary),
        "recall@10": (tr.RetrievalRecall(top_k=10), binary),
        "mrr@10": (tr.RetrievalMRR(top_k=10), binary),
        "map@10": (tr.RetrievalMAP(top_k=10), binary),
        "ndcg@10": (tr.RetrievalNormalizedDCG(top_k=10), graded),
        "r_precision": (tr.RetrievalRPrecision(), binary),
    }

    def compute() -> dict[str, float]:
        values = {}
        for name, (metric, target) in metrics.items():
            metric.update(preds, target, indexes=indexes)
            values[name] = float(metric.compute())
        return values

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seconds, values = timed(compute, 1)
    assert isinstance(values, dict)
    # torchmetrics' MAP@k divides by the relevant items found in the top k, not by R
    diffs = {name: abs(values[name] - ours[name]) for name in metrics if name != "map@10"}
    return {"seconds": seconds, "max_abs_diff": max(diffs.values()), "diffs": diffs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=float, nargs="+", default=[1e4])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--judged", type=int, default=10)
    parser.add_argument("--peer-max-queries", type=float, default=1e5)
    parser.add_argument("--no-torchmetrics", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2, help="best of N (torchmetrics: 1)")
    args = parser.parse_args()
    global REPEATS  # noqa: PLW0603
    REPEATS = args.repeats
    print(f"polars {pl.__version__}, {args.items} items per query, {args.judged} judged")
    for q in args.queries:
        bench_size(int(q), args)


def bench_size(n_queries: int, args: argparse.Namespace) -> None:
    """One size: calib_frames, then the peers on the same frames."""
    run, qrels = make_data(n_queries, args.items, args.judged, args.seed)
    rows = run.height
    print(f"\n== {n_queries:,} queries x {args.items} items = {rows:,} run rows ==")
    lazy_run, lazy_qrels = run.lazy(), qrels.lazy()
    # ranx and torchmetrics score a query without relevant items 0: no_relevant="zero"
    ours_s, table = timed(
        lambda: ranking_metrics(lazy_run, lazy_qrels, k=K, no_relevant="zero").collect()
    )
    assert isinstance(table, pl.DataFrame)
    ours = table.row(0, named=True)
    print(f"calib_frames_all  {ours_s:8.2f} s  ({rows / ours_s / 1e6:.2f} M rows/s)")
    k10_s, _ = timed(
        lambda: ranking_metrics(lazy_run, lazy_qrels, k=10, no_relevant="zero").collect()
    )
    print(f"calib_frames_k10  {k10_s:8.2f} s")
    if n_queries > args.peer_max_queries:
        print("peers skipped at this size (--peer-max-queries)")
        return
    rx = run_ranx(run, qrels, ours)
    seconds = float(rx["seconds"])  # type: ignore[arg-type]
    print(
        f"ranx              {seconds:8.2f} s  ratio {seconds / ours_s:6.2f}"
        f"  (first call {rx['first']:.2f} s, build {rx['build']:.2f} s,"
        f" compile {rx['compile']:.2f} s, max |diff| {rx['max_abs_diff']:.1e} in {rx['worst']})"
    )
    if not args.no_torchmetrics:
        tm = run_torchmetrics(run, qrels, ours)
        seconds = float(tm["seconds"])  # type: ignore[arg-type]
        print(
            f"torchmetrics      {seconds:8.2f} s  ratio {seconds / k10_s:6.2f}"
            f"  vs calib_frames_k10 (max |diff| {tm['max_abs_diff']:.1e}, map@10 aside)"
        )


if __name__ == "__main__":
    main()
