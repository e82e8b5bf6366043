"""Multi-class calibration against torchmetrics, uncertainty-calibration and scikit-learn."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from factories import class_probabilities

import calib_frames as cf
from calib_frames import Binning
from calib_frames.multiclass import (
    class_probability_rows,
    classwise_metrics,
    multiclass_calibration,
    pooled_metrics,
    top_label_metrics,
)
from calib_frames.schema import MULTICLASS_CALIBRATION

# Test-only reference libraries: a missing one skips this module, it does not break collection.
brier_score_loss = pytest.importorskip("sklearn.metrics").brier_score_loss
log_loss = pytest.importorskip("sklearn.metrics").log_loss

utils = pytest.importorskip("calibration.utils")


def softmax_sample(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return class_probabilities(seed, n, k)  # labels from a tempered softmax: overconfident


@pytest.fixture(scope="module")
def sample() -> tuple[np.ndarray, np.ndarray]:
    return softmax_sample(3000, 4, seed=1)


def list_frame(probs: np.ndarray, labels: np.ndarray, **extra: object) -> pl.DataFrame:
    return pl.DataFrame({"probs": probs.tolist(), "label": labels, **extra})


def test_top_label_matches_uncertainty_calibration(sample: tuple[np.ndarray, np.ndarray]) -> None:
    probs, labels = sample
    for m in (10, 15):
        want = utils.lower_bound_scaling_ce(
            probs, labels, p=1, debias=False, num_bins=m,
            binning_scheme=utils.get_equal_prob_bins, mode="top-label",
        )  # fmt: skip
        got = top_label_metrics(
            list_frame(probs, labels), probabilities="probs", label="label",
            bins=Binning.uniform(m, closed="right"),
        )  # fmt: skip
        assert got["ece"][0] == pytest.approx(want, rel=1e-12)
        assert got["accuracy"][0] == pytest.approx(np.mean(probs.argmax(1) == labels))


def test_top_label_matches_torchmetrics(sample: tuple[np.ndarray, np.ndarray]) -> None:
    torch = pytest.importorskip("torch")
    tm = pytest.importorskip("torchmetrics.functional.classification")
    probs, labels = sample
    want = tm.multiclass_calibration_error(
        torch.tensor(probs), torch.tensor(labels), num_classes=4, n_bins=15, norm="l1"
    ).item()
    # torchmetrics: left-closed edges torch.linspace(0, 1, 16) in the confidence's dtype,
    # and p = 1.0 in an extra bin (see calib_frames.binning)
    edges = torch.linspace(0, 1, 16, dtype=torch.float64).tolist()
    bins = Binning.edges([*edges, float(np.nextafter(1.0, 2.0))])
    got = top_label_metrics(
        list_frame(probs, labels), probabilities="probs", label="label", bins=bins
    )
    assert got["ece"][0] == pytest.approx(want, rel=1e-6)  # torchmetrics reduces in float32


def test_top_label_matches_netcal(sample: tuple[np.ndarray, np.ndarray]) -> None:
    metrics = pytest.importorskip("netcal.metrics")
    probs, labels = sample
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = metrics.ECE(bins=10).measure(probs, labels)  # top-label for 2-d input
    got = top_label_metrics(
        list_frame(probs, labels),
        probabilities="probs",
        label="label",
        bins=Binning.like_netcal(10),
    )
    assert got["ece"][0] == pytest.approx(want, rel=1e-12)


def test_classwise_macro_matches_uncertainty_calibration_marginal(
    sample: tuple[np.ndarray, np.ndarray],
) -> None:
    probs, labels = sample
    want = utils.lower_bound_scaling_ce(
        probs, labels, p=1, debias=False, num_bins=10,
        binning_scheme=utils.get_equal_prob_bins, mode="marginal",
    )  # fmt: skip
    bins = Binning.uniform(10, closed="right")
    summary = multiclass_calibration(
        list_frame(probs, labels), probabilities="probs", label="label", bins=bins
    )
    assert summary["classwise_ece"][0] == pytest.approx(want, rel=1e-12)
    per_class = classwise_metrics(
        list_frame(probs, labels), probabilities="probs", label="label", bins=bins
    )
    assert per_class["class"].to_list() == [0, 1, 2, 3]
    frequency = np.bincount(labels, minlength=4) / labels.size
    np.testing.assert_allclose(per_class["accuracy"].to_numpy(), frequency, rtol=1e-15)
    weighted = float(np.dot(per_class["ece"].to_numpy(), frequency))
    assert summary["classwise_ece_weighted"][0] == pytest.approx(weighted, rel=1e-12)


def test_pooled_by_hand(sample: tuple[np.ndarray, np.ndarray]) -> None:
    """All probabilities in one diagram: flatten (p_ik, [y_i = k]) and bin them."""
    probs, labels = sample
    flat_p = probs.reshape(-1)
    flat_y = (labels[:, None] == np.arange(4)[None, :]).reshape(-1).astype(float)
    index = np.minimum((flat_p * 10).astype(int), 9)  # left-closed, exact enough here
    ece = sum(abs(flat_p[index == b].sum() - flat_y[index == b].sum()) for b in range(10))
    got = pooled_metrics(list_frame(probs, labels), probabilities="probs", label="label")
    assert got["ece"][0] == pytest.approx(ece / flat_p.size, rel=1e-12)
    summary = multiclass_calibration(
        list_frame(probs, labels), probabilities="probs", label="label"
    )
    assert summary["pooled_ece"][0] == pytest.approx(ece / flat_p.size, rel=1e-12)
    # the pooled Brier score is the multi-class one divided by the number of classes
    assert got["brier"][0] == pytest.approx(summary["brier"][0] / 4, rel=1e-12)


def test_brier_and_log_loss_conventions(sample: tuple[np.ndarray, np.ndarray]) -> None:
    probs, labels = sample
    summary = multiclass_calibration(
        list_frame(probs, labels), probabilities="probs", label="label"
    )
    assert summary.columns == list(MULTICLASS_CALIBRATION.names)
    # scikit-learn without halving == lm-evaluation-harness' brier_score (sum over classes)
    sk = brier_score_loss(labels, probs, scale_by_half=False)
    one_hot = np.eye(4)[labels]
    lm_eval = np.mean(np.sum((probs - one_hot) ** 2, axis=1))
    assert summary["brier"][0] == pytest.approx(sk, rel=1e-12)
    assert summary["brier"][0] == pytest.approx(lm_eval, rel=1e-12)
    assert summary["log_loss"][0] == pytest.approx(log_loss(labels, probs), rel=1e-12)
    assert summary.select("items", "classes").row(0) == (3000, 4)


def test_binary_problem_classwise_equals_binary_result() -> None:
    rng = np.random.default_rng(5)
    p1 = rng.random(2000)
    y = (rng.random(2000) < p1**1.2).astype(np.int64)
    frame = pl.DataFrame({"p0": 1 - p1, "p1": p1, "label": y})
    per_class = classwise_metrics(frame, probabilities=["p0", "p1"], label="label", bins=15)
    binary = cf.calibration_metrics(
        pl.DataFrame({"confidence": p1, "correct": y.astype(bool)}), bins=15
    )
    got = per_class.filter(pl.col("class") == "p1").drop("class")
    for column in ("ece", "mce", "brier", "reliability", "resolution", "accuracy"):
        assert got[column][0] == pytest.approx(binary[column][0], rel=1e-12, abs=1e-15)
    # and the multi-class Brier score of two classes is twice the binary one
    summary = multiclass_calibration(frame, probabilities=["p0", "p1"], label="label")
    assert summary["brier"][0] == pytest.approx(2 * binary["brier"][0], rel=1e-12)
    assert 2 * binary["brier"][0] == pytest.approx(2 * brier_score_loss(y, p1), rel=1e-12)


def test_layouts_agree(sample: tuple[np.ndarray, np.ndarray]) -> None:
    probs, labels = sample
    names = ["w", "x", "y", "z"]
    groups = np.arange(labels.size) % 3
    as_list = list_frame(probs, labels, g=groups)
    as_array = as_list.with_columns(pl.col("probs").cast(pl.Array(pl.Float64, 4)))
    wide = pl.DataFrame({"g": groups, **{n: probs[:, i] for i, n in enumerate(names)}})
    wide_by_name = wide.with_columns(label=pl.Series([names[i] for i in labels]))
    wide_by_index = wide.with_columns(label=pl.Series(labels))
    long = class_probability_rows(as_list, probabilities="probs", label="label", by="g")
    assert long.columns == ["g", "item", "class", "probability", "is_label"]
    assert long.height == 4 * labels.size
    results = [
        multiclass_calibration(as_list, probabilities="probs", label="label", by="g"),
        multiclass_calibration(as_array, probabilities="probs", label="label", by="g"),
        multiclass_calibration(wide_by_name, probabilities=names, label="label", by="g"),
        multiclass_calibration(wide_by_index, probabilities=names, label="label", by="g"),
        multiclass_calibration(
            long, probabilities="probability", label="is_label", item="item",
            class_column="class", by="g",
        ),
    ]  # fmt: skip
    for other in results[1:]:
        assert other.columns == results[0].columns
        for column in MULTICLASS_CALIBRATION.names:
            np.testing.assert_allclose(
                other[column].to_numpy(), results[0][column].to_numpy(), rtol=1e-12
            )


def test_wide_classes_name_the_columns() -> None:
    frame = pl.DataFrame({"p_a": [0.8, 0.4], "p_b": [0.2, 0.6], "label": ["a", "b"]})
    out = classwise_metrics(frame, probabilities=["p_a", "p_b"], classes=["a", "b"], label="label")
    assert out["class"].to_list() == ["a", "b"]
    with pytest.raises(cf.DataError, match="names no class"):
        classwise_metrics(frame, probabilities=["p_a", "p_b"], label="label")
    with pytest.raises(cf.ArgumentError, match="classes"):
        classwise_metrics(frame, probabilities=["p_a", "p_b"], classes=["a"], label="label")


def test_top_label_ties_go_to_the_first_class() -> None:
    frame = pl.DataFrame({"probs": [[0.4, 0.4, 0.2], [0.3, 0.35, 0.35]], "label": [1, 1]})
    out = top_label_metrics(frame, probabilities="probs", label="label")
    assert out["accuracy"][0] == 0.5  # item 0: class 0 wins the tie (wrong); item 1: class 1
    long = pl.DataFrame(
        {
            "item": [0, 0, 0],
            "class": ["b", "a", "c"],
            "p": [0.4, 0.4, 0.2],
            "hit": [True, False, False],
        }
    )
    out = top_label_metrics(long, probabilities="p", label="hit", item="item", class_column="class")
    assert out["accuracy"][0] == 0.0  # "a" sorts before "b"


def test_probabilities_must_sum_to_one() -> None:
    frame = pl.DataFrame({"m": ["x", "y"], "probs": [[0.5, 0.5], [0.5, 0.7]], "label": [0, 1]})
    with pytest.raises(cf.DataError, match=r"1 of 2 items.*sum to 1.*m='y'.*1\.2"):
        multiclass_calibration(frame, probabilities="probs", label="label", by="m")
    out = multiclass_calibration(
        frame, probabilities="probs", label="label", by="m", renormalize=True
    )
    want = multiclass_calibration(
        frame.with_columns(probs=pl.Series([[0.5, 0.5], [5 / 12, 7 / 12]])),
        probabilities="probs",
        label="label",
        by="m",
    )
    assert out.equals(want) or np.allclose(out["brier"].to_numpy(), want["brier"].to_numpy())
    # a looser tolerance accepts it
    multiclass_calibration(frame, probabilities="probs", label="label", tolerance=0.25)


def test_bad_input() -> None:
    with pytest.raises(cf.DataError, match="outside"):
        top_label_metrics(
            pl.DataFrame({"probs": [[1.5, -0.5]], "label": [0]}),
            probabilities="probs",
            label="label",
        )
    with pytest.raises(cf.DataError, match="names no class"):
        top_label_metrics(
            pl.DataFrame({"probs": [[0.5, 0.5]], "label": [2]}),
            probabilities="probs",
            label="label",
        )
    long = pl.DataFrame({"item": [0, 0], "class": [0, 1], "p": [0.5, 0.5], "hit": [True, True]})
    with pytest.raises(cf.DataError, match="exactly one label"):
        pooled_metrics(long, probabilities="p", label="hit", item="item", class_column="class")
    with pytest.raises(cf.ArgumentError, match="item="):
        pooled_metrics(long, probabilities="p", label="hit")
    with pytest.raises(cf.TableError, match="column not found"):
        pooled_metrics(long, probabilities="nope", label="hit")
    with pytest.raises(cf.TableError, match="lists of numbers"):
        top_label_metrics(
            pl.DataFrame({"probs": [["a", "b"]], "label": [0]}),
            probabilities="probs",
            label="label",
        )
    with pytest.raises(cf.TableError, match="integer"):
        top_label_metrics(
            pl.DataFrame({"probs": [[0.5, 0.5]], "label": [0.0]}),
            probabilities="probs",
            label="label",
        )
    with pytest.raises(cf.TableError, match="clash"):
        multiclass_calibration(
            pl.DataFrame({"class": [1], "probs": [[0.5, 0.5]], "label": [0]}),
            probabilities="probs",
            label="label",
            by="class",
        )
    with pytest.raises(cf.ArgumentError, match="tolerance"):
        pooled_metrics(
            long, probabilities="p", label="hit", item="item", class_column="class", tolerance=-1
        )


def test_degenerate_inputs() -> None:
    one = pl.DataFrame({"probs": [[0.9, 0.1]], "label": [0]})
    out = multiclass_calibration(one, probabilities="probs", label="label")
    assert out.select("items", "classes", "accuracy").row(0) == (1, 2, 1.0)
    assert out["top_label_ece"][0] == pytest.approx(0.1)
    single_class = pl.DataFrame({"probs": [[0.6, 0.4], [0.9, 0.1]], "label": [0, 0]})
    out = multiclass_calibration(single_class, probabilities="probs", label="label")
    assert out["accuracy"][0] == 1.0
    assert out["classwise_ece_weighted"][0] == pytest.approx(0.25)  # only class 0 counts
    lazy = multiclass_calibration(one.lazy(), probabilities="probs", label="label")
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(multiclass_calibration(one, probabilities="probs", label="label"))


def test_multilabel() -> None:
    rng = np.random.default_rng(6)
    n = 1500
    p = rng.random((n, 3))
    y = rng.random((n, 3)) < p * 0.9
    wide = pl.DataFrame(
        {**{f"p{i}": p[:, i] for i in range(3)}, **{f"y{i}": y[:, i] for i in range(3)}}
    )
    per_label = classwise_metrics(
        wide,
        probabilities=["p0", "p1", "p2"],
        label=["y0", "y1", "y2"],
        multilabel=True,
    )
    for i in range(3):
        binary = cf.calibration_metrics(pl.DataFrame({"confidence": p[:, i], "correct": y[:, i]}))
        assert per_label["ece"][i] == pytest.approx(binary["ece"][0], rel=1e-12)
    summary = multiclass_calibration(
        wide, probabilities=["p0", "p1", "p2"], label=["y0", "y1", "y2"], multilabel=True
    )
    assert summary["top_label_ece"][0] is None and summary["log_loss"][0] is None
    assert summary["classwise_ece"][0] == pytest.approx(per_label["ece"].mean(), rel=1e-12)
    brier = np.mean(np.sum((p - y) ** 2, axis=1))
    assert summary["brier"][0] == pytest.approx(brier, rel=1e-12)
    with pytest.raises(cf.ArgumentError, match="multi-label"):
        classwise_metrics(wide, probabilities=["p0", "p1", "p2"], label=["y0", "y1", "y2"])


def test_long_layout_with_numeric_labels() -> None:
    long = pl.DataFrame(
        {"item": [0, 0, 1, 1], "class": [0, 1, 0, 1], "p": [0.8, 0.2, 0.3, 0.7], "y": [1, 0, 0, 1]}
    )
    out = multiclass_calibration(
        long, probabilities="p", label="y", item="item", class_column="class"
    )
    assert out["accuracy"][0] == 1.0
    bad = long.with_columns(y=pl.Series([2, 0, 0, 1]))
    with pytest.raises(cf.DataError, match="not boolean"):
        multiclass_calibration(bad, probabilities="p", label="y", item="item", class_column="class")


def test_brier_has_one_home_for_options_and_class_probabilities() -> None:
    """The Brier of an options frame equals that of its option probabilities as classes.

    Both go through multiclass.scores.brier_by_group; sources reads and never computes it.
    """
    rng = np.random.default_rng(3)
    questions, k = 300, 4
    options = pl.DataFrame(
        {
            "model": np.repeat(["a", "b"], questions * k // 2),
            "question": np.repeat(np.arange(questions), k),
            "option": np.tile(np.arange(k), questions),
            "loglik": -rng.exponential(2.0, questions * k),
            "is_gold": np.tile(np.arange(k), questions)
            == np.repeat(rng.integers(0, k, questions), k),
        }
    )
    from_options = cf.multiclass.brier_multiclass(options, by="model")
    probabilities = cf.sources.option_probabilities(options, by="model")
    as_classes = multiclass_calibration(
        probabilities, probabilities="probability", label="is_answer", item="question",
        class_column="option", by="model",
    )  # fmt: skip
    np.testing.assert_allclose(from_options["brier_multiclass"], as_classes["brier"], rtol=1e-13)
    assert from_options["count"].to_list() == as_classes["items"].to_list()
    # the lm-eval formula by hand: Σ over options of (p − y)², mean over questions
    p = probabilities["probability"].to_numpy().reshape(questions, k)
    y = probabilities["is_answer"].to_numpy().reshape(questions, k)
    by_hand = ((p - y) ** 2).sum(axis=1).reshape(2, -1).mean(axis=1)
    np.testing.assert_allclose(from_options["brier_multiclass"], by_hand, rtol=1e-13)
    assert "brier_multiclass" not in cf.sources.__all__


def test_a_near_certain_gold_option_keeps_its_residual() -> None:
    """1 − p of the gold option comes from its exact log-probability, not from p ≈ 1."""
    options = pl.DataFrame(
        {"question": [1, 1], "option": [0, 1], "loglik": [0.0, -50.0], "is_gold": [True, False]}
    )
    got = cf.multiclass.brier_multiclass(options)["brier_multiclass"].item()
    # p₁ = e⁻⁵⁰/(1 + e⁻⁵⁰); the two residuals are both p₁: 2·p₁²
    p1 = np.exp(-50.0) / (1 + np.exp(-50.0))
    assert got == pytest.approx(2 * p1**2, rel=1e-12)
