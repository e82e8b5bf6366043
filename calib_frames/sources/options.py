r"""Multiple choice: option log-likelihoods → per-question predictions and option probabilities.

An *options frame* has one row per (group keys…, question, option) with the model's
log-likelihood of that option (``loglik`` = ln p(option | prompt), ≤ 0) and which option
is the answer: either a Boolean ``is_gold`` column or a ``gold`` column naming the gold
option id on every row of the question (a list column for several gold answers).

**Scores and the softmax.** For a *scoring* s the score of option i is

=============  ==========================  =================================================
``scoring``    s_i                         as in lm-evaluation-harness
=============  ==========================  =================================================
``raw``        ll_i                        ``acc`` (argmax of the log-likelihoods)
``per_char``   ll_i / chars_i              ``acc_norm``: the option's length in *characters*
                                           (``len(choice)``, without the target delimiter);
                                           its paper speaks of bytes, its code counts
                                           characters
``per_byte``   ll_i / bytes_i              ``acc_bytes`` (UTF-8 bytes of the option text)
``per_token``  ll_i / tokens_i             the per-token mean log-likelihood
=============  ==========================  =================================================

and the options' probabilities are the softmax of the scores within the question,
computed stably as log-sum-exp: with m = maxᵢ sᵢ,

    ln pᵢ = sᵢ − m − log1p(Σ_{j ≠ top} exp(sⱼ − m))

(the top option's own term exp(0) = 1 is taken out of the sum, so that ln p of a
near-certain answer, e.g. −e⁻⁶⁰, is kept instead of rounding to 0).

For ``raw`` scores over the full option set this is the model's probability renormalised
to the offered options (what lm-eval's ``brier_score`` uses); a length-normalised softmax
is the same formula over per-unit log-likelihoods, a heuristic confidence, not a
probability the model assigned.

**Prediction, confidence, correctness.** The predicted option is the argmax of the
scores (:func:`top_choice`, the one tie rule of the package for multiple choice, also
behind :func:`calib_frames.recalibrate.top_option`). Ties go to the *smallest option id*
among the tied options — for lm-eval's ids (0, 1, … in choice order) that is numpy's
``argmax`` rule "first one wins", which lm-eval's ``acc`` uses, and it does not depend on
row order (a lazy scan or a join may reorder rows). A tie between a gold option and
another one is therefore correct exactly when the gold option has the smaller id.
``confidence`` is its probability and ``log_confidence`` the exact ``ln p`` of it
(= −log1p(Σ_{j ≠ top} exp(sⱼ − m))), non-zero even when ``confidence`` rounds to 1.0;
pass it to the calibration metrics as ``log_confidence=`` so that a near-certain wrong
answer gets its true log loss.
``correct`` is whether the predicted option is a gold option; with several gold
options any of them counts (lm-eval's ``multiple_target``).

**Defined edge cases.**

* One option: probability 1, ``log_confidence`` 0.
* An option with ``loglik = −inf`` gets probability 0; a question whose options all have
  −inf scores has no softmax and raises :class:`~calib_frames.exceptions.DataError`.
* null, NaN, +inf or positive log-likelihoods, non-positive or null lengths, null or
  repeated option ids, a ``gold`` column that differs within a question: DataError.
* A question without a gold option: ``no_gold="raise"`` (default) raises; ``"wrong"``
  keeps it as a wrong answer (what lm-eval does after its warning, so its ``acc``
  counts it); ``"drop"`` removes it.

The transformations need all options of a question together (a softmax): they run per
question, in memory (polars group_by / window expressions, no row loops).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from calib_frames.arguments import ListOf, Options, check_arguments
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.schema import CHOICE_PREDICTIONS, OPTION_PROBABILITIES, Table
from calib_frames.validation import (
    Frame,
    RowCheck,
    as_lazy,
    check_rows,
    group_keys,
    require_columns,
    return_like,
    working,
)

__all__ = [
    "SCORINGS",
    "choice_predictions",
    "option_probabilities",
    "top_choice",
]

SCORINGS = {"raw": None, "per_char": "chars", "per_byte": "bytes", "per_token": "tokens"}
"""Scoring name → the length parameter that normalises it (``None``: raw log-likelihood)."""

NoGold = Literal["raise", "wrong", "drop"]
_SCORING_NAME = Options("char", "byte", "token", *SCORINGS)
NORMALIZE = _SCORING_NAME | ListOf(_SCORING_NAME, at_least=0) | None
"""``normalize=``: a scoring (``'char'`` is ``'per_char'``, …), a list of them or None."""
# Inside the transformations ``scoring`` is an Enum (fast to group and sort, ordered raw
# first); the outputs carry it as a String.
_SCORING = pl.Enum(list(SCORINGS))

_S, _LL, _GOLD, _LEN = working("score"), working("ll"), working("gold"), working("len")
_TOP, _LOGZ, _PICK, _CORRECT = (
    working("top"),
    working("logz"),
    working("pick"),
    working("correct"),
)
# the row-check flags and the example value of a bad log-likelihood
_BAD_LL, _BAD_LEN, _BAD_OPT, _BAD_GOLD = (
    working("bad_ll"),
    working("bad_len"),
    working("bad_option"),
    working("bad_gold"),
)
_DUP, _ALL_INF, _NO_GOLD, _GOLD_VARIES = (
    working("dup"),
    working("all_inf"),
    working("no_gold"),
    working("gold_varies"),
)
_LL_EXAMPLE, _GOLD_COUNT = working("ll_example"), working("gold_count")
_RAW = pl.col("scoring") == "raw"
_OUTPUTS = (
    "scoring",
    "options",
    "gold_options",
    "prediction",
    "confidence",
    "log_confidence",
    "correct",
    "probability",
    "log_probability",
    "is_answer",
    "is_prediction",
)
_ALL_INF_TEXT = "without a finite score on any option (−inf everywhere: no softmax)"
_NO_GOLD_TEXT = "without a gold option (no_gold='wrong' keeps them as wrong, 'drop' drops them)"
_GOLD_VARIES_TEXT = "with a gold id that differs between their rows"


def _columns(spec: Table, keys: Sequence[str], **names: str) -> list[str]:
    """The output columns: keys…, then the spec's, the question/option under the caller's names."""
    return [*keys, *(names.get(column, column) for column in spec.names)]


def top_choice(
    score: pl.Expr, option: pl.Expr, is_gold: pl.Expr, *, top: pl.Expr | None = None
) -> tuple[pl.Expr, pl.Expr]:
    """The predicted option of a question and whether it is gold, as two aggregations.

    Over the option rows of one question (inside ``group_by(...).agg``): the prediction is
    the option with the largest ``score``, the *smallest option id* among tied options
    (numpy's ``argmax`` on ids in choice order, lm-eval's ``acc``; independent of row
    order), and it is correct when it is a gold option, so a tie between a gold option
    and another one is correct exactly when the gold option has the smaller id.

    Parameters
    ----------
    score
        The options' scores (log-likelihoods, or any monotone transformation of them).
    option
        The option ids (any ordered dtype).
    is_gold
        Boolean, True on the gold option(s); null counts as not gold.
    top
        The question's largest score when it is already a column (``None``:
        ``score.max()``).

    Returns
    -------
    tuple of pl.Expr
        The predicted option id, and a Boolean: whether it is gold (False when the
        question has no gold option).

    Examples
    --------
    >>> import polars as pl
    >>> tied = pl.DataFrame({"question": [1, 1, 1], "option": [2, 0, 1],
    ...                      "loglik": [-1.0, -1.0, -3.0], "is_gold": [True, False, False]})
    >>> pick, correct = top_choice(pl.col("loglik"), pl.col("option"), pl.col("is_gold"))
    >>> tied.group_by("question").agg(pick.alias("prediction"), correct.alias("correct")).rows()
    [(1, 0, False)]
    """
    is_top = score == (score.max() if top is None else top)
    gold = is_gold.fill_null(False)
    pick = pl.when(is_top).then(option).min()
    pick_gold = pl.when(is_top & gold).then(option).min()
    return pick, (pick_gold == pick).fill_null(False)


def _scorings(normalize: str | Sequence[str] | None) -> list[str]:
    names = [normalize] if isinstance(normalize, str) else list(normalize or [])
    aliases = {"char": "per_char", "byte": "per_byte", "token": "per_token"}
    out = ["raw"]
    for name in names:
        scoring = aliases.get(name, name)
        if scoring not in out:
            out.append(scoring)
    return out


def _check_roles(
    schema: pl.Schema,
    *,
    keys: list[str],
    question: str,
    option: str,
    loglik: str,
    is_gold: str | None,
    gold: str | None,
    lengths: list[str],
) -> pl.Expr:
    """Check the columns the options frame must have; return the "is a gold option" flag."""
    roles = {"question": question, "option": option, "loglik": loglik}
    if gold is not None:
        roles["gold"] = gold
    elif is_gold is not None:
        roles["is_gold"] = is_gold
    else:
        raise ArgumentError("name the answer: is_gold= (a Boolean column) or gold= (gold ids)")
    for name in lengths:
        roles[f"length {name}"] = name
    require_columns(
        schema,
        roles,
        numbers=["loglik"],
        reserved=_OUTPUTS,
        keys=keys,
        inputs_are_not_keys=True,
    )
    return _gold_flag(schema, option=option, is_gold=is_gold, gold=gold)


def _gold_flag(schema: pl.Schema, *, option: str, is_gold: str | None, gold: str | None) -> pl.Expr:
    """The "is a gold option" flag from ``gold`` (ids, or lists of ids) or ``is_gold``."""
    if gold is not None:
        gold_dtype = schema[gold]
        inner = gold_dtype.inner if isinstance(gold_dtype, pl.List) else gold_dtype
        option_dtype = schema[option]
        if inner != option_dtype and not (inner.is_numeric() and option_dtype.is_numeric()):
            raise TableError(
                f"column {gold!r} (gold, {gold_dtype}) cannot name options of column "
                f"{option!r} ({option_dtype}): cast one of them"
            )
        if isinstance(gold_dtype, pl.List):
            gold_expr = pl.col(gold).list.contains(pl.col(option)).fill_null(False)
        else:
            gold_expr = (pl.col(option) == pl.col(gold)).fill_null(False)
    else:
        assert is_gold is not None
        dtype = schema[is_gold]
        if dtype != pl.Boolean and not dtype.is_integer():
            raise TableError(f"column {is_gold!r} (is_gold) must be Boolean or 0/1, got {dtype}")
        gold_expr = pl.col(is_gold).cast(pl.Boolean).fill_null(False)
    return gold_expr


def _prepare(
    options: pl.LazyFrame,
    *,
    keys: list[str],
    question: str,
    option: str,
    loglik: str,
    is_gold: str | None,
    gold: str | None,
    scorings: list[str],
    lengths: dict[str, str],
) -> pl.LazyFrame:
    """Stack one copy of the option rows per scoring with the score and the row flags."""
    schema = options.collect_schema()
    gold_expr = _check_roles(
        schema,
        keys=keys,
        question=question,
        option=option,
        loglik=loglik,
        is_gold=is_gold,
        gold=gold,
        lengths=[lengths[SCORINGS[s] or ""] for s in scorings[1:]],
    )
    ll = pl.col(loglik).cast(pl.Float64)
    # an integer is_gold is a 0/1 flag: any other value (2, -1) is a bad row, not "gold"
    bad_gold = (
        ~pl.col(is_gold).is_in([0, 1]).fill_null(True)
        if gold is None and is_gold is not None and schema[is_gold].is_integer()
        else pl.lit(False)
    )
    base = options.select(
        *keys,
        question,
        option,
        ll.alias(_LL),
        gold_expr.alias(_GOLD),
        bad_gold.alias(_BAD_GOLD),
        *(
            pl.col(lengths[SCORINGS[s] or ""]).cast(pl.Float64).alias(f"{_LEN}{s}")
            for s in scorings[1:]
        ),
        *([pl.col(gold)] if gold is not None and gold not in (question, option) else []),
    )
    bad_ll = (pl.col(_LL).is_nan() | (pl.col(_LL) > 0)).fill_null(True)
    bad_len = pl.lit(False)
    for scoring in scorings[1:]:
        length = pl.col(f"{_LEN}{scoring}")
        bad_len = bad_len | (~(length > 0) | length.is_infinite()).fill_null(True)
    extra = [pl.col(gold)] if gold is not None and gold not in (question, option) else []
    stacked = []
    for scoring in scorings:  # at most four copies: a loop over scorings, not rows
        raw = scoring == "raw"
        score = pl.col(_LL) if raw else pl.col(_LL) / pl.col(f"{_LEN}{scoring}")
        # Row checks are flagged on the raw copy only, so that each input row counts once.
        stacked.append(
            base.select(
                *keys,
                pl.lit(scoring, _SCORING).alias("scoring"),
                question,
                option,
                _LL,
                _GOLD,
                score.alias(_S),
                (bad_ll & raw).alias(_BAD_LL),
                (bad_len & raw).alias(_BAD_LEN),
                (pl.col(option).is_null() & raw).alias(_BAD_OPT),
                (pl.col(_BAD_GOLD) & raw).alias(_BAD_GOLD),
                *extra,
            )
        )
    return pl.concat(stacked, how="vertical")


_STAT_FLAGS = (
    _BAD_LL,
    _LL_EXAMPLE,
    _BAD_LEN,
    _BAD_OPT,
    _BAD_GOLD,
    _DUP,
    _ALL_INF,
)


def _question_stats(
    stacked: pl.LazyFrame, *, group: list[str], option: str, gold: str | None
) -> pl.LazyFrame:
    """Per (keys, scoring, question): softmax max and log-normaliser, prediction, flags.

    Two group_by passes and a join (no windows, so it streams): the max first, then
    Σ exp(s − max), the predicted option, counts and contract flags.

    ``__cf_pick`` and ``__cf_correct`` are the predicted option and whether it is gold
    (:func:`top_choice`).
    """
    score = pl.col(_S)
    tops = stacked.group_by(group).agg(score.max().alias(_TOP))
    with_top = stacked.join(tops, on=group, how="left", nulls_equal=True)
    top = pl.col(_TOP)
    is_top = score == top
    pick, correct = top_choice(score, pl.col(option), pl.col(_GOLD), top=top)
    aggs = [
        top.first(),
        # ln Σ exp(s − m) = log1p(Σ over the other options): the top option's own term is
        # exactly 1, so a near-certain answer keeps its tiny ln p instead of rounding to 0.
        (
            pl.when(score < top).then((score - top).exp()).otherwise(0.0).sum()
            + (is_top.sum().cast(pl.Float64) - 1.0)
        )
        .log1p()
        .alias(_LOGZ),
        pick.alias(_PICK),
        correct.alias(_CORRECT),
        pl.len().cast(pl.UInt32).alias("options"),
        pl.col(_GOLD).sum().cast(pl.UInt32).alias("gold_options"),
        pl.col(_BAD_LL).sum().alias(_BAD_LL),
        pl.when(pl.col(_BAD_LL)).then(pl.col(_LL)).max().alias(_LL_EXAMPLE),
        pl.col(_BAD_LEN).sum().alias(_BAD_LEN),
        pl.col(_BAD_OPT).sum().alias(_BAD_OPT),
        pl.col(_BAD_GOLD).sum().alias(_BAD_GOLD),
        (pl.len() - pl.col(option).n_unique()).cast(pl.UInt32).alias(_DUP),
        (top.first() == float("-inf")).alias(_ALL_INF),
    ]
    if gold is not None:
        aggs.append((pl.col(gold).n_unique() > 1).alias(_GOLD_VARIES))
    return with_top.group_by(group).agg(aggs)


def _question_checks(stacked: _Stacked, *, per_option: bool) -> tuple[list[RowCheck], list[str]]:
    """The row checks of the options frame and the working columns they read (to drop).

    On the per-question frame (``per_option=False``) the option-row flags count the bad
    option rows of each question (out of the ``options`` total); on the long frame every
    flag marks an option row, the question-level ones as rows "of questions without …".
    """
    question, option, loglik = stacked.question, stacked.option, stacked.loglik
    is_gold, gold, lengths = stacked.is_gold, stacked.gold, stacked.lengths
    length_names = ", ".join(lengths[SCORINGS[s] or ""] for s in stacked.scorings[1:])
    counted: pl.Expr | None = None if per_option else pl.col("options").sum()

    def option_rows(flag: str, column: str, problem: str, value: str | None = None) -> RowCheck:
        return RowCheck(
            column,
            problem,
            pl.col(flag),
            total=counted,
            value=value,
            show_value=value is not None,
            unit="option rows",
        )

    def questions(flag: str, column: str, problem: str) -> RowCheck:
        if per_option:
            return option_rows(flag, column, f"of questions {problem}")
        return RowCheck(column, problem, pl.col(flag), show_value=False, unit="questions")

    checks = [
        option_rows(_BAD_LL, loglik, "null, NaN or > 0 (a log-likelihood is ≤ 0)", _LL_EXAMPLE),
        option_rows(_BAD_LEN, length_names or "length", "null, non-positive or infinite lengths"),
        option_rows(_BAD_OPT, option, "null option ids"),
        option_rows(_BAD_GOLD, is_gold or "is_gold", "neither 0 nor 1 (is_gold is a 0/1 flag)"),
        option_rows(_DUP, option, "repeated option ids within their question"),
        questions(_ALL_INF, loglik, _ALL_INF_TEXT),
        questions(_NO_GOLD, question, _NO_GOLD_TEXT),
    ]
    flags: list[str] = [
        _BAD_LL,
        _LL_EXAMPLE,
        _BAD_LEN,
        _BAD_OPT,
        _BAD_GOLD,
        _DUP,
        _ALL_INF,
        _NO_GOLD,
    ]
    if gold is not None:
        checks.append(questions(_GOLD_VARIES, gold, _GOLD_VARIES_TEXT))
        flags.append(_GOLD_VARIES)
    return checks, flags


@dataclass(frozen=True)
class _Stacked:
    """The scored option rows of an options frame (:func:`_prepare`) and the columns named."""

    rows: pl.LazyFrame
    keys: list[str]
    group: list[str]  # keys…, scoring, question
    question: str
    option: str
    loglik: str
    is_gold: str | None
    gold: str | None
    lengths: dict[str, str]
    scorings: list[str]


def _stack(
    options: Frame,
    *,
    by: str | Sequence[str] | None,
    normalize: str | Sequence[str] | None,
    question: str,
    option: str,
    loglik: str,
    is_gold: str | None,
    gold: str | None,
    lengths: dict[str, str],
) -> _Stacked:
    """The preamble of :func:`choice_predictions` and :func:`option_probabilities`."""
    keys: list[str] = group_keys(by)
    scorings = _scorings(normalize)
    columns = {"question": question, "option": option, "loglik": loglik}
    rows = _prepare(as_lazy(options), keys=keys, **columns, is_gold=is_gold, gold=gold,
                    scorings=scorings, lengths=lengths)  # fmt: skip
    return _Stacked(rows, keys, [*keys, "scoring", question], **columns, is_gold=is_gold,
                    gold=gold, lengths=lengths, scorings=scorings)  # fmt: skip


@check_arguments(normalize=NORMALIZE, no_gold=Options.of(NoGold))
def choice_predictions(
    options: Frame,
    *,
    question: str = "question",
    option: str = "option",
    loglik: str = "loglik",
    is_gold: str | None = "is_gold",
    gold: str | None = None,
    chars: str = "chars",
    bytes: str = "bytes",
    tokens: str = "tokens",
    by: str | Sequence[str] | None = None,
    normalize: str | Sequence[str] | None = None,
    no_gold: NoGold = "raise",
) -> Frame:
    """One prediction per question and scoring: predicted option, confidence, correctness.

    Parameters
    ----------
    options
        The options frame: one row per (keys…, question, option).
    question, option, loglik
        Columns of the question id, the option id and ln p(option | prompt) (≤ 0).
    is_gold
        Boolean (or 0/1) column, True on the gold option(s). Ignored when ``gold`` is given.
    gold
        Column giving the gold option id on every row (a list column for several golds).
    chars, bytes, tokens
        Columns with the option's length in characters, UTF-8 bytes and tokens.
    by
        Group keys (model, task, …); questions are identified within them.
    normalize
        Length normalisations to add next to ``raw``: ``"char"``, ``"byte"``, ``"token"``
        or a list of them; each needs its length column (``chars``, ``bytes``, ``tokens``).
    no_gold
        What to do with a question without a gold option: ``"raise"``, ``"wrong"`` or
        ``"drop"`` (see the module docstring).

    Returns
    -------
    DataFrame or LazyFrame
        Keys…, ``scoring`` (``raw``, ``per_char``, ``per_byte``, ``per_token``), the
        question column, ``options`` (UInt32, options of the question), ``gold_options``
        (UInt32), ``prediction`` (the option id), ``confidence``, ``log_confidence``
        (Float64) and ``correct`` (Boolean). Ready for
        ``calibration_metrics(..., by=[*keys, "scoring"])``. Sorted by keys, scoring, question.

    Raises
    ------
    TableError
        A named column is missing or not of a usable dtype, or ``by=`` names an input
        column (the question, an option, …) or an output column.
    ArgumentError
        An unknown normalisation or ``no_gold`` value, a malformed ``by=``.
    DataError
        At collection: bad log-likelihoods, lengths or option ids, a question with only
        −inf scores, or (``no_gold="raise"``) a question without a gold option.

    See Also
    --------
    option_probabilities : every option's probability (the all-options long form).
    calib_frames.multiclass.brier_multiclass : the multi-class Brier score per group.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import choice_predictions
    >>> opts = pl.DataFrame({
    ...     "question": [1, 1, 2, 2],
    ...     "option": [0, 1, 0, 1],
    ...     "loglik": [-0.5, -2.0, -3.0, -1.0],
    ...     "is_gold": [True, False, True, False],
    ... })
    >>> choice_predictions(opts).select("question", "prediction", "correct",
    ...                                 pl.col("confidence").round(4))
    shape: (2, 4)
    ┌──────────┬────────────┬─────────┬────────────┐
    │ question ┆ prediction ┆ correct ┆ confidence │
    │ ---      ┆ ---        ┆ ---     ┆ ---        │
    │ i64      ┆ i64        ┆ bool    ┆ f64        │
    ╞══════════╪════════════╪═════════╪════════════╡
    │ 1        ┆ 0          ┆ true    ┆ 0.8176     │
    │ 2        ┆ 1          ┆ false   ┆ 0.8808     │
    └──────────┴────────────┴─────────┴────────────┘
    """
    stacked = _stack(
        options,
        by=by,
        normalize=normalize,
        question=question,
        option=option,
        loglik=loglik,
        is_gold=is_gold,
        gold=gold,
        lengths={"chars": chars, "bytes": bytes, "tokens": tokens},
    )
    keys: list[str] = stacked.keys
    group: list[str] = stacked.group
    per_question = (
        _question_stats(stacked.rows, group=group, option=option, gold=gold)
        .select(
            *group,
            "options",
            "gold_options",
            pl.col(_PICK).alias("prediction"),
            # ln p(top) = −ln Σ exp(s − m): exact, finite even when p rounds to 1.
            (-pl.col(_LOGZ)).alias("log_confidence"),
            pl.col(_CORRECT).alias("correct"),
            *_STAT_FLAGS,
            *([_GOLD_VARIES] if gold is not None else []),
        )
        .sort(group)
    )
    per_question = per_question.with_columns(
        (pl.col("gold_options") == 0).alias(_NO_GOLD)
        if no_gold == "raise"
        else pl.lit(False).alias(_NO_GOLD),
    )
    if no_gold == "drop":
        per_question = per_question.filter(pl.col("gold_options") > 0)
    checks, flags = _question_checks(stacked, per_option=False)
    checked = check_rows(per_question, checks, keys=group, scope=_RAW, drop=flags)
    out = checked.with_columns(
        pl.col("scoring").cast(pl.String), pl.col("log_confidence").exp().alias("confidence")
    ).select(_columns(CHOICE_PREDICTIONS, keys, question=question))
    return return_like(options, out)


@check_arguments(normalize=NORMALIZE, no_gold=Options.of(NoGold))
def option_probabilities(
    options: Frame,
    *,
    question: str = "question",
    option: str = "option",
    loglik: str = "loglik",
    is_gold: str | None = "is_gold",
    gold: str | None = None,
    chars: str = "chars",
    bytes: str = "bytes",
    tokens: str = "tokens",
    by: str | Sequence[str] | None = None,
    normalize: str | Sequence[str] | None = None,
    no_gold: NoGold = "raise",
) -> Frame:
    """The all-options long form: every option's softmax probability and whether it is an answer.

    One row per (keys…, scoring, question, option), for all-probabilities calibration
    (``calibration_metrics(long, confidence="probability", correct="is_answer",
    by=[*keys, "scoring"])``), class-wise calibration (the same, with the option column
    added to ``by``: one reliability curve per option position) and the multi-class
    Brier score.

    Parameters
    ----------
    options, question, option, loglik, is_gold, gold, chars, bytes, tokens, by, normalize
        As :func:`choice_predictions`.
    no_gold
        As :func:`choice_predictions`; ``"wrong"`` keeps the question's options (none of
        them an answer).

    Returns
    -------
    DataFrame or LazyFrame
        Keys…, ``scoring``, the question and option columns, ``probability``,
        ``log_probability`` (exact ln p, Float64), ``is_answer`` (a gold option) and
        ``is_prediction`` (the option :func:`choice_predictions` picks; ties to the
        smallest option id). Sorted by keys, scoring, question, option.

    Raises
    ------
    TableError, ArgumentError, DataError
        As :func:`choice_predictions`.

    See Also
    --------
    choice_predictions
    calib_frames.multiclass.brier_multiclass : the multi-class Brier score per group.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import option_probabilities
    >>> opts = pl.DataFrame({"question": [1, 1], "option": ["A", "B"],
    ...                      "loglik": [-1.0, -1.0], "gold": ["B", "B"]})
    >>> option_probabilities(opts, gold="gold").select(
    ...     "option", "probability", "is_answer", "is_prediction")
    shape: (2, 4)
    ┌────────┬─────────────┬───────────┬───────────────┐
    │ option ┆ probability ┆ is_answer ┆ is_prediction │
    │ ---    ┆ ---         ┆ ---       ┆ ---           │
    │ str    ┆ f64         ┆ bool      ┆ bool          │
    ╞════════╪═════════════╪═══════════╪═══════════════╡
    │ A      ┆ 0.5         ┆ false     ┆ true          │
    │ B      ┆ 0.5         ┆ true      ┆ false         │
    └────────┴─────────────┴───────────┴───────────────┘
    """
    stacked = _stack(
        options,
        by=by,
        normalize=normalize,
        question=question,
        option=option,
        loglik=loglik,
        is_gold=is_gold,
        gold=gold,
        lengths={"chars": chars, "bytes": bytes, "tokens": tokens},
    )
    keys: list[str] = stacked.keys
    group: list[str] = stacked.group
    stats = _question_stats(stacked.rows, group=group, option=option, gold=gold)
    question_flags: list[str | pl.Expr] = [
        (pl.col(_DUP) > 0).alias(_DUP),
        _ALL_INF,
        ((pl.col("gold_options") == 0) & pl.lit(no_gold == "raise")).alias(_NO_GOLD),
        *([_GOLD_VARIES] if gold is not None else []),
    ]
    joined = stacked.rows.join(
        stats.select(*group, _TOP, _LOGZ, _PICK, "gold_options", *question_flags),
        on=group,
        how="left",
        nulls_equal=True,
    )
    long = joined.select(
        *group,
        option,
        (pl.col(_S) - pl.col(_TOP) - pl.col(_LOGZ)).alias("log_probability"),
        pl.col(_GOLD).alias("is_answer"),
        (pl.col(option) == pl.col(_PICK)).fill_null(False).alias("is_prediction"),
        pl.col(_LL).alias(_LL_EXAMPLE),
        pl.col("gold_options").alias(_GOLD_COUNT),
        _BAD_LL,
        _BAD_LEN,
        _BAD_OPT,
        _BAD_GOLD,
        _DUP,
        _ALL_INF,
        _NO_GOLD,
        *([_GOLD_VARIES] if gold is not None else []),
    )
    if no_gold == "drop":
        long = long.filter(pl.col(_GOLD_COUNT) > 0)
    long = long.sort([*group, option])
    checks, flags = _question_checks(stacked, per_option=True)
    checked = check_rows(long, checks, keys=[*group, option], scope=_RAW, drop=flags)
    out = checked.with_columns(
        pl.col("scoring").cast(pl.String), pl.col("log_probability").exp().alias("probability")
    ).select(_columns(OPTION_PROBABILITIES, keys, question=question, option=option))
    return return_like(options, out)
