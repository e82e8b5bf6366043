"""Free-text confidences: token log-probabilities, verbalised confidence, sampling consistency."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.sources import (
    IPCC_WORDS,
    KENT_WORDS,
    VERBALIZED_PRESETS,
    Skipped,
    answer_confidence,
    sample_consistency,
    verbalized_confidence,
    with_verbalized_confidence,
    with_verbalized_confidence_skipping,
)


def parse(texts: list[str], **kwargs: object) -> list[float | None]:
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    return frame.select(verbalized_confidence(pl.col("t"), **kwargs))["t"].to_list()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("90%", 0.9),
        ("  92.5 % ", 0.925),
        ("90 percent", 0.9),
        ("Confidence: 80%", 0.8),
        ("confidence level = 0.65.", 0.65),
        ("My confidence is 0.7", 0.7),
        ("0.9", 0.9),
        (".9", 0.9),
        ("1", 1.0),
        ("0", 0.0),
        ("9/10", 0.9),
        ("7 out of 10", 0.7),
        ("Certainty: 3 / 4!", 0.75),
        ("100%", 1.0),
    ],
)
def test_parses_numbers_percentages_and_fractions(text: str, value: float) -> None:
    assert parse([text]) == [value]  # correctly rounded: "70%" is exactly 0.7


def test_percentages_are_correctly_rounded() -> None:
    texts = [f"{p}%" for p in range(101)] + [f"{p}" for p in range(101)]
    assert parse(texts[:101]) == [p / 100 for p in range(101)]
    assert parse(texts[101:], scale=100) == [p / 100 for p in range(101)]


@pytest.mark.parametrize(
    "text",
    [
        "150%",
        "11/10",
        "9/0",
        "90",
        "-0.2",
        "very likely",
        "about 0.9 or 0.8",
        "high",
        "",
        "0.9 because",
        "NaN",
    ],
)
def test_unparsable_or_out_of_range_is_null_not_guessed(text: str) -> None:
    assert parse([text]) == [None]


def test_scale_and_word_mappings() -> None:
    assert parse(["85", "Confidence: 40"], scale=100) == [0.85, 0.4]
    assert parse(["Very likely", "unlikely.", "about as likely as not"], words=IPCC_WORDS) == [
        0.95,
        0.165,
        0.5,
    ]
    assert parse(["Almost certain", "likely"], words=KENT_WORDS) == [0.93, 0.75]
    assert parse([None], words=KENT_WORDS) == [None]  # type: ignore[list-item]
    with pytest.raises(ArgumentError, match="scale="):
        parse(["1"], scale=0)
    with pytest.raises(
        ArgumentError, match=r"words= takes a mapping of words to numbers in \[0, 1\]"
    ):
        parse(["x"], words={"x": 1.5})


def test_unparsable_rows_raise_with_their_row_or_are_counted() -> None:
    df = pl.DataFrame({"response": ["80%", "no idea", "0.3", "lots"]})
    with pytest.raises(
        DataError, match=r"2 of 4 rows are not a confidence .* row=1: response='no idea'"
    ):
        with_verbalized_confidence(df)
    lazy = with_verbalized_confidence(df.lazy())
    assert isinstance(lazy, pl.LazyFrame)
    with pytest.raises(DataError, match="2 of 4 rows"):
        lazy.collect()
    skipped = with_verbalized_confidence_skipping(df.lazy(), output="p")
    assert isinstance(skipped, Skipped)
    assert skipped.skipped == 2
    assert skipped.frame.collect()["p"].to_list() == [0.8, 0.3]
    ok = with_verbalized_confidence(df.head(1))
    assert isinstance(ok, pl.DataFrame)
    assert ok.columns == ["response", "confidence"]
    with pytest.raises(TableError, match="must be String"):
        with_verbalized_confidence(pl.DataFrame({"response": [1]}))
    with pytest.raises(TableError, match="not found"):
        with_verbalized_confidence(df, column="text")


def test_answer_confidence_is_the_geometric_mean_token_probability() -> None:
    rng = np.random.default_rng(1)
    lps = {q: -rng.exponential(0.5, size=rng.integers(1, 8)) for q in range(50)}
    frame = pl.DataFrame(
        {
            "q": [q for q, v in lps.items() for _ in v],
            "logprob": np.concatenate(list(lps.values())),
        }
    )
    out = answer_confidence(frame.lazy(), by="q").collect()
    assert out.columns == ["q", "tokens", "log_probability", "log_confidence", "confidence"]
    for q, tokens, total, mean, conf in out.iter_rows():
        assert tokens == len(lps[q])
        assert total == pytest.approx(lps[q].sum(), rel=1e-13)
        assert conf == pytest.approx(math.exp(np.mean(lps[q])), rel=1e-13)
        assert conf == pytest.approx(np.prod(np.exp(lps[q])) ** (1 / len(lps[q])), rel=1e-12)
        assert mean == pytest.approx(np.mean(lps[q]), rel=1e-13)


def test_answer_confidence_rejects_bad_logprobs() -> None:
    frame = pl.DataFrame({"q": [1, 1, 2], "logprob": [-0.1, 0.3, None]})
    with pytest.raises(
        DataError, match=r"2 of 3 token rows are null, NaN or > 0.*q=1: logprob=0.3"
    ):
        answer_confidence(frame, by="q")
    with pytest.raises(ArgumentError, match="by="):
        answer_confidence(frame, by=[])
    with pytest.raises(TableError, match="numeric"):
        answer_confidence(frame.with_columns(pl.col("logprob").cast(pl.String)), by="q")


def test_sample_consistency_against_counter() -> None:
    samples = pl.DataFrame(
        {
            "q": [1, 1, 1, 1, 2, 2, 3, 3, 3],
            "answer": ["Paris", " paris", "Lyon", None, "4", "5", None, None, None],
            "gold": ["paris"] * 4 + ["5"] * 2 + ["x"] * 3,
        }
    )
    out = sample_consistency(samples, by="q", gold="gold")
    assert out.columns == [
        "q",
        "samples",
        "majority_answer",
        "majority_count",
        "consistency",
        "correct",
    ]
    assert out.rows() == [
        (1, 4, "paris", 2, 0.5, True),
        (2, 2, "4", 1, 0.5, False),  # tie: the smallest answer wins
        (3, 3, None, 0, 0.0, False),
    ]
    raw = sample_consistency(samples, by="q", normalize=False)
    assert raw.filter(pl.col("q") == 1)["majority_count"].item() == 1
    bad = samples.with_columns(gold=pl.Series(["paris", "lyon"] + ["5"] * 7))
    with pytest.raises(DataError, match="gold answer that differs"):
        sample_consistency(bad, by="q", gold="gold")
    with pytest.raises(ArgumentError, match="by="):
        sample_consistency(samples, by=[])
    with pytest.raises(TableError, match="not found"):
        sample_consistency(samples, by="q", answer="a")


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=9), min_size=1, max_size=6
    )
)
def test_property_consistency_is_majority_share(questions: list[list[str]]) -> None:
    frame = pl.DataFrame(
        {
            "q": [i for i, s in enumerate(questions) for _ in s],
            "answer": [a for s in questions for a in s],
        }
    )
    out = sample_consistency(frame.sample(fraction=1.0, shuffle=True, seed=0), by="q")
    assert out.height == len(questions)
    for q, k, majority, count, share in out.iter_rows():
        answers = questions[q]
        counts = Counter(answers)
        top = max(counts.values())
        assert (k, count) == (len(answers), top)
        assert majority == min(a for a, c in counts.items() if c == top)
        assert share == top / len(answers)


def test_pattern_extracts_the_statement_from_a_longer_answer() -> None:
    texts = ["Red. I am 80% sure.", "blue. i am 0.6 sure", "Green.", "I am very sure"]
    assert parse(texts, pattern=r"(?i)I am (.+?) sure") == [0.8, 0.6, None, None]
    df = pl.DataFrame({"response": texts[:2]})
    out = with_verbalized_confidence(df, pattern=r"(?i)I am (.+?) sure")
    assert out["confidence"].to_list() == [0.8, 0.6]


# ---- named prompt formats (VERBALIZED_PRESETS) -------------------------------------------

PRESET_CASES = {
    "confidence": [
        ("Answer: B\nConfidence: 85%", 0.85),  # Lin et al. 2022
        ("The capital is Paris.\nConfidence level: 0.7.", 0.7),
        ("Answer: 897 Confidence: 61%", 0.61),  # on the answer's line
        ("Answer: B\nConfidence: 85", None),  # a bare 85 is not a probability at scale 1
        ("Answer: B", None),
    ],
    "probability": [
        ("Guess: Paris\nProbability: 0.85", 0.85),  # Tian et al. 2023, Verb. 1S
        ("Probability: 0.3", 0.3),  # Verb. 2S: the probability alone
        ("Guess: Paris\nProbability: high", None),
    ],
    "answer_and_confidence": [
        ("Answer and Confidence (0-100): B, 85%", 0.85),  # Xiong et al. 2024, vanilla
        ("Explanation: 3 + 4 = 7.\nAnswer and Confidence (0-100): 7, 90", 0.9),  # CoT
        ("Answer and Confidence (0-100): Paris, France, 60%", 0.6),  # the last comma
        ("Answer and Confidence (0-100): B", None),  # no confidence given
    ],
}


@pytest.mark.parametrize("preset", sorted(PRESET_CASES))
def test_verbalized_presets_find_the_confidence(preset: str) -> None:
    texts, expected = zip(*PRESET_CASES[preset], strict=True)
    frame = pl.DataFrame({"t": list(texts)})
    got = frame.select(verbalized_confidence("t", preset=preset))["t"].to_list()
    assert got == list(expected)


def test_a_preset_is_its_pattern_and_scale() -> None:
    frame = pl.DataFrame({"t": [text for cases in PRESET_CASES.values() for text, _ in cases]})
    for name, preset in VERBALIZED_PRESETS.items():
        by_name = frame.select(verbalized_confidence("t", preset=name))
        by_hand = frame.select(
            verbalized_confidence("t", pattern=preset.pattern, scale=preset.scale)
        )
        assert by_name.equals(by_hand)


def test_presets_through_with_verbalized_confidence() -> None:
    frame = pl.DataFrame({"response": ["Answer: B\nConfidence: 85%", "Answer: C"]})
    skipped = with_verbalized_confidence_skipping(frame, preset="confidence")
    assert skipped.skipped == 1 and skipped.frame["confidence"].to_list() == [0.85]
    with pytest.raises(DataError, match="1 "):
        with_verbalized_confidence(frame.lazy(), preset="confidence").collect()


@pytest.mark.parametrize(
    "options",
    [
        {"preset": "nope"},
        {"preset": "confidence", "pattern": "(.*)"},
        {"preset": "confidence", "scale": 100},
    ],
)
def test_preset_misuse_is_an_argument_error(options: dict[str, object]) -> None:
    with pytest.raises(ArgumentError, match="preset="):
        verbalized_confidence("t", **options)  # type: ignore[arg-type]
