"""helm_calibration against the shipped HELM runs' stats.json and uncertainty-calibration."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from factories import DATA, assert_frames_close, prediction_rows

import calib_frames as cf
from calib_frames.exceptions import DataError, TableError
from calib_frames.recalibrate.helm_suite import helm_calibration
from calib_frames.schema import HELM_CALIBRATION

RUNS = sorted((DATA / "helm" / "runs" / "calib").iterdir())
FIGURES = [name for name in HELM_CALIBRATION.names if name not in ("count", "in_sample")]


def helm_instances(run: Path) -> pl.DataFrame:
    """max_prob and int(exact_match) per instance, read with plain json (not the reader)."""
    rows = []
    for entry in json.loads((run / "per_instance_stats.json").read_text()):
        stats = {stat["name"]["name"]: stat.get("mean") for stat in entry["stats"]}
        perturbation = (entry.get("perturbation") or {}).get("name")
        rows.append(
            {
                "perturbation": perturbation,
                "max_prob": stats["max_prob"],
                "exact_match": int(stats["exact_match"]),
            }
        )
    return pl.DataFrame(rows)


def helm_figures(run: Path) -> dict[str | None, dict[str, float]]:
    """The calibration stats of stats.json per context (none, or perturbed copies)."""
    out: dict[str | None, dict[str, float]] = {}
    for stat in json.loads((run / "stats.json").read_text()):
        name = stat["name"]
        perturbation = name.get("perturbation")
        if perturbation is not None and perturbation["computed_on"] != "perturbed":
            continue
        if name["name"] in FIGURES:
            key = None if perturbation is None else perturbation["name"]
            out.setdefault(key, {})[name["name"]] = stat["mean"]
    return out


@pytest.mark.parametrize("run", RUNS, ids=[run.name[-4:] for run in RUNS])
def test_reproduces_the_shipped_stats_json(run: Path) -> None:
    out = helm_calibration(
        helm_instances(run), confidence="max_prob", correct="exact_match", by="perturbation"
    )
    expected = helm_figures(run)
    assert len(expected) == 2
    for row in out.iter_rows(named=True):
        want = expected[row["perturbation"]]
        assert row["count"] == 20 and row["in_sample"] is True
        for name in ("ece_10_bin", "ece_1_bin", "selective_cov_acc_area", "selective_acc@10"):
            assert row[name] == pytest.approx(want[name], rel=1e-13, abs=1e-15), name
        # Platt: the maximum-likelihood fit here, scikit-learn's lbfgs (gtol 1e-4) in HELM
        for name in ("platt_coef", "platt_intercept", "platt_ece_10_bin"):
            assert row[name] == pytest.approx(want[name], abs=1e-3), name
        assert row["platt_ece_1_bin"] < 1e-12 < want["platt_ece_1_bin"] < 1e-4


def random_cases() -> list[tuple[np.ndarray, np.ndarray]]:
    """Overconfident predictions of many sizes, and 300 on five values (ties across parts)."""
    cases = []
    for n in (1, 3, 9, 10, 11, 37, 250, 2000):
        rows = prediction_rows(20 + n, n, beta=(3, 2), power=1.2)
        cases.append((rows["confidence"].to_numpy(), rows["correct"].cast(pl.Int64).to_numpy()))
    ties = prediction_rows(20, 300, on_edges=(1.0, 4), power=1.0).with_columns(
        pl.col("confidence").clip(0.1, 1.0)
    )
    cases.append((ties["confidence"].to_numpy(), ties["correct"].cast(pl.Int64).to_numpy()))
    return cases


def log_loss(q: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(y * np.log(q) + (1 - y) * np.log1p(-q)))


def test_equals_uncertainty_calibration() -> None:
    calibration = pytest.importorskip("calibration")
    for p, y in random_cases():
        row = helm_calibration(pl.DataFrame({"confidence": p, "correct": y})).row(0, named=True)
        assert row["ece_10_bin"] == pytest.approx(
            calibration.get_ece_em(p, y, num_bins=10), rel=1e-12, abs=1e-15
        )
        assert row["ece_1_bin"] == pytest.approx(
            calibration.get_ece(p, y, num_bins=1), rel=1e-12, abs=1e-15
        )
        if np.unique(p).size == p.size:  # numpy's argsort orders ties its own way
            area, top = calibration.get_selective_stats(p, y)
            assert row["selective_cov_acc_area"] == pytest.approx(area, rel=1e-13)
            assert row["selective_acc@10"] == pytest.approx(top, rel=1e-13)
        if 0 < y.sum() < y.size:
            scaler, clf = calibration.get_platt_scaler(p, y, get_clf=True)
            assert row["platt_coef"] == pytest.approx(clf.coef_[0][0], abs=2e-3)
            assert row["platt_intercept"] == pytest.approx(clf.intercept_[0], abs=2e-3)
            # the ECEs of our fit, by HELM's functions
            z = np.log(np.clip(p, 1e-12, 1 - 1e-12) / (1 - np.clip(p, 1e-12, 1 - 1e-12)))
            ours = 1 / (1 + np.exp(-(row["platt_coef"] * z + row["platt_intercept"])))
            assert row["platt_ece_10_bin"] == pytest.approx(
                calibration.get_ece_em(ours, y, num_bins=10), rel=1e-9, abs=1e-12
            )
            assert row["platt_ece_1_bin"] < 1e-12
            # the maximum-likelihood fit is at least as likely as lbfgs's stopping point
            helm = scaler(p)

            assert log_loss(ours, y) <= log_loss(helm, y) + 1e-12
        else:
            assert row["platt_ece_10_bin"] == 0.0 and row["platt_ece_1_bin"] == 0.0
            assert row["platt_coef"] is None and row["platt_intercept"] is None


def test_worked_example_by_hand() -> None:
    # 4 rows, so 4 single-row bins: ECE = mean |p − y|
    df = pl.DataFrame({"confidence": [0.9, 0.6, 0.8, 0.3], "correct": [1, 0, 0, 1]})
    row = helm_calibration(df).row(0, named=True)
    assert row["ece_10_bin"] == pytest.approx((0.1 + 0.6 + 0.8 + 0.7) / 4, rel=1e-15)
    assert row["ece_1_bin"] == pytest.approx(abs(2.6 / 4 - 0.5), rel=1e-14)
    # by p descending: y = 1, 0, 0, 1; prefix accuracies 1, 1/2, 1/3, 1/2
    assert row["selective_cov_acc_area"] == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 2) / 4)
    assert row["selective_acc@10"] == 1.0  # index int(0.4) = 0


def test_equal_mass_edges_are_midpoints_right_closed() -> None:
    # 20 rows, 10 parts of 2: the edge between (0.2, 0.2) and (0.2, 0.4) is 0.2 itself;
    # right-closed, all four 0.2 land in one bin (HELM), unlike a split by position
    p = np.array([0.1, 0.1, 0.2, 0.2, 0.2, 0.2] + [0.5 + 0.02 * i for i in range(14)])
    y = np.array([0, 0, 1, 0, 1, 1] + [1, 0] * 7)
    row = helm_calibration(pl.DataFrame({"confidence": p, "correct": y})).row(0, named=True)
    bins = [(0, 2), (2, 6)] + [(6 + 2 * k, 8 + 2 * k) for k in range(7)]
    expected = sum((b - a) / 20 * abs(p[a:b].mean() - y[a:b].mean()) for a, b in bins)
    assert row["ece_10_bin"] == pytest.approx(expected, rel=1e-13)


def test_groups_one_class_empty_and_laziness() -> None:
    df = prediction_rows(5, 600, models=("a", "b", "c"))
    together = helm_calibration(df, by="model")
    assert together.columns == ["model", *HELM_CALIBRATION.names]
    for row in together.iter_rows(named=True):
        alone = helm_calibration(df.filter(pl.col("model") == row["model"]).drop("model"))
        assert_frames_close(alone, together.filter(pl.col("model") == row["model"]).drop("model"))
    right = df.with_columns(
        pl.when(pl.col("model") == "b").then(True).otherwise("correct").alias("correct")
    )
    b = helm_calibration(right, by="model").filter(pl.col("model") == "b").row(0, named=True)
    assert (b["platt_ece_10_bin"], b["platt_ece_1_bin"]) == (0.0, 0.0)
    assert b["platt_coef"] is None and b["platt_intercept"] is None
    empty = helm_calibration(df.clear().drop("model")).row(0, named=True)
    assert empty["count"] == 0 and empty["ece_10_bin"] is None
    assert helm_calibration(df.clear(), by="model").height == 0
    lazy = helm_calibration(df.lazy(), by="model")
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(together)
    assert cf.helm_calibration is helm_calibration


def test_bad_input_raises_the_package_errors() -> None:
    df = pl.DataFrame({"task": ["x", "y"], "confidence": [0.5, -0.2], "correct": [1, 0]})
    with pytest.raises(DataError, match=r"'confidence': 1 of 2 rows.*task='y'"):
        helm_calibration(df, by="task")
    with pytest.raises(TableError):
        helm_calibration(df, correct="exact_match")
    with pytest.raises(TableError):
        helm_calibration(df.rename({"task": "ece_10_bin"}), by="ece_10_bin")


def test_the_helm_reader_to_helm_calibration_gives_stats_json() -> None:
    """The shipped runs through sources' reader, then this function: HELM's own figures."""
    from calib_frames.sources import read_helm_stats, scan_helm_instances

    keys = ["model", "perturbation"]
    ours = helm_calibration(scan_helm_instances(DATA / "helm" / "runs" / "calib"), by=keys)
    assert isinstance(ours, pl.LazyFrame)
    theirs = (
        read_helm_stats(DATA / "helm" / "runs" / "calib")
        .filter(
            pl.col("stat").is_in(FIGURES),
            pl.col("computed_on").is_null() | (pl.col("computed_on") == "perturbed"),
        )
        .pivot("stat", index=keys, values="value")
    )
    joined = ours.collect().join(theirs, on=keys, nulls_equal=True, suffix="_helm")
    assert joined.height == 4
    for name in ("ece_10_bin", "ece_1_bin", "selective_cov_acc_area", "selective_acc@10"):
        assert joined[name].to_list() == pytest.approx(joined[f"{name}_helm"].to_list(), rel=1e-13)
    for name in ("platt_coef", "platt_intercept", "platt_ece_10_bin"):
        assert joined[name].to_list() == pytest.approx(joined[f"{name}_helm"].to_list(), abs=1e-3)
