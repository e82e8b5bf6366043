"""Paired significance tests: exact enumeration equals scipy's exact paired permutation
test, Monte Carlo p-values agree with it, p-values are uniform under H0, corrections are
statsmodels' Holm and BH, seeds reproduce, bad input raises."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import scipy.stats as ss

from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.ranking import ranking_metrics_per_query
from calib_frames.ranking.significance import paired_significance
from calib_frames.schema import PAIRED_SIGNIFICANCE

# Test-only reference libraries: a missing one skips this module, it does not break collection.
multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests


def table(values: dict[str, np.ndarray], metric: str = "m") -> pl.DataFrame:
    frames = [
        pl.DataFrame({"model": name, "query": np.arange(len(v)), metric: v})
        for name, v in values.items()
    ]
    return pl.concat(frames)


def scipy_exact(a: np.ndarray, b: np.ndarray) -> float:
    result = ss.permutation_test(
        (a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
        n_resamples=np.inf, vectorized=True,
    )  # fmt: skip
    return float(result.pvalue)


@pytest.fixture(scope="module")
def three_models():
    rng = np.random.default_rng(11)
    a = rng.random(12)
    return {"a": a, "b": a - 0.08 + rng.normal(0, 0.1, 12), "c": rng.random(12)}


def test_exact_enumeration_equals_scipy(three_models):
    out = paired_significance(table(three_models), metric="m", replicates=5000)
    assert out.columns == list(PAIRED_SIGNIFICANCE.names)
    assert out["replicates"].to_list() == [4096] * 3
    for row in out.iter_rows(named=True):
        a, b = three_models[row["model_a"]], three_models[row["model_b"]]
        assert row["p_value"] == pytest.approx(scipy_exact(a, b), abs=1e-12)
        assert row["difference"] == pytest.approx(np.mean(a - b))
        assert row["mean_a"] == pytest.approx(np.mean(a))


@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_monte_carlo_close_to_exact(three_models, method):
    out = paired_significance(table(three_models), metric="m", replicates=4000, method=method)
    assert out["replicates"].to_list() == [4000] * 3
    for row in out.iter_rows(named=True):
        exact = scipy_exact(three_models[row["model_a"]], three_models[row["model_b"]])
        # Monte Carlo error of the permutation p; the bootstrap test is a different test
        tolerance = 4 * np.sqrt(exact * (1 - exact) / 4000) + 0.005
        if method == "bootstrap":
            tolerance = 0.06
        assert abs(row["p_value"] - exact) <= tolerance, (row, exact)


@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_uniform_under_null(method):
    rng = np.random.default_rng(5)
    tasks = [
        table({"x": rng.normal(0.5, 0.2, 40), "y": rng.normal(0.5, 0.2, 40)}).with_columns(
            task=pl.lit(t)
        )
        for t in range(300)
    ]
    out = paired_significance(
        pl.concat(tasks), metric="m", by="task", replicates=999, method=method, seed=1
    )
    assert out.height == 300
    rejected = (out["p_value"] <= 0.05).mean()
    assert 0.02 <= rejected <= 0.09, rejected
    # deciles of the p-values are roughly uniform
    counts = np.histogram(out["p_value"], bins=5, range=(0, 1))[0]
    assert counts.min() >= 35, counts


@pytest.mark.parametrize("method", ["permutation", "bootstrap"])
def test_real_difference_is_found_against_a_baseline(method):
    rng = np.random.default_rng(6)
    base = rng.normal(0.5, 0.2, 40)
    models = {"base": base, "better": base + 0.15, "same": base + rng.normal(0, 0.01, 40)}
    out = paired_significance(table(models), metric="m", baseline="base", method=method)
    assert set(out["model_b"]) == {"base"}
    assert out.filter(pl.col("model_a") == "better")["p_value"].item() < 0.001
    assert out.filter(pl.col("model_a") == "same")["p_value"].item() > 0.001


def test_corrections_are_statsmodels_holm_and_bh(three_models):
    out = paired_significance(
        pl.concat([table(three_models).with_columns(task=pl.lit(t)) for t in ("x", "y")]),
        metric="m", by="task", replicates=300,
    )  # fmt: skip
    assert out.columns[0] == "task"
    for _task, family in out.group_by("task"):
        p = family["p_value"].to_numpy()
        np.testing.assert_allclose(family["p_holm"], multipletests(p, method="holm")[1])
        np.testing.assert_allclose(family["p_bh"], multipletests(p, method="fdr_bh")[1])


def test_seed_reproduces(three_models):
    frame = table(three_models)
    one = paired_significance(frame, metric="m", replicates=200, method="bootstrap", seed=3)
    two = paired_significance(frame, metric="m", replicates=200, method="bootstrap", seed=3)
    assert one.equals(two)
    other = paired_significance(frame, metric="m", replicates=200, method="bootstrap", seed=4)
    assert not one["p_value"].equals(other["p_value"])


def test_missing_queries_drop_out_of_the_pair_only():
    a = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    frame = table({"a": a, "b": a - 0.1}).filter(
        ~((pl.col("model") == "b") & (pl.col("query") == 0))
    )
    out = paired_significance(frame, metric="m")
    assert out["queries"].item() == 4
    assert out["mean_a"].item() == pytest.approx(a[1:].mean())
    assert out["p_value"].item() == pytest.approx(scipy_exact(a[1:], a[1:] - 0.1))


def test_from_ranking_metrics_per_query():
    rng = np.random.default_rng(2)
    n_q, n_i = 30, 10
    run = pl.concat(
        pl.DataFrame({"model": m, "query": np.repeat(np.arange(n_q), n_i),
                      "item": np.tile(np.arange(n_i), n_q), "score": rng.random(n_q * n_i)})
        for m in ("x", "y")
    )  # fmt: skip
    qrels = pl.DataFrame({"query": np.arange(n_q), "item": rng.integers(0, n_i, n_q),
                          "relevance": 1})  # fmt: skip
    per_query = ranking_metrics_per_query(run, qrels, by="model", k=5)
    out = paired_significance(per_query, metric=["ndcg@5", "mrr"], replicates=500)
    assert out["metric"].to_list() == ["ndcg@5", "mrr"]
    assert (out["queries"] == n_q).all()


def test_bad_input():
    frame = table({"a": np.array([0.1, 0.2]), "b": np.array([0.3, 0.4])})
    with pytest.raises(TableError, match="not found"):
        paired_significance(frame, metric="ndcg@10")
    with pytest.raises(TableError, match="numeric"):
        paired_significance(frame.with_columns(pl.col("m").cast(pl.String)), metric="m")
    with pytest.raises(ArgumentError, match="method="):
        paired_significance(frame, metric="m", method="t-test")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="replicates="):
        paired_significance(frame, metric="m", replicates=0)
    with pytest.raises(ArgumentError, match="baseline='z'"):
        paired_significance(frame, metric="m", baseline="z")
    with pytest.raises(ArgumentError, match="at least two models"):
        paired_significance(frame.filter(pl.col("model") == "a"), metric="m")
    with pytest.raises(DataError, match=r"1 of 5 rows is repeated \(the same model and query"):
        paired_significance(pl.concat([frame, frame.head(1)]), metric="m")
    with pytest.raises(DataError, match=r"null or NaN; e\.g\. model='a', query=0"):
        paired_significance(frame.with_columns(m=pl.Series([None, 0.2, 0.3, 0.4])), metric="m")
