"""Peer methods: small objects that compute the same thing as calib_frames in another way.

A :class:`Peer` has a ``name``, a ``role`` (``subject``, ``peer``, ``ablation`` or
``floor``), a one-line ``what`` (printed in the reports and BENCHMARKS.md), ``run(source)``
(the timed part) and ``normalise(output, source)`` (not timed) that turns the output into the
common :class:`Result` that the harness cross-checks. A :class:`Registry` is an ordered set of
peers; a benchmark takes the registry here and adds its own peers to a copy::

    registry = METRICS.copy()

    @registry.peer("my_way", what="what it does in one line")
    def run_my_way(src: Source) -> pl.DataFrame: ...

Every peer of :data:`METRICS` computes, for ``spec.n_bins`` equal-width bins, the per-(group,
bin) reliability table (count, mean confidence, accuracy) and per group ECE, MCE, RMSCE,
Brier, reliability, resolution, uncertainty, within-bin variance and covariance and log loss.
Peers bin with the idiomatic ``floor(p * M)`` clipped to [0, M-1] (scikit-learn with its own
``linspace``/``searchsorted`` bins); calib_frames places values lying exactly on an edge k/M
exactly. Random doubles essentially never hit an edge, and the cross-check flags any count
that differs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

import calib_frames as cf
from benchmarks.workload import COLUMNS, KEYS, Source, Spec

METRICS_COLUMNS = (
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
CELL_FIELDS = ("count", "mean_confidence", "accuracy")


# ---------------------------------------------------------------------------------------------
# the common result


@dataclass
class Result:
    """Named, aligned numpy arrays; ``exact`` names those compared for equality (counts).

    For the grouped metrics: ``count``, ``mean_confidence``, ``accuracy`` are (G * M,) arrays
    indexed by ``cell = group * M + bin`` with ``group = model * n_tasks + task`` (0.0 for an
    empty cell), and each metric a (G,) array (NaN for a group absent from the output).
    """

    values: dict[str, np.ndarray]
    exact: tuple[str, ...] = ()


def group_index(frame: pl.DataFrame, spec: Spec) -> np.ndarray:
    """Dense group codes ``model * n_tasks + task`` of a frame's rows (keys Int or String)."""
    model, task = (frame[key].cast(pl.Int64).to_numpy() for key in ("model", "task"))
    return model * spec.n_tasks + task


def metrics_result(
    met: pl.DataFrame, spec: Spec, names: tuple[str, ...] = METRICS_COLUMNS
) -> Result:
    """Result of a per-group metrics frame (``model``, ``task``, metric columns).

    The peers' MCE is the largest gap over every populated bin, as calib_frames' ``mce``.
    """
    group = group_index(met, spec)
    values = {}
    for name in names:
        if name not in met.columns:  # reported as missing by the cross-check
            continue
        column = np.full(spec.groups, np.nan)
        column[group] = met[name].cast(pl.Float64).to_numpy()
        values[name] = column
    return Result(values)


def frames_result(rel: pl.DataFrame, met: pl.DataFrame, spec: Spec) -> Result:
    """Result of a reliability frame (model, task, bin, count, mean_confidence, accuracy) and
    a metrics frame (model, task, metrics...); missing cells are empty, missing groups NaN."""
    m, g = spec.n_bins, spec.groups
    cell = group_index(rel, spec) * m + rel["bin"].to_numpy()
    count = np.zeros(g * m, np.int64)
    mean_confidence = np.zeros(g * m)
    accuracy = np.zeros(g * m)
    count[cell] = rel["count"].to_numpy()
    # empty bins may carry null means (calib_frames) or be absent (peers): both read as 0.0
    mean_confidence[cell] = rel["mean_confidence"].fill_null(0.0).to_numpy()
    accuracy[cell] = rel["accuracy"].fill_null(0.0).to_numpy()
    out = metrics_result(met, spec)
    cells = {"count": count, "mean_confidence": mean_confidence, "accuracy": accuracy}
    return Result({**cells, **out.values}, exact=("count",))


def sums_result(sums: dict[str, np.ndarray], spec: Spec) -> Result:
    """The per-group formulas on (G, M) arrays of bin sums (used by the numpy peers).

    ``sums``: ``n`` (count), ``s`` (Σp), ``y`` (Σy), ``pp`` (Σp²), ``py`` (Σpy), ``se``
    (Σ(p - y)²), ``ll`` (Σ -ln p(outcome)) per cell.
    """
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
    cells = {
        "count": sums["n"].astype(np.int64),
        "mean_confidence": mean_p.ravel(),
        "accuracy": mean_y.ravel(),
    }
    return Result({**cells, **metrics}, exact=("count",))


# ---------------------------------------------------------------------------------------------
# peers and registries


def _no_result(output: Any, source: Source) -> None:
    return None


@dataclass(frozen=True)
class Peer:
    """One way of computing the benchmark's answer.

    ``run(source)`` is timed; ``normalise(output, source)`` is not and returns a
    :class:`Result` (or ``None``: nothing to cross-check, as for the floors). ``sources``
    lists the source kinds it supports; ``needs`` an optional ``"module"`` or
    ``"module:attribute"`` (the peer is skipped without it);
    ``fields`` the Result fields it must produce (``None``: every field of the reference).
    """

    name: str
    run: Callable[[Source], Any]
    normalise: Callable[[Any, Source], Result | None] = _no_result
    role: str = "peer"  # "subject" | "peer" | "ablation" | "floor"
    what: str = ""
    sources: tuple[str, ...] = ("memory", "parquet")
    needs: str | None = None
    fields: tuple[str, ...] | None = None

    def available(self) -> bool:
        """Whether ``needs`` (``"module"`` or ``"module:attribute"``) can be imported."""
        if self.needs is None:
            return True
        module, _, attribute = self.needs.partition(":")
        try:
            imported = importlib.import_module(module)
        except ImportError:
            return False
        return not attribute or hasattr(imported, attribute)


@dataclass
class Registry:
    """An ordered set of peers, by name. The first ``subject`` is the reference."""

    peers: dict[str, Peer] = field(default_factory=dict)

    def add(self, peer: Peer) -> Peer:
        if peer.name in self.peers:
            raise ValueError(f"peer {peer.name!r} is already registered")
        self.peers[peer.name] = peer
        return peer

    def peer(
        self,
        name: str,
        *,
        normalise: Callable[[Any, Source], Result | None] = _no_result,
        **kw: Any,
    ) -> Callable[[Callable[[Source], Any]], Callable[[Source], Any]]:
        """Decorator form of :meth:`add`: ``@registry.peer("name", normalise=..., what=...)``."""

        def register(run: Callable[[Source], Any]) -> Callable[[Source], Any]:
            self.add(Peer(name, run, normalise, **kw))
            return run

        return register

    def copy(self, names: list[str] | None = None) -> Registry:
        """A new registry with these peers (all by default), in their order here."""
        return Registry({n: self[n] for n in (names if names is not None else self.peers)})

    def with_(self, name: str, **changes: Any) -> Registry:
        """A copy in which one peer has some attributes changed (``what=``, ``role=``...)."""
        out = self.copy()
        out.peers[name] = replace(self.peers[name], **changes)
        return out

    @property
    def reference(self) -> str:
        return next(p.name for p in self.peers.values() if p.role == "subject")

    def select(self, names: list[str], *, quiet: bool = False) -> list[Peer]:
        """The reference and these peers (unknown names: SystemExit; missing modules: skip)."""
        wanted = [self.reference, *names]
        unknown = [n for n in wanted if n not in self.peers]
        if unknown:
            raise SystemExit(f"unknown method(s) {unknown}; choose from {list(self.peers)}")
        out = []
        for name in dict.fromkeys(wanted):
            peer = self.peers[name]
            if not peer.available():
                if not quiet:
                    print(f"(skipping {name}: {peer.needs} is not available)")
                continue
            out.append(peer)
        return out

    def __getitem__(self, name: str) -> Peer:
        return self.peers[name]

    def __iter__(self) -> Iterator[Peer]:
        return iter(self.peers.values())

    def __contains__(self, name: object) -> bool:
        return name in self.peers

    def names(self) -> list[str]:
        return list(self.peers)


METRICS = Registry()
"""The grouped-calibration-metrics peers (bench_metrics, bench_streaming)."""


# ---------------------------------------------------------------------------------------------
# calib_frames


def norm_frames(out: tuple[pl.DataFrame, pl.DataFrame], src: Source) -> Result:
    return frames_result(*out, src.spec)


def norm_metrics(out: pl.DataFrame, src: Source) -> Result:
    return metrics_result(out, src.spec)


@METRICS.peer(
    "calib_frames",
    normalise=norm_frames,
    role="subject",
    what="`cf.bin_statistics(src, by=[model, task])` (lazy input: `.collect()`), then "
    "`cf.metrics_from_bin_statistics(stats)` on the small table",
)
def run_calib_frames(src: Source) -> tuple[pl.DataFrame, pl.DataFrame]:
    stats = cf.bin_statistics(src.frame(), by=KEYS, bins=src.spec.n_bins)
    if isinstance(stats, pl.LazyFrame):
        stats = stats.collect()
    return stats, cf.metrics_from_bin_statistics(stats)


@METRICS.peer(
    "calib_frames_metrics",
    normalise=norm_metrics,
    role="peer",
    what="`cf.calibration_metrics(src, by=[model, task])` (lazy: `.collect()`): the metrics "
    "only, in one call",
    fields=METRICS_COLUMNS,
)
def run_calib_frames_metrics(src: Source) -> pl.DataFrame:
    out = cf.calibration_metrics(src.frame(), by=KEYS, bins=src.spec.n_bins)
    return out.collect() if isinstance(out, pl.LazyFrame) else out


# ---------------------------------------------------------------------------------------------
# floors


@METRICS.peer(
    "floor",
    role="floor",
    what="touching each needed column once: `select(<sum of each column>)` on the DataFrame, "
    "or on `pl.scan_parquet` (one streaming decode of every value)",
)
def run_floor(src: Source) -> pl.DataFrame:
    if src.kind == "memory":
        assert src.df is not None
        return src.df.select(touch_columns(src.df.schema))
    scan = pl.scan_parquet(src.path)
    return scan.select(touch_columns(scan.collect_schema())).collect()


def touch_columns(schema: pl.Schema) -> list[pl.Expr]:
    """One read of each needed column: its sum (String keys, memory-str: the greatest)."""
    return [
        pl.col(name).max() if schema[name] == pl.String else pl.col(name).sum() for name in COLUMNS
    ]


@METRICS.peer(
    "floor_read",
    role="floor",
    what="parquet only: `pyarrow.parquet.read_table` of the four columns",
    sources=("parquet",),
)
def run_floor_read(src: Source) -> pa.Table:
    return pq.read_table(src.path, columns=COLUMNS)


# ---------------------------------------------------------------------------------------------
# numpy


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


def numpy_columns(table: pa.Table | pa.RecordBatch) -> list[np.ndarray]:
    return [table.column(name).to_numpy(zero_copy_only=False) for name in COLUMNS]


def norm_identity(out: Result, src: Source) -> Result:
    return out


@METRICS.peer(
    "numpy_whole",
    normalise=norm_identity,
    what="a single whole-array pass: `np.bincount` over `group*M + bin` with weights p, y, p², "
    "p·y, (p−y)² and the log-loss terms, then the formulas on (G, M) arrays",
)
def run_numpy_whole(src: Source) -> Result:
    if src.kind == "memory":
        cols = [src.arrays[name] for name in COLUMNS]
    else:
        cols = numpy_columns(pq.read_table(src.path, columns=COLUMNS))
    return sums_result(numpy_sums(*cols, src.spec), src.spec)


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


@METRICS.peer(
    "numpy_chunked",
    normalise=norm_identity,
    what="the same kernel over chunks of `--chunk-rows` rows (2^16), accumulating the "
    "bincounts; from parquet `iter_batches` with `pre_buffer=False`",
)
def run_numpy_chunked(src: Source) -> Result:
    k = src.chunk_rows
    if src.kind == "memory":
        arrays = [src.arrays[name] for name in COLUMNS]
        n = len(arrays[0])
        chunks: Any = ([a[lo : lo + k] for a in arrays] for lo in range(0, n, k))
    else:
        # pre_buffer=False: pyarrow's default pre-buffering holds ~0.9 GB at 1e8 rows here
        reader = pq.ParquetFile(src.path, pre_buffer=False)
        batches = reader.iter_batches(batch_size=k, columns=COLUMNS)
        chunks = (numpy_columns(batch) for batch in batches)
    return sums_result(_accumulate(chunks, src.spec), src.spec)


# ---------------------------------------------------------------------------------------------
# DuckDB

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


@METRICS.peer(
    "duckdb",
    normalise=norm_frames,
    needs="duckdb",
    what="SQL `GROUP BY model, task, bin` into a temp table, then the reduction in SQL; in "
    "memory the Arrow table is registered, from parquet `read_parquet(...)`",
)
def run_duckdb(src: Source) -> tuple[pl.DataFrame, pl.DataFrame]:
    con = src.duck()
    con.execute(DUCK_BINS.format(m=src.spec.n_bins, source=src.duck_source()))
    rel = con.sql(DUCK_RELIABILITY).pl()
    met = con.sql(DUCK_METRICS).pl()
    con.execute("DROP TABLE bench_bins")
    return rel, met


# ---------------------------------------------------------------------------------------------
# polars


def polars_two_stage(lf: pl.LazyFrame, bin_expr: pl.Expr) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The naive polars plan: bin sums in one group_by, then the metrics in a second."""
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


@METRICS.peer(
    "polars_naive",
    normalise=norm_frames,
    what="`with_columns(bin=floor(p*M).clip)` → `group_by(keys+bin).agg(sums)` on polars' "
    "default engine, then `group_by(keys).agg(metrics)`",
)
def run_polars_naive(src: Source) -> tuple[pl.DataFrame, pl.DataFrame]:
    m = src.spec.n_bins
    bin_expr = (pl.col("confidence") * m).floor().clip(0, m - 1).cast(pl.UInt32)
    return polars_two_stage(src.lazy(), bin_expr)


@METRICS.peer(
    "polars_exactbin",
    normalise=norm_frames,
    role="ablation",
    what="ablation: `polars_naive` with calib_frames' exact-edge `Binning.assign` in place of "
    "`floor(p*M)`",
)
def run_polars_exactbin(src: Source) -> tuple[pl.DataFrame, pl.DataFrame]:
    bin_expr = cf.Binning.uniform(src.spec.n_bins).assign(pl.col("confidence"))
    return polars_two_stage(src.lazy(), bin_expr)


# ---------------------------------------------------------------------------------------------
# scikit-learn


@METRICS.peer(
    "sklearn_loop",
    normalise=norm_identity,
    needs="sklearn",
    what="a per-group Python loop calling `calibration_curve`, `brier_score_loss` and "
    "`log_loss`, the remaining terms in numpy (only up to `--sklearn-max-rows` rows)",
)
def run_sklearn_loop(src: Source) -> Result:
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss, log_loss

    spec, m = src.spec, src.spec.n_bins
    if src.kind == "memory":
        model, task, p, y = (src.arrays[name] for name in COLUMNS)
    else:
        model, task, p, y = numpy_columns(pq.read_table(src.path, columns=COLUMNS))
    gid = model.astype(np.int64) * spec.n_tasks + task
    order = np.argsort(gid, kind="stable")
    bounds = np.searchsorted(gid[order], np.arange(spec.groups + 1))
    inner_edges = np.linspace(0.0, 1.0, m + 1)[1:-1]  # scikit-learn's own bins
    count = np.zeros((spec.groups, m), np.int64)
    mean_p = np.zeros((spec.groups, m))
    mean_y = np.zeros((spec.groups, m))
    metrics = {name: np.full(spec.groups, np.nan) for name in METRICS_COLUMNS}
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
    cells = {"count": count.ravel(), "mean_confidence": mean_p.ravel(), "accuracy": mean_y.ravel()}
    return Result({**cells, **metrics}, exact=("count",))
