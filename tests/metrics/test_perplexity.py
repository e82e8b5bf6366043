"""Perplexity family against lm-evaluation-harness definitions and independent Python math.

lm-evaluation-harness (``lm_eval/api/metrics.py``) aggregates (loglikelihood, count) pairs:
``weighted_mean(items) = sum(ll) / sum(count)``; ``word_perplexity`` and
``byte_perplexity`` are ``exp(-weighted_mean)`` with word and byte counts, and
``bits_per_byte = -weighted_mean / math.log(2)``. The expected values below are computed
that way with ``math.fsum`` on NLL values that are multiples of 1/16, so every sum is
exact and the comparison can be as tight as one rounding of the final operations.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import calib_frames as cf

DATA = Path(__file__).resolve().parents[2] / "data"
ULP = 1e-15


def token_rows(seed: int = 7) -> pl.DataFrame:
    """Token-level rows: three models x four documents, NLLs on a 1/16 grid, with per-token
    byte and word shares (whole numbers, words may be 0)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for model in ("a", "b", "c"):
        for doc in range(4):
            for _ in range(int(rng.integers(1, 30))):
                rows.append(
                    {
                        "model": model,
                        "doc": doc,
                        "nll": int(rng.integers(0, 96)) / 16,
                        "bytes": int(rng.integers(1, 8)),
                        "words": int(rng.integers(0, 2)),
                    }
                )
    return pl.DataFrame(rows)


def lm_eval_weighted_mean(loglikelihoods: list[float], counts: list[int]) -> float:
    """lm-evaluation-harness's weighted_mean: sum(a) / sum(b)."""
    return math.fsum(loglikelihoods) / sum(counts)


def lm_eval_measures(nll: list[float], bytes_: list[int], words: list[int]) -> dict[str, float]:
    """The lm-evaluation-harness perplexity family for token-level rows (one token each)."""
    ll = [-x for x in nll]
    return {
        "perplexity": math.exp(-lm_eval_weighted_mean(ll, [1] * len(ll))),
        "byte_perplexity": math.exp(-lm_eval_weighted_mean(ll, bytes_)),
        "word_perplexity": math.exp(-lm_eval_weighted_mean(ll, words)),
        "bits_per_byte": -lm_eval_weighted_mean(ll, bytes_) / math.log(2),
        "mean_nll": math.fsum(nll) / len(nll),
        "bits_per_token": math.fsum(nll) / len(nll) / math.log(2),
    }


# -- definitions --------------------------------------------------------------------------


def test_measures_match_lm_eval_definitions() -> None:
    rows = token_rows()
    result = cf.perplexity(rows, by="model", bytes="bytes", words="words")
    assert result["model"].to_list() == ["a", "b", "c"]
    for got in result.iter_rows(named=True):
        part = rows.filter(pl.col("model") == got["model"])
        expected = lm_eval_measures(
            part["nll"].to_list(), part["bytes"].to_list(), part["words"].to_list()
        )
        assert got["count"] == part.height
        assert got["tokens"] == part.height
        assert got["bytes"] == sum(part["bytes"].to_list())
        assert got["words"] == sum(part["words"].to_list())
        assert got["nll_sum"] == math.fsum(part["nll"].to_list())  # exact on the 1/16 grid
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, rel=ULP, abs=0), name


def test_hand_worked_example() -> None:
    # two documents: 6 nats over 3 tokens / 12 bytes / 2 words, 2 nats over 1 token / 4 bytes
    docs = pl.DataFrame({"nll": [6.0, 2.0], "n": [3, 1], "b": [12, 4], "w": [2, 0]})
    got = cf.perplexity(docs, tokens="n", bytes="b", words="w").row(0, named=True)
    assert got["mean_nll"] == 2.0
    assert got["perplexity"] == pytest.approx(math.e**2, rel=ULP, abs=0)
    assert got["byte_perplexity"] == pytest.approx(math.exp(0.5), rel=ULP, abs=0)
    assert got["word_perplexity"] == pytest.approx(math.exp(4.0), rel=ULP, abs=0)
    assert got["bits_per_byte"] == pytest.approx(0.5 / math.log(2), rel=ULP, abs=0)
    assert got["bits_per_token"] == pytest.approx(2.0 / math.log(2), rel=ULP, abs=0)


def test_bits_per_byte_is_exactly_lm_evals_two_step_rounding() -> None:
    # Σnll / Σbytes first, then / ln 2 (lm-eval), with non-dyadic values.
    nll = [0.1, 0.7, 1.3, 2.9, 0.05]
    n_bytes = [3, 5, 7, 2, 9]
    frame = pl.DataFrame({"nll": nll, "bytes": n_bytes})
    got = cf.perplexity(frame, tokens="bytes", bytes="bytes")["bits_per_byte"].item()
    expected = (math.fsum(nll) / sum(n_bytes)) / math.log(2)
    assert got == pytest.approx(expected, rel=ULP, abs=0)


def test_random_values_agree_with_fsum_reference() -> None:
    rng = np.random.default_rng(11)
    nll = rng.gamma(0.8, 2.5, size=5_000)
    counts = rng.integers(1, 40, size=5_000)
    n_bytes = counts * 4 + rng.integers(0, 3, size=5_000)
    frame = pl.DataFrame({"nll": nll, "tokens": counts, "bytes": n_bytes})
    got = cf.perplexity(frame, tokens="tokens", bytes="bytes").row(0, named=True)
    total = math.fsum(nll.tolist())
    assert got["tokens"] == int(counts.sum())
    assert got["nll_sum"] == pytest.approx(total, rel=1e-13, abs=0)
    assert got["perplexity"] == pytest.approx(math.exp(total / int(counts.sum())), rel=1e-13, abs=0)
    assert got["bits_per_byte"] == pytest.approx(
        total / int(n_bytes.sum()) / math.log(2), rel=1e-13, abs=0
    )


# -- token-level vs sequence-level --------------------------------------------------------


def test_token_level_and_sequence_level_rows_agree() -> None:
    rows = token_rows()
    # sequence level: sum each document's tokens in Python, count its tokens
    docs: dict[tuple[str, int], list[float]] = {}
    n_bytes: dict[tuple[str, int], int] = {}
    for row in rows.iter_rows(named=True):
        key = (row["model"], row["doc"])
        docs.setdefault(key, []).append(row["nll"])
        n_bytes[key] = n_bytes.get(key, 0) + row["bytes"]
    sequences = pl.DataFrame(
        {
            "model": [k[0] for k in docs],
            "doc": [k[1] for k in docs],
            "nll": [math.fsum(v) for v in docs.values()],
            "n_tokens": [len(v) for v in docs.values()],
            "bytes": [n_bytes[k] for k in docs],
        }
    )
    assert sequences.height < rows.height
    token_level = cf.perplexity(rows, by="model", bytes="bytes")
    sequence_level = cf.perplexity(sequences, by="model", tokens="n_tokens", bytes="bytes")
    columns = ["model", "nll_sum", "tokens", "bytes", "mean_nll", "perplexity", "bits_per_byte"]
    assert_frame_equal(token_level.select(columns), sequence_level.select(columns))
    assert token_level["count"].to_list() != sequence_level["count"].to_list()


def test_tokens_default_to_one_per_row() -> None:
    rows = token_rows()
    explicit = cf.perplexity(rows.with_columns(one=pl.lit(1)), by="model", tokens="one")
    assert_frame_equal(cf.perplexity(rows, by="model"), explicit)


def test_float_token_counts_that_are_whole_numbers_are_accepted() -> None:
    frame = pl.DataFrame({"nll": [3.0, 5.0], "t": [2.0, 2.0]})
    got = cf.perplexity(frame, tokens="t").row(0, named=True)
    assert got["tokens"] == 4
    assert got["mean_nll"] == 2.0


# -- log_probs, groups, merging -----------------------------------------------------------


def test_log_probs_true_negates() -> None:
    rows = token_rows()
    as_log_probs = rows.with_columns(-pl.col("nll"))
    assert (as_log_probs["nll"] <= 0).all()
    assert_frame_equal(
        cf.perplexity(as_log_probs, by="model", bytes="bytes", log_probs=True),
        cf.perplexity(rows, by="model", bytes="bytes"),
    )


def test_log_probs_example() -> None:
    frame = pl.DataFrame({"logp": [math.log(0.5), math.log(0.25)]})
    got = cf.perplexity(frame, nll="logp", log_probs=True)["perplexity"].item()
    # geometric mean of 1/p: sqrt(2 * 4)
    assert got == pytest.approx(math.sqrt(8.0), rel=1e-15, abs=0)


def test_grouped_results_equal_per_group_results() -> None:
    rows = token_rows()
    grouped = cf.perplexity(rows, by=["model", "doc"], bytes="bytes", words="words")
    assert grouped.height == 12
    for row in grouped.iter_rows(named=True):
        part = rows.filter((pl.col("model") == row["model"]) & (pl.col("doc") == row["doc"]))
        alone = cf.perplexity(part, bytes="bytes", words="words").row(0, named=True)
        for name, value in alone.items():
            if math.isnan(value):
                assert math.isnan(row[name]), name
            else:
                assert row[name] == value, name


def test_merge_equals_concatenation() -> None:
    tokens = pl.read_parquet(DATA / "synthetic_tokens.parquet")
    parts = [
        tokens.filter(pl.col("doc_id") < 70),
        tokens.filter(pl.col("doc_id").is_between(70, 150)),
        tokens.filter((pl.col("doc_id") > 150) & (pl.col("model") != "calibrated")),
        tokens.filter((pl.col("doc_id") > 150) & (pl.col("model") == "calibrated")),
    ]
    assert sum(p.height for p in parts) == tokens.height
    kwargs = {"tokens": "tokens", "bytes": "bytes", "words": "words", "by": ["model", "task"]}
    sums = [cf.nll_sums(part, **kwargs) for part in parts]
    merged = cf.merge_nll_sums(*sums)
    whole = cf.nll_sums(tokens, **kwargs)
    assert_frame_equal(merged.drop("nll_sum"), whole.drop("nll_sum"))  # counts exactly
    np.testing.assert_allclose(merged["nll_sum"], whole["nll_sum"], rtol=1e-13)
    assert_frame_equal(
        cf.perplexity_from_nll_sums(merged),
        cf.perplexity(tokens, **kwargs),
        check_exact=False,
        rel_tol=1e-13,
    )


def test_merge_adds_the_sums() -> None:
    a = cf.nll_sums(pl.DataFrame({"nll": [1.0, 2.0]}))
    b = cf.nll_sums(pl.DataFrame({"nll": [3.0]}))
    merged = cf.merge_nll_sums(a, b)
    assert merged.row(0, named=True) == {"count": 3, "nll_sum": 6.0, "tokens": 3}


def test_merge_refuses_tables_with_different_columns() -> None:
    a = cf.nll_sums(pl.DataFrame({"nll": [1.0], "b": [4]}), bytes="b")
    b = cf.nll_sums(pl.DataFrame({"nll": [1.0]}))
    with pytest.raises(cf.CalibrationInputError, match="different count columns"):
        cf.merge_nll_sums(a, b)


# -- empty input, lazy in / lazy out ------------------------------------------------------


def test_empty_input_gives_nan_and_no_warning() -> None:
    empty = pl.DataFrame(
        {"nll": [], "bytes": [], "words": []},
        schema={"nll": pl.Float64, "bytes": pl.Int64, "words": pl.Int64},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = cf.perplexity(empty, bytes="bytes", words="words").row(0, named=True)
        result = cf.PerplexityResult.from_token_nll(np.array([], dtype=np.float64))
    assert got["count"] == 0
    assert got["tokens"] == 0
    for name in ("perplexity", "mean_nll", "bits_per_token", "byte_perplexity", "bits_per_byte"):
        assert math.isnan(got[name]), name
    assert math.isnan(got["word_perplexity"])
    assert math.isnan(result.perplexity)
    assert result.tokens == 0


def test_empty_grouped_input_gives_no_rows() -> None:
    empty = pl.DataFrame({"m": [], "nll": []}, schema={"m": pl.String, "nll": pl.Float64})
    result = cf.perplexity(empty, by="m")
    assert result.height == 0
    assert "perplexity" in result.columns


# -- the shipped synthetic data -----------------------------------------------------------


def test_synthetic_tokens_order_models_by_construction() -> None:
    tokens = pl.scan_parquet(DATA / "synthetic_tokens.parquet")
    by_model = cf.perplexity(tokens, by="model", tokens="tokens", bytes="bytes").collect()
    assert by_model["model"].to_list() == ["calibrated", "overconfident", "underconfident"]
    ppl = by_model["perplexity"].to_list()
    assert ppl[0] < ppl[1] < ppl[2]
    bpb = by_model["bits_per_byte"].to_list()
    assert bpb[0] < bpb[1] < bpb[2]
    # true mean per-token NLL 2.0 / 2.3 / 2.6 nats; ~175k tokens per model, SE < 0.01
    np.testing.assert_allclose(by_model["mean_nll"], [2.0, 2.3, 2.6], atol=0.05)

    by_task = cf.perplexity(tokens, by=["task", "model"], tokens="tokens").collect()
    for task in ("arithmetic", "trivia", "reading", "code"):
        part = by_task.filter(pl.col("task") == task).sort("perplexity")
        assert part["model"].to_list() == ["calibrated", "overconfident", "underconfident"]


# -- PerplexityResult ---------------------------------------------------------------------


def test_perplexity_result_from_token_nll() -> None:
    nll = [0.5, 1.25, 3.0, 0.25]
    result = cf.PerplexityResult.from_token_nll(nll)
    mean = math.fsum(nll) / 4
    assert result.tokens == 4
    assert result.nll_sum == 5.0
    assert result.mean_nll == mean
    assert result.perplexity == pytest.approx(math.exp(mean), rel=ULP, abs=0)
    assert result.bits_per_token == pytest.approx(mean / math.log(2), rel=ULP, abs=0)


def test_perplexity_result_with_token_counts() -> None:
    result = cf.PerplexityResult.from_token_nll(np.array([4.5, 1.5]), np.array([2, 4]))
    assert result.tokens == 6
    assert result.mean_nll == 1.0
    assert result.perplexity == pytest.approx(math.e, rel=ULP, abs=0)
