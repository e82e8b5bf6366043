"""The bin-statistics table (stats.py): its grid of bins, its means, the cells it is built
from, the reliability projection, and merging and rolling up tables."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from factories import assert_frames_close, exact_bin_index, prediction_rows

import calib_frames as cf
from calib_frames.schema import BIN_STATISTICS, RELIABILITY
from calib_frames.stats import bin_statistics_from_cells

ROWS = prediction_rows(41, 900, power=1.3, on_edges=(0.2, 10), tasks=("x", "y"), weight=(0, 2))


def test_every_bin_of_every_group_in_order_with_exact_bounds() -> None:
    rows = ROWS.filter(pl.col("confidence") < 0.5)  # the upper bins stay empty
    stats = cf.bin_statistics(rows, by=["model", "task"], bins=7)
    assert stats.schema == pl.Schema(
        {"model": pl.String, "task": pl.String, **BIN_STATISTICS.columns}
    )
    groups = sorted(set(rows.select("model", "task").rows()))
    assert stats.select("model", "task", "bin").rows() == [
        (*g, k) for g in groups for k in range(7)
    ]
    assert stats["bin_lower"].to_list() == [k / 7 for k in range(7)] * len(groups)
    assert stats["bin_upper"].to_list() == [(k + 1) / 7 for k in range(7)] * len(groups)
    assert set(stats["closed"]) == {"left"}
    empty = stats.filter(pl.col("count") == 0)
    assert empty.height > 0
    assert empty["mean_confidence"].null_count() == empty["accuracy"].null_count() == empty.height
    assert (empty.select(BIN_STATISTICS.additive[1:]).sum_horizontal() == 0).all()


def test_means_are_the_weighted_means_of_the_bins_rows() -> None:
    stats = cf.bin_statistics(ROWS, by="model", weight="w")
    index = exact_bin_index(ROWS["confidence"].to_numpy(), 10)
    expected = (
        ROWS.with_columns(bin=pl.Series(index, dtype=pl.UInt32))
        .group_by("model", "bin")
        .agg(
            mean_confidence=(pl.col("w") * pl.col("confidence")).sum() / pl.col("w").sum(),
            accuracy=(pl.col("w") * pl.col("correct")).sum() / pl.col("w").sum(),
        )
        .sort("model", "bin")
    )
    got = stats.filter(pl.col("weight") > 0).select(expected.columns)
    assert_frames_close(got, expected, rel=1e-12)


def test_a_bin_of_zero_weight_rows_has_a_count_and_no_means() -> None:
    rows = pl.DataFrame({"confidence": [0.15, 0.15, 0.85], "correct": [1, 0, 1], "w": [0.0, 0, 2]})
    stats = cf.bin_statistics(rows, weight="w").filter(pl.col("count") > 0)
    assert stats.select("bin", "count", "weight", "mean_confidence", "accuracy").rows() == [
        (1, 2, 0.0, None, None),
        (8, 1, 2.0, 0.85, 1.0),
    ]


def test_cells_become_columns_split_by_outcome_and_bad_cells_are_ignored() -> None:
    """Two groups; group a has both outcomes in bin 1, a cell of invalid rows (null bin)
    and one of invalid outcomes (null correct); group b one wrong row in bin 0."""
    cells = pl.LazyFrame(
        {
            "g": ["a", "a", "a", "a", "b"],
            "bin": pl.Series([1, 1, None, 1, 0], dtype=pl.UInt32),
            "correct": [True, False, True, None, False],
            "count": pl.Series([2, 1, 5, 7, 1], dtype=pl.UInt64),
            "weight": [2.0, 1.0, 5.0, 7.0, 0.5],
            "sum_outcome_probability": [1.5, 0.25, 9.0, 9.0, 0.4],  # Σw·q
            "sum_residual": [0.5, 0.75, 9.0, 9.0, 0.05],  # Σw·r
            "sum_sq_residual": [0.125, 0.5625, 9.0, 9.0, 0.005],
            "sum_log_outcome_probability": [-0.6, -1.4, -9.0, -9.0, -0.2],
        }
    )
    stats = bin_statistics_from_cells(cells, keys=["g"], binning=cf.Binning.uniform(2))
    got = stats.collect()
    assert got.select("g", "bin", "count").rows() == [
        ("a", 0, 0),
        ("a", 1, 3),
        ("b", 0, 1),
        ("b", 1, 0),
    ]
    a1 = got.row(1, named=True)
    assert (a1["weight_correct"], a1["weight_wrong"]) == (2.0, 1.0)
    assert a1["sum_confidence_correct"] == 1.5  # q of a correct row is its confidence
    assert (a1["sum_residual_correct"], a1["sum_residual_wrong"]) == (0.5, 0.75)
    assert (a1["sum_sq_residual_correct"], a1["sum_sq_residual_wrong"]) == (0.125, 0.5625)
    assert a1["sum_log_loss"] == pytest.approx(2.0)
    # mean confidence: (Σ p of the correct rows + Σ p of the wrong rows) / Σw
    assert a1["mean_confidence"] == pytest.approx((1.5 + 0.75) / 3.0)
    assert a1["accuracy"] == pytest.approx(2.0 / 3.0)
    b0 = got.row(2, named=True)
    assert (b0["weight_correct"], b0["sum_residual_wrong"], b0["accuracy"]) == (0.0, 0.05, 0.0)


def test_the_reliability_table_is_a_projection_of_the_bin_statistics() -> None:
    stats = cf.bin_statistics(
        ROWS, by=["model", "task"], bins=cf.Binning.uniform(12, closed="right")
    )
    table = cf.reliability_table(
        ROWS, by=["model", "task"], bins=cf.Binning.uniform(12, closed="right")
    )
    # two passes over the rows: sums may differ in the last bit (threads add in any order)
    assert_frames_close(table, stats.select("model", "task", *RELIABILITY.names))


def parts() -> list[pl.DataFrame]:
    return [
        cf.bin_statistics(part, by=["model", "task"], weight="w")
        for part in (ROWS[:300], ROWS[300:650], ROWS[650:])
    ]


def test_merge_equals_stats_of_union() -> None:
    merged = cf.merge_bin_statistics(*parts())
    whole = cf.bin_statistics(ROWS, by=["model", "task"], weight="w")
    assert merged.select("model", "task", "bin", "count").equals(
        whole.select("model", "task", "bin", "count")
    )
    assert_frames_close(merged, whole)
    assert_frames_close(
        cf.metrics_from_bin_statistics(merged),
        cf.calibration_metrics(ROWS, by=["model", "task"], weight="w"),
    )


def test_merge_is_order_free_and_an_empty_part_adds_nothing() -> None:
    a, b, c = parts()
    forward = cf.merge_bin_statistics(cf.merge_bin_statistics(a, b), c)
    backward = cf.merge_bin_statistics(c, cf.merge_bin_statistics(b, a))
    assert_frames_close(forward, backward)
    empty = cf.bin_statistics(ROWS.clear(), by=["model", "task"], weight="w")
    assert empty.height == 0
    assert_frames_close(cf.merge_bin_statistics(forward, empty), forward)


def test_roll_up_equals_the_table_of_the_coarser_keys() -> None:
    rolled = cf.merge_bin_statistics(*parts(), by="model")
    assert_frames_close(rolled, cf.bin_statistics(ROWS, by="model", weight="w"))
    everything = cf.merge_bin_statistics(*parts(), by=[])
    assert_frames_close(everything, cf.bin_statistics(ROWS, weight="w"))


@pytest.mark.parametrize(
    "other",
    [
        5,  # fewer bins
        20,  # more bins
        [0.0, 0.25, 0.5, 1.0],  # custom edges
        cf.Binning.uniform(10, closed="right"),  # same edges, other closedness
    ],
)
def test_merge_with_different_binning_raises(other: Any) -> None:
    rows = ROWS[:100]
    with pytest.raises(cf.TableError, match="differ"):
        cf.merge_bin_statistics(cf.bin_statistics(rows), cf.bin_statistics(rows, bins=other))
    with pytest.raises(cf.TableError):
        cf.merge_bin_statistics(
            cf.bin_statistics(rows.lazy()), cf.bin_statistics(rows.lazy(), bins=other)
        ).collect()


def test_merge_refuses_equal_mass_tables() -> None:
    a = pl.DataFrame({"confidence": [0.1, 0.5, 0.9, 0.95], "correct": [True, False, True, True]})
    b = pl.DataFrame({"confidence": [0.2, 0.3, 0.7, 0.8], "correct": [True, False, True, False]})
    quantile = cf.Binning.quantile(2)
    # ranks 0..3 -> bins floor(2r/4) = 0, 0, 1, 1; bounds are the extreme confidences
    table = cf.bin_statistics(a, bins=quantile)
    assert table.select("bin_lower", "bin_upper").rows() == [(0.1, 0.5), (0.9, 0.95)]
    assert table["count"].to_list() == [2, 2]
    # equal-mass bins never merge: their edges belong to one part of the data
    with pytest.raises(cf.TableError, match="equal-mass"):
        cf.merge_bin_statistics(table, table)
    with pytest.raises(cf.TableError, match="equal-mass"):
        cf.merge_bin_statistics(table, cf.bin_statistics(b, bins=quantile))


def test_merge_refuses_different_keys_and_non_tables() -> None:
    rows = ROWS[:100]
    with pytest.raises(cf.TableError, match="different keys"):
        cf.merge_bin_statistics(cf.bin_statistics(rows, by="model"), cf.bin_statistics(rows))
    with pytest.raises(cf.TableError, match="not a bin-statistics table"):
        cf.merge_bin_statistics(rows)
    with pytest.raises(cf.ArgumentError, match="at least one"):
        cf.merge_bin_statistics()
    with pytest.raises(cf.TableError, match="not keys"):
        cf.merge_bin_statistics(cf.bin_statistics(rows, by="model"), by="task")
