"""Recalibration: fitting schemes, properties, shapes, and bad input."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from factories import option_rows, prediction_rows
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq, minimize_scalar
from scipy.special import expit

import calib_frames as cf
from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.recalibrate import (
    apply_histogram,
    apply_isotonic,
    apply_platt,
    apply_temperature,
    assign_folds,
    fit_histogram,
    fit_isotonic,
    fit_platt,
    fit_temperature,
    recalibrate,
    recalibration_metrics,
    recalibration_reliability,
    top_option,
)

FITS = {
    "temperature": (fit_temperature, apply_temperature),
    "platt": (fit_platt, apply_platt),
    "histogram": (fit_histogram, apply_histogram),
    "isotonic": (fit_isotonic, apply_isotonic),
}


def _binary(seed: int = 0, n: int = 600, groups: tuple[str, ...] = ("a", "b")) -> pl.DataFrame:
    """``n`` predictions per model, model i overconfident (outcomes ~ Bernoulli(p^(1.5 + i)))."""
    return pl.concat(
        prediction_rows(
            seed + i, n, low=0.01, high=0.99, power=1.5 + i, models=(name,), tasks=("x", "y"),
            items=max(n // 2, 1), split_every=3,
        )
        for i, name in enumerate(groups)
    )  # fmt: skip


def _options(seed: int = 0, questions: int = 200, k: int = 4, models: int = 2) -> pl.DataFrame:
    return option_rows(seed, questions=questions, options=k, models=models)


def _scipy_temperature(z: np.ndarray, y: np.ndarray) -> float:
    """T from scipy's Brent root of the NLL's derivative in 1/T (minimize_scalar's
    bounded method stops at ~1.5e-8 relative, too coarse to check against)."""

    def slope(beta: float) -> float:
        return float(np.sum((expit(beta * z) - y) * z))

    return 1.0 / brentq(slope, 1e-3, 1e3, xtol=1e-15, rtol=4 * np.finfo(float).eps)


def _options_nll(beta: float, ll: np.ndarray, gold: np.ndarray) -> float:
    s = beta * ll
    top = s.max(axis=1)
    log_z = np.log(np.exp(s - top[:, None]).sum(axis=1)) + top
    return float(np.sum(log_z - s[np.arange(len(s)), gold]))


# --- temperature -------------------------------------------------------------------


def test_temperature_per_group_matches_scipy() -> None:
    frame = _binary()
    params = fit_temperature(frame, by=["model", "task"])
    assert params.columns[:3] == ["model", "task", "temperature"]
    assert params["converged"].all() and not params["at_bound"].any()
    for model, task, t in params.select("model", "task", "temperature").rows():
        sub = frame.filter((pl.col("model") == model) & (pl.col("task") == task))
        p = sub["confidence"].to_numpy()
        z = np.log(p) - np.log1p(-p)
        # the fit stops at a relative step of tol=1e-10 in 1/T
        assert t == pytest.approx(_scipy_temperature(z, sub["correct"].to_numpy()), rel=1e-10)


def test_temperature_weights_equal_repeated_rows() -> None:
    frame = _binary(n=100, groups=("a",))
    weights = np.random.default_rng(1).integers(1, 4, frame.height)
    weighted = fit_temperature(
        frame.with_columns(w=pl.Series(weights, dtype=pl.Float64)), weight="w"
    )
    repeated = fit_temperature(frame.select(pl.all().repeat_by(pl.Series(weights)).explode()))
    assert weighted["temperature"].item() == pytest.approx(repeated["temperature"].item(), rel=1e-9)


def test_shared_temperature_across_tasks() -> None:
    frame = _binary()
    shared = fit_temperature(frame, by="model")
    assert shared.columns[0] == "model" and shared.height == 2
    applied = apply_temperature(frame, shared)
    t = dict(shared.select("model", "temperature").rows())
    p = frame["confidence"].to_numpy()
    z = np.log(p) - np.log1p(-p)
    expected = 1.0 / (1.0 + np.exp(-z / frame["model"].replace_strict(t).to_numpy()))
    np.testing.assert_allclose(applied["recalibrated"].to_numpy(), expected, rtol=1e-14)
    # the shared T minimises the NLL of both tasks together: no task alone beats it there
    per_task = fit_temperature(frame, by=["model", "task"])
    assert not per_task["temperature"].is_in(shared["temperature"].implode()).any()


def test_temperature_options_matches_scipy_and_keeps_argmax() -> None:
    frame = _options()
    params = fit_temperature(frame, by="model", kind="options")
    applied = apply_temperature(frame, params, kind="options")
    for model, t in params.select("model", "temperature").rows():
        sub = frame.filter(pl.col("model") == model)
        ll = sub["loglik"].to_numpy().reshape(-1, 4)
        gold = sub["is_gold"].to_numpy().reshape(-1, 4).argmax(axis=1)

        def slope(beta: float, ll: np.ndarray = ll, gold: np.ndarray = gold) -> float:
            # d/dβ Σ_q [logsumexp(β ℓ_q) − β ℓ_q,gold] = Σ_q (E_β[ℓ_q] − ℓ_q,gold)
            s = beta * ll
            e = np.exp(s - s.max(axis=1, keepdims=True))
            mean = (e * ll).sum(axis=1) / e.sum(axis=1)
            return float(np.sum(mean - ll[np.arange(len(ll)), gold]))

        ref = 1.0 / brentq(slope, 1e-3, 1e3, xtol=1e-15, rtol=4 * np.finfo(float).eps)
        assert t == pytest.approx(ref, rel=1e-10)
        nll = minimize_scalar(
            lambda b, ll=ll, gold=gold: _options_nll(b, ll, gold),
            bounds=(1e-3, 1e3),
            method="bounded",
        )
        row = params.filter(pl.col("model") == model)
        questions = len(ll)
        assert row["nll_before"].item() == pytest.approx(_options_nll(1.0, ll, gold) / questions)
        assert row["nll_after"].item() == pytest.approx(_options_nll(1.0 / t, ll, gold) / questions)
        # the minimum, not just a root: no lower NLL than scipy's bounded minimiser finds
        assert _options_nll(1.0 / t, ll, gold) <= nll.fun + 1e-12 * abs(nll.fun)
    sums = applied.group_by("model", "question").agg(pl.col("recalibrated").sum())
    np.testing.assert_allclose(sums["recalibrated"].to_numpy(), 1.0, rtol=1e-12)
    top = top_option(applied, by="model")
    assert top.height == 400
    metrics = recalibration_metrics(top, by="model", in_sample=True)
    np.testing.assert_array_equal(metrics["accuracy_before"], metrics["accuracy_after"])
    assert (metrics["log_loss_after"] <= metrics["log_loss_before"] + 1e-12).all()


def test_top_option_breaks_ties_as_choice_predictions() -> None:
    """One tie rule: the smallest tied option id, whatever the row order.

    Question 1 ties its gold option 1 with option 0 and lists the gold row first (the
    old rule, "first in the frame", called it correct); question 2 ties its gold option
    0 with option 2; question 3 has no tie.
    """
    from calib_frames.sources import choice_predictions

    options = pl.DataFrame(
        {
            "question": [1, 1, 1, 2, 2, 2, 3, 3],
            "option": [1, 0, 2, 2, 0, 1, 0, 1],
            "loglik": [-0.5, -0.5, -3.0, -0.7, -0.7, -2.0, -1.0, -0.2],
            "is_gold": [True, False, False, False, True, False, False, True],
            "recalibrated": [0.4, 0.4, 0.2, 0.4, 0.4, 0.2, 0.3, 0.7],
            "in_sample": [False] * 8,
        }
    )
    expected = [(1, False), (2, True), (3, True)]
    for seed in range(4):
        shuffled = options.sample(fraction=1.0, shuffle=True, seed=seed)
        top = top_option(shuffled)
        assert top.select("question", "correct").rows() == expected
        chosen = choice_predictions(shuffled.drop("recalibrated", "in_sample"))
        assert chosen.select("question", "correct").rows() == expected


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    scale=st.floats(0.05, 20.0),
    k=st.integers(2, 6),
)
def test_temperature_properties(seed: int, scale: float, k: int) -> None:
    """T keeps every argmax (accuracy), and the fitted NLL never exceeds the identity's."""
    rng = np.random.default_rng(seed)
    questions = 30
    ll = rng.normal(size=questions * k) * scale
    gold = rng.integers(0, k, questions)
    frame = pl.DataFrame(
        {
            "question": np.repeat(np.arange(questions), k),
            "loglik": ll,
            "is_gold": np.tile(np.arange(k), questions) == np.repeat(gold, k),
        }
    )
    params = fit_temperature(frame, kind="options")
    assert params["converged"].item()
    assert params["nll_after"].item() <= params["nll_before"].item() * (1 + 1e-12) + 1e-15
    applied = apply_temperature(frame, params, kind="options")
    before = np.asarray(ll).reshape(questions, k).argmax(axis=1)
    after = applied["recalibrated"].to_numpy().reshape(questions, k).argmax(axis=1)
    np.testing.assert_array_equal(before, after)
    # binary: a confidence stays on its side of 1/2; the NLL does not increase
    p = 1.0 / (1.0 + np.exp(-rng.normal(size=50) * scale))
    y = rng.uniform(size=50) < 0.5 + 0.3 * np.sign(p - 0.5)
    binary = pl.DataFrame({"confidence": p, "correct": y})
    fitted = fit_temperature(binary)
    assert fitted["nll_after"].item() <= fitted["nll_before"].item() * (1 + 1e-12) + 1e-15
    out = apply_temperature(binary, fitted)["recalibrated"].to_numpy()
    np.testing.assert_array_equal(np.sign(out - 0.5), np.sign(np.clip(p, 1e-12, 1 - 1e-12) - 0.5))


# --- properties of the other maps ---------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 80))
def test_maps_are_monotone_and_fit_nll_not_above_identity(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(size=n), 2)
    y = rng.uniform(size=n) < p
    y[0], y[1] = True, False  # both classes
    frame = pl.DataFrame({"confidence": p, "correct": y})
    grid = pl.DataFrame({"confidence": np.linspace(0.0, 1.0, 101)})
    for name in ("temperature", "platt", "isotonic"):  # histogram binning need not be monotone
        fit, apply = FITS[name]
        params = fit(frame)
        out = apply(grid, params)["recalibrated"].to_numpy()
        if name == "platt" and params["slope"].item() < 0:
            out = -out
        assert np.all(np.diff(out) >= -1e-12), name
    platt = fit_platt(frame)
    assert platt["nll_after"].item() <= platt["nll_before"].item() * (1 + 1e-12) + 1e-15


def test_isotonic_fit_is_sklearns() -> None:
    IsotonicRegression = pytest.importorskip("sklearn.isotonic").IsotonicRegression

    frame = _binary(n=300)
    params = fit_isotonic(frame, by="model")
    for model in ("a", "b"):
        sub = frame.filter(pl.col("model") == model)
        p, y = sub["confidence"].to_numpy(), sub["correct"].to_numpy()
        sk = IsotonicRegression(out_of_bounds="clip").fit(p, y)
        ours = apply_isotonic(sub, params)["recalibrated"].to_numpy()
        np.testing.assert_allclose(ours, sk.predict(p), rtol=1e-12, atol=1e-15)


def test_histogram_fit_is_bin_accuracy() -> None:
    frame = _binary(groups=("a",))
    params = fit_histogram(frame, bins=5)
    stats = cf.bin_statistics(frame, bins=5)
    np.testing.assert_allclose(params["value"].to_numpy(), stats["accuracy"].to_numpy())
    # empty bins map to the bin midpoint; right-closed bins are kept at apply time
    sparse = pl.DataFrame({"confidence": [0.05, 0.95, 0.2], "correct": [0, 1, 1]})
    right = fit_histogram(sparse, bins=cf.Binning.uniform(5, closed="right"))
    np.testing.assert_allclose(right["value"].to_numpy(), [0.5, 0.3, 0.5, 0.7, 1.0])
    on_edge = apply_histogram(pl.DataFrame({"confidence": [0.2, 0.0, 1.0]}), right)
    assert on_edge["recalibrated"].to_list() == [0.5, 0.5, 1.0]


# --- fitting schemes ------------------------------------------------------------------


@pytest.mark.parametrize("method", sorted(FITS))
def test_split_scheme_fits_only_fit_rows(method: str) -> None:
    frame = _binary()
    fit, _ = FITS[method]
    by_split = fit(frame, by="model", split="split")
    by_frame = fit(frame.filter(pl.col("split") == "fit"), by="model")
    assert by_split["fitted_on"].unique().to_list() == ["split"]
    assert by_frame["fitted_on"].unique().to_list() == ["frame"]
    value = {"temperature": "temperature", "platt": "slope"}.get(method, "value")
    np.testing.assert_allclose(by_split[value].to_numpy(), by_frame[value].to_numpy(), rtol=1e-12)
    out = recalibrate(frame, method=method, by="model", split="split")  # type: ignore[arg-type]
    assert out["in_sample"].to_list() == (frame["split"] == "fit").to_list()
    assert out.columns == [*frame.columns, "recalibrated", "in_sample"]


@pytest.mark.parametrize("method", sorted(FITS))
def test_cross_fitting_uses_other_folds(method: str) -> None:
    frame = assign_folds(_binary(), item="item", folds=3, seed=5)
    fit, apply = FITS[method]
    params = fit(frame, by="model", fold="fold")
    assert params.columns[:2] == ["model", "fold"]
    assert params["fitted_on"].unique().to_list() == ["cross_fit"]
    assert not params["in_sample"].any()
    applied = apply(frame, params)
    assert not applied["in_sample"].any()
    for fold in range(3):
        held_out = frame.filter(pl.col("fold") == fold)
        others = fit(frame.filter(pl.col("fold") != fold).drop("fold"), by="model")
        expected = apply(held_out.drop("fold"), others)["recalibrated"].to_numpy()
        got = applied.filter(pl.col("fold") == fold)["recalibrated"].to_numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    one_call = recalibrate(_binary(), method=method, by="model", folds=3, item="item", seed=5)  # type: ignore[arg-type]
    np.testing.assert_allclose(
        one_call["recalibrated"].to_numpy(), applied["recalibrated"].to_numpy()
    )


def test_folds_are_deterministic_per_item() -> None:
    frame = _binary()
    a = assign_folds(frame, item="item", folds=4, seed=1)
    b = assign_folds(frame.reverse(), item="item", folds=4, seed=1).reverse()
    assert a["fold"].to_list() == b["fold"].to_list()
    assert a.group_by("item").agg(pl.col("fold").n_unique())["fold"].max() == 1
    assert set(a["fold"].unique().to_list()) == {0, 1, 2, 3}
    assert (
        assign_folds(frame, item="item", folds=4, seed=2)["fold"].to_list() != a["fold"].to_list()
    )


def test_in_sample_needs_the_flag_and_is_labelled() -> None:
    frame = _binary()
    with pytest.raises(ArgumentError, match="fitting scheme"):
        recalibrate(frame, method="platt", by="model")
    with pytest.raises(ArgumentError, match="one fitting scheme"):
        fit_platt(frame, split="split", in_sample=True)
    out = recalibrate(frame, method="platt", by="model", in_sample=True)
    assert out["in_sample"].all()
    # scoring skips in-sample rows unless asked
    split_out = recalibrate(frame, method="platt", by="model", split="split")
    honest = recalibration_metrics(split_out, by="model")
    assert honest["count"].to_list() == [200, 200] and not honest["in_sample"].any()
    labelled = recalibration_metrics(split_out, by="model", in_sample=True)
    assert labelled["count"].to_list() == [600, 600] and labelled["in_sample"].all()
    with pytest.raises(TableError, match="in_sample"):
        recalibration_metrics(frame.with_columns(recalibrated=pl.col("confidence")))


def test_comparison_tables_are_calibration_metrics() -> None:
    frame = _binary()
    out = recalibrate(frame, method="temperature", by="model", split="split")
    table = recalibration_metrics(out, by="model", bins=15)
    eval_rows = out.filter(~pl.col("in_sample"))
    before = cf.calibration_metrics(eval_rows, by="model", bins=15)
    after = cf.calibration_metrics(eval_rows, by="model", bins=15, confidence="recalibrated")
    for metric in ("ece", "mce", "brier", "reliability", "resolution", "log_loss", "accuracy"):
        np.testing.assert_allclose(table[f"{metric}_before"], before[metric])
        np.testing.assert_allclose(table[f"{metric}_after"], after[metric])
    reliability = recalibration_reliability(out, by="model", bins=15)
    assert reliability.columns[:3] == ["model", "stage", "bin"]
    assert reliability.height == 2 * 2 * 15
    assert reliability.filter(pl.col("stage") == "after")["count"].sum() == 400


# --- bad input ------------------------------------------------------------------------


def test_one_class_group() -> None:
    frame = pl.DataFrame(
        {
            "model": ["a"] * 3 + ["b"] * 3,
            "confidence": [0.6, 0.7, 0.8] * 2,
            "correct": [True] * 3 + [True, False, True],
        }
    )
    with pytest.raises(DataError, match=r"1 of 2 groups is of one class only.*model='a'"):
        fit_platt(frame, by="model")
    smoothed = fit_platt(frame, by="model", smoothing=True)
    assert smoothed["converged"].all() and smoothed["slope"].is_finite().all()
    t = fit_temperature(frame, by="model")
    # all correct at p > 1/2: the NLL falls as T → 0; the search stops where it is 0 to
    # rounding (every σ(z/T) has become 1.0), or at the lower bound
    a = t.filter(pl.col("model") == "a")
    assert a["temperature"].item() < 0.05 and a["nll_after"].item() < 1e-12
    assert t["converged"].all()
    steep = pl.DataFrame({"confidence": [0.51, 0.52], "correct": [True, True]})
    at_bound = fit_temperature(steep, bounds=(0.1, 10.0))
    assert at_bound["at_bound"].item() and at_bound["temperature"].item() == 0.1
    for fit in (fit_histogram, fit_isotonic):
        assert fit(frame, by="model").height > 0


def test_all_equal_confidences() -> None:
    frame = pl.DataFrame({"confidence": [0.7] * 10, "correct": [1] * 6 + [0] * 4})
    platt = fit_platt(frame)
    assert platt["converged"].item()
    out = apply_platt(frame, platt)["recalibrated"]
    np.testing.assert_allclose(out.to_numpy(), 0.6, rtol=1e-9)
    half = pl.DataFrame({"confidence": [0.5] * 4, "correct": [1, 0, 1, 1]})
    t = fit_temperature(half)
    assert t["temperature"].item() == 1.0 and t["converged"].item()
    assert apply_isotonic(frame, fit_isotonic(frame))["recalibrated"].to_list() == [0.6] * 10


def test_confidences_zero_and_one_are_clipped() -> None:
    frame = pl.DataFrame({"confidence": [0.0, 1.0, 1.0, 0.3, 0.8], "correct": [0, 1, 0, 0, 1]})
    t = fit_temperature(frame)
    assert t["clipped"].item() == 3
    assert np.isfinite(t["temperature"].item()) and t["converged"].item()
    assert np.isfinite(t["nll_before"].item())
    out = apply_temperature(frame, t)["recalibrated"].to_numpy()
    assert np.all((out > 0) & (out < 1))
    platt = fit_platt(frame, epsilon=1e-6)
    assert platt["clipped"].item() == 3
    with pytest.raises(ArgumentError, match="epsilon"):
        fit_temperature(frame, epsilon=0.0)


def test_fit_group_missing_from_apply_frame_and_back() -> None:
    frame = _binary(groups=("a", "b", "c"))
    params = fit_temperature(frame.filter(pl.col("model") != "c"), by="model")
    only_a = apply_temperature(frame.filter(pl.col("model") == "a"), params)
    assert only_a["recalibrated"].null_count() == 0
    with_c = apply_temperature(frame, params)
    assert with_c.filter(pl.col("model") == "c")["recalibrated"].null_count() == 600
    with pytest.raises(DataError, match="recalibrated"):
        recalibration_metrics(with_c.filter(pl.col("split") == "eval"), by="model")


@pytest.mark.parametrize("method", sorted(FITS))
def test_empty_frames(method: str) -> None:
    fit, apply = FITS[method]
    empty = _binary().clear()
    params = fit(empty, by="model")
    assert params.height == 0 and params.columns[0] == "model"
    out = apply(empty, params)
    assert out.height == 0 and out.columns[-2:] == ["recalibrated", "in_sample"]
    whole = fit(empty)
    assert whole.height == 0
    # parameters of nothing keep every row of a frame they are applied to, with nulls
    rows = _binary(n=5, groups=("a",))
    kept = apply(rows, whole)
    assert kept.height == 5 and kept["recalibrated"].null_count() == 5
    assert kept["confidence"].to_list() == rows["confidence"].to_list()


def test_bad_rows_and_columns() -> None:
    good = pl.DataFrame({"m": ["a", "b"], "confidence": [0.2, 0.9], "correct": [0, 1]})
    bad_p = good.with_columns(confidence=pl.Series([float("nan"), 1.5]))
    for fit in (fit_temperature, fit_platt, fit_histogram, fit_isotonic):
        with pytest.raises(DataError, match="confidence"):
            fit(bad_p, by="m")
        with pytest.raises(TableError, match="not found"):
            fit(good, confidence="p")
        with pytest.raises(TableError):
            fit(good.with_columns(pl.col("confidence").cast(pl.String)))
    with pytest.raises(DataError, match=r"column 'confidence': 2 of 2 rows.*m='a'"):
        fit_temperature(bad_p, by="m")
    with pytest.raises(DataError, match="correct"):
        fit_temperature(good.with_columns(correct=pl.Series([2, None])))
    with pytest.raises(DataError, match="weight"):
        fit_platt(good.with_columns(w=pl.Series([-1.0, 1.0])), weight="w")
    with pytest.raises(ArgumentError):
        fit_temperature(good, bounds=(2.0, 1.0))
    with pytest.raises(ArgumentError):
        fit_temperature(good, kind="logits")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError):
        fit_histogram(good, bins=cf.Binning.quantile(4))
    with pytest.raises(ArgumentError):
        fit_temperature(good, by=["m", "m"])
    with pytest.raises(TableError, match="already exists"):
        apply_temperature(good.with_columns(recalibrated=0.0), fit_temperature(good))
    with pytest.raises(TableError, match="lacks"):
        apply_temperature(good.drop("m"), fit_temperature(good, by="m"))
    with pytest.raises(TableError):
        apply_temperature(good, good)
    invalid = apply_temperature(
        pl.DataFrame({"confidence": [None, 2.0, 0.5]}), fit_temperature(good)
    )
    assert invalid["recalibrated"].to_list()[:2] == [None, None]


def test_bad_options() -> None:
    frame = _options(questions=5, models=1)
    two_gold = frame.with_columns(
        is_gold=pl.when(pl.col("question") == 2).then(True).otherwise(pl.col("is_gold"))
    )
    with pytest.raises(DataError, match=r"4 of 20 option rows .* without exactly one gold"):
        fit_temperature(two_gold, kind="options")
    inf = frame.with_columns(
        loglik=pl.when(pl.col("option") == 0).then(-np.inf).otherwise(pl.col("loglik"))
    )
    with pytest.raises(DataError, match="loglik"):
        fit_temperature(inf, kind="options")
    with pytest.raises(ArgumentError, match="weight"):
        fit_temperature(frame, kind="options", weight="option")
    one_option = pl.DataFrame(
        {"question": [1, 2, 2], "loglik": [-1.0, -0.1, -3.0], "is_gold": [True, True, False]}
    )
    fitted = fit_temperature(one_option, kind="options")
    assert fitted["count"].item() == 2


def test_hostile_names() -> None:
    frame = pl.DataFrame(
        {"my model": ["a", "a", "b", "b"], "p (conf)": [0.9, 0.4, 0.8, 0.3], "ok?": [1, 0, 0, 1]}
    )
    for fit, apply in FITS.values():
        params = fit(frame, by="my model", confidence="p (conf)", correct="ok?", in_sample=True)
        out = apply(frame, params, confidence="p (conf)", output="new col")
        assert out["new col"].null_count() == 0
    with pytest.raises(TableError, match="clash"):
        fit_temperature(
            frame.rename({"my model": "temperature"}),
            by="temperature",
            confidence="p (conf)",
            correct="ok?",
        )


def test_fractional_weights_and_null_keys() -> None:
    frame = _binary(n=200).with_columns(
        w=pl.int_range(pl.len()).cast(pl.Float64) % 3 * 0.25 + 0.1,
        model=pl.when(pl.col("model") == "b").then(None).otherwise(pl.col("model")),
    )
    for fit, apply in FITS.values():
        params = fit(frame, by="model", weight="w")
        assert params["model"].n_unique() == 2 and params["model"].null_count() > 0
        out = apply(frame, params)
        assert out["recalibrated"].null_count() == 0
    t = fit_temperature(frame, by="model", weight="w")
    assert t["count"].to_list() == [200, 200]
    sub = frame.filter(pl.col("model").is_null())
    p, y, w = (sub[c].to_numpy().astype(float) for c in ("confidence", "correct", "w"))
    z = np.log(p) - np.log1p(-p)
    beta = 1.0 / t.filter(pl.col("model").is_null())["temperature"].item()
    nll = np.sum(w * (np.logaddexp(0.0, beta * z) - y * beta * z)) / w.sum()
    assert t.filter(pl.col("model").is_null())["nll_after"].item() == pytest.approx(nll, rel=1e-12)


def test_split_and_fold_columns_are_checked() -> None:
    frame = _binary(n=30).with_columns(s=pl.int_range(pl.len()) % 2)
    with pytest.raises(TableError, match="cannot be compared"):
        fit_temperature(frame, split="s")
    assert fit_temperature(frame, split="s", fit_value=0)["count"].item() == 30
    with pytest.raises(TableError, match="cannot be compared"):
        apply_temperature(frame, fit_temperature(frame), split="s")
    with pytest.raises(TableError, match="not found"):
        fit_platt(frame, split="nope")
    with pytest.raises(TableError, match="assign_folds"):
        fit_platt(frame, fold="nope")
    with pytest.raises(DataError, match="single fold"):
        fit_platt(frame.with_columns(f=pl.lit(1)), fold="f")
    with_null = frame.with_columns(f=pl.when(pl.col("s") == 0).then(1))
    with pytest.raises(DataError, match="null fold"):
        fit_platt(with_null, fold="f")


@pytest.mark.parametrize("block", [7, 1 << 13])
def test_options_ragged_and_blocked_match_reference(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Questions with 2-5 options (the reduceat path), summed in blocks of any size."""
    from calib_frames.recalibrate import temperature as module

    monkeypatch.setattr(module, "_BLOCK", block)
    rng = np.random.default_rng(11)
    frame = _options(questions=150, k=5, models=2)
    keep = rng.uniform(size=frame.height) < 0.6
    frame = frame.filter(pl.Series(keep) | pl.col("is_gold"))
    frame = frame.filter(pl.len().over("model", "question") >= 2)
    params = fit_temperature(frame, by="model", kind="options")
    for model, t in params.select("model", "temperature").rows():
        sub = frame.filter(pl.col("model") == model)
        questions = sub.partition_by("question", maintain_order=True)

        def slope(beta: float, questions: list[pl.DataFrame] = questions) -> float:
            total = 0.0
            for q in questions:
                ll, gold = q["loglik"].to_numpy(), q["is_gold"].to_numpy()
                e = np.exp(beta * (ll - ll.max()))
                total += float((e * ll).sum() / e.sum() - ll[gold][0])
            return total

        ref = 1.0 / brentq(slope, 1e-3, 1e3, xtol=1e-14, rtol=1e-14)
        assert t == pytest.approx(ref, rel=1e-9)
    # the options of a question need not be contiguous: shuffled rows give the same fit
    shuffled = fit_temperature(
        frame.sample(fraction=1.0, shuffle=True, seed=3), by="model", kind="options"
    )
    np.testing.assert_allclose(shuffled["temperature"], params["temperature"], rtol=1e-12)


def test_recalibrate_options_and_output_names_are_checked() -> None:
    frame = _binary(n=20, groups=("a",))
    with pytest.raises(ArgumentError, match=r"takes no option\(s\) \['bins'\]"):
        recalibrate(frame, method="platt", in_sample=True, bins=10)
    with pytest.raises(ArgumentError, match="reserved"):
        recalibrate(frame, method="platt", in_sample=True, output="in_sample")
    out = recalibrate(frame, method="histogram", in_sample=True, bins=4, output="hist")
    assert out.columns[-2:] == ["hist", "in_sample"]


@pytest.mark.parametrize("ragged", [False, True])
def test_options_active_subset_gives_the_same_fit(
    ragged: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Evaluating only the questions of groups still iterating changes no number."""
    from calib_frames.recalibrate import temperature as module

    frame = _options(seed=4, questions=120, k=4, models=6)
    if ragged:
        keep = np.random.default_rng(2).uniform(size=frame.height) < 0.7
        frame = frame.filter(pl.Series(keep) | pl.col("is_gold"))
    fits = {}
    for threshold in (0.0, 0.6, 1.01):  # never, the default, always
        monkeypatch.setattr(module, "_ACTIVE_SUBSET", threshold)
        fits[threshold] = fit_temperature(frame, by="model", kind="options")
    for threshold in (0.6, 1.01):
        np.testing.assert_allclose(
            fits[threshold]["temperature"], fits[0.0]["temperature"], rtol=1e-12
        )
        assert fits[threshold]["iterations"].to_list() == fits[0.0]["iterations"].to_list()


@pytest.mark.parametrize("ragged", [False, True])
def test_options_start_from_a_sample_gives_the_same_fit(
    ragged: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rough fit on every few questions moves the start, not the minimum nor L(1)."""
    from calib_frames.recalibrate import temperature as module

    frame = _options(seed=5, questions=160, k=4, models=3)
    # a group of 3 questions gets at most one sampled question; one whose gold option
    # is always the likeliest wants T at the lower bound
    frame = frame.filter((pl.col("model") != "m2") | (pl.col("question") < 3))
    top = pl.col("loglik") == pl.col("loglik").max().over("model", "question")
    frame = frame.with_columns(
        is_gold=pl.when(pl.col("model") == "m1").then(top).otherwise(pl.col("is_gold"))
    )
    if ragged:
        keep = np.random.default_rng(3).uniform(size=frame.height) < 0.7
        frame = frame.filter(pl.Series(keep) | pl.col("is_gold"))
    monkeypatch.setattr(module, "_SAMPLE_STEP", 4)
    fits = {}
    for least in (0, 10**9):  # always, never
        monkeypatch.setattr(module, "_SAMPLE_FROM", least)
        fits[least] = fit_temperature(frame, by="model", kind="options").sort("model")
    sampled, plain = fits[0], fits[10**9]
    np.testing.assert_allclose(sampled["temperature"], plain["temperature"], rtol=1e-9)
    assert sampled["at_bound"].to_list() == plain["at_bound"].to_list() == [False, True, False]
    for model in ("m0", "m2"):
        sub = frame.filter(pl.col("model") == model)
        questions = sub.partition_by("question", maintain_order=True)
        before = sum(
            _options_nll(1.0, q["loglik"].to_numpy()[None, :], np.flatnonzero(q["is_gold"]))
            for q in questions
        )
        row = sampled.filter(pl.col("model") == model)
        assert row["nll_before"].item() == pytest.approx(before / len(questions), rel=1e-12)
        np.testing.assert_allclose(
            row["nll_after"].item(), plain.filter(pl.col("model") == model)["nll_after"].item(),
            rtol=1e-12,
        )  # fmt: skip


def test_bad_options_found_on_the_arrays() -> None:
    """The checks on the collected arrays: nulls, a flag of 2, and gold rows that number
    the questions but sit two in one question and none in the next."""
    frame = _options(questions=5, models=1).with_columns(pl.col("is_gold").cast(pl.Int64))
    null_loglik = frame.with_columns(
        loglik=pl.when(pl.col("question") == 3).then(None).otherwise(pl.col("loglik"))
    )
    with pytest.raises(DataError, match=r"loglik.*4 of 20 rows"):
        fit_temperature(null_loglik, kind="options")
    for flag in (None, 2):
        bad = frame.with_columns(
            is_gold=pl.when((pl.col("question") == 1) & (pl.col("option") == 0))
            .then(flag)
            .otherwise(pl.col("is_gold"))
        )
        with pytest.raises(DataError, match=r"is_gold.*1 of 20 rows"):
            fit_temperature(bad, kind="options")
    moved = frame.with_columns(  # question 1: options 0 and 1 gold; question 2: none
        is_gold=pl.when(pl.col("question") == 1)
        .then((pl.col("option") <= 1).cast(pl.Int64))
        .when(pl.col("question") == 2)
        .then(0)
        .otherwise(pl.col("is_gold"))
    )
    assert moved["is_gold"].sum() == 5
    with pytest.raises(DataError, match=r"8 of 20 option rows .* without exactly one gold"):
        fit_temperature(moved, kind="options")


@pytest.mark.parametrize("scatter", [False, True])
def test_options_fingerprints_summed_in_the_collect_match_polars(scatter: bool) -> None:
    """The options fit hashes its rows in its collect; the sums are polars' fingerprints."""
    from calib_frames.recalibrate._core import fingerprint

    frame = _options(seed=6, questions=40, k=3, models=4).with_columns(
        pl.col("is_gold").cast(pl.Int8)
    )
    if scatter:  # the options of a question apart: the fit sorts its rows first
        frame = frame.sample(fraction=1.0, shuffle=True, seed=1)
    params = fit_temperature(frame, by="model", kind="options").sort("model")
    expected = (
        frame.group_by("model")
        .agg(fingerprint(pl.col("loglik")).alias("fit_fingerprint"))
        .sort("model")
    )
    assert params.select("model", "fit_fingerprint").rows() == expected.rows()
    one = frame.filter(pl.col("model") == "m1")  # question ids repeat across models
    whole = fit_temperature(one, kind="options")["fit_fingerprint"].item()
    assert whole == one.select(fingerprint(pl.col("loglik"))).item()


@pytest.mark.parametrize(
    ("dtype", "keys"),
    [
        (pl.Int8, [-128, 0, 127]),
        (pl.UInt16, [3, 4, 7]),
        (pl.Int64, [-(10**12), 0, 10**12]),  # a sparse range: by a join
        (pl.UInt64, [0, 2**63, 2**64 - 1]),  # beyond int64: by a join
        (pl.String, ["b", "c", "a"]),
    ],
)
def test_options_group_keys_numbered_by_range_or_join(dtype: pl.DataType, keys: list) -> None:
    """Integer keys are numbered through a table over their range, others by a join: the
    same groups, in key order, with the key's dtype."""
    frame = _options(seed=8, questions=30, k=4, models=3)
    mapping = pl.Series(keys, dtype=dtype)
    keyed = frame.with_columns(
        key=pl.col("model").replace_strict(["m0", "m1", "m2"], mapping, return_dtype=dtype)
    )
    by_key = fit_temperature(keyed, by="key", kind="options")
    by_model = fit_temperature(frame, by="model", kind="options")
    assert by_key.schema["key"] == dtype
    assert by_key["key"].to_list() == sorted(keys)
    order = np.argsort(np.argsort(keys, kind="stable"))  # model i is the order[i]-th group
    np.testing.assert_allclose(
        by_key["temperature"].to_numpy()[order], by_model["temperature"], rtol=1e-12
    )


@pytest.mark.parametrize("text", [False, True])
def test_options_question_ids_in_any_order_give_the_same_fit(text: bool) -> None:
    """Increasing question ids need no hash check of the runs; ids in another order (each
    question still contiguous) and scattered options give the same temperatures."""
    frame = _options(seed=9, questions=50, k=4, models=2)
    frame = frame.with_columns(
        question=pl.col("model").str.slice(1).cast(pl.Int64) * 1000 + pl.col("question")
    )
    if text:
        padded = pl.col("question").cast(pl.String).str.zfill(5)
        frame = frame.with_columns(pl.format("q{}", padded))  # increasing as text too
    increasing = fit_temperature(frame, by="model", kind="options")
    questions = frame.select(pl.col("question").unique(maintain_order=True))
    shuffled = questions.sample(fraction=1.0, shuffle=True, seed=4).with_row_index("rank")
    reordered = frame.join(shuffled, on="question").sort("rank", "option").drop("rank")
    scattered = frame.sample(fraction=1.0, shuffle=True, seed=5)
    for other in (reordered, scattered):
        refit = fit_temperature(other, by="model", kind="options")
        np.testing.assert_allclose(refit["temperature"], increasing["temperature"], rtol=1e-12)
        assert refit["fit_fingerprint"].to_list() == increasing["fit_fingerprint"].to_list()
