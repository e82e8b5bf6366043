"""Selective prediction (AURC, E-AURC, accuracy/coverage) against hand values and brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from factories import assert_frames_close, prediction_rows

import calib_frames as cf
from calib_frames.estimators.bootstrap import poisson_weights
from calib_frames.estimators.selective import (
    SELECTIVE_CI_METRICS,
    selective_curve,
    selective_intervals,
    selective_metrics,
)
from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.schema import SELECTIVE_CURVE, SELECTIVE_METRICS


def prefix_aurc(y_in_order: np.ndarray) -> float:
    """(1/n) Σ_k errors among the first k / k: the literature's AURC of one order."""
    errors = np.cumsum(1.0 - y_in_order)
    return float(np.mean(errors / np.arange(1, y_in_order.size + 1)))


def orders_by_confidence(p: np.ndarray) -> list[np.ndarray]:
    """Every order of the rows that sorts p descending (all permutations of the ties)."""
    levels = sorted(set(p.tolist()), reverse=True)
    blocks = [np.flatnonzero(p == level) for level in levels]
    return [
        np.concatenate(choice)
        for choice in itertools.product(*(itertools.permutations(b) for b in blocks))
    ]


def test_worked_example_by_hand() -> None:
    df = pl.DataFrame({"confidence": [0.9, 0.8, 0.7, 0.6, 0.5], "correct": [1, 1, 0, 1, 1]})
    row = selective_metrics(df, coverage=0.6, target_accuracy=0.7).row(0, named=True)
    assert list(row) == list(SELECTIVE_METRICS.names)
    assert row["count"] == 5 and row["weight"] == 5.0 and row["accuracy"] == 0.8
    # E_k = 0, 0, 1, 1, 1
    assert row["aurc"] == pytest.approx((1 / 3 + 1 / 4 + 1 / 5) / 5, rel=1e-14)
    # oracle: the error last, E_5 = 1
    assert row["aurc_oracle"] == pytest.approx((1 / 5) / 5, rel=1e-14)
    assert row["e_aurc"] == pytest.approx(row["aurc"] - 0.04, rel=1e-14)
    assert row["accuracy_at_coverage"] == pytest.approx(2 / 3, rel=1e-15)  # top 3
    assert row["coverage_at_accuracy"] == 1.0  # 4/5 >= 0.7 at full coverage


def test_coverage_at_accuracy_interpolates_the_boundary_row() -> None:
    # 9 right then 1 wrong: acc(c) = 9/(10c) for c in (0.9, 1], = 0.95 at c = 9/9.5
    df = pl.DataFrame({"confidence": np.linspace(1.0, 0.1, 10), "correct": [1] * 9 + [0]})
    row = selective_metrics(df, coverage=0.95, target_accuracy=0.95).row(0, named=True)
    assert row["coverage_at_accuracy"] == pytest.approx(9 / 9.5, rel=1e-14)
    assert row["accuracy_at_coverage"] == pytest.approx(9 / 9.5, rel=1e-14)
    # the most confident answer wrong: no coverage reaches 0.95
    first_wrong = df.with_columns(pl.Series("correct", [0] + [1] * 9))
    row = selective_metrics(first_wrong, target_accuracy=0.95).row(0, named=True)
    assert row["coverage_at_accuracy"] == 0.0


def test_ties_are_the_average_over_orders_and_the_bounds_are_extremes() -> None:
    p = np.array([0.9, 0.9, 0.9, 0.6, 0.6, 0.3, 0.3])
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    values = [prefix_aurc(y[order]) for order in orders_by_confidence(p)]
    df = pl.DataFrame({"confidence": p, "correct": y})
    average = selective_metrics(df)["aurc"].item()
    assert average == pytest.approx(float(np.mean(values)), rel=1e-13)
    assert selective_metrics(df, ties="pessimistic")["aurc"].item() == pytest.approx(max(values))
    assert selective_metrics(df, ties="optimistic")["aurc"].item() == pytest.approx(min(values))
    # accuracy at coverage k/7 is the mean top-k accuracy over the orders
    for k in range(1, 8):
        top_k = np.mean([y[order][:k].mean() for order in orders_by_confidence(p)])
        got = selective_metrics(df, coverage=k / 7)["accuracy_at_coverage"].item()
        assert got == pytest.approx(float(top_k), rel=1e-13)


def test_result_does_not_depend_on_row_order() -> None:
    rng = np.random.default_rng(3)
    n = 400
    df = pl.DataFrame(
        {
            "model": rng.choice(["a", "b", "c"], n),
            "confidence": rng.choice([0.2, 0.4, 0.5, 0.7, 0.9, 1.0], n),
            "correct": rng.random(n) < 0.6,
        }
    )
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=5)
    for ties in ("average", "pessimistic", "optimistic"):
        assert_frames_close(
            selective_metrics(df, by="model", ties=ties),
            selective_metrics(shuffled, by="model", ties=ties),
            rel=1e-13,
        )
        assert_frames_close(
            selective_curve(df, by="model", ties=ties),
            selective_curve(shuffled, by="model", ties=ties),
            rel=1e-13,
        )


def test_weight_two_is_a_repeated_row() -> None:
    rng = np.random.default_rng(4)
    n = 60
    df = pl.DataFrame(
        {
            "model": rng.choice(["a", "b"], n),
            "confidence": np.round(rng.random(n), 1),
            "correct": rng.random(n) < 0.7,
            "w": rng.integers(1, 4, n).astype(np.float64),
        }
    )
    repeated = df.select(pl.all().repeat_by(pl.col("w").cast(pl.UInt32)).explode()).drop("w")
    weighted = selective_metrics(df, by="model", weight="w", coverage=0.55, target_accuracy=0.8)
    plain = selective_metrics(repeated, by="model", coverage=0.55, target_accuracy=0.8)
    assert_frames_close(weighted.drop("count"), plain.drop("count"), rel=1e-12, abs=1e-14)
    assert_frames_close(
        selective_curve(df, by="model", weight="w"), selective_curve(repeated, by="model")
    )


def test_no_ties_equals_one_minus_helm_area_and_plain_loops() -> None:
    calibration = pytest.importorskip("calibration")
    df = prediction_rows(7, 3000, models=("a", "b", "c"))
    out = selective_metrics(df, by="model", coverage=0.3)
    for row in out.iter_rows(named=True):
        rows = df.filter(pl.col("model") == row["model"])
        p = rows["confidence"].to_numpy()
        y = rows["correct"].cast(pl.Int64).to_numpy()
        area, _ = calibration.get_selective_stats(p, y)
        assert row["aurc"] == pytest.approx(1.0 - area, rel=1e-12)
        ordered = y[np.argsort(-p, kind="stable")].astype(np.float64)
        oracle = prefix_aurc(np.sort(y)[::-1].astype(np.float64))
        assert row["aurc_oracle"] == pytest.approx(oracle, rel=1e-12)
        assert row["e_aurc"] == pytest.approx(prefix_aurc(ordered) - oracle, rel=1e-11)
        k = 0.3 * y.size
        whole, part = int(k), k - int(k)
        hits = ordered[:whole].sum() + part * ordered[whole]
        assert row["accuracy_at_coverage"] == pytest.approx(hits / k, rel=1e-12)


def test_large_groups_keep_digamma_precision() -> None:
    # 20000 unit rows without ties: the closed form against the plain prefix mean
    df = prediction_rows(8, 20000, models=("a",))
    y = df.sort("confidence", descending=True)["correct"].cast(pl.Float64).to_numpy()
    assert selective_metrics(df)["aurc"].item() == pytest.approx(prefix_aurc(y), rel=1e-13)


def test_curve_points_and_the_metrics_agree() -> None:
    df = prediction_rows(9, 500, models=("a", "b"))
    curve = selective_curve(df, by="model")
    assert curve.columns == ["model", *SELECTIVE_CURVE.names]
    ends = curve.group_by("model").agg(pl.all().last()).sort("model")
    metrics = selective_metrics(df, by="model")
    assert ends["coverage"].to_list() == [1.0, 1.0]
    assert ends["accuracy"].to_list() == pytest.approx(metrics["accuracy"].to_list(), rel=1e-14)
    assert (curve["risk"] + curve["accuracy"] - 1.0).abs().max() < 1e-15
    gridded = selective_curve(df, by="model", points=20)
    assert gridded.height == 40
    at = gridded.filter(pl.col("coverage") == 0.35)
    expected = selective_metrics(df, by="model", coverage=0.35)["accuracy_at_coverage"]
    assert at["accuracy"].to_list() == pytest.approx(expected.to_list(), rel=1e-14)
    # the threshold decreases along the curve
    for _, part in gridded.group_by("model"):
        assert (part["threshold"].diff().drop_nulls() <= 0).all()


def test_empty_input() -> None:
    empty = pl.DataFrame(schema={"model": pl.String, "confidence": pl.Float64, "correct": pl.Int8})
    row = selective_metrics(empty.drop("model")).row(0, named=True)
    assert row["count"] == 0 and row["weight"] == 0.0
    assert all(row[name] is None for name in ("aurc", "e_aurc", "accuracy_at_coverage"))
    assert selective_metrics(empty, by="model").height == 0
    assert selective_curve(empty, by="model").height == 0
    assert selective_intervals(empty, by="model", replicates=5).height == 0


def test_bad_input_raises_the_package_errors() -> None:
    df = pl.DataFrame({"model": ["a", "b"], "confidence": [0.5, 1.5], "correct": [1, 0]})
    with pytest.raises(DataError, match=r"'confidence': 1 of 2 rows.*model='b'"):
        selective_metrics(df, by="model")
    with pytest.raises(TableError, match="score"):
        selective_curve(df, confidence="score")
    with pytest.raises(DataError, match="'correct'"):
        selective_metrics(
            df.with_columns(pl.lit(0.5).alias("correct"), pl.lit(0.5).alias("confidence"))
        )
    for kwargs in (
        {"coverage": 0.0},
        {"coverage": 1.5},
        {"target_accuracy": -0.1},
        {"ties": "first"},
    ):
        with pytest.raises(ArgumentError):
            selective_metrics(df, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="points"):
        selective_curve(df, points=1)
    with pytest.raises(ArgumentError, match="replicates"):
        selective_intervals(df, replicates=0)


def test_groups_are_separate_calls() -> None:
    df = prediction_rows(10, 900, models=("a", "b", "c"))
    together = selective_metrics(df, by="model")
    for row in together.iter_rows(named=True):
        alone = selective_metrics(df.filter(pl.col("model") == row["model"]).drop("model"))
        assert alone.row(0, named=True) == pytest.approx(
            {k: v for k, v in row.items() if k != "model"}
        )


def test_intervals_are_percentiles_of_resampled_rows() -> None:
    df = pl.DataFrame(
        {
            "model": ["a"] * 30 + ["b"] * 25,
            "confidence": np.round(np.random.default_rng(2).random(55), 2),
            "correct": [i % 3 != 0 for i in range(30)] + [i % 4 != 0 for i in range(25)],
        }
    )
    replicates, seed = 7, 3
    ci = selective_intervals(df, by="model", replicates=replicates, level=0.5, seed=seed)
    assert ci.columns == [
        "model",
        *[f"{m}_ci_{s}" for m in SELECTIVE_CI_METRICS for s in ("low", "high")],
    ]
    indexed = df.with_row_index("row")
    draws = []
    for b in range(replicates):
        m = indexed.with_columns(
            poisson_weights(pl.col("row"), pl.lit(b, pl.UInt32), seed).alias("m")
        ).filter(pl.col("m") > 0)
        resampled = m.select(pl.exclude("m").repeat_by(pl.col("m")).explode()).drop("row")
        draws.append(selective_metrics(resampled, by="model").with_columns(pl.lit(b).alias("b")))
    table = pl.concat(draws)
    for row in ci.iter_rows(named=True):
        values = table.filter(pl.col("model") == row["model"])["aurc"].to_numpy()
        low, high = np.quantile(values, [0.25, 0.75])
        assert row["aurc_ci_low"] == pytest.approx(low, rel=1e-12)
        assert row["aurc_ci_high"] == pytest.approx(high, rel=1e-12)
    again = selective_intervals(df, by="model", replicates=replicates, level=0.5, seed=seed)
    assert ci.equals(again)


def test_intervals_cover_the_estimate_and_narrow_with_rows() -> None:
    widths = []
    for n in (200, 3200):
        df = prediction_rows(12, n, models=("a",))
        point = selective_metrics(df)["aurc"].item()
        ci = selective_intervals(df, replicates=200).row(0, named=True)
        assert ci["aurc_ci_low"] < point < ci["aurc_ci_high"]
        widths.append(ci["aurc_ci_high"] - ci["aurc_ci_low"])
    # the width shrinks roughly as 1/sqrt(n): 16 times the rows, about a quarter
    assert 0.15 < widths[1] / widths[0] < 0.4


def test_exported_from_the_package() -> None:
    assert cf.selective_metrics is selective_metrics
    assert cf.selective_curve is selective_curve
    assert cf.selective_intervals is selective_intervals
    assert math.isfinite(cf.selective_metrics(prediction_rows(0, 20))["aurc"].item())


def test_digamma_difference_against_mpmath() -> None:
    mpmath = pytest.importorskip("mpmath")
    from calib_frames.estimators.selective import _digamma_step

    mpmath.mp.dps = 40
    x = np.array([1.0, 3.0, 12.5, 19.9, 20.0, 25.0, 1e3, 1e6, 1e9, 1e12, 7.0])
    step = np.array([1.0, 2.0, 7.0, 1.0, 1.0, 3.0, 0.25, 3.0, 1.0, 2.0, 0.0])
    for xs, steps in ((x, step), (x, np.ones_like(x))):  # mixed steps; unit steps only
        got = _digamma_step(xs, steps)
        for a, b, value in zip(xs, steps, got, strict=True):
            exact = mpmath.digamma(mpmath.mpf(a) + mpmath.mpf(b)) - mpmath.digamma(mpmath.mpf(a))
            assert value == pytest.approx(float(exact), rel=5e-14, abs=1e-300)


def test_huge_weights_give_numbers_without_warnings() -> None:
    """Weights of 1e300 overflowed a product in the digamma series (a RuntimeWarning on the
    CLI's stderr, issue 32.18); the tests turn warnings into errors."""
    from calib_frames.estimators.selective import _digamma_step

    huge = pl.DataFrame(
        {"confidence": [0.9, 0.8, 0.7, 0.6], "correct": [True, False, True, True],
         "w": [1e300, 1e300, 1.0, 2.0]}
    )  # fmt: skip
    table = selective_metrics(huge, weight="w")
    assert table.select(pl.exclude("count").is_finite().all()).row(0) == (True,) * (table.width - 1)
    # the two heavy rows decide: scaled down, the same shares give the same figures
    scaled = selective_metrics(huge.with_columns(pl.col("w") / 1e290), weight="w")
    assert_frames_close(table.drop("count", "weight"), scaled.drop("count", "weight"), rel=1e-9)
    x, step = np.array([20.0, 1e300]), np.array([1e300, 1e300])
    assert np.isfinite(_digamma_step(x, step)).all()


def test_intervals_with_weights_and_tie_bounds_run_per_group() -> None:
    df = prediction_rows(13, 300, models=("a", "b")).with_columns(
        pl.col("confidence").round(1), pl.lit(2.0).alias("w")
    )
    for ties in ("pessimistic", "optimistic"):
        point = selective_metrics(df, by="model", weight="w", ties=ties)
        ci = selective_intervals(df, by="model", weight="w", ties=ties, replicates=100)
        joined = point.join(ci, on="model")
        assert (
            (joined["aurc_ci_low"] <= joined["aurc"]) & (joined["aurc"] <= joined["aurc_ci_high"])
        ).all()
