"""The bounded selective summary: risk–coverage curves from a bin-statistics table.

Checked against the definition on the rows (the share of the weight at or above each
threshold, the error rate among them) and against ``selective_curve`` where every
confidence sits on a bin's lower edge (then the two are the same curve).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import calib_frames as cf
from calib_frames.estimators.selective import (
    SUMMARY_POINTS,
    selective_binning,
    selective_curve,
    selective_curve_from_bin_statistics,
)
from calib_frames.exceptions import ArgumentError, TableError


def rows(seed: int, n: int = 3_000) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    confidence = np.concatenate([rng.uniform(0, 1, n // 2), 1 - rng.exponential(1e-4, n // 2)])
    return pl.DataFrame(
        {
            "model": rng.choice(["a", "b", "c"], n),
            "confidence": np.clip(confidence, 0, 1),
            "correct": rng.random(n) < np.clip(confidence, 0, 1),
            "weight": rng.integers(0, 4, n).astype(float),
        }
    )


@pytest.mark.parametrize("bins", [selective_binning(), cf.Binning.quantile(12)], ids=str)
def test_the_curve_at_each_threshold_is_the_rows_own(bins: cf.Binning) -> None:
    """Fixed log-odds edges, and equal-mass bins (their lower bound: their least confidence)."""
    predictions = rows(1)
    stats = cf.bin_statistics(predictions, by="model", bins=bins, weight="weight")
    curve = selective_curve_from_bin_statistics(stats)
    assert curve.columns == ["model", "threshold", "coverage", "accuracy", "risk"]
    # at most one point a bin, the last at coverage 1
    per_group = curve.group_by("model").agg(pl.len(), pl.col("coverage").max())
    assert (per_group["len"] <= bins.n_bins).all() and (per_group["coverage"] == 1.0).all()
    assert bins.n_bins <= SUMMARY_POINTS
    # the definition, on the rows: accept every row of confidence ≥ t
    for model, threshold, coverage, risk in curve.select(
        "model", "threshold", "coverage", "risk"
    ).iter_rows():
        group = predictions.filter(pl.col("model") == model)
        accepted = group.filter(pl.col("confidence") >= threshold)
        weight = accepted["weight"].sum()
        wrong = accepted.filter(~pl.col("correct"))["weight"].sum()
        assert coverage == pytest.approx(weight / group["weight"].sum(), rel=1e-12)
        assert risk == pytest.approx(wrong / weight, rel=1e-12, abs=1e-15)


def test_confidences_on_the_edges_give_selective_curves_points() -> None:
    """Where every confidence is a bin's lower edge, the bins are the tie groups."""
    edges = selective_binning(8).bin_edges
    assert edges is not None
    rng = np.random.default_rng(7)
    predictions = pl.DataFrame(
        {
            "confidence": rng.choice(edges[:-1], 500),
            "correct": rng.random(500) < 0.7,
        }
    )
    summary = selective_curve_from_bin_statistics(
        cf.bin_statistics(predictions, bins=selective_binning(8))
    )
    exact = selective_curve(predictions)
    assert summary.height == exact.height
    for column in ("threshold", "coverage", "accuracy", "risk"):
        assert summary[column].to_list() == pytest.approx(exact[column].to_list(), rel=1e-12)


def test_lazy_in_lazy_out_and_refusals() -> None:
    stats = cf.bin_statistics(rows(2), by="model", bins=10)
    lazy = selective_curve_from_bin_statistics(stats.lazy())
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(selective_curve_from_bin_statistics(stats))
    with pytest.raises(TableError, match="missing columns"):
        selective_curve_from_bin_statistics(stats.drop("weight_wrong"))
    with pytest.raises(ArgumentError, match="points= takes an integer >= 2, got 1"):
        selective_binning(1)
