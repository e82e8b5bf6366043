"""Perplexity intervals: the moment-sum normal draws against a numpy row bootstrap, cluster
resampling, additive moment sums, and bad input."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from factories import loss_rows

import calib_frames as cf
from calib_frames.estimators.perplexity_bootstrap import (
    nll_moment_sums,
    perplexity_intervals,
    perplexity_intervals_from_nll_sums,
)
from calib_frames.exceptions import ArgumentError, DataError, TableError


@pytest.fixture(scope="module")
def documents() -> pl.DataFrame:
    """1,600 documents of 5 to 400 tokens in four groups ``g``."""
    return loss_rows(4, 1600, models=range(4)).rename({"model": "g"}).sort("g")


def test_perplexity_matches_numpy_row_bootstrap(documents: pl.DataFrame) -> None:
    ci = perplexity_intervals(
        documents, tokens="tokens", bytes="bytes", by="g", replicates=4000, level=0.9
    )
    rng = np.random.default_rng(0)
    for g, part in documents.group_by("g", maintain_order=True):
        x, y, z = (part[c].to_numpy().astype(float) for c in ("nll", "tokens", "bytes"))
        idx = rng.integers(0, len(x), (4000, len(x)))
        ppl = np.exp(x[idx].sum(1) / y[idx].sum(1))
        bpb = x[idx].sum(1) / z[idx].sum(1) / np.log(2)
        row = ci.filter(pl.col("g") == g[0])
        width = np.subtract(*np.percentile(ppl, [95, 5]))
        for name, values in (("perplexity", ppl), ("bits_per_byte", bpb)):
            ref_low, ref_high = np.percentile(values, [5, 95])
            scale = ref_high - ref_low
            assert abs(row[f"{name}_ci_low"].item() - ref_low) < 0.08 * scale, name
            assert abs(row[f"{name}_ci_high"].item() - ref_high) < 0.08 * scale, name
        assert width > 0


def test_perplexity_cluster_token_rows_and_bad_input() -> None:
    rng = np.random.default_rng(2)
    docs = np.repeat(np.arange(100), 30)
    scale = np.repeat(rng.uniform(0.4, 1.6, 100), 30)
    tokens = pl.DataFrame({"doc": docs, "nll": rng.gamma(2, 1, 3000) * scale})
    by_doc = perplexity_intervals(tokens, cluster="doc", replicates=300)
    by_token = perplexity_intervals(tokens.lazy(), replicates=300).collect()
    counts = [
        nll_moment_sums(tokens, cluster="doc")["count"].item(),
        nll_moment_sums(tokens)["count"].item(),
    ]
    assert counts == [100, 3000]
    width = {
        name: (t["perplexity_ci_high"] - t["perplexity_ci_low"]).item()
        for name, t in (("doc", by_doc), ("token", by_token))
    }
    assert width["doc"] > 1.5 * width["token"]  # correlated tokens widen the interval
    point = cf.perplexity(tokens)["perplexity"].item()
    assert by_doc["perplexity_ci_low"].item() < point < by_doc["perplexity_ci_high"].item()
    with pytest.raises(DataError, match="1 of 2 rows"):
        perplexity_intervals(pl.DataFrame({"nll": [1.0, -2.0]}))
    with pytest.raises(TableError, match="tokens"):
        perplexity_intervals(pl.DataFrame({"nll": [1.0]}), tokens="tokens")
    with pytest.raises(TableError, match="numeric"):
        perplexity_intervals(pl.DataFrame({"nll": ["1.0"]}))
    with pytest.raises(ArgumentError):
        perplexity_intervals(pl.DataFrame({"nll": [1.0]}), replicates=0)
    with pytest.raises(ArgumentError, match="tokens"):
        perplexity_intervals(pl.DataFrame({"nll": [1.0], "tokens": [3]}))
    with pytest.raises(ArgumentError, match="tokens"):
        perplexity_intervals(pl.DataFrame({"nll": [1.0]}), tokens=0)
    logp = perplexity_intervals(tokens.with_columns(-pl.col("nll")), log_probs=True, tokens=1,
                                cluster="doc", replicates=300)  # fmt: skip
    np.testing.assert_allclose(logp.to_numpy(), by_doc.to_numpy())
    zero = perplexity_intervals(
        pl.DataFrame({"g": ["a", "b"], "nll": [0.0, 2.0], "t": [0, 4]}), tokens="t", by="g"
    )
    assert zero["perplexity_ci_low"].to_list()[0] is None
    assert zero["perplexity_ci_low"].to_list()[1] == pytest.approx(np.exp(0.5))


def test_moment_sums_are_additive_and_required(documents: pl.DataFrame) -> None:
    kwargs = {"tokens": "tokens", "bytes": "bytes", "by": "g"}
    whole = nll_moment_sums(documents, **kwargs)  # type: ignore[arg-type]
    halves = pl.concat(
        [nll_moment_sums(part, **kwargs) for part in (documents[:700], documents[700:])]  # type: ignore[arg-type]
    )
    merged = halves.group_by("g").agg(pl.exclude("g").sum()).sort("g")
    assert merged["count"].to_list() == whole["count"].to_list()
    np.testing.assert_allclose(merged.drop("g").to_numpy(), whole.drop("g").to_numpy(), rtol=1e-12)
    point = cf.perplexity(documents, tokens="tokens", by="g")
    np.testing.assert_allclose(whole["nll_sum"], point["nll_sum"], rtol=1e-12)
    ci = perplexity_intervals_from_nll_sums(merged, replicates=200)
    assert ci.columns[0] == "g" and "bits_per_byte_ci_high" in ci.columns
    with pytest.raises(TableError, match="nll_sq_sum"):
        perplexity_intervals_from_nll_sums(point)


def test_a_tokens_column_without_tokens_is_one_rule_for_both_passes() -> None:
    """The perplexity pass and the moment sums refused an unnamed 'tokens' column in two
    wordings (issue 28.3); a 'tokens' key clashes with both outputs."""
    losses = pl.DataFrame({"nll": [2.0, 3.0], "tokens": [4, 5]})
    refusals = []
    for call in (cf.perplexity, nll_moment_sums):
        with pytest.raises(ArgumentError, match="tokens= was not given") as caught:
            call(losses)
        refusals.append(str(caught.value))
    assert refusals[0] == refusals[1]
    keyed = losses.with_columns(pl.col("tokens").cast(pl.String))  # a key: an output's name
    for call in (cf.perplexity, nll_moment_sums):
        with pytest.raises(TableError, match=r"key\(s\) \['tokens'\] clash with output"):
            call(keyed, by="tokens")
