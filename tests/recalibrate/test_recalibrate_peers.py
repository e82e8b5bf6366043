"""Recalibration maps against scikit-learn and netcal on the same fit/apply splits.

Conventions mapped:

* scikit-learn ``CalibratedClassifierCV(FrozenEstimator(clf), method=...)``: "sigmoid"
  fits σ(−(A f + B)) on the classifier's ``decision_function`` f with Platt's target
  smoothing (``_sigmoid_calibration``: targets (N₊+1)/(N₊+2) and 1/(N₋+2)), so
  ``fit_platt(smoothing=True)`` with f = logit(p) gives a = −A, b = −B. "temperature"
  fits an inverse temperature β on log-probabilities (``predict_proba`` → log(p + 1e-12))
  or on (−f, f) for a 1-D decision function; T = 1/β. "isotonic" fits
  ``IsotonicRegression(out_of_bounds="clip")`` on ``predict_proba[:, 1]`` and
  interpolates linearly between block end points (our ``interpolation="linear"``).
* netcal: ``TemperatureScaling`` reports the inverse temperature as ``temperature``
  (the factor applied to the logit); ``LogisticCalibration`` is the unsmoothed
  maximum-likelihood fit σ(w·logit(p) + c) solved by scipy's L-BFGS-B (so agreement is
  to its tolerance); ``HistogramBinning`` fills empty bins with the bin midpoint, as we
  do; its fit bins are left-closed (our default); ``IsotonicRegression`` wraps
  scikit-learn's.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from factories import prediction_rows

from calib_frames.recalibrate import (
    apply_histogram,
    apply_platt,
    apply_temperature,
    fit_histogram,
    fit_platt,
    fit_temperature,
)

# Test-only reference libraries: a missing one skips this module, it does not break collection.
BaseEstimator = pytest.importorskip("sklearn.base").BaseEstimator
ClassifierMixin = pytest.importorskip("sklearn.base").ClassifierMixin
CalibratedClassifierCV = pytest.importorskip("sklearn.calibration").CalibratedClassifierCV
FrozenEstimator = pytest.importorskip("sklearn.frozen").FrozenEstimator


class _Probabilities(ClassifierMixin, BaseEstimator):
    """A fitted 'classifier' whose feature is its own P(y = 1)."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> _Probabilities:
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        p = np.asarray(X, dtype=np.float64)[:, 0]
        return np.c_[1.0 - p, p]

    def predict(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X)[:, 0] > 0.5).astype(int)


class _Scores(_Probabilities):
    """Also exposes logit(p) (times ``scale``) as its decision function."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        p = np.asarray(X, dtype=np.float64)[:, 0]
        return self.scale * (np.log(p) - np.log1p(-p))


class _Options(ClassifierMixin, BaseEstimator):
    """A K-way 'classifier' whose features are the options' log-likelihoods."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> _Options:
        self.classes_ = np.arange(np.asarray(X).shape[1])
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        s = np.asarray(X, dtype=np.float64)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X).argmax(axis=1)


def _sklearn(estimator: BaseEstimator, method: str, X: np.ndarray, y: np.ndarray):  # type: ignore[no-untyped-def]
    model = CalibratedClassifierCV(FrozenEstimator(estimator.fit(X, y)), method=method)
    return model.fit(X, y)


@pytest.fixture(scope="module")
def binary() -> pl.DataFrame:
    """Three over/under-confident groups, each split into fit and eval rows."""
    return pl.concat(
        prediction_rows(7 + i, n, low=0.02, high=0.98, power=power, models=(name,)).with_columns(
            split=pl.when(pl.int_range(pl.len()) % 5 < 3)
            .then(pl.lit("fit"))
            .otherwise(pl.lit("eval"))
        )
        for i, (name, power, n) in enumerate((("a", 2.0, 800), ("b", 0.6, 600), ("c", 1.0, 500)))
    )


def _group(frame: pl.DataFrame, model: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    sub = frame.filter((pl.col("model") == model) & (pl.col("split") == split))
    return sub["confidence"].to_numpy(), sub["correct"].cast(pl.Int64).to_numpy()


def test_temperature_matches_sklearn_and_netcal(binary: pl.DataFrame) -> None:
    TemperatureScaling = pytest.importorskip("netcal.scaling").TemperatureScaling

    params = fit_temperature(binary, by="model", split="split")
    applied = apply_temperature(binary.filter(pl.col("split") == "eval"), params)
    for model in ("a", "b", "c"):
        p, y = _group(binary, model, "fit")
        ours = params.filter(pl.col("model") == model)["temperature"].item()
        # sklearn on predict_proba: log(p + 1e-12) logits, so agreement to ~1e-9
        sk = _sklearn(_Probabilities(), "temperature", p[:, None], y)
        beta = float(sk.calibrated_classifiers_[0].calibrators[0].beta_)
        assert ours == pytest.approx(1.0 / beta, rel=1e-6)
        # sklearn on a 1-D decision function f: softmax(β(−f, f)) = σ(2βf)
        sk_scores = _sklearn(_Scores(scale=0.5), "temperature", p[:, None], y)
        beta = float(sk_scores.calibrated_classifiers_[0].calibrators[0].beta_)
        assert ours == pytest.approx(1.0 / beta, rel=1e-7)
        eval_p, _ = _group(binary, model, "eval")
        ours_eval = applied.filter(pl.col("model") == model)["recalibrated"].to_numpy()
        # σ(logit(p)/T): a relative error δ in T moves p by about |logit(p)|·(1 − p)·δ
        # relative, so the 1e-7 agreement of T allows ~5e-7 on the tails (|logit| ≈ 4).
        np.testing.assert_allclose(
            ours_eval, sk_scores.predict_proba(eval_p[:, None])[:, 1], rtol=5e-7
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            netcal = TemperatureScaling().fit(p, y)
            netcal_eval = netcal.transform(eval_p)
        assert ours == pytest.approx(1.0 / float(np.ravel(netcal.temperature)[0]), rel=1e-4)
        np.testing.assert_allclose(ours_eval, netcal_eval, rtol=1e-3)  # its optimiser tolerance


def test_temperature_on_options_matches_sklearn() -> None:
    rng = np.random.default_rng(3)
    n_questions, k = 400, 4
    logits = rng.normal(size=(n_questions, k)) * 3.0
    probs = np.exp(logits / 2.5)
    probs /= probs.sum(axis=1, keepdims=True)
    gold = np.array([rng.choice(k, p=row) for row in probs])
    frame = pl.DataFrame(
        {
            "question": np.repeat(np.arange(n_questions), k),
            "option": np.tile(np.arange(k), n_questions),
            "loglik": logits.ravel(),
            "is_gold": (np.tile(np.arange(k), n_questions) == np.repeat(gold, k)),
        }
    )
    params = fit_temperature(frame, kind="options")
    sk = _sklearn(_Options(), "temperature", logits, gold)
    beta = float(sk.calibrated_classifiers_[0].calibrators[0].beta_)
    assert params["temperature"].item() == pytest.approx(1.0 / beta, rel=1e-7)
    applied = apply_temperature(frame, params, kind="options")
    np.testing.assert_allclose(
        applied["recalibrated"].to_numpy().reshape(n_questions, k),
        sk.predict_proba(logits),
        rtol=1e-7,
        atol=1e-8,  # sklearn's log(p + 1e-12) moves small probabilities by ~1e-9
    )


def test_platt_with_smoothing_matches_sklearn_sigmoid(binary: pl.DataFrame) -> None:
    params = fit_platt(binary, by="model", split="split", smoothing=True)
    applied = apply_platt(binary.filter(pl.col("split") == "eval"), params)
    for model in ("a", "b", "c"):
        p, y = _group(binary, model, "fit")
        sk = _sklearn(_Scores(), "sigmoid", p[:, None], y)
        calibrator = sk.calibrated_classifiers_[0].calibrators[0]
        row = params.filter(pl.col("model") == model)
        # scikit-learn stops L-BFGS at gtol 1e-6: agreement to about 1e-5
        assert row["slope"].item() == pytest.approx(-calibrator.a_, rel=1e-4)
        assert row["intercept"].item() == pytest.approx(-calibrator.b_, rel=1e-4, abs=1e-5)
        eval_p, _ = _group(binary, model, "eval")
        ours = applied.filter(pl.col("model") == model)["recalibrated"].to_numpy()
        np.testing.assert_allclose(ours, sk.predict_proba(eval_p[:, None])[:, 1], rtol=1e-4)


def test_platt_without_smoothing_matches_logistic_regression_and_netcal(
    binary: pl.DataFrame,
) -> None:
    LogisticCalibration = pytest.importorskip("netcal.scaling").LogisticCalibration
    LogisticRegression = pytest.importorskip("sklearn.linear_model").LogisticRegression

    params = fit_platt(binary, by="model", split="split")
    for model in ("a", "b", "c"):
        p, y = _group(binary, model, "fit")
        z = (np.log(p) - np.log1p(-p))[:, None]
        lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(z, y)
        row = params.filter(pl.col("model") == model)
        assert row["slope"].item() == pytest.approx(lr.coef_[0, 0], rel=1e-7)
        assert row["intercept"].item() == pytest.approx(lr.intercept_[0], rel=1e-6, abs=1e-8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            netcal = LogisticCalibration().fit(p, y)
        assert row["slope"].item() == pytest.approx(float(np.ravel(netcal.weights)[0]), rel=1e-3)
        assert row["intercept"].item() == pytest.approx(
            float(np.ravel(netcal.intercept)[0]), rel=1e-3, abs=1e-3
        )


def test_histogram_matches_netcal(binary: pl.DataFrame) -> None:
    HistogramBinning = pytest.importorskip("netcal.binning").HistogramBinning

    params = fit_histogram(binary, by="model", split="split", bins=10)
    applied = apply_histogram(binary.filter(pl.col("split") == "eval"), params)
    for model in ("a", "b", "c"):
        p, y = _group(binary, model, "fit")
        eval_p, _ = _group(binary, model, "eval")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            netcal = HistogramBinning(bins=10).fit(p, y)
            expected = netcal.transform(eval_p)
        # netcal applies right-closed bins: equal only off the edges (random floats)
        assert not np.isin(eval_p, np.linspace(0, 1, 11)).any()
        ours = applied.filter(pl.col("model") == model)["recalibrated"].to_numpy()
        np.testing.assert_allclose(ours, expected, rtol=1e-12)


def test_isotonic_matches_sklearn_and_netcal(binary: pl.DataFrame) -> None:
    NetcalIsotonic = pytest.importorskip("netcal.binning").IsotonicRegression

    from calib_frames.recalibrate import apply_isotonic, fit_isotonic

    # rounded confidences: ties in the fit split, and eval values between and on blocks
    frame = binary.with_columns(pl.col("confidence").round(2))
    params = fit_isotonic(frame, by="model", split="split")
    eval_rows = frame.filter(pl.col("split") == "eval")
    applied = apply_isotonic(eval_rows, params)
    stepped = apply_isotonic(eval_rows, params, interpolation="step")
    for model in ("a", "b", "c"):
        p, y = _group(frame, model, "fit")
        eval_p, _ = _group(frame, model, "eval")
        sk = _sklearn(_Probabilities(), "isotonic", p[:, None], y)
        expected = sk.predict_proba(eval_p[:, None])[:, 1]
        ours = applied.filter(pl.col("model") == model)["recalibrated"].to_numpy()
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-15)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            netcal = NetcalIsotonic().fit(p, y)
            np.testing.assert_allclose(ours, netcal.transform(eval_p), rtol=1e-9, atol=1e-12)
        # the step rule agrees with sklearn wherever p is inside a block
        blocks = params.filter(pl.col("model") == model)
        inside = np.zeros(eval_p.size, dtype=bool)
        for lo, hi in blocks.select("x_lower", "x_upper").rows():
            inside |= (eval_p >= lo) & (eval_p <= hi)
        step = stepped.filter(pl.col("model") == model)["recalibrated"].to_numpy()
        assert inside.any()
        np.testing.assert_allclose(step[inside], expected[inside], rtol=1e-12)
        assert np.all(step <= ours + 1e-15)  # the block below never exceeds the interpolation
