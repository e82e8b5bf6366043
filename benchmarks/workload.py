"""Synthetic workloads for the benchmarks: the data spec, its generation and the parquet cache.

Predictions
-----------
Two Int32 group keys ``model`` and ``task`` (``n_models`` x ``n_tasks`` groups),
``confidence`` (Float64, Beta(3, 1.5)) and ``correct`` (Boolean, Bernoulli(clip(confidence +
bias[group], 0, 1)) with a per-group bias drawn uniformly from [-0.15, 0.05], so that groups
differ in calibration). Rows come in random group order. The rows are drawn in blocks of
``BLOCK`` rows from one seeded generator, so a spec always gives the same rows, whether they
are generated whole (:func:`generate`) or block by block (:func:`prediction_blocks`).

Tokens
------
Token-level negative log-likelihoods for the perplexity path: the same two keys and ``nll``
(Float64, Gamma(2, 1) scaled by a per-group factor in [0.5, 1.5]), one token per row.

Sources
-------
:class:`Source` is what a peer's ``run`` receives: ``memory`` (the rows already loaded as a
polars DataFrame, numpy arrays and an Arrow table; conversions are not timed) or ``parquet``
(a file written once under ``benchmarks/results/data/`` and reused; reads hit the warm page
cache). Files are written block by block with a ``pyarrow.parquet.ParquetWriter`` (row
groups of up to ``row_group_rows``), so generation never holds more than one block in memory.
Large datasets (bench_streaming) are sets of parts of a fixed size (:func:`ensure_part`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

KEYS = ["model", "task"]
COLUMNS = ["model", "task", "confidence", "correct"]
TOKEN_COLUMNS = ["model", "task", "nll"]
DATA_VERSION = 1  # bump when a generator changes, so that cached parquet files are not reused
BLOCK = 10_000_000  # rows drawn per block (part of the data definition: do not change)
ROOT = Path(__file__).resolve().parent
DATA_DIR = ROOT / "results" / "data"
DEFAULT_GROUPS = {200: (20, 10), 2000: (50, 40)}


@dataclass(frozen=True)
class Spec:
    """One synthetic prediction workload: rows x (n_models x n_tasks) groups, n_bins bins."""

    rows: int
    n_models: int
    n_tasks: int
    n_bins: int = 10
    seed: int = 2024

    @property
    def groups(self) -> int:
        return self.n_models * self.n_tasks

    @property
    def label(self) -> str:
        return f"{self.rows:.0e} rows x {self.groups} groups ({self.n_models}x{self.n_tasks})"


def prediction_blocks(spec: Spec, block: int = BLOCK) -> Iterator[pl.DataFrame]:
    """The synthetic predictions as DataFrames of at most ``block`` rows, in order."""
    rng = np.random.default_rng(spec.seed)
    bias = rng.uniform(-0.15, 0.05, spec.groups)
    for lo in range(0, spec.rows, block):
        k = min(lo + block, spec.rows) - lo
        model = rng.integers(0, spec.n_models, k, dtype=np.int32)
        task = rng.integers(0, spec.n_tasks, k, dtype=np.int32)
        p = rng.beta(3.0, 1.5, k)
        truth = np.clip(p + bias[model * spec.n_tasks + task], 0.0, 1.0)
        y = rng.random(k) < truth
        yield pl.DataFrame({"model": model, "task": task, "confidence": p, "correct": y})


def generate(spec: Spec) -> pl.DataFrame:
    """The whole synthetic prediction table in memory (deterministic for a given spec)."""
    return pl.concat(list(prediction_blocks(spec)), rechunk=True)


def token_blocks(spec: Spec, block: int = BLOCK) -> Iterator[pl.DataFrame]:
    """Synthetic token NLLs (``model``, ``task``, ``nll``) in blocks of ``block`` rows."""
    rng = np.random.default_rng(spec.seed + 1)
    scale = rng.uniform(0.5, 1.5, spec.groups)
    for lo in range(0, spec.rows, block):
        k = min(lo + block, spec.rows) - lo
        model = rng.integers(0, spec.n_models, k, dtype=np.int32)
        task = rng.integers(0, spec.n_tasks, k, dtype=np.int32)
        nll = rng.gamma(2.0, 1.0, k) * scale[model * spec.n_tasks + task]
        yield pl.DataFrame({"model": model, "task": task, "nll": nll})


def parquet_path(spec: Spec, data_dir: Path = DATA_DIR, kind: str = "preds") -> Path:
    """The cache file of a spec (``kind`` = ``preds`` or ``tokens``)."""
    name = (
        f"{kind}_v{DATA_VERSION}_n{spec.rows}_{spec.n_models}x{spec.n_tasks}_s{spec.seed}.parquet"
    )
    return data_dir / name


def _complete(path: Path, rows: int | None) -> bool:
    if not path.exists():
        return False
    try:
        n = pq.ParquetFile(path).metadata.num_rows
    except (OSError, pa.ArrowException):
        return False
    return rows is None or n == rows


def write_blocks(
    blocks: Iterator[pl.DataFrame],
    path: Path,
    *,
    row_group_rows: int = 2**20,
    stop_bytes: int | None = None,
) -> int:
    """Write blocks to ``path`` (via a temporary file renamed at the end); return the rows.

    One block is in memory at a time. With ``stop_bytes`` the writing stops after the first
    block that brings the file to that size. The file is fsync'ed, so that writeback does not
    overlap the timings that follow.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    rows = 0
    writer: pq.ParquetWriter | None = None
    try:
        for frame in blocks:
            table = frame.to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema, compression="zstd")
            writer.write_table(table, row_group_size=row_group_rows)
            rows += frame.height
            if stop_bytes is not None and tmp.stat().st_size >= stop_bytes:
                break
    finally:
        if writer is not None:
            writer.close()
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    tmp.replace(path)
    return rows


def ensure_data(
    spec: Spec, data_dir: Path = DATA_DIR, row_group_rows: int = 2**20, kind: str = "preds"
) -> tuple[Path, float]:
    """Write the parquet file of ``spec`` unless a complete one is present: (path, seconds)."""
    path = parquet_path(spec, data_dir, kind)
    if _complete(path, spec.rows):
        return path, 0.0
    t0 = time.perf_counter()
    blocks = prediction_blocks(spec) if kind == "preds" else token_blocks(spec)
    write_blocks(blocks, path, row_group_rows=row_group_rows)
    return path, time.perf_counter() - t0


def ensure_part(
    index: int,
    gigabytes: float,
    n_models: int,
    n_tasks: int,
    *,
    kind: str = "preds",
    seed: int = 2024,
    data_dir: Path = DATA_DIR,
    row_group_rows: int = 2**20,
    block: int = 2**20,
) -> tuple[Path, int, float]:
    """Part ``index`` of a multi-file dataset: a parquet file of about ``gigabytes`` GiB.

    Whole blocks are written until the file reaches the size. Part i is drawn from seed
    ``seed + 7919 * i`` (its own per-group biases, like one more night of eval runs), so a
    dataset of k parts is the first k parts of a larger one. Returns (path, rows, seconds
    spent writing; 0 when the file was cached).
    """
    tag = f"{gigabytes:g}".replace(".", "p")
    name = f"{kind}_v{DATA_VERSION}_part{index:03d}_{tag}gb_{n_models}x{n_tasks}_s{seed}.parquet"
    path = data_dir / name
    if _complete(path, None):
        return path, pq.ParquetFile(path).metadata.num_rows, 0.0
    spec = Spec(2**62, n_models, n_tasks, seed=seed + 7919 * index)  # unbounded: stop on size
    blocks = prediction_blocks(spec, block) if kind == "preds" else token_blocks(spec, block)
    t0 = time.perf_counter()
    rows = write_blocks(
        blocks, path, row_group_rows=row_group_rows, stop_bytes=int(gigabytes * 2**30)
    )
    return path, rows, time.perf_counter() - t0


@dataclass
class Source:
    """What a peer's ``run`` receives: the workload, and the rows in memory or a parquet path."""

    kind: str  # "memory" | "parquet"
    spec: Spec
    path: Path
    chunk_rows: int = 2**16
    df: pl.DataFrame | None = None
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    arrow: pa.Table | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # a workload's other inputs, by name
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
        """The SQL table expression of the rows."""
        if self.kind == "memory":
            return "preds"
        return "read_parquet('" + str(self.path).replace("'", "''") + "')"

    def table(self) -> pl.DataFrame:
        """The DataFrame of a memory source (``frame_source`` or ``memory_source``)."""
        if self.df is None:
            raise ValueError(f"{self.kind} source without a DataFrame")
        return self.df

    def lazy(self) -> pl.LazyFrame:
        if self.kind == "memory":
            assert self.df is not None
            return self.df.lazy()
        return pl.scan_parquet(self.path)

    def frame(self) -> pl.DataFrame | pl.LazyFrame:
        """The DataFrame in memory, a ``scan_parquet`` LazyFrame from parquet."""
        if self.kind == "memory":
            assert self.df is not None
            return self.df
        return pl.scan_parquet(self.path)

    def close(self) -> None:
        if self._duck is not None:
            self._duck.close()
            self._duck = None


def memory_source(
    spec: Spec, path: Path, chunk_rows: int = 2**16, *, string_keys: bool = False
) -> Source:
    """The rows of ``path`` loaded as a DataFrame, numpy arrays and an Arrow table.

    ``string_keys``: the group keys of the DataFrame and the Arrow table as String (their
    decimal digits) instead of Int32; the numpy arrays keep the integer codes.
    """
    df = pl.read_parquet(path, columns=COLUMNS)
    arrays = {name: df[name].to_numpy() for name in COLUMNS}
    if string_keys:
        df = df.with_columns(pl.col(KEYS).cast(pl.String))
    return Source("memory", spec, path, chunk_rows, df=df, arrays=arrays, arrow=df.to_arrow())


def frame_source(df: pl.DataFrame | None, spec: Spec, **extra: Any) -> Source:
    """A ``memory`` Source of a workload built in memory (no parquet file): ``df`` and, in
    ``extra``, whatever else the peers need (a second table, precomputed statistics...)."""
    return Source("memory", spec, Path(), df=df, extra=extra)


def parquet_source(spec: Spec, path: Path, chunk_rows: int = 2**16) -> Source:
    return Source("parquet", spec, path, chunk_rows)


def parse_sizes(text: str) -> list[int]:
    """``"1e6,1e7"`` -> [1000000, 10000000]."""
    return [int(float(part)) for part in text.split(",") if part.strip()]


def parse_groups(text: str) -> list[tuple[int, int]]:
    """``"200,50x40"`` -> [(20, 10), (50, 40)]: 200, 2000 or MODELSxTASKS."""
    out = []
    for raw in text.split(","):
        part = raw.strip().lower()
        if not part:
            continue
        if "x" in part:
            a, b = part.split("x")
            out.append((int(a), int(b)))
        elif int(part) in DEFAULT_GROUPS:
            out.append(DEFAULT_GROUPS[int(part)])
        else:
            g = int(part)
            out.append((g // 10, 10) if g % 10 == 0 else (g, 1))
    return out
