"""The polars row pass: its cells against a numpy reference, whatever the width of the key
that carries the bin and the outcome, and the populated-bin reduction of
calibration_metrics against the full bin-statistics table."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from factories import assert_frames_close, exact_bin_index

import calib_frames as cf
from calib_frames.engine import PredictionPass, prediction_cells


@pytest.mark.parametrize("bins", [10, 85, 30_000])  # the bin and outcome key: UInt8, 16, 32
def test_cells_match_a_numpy_reference(bins: int) -> None:
    rng = np.random.default_rng(bins)
    n = 5_000
    p = rng.random(n)
    p[:3] = [0.0, 1.0, 0.5]  # the outer edges and an inner one
    y = rng.random(n) < p
    frame = pl.DataFrame({"g": rng.integers(0, 3, n), "confidence": p, "correct": y})
    # invalid rows: a NaN confidence, a confidence above 1, a null outcome
    row = pl.int_range(pl.len())
    frame = frame.with_columns(
        pl.when(row == 10).then(float("nan")).when(row == 12).then(1.5)
        .otherwise("confidence").alias("confidence"),
        pl.when(row == 11).then(None).otherwise("correct").alias("correct"),
    )  # fmt: skip
    spec = PredictionPass.build(
        frame.schema, confidence="confidence", correct="correct", by="g", bins=bins
    )
    cells = prediction_cells(frame.lazy(), spec).collect()
    assert cells.schema["bin"] == pl.UInt32 and cells.schema["correct"] == pl.Boolean
    valid = np.ones(n, dtype=bool)
    valid[10:13] = False
    g, pv, yv = frame["g"].to_numpy()[valid], p[valid], y[valid]
    expected = (
        pl.DataFrame(
            {
                "g": g,
                "bin": exact_bin_index(pv, bins).astype(np.uint32),
                "correct": yv,
                "r": np.where(yv, 1.0 - pv, pv),
            }
        )
        .group_by("g", "bin", "correct")
        .agg(pl.len().cast(pl.UInt64).alias("count"), pl.col("r").sum().alias("sum_residual"))
        .sort("g", "bin", "correct")
    )
    got = cells.filter(pl.col("bin").is_not_null() & pl.col("correct").is_not_null())
    assert_frames_close(
        got.select(expected.columns).sort("g", "bin", "correct"), expected, rel=1e-13
    )
    # the invalid rows: one cell each, with a null bin or a null outcome
    bad = cells.filter(pl.col("bin").is_null() | pl.col("correct").is_null())
    assert bad["count"].sum() == 3
    assert bad.filter(pl.col("bin").is_null())["count"].sum() == 2
    assert bad.filter(pl.col("correct").is_null())["count"].sum() == 1


def test_metrics_of_the_populated_bins_equal_those_of_the_full_table() -> None:
    rng = np.random.default_rng(7)
    n = 3_000
    p = rng.beta(5, 1, n)  # the low bins stay empty
    frame = pl.DataFrame(
        {
            "model": rng.choice(["a", "b", "c"], n),
            "confidence": p,
            "correct": rng.random(n) < p,
            "w": np.where(rng.random(n) < 0.1, 0.0, rng.exponential(1.0, n)),
        }
    )
    for weight in (None, "w"):
        direct = cf.calibration_metrics(frame, by="model", weight=weight, bins=15)
        full = cf.bin_statistics(frame, by="model", weight=weight, bins=15)
        assert (full["count"] == 0).any()  # there are empty bins to leave out
        via_table = cf.metrics_from_bin_statistics(full)
        # the same sums, added in another order (the populated bins come unsorted)
        assert_frames_close(direct, via_table, rel=1e-13, abs=1e-16)
