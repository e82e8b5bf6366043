"""The polars row pass (engine/local.py): the cell table and the NLL sums against numpy,
the rows it counts as bad, and the schema checks of its two passes."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from factories import assert_frames_close, exact_bin_index, loss_rows, prediction_rows

from calib_frames.binning import Binning
from calib_frames.engine.local import (
    PredictionPass,
    TokenPass,
    log_outcome_probability,
    prediction_cells,
    token_sums,
)
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.validation import working


def cells_of(rows: pl.DataFrame, **roles: object) -> pl.DataFrame:
    """The cell table of ``rows`` (confidence/correct by default), sorted by its keys."""
    arguments: dict[str, object] = {"confidence": "confidence", "correct": "correct"}
    arguments |= {"by": None, "bins": 10, **roles}
    spec = PredictionPass.build(rows.schema, **arguments)  # type: ignore[arg-type]
    keys = [*spec.keys, "bin", "correct"]
    return prediction_cells(rows.lazy(), spec).collect().sort(keys, nulls_last=True)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_cells_are_the_sums_of_their_rows(weighted: bool) -> None:
    rows = prediction_rows(1, 3000, on_edges=(0.2, 10), power=1.3, weight=(0.1, 3.0))
    cells = cells_of(rows, by="model", weight="w" if weighted else None)
    p = rows["confidence"].to_numpy()
    y = rows["correct"].to_numpy()
    w = rows["w"].to_numpy() if weighted else np.ones(p.size)
    q = np.where(y, p, 1 - p)  # the probability given to the outcome
    r = np.abs(p - y)
    index = exact_bin_index(p, 10)
    assert int(cells["count"].sum()) == rows.height
    for cell in cells.iter_rows(named=True):
        mask = (
            (rows["model"].to_numpy() == cell["model"])
            & (index == cell["bin"])
            & (y == cell["correct"])
        )
        assert cell["count"] == mask.sum()
        assert cell["weight"] == pytest.approx(w[mask].sum(), rel=1e-12)
        assert cell["sum_outcome_probability"] == pytest.approx((w * q)[mask].sum(), rel=1e-12)
        assert cell["sum_residual"] == pytest.approx((w * r)[mask].sum(), rel=1e-12)
        assert cell["sum_sq_residual"] == pytest.approx((w * r * r)[mask].sum(), rel=1e-12)
        assert cell["sum_log_outcome_probability"] == pytest.approx(
            (w * np.log(q))[mask].sum(), rel=1e-12
        )
    assert ("invalid_weight" in cells.columns) is weighted


def test_invalid_rows_form_cells_of_their_own_and_are_counted() -> None:
    rows = pl.DataFrame(
        {
            "confidence": [0.3, 1.5, None, float("nan"), 0.7, 0.7],
            "correct": [1, 1, 0, 1, 2, None],
        }
    )
    spec = PredictionPass.build(
        rows.schema, confidence="confidence", correct="correct", by=None, bins=10
    )
    cells = prediction_cells(rows.lazy(), spec).collect()
    # three rows with a confidence outside [0, 1] share the null bin; two bad outcomes
    assert int(cells.filter(pl.col("bin").is_null())["count"].sum()) == 3
    assert int(cells.filter(pl.col("correct").is_null())["count"].sum()) == 2
    checks = spec.row_checks()
    counted = cells.select(check.count.alias(check.column) for check in checks).row(0)
    assert counted == (3, 2)


def test_zero_one_outcomes_give_the_boolean_outcomes_cells() -> None:
    rows = prediction_rows(2, 500)
    as_integers = rows.with_columns(pl.col("correct").cast(pl.Int8))
    assert_frames_close(cells_of(as_integers), cells_of(rows))  # two passes: sums to rounding


def test_log_outcome_probability_keeps_tiny_probabilities() -> None:
    """A wrong row with p = 1e-17: q = 1 − p rounds to 1.0, its log must still be −p."""
    p = np.array([1e-17, 3e-12, 0.25])
    frame = pl.DataFrame({"q": 1.0 - p, "r": p})
    got = frame.select(log_outcome_probability(pl.col("q"), pl.col("r"))).to_series()
    expected = [math.log1p(-value) for value in p]
    assert got.to_list() == pytest.approx(expected, rel=1e-15, abs=0)


def test_log_confidence_gives_the_log_of_one_minus_p_where_p_rounds_to_one() -> None:
    ell = -1e-18  # p = exp(ell) is 1.0 in float64; a wrong answer's ln(1 − p) is finite
    rows = pl.DataFrame({"confidence": [math.exp(ell)], "ell": [ell], "correct": [False]})
    cells = cells_of(rows, log_confidence="ell")
    expected = math.log(-math.expm1(ell))
    assert cells["sum_log_outcome_probability"].item() == pytest.approx(expected, rel=1e-12)
    assert cells["invalid_log_confidence"].item() == 0


def test_a_zero_weight_row_adds_nothing_even_with_an_infinite_loss() -> None:
    rows = pl.DataFrame({"confidence": [1.0, 0.6], "correct": [False, True], "w": [0.0, 2.0]})
    cells = cells_of(rows, weight="w")
    assert cells["sum_log_outcome_probability"].to_list() == pytest.approx([2 * math.log(0.6), 0.0])
    assert cells["invalid_weight"].sum() == 0


def test_equal_mass_cells_carry_their_bounds() -> None:
    rows = pl.DataFrame({"confidence": [0.1, 0.2, 0.6, 0.9], "correct": [True] * 4})
    cells = cells_of(rows, bins=Binning.quantile(2))
    assert cells.select("bin", "bin_lower", "bin_upper").rows() == [(0, 0.1, 0.2), (1, 0.6, 0.9)]


@pytest.mark.parametrize(
    ("roles", "error", "match"),
    [
        ({"confidence": "p"}, TableError, "p"),
        ({"weight": "correct"}, TableError, "Boolean"),
        ({"by": "count"}, TableError, "count"),
        ({"by": 3}, ArgumentError, "by="),
        ({"bins": 0}, ArgumentError, "bins"),
    ],
    ids=["missing", "boolean-weight", "key-clashes-with-output", "by-int", "no-bins"],
)
def test_prediction_pass_checks_the_schema(
    roles: dict[str, object], error: type[Exception], match: str
) -> None:
    rows = pl.DataFrame({"confidence": [0.5], "correct": [True], "count": [1]})
    with pytest.raises(error, match=match):
        cells_of(rows, **roles)


def test_token_sums_are_the_sums_of_their_rows() -> None:
    rows = loss_rows(3, 400, models=("a", "b", "c"))
    spec = TokenPass.build(
        rows.schema, nll="nll", tokens="tokens", bytes="bytes", words="words",
        by="model", log_probs=False,
    )  # fmt: skip
    sums = token_sums(rows.lazy(), spec, spec.row_checks()).collect().sort("model")
    for row in sums.iter_rows(named=True):
        part = rows.filter(pl.col("model") == row["model"])
        assert row["count"] == part.height
        assert row["nll_sum"] == pytest.approx(math.fsum(part["nll"]), rel=1e-12)
        for column in ("tokens", "bytes", "words"):
            assert row[column] == part[column].sum()
        counted = [working(f"bad_{i}") for i, c in enumerate(spec.row_checks()) if c.count is None]
        assert [row[name] for name in counted] == [0] * len(counted)


def test_token_level_rows_count_one_token_each_and_log_probs_are_negated() -> None:
    rows = pl.DataFrame({"logp": [-0.5, -1.5, -2.0]})
    spec = TokenPass.build(
        rows.schema, nll="logp", tokens=None, bytes=None, words=None, by=None, log_probs=True
    )
    sums = token_sums(rows.lazy(), spec, spec.row_checks()).collect()
    assert sums.select("count", "nll_sum", "tokens").row(0) == (3, 4.0, 3)


def counted_checks(rows: pl.DataFrame) -> tuple[int, ...]:
    """What each row check of the token pass over ``rows`` (nll, bytes) counts."""
    spec = TokenPass.build(
        rows.schema, nll="nll", tokens=1, bytes="bytes", words=None, by=None, log_probs=False
    )
    checks = spec.row_checks()
    sums = token_sums(rows.lazy(), spec, checks)
    return (
        sums.select(
            (pl.col(working(f"bad_{i}")) if check.count is None else check.count).alias(f"{i}")
            for i, check in enumerate(checks)
        )
        .collect()
        .row(0)
    )


def test_token_pass_counts_bad_rows_and_overflowing_sums() -> None:
    # NLL: two not finite and >= 0; bytes: 2^62 is past 2^53 and 3.5 is not whole
    rows = pl.DataFrame({"nll": [1.0, -2.0, float("inf")], "bytes": [2.0**62, 4.0, 3.5]})
    assert counted_checks(rows) == (2, 2, 0)
    # 1,100 valid counts of 2^53 sum past the Int64 range: every row of the group counts
    rows = pl.DataFrame({"nll": [1.0] * 1100, "bytes": [2.0**53] * 1100})
    assert counted_checks(rows) == (0, 0, 1100)


@pytest.mark.parametrize(
    ("tokens", "match"),
    [(2, "tokens="), (True, "tokens="), (None, "tokens='tokens'")],
)
def test_token_pass_refuses_an_unclear_tokens_argument(tokens: object, match: str) -> None:
    schema = pl.Schema({"nll": pl.Float64, "tokens": pl.Int64})
    with pytest.raises(ArgumentError, match=match):
        TokenPass.build(
            schema,
            nll="nll",
            tokens=tokens,
            bytes=None,
            words=None,
            by=None,
            log_probs=False,  # type: ignore[arg-type]
        )
