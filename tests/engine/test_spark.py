"""The Spark row pass gives the polars path's cell table and bin statistics."""

from __future__ import annotations

import math
from typing import Any

import polars as pl
import pytest
from factories import prediction_rows
from polars.testing import assert_frame_equal

import calib_frames as cf
from calib_frames.stats import spark_bin_statistics

# Each test here starts a heavy component (Spark, a browser, a kernel or a benchmark process).
pytestmark = pytest.mark.slow


def predictions(seed: int = 0, n: int = 5000) -> pl.DataFrame:
    """Calibrated predictions by model × task (Int32), a tenth on the edges k/10, weights."""
    return prediction_rows(
        seed, n, beta=(2, 1.4), on_edges=(0.1, 10), power=1.0, models=("a", "b", "c"),
        tasks=range(4), weight=(0.5, 2.0),
    ).with_columns(pl.col("task").cast(pl.Int32))  # fmt: skip


def assert_same_stats(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    assert got.columns == expected.columns
    keys_bins = [c for c in got.columns if c in ("model", "task", "bin")]
    assert got.select(*keys_bins, "count").equals(expected.select(*keys_bins, "count"))
    assert_frame_equal(got, expected, rel_tol=1e-12, abs_tol=1e-13, check_dtypes=False)


@pytest.mark.parametrize(
    "bins",
    [10, cf.Binning.uniform(15, closed="right"), [0.0, 0.25, 0.5, 0.9, 1.0]],
    ids=["10-left", "15-right", "edges"],
)
@pytest.mark.parametrize("weight", [None, "w"])
def test_spark_matches_polars(spark: Any, bins: cf.binning.BinsLike, weight: str | None) -> None:
    frame = predictions()
    expected = cf.bin_statistics(frame, by=["model", "task"], bins=bins, weight=weight)
    got = spark_bin_statistics(
        spark.createDataFrame(frame.to_arrow()), by=["model", "task"], bins=bins, weight=weight
    )
    assert_same_stats(got, expected)
    metrics = cf.metrics_from_bin_statistics(got)
    direct = cf.calibration_metrics(frame, by=["model", "task"], bins=bins, weight=weight)
    assert_frame_equal(metrics, direct, rel_tol=1e-12, abs_tol=1e-13, check_dtypes=False)


def test_spark_reads_a_parquet_path_and_merges_with_polars(spark: Any, tmp_path: Any) -> None:
    frame = predictions(1)
    path = tmp_path / "p.parquet"
    frame.write_parquet(path)
    half = frame.height // 2
    from_spark = spark_bin_statistics(spark.read.parquet(str(path)).limit(half), by="model")
    rest = cf.bin_statistics(frame.slice(half), by="model")
    merged = cf.merge_bin_statistics(from_spark, rest)
    assert merged["count"].sum() == frame.height


def test_spark_log_confidence(spark: Any) -> None:
    ell = -1e-20
    frame = pl.DataFrame(
        {"confidence": [math.exp(ell), 0.5], "lc": [ell, math.log(0.5)], "correct": [False, True]}
    )
    stats = spark_bin_statistics(spark.createDataFrame(frame.to_arrow()), log_confidence="lc")
    expected = cf.bin_statistics(frame, log_confidence="lc")
    assert stats["sum_log_loss"].sum() == pytest.approx(expected["sum_log_loss"].sum(), rel=1e-14)


def test_spark_bad_rows_are_reported_with_an_example(spark: Any) -> None:
    frame = predictions(2).with_columns(
        confidence=pl.when(pl.int_range(pl.len()) == 7).then(1.5).otherwise(pl.col("confidence"))
    )
    row = frame.row(7, named=True)
    with pytest.raises(cf.DataError, match=r"'confidence': 1 of 5,000 rows .* confidence=1.5"):
        spark_bin_statistics(spark.createDataFrame(frame.to_arrow()), by="model")
    assert row["confidence"] == 1.5


def test_spark_refuses_equal_mass_bins_and_missing_columns(spark: Any) -> None:
    rows = spark.createDataFrame(predictions(3).to_arrow())
    with pytest.raises(cf.ArgumentError, match="equal-mass"):
        spark_bin_statistics(rows, bins=cf.Binning.quantile(5))
    with pytest.raises(cf.TableError, match="'prob'"):
        spark_bin_statistics(rows, confidence="prob")


def test_command_line_stats_on_spark_equal_polars(spark: Any, tmp_path: Any) -> None:
    from calib_frames.cli import main

    frame = predictions(4)
    path = tmp_path / "p.parquet"
    frame.write_parquet(path)
    out_spark, out_polars = tmp_path / "spark.parquet", tmp_path / "polars.parquet"
    base = ["stats", str(path), "--by", "model,task", "--batch-id", "b"]
    assert main([*base, "--engine", "spark", "--out", str(out_spark)]) == 0
    assert main([*base, "--out", str(out_polars)]) == 0
    assert_same_stats(
        cf.read_statistics(out_spark).merged(), cf.read_statistics(out_polars).merged()
    )
