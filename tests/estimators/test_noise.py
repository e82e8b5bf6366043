"""ECE noise floor: the matched-binomial approximation against exact Bernoulli resampling
of rows, false-positive rate on calibrated models, power on a miscalibrated one, edges."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import calib_frames as cf
from calib_frames.estimators.bootstrap import intervals_from_bin_statistics
from calib_frames.estimators.noise import (
    UNCERTAINTY_NOISE_COLUMNS,
    _null_draws,
    _null_ece,
    calibration_noise_floor,
    noise_floor_from_bin_statistics,
    uncertainty_from_bin_statistics,
)
from calib_frames.exceptions import ArgumentError, TableError


def exact_null_ece(p: np.ndarray, replicates: int, seed: int, bins: int = 10) -> np.ndarray:
    """ECE of outcomes redrawn as Bernoulli(p) row by row (the exact H₀ distribution)."""
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
def test_matches_exact_bernoulli_resampling(case: str) -> None:
    rng = np.random.default_rng(11)
    p = CASES[case](rng)
    df = pl.DataFrame({"confidence": p, "correct": rng.random(p.size) < p})
    table = calibration_noise_floor(df, replicates=20_000, seed=1)
    exact = exact_null_ece(p, 20_000, seed=2)
    # Monte-Carlo error of both at 20 000 draws is well below 1%
    assert table["ece_null_mean"].item() == pytest.approx(exact.mean(), rel=0.03)
    assert table["ece_noise_floor"].item() == pytest.approx(np.quantile(exact, 0.95), rel=0.04)
    observed = table["ece"].item()
    exact_p = (1 + (exact >= observed - 1e-12).sum()) / (1 + exact.size)
    assert table["ece_p_value"].item() == pytest.approx(exact_p, abs=0.03)


def drawn_tables(
    stats: pl.DataFrame, replicates: int, seed: int
) -> tuple[pl.DataFrame, np.ndarray]:
    """The noise floor's drawn null tables as one bin-statistics table (keys…, replicate),
    and the numpy reduction's ECE of each (groups × replicates), from the same draws.

    A drawn bin keeps its rows, weight and confidence sum Σwp and gets the drawn weight W¹*
    of correct rows; its rows are given the bin's mean confidence p̄ = Σwp/W, so that each
    sum is that of real rows: Σwp of the correct rows W¹*·p̄, residuals W¹*(1 − p̄) and
    W⁰*·p̄ (their squares: the same times 1 − p̄ and p̄)."""
    keys = ["g"]
    frame = stats.sort([*keys, "bin"])
    groups, bins = frame["g"].n_unique(), frame.height // frame["g"].n_unique()
    parts = list(_null_draws(frame, keys, replicates, seed))
    drawn = np.concatenate([d for _, d, _, _ in parts])
    numpy_ece = np.concatenate([_null_ece(d, e, t) for _, d, e, t in parts])
    weight = frame["weight"].to_numpy().reshape(groups, 1, bins)
    mu = (frame["sum_confidence_correct"] + frame["sum_residual_wrong"]).to_numpy()
    mean_p = np.divide(mu.reshape(groups, 1, bins), weight, out=np.zeros_like(weight),
                       where=weight > 0)  # fmt: skip
    w1 = drawn
    w0 = np.maximum(weight - w1, 0.0)
    shape = (groups, replicates, bins)
    base = frame.select("g", "bin", "bin_lower", "bin_upper", "closed", "count")
    rows = base[np.broadcast_to(np.arange(groups * bins).reshape(groups, 1, bins), shape).ravel()]
    table = rows.with_columns(
        replicate=pl.Series(np.broadcast_to(np.arange(replicates)[None, :, None], shape).ravel()),
        weight=pl.Series((w1 + w0).ravel()),
        mean_confidence=pl.Series(np.broadcast_to(mean_p, shape).ravel()),
        accuracy=pl.Series(np.divide(w1, w1 + w0, out=np.zeros(shape), where=w1 + w0 > 0).ravel()),
        weight_correct=pl.Series(w1.ravel()),
        weight_wrong=pl.Series(w0.ravel()),
        sum_confidence_correct=pl.Series((w1 * mean_p).ravel()),
        sum_residual_correct=pl.Series((w1 * (1 - mean_p)).ravel()),
        sum_residual_wrong=pl.Series((w0 * mean_p).ravel()),
        sum_sq_residual_correct=pl.Series((w1 * (1 - mean_p) ** 2).ravel()),
        sum_sq_residual_wrong=pl.Series((w0 * mean_p**2).ravel()),
        sum_log_loss=pl.lit(0.0),
    ).select("g", "replicate", *cf.schema.BIN_STATISTICS.names)
    return table, numpy_ece


@pytest.mark.parametrize("weighted", [False, True], ids=["rows", "weights"])
def test_null_ece_is_the_metrics_ece_of_the_drawn_tables(weighted: bool) -> None:
    """The numpy reduction of the null draws is metric_expressions' ECE of each drawn table."""
    rng = np.random.default_rng(4)
    n = 3000
    p = rng.beta(3, 2, n)
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 6, n),
            "confidence": p,
            "correct": rng.random(n) < p**1.5,
            "w": rng.uniform(0.5, 2.0, n) if weighted else np.ones(n),
        }
    )
    stats = cf.bin_statistics(df, by="g", weight="w" if weighted else None)
    table, numpy_ece = drawn_tables(stats, replicates=50, seed=7)
    reduced = cf.metrics_from_bin_statistics(table).sort("g", "replicate")
    ece = reduced["ece"].to_numpy().reshape(numpy_ece.shape)
    np.testing.assert_allclose(numpy_ece, ece, rtol=1e-12, atol=1e-15)
    assert numpy_ece.std() > 0  # the draws vary: the comparison is not of constants


def test_observed_ece_and_direction_are_those_of_the_metrics_table() -> None:
    rng = np.random.default_rng(9)
    p = rng.uniform(0.3, 1.0, 4000)
    df = pl.DataFrame(
        {"g": np.repeat(["over", "under"], 2000), "confidence": p,
         "correct": rng.random(4000) < np.where(np.arange(4000) < 2000, p**3, p**0.3)}
    )  # fmt: skip
    stats = cf.bin_statistics(df, by="g")
    floor = noise_floor_from_bin_statistics(stats, replicates=200)
    metrics = cf.metrics_from_bin_statistics(stats)
    # the same reduction of the same table (to the rounding of polars' parallel sums)
    np.testing.assert_allclose(floor["ece"], metrics["ece"], rtol=1e-14)
    assert floor["count"].to_list() == metrics["count"].to_list()
    assert floor["populated_bins"].to_list() == metrics["populated_bins"].to_list()
    assert [v.split(",")[0] for v in floor["verdict"]] == ["overconfident", "underconfident"]
    assert (metrics["overconfidence"] > 0).to_list() == [True, False]


@pytest.fixture(scope="module")
def many() -> dict[str, pl.DataFrame]:
    rng = np.random.default_rng(5)
    datasets, n = 400, 300
    p = rng.beta(4, 2, datasets * n)
    g = np.repeat(np.arange(datasets), n)
    out = {}
    for name, truth in (("calibrated", p), ("overconfident", p**2.0)):
        df = pl.DataFrame({"g": g, "confidence": p, "correct": rng.random(p.size) < truth})
        out[name] = calibration_noise_floor(df, by="g", replicates=400, seed=3)
    return out


def test_false_positive_rate_near_nominal(many: dict[str, pl.DataFrame]) -> None:
    table = many["calibrated"]
    rate = (table["ece_p_value"] <= 0.05).mean()
    # binomial sd over 400 datasets is 1.1 percentage points
    assert 0.02 <= rate <= 0.085, rate  # type: ignore[operator]
    assert 0.015 <= table["ece_beyond_noise"].mean() <= 0.085  # type: ignore[operator]
    # p-values roughly uniform: about half below 0.5
    assert 0.42 <= (table["ece_p_value"] <= 0.5).mean() <= 0.58  # type: ignore[operator]
    assert ((table["ece"] > table["ece_noise_floor"]).mean()) <= 0.085  # type: ignore[operator]


def test_power_on_miscalibrated_model(many: dict[str, pl.DataFrame]) -> None:
    table = many["overconfident"]
    assert table["ece_beyond_noise"].all()
    assert (table["ece"] > table["ece_noise_floor"]).all()


def test_weights_and_lazy() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(0.3, 1.0, 500)
    df = pl.DataFrame({"confidence": p, "correct": rng.random(500) < p, "w": [2.0] * 500})
    plain = calibration_noise_floor(df, replicates=300, seed=4)
    weighted = calibration_noise_floor(df.lazy(), weight="w", replicates=300, seed=4)
    assert isinstance(weighted, pl.LazyFrame)
    same = weighted.collect()
    np.testing.assert_allclose(
        plain.drop("ece_beyond_noise", "verdict").to_numpy(),
        same.drop("ece_beyond_noise", "verdict").to_numpy(),
    )
    assert plain["verdict"].to_list() == same["verdict"].to_list()


def test_edges() -> None:
    df = pl.DataFrame(
        {
            "g": ["one", "same", "same", "same", "certain", "certain", "right", "right"],
            "confidence": [0.7, 0.6, 0.6, 0.6, 1.0, 0.0, 0.9, 0.95],
            "correct": [True, True, False, True, True, False, True, True],
            "w": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
        }
    )
    table = calibration_noise_floor(df, by="g", weight="w", replicates=200, min_count=1)
    rows = {row["g"]: row for row in table.iter_rows(named=True)}
    assert table.columns == [
        "g", "count", "populated_bins", "ece", "ece_null_mean", "ece_noise_floor",
        "ece_p_value", "ece_beyond_noise", "verdict",
    ]  # fmt: skip
    # confidences 0 and 1 that are right: no noise at all, ECE 0, never significant
    assert rows["certain"]["ece_noise_floor"] == 0.0 and rows["certain"]["ece"] == 0.0
    assert rows["certain"]["ece_p_value"] == 1.0 and not rows["certain"]["ece_beyond_noise"]
    # no weight: nothing to test
    assert rows["right"]["ece_p_value"] is None and not rows["right"]["ece_beyond_noise"]
    assert rows["one"]["count"] == 1 and not rows["one"]["ece_beyond_noise"]  # one bin
    assert rows["certain"]["verdict"] == "one populated bin" or rows["certain"]["verdict"] == (
        "within noise, p = 1.0"
    )
    assert rows["right"]["verdict"] == "too few predictions"  # no weight
    assert rows["one"]["verdict"] == "one populated bin"
    assert 0 < rows["same"]["ece_noise_floor"] <= 0.6
    empty = calibration_noise_floor(df.clear(), by="g")
    assert empty.height == 0 and empty.columns == table.columns
    with pytest.raises(TableError):
        noise_floor_from_bin_statistics(pl.DataFrame({"x": [1]}))
    with pytest.raises(TableError, match="clash"):
        noise_floor_from_bin_statistics(cf.bin_statistics(df.rename({"g": "ece"}), by="ece"))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"replicates": 0},
        {"level": 1.0},
        {"alpha": 0.0},
        {"min_count": -1},
        {"min_bins": 1.5},
        {"seed": -2},
    ],
)
def test_bad_arguments(kwargs: dict[str, object]) -> None:
    df = pl.DataFrame({"confidence": [0.5], "correct": [True]})
    with pytest.raises(ArgumentError):
        calibration_noise_floor(df, **kwargs)  # type: ignore[arg-type]


def test_uncertainty_columns_for_the_metrics_table() -> None:
    rng = np.random.default_rng(9)
    p = rng.uniform(0.4, 1.0, 1200)
    df = pl.DataFrame(
        {"model": np.repeat(["x", "y", "z"], 400), "confidence": p, "correct": rng.random(1200) < p}
    )
    stats = cf.bin_statistics(df, by="model")
    table = uncertainty_from_bin_statistics(stats, replicates=100, noise_replicates=200, seed=3)
    intervals = intervals_from_bin_statistics(stats, replicates=100, seed=3)
    noise = noise_floor_from_bin_statistics(stats, replicates=200, seed=4)
    assert table.columns == [*intervals.columns, *UNCERTAINTY_NOISE_COLUMNS]
    np.testing.assert_allclose(
        table.select(intervals.columns[1:]).to_numpy(), intervals.drop("model").to_numpy()
    )
    assert table["ece_beyond_noise"].to_list() == noise["ece_beyond_noise"].to_list()
    joined = cf.metrics_from_bin_statistics(stats).join(table, on="model")
    assert joined.height == 3 and joined.columns.index("ece_ci_low") > joined.columns.index("ece")
    whole = uncertainty_from_bin_statistics(cf.bin_statistics(df.lazy()), replicates=20)
    assert isinstance(whole, pl.LazyFrame) and whole.collect().height == 1


def test_verdict_names_the_direction_and_the_p_value() -> None:
    # 200 predictions each: at 0.9 right 60 % (over), at 0.55 right 85 % (under), and a
    # calibrated one (0.6 right 60 %, 0.8 right 80 %); 50 predictions: too few
    def rows(group: str, spec: list[tuple[float, int, int]]) -> pl.DataFrame:
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

    df = pl.concat(
        [
            rows("over", [(0.9, 100, 60), (0.7, 100, 70)]),
            rows("under", [(0.55, 100, 85), (0.75, 100, 75)]),
            rows("calibrated", [(0.6, 100, 60), (0.8, 100, 80)]),
            rows("small", [(0.9, 25, 10), (0.7, 25, 10)]),
        ]
    )
    table = calibration_noise_floor(df, by="g", replicates=999)
    verdict = dict(table.select("g", "verdict").iter_rows())
    assert verdict["over"] == "overconfident, p = 0.001"  # 1 / (999 + 1)
    assert verdict["under"] == "underconfident, p = 0.001"
    assert verdict["calibrated"] == "within noise, p = 1.0"  # ECE 0: every draw is >= it
    assert verdict["small"] == "too few predictions"
    beyond = dict(table.select("g", "ece_beyond_noise").iter_rows())
    assert beyond == {"over": True, "under": True, "calibrated": False, "small": False}


def test_blocks_of_groups_draw_what_one_block_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    from calib_frames.estimators import noise

    rng = np.random.default_rng(5)
    p = rng.uniform(0.4, 1.0, 3000)
    df = pl.DataFrame(
        {"g": rng.integers(0, 30, 3000), "confidence": p, "correct": rng.random(3000) < p}
    )
    # one table for both (polars' grouped sums may differ in the last bit between passes)
    stats = cf.bin_statistics(df, by="g")
    whole = noise.noise_floor_from_bin_statistics(stats, replicates=200, min_count=1)
    monkeypatch.setattr(noise, "_BLOCK_CELLS", 200 * 10 * 4)  # four groups per block
    blocks = noise.noise_floor_from_bin_statistics(stats, replicates=200, min_count=1)
    assert_frame_equal(whole, blocks, check_exact=True)
