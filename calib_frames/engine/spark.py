"""The row pass on Apache Spark: the same cell table, computed by Spark's own DataFrame ops.

Install the optional extra (``pip install 'calib-frames[spark]'``). Spark does only the
row pass — element-wise columns and one ``groupBy(keys, bin, outcome).agg(sums)`` — and
hands the small cell table (:data:`calib_frames.schema.CELLS`) to polars through Arrow;
the checks, the bin statistics and every metric then run on the polars side, so the math
stays in one place. Spark and polars add floats in different orders: counts agree
exactly, sums to about 1e-15 relative.

The bin index is computed as on polars (:meth:`calib_frames.Binning.assign`): a first
guess ``floor(p·M·(1 − 4ε))`` corrected by one comparison with the exact edge k/M (Java
divides doubles with correct rounding, as Python does). Equal-mass bins need every row
of a group in memory and are refused here.

Pointing it at a cluster: build the ``SparkSession`` as usual (``spark-submit --master
yarn …``, ``SparkSession.builder.master("spark://host:7077")``, or ``SPARK_REMOTE`` for
Spark Connect) and pass its DataFrame, or run ``calib-frames stats --engine spark`` under
``spark-submit``/with ``SPARK_MASTER`` set; the command line gets the active session with
``SparkSession.builder.getOrCreate()``. The recipe for any other job runner needs no
Spark at all: run ``calib-frames stats`` on each file (one batch each), then
``calib-frames merge`` the outputs and ``calib-frames report --from-stats``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from calib_frames.binning import Binning
from calib_frames.engine.local import SMALLEST_NORMAL, PredictionPass
from calib_frames.exceptions import ArgumentError
from calib_frames.validation import RowCheck, raise_on_bad_rows

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql import DataFrame as SparkFrame

__all__ = ["checked_spark_cells", "spark_prediction_cells", "spark_schema"]

_NUDGE = 4 * float(np.finfo(np.float64).eps)


def _functions() -> Any:
    try:
        from pyspark.sql import functions
    except ImportError:
        raise ArgumentError(
            "the Spark engine needs pyspark: pip install 'calib-frames[spark]'"
        ) from None
    return functions


def spark_schema(frame: SparkFrame) -> pl.Schema:
    """The polars schema of a Spark DataFrame's columns (numeric kinds are what matters)."""
    from pyspark.sql import types as T

    mapping: dict[type, pl.DataType] = {
        T.BooleanType: pl.Boolean(),
        T.ByteType: pl.Int8(),
        T.ShortType: pl.Int16(),
        T.IntegerType: pl.Int32(),
        T.LongType: pl.Int64(),
        T.FloatType: pl.Float32(),
        T.DoubleType: pl.Float64(),
        T.DecimalType: pl.Float64(),
        T.StringType: pl.String(),
    }
    return pl.Schema(
        {f.name: mapping.get(type(f.dataType), pl.String()) for f in frame.schema.fields}
    )


def _bin_index(p: Column, binning: Binning) -> Column:
    F = _functions()
    m = binning.n_bins
    if binning.kind == "quantile":
        raise ArgumentError(
            "equal-mass bins rank every row of a group in memory; the Spark engine takes "
            "fixed bins only"
        )
    if binning.kind == "edges":
        assert binning.bin_edges is not None
        inner = binning.bin_edges[1:-1]
        above = [(p > e) if binning.closed == "right" else (p >= e) for e in inner]
        count: Column = sum((a.cast("int") for a in above), F.lit(0))
        return count.cast("int")
    if binning.closed == "left":
        guess = F.floor(p * F.lit(m * (1 - _NUDGE)))
        index = guess + (p >= (guess + F.lit(1.0)) / F.lit(float(m))).cast("double")
    else:
        guess = F.ceil(p * F.lit(m * (1 + _NUDGE))) - F.lit(1.0)
        index = guess - (p <= guess / F.lit(float(m))).cast("double")
    clipped: Column = F.least(F.greatest(index, F.lit(0.0)), F.lit(float(m - 1)))
    return clipped.cast("int")


def _predicates(spec: PredictionPass) -> dict[str, Column]:
    """Spark predicates, True on rows that break each column's contract."""
    F = _functions()
    low, high = spec.binning.range
    p = F.col(spec.confidence).cast("double")
    y = F.col(spec.correct).cast("double")
    bad = {
        spec.confidence: p.isNull() | F.isnan(p) | (p < low) | (p > high),
        spec.correct: y.isNull() | ~((y == 0.0) | (y == 1.0)),
    }
    if spec.weight is not None:
        w = F.col(spec.weight).cast("double")
        finite = ~(w.isNull() | F.isnan(w) | (F.abs(w) == float("inf")))
        bad[spec.weight] = ~(finite & ((w == 0.0) | (w >= SMALLEST_NORMAL)))
        bad[spec.weight] = F.coalesce(bad[spec.weight], F.lit(True))
    if spec.log_confidence is not None:
        ell = F.col(spec.log_confidence).cast("double")
        ok = (ell <= 0.0) & (F.abs(F.exp(ell) - p) <= 1e-9)
        bad[spec.log_confidence] = F.coalesce(~ok, F.lit(True))
    return {column: F.coalesce(expr, F.lit(True)) for column, expr in bad.items()}


def spark_prediction_cells(frame: SparkFrame, spec: PredictionPass) -> pl.LazyFrame:
    """Run the row pass on Spark: rows → the cell table, returned as a polars LazyFrame.

    Parameters
    ----------
    frame
        A Spark DataFrame of predictions.
    spec
        Columns and binning (:meth:`PredictionPass.build` on the frame's schema).

    Returns
    -------
    LazyFrame
        The cell table (:data:`calib_frames.schema.CELLS`), already computed by Spark.

    Examples
    --------
    See :func:`checked_spark_cells`, which adds the checks.
    """
    F = _functions()
    p = F.col(spec.confidence).cast("double")
    y = F.col(spec.correct).cast("double")
    low, high = spec.binning.range
    valid_p = p.isNotNull() & ~F.isnan(p) & (p >= low) & (p <= high)
    outcome = F.when(y == 1.0, F.lit(True)).when(y == 0.0, F.lit(False))
    bad = _predicates(spec)
    w = None if spec.weight is None else F.col(spec.weight).cast("double")
    extra = []
    if spec.weight is not None:
        extra += [F.col(spec.weight).cast("double").alias("__w"), bad[spec.weight].alias("__bad_w")]
    if spec.log_confidence is not None:
        ell = F.col(spec.log_confidence).cast("double")
        extra += [ell.alias("__ell"), bad[spec.log_confidence].alias("__bad_ell")]
    rows = frame.select(
        *[F.col(k) for k in spec.keys],
        F.when(valid_p, _bin_index(p, spec.binning)).alias("__bin"),
        outcome.alias("__outcome"),
        p.alias("__p"),
        *extra,
    )
    is_correct = F.col("__outcome")
    pp = F.col("__p")
    q = F.when(is_correct, pp).otherwise(F.lit(1.0) - pp)
    r = F.when(is_correct, F.lit(1.0) - pp).otherwise(pp)
    if spec.log_confidence is None:
        log_q = F.log(q) + ((F.lit(1.0) - q) - r)
    else:
        t = F.tanh(F.col("__ell") / F.lit(2.0))
        log_q = F.when(is_correct, F.col("__ell")).otherwise(
            F.log(F.lit(-2.0) * t / (F.lit(1.0) - t))
        )

    def weighted(term: Column) -> Column:
        if w is None:
            return term
        value: Column = F.when(F.col("__w") > 0, F.col("__w") * term).otherwise(F.lit(0.0))
        return value

    sums = [
        F.count(F.lit(1)).cast("long").alias("count"),
        (F.count(F.lit(1)).cast("double") if w is None else F.sum(F.col("__w"))).alias("weight"),
        F.sum(weighted(q)).alias("sum_outcome_probability"),
        F.sum(weighted(r)).alias("sum_residual"),
        F.sum(weighted(r * r)).alias("sum_sq_residual"),
        F.sum(weighted(log_q)).alias("sum_log_outcome_probability"),
    ]
    if spec.weight is not None:
        sums.append(F.sum(F.col("__bad_w").cast("long")).alias("invalid_weight"))
    if spec.log_confidence is not None:
        sums.append(F.sum(F.col("__bad_ell").cast("long")).alias("invalid_log_confidence"))
    grouped = rows.groupBy(*spec.keys, "__bin", "__outcome").agg(*sums)
    cells = pl.from_arrow(grouped.toArrow())
    assert isinstance(cells, pl.DataFrame)
    casts = [
        pl.col("__bin").cast(pl.UInt32).alias("bin"),
        pl.col("__outcome").alias("correct"),
        pl.col("count").cast(pl.UInt64),
    ]
    casts += [
        pl.col(c).cast(pl.UInt64)
        for c in ("invalid_weight", "invalid_log_confidence")
        if c in cells.columns
    ]
    return cells.lazy().with_columns(casts).drop("__bin", "__outcome")


def checked_spark_cells(frame: SparkFrame, spec: PredictionPass) -> pl.LazyFrame:
    """The Spark cell table with the row checks attached (raised when it is collected).

    The examples of bad rows are looked up on Spark, with one early-stopping filter, only
    on the error path. :func:`calib_frames.stats.spark_bin_statistics` reduces the result.

    Parameters
    ----------
    frame
        A Spark DataFrame of predictions.
    spec
        Columns and binning, from :meth:`~calib_frames.engine.PredictionPass.build`
        (fixed bins only).

    Returns
    -------
    LazyFrame
        The checked cell table (:data:`calib_frames.schema.CELLS`).

    Raises
    ------
    ArgumentError
        Equal-mass bins (they need every row of a group in memory).
    """
    if not spec.binning.additive:
        _bin_index(_functions().lit(0.0), spec.binning)  # raises for equal-mass bins
    cells = spark_prediction_cells(frame, spec)
    predicates = _predicates(spec)

    def find_example(check: RowCheck) -> dict[str, object] | None:
        predicate = predicates.get(check.column)
        if predicate is None:
            return None
        columns = list(dict.fromkeys([*spec.keys, check.column]))
        found = frame.filter(predicate).select(*columns).limit(1).collect()
        return found[0].asDict() if found else None

    return raise_on_bad_rows(
        cells,
        keys=spec.keys,
        checks=spec.row_checks(),
        total_rows=pl.col("count").sum(),
        find_example=find_example,
    )
