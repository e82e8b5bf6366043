r"""Free-text answers → confidences: token log-probabilities, verbalised confidence, consistency.

Three ways to attach a confidence to a generated answer, each a polars transformation:

* :func:`answer_confidence`: from the answer's token log-probabilities,
  ``confidence = exp((1/n) Σₜ ln p(tokenₜ))``, the geometric mean token probability
  (``log_confidence`` is the exact mean log-probability, ``log_probability`` the sum:
  the probability of the whole answer).
* :func:`verbalized_confidence` / :func:`with_verbalized_confidence` (and
  :func:`with_verbalized_confidence_skipping`, which drops and counts what does not
  parse): a confidence the
  model *wrote* ("90%", "0.9", "9/10", "Confidence: 7 out of 10"), parsed by anchored
  regular expressions; words ("very likely") only through a mapping the caller passes
  (:data:`IPCC_WORDS` and :data:`KENT_WORDS` are documented ones). Inside a longer
  answer the statement is found by a ``pattern``, or by a named ``preset`` for the
  prompt formats of the verbalised-confidence literature (:data:`VERBALIZED_PRESETS`).
  Anything else is unparsable and reported with its row, never guessed.
* :func:`sample_consistency`: the share of k sampled answers that agree with the majority
  answer (self-consistency), a confidence that needs no log-probabilities.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic

import polars as pl

from calib_frames.arguments import (
    COLUMN,
    FLAG,
    Constraint,
    InstanceOf,
    MappingOf,
    Number,
    Options,
    check_arguments,
)
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.validation import (
    Frame,
    Keys,
    RowCheck,
    as_lazy,
    check_rows,
    divide,
    group_keys,
    require_columns,
    return_like,
    working,
)

__all__ = [
    "IPCC_WORDS",
    "KENT_WORDS",
    "VERBALIZED_PRESETS",
    "Skipped",
    "answer_confidence",
    "sample_consistency",
    "verbalized_confidence",
    "with_verbalized_confidence",
    "with_verbalized_confidence_skipping",
]

KENT_WORDS: dict[str, float] = {
    "certain": 1.0,
    "almost certain": 0.93,
    "probable": 0.75,
    "likely": 0.75,
    "chances about even": 0.5,
    "even chance": 0.5,
    "probably not": 0.3,
    "unlikely": 0.3,
    "almost certainly not": 0.07,
    "impossible": 0.0,
}
"""Sherman Kent's words of estimative probability (CIA, 1964): the centre of each
phrase's range (100, 93, 75, 50, 30, 7, 0 %), with his synonyms "likely" (for
"probable") and "unlikely" (for "probably not")."""

IPCC_WORDS: dict[str, float] = {
    "virtually certain": 0.995,
    "extremely likely": 0.975,
    "very likely": 0.95,
    "likely": 0.83,
    "more likely than not": 0.75,
    "about as likely as not": 0.5,
    "unlikely": 0.165,
    "very unlikely": 0.05,
    "extremely unlikely": 0.025,
    "exceptionally unlikely": 0.005,
}
"""The IPCC AR5 likelihood scale (Mastrandrea et al. 2010, guidance note for lead
authors): the midpoint of each term's range (virtually certain 99–100 %, extremely likely
95–100 %, very likely 90–100 %, likely 66–100 %, more likely than not 50–100 %, about as
likely as not 33–66 %, unlikely 0–33 %, very unlikely 0–10 %, extremely unlikely 0–5 %,
exceptionally unlikely 0–1 %)."""


@dataclass(frozen=True)
class VerbalizedPreset:
    """Where a prompt format puts the confidence: a ``pattern`` and its bare-number ``scale``."""

    pattern: str
    scale: float
    source: str


VERBALIZED_PRESETS: dict[str, VerbalizedPreset] = {
    "confidence": VerbalizedPreset(
        r"(?im)\bconfidence(?:\s+(?:level|score))?\s*:\s*(.+?)\s*$",
        1.0,
        "'Confidence: 85%' (or 'Confidence level: 0.85') after the answer, up to the end of "
        "its line ('Answer: B\\nConfidence: 85%'), the "
        "verbalised-number format of Lin, Hilton & Evans (2022), 'Teaching models to "
        "express their uncertainty in words'",
    ),
    "probability": VerbalizedPreset(
        r"(?im)\bprobability\s*:\s*(.+?)\s*$",
        1.0,
        "'Probability: 0.85' after 'Guess: …', up to the end of its line, the Verb. 1S/2S "
        "prompts of Tian et "
        "al. (2023), 'Just ask for calibration'",
    ),
    "answer_and_confidence": VerbalizedPreset(
        r"(?im)^\s*answer\s+and\s+confidence\s*(?:\(0\s*-\s*100\))?\s*:.*,\s*([^,\n]+?)\s*$",
        100.0,
        "'Answer and Confidence (0-100): B, 85%' (the confidence after the last comma; a "
        "bare number is out of 100, as the prompt asks), the vanilla and CoT formats of "
        "Xiong et al. (2024), 'Can LLMs express their uncertainty?'",
    ),
}
"""Named prompt formats for :func:`verbalized_confidence` (``preset=``): each sets the
``pattern`` that finds the confidence statement in the answer and the ``scale`` of a bare
number; the statement is then parsed as any other (``85%``, ``0.85``, ``17/20``)."""

_PREFIX = (
    r"^(?:(?:my\s+)?(?:confidence|certainty|probability)(?:\s+(?:level|score))?"
    r"\s*(?:[:=]|is)?\s*)?"
)
_NUMBER = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)"  # ASCII digits: others are mapped first
# Arabic-Indic and Eastern Arabic-Indic (Persian, Urdu) digits, percent sign and decimal
# separator, which NFKC leaves alone; the digits of other scripts stay unparsable
_ARABIC = {
    **{chr(0x0660 + d): str(d) for d in range(10)},
    **{chr(0x06F0 + d): str(d) for d in range(10)},
    "\u066a": "%",
    "\u066b": ".",
}
# the working columns of sample_consistency
_ANSWER, _GOLD, _GOLDS, _VOTES, _GOLD_VARIES = (
    working("answer"),
    working("gold"),
    working("golds"),
    working("votes"),
    working("gold_varies"),
)


_PARSER: dict[str, Constraint] = {
    "scale": Number(greater_than=0),
    "words": MappingOf(InstanceOf(str, "a word", "words"), Number(at_least=0, at_most=1)) | None,
    "pattern": InstanceOf(str, "a regular expression") | None,
    "preset": Options(*VERBALIZED_PRESETS) | None,
}
"""The constraints of the parser's options (:func:`verbalized_confidence`)."""


def clean_text(text: pl.Expr) -> pl.Expr:
    r"""Text as it is compared: NFKC, whitespace runs as one space, no invisible characters.

    Unicode NFKC folds compatibility forms (fullwidth ``９０％`` → ``90%``, ligatures,
    superscripts); every run of whitespace becomes one space; control characters (NUL,
    escape, …) and format characters (zero-width space and joiners, the byte-order mark,
    soft hyphen, direction marks: Unicode categories Cc and Cf) are removed. Leading and
    trailing whitespace is kept (callers strip it).

    The one rule by which the readers compare answer text: the OpenAI reader's answer
    tokens and their alternatives, inspect_ai's answer letters (so ``"B\u200b"`` is option
    B to both), :func:`sample_consistency`'s answers and the verbalised confidences.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources.text import clean_text
    >>> pl.select(clean_text(pl.lit("９０％\u200b  sure\x00"))).item()
    '90% sure'
    """
    return (
        text.str.normalize("NFKC")
        .str.replace_all(r"\s+", " ")
        .str.replace_all(r"[\p{Cc}\p{Cf}]", "")
    )


@check_arguments(text=InstanceOf((str, pl.Expr), "a column name or a String expression"), **_PARSER)
def verbalized_confidence(
    text: pl.Expr,
    *,
    scale: float = 1.0,
    words: Mapping[str, float] | None = None,
    pattern: str | None = None,
    preset: str | None = None,
) -> pl.Expr:
    r"""An expression parsing a written confidence into [0, 1]; null when unparsable.

    After :func:`clean_text` (NFKC: fullwidth ``９０%`` reads as ``90%``; zero-width and
    control characters removed), Arabic-Indic digits mapped to ASCII (``٩٠٪`` is 90 %),
    lower-casing, trimming, dropping an optional label ("confidence:", "my certainty
    is", ...) and trailing ``.``/``!``, the whole text must be one of:

    ============================  =====================================  ===========
    form                          example                                value
    ============================  =====================================  ===========
    percentage                    ``90%``, ``92.5 %``, ``90 percent``    x / 100
    fraction                      ``9/10``, ``7 out of 10``              a / b
    number                        ``0.9``, ``.9``, ``1``                 x / scale
    a key of ``words``            ``very likely`` (with IPCC_WORDS)      words[key]
    ============================  =====================================  ===========

    A value outside [0, 1] (``150%``, ``11/10``, ``90`` at ``scale=1``), a zero
    denominator, several numbers, digits of other scripts, or any other text gives
    null. ``scale=100`` reads bare numbers as percentages ("Confidence (0-100): 85").

    Parameters
    ----------
    text
        A String expression (or a column name).
    scale
        What a bare number is out of (1 or 100, usually).
    words
        Phrase → probability; matched against the whole (normalised) text.
    pattern
        A regular expression whose first capture group is the confidence statement
        inside a longer answer, e.g. ``r"I am (.+?) sure"`` for "Red. I am 80% sure.";
        the text is null (unparsable) where it does not match.
    preset
        A named prompt format of :data:`VERBALIZED_PRESETS` instead of ``pattern`` and
        ``scale``: ``"confidence"`` ("Answer: B\nConfidence: 85%", Lin et al. 2022),
        ``"probability"`` ("Guess: Paris\nProbability: 0.85", Tian et al. 2023) or
        ``"answer_and_confidence"`` ("Answer and Confidence (0-100): B, 85",
        Xiong et al. 2024; bare numbers out of 100).

    Returns
    -------
    Expr
        Float64 in [0, 1] or null.

    Raises
    ------
    ArgumentError
        ``scale`` not a positive number, a ``words`` value outside [0, 1], a
        ``pattern`` that is not a valid regular expression, an unknown ``preset``, or a
        ``preset`` with ``pattern`` or a ``scale`` other than 1 (it sets both).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import verbalized_confidence, IPCC_WORDS
    >>> s = pl.DataFrame({"t": ["90%", "Confidence: 0.8", "9/10", "very likely", "sure", "150%"]})
    >>> s.select(verbalized_confidence(pl.col("t"), words=IPCC_WORDS))["t"].to_list()
    [0.9, 0.8, 0.9, 0.95, None, None]
    >>> answers = pl.DataFrame({"t": ["Red. I am 80% sure.", "Blue."]})
    >>> sure = verbalized_confidence(pl.col("t"), pattern=r"I am (.+?) sure")
    >>> answers.select(sure)["t"].to_list()
    [0.8, None]
    >>> cot = pl.DataFrame({"t": ["Reasoning...\nAnswer: B\nConfidence: 85%", "Answer: C"]})
    >>> cot.select(verbalized_confidence("t", preset="confidence"))["t"].to_list()
    [0.85, None]
    """
    if preset is not None:
        if pattern is not None or scale != 1.0:
            raise ArgumentError("preset= sets the pattern and the scale: pass neither with it")
        pattern, scale = VERBALIZED_PRESETS[preset].pattern, VERBALIZED_PRESETS[preset].scale
    if isinstance(text, str):
        text = pl.col(text)
    if pattern is not None:
        try:  # polars' own regex engine, on one empty string: the pattern's syntax only
            pl.select(pl.lit("", pl.String).str.extract(pattern, 1))
        except pl.exceptions.PolarsError as error:
            first = str(error).strip().splitlines()
            raise ArgumentError(
                f"pattern= is not a valid regular expression: {pattern!r}"
                + (f" ({first[0]})" if first else "")
            ) from None
    mapping = {" ".join(k.lower().split()): float(v) for k, v in (words or {}).items()}
    text = text.cast(pl.String)  # a number column reads as its digits (no-op for String)
    if pattern is not None:
        text = text.str.extract(pattern, 1)
    t = (
        clean_text(text)
        .str.replace_many(list(_ARABIC), list(_ARABIC.values()))
        .str.to_lowercase()
        .str.strip_chars()
        .str.replace(_PREFIX, "")
        .str.strip_chars_end(" .!")
    )
    # divide(): polars divides by a scalar through its reciprocal (70 / 100 would give
    # 0.7000000000000001); a correctly rounded quotient matches "70%" == 0.7 exactly.
    percent = divide(t.str.extract(rf"^{_NUMBER}\s*(?:%|percent)$", 1).cast(pl.Float64), 100.0)
    fraction = t.str.extract_groups(rf"^{_NUMBER}\s*(?:/|out of)\s*{_NUMBER}$")
    numerator = fraction.struct.field("1").cast(pl.Float64)
    denominator = fraction.struct.field("2").cast(pl.Float64)
    ratio = pl.when(denominator > 0).then(numerator / denominator)
    number = divide(t.str.extract(rf"^{_NUMBER}$", 1).cast(pl.Float64), float(scale))
    parsed = [percent, ratio, number]
    if mapping:
        parsed.append(t.replace_strict(mapping, default=None, return_dtype=pl.Float64))
    value = pl.coalesce(parsed)
    return pl.when((value >= 0.0) & (value <= 1.0)).then(value).otherwise(None)


def _comparable(left: pl.DataType, right: pl.DataType) -> bool:
    """Whether ``==`` between the two dtypes is defined (same kind of values)."""
    if left.is_numeric() and right.is_numeric():
        return True
    text = (pl.String, pl.Categorical, pl.Enum)
    if isinstance(left, text) and isinstance(right, text):
        return True
    return left == right or pl.Null() in (left, right)


@dataclass(frozen=True)
class Skipped(Generic[Frame]):
    """A frame with the rows that were left out counted: ``frame`` and ``skipped``."""

    frame: Frame
    skipped: int


def _parsed(
    table: pl.DataFrame | pl.LazyFrame,
    *,
    column: str,
    output: str,
    scale: float,
    words: Mapping[str, float] | None,
    pattern: str | None,
    preset: str | None,
) -> pl.LazyFrame:
    """``table`` with the parsed confidence of ``column`` as ``output`` (null: unparsable)."""
    lazy = as_lazy(table)
    schema = lazy.collect_schema()
    require_columns(schema, {"column": column})
    if schema[column] != pl.String:
        raise TableError(f"column {column!r} must be String, got {schema[column]}")
    parsed = verbalized_confidence(
        pl.col(column), scale=scale, words=words, pattern=pattern, preset=preset
    )
    return lazy.with_columns(parsed.alias(output))


@check_arguments(column=COLUMN, output=COLUMN, **_PARSER)
def with_verbalized_confidence_skipping(
    table: Frame,
    *,
    column: str = "response",
    output: str = "confidence",
    scale: float = 1.0,
    words: Mapping[str, float] | None = None,
    pattern: str | None = None,
    preset: str | None = None,
) -> Skipped[Frame]:
    """:func:`with_verbalized_confidence`, dropping the rows that do not parse and counting them.

    Parameters
    ----------
    table, column, output, scale, words, pattern, preset
        As :func:`with_verbalized_confidence`.

    Returns
    -------
    Skipped
        ``frame``: the parsed rows with ``output`` added (a DataFrame or LazyFrame like
        ``table``), ``skipped``: how many rows did not parse (a LazyFrame is scanned
        once now to count them).

    Raises
    ------
    TableError
        ``column`` is missing or not a String column.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import with_verbalized_confidence_skipping
    >>> df = pl.DataFrame({"response": ["80%", "no idea", "0.3"]})
    >>> result = with_verbalized_confidence_skipping(df)
    >>> result.skipped, result.frame["confidence"].to_list()
    (1, [0.8, 0.3])
    """
    parsed = _parsed(table, column=column, output=output, scale=scale, words=words,
                     pattern=pattern, preset=preset)  # fmt: skip
    bad = parsed.select(pl.col(output).is_null().sum()).collect().item()
    kept = parsed.filter(pl.col(output).is_not_null())
    return Skipped(return_like(table, kept), int(bad))


@check_arguments(column=COLUMN, output=COLUMN, **_PARSER)
def with_verbalized_confidence(
    table: Frame,
    *,
    column: str = "response",
    output: str = "confidence",
    scale: float = 1.0,
    words: Mapping[str, float] | None = None,
    pattern: str | None = None,
    preset: str | None = None,
) -> Frame:
    """Add the parsed written confidence of ``column`` as ``output``; unparsable rows raise.

    Parameters
    ----------
    table
        Frame with a String column of written confidences.
    column, output
        The input column and the name of the Float64 output column.
    scale, words, pattern, preset
        As :func:`verbalized_confidence`.

    Returns
    -------
    DataFrame or LazyFrame
        The input with ``output`` added. To drop and count the rows that do not parse
        instead, use :func:`with_verbalized_confidence_skipping`.

    Raises
    ------
    TableError
        ``column`` is missing or not a String column.
    DataError
        Rows that do not parse (at collection for a LazyFrame), naming how many and the
        first one's row number (0-based, in input order) and text.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import with_verbalized_confidence
    >>> df = pl.DataFrame({"response": ["80%", "0.3"]})
    >>> with_verbalized_confidence(df)["confidence"].to_list()
    [0.8, 0.3]
    """
    parsed = _parsed(table, column=column, output=output, scale=scale, words=words,
                     pattern=pattern, preset=preset)  # fmt: skip
    row = "row" if "row" not in parsed.collect_schema() else working("row")
    unparsable = working("unparsable")
    marked = parsed.with_row_index(row).with_columns(pl.col(output).is_null().alias(unparsable))
    check = RowCheck(column, "not a confidence this parser reads", pl.col(unparsable))
    checked = check_rows(marked, [check], keys=[row], drop=[unparsable, row])
    return return_like(table, checked)


@check_arguments(logprob=COLUMN, by=Keys(required=True))
def answer_confidence(
    tokens: Frame,
    *,
    logprob: str = "logprob",
    by: str | Sequence[str],
) -> Frame:
    """Per answer: confidence = exp(mean token log-probability).

    Parameters
    ----------
    tokens
        One row per generated token with its log-probability (≤ 0).
    logprob
        The token log-probability column (natural log).
    by
        The columns that identify one answer (model, question, sample, ...).

    Returns
    -------
    DataFrame or LazyFrame
        ``by``…, ``tokens`` (UInt32), ``log_probability`` (Σ ln p: the whole answer),
        ``log_confidence`` (mean ln p) and ``confidence`` (exp of it), sorted by ``by``.

    Raises
    ------
    TableError
        Missing or non-numeric columns; a key that is also the logprob column or named
        like an output column.
    ArgumentError
        ``by`` empty or malformed.
    DataError
        At collection: null, NaN or positive log-probabilities.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import answer_confidence
    >>> toks = pl.DataFrame({"q": [1, 1, 2], "logprob": [-0.1, -0.3, -2.0]})
    >>> answer_confidence(toks, by="q")["confidence"].round(6).to_list()
    [0.818731, 0.135335]
    """
    keys: list[str] = group_keys(by)
    lazy = as_lazy(tokens)
    require_columns(
        lazy.collect_schema(),
        {"logprob": logprob},
        numbers=["logprob"],
        reserved=("tokens", "log_probability", "log_confidence", "confidence"),
        keys=keys,
        inputs_are_not_keys=True,
    )
    lp = pl.col(logprob).cast(pl.Float64)
    bad = (lp.is_nan() | (lp > 0)).fill_null(True)
    flag, example = working("bad"), working("example")
    out = (
        lazy.group_by(keys)
        .agg(
            pl.len().cast(pl.UInt32).alias("tokens"),
            lp.sum().alias("log_probability"),
            lp.mean().alias("log_confidence"),
            bad.sum().alias(flag),
            lp.filter(bad).first().alias(example),
        )
        .sort(keys)
    )
    check = RowCheck(
        logprob,
        "null, NaN or > 0 (a log-probability is ≤ 0)",
        pl.col(flag),
        total=pl.col("tokens").sum(),
        value=example,
        unit="token rows",
    )
    checked = check_rows(out, [check], keys=keys, drop=[flag, example])
    return return_like(
        tokens,
        checked.select(
            *keys,
            "tokens",
            "log_probability",
            "log_confidence",
            pl.col("log_confidence").exp().alias("confidence"),
        ),
    )


@check_arguments(answer=COLUMN, gold=COLUMN | None, by=Keys(required=True), normalize=FLAG)
def sample_consistency(
    samples: Frame,
    *,
    answer: str = "answer",
    gold: str | None = None,
    by: str | Sequence[str],
    normalize: bool = True,
) -> Frame:
    """Per question: the majority answer of k samples and the share that agrees with it.

    ``consistency = (samples giving the majority answer) / k``. A null answer (nothing
    extracted) counts in k but never as a vote; a question whose samples are all null
    has a null majority and consistency 0. Ties between answers go to the smallest
    answer (sort order), so the result does not depend on row order.

    Parameters
    ----------
    samples
        One row per (question keys…, sample) with the extracted answer.
    answer
        The answer column.
    gold
        Optional column with the reference answer (the same on every sample of the
        question): adds ``correct`` = majority answer equals it (after the same
        normalisation).
    by
        The columns that identify a question (model, task, question id, ...).
    normalize
        For String (or Categorical) answers: compare after :func:`clean_text` (NFKC,
        whitespace collapsed, zero-width and control characters removed), trimming and
        lower-casing.

    Returns
    -------
    DataFrame or LazyFrame
        ``by``…, ``samples`` (UInt32, k), ``majority_answer``, ``majority_count``
        (UInt32), ``consistency`` (Float64) [, ``correct``], sorted by ``by``; ready for
        ``calibration_metrics(..., confidence="consistency")``.

    Raises
    ------
    TableError
        Missing columns; a key that is also the answer or gold column or named like an
        output column.
    ArgumentError
        ``by`` empty or malformed.
    DataError
        ``gold`` differs between the samples of a question.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import sample_consistency
    >>> s = pl.DataFrame({"q": [1, 1, 1, 2, 2], "answer": ["Paris", "paris ", "Lyon", "4", "5"]})
    >>> sample_consistency(s, by="q").select("q", "majority_answer", "consistency")
    shape: (2, 3)
    ┌─────┬─────────────────┬─────────────┐
    │ q   ┆ majority_answer ┆ consistency │
    │ --- ┆ ---             ┆ ---         │
    │ i64 ┆ str             ┆ f64         │
    ╞═════╪═════════════════╪═════════════╡
    │ 1   ┆ paris           ┆ 0.666667    │
    │ 2   ┆ 4               ┆ 0.5         │
    └─────┴─────────────────┴─────────────┘
    """
    keys: list[str] = group_keys(by)
    lazy = as_lazy(samples)
    schema = lazy.collect_schema()
    produced: list[str] = ["samples", "majority_answer", "majority_count", "consistency"]
    require_columns(
        schema,
        {"answer": answer, **({"gold": gold} if gold else {})},
        reserved=[*produced, *(["correct"] if gold else [])],
        keys=keys,
        inputs_are_not_keys=True,
    )
    if gold and not _comparable(schema[answer], schema[gold]):
        raise TableError(
            f"column {gold!r} (gold, {schema[gold]}) cannot be compared with column "
            f"{answer!r} (answer, {schema[answer]}): cast one of them"
        )

    def norm(name: str) -> pl.Expr:
        expr = pl.col(name)
        if isinstance(schema[name], pl.Categorical | pl.Enum):
            expr = expr.cast(pl.String)  # compared (and normalised) as the text they hold
        if normalize and isinstance(schema[name], pl.String | pl.Categorical | pl.Enum):
            expr = clean_text(expr).str.strip_chars().str.to_lowercase()
        return expr

    prepared = lazy.select(
        *keys,
        norm(answer).alias(_ANSWER),
        *([norm(gold).alias(_GOLD)] if gold else []),
    )
    votes = prepared.group_by([*keys, _ANSWER]).agg(
        pl.len().cast(pl.UInt32).alias(_VOTES),
        *([pl.col(_GOLD).n_unique().alias(_GOLDS), pl.col(_GOLD).first()] if gold else []),
    )
    voted = pl.col(_ANSWER).is_not_null()
    ranked = (
        pl.col(_ANSWER)
        .filter(voted)
        .sort_by(
            [pl.col(_VOTES).filter(voted), pl.col(_ANSWER).filter(voted)],
            descending=[True, False],
        )
    )
    aggs = [
        pl.col(_VOTES).sum().cast(pl.UInt32).alias("samples"),
        ranked.first().alias("majority_answer"),
        pl.col(_VOTES).filter(voted).max().fill_null(0).cast(pl.UInt32).alias("majority_count"),
    ]
    if gold:
        aggs += [
            pl.col(_GOLD).first().alias(_GOLD),
            ((pl.col(_GOLDS).max() > 1) | (pl.col(_GOLD).n_unique() > 1)).alias(_GOLD_VARIES),
        ]
    out = votes.group_by(keys).agg(aggs).sort(keys)
    out = out.with_columns((pl.col("majority_count") / pl.col("samples")).alias("consistency"))
    columns = [*keys, "samples", "majority_answer", "majority_count", "consistency"]
    if gold:
        out = out.with_columns(
            (pl.col("majority_answer") == pl.col(_GOLD)).fill_null(False).alias("correct")
        )
        check = RowCheck(
            gold,
            "with a gold answer that differs between samples",
            pl.col(_GOLD_VARIES),
            show_value=False,
            unit="questions",
        )
        out = check_rows(out, [check], keys=keys, drop=[_GOLD_VARIES])
        columns.append("correct")
    return return_like(samples, out.select(columns))
