#!/usr/bin/env python
"""Benchmark: calib_frames' grouped calibration metrics side by side with peers, in one run.

Run from the repository root (see BENCHMARKS.md)::

    .venv/bin/python benchmarks/bench_metrics.py                         # full workload
    .venv/bin/python benchmarks/bench_metrics.py --sizes 1e6 --groups 200 --repeats 1   # quick

Workload
--------
Synthetic predictions with two integer group keys ``model`` and ``task`` (Int32; 200 groups =
20 x 10, 2000 groups = 50 x 40, or ``--groups AxB``), ``confidence`` (Float64, Beta(3, 1.5)) and
``correct`` (Boolean, Bernoulli(clip(confidence + bias[group], 0, 1)) with a per-group bias in
[-0.15, 0.05], so groups differ in calibration). Rows are in random group order. Two sources:

* ``memory``: the rows already loaded (a polars DataFrame; numpy arrays / an Arrow table of the
  same columns for the peers that want those; the conversions are not timed);
* ``parquet``: a file written once per (rows, groups, seed) under ``--data-dir`` (zstd, row
  groups of 2^20 rows) and reused when present. Reads hit the warm OS page cache.

Every method computes the same information for 10 equal-width bins: the per-(group, bin)
reliability table (count, mean confidence, accuracy) and per group ECE, MCE, RMSCE, Brier,
reliability, resolution, uncertainty, within-bin variance and covariance, and log loss.

Methods
-------
calib_frames     ``cf.bin_statistics(source, by=["model", "task"])`` (lazy input: ``.collect()``),
                 then ``cf.metrics_from_bin_statistics(stats)`` on the small table (eager).
numpy_whole      whole-array numpy: ``np.bincount`` over ``(group * M + bin)`` with weights p, y,
                 p^2, p*y, (p - y)^2 and the log loss terms, then the formulas on (G, M) arrays.
numpy_chunked    the same kernel over chunks of ``--chunk-rows`` rows (parquet: ``iter_batches``
                 with ``pre_buffer=False``, so that memory stays flat),
                 accumulating the bincounts. Both numpy peers are given dense integer group codes
                 (model * n_tasks + task) for free: they need no hashing of the keys.
duckdb           SQL ``GROUP BY model, task, bin`` into a temp table, then the reduction in SQL;
                 in memory the Arrow table is registered, from parquet ``read_parquet(...)``.
polars_naive     ``with_columns(bin=floor(p*M).clip) -> group_by(keys + bin).agg(sums)``
                 collected on polars' default engine, then ``group_by(keys).agg(metrics)``.
polars_exactbin  (ablation) polars_naive with calib_frames' exact-edge ``Binning.assign``
                 instead of ``floor(p*M)``: isolates the cost of exact binning; the rest of
                 calib_frames' cost is the input checks and the zero-filled grid/join/sort.
sklearn_loop     per-group Python loop: ``calibration_curve`` + ``brier_score_loss`` +
                 ``log_loss`` per group, the remaining terms with numpy (only up to
                 ``--sklearn-max-rows`` rows; it is slow).
floor            the unavoidable cost of touching the needed columns once: in memory,
                 ``df.select(<sum of each column>)``; from parquet the same on
                 ``pl.scan_parquet`` (one streaming decode of every value).
floor_read       (parquet only) ``pyarrow.parquet.read_table`` of the four columns.

Peers bin with the idiomatic ``floor(p * M)`` clipped to [0, M-1] (scikit-learn with its own
``np.linspace``/``searchsorted`` binning). Unlike calib_frames, these misplace some values lying
exactly on an edge k/M; random doubles essentially never hit an edge, so the numbers agree, and
the cross-check below would flag any count that differs.

Output
------
For each (rows, groups, source): best-of-N wall-clock seconds per method (repeats interleaved
in one process), ``ratio`` = method seconds / calib_frames seconds (> 1: calib_frames is
faster), calib_frames / floor, and the correctness cross-check against calib_frames: max abs
difference of per-(group, bin) counts, per-group ECE and Brier, and of every other output
(reliability-table means and the other metrics). A difference > 1e-9 (or any count difference)
is flagged MISMATCH. For the parquet source, peak RSS of a fresh subprocess per method and size
(``--memory-methods``), to show whether peak memory is flat in the number of rows. A summary
checks the targets of the issue. ``--json PATH`` saves everything.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

import calib_frames as cf

KEYS = ["model", "task"]
COLUMNS = ["model", "task", "confidence", "correct"]
METRICS = (
    "ece",
    "mce",
    "rmsce",
    "brier",
    "reliability",
    "resolution",
    "uncertainty",
    "within_bin_variance",
    "within_bin_covariance",
    "log_loss",
)
TOLERANCE = 1e-9
DATA_VERSION = 1  # bump when the generator changes, so cached parquet files are not reused
ROOT = Path(__file__).resolve().parent
DEFAULT_GROUPS = {200: (20, 10), 2000: (50, 40)}


# ---------------------------------------------------------------------------------------------
# workload


@dataclass(frozen=True)
class Spec:
    rows: int
    n_models: int
    n_tasks: int
    n_bins: int
    seed: int

    @property
    def groups(self) -> int:
        return self.n_models * self.n_tasks

    @property
    def label(self) -> str:
        return f"{self.rows:.0e} rows x {self.groups} groups ({self.n_models}x{self.n_tasks})"


def generate(spec: Spec, block: int = 10_000_000) -> pl.DataFrame:
    """The synthetic predictions, drawn in blocks (deterministic for a given spec)."""
    rng = np.random.default_rng(spec.seed)
    bias = rng.uniform(-0.15, 0.05, spec.groups)
    model = np.empty(spec.rows, np.int32)
    task = np.empty(spec.rows, np.int32)
    p = np.empty(spec.rows, np.float64)
    y = np.empty(spec.rows, np.bool_)
    for lo in range(0, spec.rows, block):
        hi = min(lo + block, spec.rows)
        k = hi - lo
        model[lo:hi] = rng.integers(0, spec.n_models, k, dtype=np.int32)
        task[lo:hi] = rng.integers(0, spec.n_tasks, k, dtype=np.int32)
        p[lo:hi] = rng.beta(3.0, 1.5, k)
        truth = np.clip(p[lo:hi] + bias[model[lo:hi] * spec.n_tasks + task[lo:hi]], 0.0, 1.0)
        y[lo:hi] = rng.random(k) < truth
    return pl.DataFrame({"model": model, "task": task, "confidence": p, "correct": y})


def parquet_path(spec: Spec, data_dir: Path) -> Path:
    name = f"preds_v{DATA_VERSION}_n{spec.rows}_{spec.n_models}x{spec.n_tasks}_s{spec.seed}.parquet"
    return data_dir / name


def ensure_data(spec: Spec, data_dir: Path, row_group_rows: int) -> tuple[Path, float]:
    """Write the parquet file unless a complete one is present; return (path, seconds)."""
    path = parquet_path(spec, data_dir)
    if path.exists():
        try:
            if pq.ParquetFile(path).metadata.num_rows == spec.rows:
                return path, 0.0
        except (OSError, pa.ArrowException):
            pass
    data_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    frame = generate(spec)
    tmp = path.with_suffix(".tmp")
    frame.write_parquet(tmp, compression="zstd", statistics=True, row_group_size=row_group_rows)
    with open(tmp, "rb+") as fh:  # flush it now: writeback must not overlap the timings
        os.fsync(fh.fileno())
    tmp.replace(path)
    return path, time.perf_counter() - t0


@dataclass
class Source:
    kind: str  # "memory" | "parquet"
    spec: Spec
    path: Path
    chunk_rows: int
    df: pl.DataFrame | None = None
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    arrow: pa.Table | None = None
    _duck: Any = None

    def duck(self) -> Any:
        """A DuckDB connection (created once, not timed); ``preds`` is the registered table."""
        if self._duck is None:
            import duckdb

            self._duck = duckdb.connect()
            if self.kind == "memory":
                self._duck.register("preds", self.arrow)
        return self._duck

    def duck_source(self) -> str:
        if self.kind == "memory":
            return "preds"
        return "read_parquet('" + str(self.path).replace("'", "''") + "')"

    def lazy(self) -> pl.LazyFrame:
        if self.kind == "memory":
            assert self.df is not None
            return self.df.lazy()
        return pl.scan_parquet(self.path)

    def close(self) -> None:
        if self._duck is not None:
            self._duck.close()
            self._duck = None


def memory_source(spec: Spec, path: Path, chunk_rows: int) -> Source:
    df = pl.read_parquet(path, columns=COLUMNS)
    arrays = {name: df[name].to_numpy() for name in COLUMNS}
    return Source("memory", spec, path, chunk_rows, df=df, arrays=arrays, arrow=df.to_arrow())


# ---------------------------------------------------------------------------------------------
# the common result format (built outside the timed region) and the cross-check


@dataclass
class Result:
    count: np.ndarray  # (G * M,) int64, cell = group * M + bin, group = model * n_tasks + task
    mean_confidence: np.ndarray  # (G * M,), 0.0 for empty cells
    accuracy: np.ndarray  # (G * M,), 0.0 for empty cells
    metrics: dict[str, np.ndarray]  # name -> (G,)


def from_frames(rel: pl.DataFrame, met: pl.DataFrame, spec: Spec) -> Result:
    """Result from a reliability frame (model, task, bin, count, mean_confidence, accuracy)
    and a metrics frame (model, task, METRICS...); missing cells are empty, missing groups NaN."""
    m, g = spec.n_bins, spec.groups
    cell = (rel["model"].to_numpy().astype(np.int64) * spec.n_tasks + rel["task"].to_numpy()) * m
    cell = cell + rel["bin"].to_numpy()
    count = np.zeros(g * m, np.int64)
    mean_confidence = np.zeros(g * m)
    accuracy = np.zeros(g * m)
    count[cell] = rel["count"].to_numpy()
    mean_confidence[cell] = rel["mean_confidence"].to_numpy()
    accuracy[cell] = rel["accuracy"].to_numpy()
    group = met["model"].to_numpy().astype(np.int64) * spec.n_tasks + met["task"].to_numpy()
    metrics = {}
    for name in METRICS:
        if name not in met.columns:  # reported as "missing" by compare()
            continue
        values = np.full(g, np.nan)
        values[group] = met[name].to_numpy()
        metrics[name] = values
    return Result(count, mean_confidence, accuracy, metrics)


def compare(ref: Result, other: Result) -> dict[str, Any]:
    """Max abs differences against calib_frames' result (NaN anywhere counts as infinite)."""

    def diff(a: np.ndarray, b: np.ndarray) -> float:
        d = np.abs(a.astype(np.float64) - b.astype(np.float64))
        return float("inf") if np.isnan(d).any() else float(d.max(initial=0.0))

    count = diff(ref.count, other.count)
    missing = [name for name in METRICS if name not in ref.metrics or name not in other.metrics]
    common = [name for name in METRICS if name not in missing]
    ece = diff(ref.metrics["ece"], other.metrics["ece"]) if "ece" in common else float("inf")
    brier = (
        diff(ref.metrics["brier"], other.metrics["brier"]) if "brier" in common else float("inf")
    )
    rest = {name: diff(ref.metrics[name], other.metrics[name]) for name in common}
    rest.pop("ece", None)
    rest.pop("brier", None)
    rest["mean_confidence"] = diff(ref.mean_confidence, other.mean_confidence)
    rest["accuracy"] = diff(ref.accuracy, other.accuracy)
    worst = max(rest, key=lambda k: rest[k])
    ok = count == 0 and not missing and max(ece, brier, rest[worst]) <= TOLERANCE
    return {
        "count": count,
        "ece": ece,
        "brier": brier,
        "other": rest[worst],
        "other_name": worst,
        "missing": missing,
        "ok": ok,
    }


def reduce_sums(sums: dict[str, np.ndarray], spec: Spec) -> tuple[Result, dict[str, np.ndarray]]:
    """The per-group formulas on (G, M) arrays of bin sums (used by the numpy peers)."""
    shape = (spec.groups, spec.n_bins)
    w = sums["n"].reshape(shape).astype(np.float64)
    s, y = sums["s"].reshape(shape), sums["y"].reshape(shape)
    pp, py = sums["pp"].reshape(shape), sums["py"].reshape(shape)
    pop = w > 0
    total = w.sum(axis=1)
    safe_w = np.where(pop, w, 1.0)
    mean_p = np.where(pop, s / safe_w, 0.0)
    mean_y = np.where(pop, y / safe_w, 0.0)
    acc = y.sum(axis=1) / total
    reliability = np.where(pop, (s - y) ** 2 / safe_w, 0.0).sum(axis=1) / total
    metrics = {
        "ece": np.abs(s - y).sum(axis=1) / total,
        "mce": np.where(pop, np.abs(mean_p - mean_y), 0.0).max(axis=1),
        "rmsce": np.sqrt(reliability),
        "brier": sums["se"].reshape(shape).sum(axis=1) / total,
        "reliability": reliability,
        "resolution": np.where(pop, w * (mean_y - acc[:, None]) ** 2, 0.0).sum(axis=1) / total,
        "uncertainty": acc * (1.0 - acc),
        "within_bin_variance": np.where(pop, pp - s * s / safe_w, 0.0).sum(axis=1) / total,
        "within_bin_covariance": -2.0 * np.where(pop, py - s * y / safe_w, 0.0).sum(axis=1) / total,
        "log_loss": sums["ll"].reshape(shape).sum(axis=1) / total,
    }
    count = sums["n"].astype(np.int64)
    return Result(count, mean_p.ravel(), mean_y.ravel(), metrics), metrics


# ---------------------------------------------------------------------------------------------
# methods: run(source) is timed, normalize(output, spec) is not


def run_calib_frames(src: Source) -> tuple[pl.DataFrame, pl.DataFrame]:
    frame: pl.DataFrame | pl.LazyFrame = src.df if src.kind == "memory" else src.lazy()
    assert frame is not None
    stats = cf.bin_statistics(frame, by=KEYS, bins=src.spec.n_bins)
    if isinstance(stats, pl.LazyFrame):
        stats = stats.collect()
    return stats, cf.metrics_from_bin_statistics(stats)


def norm_calib_frames(out: tuple[pl.DataFrame, pl.DataFrame], spec: Spec) -> Result:
    stats, metrics = out
    return from_frames(stats, metrics, spec)


def numpy_sums(
    model: np.ndarray, task: np.ndarray, p: np.ndarray, y: np.ndarray, spec: Spec
) -> dict[str, np.ndarray]:
    """One pass of the numpy kernel: bincounts over group * M + floor(p * M)."""
    m = spec.n_bins
    size = spec.groups * m
    b = np.floor(p * m)
    np.clip(b, 0, m - 1, out=b)
    idx = (model.astype(np.int64) * spec.n_tasks + task) * m + b.astype(np.int64)
    del b
    yf = y.astype(np.float64)
    d = p - yf
    return {
        "n": np.bincount(idx, minlength=size),
        "s": np.bincount(idx, weights=p, minlength=size),
        "y": np.bincount(idx, weights=yf, minlength=size),
        "pp": np.bincount(idx, weights=p * p, minlength=size),
        "py": np.bincount(idx, weights=p * yf, minlength=size),
        "se": np.bincount(idx, weights=d * d, minlength=size),
        "ll": np.bincount(idx, weights=-np.log(np.where(y, p, 1.0 - p)), minlength=size),
    }


def _numpy_columns(table: pa.Table | pa.RecordBatch) -> list[np.ndarray]:
    return [table.column(name).to_numpy(zero_copy_only=False) for name in COLUMNS]


def run_numpy_whole(src: Source) -> tuple[Result, dict[str, np.ndarray]]:
    if src.kind == "memory":
        cols = [src.arrays[name] for name in COLUMNS]
    else:
        cols = _numpy_columns(pq.read_table(src.path, columns=COLUMNS))
    return reduce_sums(numpy_sums(*cols, src.spec), src.spec)


def _accumulate(chunks: Any, spec: Spec) -> dict[str, np.ndarray]:
    total: dict[str, np.ndarray] | None = None
    for cols in chunks:
        part = numpy_sums(*cols, spec)
        if total is None:
            total = part
        else:
            for key, value in part.items():
                total[key] += value
    assert total is not None
    return total


def run_numpy_chunked(src: Source) -> tuple[Result, dict[str, np.ndarray]]:
    k = src.chunk_rows
    if src.kind == "memory":
        arrays = [src.arrays[name] for name in COLUMNS]
        n = len(arrays[0])
        chunks: Any = ([a[lo : lo + k] for a in arrays] for lo in range(0, n, k))
    else:
        # pre_buffer=False: pyarrow's default pre-buffering holds ~0.9 GB at 1e8 rows here
        reader = pq.ParquetFile(src.path, pre_buffer=False)
        batches = reader.iter_batches(batch_size=k, columns=COLUMNS)
        chunks = (_numpy_columns(batch) for batch in batches)
    return reduce_sums(_accumulate(chunks, src.spec), src.spec)


def norm_numpy(out: tuple[Result, dict[str, np.ndarray]], spec: Spec) -> Result:
    return out[0]


DUCK_BINS = """
CREATE OR REPLACE TEMP TABLE bench_bins AS
SELECT model, task,
       LEAST(GREATEST(FLOOR(confidence * {m}), 0), {m} - 1)::INTEGER AS bin,
       COUNT(*) AS n,
       SUM(confidence) AS s,
       SUM(correct::DOUBLE) AS y,
       SUM(confidence * confidence) AS pp,
       SUM(confidence * correct::DOUBLE) AS py,
       SUM((confidence - correct::DOUBLE) * (confidence - correct::DOUBLE)) AS se,
       SUM(-LN(CASE WHEN correct THEN confidence ELSE 1 - confidence END)) AS ll
FROM {source}
GROUP BY model, task, bin
"""
DUCK_RELIABILITY = """
SELECT model, task, bin, n AS count, s / n AS mean_confidence, y / n AS accuracy
FROM bench_bins ORDER BY model, task, bin
"""
DUCK_METRICS = """
WITH g AS (
    SELECT model, task, SUM(n)::DOUBLE AS total, SUM(y) / SUM(n)::DOUBLE AS acc
    FROM bench_bins GROUP BY model, task
)
SELECT model, task,
       SUM(ABS(s - y)) / total AS ece,
       MAX(ABS(s - y) / n) AS mce,
       SQRT(SUM((s - y) * (s - y) / n) / total) AS rmsce,
       SUM(se) / total AS brier,
       SUM((s - y) * (s - y) / n) / total AS reliability,
       SUM(n * (y / n - acc) * (y / n - acc)) / total AS resolution,
       acc * (1 - acc) AS uncertainty,
       SUM(pp - s * s / n) / total AS within_bin_variance,
       -2 * SUM(py - s * y / n) / total AS within_bin_covariance,
       SUM(ll) / total AS log_loss
FROM bench_bins JOIN g USING (model, task)
GROUP BY model, task, total, acc
ORDER BY model, task
"""


def run_duckdb(src: Source) -> tuple[pl.DataFrame, pl.DataFrame]:
    con = src.duck()
    con.execute(DUCK_BINS.format(m=src.spec.n_bins, source=src.duck_source()))
    rel = con.sql(DUCK_RELIABILITY).pl()
    met = con.sql(DUCK_METRICS).pl()
    con.execute("DROP TABLE bench_bins")
    return rel, met


def norm_frames(out: tuple[pl.DataFrame, pl.DataFrame], spec: Spec) -> Result:
    return from_frames(*out, spec)


def _polars_two_stage(lf: pl.LazyFrame, bin_expr: pl.Expr) -> tuple[pl.DataFrame, pl.DataFrame]:
    p = pl.col("confidence")
    y = pl.col("correct").cast(pl.Float64)
    bins = (
        lf.with_columns(bin=bin_expr)
        .group_by(*KEYS, "bin")
        .agg(
            count=pl.len(),
            s=p.sum(),
            y=y.sum(),
            pp=(p * p).sum(),
            py=(p * y).sum(),
            se=((p - y) * (p - y)).sum(),
            ll=(-pl.when(pl.col("correct")).then(p).otherwise(1.0 - p).log()).sum(),
        )
        .collect()
    )
    rel = bins.select(
        *KEYS,
        "bin",
        "count",
        mean_confidence=pl.col("s") / pl.col("count"),
        accuracy=pl.col("y") / pl.col("count"),
    ).sort(*KEYS, "bin")
    n = pl.col("count").cast(pl.Float64)
    s, ys = pl.col("s"), pl.col("y")
    total, acc = n.sum(), ys.sum() / n.sum()
    squared_gap = ((s - ys) * (s - ys) / n).sum() / total
    met = (
        bins.lazy()
        .group_by(KEYS)
        .agg(
            ece=(s - ys).abs().sum() / total,
            mce=((s - ys) / n).abs().max(),
            rmsce=squared_gap.sqrt(),
            brier=pl.col("se").sum() / total,
            reliability=squared_gap,
            resolution=(n * (ys / n - acc) ** 2).sum() / total,
            uncertainty=acc * (1.0 - acc),
            within_bin_variance=(pl.col("pp") - s * s / n).sum() / total,
            within_bin_covariance=-2.0 * (pl.col("py") - s * ys / n).sum() / total,
            log_loss=pl.col("ll").sum() / total,
        )
        .sort(KEYS)
        .collect()
    )
    return rel, met


def run_polars_naive(src: Source) -> tuple[pl.DataFrame, pl.DataFrame]:
    m = src.spec.n_bins
    bin_expr = (pl.col("confidence") * m).floor().clip(0, m - 1).cast(pl.UInt32)
    return _polars_two_stage(src.lazy(), bin_expr)


def run_polars_exactbin(src: Source) -> tuple[pl.DataFrame, pl.DataFrame]:
    bin_expr = cf.Binning.uniform(src.spec.n_bins).assign(pl.col("confidence"))
    return _polars_two_stage(src.lazy(), bin_expr)


def run_sklearn_loop(src: Source) -> Result:
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss, log_loss

    spec, m = src.spec, src.spec.n_bins
    if src.kind == "memory":
        model, task, p, y = (src.arrays[name] for name in COLUMNS)
    else:
        model, task, p, y = _numpy_columns(pq.read_table(src.path, columns=COLUMNS))
    gid = model.astype(np.int64) * spec.n_tasks + task
    order = np.argsort(gid, kind="stable")
    bounds = np.searchsorted(gid[order], np.arange(spec.groups + 1))
    inner_edges = np.linspace(0.0, 1.0, m + 1)[1:-1]  # scikit-learn's own bins
    count = np.zeros((spec.groups, m), np.int64)
    mean_p = np.zeros((spec.groups, m))
    mean_y = np.zeros((spec.groups, m))
    metrics = {name: np.full(spec.groups, np.nan) for name in METRICS}
    for g in range(spec.groups):
        rows = order[bounds[g] : bounds[g + 1]]
        if len(rows) == 0:
            continue
        pg, yg = p[rows], y[rows].astype(np.int8)
        prob_true, prob_pred = calibration_curve(yg, pg, n_bins=m, strategy="uniform")
        binids = np.searchsorted(inner_edges, pg)
        cnt = np.bincount(binids, minlength=m)
        nz = cnt > 0
        count[g], mean_p[g, nz], mean_y[g, nz] = cnt, prob_pred, prob_true
        frac = cnt[nz] / len(rows)
        gap = prob_pred - prob_true
        acc = yg.mean()
        dev_p, dev_y = pg - mean_p[g][binids], yg - mean_y[g][binids]
        reliability = float(np.sum(frac * gap**2))
        values = {
            "ece": np.sum(frac * np.abs(gap)),
            "mce": np.abs(gap).max(),
            "rmsce": np.sqrt(reliability),
            "brier": brier_score_loss(yg, pg),
            "reliability": reliability,
            "resolution": np.sum(frac * (prob_true - acc) ** 2),
            "uncertainty": acc * (1.0 - acc),
            "within_bin_variance": np.mean(dev_p**2),
            "within_bin_covariance": -2.0 * np.mean(dev_p * dev_y),
            "log_loss": log_loss(yg, pg, labels=[0, 1]),
        }
        for name, value in values.items():
            metrics[name][g] = value
    return Result(count.ravel(), mean_p.ravel(), mean_y.ravel(), metrics)


def norm_identity(out: Result, spec: Spec) -> Result:
    return out


def run_floor(src: Source) -> pl.DataFrame:
    sums = [pl.col(name).sum() for name in COLUMNS]
    if src.kind == "memory":
        assert src.df is not None
        return src.df.select(sums)
    return pl.scan_parquet(src.path).select(sums).collect()


def run_floor_read(src: Source) -> pa.Table:
    return pq.read_table(src.path, columns=COLUMNS)


@dataclass(frozen=True)
class Method:
    name: str
    role: str  # "subject" | "peer" | "ablation" | "floor"
    run: Callable[[Source], Any]
    normalize: Callable[[Any, Spec], Result] | None
    sources: tuple[str, ...] = ("memory", "parquet")
    needs: str | None = None  # optional module


METHODS = {
    m.name: m
    for m in [
        Method("calib_frames", "subject", run_calib_frames, norm_calib_frames),
        Method("floor", "floor", run_floor, None),
        Method("floor_read", "floor", run_floor_read, None, sources=("parquet",)),
        Method("numpy_whole", "peer", run_numpy_whole, norm_numpy),
        Method("numpy_chunked", "peer", run_numpy_chunked, norm_numpy),
        Method("duckdb", "peer", run_duckdb, norm_frames, needs="duckdb"),
        Method("polars_naive", "peer", run_polars_naive, norm_frames),
        Method("polars_exactbin", "ablation", run_polars_exactbin, norm_frames),
        Method("sklearn_loop", "peer", run_sklearn_loop, norm_identity, needs="sklearn"),
    ]
}


# ---------------------------------------------------------------------------------------------
# timing (interleaved repeats in this process) and peak memory (fresh subprocess per run)


def time_methods(
    src: Source, methods: list[Method], repeats: int
) -> tuple[dict[str, float], dict[str, dict[str, Any]], dict[str, str]]:
    """Best-of-``repeats`` seconds per method, the cross-check against calib_frames, errors."""
    best: dict[str, float] = {}
    results: dict[str, Result] = {}
    errors: dict[str, str] = {}
    for _ in range(repeats):
        for method in methods:
            if method.name in errors:
                continue
            gc.collect()
            try:
                t0 = time.perf_counter()
                out = method.run(src)
                seconds = time.perf_counter() - t0
            except Exception as exc:  # keep going: report the failure, time the others
                errors[method.name] = f"{type(exc).__name__}: {exc}"
                print(f"  !! {method.name} FAILED: {errors[method.name]}", flush=True)
                continue
            best[method.name] = min(seconds, best.get(method.name, float("inf")))
            if method.normalize is not None and method.name not in results:
                try:
                    results[method.name] = method.normalize(out, src.spec)
                except Exception as exc:
                    errors[method.name + " (output)"] = f"{type(exc).__name__}: {exc}"
                    print(f"  !! {method.name}: unexpected output: {exc}", flush=True)
                    results[method.name] = None  # type: ignore[assignment]
            del out
    checks: dict[str, dict[str, Any]] = {}
    ref = results.get("calib_frames")
    if ref is not None:  # a failed calib_frames run leaves nothing to compare against
        for name, result in results.items():
            if name != "calib_frames" and result is not None:
                checks[name] = compare(ref, result)
        # calib_frames' own internal consistency: counts add up to the rows
        if int(ref.count.sum()) != src.spec.rows:
            errors["calib_frames"] = f"counts sum to {ref.count.sum()}, not {src.spec.rows} rows"
    return best, checks, errors


def _proc_status_mb(field_name: str) -> float | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def child_main(args: argparse.Namespace) -> None:
    """Run one method once on a parquet file; print JSON with baseline and peak RSS.

    The peak is the kernel's high-water mark of resident memory (VmHWM), reset after the
    imports by writing 5 to /proc/self/clear_refs, so that a large transient peak while
    importing does not hide the query's own peak; without /proc it is ru_maxrss.
    """
    for optional in ("duckdb",):  # same imports for every method: comparable baselines
        with contextlib.suppress(ImportError):
            __import__(optional)
    models, tasks = parse_groups(args.groups)[0]
    spec = Spec(args.child_rows, models, tasks, args.bins, args.seed)
    src = Source("parquet", spec, Path(args.child_path), args.chunk_rows)
    method = METHODS[args.child]
    gc.collect()
    reset = False
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        reset = True
    except OSError:
        pass
    baseline = _proc_status_mb("VmRSS") if reset else None
    if baseline is None:
        baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    out = method.run(src)
    seconds = time.perf_counter() - t0
    peak = _proc_status_mb("VmHWM") if reset else None
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    del out
    src.close()
    print(
        json.dumps(
            {
                "baseline_mb": baseline,
                "peak_mb": peak,
                "seconds": seconds,
                "peak_source": "VmHWM after reset" if reset else "ru_maxrss",
            }
        )
    )


def measure_memory(spec: Spec, path: Path, name: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        name,
        "--child-path",
        str(path),
        "--child-rows",
        str(spec.rows),
        "--groups",
        f"{spec.n_models}x{spec.n_tasks}",
        "--bins",
        str(spec.n_bins),
        "--seed",
        str(spec.seed),
        "--chunk-rows",
        str(args.chunk_rows),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=3600)
    if proc.returncode != 0:
        tail = " / ".join(proc.stderr.strip().splitlines()[-3:]) or f"exit {proc.returncode}"
        print(f"  !! memory run of {name} failed: {tail}", flush=True)
        return {"error": tail}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# reporting


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {
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
        env["calib_frames_git"] = head + (
            " + uncommitted changes in calib_frames/" if dirty else ""
        )
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
            env[module] = __import__(module).__version__
        except ImportError:
            env[module] = "not installed (its peer is skipped)"
    if not str(env["duckdb"]).startswith("not"):
        import duckdb

        with duckdb.connect() as con:
            env["duckdb_threads"] = con.execute("SELECT current_setting('threads')").fetchall()[0][
                0
            ]
    return env


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def fmt_diff(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def print_table(
    spec: Spec, source: str, best: dict[str, float], checks: dict[str, Any], errors: dict[str, str]
) -> None:
    cf_t = best.get("calib_frames")
    print(f"\n### {spec.label}, source={source}  (load average after: {load()})\n")
    print(
        "| method | best s | ratio (method / calib_frames) | max abs diff: count | ECE | Brier |"
        " other (worst) | check |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for name, seconds in sorted(best.items(), key=lambda kv: kv[1]):
        ratio = f"{seconds / cf_t:.2f}" if cf_t else "-"
        if name in checks:
            c = checks[name]
            cells = [
                fmt_diff(c["count"]),
                fmt_diff(c["ece"]),
                fmt_diff(c["brier"]),
                f"{fmt_diff(c['other'])} ({c['other_name']})",
                "ok" if c["ok"] else "**MISMATCH**",
            ]
        elif name == "calib_frames":
            cells = ["ref", "ref", "ref", "ref", "ref"]
        else:
            cells = ["-"] * 4 + ["n/a"]
        print(f"| {name} | {seconds:.3f} | {ratio} | " + " | ".join(cells) + " |")
    floors = [best[k] for k in ("floor", "floor_read") if k in best]
    if cf_t and floors:
        print(
            f"\ncalib_frames / floor = {cf_t / min(floors):.2f}  "
            f"({spec.rows / cf_t / 1e6:.1f} M rows/s for calib_frames)"
        )
    for name, message in errors.items():
        print(f"!! {name}: {message}")
    for name, c in checks.items():
        if c["missing"]:
            print(f"!! {name}: metrics not compared (absent in one output): {c['missing']}")
    bad = [name for name, c in checks.items() if not c["ok"]]
    if bad:
        print(
            f"!! MISMATCH against calib_frames (> {TOLERANCE:g} or a count differs): "
            + ", ".join(bad)
        )


def print_memory(memory: list[dict[str, Any]]) -> None:
    if not memory:
        return
    print("\n## Peak memory, parquet source (fresh subprocess per method and size)\n")
    print(
        "Peak resident memory (VmHWM, reset after the imports) in MB; in brackets the "
        "difference to the same-size `floor` run (polars streaming over the same file: the "
        "reader's own buffers).\n"
    )
    by_groups: dict[int, list[dict[str, Any]]] = {}
    for row in memory:
        by_groups.setdefault(row["groups"], []).append(row)
    for groups, rows in by_groups.items():
        sizes = sorted({r["rows"] for r in rows})
        names = list(dict.fromkeys(r["method"] for r in rows))
        floor = {r["rows"]: r["peak_mb"] for r in rows if r["method"] == "floor" and "peak_mb" in r}
        print(f"{groups} groups\n")
        print("| method | " + " | ".join(f"{n:.0e} rows" for n in sizes) + " | growth |")
        print("|---|" + "---:|" * len(sizes) + "---|")
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
            print(f"| {name} | " + " | ".join(cells) + f" | {growth(memory, name, groups)} |")
        print()
    print(
        "growth: peak at the largest size / peak at the smallest, and between the two largest "
        "sizes; 'flat' when the latter is below 1.25x."
    )


def _peaks(memory: list[dict[str, Any]], name: str, groups: int) -> list[tuple[int, float]]:
    return sorted(
        (r["rows"], r["peak_mb"])
        for r in memory
        if r["method"] == name and r["groups"] == groups and "peak_mb" in r
    )


def growth(memory: list[dict[str, Any]], name: str, groups: int) -> str:
    """How the peak grows over the sizes measured (first to last, and the last step)."""
    points = _peaks(memory, name, groups)
    if len(points) < 2:
        return "n/a (one size)"
    (n0, p0), (n1, p1), (n2, p2) = points[0], points[-2], points[-1]
    verdict = "flat" if p2 < 1.25 * p1 else "grows"
    text = f"{verdict}: x{p2 / p0:.2f} for x{n2 / n0:.0f} rows"
    if len(points) > 2:
        text += f", x{p2 / p1:.2f} for the last x{n2 / n1:.0f}"
    return text


def print_summary(runs: list[dict[str, Any]]) -> list[str]:
    """One compact matrix per source: calib_frames seconds, then each method's ratio."""
    lines: list[str] = []
    for source in dict.fromkeys(r["source"] for r in runs):
        rs = [r for r in runs if r["source"] == source and "calib_frames" in r["seconds"]]
        if not rs:
            continue
        names = list(dict.fromkeys(n for r in rs for n in r["seconds"] if n != "calib_frames"))
        head = [f"{r['rows']:.0e} x {r['groups']}" for r in rs]
        lines += [
            f"\nsource={source}: ratio = method seconds / calib_frames seconds "
            "(> 1: calib_frames faster)\n",
            "| | " + " | ".join(head) + " |",
            "|---|" + "---:|" * len(rs),
            "| calib_frames seconds | "
            + " | ".join(f"{r['seconds']['calib_frames']:.3f}" for r in rs)
            + " |",
        ]
        for name in names:
            cells = [
                f"{r['seconds'][name] / r['seconds']['calib_frames']:.2f}"
                if name in r["seconds"]
                else "-"
                for r in rs
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        floors = []
        for r in rs:
            t = [r["seconds"][k] for k in ("floor", "floor_read") if k in r["seconds"]]
            floors.append(f"{r['seconds']['calib_frames'] / min(t):.1f}" if t else "-")
        lines.append("| calib_frames / floor | " + " | ".join(floors) + " |")
    print("\n## Summary of ratios\n" + "\n".join(lines))
    return lines


def print_targets(runs: list[dict[str, Any]], memory: list[dict[str, Any]]) -> list[str]:
    """The issue's targets, evaluated on this run's numbers (ratio = peer / calib_frames)."""
    targets = [
        ("faster than duckdb", "duckdb", lambda r: r > 1.0),
        ("faster than polars_naive", "polars_naive", lambda r: r > 1.0),
        ("faster than numpy_whole", "numpy_whole", lambda r: r > 1.0),
        ("within 1.2x of numpy_chunked", "numpy_chunked", lambda r: 1.0 / r <= 1.2),
        (">= 10x faster than sklearn_loop", "sklearn_loop", lambda r: r >= 10.0),
    ]
    lines = ["| target | met in | not met in (ratio = peer / calib_frames) |", "|---|---|---|"]
    for title, peer, test in targets:
        met, missed = 0, []
        total = 0
        for run in runs:
            t = run["seconds"]
            if peer not in t or "calib_frames" not in t:
                continue
            total += 1
            ratio = t[peer] / t["calib_frames"]
            if test(ratio):
                met += 1
            else:
                missed.append(f"{run['rows']:.0e}/{run['groups']}/{run['source']}: {ratio:.2f}")
        if total:
            lines.append(f"| {title} | {met}/{total} | {'; '.join(missed) or '-'} |")
    for groups in sorted({r["groups"] for r in memory}):
        points = _peaks(memory, "calib_frames", groups)
        if len(points) >= 2:
            lines.append(
                f"| peak memory from parquet flat in rows ({groups} groups) | "
                f"{growth(memory, 'calib_frames', groups)} | peaks MB: "
                + ", ".join(f"{n:.0e}: {p:.0f}" for n, p in points)
                + " |"
            )
    print("\n## Targets (this run)\n")
    print("\n".join(lines))
    return lines


# ---------------------------------------------------------------------------------------------
# main


def parse_sizes(text: str) -> list[int]:
    return [int(float(part)) for part in text.split(",") if part.strip()]


def parse_groups(text: str) -> list[tuple[int, int]]:
    out = []
    for raw in text.split(","):
        part = raw.strip().lower()
        if "x" in part:
            a, b = part.split("x")
            out.append((int(a), int(b)))
        elif int(part) in DEFAULT_GROUPS:
            out.append(DEFAULT_GROUPS[int(part)])
        else:
            g = int(part)
            out.append((g // 10, 10) if g % 10 == 0 else (g, 1))
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="Method details, workload and how to read the output: see the module docstring.",
    )
    ap.add_argument("--sizes", default="1e6,1e7,1e8", help="rows, comma-separated (1e6,1e7,1e8)")
    ap.add_argument(
        "--groups",
        default="200,2000",
        help="group counts: 200 (=20x10), 2000 (=50x40) or MODELSxTASKS",
    )
    ap.add_argument("--sources", default="memory,parquet", help="memory,parquet")
    ap.add_argument(
        "--methods",
        default=",".join(METHODS),
        help="methods to time (calib_frames is always included)",
    )
    ap.add_argument("--repeats", type=int, default=3, help="best of N (default 3)")
    ap.add_argument(
        "--repeats-large", type=int, default=1, help="repeats from --large-rows rows on (default 1)"
    )
    ap.add_argument("--large-rows", type=float, default=1e8)
    ap.add_argument(
        "--sklearn-max-rows",
        type=float,
        default=1e7,
        help="skip sklearn_loop above this many rows (default 1e7)",
    )
    ap.add_argument(
        "--memory-methods",
        default="floor,calib_frames,polars_naive,duckdb,numpy_chunked",
        help="parquet peak-RSS subprocess runs; empty string to skip",
    )
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--chunk-rows", type=int, default=2**16)
    ap.add_argument("--row-group-rows", type=int, default=2**20)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--data-dir", type=Path, default=ROOT / "results" / "data")
    ap.add_argument("--json", type=Path, default=None, help="save all results as JSON here")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-path", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-rows", type=int, default=0, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def select_methods(args: argparse.Namespace) -> list[Method]:
    names = ["calib_frames", *(n.strip() for n in args.methods.split(",") if n.strip())]
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise SystemExit(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
    methods = []
    for name in dict.fromkeys(names):
        method = METHODS[name]
        if method.needs:
            try:
                __import__(method.needs)
            except ImportError:
                print(f"(skipping {name}: {method.needs} is not installed)")
                continue
        methods.append(method)
    return methods


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return 0
    methods = select_methods(args)
    sizes, groups = parse_sizes(args.sizes), parse_groups(args.groups)
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    memory_methods = [m for m in args.memory_methods.split(",") if m.strip()]
    env = environment()
    print("# calib_frames grouped-metrics benchmark\n")
    print("command: " + " ".join([Path(sys.executable).name, *sys.argv]))
    for key, value in env.items():
        print(f"- {key}: {value}")
    print(f"- load average at start: {load()}")
    print(
        "\nratio = method seconds / calib_frames seconds (> 1: calib_frames is faster); "
        f"best of {args.repeats} interleaved repeats ({args.repeats_large} from "
        f"{args.large_rows:.0e} rows). Peers bin with floor(p*M) clipped (calib_frames uses "
        "exact edges k/M); random doubles essentially never lie on an edge, so they agree."
    )

    runs: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    mismatches = 0
    for models, tasks in groups:
        for rows in sizes:
            spec = Spec(rows, models, tasks, args.bins, args.seed)
            path, made = ensure_data(spec, args.data_dir, args.row_group_rows)
            if made:
                print(f"\n(wrote {path.name} in {made:.1f} s)")
            repeats = args.repeats_large if rows >= args.large_rows else args.repeats
            active = [
                m
                for m in methods
                if not (m.name == "sklearn_loop" and rows > args.sklearn_max_rows)
            ]
            for kind in sources:
                if kind == "memory":
                    src = memory_source(spec, path, args.chunk_rows)
                else:
                    src = Source("parquet", spec, path, args.chunk_rows)
                todo = [m for m in active if kind in m.sources]
                best, checks, errors = time_methods(src, todo, repeats)
                src.close()
                del src
                gc.collect()
                print_table(spec, kind, best, checks, errors)
                mismatches += sum(not c["ok"] for c in checks.values()) + len(errors)
                runs.append(
                    {
                        "rows": rows,
                        "groups": spec.groups,
                        "models": models,
                        "tasks": tasks,
                        "source": kind,
                        "repeats": repeats,
                        "seconds": best,
                        "checks": checks,
                        "errors": errors,
                        "load": load(),
                    }
                )
            if "parquet" in sources:
                for name in memory_methods:
                    row = {
                        "rows": rows,
                        "groups": spec.groups,
                        "method": name,
                        **measure_memory(spec, path, name, args),
                    }
                    memory.append(row)
    print_memory(memory)
    summary = print_summary(runs)
    targets = print_targets(runs, memory)
    print(f"\nload average at end: {load()}")
    if mismatches:
        print(f"\n!! {mismatches} MISMATCH(ES) OR FAILURE(S) - see the tables above")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "environment": env,
                    "argv": sys.argv,
                    "runs": runs,
                    "memory": memory,
                    "summary": summary,
                    "targets": targets,
                },
                indent=2,
            )
        )
        print(f"\nsaved {args.json}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
