"""Paired model comparison: joint-cell bootstrap against an exact numpy paired bootstrap,
false-positive rate on two equally good models, coverage counts, corrections, bad input."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from factories import paired_rows as two_models
from polars.testing import assert_frame_equal

import calib_frames as cf
from calib_frames.estimators.paired import PAIRED_METRICS, paired_comparison
from calib_frames.exceptions import ArgumentError, DataError, TableError

# Test-only reference libraries: a missing one skips this module, it does not break collection.
multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests


def numpy_metrics(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(accuracy, ECE with 10 left-closed bins, Brier) along the last axis."""
    index = np.minimum((p * 10).astype(int), 9)
    gaps = np.stack([((p - y) * (index == b)).sum(axis=-1) for b in range(10)], axis=-1)
    return np.stack(
        [y.mean(axis=-1), np.abs(gaps).sum(axis=-1) / p.shape[-1], ((p - y) ** 2).mean(axis=-1)],
        axis=-1,
    )


def test_matches_exact_paired_bootstrap() -> None:
    df = two_models(4, 500, seed=1, power_b=1.5)
    replicates = 800
    out = paired_comparison(df, by="task", replicates=replicates, seed=2)
    rng = np.random.default_rng(3)
    ratios = []
    for task in range(4):
        part = df.filter(pl.col("task") == task).sort("model", "item")
        p = part["confidence"].to_numpy().reshape(2, -1)
        y = part["correct"].to_numpy().astype(float).reshape(2, -1)
        idx = rng.integers(0, p.shape[1], (replicates, p.shape[1]))  # items, both models
        d = numpy_metrics(p[0][idx], y[0][idx]) - numpy_metrics(p[1][idx], y[1][idx])
        low, high = np.percentile(d, [2.5, 97.5], axis=0)
        row = out.filter(pl.col("task") == task)
        observed = numpy_metrics(p[0], y[0]) - numpy_metrics(p[1], y[1])
        for k, m in enumerate(PAIRED_METRICS):
            assert row[f"{m}_difference"].item() == pytest.approx(observed[k], abs=1e-12)
            width = row[f"{m}_difference_ci_high"].item() - row[f"{m}_difference_ci_low"].item()
            ratios.append(width / (high[k] - low[k]))
            centre = (row[f"{m}_difference_ci_high"] + row[f"{m}_difference_ci_low"]).item() / 2
            assert abs(centre - (high[k] + low[k]) / 2) < 0.1 * (high[k] - low[k]), m
    ratios_arr = np.array(ratios)
    assert 0.92 < ratios_arr.mean() < 1.1, ratios_arr
    assert ratios_arr.min() > 0.8 and ratios_arr.max() < 1.25, ratios_arr


@pytest.mark.slow
def test_false_positive_rate_equally_good_models() -> None:
    df = two_models(200, 120, seed=4)
    out = paired_comparison(df, by="task", replicates=200, seed=5)
    for m in PAIRED_METRICS:
        rate = (out[f"{m}_p_value"] <= 0.05).mean()
        # binomial sd over 200 tasks is 1.5 percentage points
        assert 0.01 <= rate <= 0.1, (m, rate)  # type: ignore[operator]
        holm = (out[f"{m}_p_value_holm"] <= 0.05).mean()
        assert holm <= 0.01, (m, holm)  # type: ignore[operator]


def test_power_and_identical_predictions() -> None:
    df = two_models(3, 800, seed=6, power_b=2.0)
    out = paired_comparison(df, by="task", replicates=400)
    assert (out["ece_p_value_holm"] < 0.05).all()
    assert (out["ece_difference_ci_high"] < 0).all()  # a is better calibrated
    same = pl.concat([df.filter(pl.col("model") == "a"), df.filter(pl.col("model") == "a")
                      .with_columns(model=pl.lit("a2"))])  # fmt: skip
    zero = paired_comparison(same, by="task", replicates=100)
    for m in PAIRED_METRICS:
        assert (zero[f"{m}_difference"] == 0).all() and (zero[f"{m}_p_value"] == 1).all()


def test_coverage_counts_and_corrections() -> None:
    rows = pl.DataFrame(
        {
            "task": ["t"] * 9 + ["u"] * 4,
            "model": ["a", "a", "a", "b", "b", "c", "c", "c", "c", "a", "a", "b", "b"],
            "item": [1, 2, 3, 2, 3, 1, 2, 3, 4, 1, 2, 3, 4],
            "confidence": [0.9, 0.8, 0.7, 0.6, 0.9, 0.7, 0.7, 0.8, 0.9, 0.5, 0.6, 0.7, 0.8],
            "correct": [1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1],
        }
    )
    out = paired_comparison(rows, by="task", replicates=50)
    assert isinstance(out, pl.DataFrame)
    got = out.select("task", "model_a", "model_b", "shared_items", "only_a", "only_b").rows()
    assert got == [
        ("t", "a", "b", 2, 1, 0),
        ("t", "a", "c", 3, 0, 1),
        ("t", "b", "c", 2, 0, 2),
        ("u", "a", "b", 0, 2, 2),  # no shared items: reported, with null differences
    ]
    assert out.row(3, named=True)["ece_difference"] is None
    assert out.row(3, named=True)["ece_p_value_holm"] is None
    tested = out.filter(pl.col("shared_items") > 0)
    for m in PAIRED_METRICS:
        raw = tested[f"{m}_p_value"].to_numpy()
        for method, sm in (("holm", "holm"), ("bh", "fdr_bh")):
            expected = multipletests(raw, method=sm)[1]
            np.testing.assert_allclose(tested[f"{m}_p_value_{method}"].to_numpy(), expected)
    # the differences use the shared items only
    shared = rows.filter((pl.col("task") == "t") & pl.col("item").is_in([2, 3]))
    metrics = cf.calibration_metrics(shared.filter(pl.col("model").is_in(["a", "b"])), by="model")
    assert out["brier_a"][0] == pytest.approx(metrics["brier"][0])
    assert out["brier_difference"][0] == pytest.approx(metrics["brier"][0] - metrics["brier"][1])
    lazy = paired_comparison(rows.lazy(), by="task", replicates=20)
    assert isinstance(lazy, pl.LazyFrame) and lazy.collect().height == 4


def test_single_model_and_no_keys() -> None:
    rows = pl.DataFrame({"model": ["a"] * 3, "item": [1, 2, 3], "confidence": [0.5] * 3,
                         "correct": [True, False, True]})  # fmt: skip
    out = paired_comparison(rows, replicates=10)
    assert out.height == 0 and "ece_p_value_bh" in out.columns
    empty = paired_comparison(rows.clear(), replicates=10)
    assert empty.height == 0


def test_bad_input() -> None:
    rows = pl.DataFrame({"model": ["a", "b"], "item": [1, 1], "confidence": [0.5, 0.7],
                         "correct": [True, False]})  # fmt: skip
    with pytest.raises(DataError, match=r"2 of 4 rows are repeated \(an item the same 'model'"):
        paired_comparison(pl.concat([rows, rows]), replicates=10)
    with pytest.raises(DataError, match="confidence"):
        paired_comparison(rows.with_columns(confidence=pl.lit(1.5)), replicates=10)
    with pytest.raises(DataError, match="null model or item"):
        paired_comparison(rows.with_columns(item=pl.lit(None, pl.Int64)), replicates=10)
    with pytest.raises(DataError, match="correct"):
        paired_comparison(rows.with_columns(correct=pl.lit(2)), replicates=10)
    with pytest.raises(TableError, match="item"):
        paired_comparison(rows.drop("item"))
    with pytest.raises(TableError, match="numeric"):
        paired_comparison(rows.with_columns(confidence=pl.lit("x")))
    with pytest.raises(TableError, match="clash"):
        paired_comparison(rows.with_columns(only_a=pl.lit(1)), by="only_a")
    for kwargs in ({"replicates": 0}, {"level": 2.0}, {"seed": -1}, {"by": ["x", "x"]}):
        with pytest.raises(ArgumentError):
            paired_comparison(rows, **kwargs)  # type: ignore[arg-type]


def test_permutation_p_values_match_exact_item_swaps() -> None:
    df = two_models(4, 400, seed=9, power_b=1.25)
    replicates = 2000
    out = paired_comparison(df, by="task", replicates=replicates, seed=1)
    rng = np.random.default_rng(2)
    for task in range(4):
        part = df.filter(pl.col("task") == task).sort("model", "item")
        p = part["confidence"].to_numpy().reshape(2, -1)
        y = part["correct"].to_numpy().astype(float).reshape(2, -1)
        observed = numpy_metrics(p[0], y[0]) - numpy_metrics(p[1], y[1])
        swap = rng.random((replicates, p.shape[1])) < 0.5  # swap the two models per item
        pa, pb = np.where(swap, p[1], p[0]), np.where(swap, p[0], p[1])
        ya, yb = np.where(swap, y[1], y[0]), np.where(swap, y[0], y[1])
        null = numpy_metrics(pa, ya) - numpy_metrics(pb, yb)
        exact = (1 + (np.abs(null) >= np.abs(observed) * (1 - 1e-12)).sum(axis=0)) / (
            1 + replicates
        )
        row = out.filter(pl.col("task") == task)
        for k, m in enumerate(PAIRED_METRICS):
            # Monte-Carlo sd of either p-value is at most 0.011 at 2000 draws
            assert abs(row[f"{m}_p_value"].item() - exact[k]) < 0.05, (task, m, exact[k])


def test_degenerate_pairs() -> None:
    rows = pl.DataFrame(
        {
            "task": ["one"] * 2 + ["flat"] * 8,
            "model": ["a", "b"] + ["a"] * 4 + ["b"] * 4,
            "item": [1, 1, 1, 2, 3, 4, 1, 2, 3, 4],
            "confidence": [0.9, 0.6] + [0.7] * 8,  # all-equal confidences in "flat"
            "correct": [True, True] + [True] * 8,  # a single class everywhere
        }
    )
    out = paired_comparison(rows, by="task", replicates=100)
    one = out.row(out["task"].to_list().index("one"), named=True)
    assert one["shared_items"] == 1
    assert one["brier_difference"] == pytest.approx(0.01 - 0.16)
    # one item: every replicate and every swap is that item; no evidence either way
    assert one["brier_difference_ci_low"] == pytest.approx(one["brier_difference_ci_high"])
    flat = out.row(out["task"].to_list().index("flat"), named=True)
    for m in PAIRED_METRICS:
        assert flat[f"{m}_difference"] == 0.0 and flat[f"{m}_p_value"] == 1.0


def test_unit_weights_change_nothing() -> None:
    df = two_models(2, 300, seed=4, power_b=1.3)
    for method in ("permutation", "bootstrap"):
        plain = paired_comparison(df, by="task", replicates=300, seed=7, method=method)
        weighted = paired_comparison(
            df.with_columns(w=pl.lit(1.0)), by="task", weight="w", replicates=300, seed=7,
            method=method,
        )  # fmt: skip
        # equal up to the rounding of polars' parallel sums (two plain calls differ there)
        assert_frame_equal(weighted, plain, rel_tol=1e-9, abs_tol=1e-12)


def test_weight_two_equals_a_repeated_item() -> None:
    """Each model's weighted accuracy, ECE and Brier on the shared items."""
    df = two_models(1, 200, seed=5, power_b=1.4).drop("task")
    twice = pl.col("item") % 3 == 0
    repeated = pl.concat([df, df.filter(twice).with_columns(pl.col("item") + 10_000)])
    weighted = df.with_columns(w=pl.when(twice).then(2.0).otherwise(1.0))
    a = paired_comparison(weighted, weight="w", replicates=50)
    b = paired_comparison(repeated, replicates=50)
    assert a["shared_items"].item() == 200 and b["shared_items"].item() == 200 + 67
    for m in PAIRED_METRICS:
        for column in (f"{m}_a", f"{m}_b", f"{m}_difference"):
            assert a[column].item() == pytest.approx(b[column].item(), abs=1e-12), column
    # the weighted point values are those of calibration_metrics with the weights
    per_model = cf.calibration_metrics(weighted, by="model", weight="w").sort("model")
    for m in PAIRED_METRICS:
        assert [a[f"{m}_a"].item(), a[f"{m}_b"].item()] == pytest.approx(
            per_model[m].to_list(), abs=1e-12
        )


def test_bad_weights() -> None:
    rows = pl.DataFrame({"model": ["a", "b"], "item": [1, 1], "confidence": [0.5, 0.7],
                         "correct": [True, False], "w": [1.0, -1.0]})  # fmt: skip
    with pytest.raises(DataError, match=r"'w': 1 of 2 rows is not a finite weight >= 0"):
        paired_comparison(rows, weight="w", replicates=10)
    with pytest.raises(TableError, match=r"'w' \(weight\) is Boolean"):
        paired_comparison(rows.with_columns(w=pl.lit(True)), weight="w", replicates=10)
    huge = (
        r"'w': 2 of 2 rows are in a group where one model's weights add up to more than "
        r"2\*\*53 .*e\.g\. model='a', item=1$"
    )
    with pytest.raises(DataError, match=huge):
        paired_comparison(rows.with_columns(w=pl.lit(1e30)), weight="w")


def counted_items(tasks: int, n: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The same predictions as count-weighted items (weight 1–5) and as repeated items."""
    df = two_models(tasks, n, seed=seed, power_b=1.3)
    rng = np.random.default_rng(seed)
    counts = pl.DataFrame({"task": np.repeat(np.arange(tasks), n),
                           "item": np.tile(np.arange(n), tasks),
                           "w": rng.integers(1, 6, tasks * n).astype(float)})  # fmt: skip
    weighted = df.join(counts, on=["task", "item"])
    copies = pl.int_ranges(0, pl.col("w").cast(pl.Int64)).alias("copy")
    repeated = (
        weighted.with_columns(copies)
        .explode("copy")
        .with_columns(item=pl.col("item") * 10 + pl.col("copy"))
        .drop("copy", "w")
    )
    return weighted, repeated


@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_count_weighted_items_equal_repeated_items(method: str) -> None:
    """A weight of k is k identical items: the same differences, p-values and intervals."""
    weighted, repeated = counted_items(3, 80, seed=11)
    replicates = 4000
    a = paired_comparison(weighted, by="task", weight="w", replicates=replicates, seed=1,
                          method=method)  # fmt: skip
    b = paired_comparison(repeated, by="task", replicates=replicates, seed=2, method=method)
    assert a["shared_items"].to_list() == [80] * 3
    totals = weighted.filter(pl.col("model") == "a").group_by("task").agg(pl.col("w").sum())
    assert b["shared_items"].to_list() == totals.sort("task")["w"].cast(pl.UInt64).to_list()
    for m in PAIRED_METRICS:
        np.testing.assert_allclose(a[f"{m}_difference"], b[f"{m}_difference"], atol=1e-12)
        # two independent Monte-Carlo p-values: the sd of their difference is
        # sqrt(2 p (1 - p) / R) (0.011 at p = 0.5); allow 5 of them, floored at 1 / R
        p = (a[f"{m}_p_value"] + b[f"{m}_p_value"]).to_numpy() / 2
        bound = 5 * np.sqrt(2 * p * (1 - p) / replicates) + 1 / replicates
        np.testing.assert_array_less(np.abs(a[f"{m}_p_value"] - b[f"{m}_p_value"]), bound)
        # an end of a 95% interval has a Monte-Carlo sd of about 0.7 / sqrt(R) of the
        # interval's width (a 2.5% quantile of a normal): 6 sds of the difference of two
        # estimates is 6 / sqrt(R) of the width (0.095 here); items as units, as before
        # the weights were frequencies, made the intervals ~1.9 times as wide
        width = (b[f"{m}_difference_ci_high"] - b[f"{m}_difference_ci_low"]).to_numpy()
        for end in ("low", "high"):
            gap = np.abs(a[f"{m}_difference_ci_{end}"] - b[f"{m}_difference_ci_{end}"])
            np.testing.assert_array_less(gap, 6 / np.sqrt(replicates) * width)


def test_fractional_weights_round_the_total() -> None:
    """Weights of ½: the bootstrap draws half as many items; the permutation swaps items."""
    df = two_models(4, 100, seed=12, power_b=1.3)
    replicates = 4000
    unit = paired_comparison(df, by="task", replicates=replicates, seed=1)
    half = paired_comparison(df.with_columns(w=pl.lit(0.5)), by="task", weight="w",
                             replicates=replicates, seed=2)  # fmt: skip
    for m in ("accuracy", "brier"):  # means: the bootstrap sd is exactly √2 as large
        np.testing.assert_allclose(half[f"{m}_difference"], unit[f"{m}_difference"], atol=1e-12)
        ratio = (half[f"{m}_difference_ci_high"] - half[f"{m}_difference_ci_low"]) / (
            unit[f"{m}_difference_ci_high"] - unit[f"{m}_difference_ci_low"]
        )
        assert 1.25 < ratio.mean() < 1.6, (m, ratio.to_list())  # type: ignore[operator]
    for m in PAIRED_METRICS:  # each item one unit of weight ½: item swaps, as without weights
        p = (half[f"{m}_p_value"] + unit[f"{m}_p_value"]).to_numpy() / 2
        bound = 5 * np.sqrt(2 * p * (1 - p) / replicates) + 1 / replicates
        np.testing.assert_array_less(np.abs(half[f"{m}_p_value"] - unit[f"{m}_p_value"]), bound)


def test_weights_differ_between_models() -> None:
    rows = pl.DataFrame({"task": ["t"] * 6, "model": ["a", "b"] * 3, "item": [1, 1, 2, 2, 3, 3],
                         "confidence": [0.5, 0.7] * 3, "correct": [True, False] * 3,
                         "w": [1.0, 1.0, 2.0, 3.0, 1.0, 1.0]})  # fmt: skip
    message = (
        r"column 'w': 1 of 3 items is weighted differently by different models .*"
        r"e\.g\. task='t', model='a', item=2: w=2\.0"
    )
    with pytest.raises(DataError, match=message):
        paired_comparison(rows, by="task", weight="w", replicates=10)
    lazy = paired_comparison(rows.lazy(), by="task", weight="w", replicates=10)
    with pytest.raises(DataError, match=message):
        lazy.collect()  # type: ignore[union-attr]
    # the same weight in another task, or an item only one model answered, is no mismatch
    fine = rows.with_columns(w=pl.when(pl.col("item") == 2).then(2.0).otherwise(pl.col("w")))
    other = rows.with_columns(task=pl.lit("u"), w=pl.lit(5.0))
    single = fine.filter((pl.col("item") != 3) | (pl.col("model") == "a"))
    out = paired_comparison(pl.concat([single, other]), by="task", weight="w", replicates=10)
    assert out["shared_items"].to_list() == [2, 3]
