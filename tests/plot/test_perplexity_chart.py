"""The perplexity chart: what it draws from cf.perplexity tables, comparison tables and
lm-eval's rolling tasks (no per-token perplexity there), and its intervals."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import calib_frames as cf
from calib_frames.exceptions import TableError
from calib_frames.plot import perplexity_chart

ROOT = Path(__file__).resolve().parents[2]


def panels(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec.get("hconcat", [spec]))


def dot_fields(spec: dict[str, Any]) -> list[str]:
    """The x field of each panel's dots (the layer whose mark is a point)."""
    return [
        layer["encoding"]["x"]["field"]
        for panel in panels(spec)
        for layer in panel["layer"]
        if layer["mark"]["type"] == "point"
    ]


def rows(spec: dict[str, Any]) -> list[dict[str, Any]]:
    (values,) = {id(v): v for v in spec["datasets"].values()}.values()
    return values


@pytest.fixture(scope="module")
def tokens() -> pl.DataFrame:
    return pl.read_parquet(ROOT / "data" / "synthetic_tokens.parquet")


def test_perplexity_and_bits_per_byte_from_token_counts(tokens: pl.DataFrame) -> None:
    ppl = cf.perplexity(tokens, by=["model", "task"], tokens="tokens", bytes="bytes")
    spec = perplexity_chart(ppl).to_dict()
    assert dot_fields(spec) == ["perplexity", "bits_per_byte"]
    drawn = rows(spec)
    assert len(drawn) == ppl.height
    # every dot against lm-eval's formulas, summed here with numpy
    for row in drawn:
        group = tokens.filter(pl.col("model") == row["model"], pl.col("task") == row["task"])
        nll = float(np.sum(group["nll"].to_numpy()))
        assert row["perplexity"] == pytest.approx(math.exp(nll / group["tokens"].sum()))
        assert row["bits_per_byte"] == pytest.approx(nll / group["bytes"].sum() / math.log(2))
    no_bytes = cf.perplexity(
        pl.DataFrame({"model": ["a"], "nll": [3.0], "tokens": [2]}), by="model", tokens="tokens"
    )
    assert dot_fields(perplexity_chart(no_bytes).to_dict()) == ["perplexity", "bits_per_token"]


def test_calibration_only_rows_are_left_out(tokens: pl.DataFrame) -> None:
    preds = pl.read_parquet(ROOT / "data" / "synthetic_predictions.parquet")
    metrics = cf.calibration_metrics(preds, by=["model", "task"])
    ppl = cf.perplexity(tokens, by=["model", "task"], tokens="tokens", bytes="bytes")
    partial = cf.comparison_table(metrics, ppl.filter(pl.col("task") != "code"))
    drawn = rows(perplexity_chart(partial).to_dict())
    assert {r["task"] for r in drawn} == set(ppl["task"]) - {"code"}
    with pytest.raises(TableError, match="no perplexity column"):
        perplexity_chart(metrics)
    with pytest.raises(TableError, match="no row has a finite"):
        perplexity_chart(ppl.with_columns(pl.col(pl.Float64) * float("nan")))


def test_lm_eval_rolling_task_draws_word_perplexity_and_bits_per_byte() -> None:
    """lm-eval's rolling tasks give word and byte perplexity and bits per byte, no tokens:
    the chart drew nothing from them. The dots are lm-eval's own numbers."""
    from calib_frames.comparison import lm_eval_comparison

    table = lm_eval_comparison([ROOT / "data" / "lm_eval"])
    assert "perplexity" not in table.columns
    spec = perplexity_chart(table).to_dict()
    assert dot_fields(spec) == ["word_perplexity", "bits_per_byte"]
    drawn = rows(spec)
    rolling = table.filter(pl.col("bits_per_byte").is_not_null())
    assert {(r["model"], r["task"]) for r in drawn} == set(
        zip(rolling["model"], rolling["task"], strict=True)
    )
    # data/README.md's table of lm-eval's results: calib/tiny-gpt2-m, bits_per_byte 1.1626
    (m,) = [r for r in drawn if r["model"] == "calib/tiny-gpt2-m"]
    assert m["bits_per_byte"] == pytest.approx(1.1626, abs=5e-5)


def test_intervals_are_bars_through_the_dots(tokens: pl.DataFrame) -> None:
    from calib_frames.estimators import perplexity_intervals

    by = ["model", "task"]
    ppl = cf.perplexity(tokens, by=by, tokens="tokens", bytes="bytes")
    intervals = perplexity_intervals(
        tokens, tokens="tokens", bytes="bytes", by=by, replicates=50, seed=1
    )
    spec = perplexity_chart(ppl.join(intervals, on=by)).to_dict()
    for panel, measure in zip(panels(spec), ["perplexity", "bits_per_byte"], strict=True):
        (rule,) = [layer for layer in panel["layer"] if layer["mark"]["type"] == "rule"]
        assert rule["encoding"]["x"]["field"] == f"{measure}_ci_low"
        assert rule["encoding"]["x2"]["field"] == f"{measure}_ci_high"
    for row in rows(spec):
        for measure in ("perplexity", "bits_per_byte"):
            assert row[f"{measure}_ci_low"] <= row[measure] <= row[f"{measure}_ci_high"]
    # without interval columns, no bars
    assert all(
        layer["mark"]["type"] == "point"
        for panel in panels(perplexity_chart(ppl).to_dict())
        for layer in panel["layer"]
    )
