"""The pl.Expr API gives the frame API's numbers in select, group_by().agg, over and streaming."""

from __future__ import annotations

import math

import polars as pl
import pytest
from factories import assert_frames_close, prediction_rows

import calib_frames as cf
from calib_frames.schema import METRICS

BINNINGS = [
    10,
    15,
    cf.Binning.uniform(7, closed="right"),
    [0.0, 0.3, 0.5, 0.9, 1.0],
    cf.Binning.quantile(4),
]


def random_predictions(seed: int, n: int = 3000, groups: int = 5) -> pl.DataFrame:
    """Calibrated predictions in ``groups`` groups ``g``, a tenth on the edges k/10, weights."""
    return prediction_rows(
        seed, n, beta=(2, 1.5), on_edges=(0.1, 10), power=1.0, models=range(groups),
        weight=(0.1, 3.0),
    ).rename({"model": "g"})  # fmt: skip


def assert_metrics_close(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    assert_frames_close(got, expected, columns=METRICS.names, abs=1e-12)


@pytest.mark.parametrize("bins", BINNINGS, ids=str)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("seed", [0])
def test_struct_expression_equals_frame_api_per_group(
    bins: cf.binning.BinsLike, weighted: bool, seed: int
) -> None:
    frame = random_predictions(seed)
    weight = "w" if weighted else None
    expected = cf.calibration_metrics(frame, by="g", bins=bins, weight=weight)
    got = (
        frame.group_by("g")
        .agg(cf.binned_metrics("confidence", "correct", bins=bins, weight=weight))
        .unnest("binned_metrics")
        .sort("g")
    )
    assert_metrics_close(got, expected)


@pytest.mark.parametrize("name", ["ece", "mce", "rmsce", "brier", "log_loss"])
def test_single_metric_expressions_in_select_agg_and_over(name: str) -> None:
    frame = random_predictions(7)
    expected = cf.calibration_metrics(frame, by="g", bins=15)
    function = getattr(cf, name)
    kwargs = {"bins": 15} if name in ("ece", "mce", "rmsce") else {}
    grouped = frame.group_by("g").agg(function(**kwargs)).sort("g")
    assert grouped[name].to_list() == pytest.approx(expected[name].to_list(), rel=1e-12, abs=1e-15)
    over = frame.select("g", function(**kwargs).over("g")).unique().sort("g")
    assert over[name].to_list() == pytest.approx(expected[name].to_list(), rel=1e-12, abs=1e-15)
    whole = frame.select(function(pl.col("confidence"), pl.col("correct"), **kwargs)).item()
    assert whole == pytest.approx(
        cf.calibration_metrics(frame, bins=15)[name].item(), rel=1e-12, abs=1e-15
    )


def test_streaming_engine_gives_the_same_numbers() -> None:
    frame = random_predictions(3)
    query = frame.lazy().group_by("g").agg(cf.binned_metrics(bins=12)).unnest("binned_metrics")
    streaming = query.collect(engine="streaming").sort("g")
    in_memory = query.collect(engine="in-memory").sort("g")
    assert_metrics_close(streaming, in_memory)


def test_edge_cases_follow_the_frame_conventions() -> None:
    empty = pl.DataFrame(schema={"confidence": pl.Float64, "correct": pl.Boolean})
    row = empty.select(cf.binned_metrics()).unnest("binned_metrics").row(0, named=True)
    # no weight, no number (issue 29.3): null, as the frame API
    assert row["ece"] is None and row["mce"] is None and row["accuracy"] is None
    assert row["count"] == 0
    zero = pl.DataFrame({"confidence": [0.9, 0.2], "correct": [True, True], "w": [0.0, 0.0]})
    assert zero.select(cf.ece(weight="w"), cf.brier(weight="w"), cf.mce(weight="w")).row(0) == (
        None,
        None,
        None,
    )
    one = pl.DataFrame({"confidence": [1.0], "correct": [False]})
    assert one.select(cf.log_loss()).item() == math.inf
    assert one.select(cf.ece()).item() == 1.0


@pytest.mark.parametrize(
    ("column", "value"),
    [("confidence", 1.5), ("confidence", None), ("confidence", math.nan), ("correct", 2)],
)
def test_a_group_with_an_invalid_row_gets_null(column: str, value: object) -> None:
    frame = pl.DataFrame(
        {"g": [0, 0, 1, 1], "confidence": [0.2, 0.7, 0.4, 0.9], "correct": [0, 1, 1, 1]}
    )
    values = frame[column].to_list()
    values[3] = value
    bad = frame.with_columns(pl.Series(column, values, strict=False))
    out = bad.group_by("g").agg(cf.ece(), cf.brier(), cf.binned_metrics()).sort("g")
    assert out["ece"].to_list()[0] is not None
    assert out["ece"].to_list()[1] is None
    assert out["brier"].to_list()[1] is None
    assert out["binned_metrics"].struct.field("mce").to_list()[1] is None


def test_negative_weight_gives_null() -> None:
    frame = pl.DataFrame({"confidence": [0.2, 0.7], "correct": [0, 1], "w": [1.0, -1.0]})
    assert frame.select(cf.ece(weight="w")).item() is None


TOKENS = pl.DataFrame(
    {
        "model": ["a", "a", "b", "b", "b"],
        "nll": [6.0, 4.0, 3.0, 0.5, 2.5],
        "tokens": [3, 2, 3, 1, 2],
        "bytes": [12, 9, 10, 2, 7],
        "words": [2, 1, 2, 0, 1],
    }
)


def test_perplexity_expressions_equal_the_frame_api() -> None:
    expected = cf.perplexity(TOKENS, by="model", tokens="tokens", bytes="bytes", words="words")
    got = (
        TOKENS.group_by("model")
        .agg(
            cf.mean_nll("nll", "tokens"),
            cf.token_perplexity("nll", "tokens"),
            cf.bits_per_token("nll", "tokens"),
            cf.byte_perplexity(),
            cf.bits_per_byte(),
            cf.word_perplexity(),
        )
        .sort("model")
    )
    for name in got.columns[1:]:
        assert got[name].to_list() == pytest.approx(expected[name].to_list(), rel=1e-15), name


def test_token_level_perplexity_expression_and_invalid_rows() -> None:
    rows = pl.DataFrame({"nll": [1.0, 3.0]})
    assert rows.select(cf.token_perplexity()).item() == pytest.approx(math.exp(2.0))
    assert pl.DataFrame({"nll": [1.0, -3.0]}).select(cf.token_perplexity()).item() is None
    bad_count = pl.DataFrame({"nll": [1.0, 3.0], "tokens": [1, 0]})
    assert bad_count.select(cf.token_perplexity("nll", "tokens")).item() is None
    no_bytes = pl.DataFrame({"nll": [1.0], "bytes": [0]})
    assert math.isnan(no_bytes.select(cf.bits_per_byte()).item())
