"""Multiple-choice transformations: softmax, prediction, normalisation, long form, Brier.

References are computed directly with numpy (lm-eval's own formulas: ``np.argmax`` for the
prediction, ``softmax = exp(x - max) / sum`` for the probabilities, its brier_score
aggregation), and every defined edge case and malformed input is exercised.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.multiclass import brier_multiclass
from calib_frames.sources import choice_predictions, option_probabilities


def options_frame(logliks: list[list[float]], golds: list[int], lengths=None) -> pl.DataFrame:
    rows = []
    for q, (lls, g) in enumerate(zip(logliks, golds, strict=True)):
        for i, ll in enumerate(lls):
            row = {"question": q, "option": i, "loglik": ll, "is_gold": i == g}
            if lengths is not None:
                row["chars"] = lengths[q][i]
            rows.append(row)
    return pl.DataFrame(rows)


def lm_eval_reference(lls: np.ndarray, gold: int, lengths: np.ndarray | None = None):
    """What lm-eval's process_results computes for one document."""
    scores = lls if lengths is None else lls / lengths
    pred = int(np.argmax(scores))
    e = np.exp(scores - np.max(scores))
    prob = e / e.sum()
    return pred, prob, float(pred == gold)


RNG = np.random.default_rng(7)
LOGLIKS = [list(-RNG.exponential(3.0, size=RNG.integers(2, 6))) for _ in range(200)]
GOLDS = [int(RNG.integers(0, len(lls))) for lls in LOGLIKS]
LENGTHS = [list(RNG.integers(1, 20, size=len(lls)).astype(float)) for lls in LOGLIKS]


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return options_frame(LOGLIKS, GOLDS, LENGTHS)


def test_raw_and_per_char_match_numpy(frame: pl.DataFrame) -> None:
    out = choice_predictions(frame, normalize="char")
    assert out.columns == [
        "scoring",
        "question",
        "options",
        "gold_options",
        "prediction",
        "confidence",
        "log_confidence",
        "correct",
    ]
    for scoring, use_len in (("raw", False), ("per_char", True)):
        got = out.filter(pl.col("scoring") == scoring).sort("question")
        assert got.height == len(LOGLIKS)
        for row, lls, gold, lens in zip(
            got.iter_rows(named=True), LOGLIKS, GOLDS, LENGTHS, strict=True
        ):
            pred, prob, acc = lm_eval_reference(
                np.array(lls), gold, np.array(lens) if use_len else None
            )
            assert row["prediction"] == pred
            assert row["correct"] == bool(acc)
            assert row["options"] == len(lls)
            assert row["gold_options"] == 1
            assert row["confidence"] == pytest.approx(prob[pred], rel=1e-13)
            scores = np.array(lls) / (np.array(lens) if use_len else 1.0)
            others = np.delete(scores, pred) - scores[pred]
            exact = -np.log1p(np.exp(others).sum())  # ln p(top) without rounding p first
            assert row["log_confidence"] == pytest.approx(exact, rel=1e-12, abs=0)


def test_long_form_probabilities_sum_to_one_and_match_numpy(frame: pl.DataFrame) -> None:
    long = option_probabilities(frame)
    assert long.columns == [
        "scoring",
        "question",
        "option",
        "probability",
        "log_probability",
        "is_answer",
        "is_prediction",
    ]
    sums = long.group_by("question").agg(pl.col("probability").sum())["probability"]
    assert (sums - 1).abs().max() < 1e-14
    for q in (0, 17, 199):
        _, prob, _ = lm_eval_reference(np.array(LOGLIKS[q]), GOLDS[q])
        got = long.filter(pl.col("question") == q).sort("option")["probability"].to_numpy()
        np.testing.assert_allclose(got, prob, rtol=1e-13)
    # is_prediction agrees with choice_predictions, one per question.
    picked = long.filter("is_prediction").select("question", pl.col("option").alias("prediction"))
    preds = choice_predictions(frame).select("question", "prediction")
    assert picked.sort("question").equals(preds.sort("question"))


def test_brier_multiclass_is_lm_evals_brier_score(frame: pl.DataFrame) -> None:
    # lm-eval needs equal option counts for its numpy array: use 4-option questions.
    lls = [list(-RNG.exponential(2.0, size=4)) for _ in range(300)]
    golds = [int(RNG.integers(0, 4)) for _ in lls]
    probs = np.array(
        [lm_eval_reference(np.array(x), g)[1] for x, g in zip(lls, golds, strict=True)]
    )
    expected = np.mean(np.sum((probs - np.eye(4)[golds]) ** 2, axis=1))
    got = brier_multiclass(options_frame(lls, golds))
    assert got.columns == ["scoring", "count", "brier_multiclass"]
    assert got["count"].item() == 300
    assert got["brier_multiclass"].item() == pytest.approx(expected, rel=1e-13)


def test_near_certain_wrong_answer_keeps_a_finite_log_confidence() -> None:
    df = options_frame([[0.0, -60.0]], [1])
    row = choice_predictions(df).row(0, named=True)
    assert row["confidence"] == 1.0  # rounds to one ...
    assert row["log_confidence"] == pytest.approx(-math.exp(-60.0), rel=1e-12, abs=0)  # ... not 1
    assert row["correct"] is False
    long = option_probabilities(df)
    gold = long.filter("is_answer").row(0, named=True)
    assert gold["log_probability"] == pytest.approx(-60.0, rel=1e-14)
    top = long.filter("is_prediction").row(0, named=True)
    assert top["log_probability"] == pytest.approx(-math.exp(-60.0), rel=1e-12, abs=0)
    # Brier of the gold option uses 1 - p = -expm1(ln p) exactly.
    brier = brier_multiclass(df)["brier_multiclass"].item()
    assert brier == pytest.approx(2.0, rel=1e-15)


def test_ties_go_to_the_smallest_option_id_whatever_the_row_order() -> None:
    df = pl.DataFrame(
        {
            "question": [1, 1, 1],
            "option": ["c", "a", "b"],
            "loglik": [-1.0, -2.0, -1.0],
            "is_gold": [False, False, True],
        }
    )
    for order in (df, df.reverse(), df.sort("option")):
        row = choice_predictions(order).row(0, named=True)
        assert row["prediction"] == "b"  # among the tied b and c, b comes first
        assert row["correct"] is True
        assert row["confidence"] == pytest.approx(np.exp(-1) / (2 * np.exp(-1) + np.exp(-2)))
    numeric = options_frame([[-1.0, -1.0, -1.0]], [2])
    assert choice_predictions(numeric)["prediction"].item() == int(np.argmax([-1.0, -1.0, -1.0]))


def test_single_option_question() -> None:
    row = choice_predictions(options_frame([[-3.0]], [0])).row(0, named=True)
    assert (row["confidence"], row["log_confidence"], row["correct"]) == (1.0, 0.0, True)


def test_minus_inf_options_get_probability_zero() -> None:
    df = options_frame([[float("-inf"), -2.0, float("-inf")]], [1])
    long = option_probabilities(df)
    assert long["probability"].to_list() == [0.0, 1.0, 0.0]
    assert choice_predictions(df)["prediction"].item() == 1


def test_all_minus_inf_raises() -> None:
    df = options_frame([[float("-inf"), float("-inf")], [-1.0, -2.0]], [0, 0])
    with pytest.raises(DataError, match=r"1 of 2 questions is without a finite score"):
        choice_predictions(df)
    with pytest.raises(DataError, match="without a finite score"):
        option_probabilities(df)


def test_several_gold_answers() -> None:
    df = pl.DataFrame(
        {
            "question": [0, 0, 0],
            "option": [0, 1, 2],
            "loglik": [-2.0, -0.5, -1.0],
            "gold": [[0, 1], [0, 1], [0, 1]],
        }
    )
    row = choice_predictions(df, gold="gold").row(0, named=True)
    assert row["gold_options"] == 2
    assert row["correct"] is True  # option 1 is one of the golds (lm-eval's multiple_target)
    long = option_probabilities(df, gold="gold")
    assert long["is_answer"].to_list() == [True, True, False]
    p = long["probability"].to_numpy()
    assert brier_multiclass(df, gold="gold")["brier_multiclass"].item() == pytest.approx(
        (1 - p[0]) ** 2 + (1 - p[1]) ** 2 + p[2] ** 2
    )


def test_gold_column_naming_the_gold_option() -> None:
    df = pl.DataFrame(
        {
            "q": [1, 1, 2, 2],
            "opt": ["A", "B", "A", "B"],
            "ll": [-1.0, -0.1, -0.2, -3.0],
            "g": ["B", "B", "B", "B"],
        }
    )
    out = choice_predictions(df, question="q", option="opt", loglik="ll", gold="g")
    assert out["correct"].to_list() == [True, False]
    varying = df.with_columns(g=pl.Series(["A", "B", "B", "B"]))
    with pytest.raises(DataError, match="gold id that differs"):
        choice_predictions(varying, question="q", option="opt", loglik="ll", gold="g")


def test_questions_without_gold() -> None:
    df = options_frame([[-1.0, -2.0], [-0.5, -0.1]], [0, 5])  # gold 5 is not an option
    with pytest.raises(DataError, match=r"'question': 1 of 2 questions is without a gold option"):
        choice_predictions(df)
    wrong = choice_predictions(df, no_gold="wrong")
    assert wrong["correct"].to_list() == [True, False]
    assert wrong["gold_options"].to_list() == [1, 0]
    dropped = choice_predictions(df, no_gold="drop")
    assert dropped["question"].to_list() == [0]
    assert option_probabilities(df, no_gold="drop")["question"].unique().to_list() == [0]
    assert brier_multiclass(df, no_gold="wrong")["count"].item() == 2


def test_grouping_keys_and_lazy_in_lazy_out(frame: pl.DataFrame) -> None:
    two = pl.concat([frame.with_columns(model=pl.lit("a")), frame.with_columns(model=pl.lit("b"))])
    lazy = choice_predictions(two.lazy(), by="model", normalize=["char"])
    assert isinstance(lazy, pl.LazyFrame)
    out = lazy.collect()
    assert out.columns[:3] == ["model", "scoring", "question"]
    assert out.group_by("model", "scoring").len()["len"].to_list() == [200] * 4
    assert isinstance(option_probabilities(two.lazy(), by="model"), pl.LazyFrame)
    assert isinstance(brier_multiclass(two.lazy(), by="model"), pl.LazyFrame)


def test_per_byte_and_per_token_normalisations() -> None:
    df = options_frame([[-4.0, -3.0]], [0]).with_columns(
        bytes=pl.Series([4, 1]), n_tok=pl.Series([1, 3])
    )
    out = choice_predictions(df, normalize=["byte", "token"], tokens="n_tok")
    by_scoring = dict(zip(out["scoring"], out["prediction"], strict=True))
    assert by_scoring == {"per_byte": 0, "per_token": 1, "raw": 1}  # -1 > -3; -4 < -1
    assert set(out["scoring"]) == {"raw", "per_byte", "per_token"}
    with pytest.raises(ArgumentError, match="normalize="):
        choice_predictions(df, normalize="per_word")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([0.5, -1.0], "1 of 2 option rows is null, NaN or > 0"),
        ([float("nan"), -1.0], "null, NaN or > 0"),
        ([None, -1.0], "null, NaN or > 0"),
        ([float("inf"), -1.0], "null, NaN or > 0"),
    ],
)
def test_bad_logliks_raise_with_an_example(values: list[float | None], message: str) -> None:
    df = pl.DataFrame(
        {
            "model": "m",
            "question": [3, 3],
            "option": [0, 1],
            "loglik": values,
            "is_gold": [True, False],
        }
    )
    with pytest.raises(DataError, match=message) as info:
        choice_predictions(df.lazy(), by="model").collect()
    assert "model='m'" in str(info.value) and "question=3" in str(info.value)


def test_bad_lengths_duplicates_and_null_options() -> None:
    df = options_frame([[-1.0, -2.0]], [0], lengths=[[0.0, 3.0]])
    with pytest.raises(DataError, match="non-positive"):
        choice_predictions(df, normalize="char")
    dup = options_frame([[-1.0, -2.0]], [0]).with_columns(option=pl.lit(0))
    with pytest.raises(DataError, match="repeated option ids"):
        choice_predictions(dup)
    with pytest.raises(DataError, match="repeated option ids"):
        option_probabilities(dup)
    nulls = options_frame([[-1.0, -2.0]], [0]).with_columns(option=pl.Series([None, 1]))
    with pytest.raises(DataError, match="null option ids"):
        choice_predictions(nulls)


def test_schema_errors() -> None:
    df = options_frame([[-1.0, -2.0]], [0])
    with pytest.raises(TableError, match="loglik='ll'"):
        choice_predictions(df, loglik="ll")
    with pytest.raises(TableError, match="must be numeric"):
        choice_predictions(df.with_columns(pl.col("loglik").cast(pl.String)))
    with pytest.raises(TableError, match="Boolean or 0/1"):
        choice_predictions(df.with_columns(pl.col("is_gold").cast(pl.String)))
    with pytest.raises(TableError, match="chars"):
        choice_predictions(df, normalize="char")
    with pytest.raises(TableError, match="also input columns: question='question'"):
        choice_predictions(df, by="question")
    with pytest.raises(TableError, match=r"\['confidence'\] clash with output columns"):
        choice_predictions(df.with_columns(confidence=pl.lit(1)), by="confidence")
    with pytest.raises(TableError, match="cannot name options"):
        choice_predictions(df.with_columns(g=pl.lit("0")), gold="g")
    with pytest.raises(ArgumentError, match="no_gold="):
        choice_predictions(df, no_gold="ignore")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=r"is_gold= .* or gold="):
        choice_predictions(df, is_gold=None)


def test_empty_frame() -> None:
    df = options_frame([[-1.0]], [0]).clear()
    assert choice_predictions(df).height == 0
    assert option_probabilities(df).height == 0
    assert brier_multiclass(df).height == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(min_value=-50, max_value=0, allow_nan=False), min_size=1, max_size=6),
        min_size=1,
        max_size=8,
    ),
    st.data(),
)
def test_property_matches_numpy_argmax_and_softmax(
    logliks: list[list[float]], data: st.DataObject
) -> None:
    golds = [data.draw(st.integers(0, len(x) - 1)) for x in logliks]
    out = choice_predictions(options_frame(logliks, golds)).sort("question")
    for row, lls, gold in zip(out.iter_rows(named=True), logliks, golds, strict=True):
        pred, prob, acc = lm_eval_reference(np.array(lls), gold)
        assert row["prediction"] == pred
        assert row["correct"] == bool(acc)
        assert row["confidence"] == pytest.approx(prob[pred], rel=1e-12)


def test_log_confidence_gives_the_true_log_loss_end_to_end() -> None:
    """A wrong answer whose confidence rounds to 1.0: the engine's log loss stays finite."""
    import calib_frames as cf

    df = options_frame([[0.0, -60.0], [-0.1, -2.0]], [1, 0])
    preds = choice_predictions(df)
    assert preds["confidence"][0] == 1.0
    exact = cf.calibration_metrics(preds, log_confidence="log_confidence")["log_loss"].item()
    # Wrong: -ln(1 - p) = -ln p(gold) = 60 + ln(1 + e^-60); right: -ln p = ln(1 + e^-1.9).
    expected = (60 + math.log1p(math.exp(-60)) + math.log1p(math.exp(-1.9))) / 2
    assert exact == pytest.approx(expected, rel=1e-12)
    rounded = cf.calibration_metrics(preds)["log_loss"].item()
    assert rounded == math.inf  # without it, 1 - 1.0 = 0: the loss is lost
