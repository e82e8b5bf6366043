"""ECE noise floor: the exact null distribution against an exact convolution and against
Bernoulli resampling of rows, the correction across groups, false flags and power, the
direction of the gaps, weights as frequencies, and the edges (no weight, too few)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats as scipy_stats

import calib_frames as cf
from calib_frames.estimators import null_ece
from calib_frames.estimators._bins import BinArrays
from calib_frames.estimators.bootstrap import intervals_from_bin_statistics
from calib_frames.estimators.multiple_testing import adjust_p_values
from calib_frames.estimators.noise import (
    UNCERTAINTY_NOISE_COLUMNS,
    calibration_noise_floor,
    noise_floor_from_bin_statistics,
    uncertainty_from_bin_statistics,
)
from calib_frames.estimators.null_ece import null_distribution
from calib_frames.exceptions import ArgumentError, TableError


def exact_null_ece(p: np.ndarray, replicates: int, seed: int, bins: int = 10) -> np.ndarray:
    """ECE of outcomes redrawn as Bernoulli(p) row by row (H₀ itself, no binomial)."""
    rng = np.random.default_rng(seed)
    index = np.minimum((p * bins).astype(int), bins - 1)
    y = rng.random((replicates, p.size)) < p
    gap = np.zeros((replicates, bins))
    for b in range(bins):  # bins, not rows
        inside = index == b
        gap[:, b] = np.abs(p[inside].sum() - y[:, inside].sum(axis=1))
    return gap.sum(axis=1) / p.size


CASES = {
    "beta": lambda rng: rng.beta(5, 2, 400),
    "near-certain": lambda rng: np.clip(1 - rng.exponential(0.03, 600), 0, 1),
    "small": lambda rng: rng.uniform(0, 1, 40),
    "spread-in-bins": lambda rng: rng.choice([0.5, 0.59, 0.9, 0.999], 300),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_bernoulli_resampling_of_rows(case: str) -> None:
    """The moment-matched binomial against H₀ itself: rows redrawn one by one."""
    rng = np.random.default_rng(11)
    p = CASES[case](rng)
    df = pl.DataFrame({"confidence": p, "correct": rng.random(p.size) < p})
    table = calibration_noise_floor(df)
    drawn = exact_null_ece(p, 20_000, seed=2)
    # Monte-Carlo error at 20 000 draws is well below 1%
    assert table["ece_null_mean"].item() == pytest.approx(drawn.mean(), rel=0.03)
    assert table["ece_noise_floor"].item() == pytest.approx(np.quantile(drawn, 0.95), rel=0.04)
    observed = table["ece"].item()
    mid_p = (drawn > observed + 1e-12).sum() + 0.5 * (np.abs(drawn - observed) <= 1e-12).sum()
    assert table["ece_p_value"].item() == pytest.approx(mid_p / drawn.size, abs=0.03)


def binomial_bins(bins: list[tuple[int, float]], excess: list[float]) -> BinArrays:
    """One group of binomial bins (every confidence of bin b equal to p_b)."""
    w = np.array([[n for n, _ in bins]], dtype=float)
    mu = np.array([[n * p for n, p in bins]])
    var = np.array([[n * p * (1 - p) for n, p in bins]])
    return BinArrays(weight=w, expected=mu, variance=var, excess=np.array([excess]),
                     lower=np.zeros_like(w))  # fmt: skip


def test_p_values_equal_the_exact_convolution_deep_in_the_tail() -> None:
    """Integer means: S is an integer, its distribution the plain convolution of the bins'
    |C − μ| distributions (independent reference); the p-value is its mid-p."""
    bins = [(200, 0.7), (100, 0.5), (60, 0.9), (300, 0.35)]
    exact = np.array([1.0])
    for n, p in bins:
        k = np.arange(n + 1)
        deviation = np.zeros(n + 1)
        np.add.at(deviation, np.abs(k - round(n * p)), scipy_stats.binom.pmf(k, n, p))
        exact = np.convolve(exact, deviation)
    for s in (5, 20, 35, 50, 60, 70):
        mid_p = exact[s + 1 :].sum() + 0.5 * exact[s]
        null = null_distribution(binomial_bins(bins, [s, 0, 0, 0]))
        assert null.p_value[0] == pytest.approx(mid_p, rel=0.01), s  # to 2.6e-8 at s = 70
    mean = (np.arange(exact.size) * exact).sum() / 660
    assert null.mean[0] == pytest.approx(mean, rel=1e-12)
    # far beyond: the floor, not a round-off digit
    assert null_distribution(binomial_bins(bins, [300, 0, 0, 0])).p_value[0] == null_ece.P_FLOOR


def test_wide_bins_read_the_cumulative_distribution() -> None:
    """Bins of more values than grid cells take each cell's mass from binom.cdf."""
    n, p = 1_000_000, 0.3
    sd = np.sqrt(n * p * (1 - p))
    for z in (0.5, 2.0, 4.0):
        s = round(z * sd)
        arrays = binomial_bins([(n, p)], [s])
        mid_p = scipy_stats.binom.sf(n * p + s, n, p) + scipy_stats.binom.cdf(n * p - s - 1, n, p)
        mid_p += 0.5 * (
            scipy_stats.binom.pmf(n * p + s, n, p) + scipy_stats.binom.pmf(n * p - s, n, p)
        )
        assert null_distribution(arrays).p_value[0] == pytest.approx(mid_p, rel=0.01), z


def test_observed_ece_and_direction_are_those_of_the_metrics_table() -> None:
    rng = np.random.default_rng(9)
    p = rng.uniform(0.3, 1.0, 4000)
    df = pl.DataFrame(
        {"g": np.repeat(["over", "under"], 2000), "confidence": p,
         "correct": rng.random(4000) < np.where(np.arange(4000) < 2000, p**3, p**0.3)}
    )  # fmt: skip
    stats = cf.bin_statistics(df, by="g")
    floor = noise_floor_from_bin_statistics(stats)
    metrics = cf.metrics_from_bin_statistics(stats)
    # the same reduction of the same table (to the rounding of polars' parallel sums)
    np.testing.assert_allclose(floor["ece"], metrics["ece"], rtol=1e-14)
    assert floor["count"].to_list() == metrics["count"].to_list()
    assert floor["populated_bins"].to_list() == metrics["populated_bins"].to_list()
    assert floor["ece_direction"].to_list() == ["over", "under"]
    assert [v.split(",")[0] for v in floor["verdict"]] == ["overconfident", "underconfident"]
    assert (metrics["overconfidence"] > 0).to_list() == [True, False]


def leaderboard_cells(models: int, tasks: int, n: int, seed: int, off: int = 0) -> pl.DataFrame:
    """models × tasks cells of n predictions, confidences U(0.5, 1); the first ``off``
    models overconfident (right with p − 0.15), the others calibrated."""
    rng = np.random.default_rng(seed)
    size = models * tasks * n
    p = rng.uniform(0.5, 1.0, size)
    model = np.repeat(np.arange(models), tasks * n)
    truth = np.where(model < off, p - 0.15, p)
    return pl.DataFrame(
        {"model": model, "task": np.tile(np.repeat(np.arange(tasks), n), models),
         "confidence": p, "correct": rng.random(size) < truth}
    )  # fmt: skip


@pytest.fixture(scope="module")
def calibrated_table() -> pl.DataFrame:
    stats = cf.bin_statistics(leaderboard_cells(20, 30, 300, seed=5), by=["model", "task"])
    return stats


def test_raw_false_positive_rate_near_nominal(calibrated_table: pl.DataFrame) -> None:
    table = noise_floor_from_bin_statistics(calibrated_table, correction="none")
    rate = (table["ece_p_value"] <= 0.05).mean()
    # binomial sd over 600 cells is 0.9 percentage points
    assert 0.025 <= rate <= 0.08, rate  # type: ignore[operator]
    assert table["ece_beyond_noise"].mean() == rate
    # p-values roughly uniform: about half below 0.5
    assert 0.43 <= (table["ece_p_value"] <= 0.5).mean() <= 0.57  # type: ignore[operator]
    assert table["ece_p_adjusted"].to_list() == table["ece_p_value"].to_list()


@pytest.mark.parametrize("correction", ["bh", "holm"])
def test_corrected_flags_are_rare_under_the_global_null(
    calibrated_table: pl.DataFrame, correction: str
) -> None:
    table = noise_floor_from_bin_statistics(calibrated_table, correction=correction)  # type: ignore[arg-type]
    # the chance of any false flag among 600 calibrated cells is at most 5% (BH, Holm)
    assert table["ece_beyond_noise"].sum() <= 1
    raw = table["ece_p_value"].to_list()
    expected = adjust_p_values(table.select("ece_p_value"), p_value="ece_p_value",
                               method=correction)["p_value_adjusted"]  # type: ignore[arg-type]  # fmt: skip
    np.testing.assert_allclose(table["ece_p_adjusted"], expected, rtol=1e-15)
    assert min(table["ece_p_adjusted"]) >= min(raw)  # type: ignore[type-var]
    assert table["verdict"].str.starts_with("within noise, adjusted p = ").sum() >= 599


def test_power_after_the_correction() -> None:
    """Five overconfident models (gap 0.15) among 20: flagged on nearly every task (one
    of the 150 cells drew an ECE of 0.077 here, 3 sd below its mean of 0.15)."""
    stats = cf.bin_statistics(leaderboard_cells(20, 30, 300, seed=6, off=5), by=["model", "task"])
    table = noise_floor_from_bin_statistics(stats)
    off = table.filter(pl.col("model") < 5)
    assert off["ece_beyond_noise"].mean() >= 0.97  # type: ignore[operator]
    assert (off.filter("ece_beyond_noise")["ece_direction"] == "over").all()
    # BH bounds the expected share of false flags among the flagged at 5% (7 of 156 here;
    # Holm, which bounds the chance of any, flags none of them)
    false = table.filter(pl.col("model") >= 5)["ece_beyond_noise"].sum()
    assert false / table["ece_beyond_noise"].sum() <= 0.1
    holm = noise_floor_from_bin_statistics(stats, correction="holm")
    assert holm.filter(pl.col("model") >= 5)["ece_beyond_noise"].sum() <= 1
    assert holm.filter(pl.col("model") < 5)["ece_beyond_noise"].mean() >= 0.9  # type: ignore[operator]
    # p-values far below a Monte-Carlo resolution: the correction can act on them
    assert off["ece_p_value"].median() < 1e-6  # type: ignore[operator]


def test_weights_are_frequencies() -> None:
    """Identical rows merged into one row weighted by their count give the same table as
    the rows themselves: the null is exact, so to the rounding of the sums."""
    rng = np.random.default_rng(0)
    p = rng.choice(np.linspace(0.3, 0.98, 25), 3000)
    rows = pl.DataFrame({"g": rng.integers(0, 3, 3000), "confidence": p,
                         "correct": rng.random(3000) < p**1.2})  # fmt: skip
    merged = rows.group_by("g", "confidence", "correct").agg(w=pl.len().cast(pl.Float64))
    plain = calibration_noise_floor(rows, by="g")
    weighted = calibration_noise_floor(merged.lazy(), by="g", weight="w")
    assert isinstance(weighted, pl.LazyFrame)
    same = weighted.collect()
    assert same["count"].to_list() != plain["count"].to_list()  # fewer rows, same weight
    assert_frame_equal(plain.drop("count"), same.drop("count"), rel_tol=1e-9, abs_tol=1e-12)
    # a weight of 2 on each row is each row twice (not the unweighted table)
    twice = calibration_noise_floor(rows.with_columns(w=pl.lit(2.0)), by="g", weight="w")
    doubled = calibration_noise_floor(pl.concat([rows, rows]), by="g")
    assert_frame_equal(twice.drop("count"), doubled.drop("count"), rel_tol=1e-9, abs_tol=1e-12)
    assert (twice["ece_p_value"] < plain["ece_p_value"]).all()  # twice the evidence


def test_edges() -> None:
    df = pl.DataFrame(
        {
            "g": ["one", "same", "same", "same", "certain", "certain", "zero", "zero"],
            "confidence": [0.7, 0.6, 0.6, 0.6, 1.0, 0.0, 0.9, 0.95],
            "correct": [True, True, False, True, True, False, True, True],
            "w": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
        }
    )
    table = calibration_noise_floor(df, by="g", weight="w", min_count=1)
    rows = {row["g"]: row for row in table.iter_rows(named=True)}
    assert table.columns == [
        "g", "count", "weight", "populated_bins", "ece", "ece_direction", "ece_null_mean",
        "ece_noise_floor", "ece_p_value", "ece_p_adjusted", "ece_beyond_noise", "verdict",
    ]  # fmt: skip
    # confidences 0 and 1 that are right: no noise at all, ECE 0, never significant
    certain = rows["certain"]
    assert certain["ece_noise_floor"] == 0.0 and certain["ece"] == 0.0
    assert certain["ece_p_value"] == 1.0 and not certain["ece_beyond_noise"]
    assert certain["verdict"] == "within noise, adjusted p = 1.0"
    # no weight: no number and nothing to test (issue 29.3), not a perfect model
    zero = rows["zero"]
    assert zero["count"] == 2 and zero["weight"] == 0.0
    for name in ("ece", "ece_direction", "ece_null_mean", "ece_noise_floor", "ece_p_value",
                 "ece_p_adjusted"):  # fmt: skip
        assert zero[name] is None, name
    assert not zero["ece_beyond_noise"] and zero["verdict"] == "no weight"
    assert rows["one"]["verdict"] == "one populated bin" and rows["one"]["ece_p_adjusted"] is None
    assert 0 < rows["same"]["ece_noise_floor"] <= 0.6 + 0.01  # at most one grid cell above
    empty = calibration_noise_floor(df.clear(), by="g")
    assert empty.height == 0 and empty.columns == table.columns
    with pytest.raises(TableError):
        noise_floor_from_bin_statistics(pl.DataFrame({"x": [1]}))
    with pytest.raises(TableError, match="clash"):
        noise_floor_from_bin_statistics(cf.bin_statistics(df.rename({"g": "ece"}), by="ece"))


def test_untested_groups_are_not_in_the_family() -> None:
    """Groups with no weight or too few predictions get no adjusted p-value and do not
    count in m: adding them leaves the others' adjusted p-values as they were."""
    cells = leaderboard_cells(3, 4, 300, seed=2, off=1)
    stats = cf.bin_statistics(cells, by=["model", "task"])
    small = cf.bin_statistics(cells.head(50).with_columns(model=pl.lit(9, pl.Int64)),
                              by=["model", "task"])  # fmt: skip
    none = cf.bin_statistics(cells.head(500).with_columns(model=pl.lit(10, pl.Int64),
                                                          w=pl.lit(0.0)),
                             by=["model", "task"], weight="w")  # fmt: skip
    alone = noise_floor_from_bin_statistics(stats)
    joined = noise_floor_from_bin_statistics(
        pl.concat([stats, small, none.drop("w", strict=False)])
    )
    kept = joined.filter(pl.col("model") < 9)
    np.testing.assert_allclose(kept["ece_p_adjusted"], alone["ece_p_adjusted"], rtol=1e-12)
    extra = joined.filter(pl.col("model") >= 9)
    assert extra["ece_p_adjusted"].null_count() == extra.height
    assert set(extra["verdict"]) == {"too few predictions", "no weight"}


def rows_of(group: str, spec: list[tuple[float, int, int]]) -> pl.DataFrame:
    """``n`` predictions at confidence ``p``, ``right`` of them right, per (p, n, right)."""
    return pl.concat(
        pl.DataFrame(
            {
                "g": [group] * n,
                "confidence": [p] * n,
                "correct": [True] * right + [False] * (n - right),
            }
        )
        for p, n, right in spec
    )


def test_verdict_names_the_direction_and_the_p_value() -> None:
    # 200 predictions each: at 0.9 right 60 % (over), at 0.55 right 85 % (under), and a
    # calibrated one (0.6 right 60 %, 0.8 right 80 %); 50 predictions: too few
    df = pl.concat(
        [
            rows_of("over", [(0.9, 100, 60), (0.7, 100, 70)]),
            rows_of("under", [(0.55, 100, 85), (0.75, 100, 75)]),
            rows_of("calibrated", [(0.6, 100, 60), (0.8, 100, 80)]),
            rows_of("small", [(0.9, 25, 10), (0.7, 25, 10)]),
        ]
    )
    table = calibration_noise_floor(df, by="g")
    verdict = dict(table.select("g", "verdict").iter_rows())
    assert verdict["over"].startswith("overconfident, adjusted p = ")
    assert verdict["under"].startswith("underconfident, adjusted p = ")
    assert verdict["calibrated"] == "within noise, adjusted p = 1.0"  # ECE 0
    assert verdict["small"] == "too few predictions"
    beyond = dict(table.select("g", "ece_beyond_noise").iter_rows())
    assert beyond == {"over": True, "under": True, "calibrated": False, "small": False}
    raw = calibration_noise_floor(df, by="g", correction="none")
    assert dict(raw.select("g", "verdict").iter_rows())["calibrated"] == "within noise, p = 1.0"


def test_mixed_direction_says_where() -> None:
    """Overconfident by 0.1 above 0.7 and underconfident by 0.1 below: the mean gap is 0,
    the ECE 0.1; the verdict is neither "over" nor "under" but says where."""
    df = pl.concat(
        [
            rows_of("split", [(0.85, 400, 300), (0.75, 400, 260), (0.55, 400, 260),
                              (0.45, 400, 220)]),
            rows_of("alternating", [(0.35, 400, 100), (0.45, 400, 220), (0.55, 400, 180),
                                    (0.65, 400, 300), (0.75, 400, 260), (0.85, 400, 380)]),
            rows_of("above", [(0.45, 400, 220), (0.55, 400, 260), (0.75, 400, 260),
                              (0.85, 400, 300)]),
        ]
    )  # fmt: skip
    table = calibration_noise_floor(df, by="g")
    rows = {row["g"]: row for row in table.iter_rows(named=True)}
    split = rows["split"]
    assert split["ece"] == pytest.approx(0.1, abs=1e-12)
    assert split["ece_direction"] == "mixed"
    assert split["verdict"].startswith("mixed: overconfident above 0.7, underconfident below, ")
    assert rows["above"]["verdict"].startswith("mixed: overconfident above 0.7, underconfident")
    assert rows["alternating"]["verdict"].startswith(
        "mixed: over- and underconfident bins alternate, "
    )
    metrics = cf.calibration_metrics(df, by="g").sort("g")
    assert abs(metrics.filter(g="split")["overconfidence"].item()) < 1e-12


@pytest.mark.parametrize(
    "kwargs",
    [
        {"level": 1.0},
        {"alpha": 0.0},
        {"min_count": -1},
        {"min_bins": 1.5},
        {"correction": "bonferroni"},
        {"replicates": 100},  # no draws: the argument is gone
    ],
)
def test_bad_arguments(kwargs: dict[str, object]) -> None:
    df = pl.DataFrame({"confidence": [0.5], "correct": [True]})
    with pytest.raises((ArgumentError, TypeError)):
        calibration_noise_floor(df, **kwargs)  # type: ignore[arg-type]


def test_uncertainty_columns_for_the_metrics_table() -> None:
    rng = np.random.default_rng(9)
    p = rng.uniform(0.4, 1.0, 1200)
    df = pl.DataFrame(
        {"model": np.repeat(["x", "y", "z"], 400), "confidence": p, "correct": rng.random(1200) < p}
    )
    stats = cf.bin_statistics(df, by="model")
    table = uncertainty_from_bin_statistics(stats, replicates=100, seed=3)
    intervals = intervals_from_bin_statistics(stats, replicates=100, seed=3)
    noise = noise_floor_from_bin_statistics(stats)
    assert table.columns == [*intervals.columns, *UNCERTAINTY_NOISE_COLUMNS]
    np.testing.assert_allclose(
        table.select(intervals.columns[1:]).to_numpy(), intervals.drop("model").to_numpy()
    )
    assert_frame_equal(table.select("model", *UNCERTAINTY_NOISE_COLUMNS),
                       noise.select("model", *UNCERTAINTY_NOISE_COLUMNS))  # fmt: skip
    joined = cf.metrics_from_bin_statistics(stats).join(table, on="model")
    assert joined.height == 3 and joined.columns.index("ece_ci_low") > joined.columns.index("ece")
    whole = uncertainty_from_bin_statistics(cf.bin_statistics(df.lazy()), replicates=20)
    assert isinstance(whole, pl.LazyFrame) and whole.collect().height == 1


def test_blocks_of_groups_give_what_one_block_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    p = rng.uniform(0.4, 1.0, 3000)
    df = pl.DataFrame(
        {"g": rng.integers(0, 30, 3000), "confidence": p, "correct": rng.random(3000) < p}
    )
    # one table for both (polars' grouped sums may differ in the last bit between passes)
    stats = cf.bin_statistics(df, by="g")
    whole = noise_floor_from_bin_statistics(stats, min_count=1)
    monkeypatch.setattr(null_ece, "_BLOCK_CELLS", 4 * 10 * (null_ece.GRID_CELLS + 1))
    blocks = noise_floor_from_bin_statistics(stats, min_count=1)
    # the observed ECE is a grouped polars sum each call: its last bit may differ between
    # calls (1 in 3 runs did), whatever the blocks; the null's columns must agree beyond it
    assert_frame_equal(whole, blocks, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    assert whole["verdict"].to_list() == blocks["verdict"].to_list()


def test_binomial_probabilities_are_scipy_stats() -> None:
    """The null reads scipy.special (scipy.stats takes a second to import)."""
    from calib_frames.estimators.null_ece import _binomial_cdf, _binomial_pmf

    k = np.arange(0.0, 1001.0)
    n, p = np.full_like(k, 1000.0), np.full_like(k, 0.37)
    reference = scipy_stats.binom.pmf(k, 1000, 0.37)
    held = reference > 1e-300
    np.testing.assert_allclose(_binomial_pmf(k, n, p)[held], reference[held], rtol=1e-10)
    x = np.linspace(-5.0, 1010.0, 3001)
    wide = np.full_like(x, 1000.0)
    np.testing.assert_allclose(
        _binomial_cdf(x, wide, np.full_like(x, 0.37)),
        scipy_stats.binom.cdf(x, 1000, 0.37),
        rtol=1e-10,
        atol=1e-15,
    )
