r"""OpenAI-style chat completion responses with ``logprobs`` → token frames and answer confidences.

A chat completion requested with ``logprobs=true`` (and ``top_logprobs=k``) carries, per
choice, ``logprobs.content``: one entry per generated token with its ``token``,
``logprob`` (natural log), UTF-8 ``bytes`` and the ``top_logprobs`` alternatives (the k
most likely tokens at that position, the chosen one usually among them). Files may hold
one response per line (JSONL, as written by clients and by the Batch API, whose lines
wrap the response as ``{"custom_id": …, "response": {"body": {…}}}``), or a JSON array of
responses, or a single response.

* :func:`scan_openai_tokens`: one row per generated token: the response keys,
  ``position``, ``token``, ``logprob``, ``nll`` = −logprob, ``bytes`` (its UTF-8 length)
  and ``top_logprobs`` (list of {token, logprob}). Feed it to
  :func:`~calib_frames.perplexity` (``by=["model"]``: each row is one token) for the
  perplexity of the generated text, or to
  :func:`~calib_frames.sources.answer_confidence`.
* :func:`openai_answer_confidence`: per choice, the answer token (the first token that
  is not only whitespace, or a given position) with ``confidence`` = its probability,
  ``log_confidence`` = its exact logprob, the top-k alternatives and the probability
  mass they cover, next to the whole text's token count and NLL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.arguments import Integer, check_arguments
from calib_frames.exceptions import ReadError, TableError
from calib_frames.sources.paths import PathsLike, expand_paths
from calib_frames.sources.read_errors import first_bad_object, guarded_scan, refuse_records
from calib_frames.sources.text import clean_text
from calib_frames.validation import RowCheck, as_lazy, check_rows, working

__all__ = [
    "RESPONSE_KEYS",
    "openai_answer_confidence",
    "scan_openai_choices",
    "scan_openai_tokens",
]

RESPONSE_KEYS = ("file", "line", "custom_id", "id", "model", "choice")
"""The columns that identify one choice of one response in the frames of this module."""

_TOP_LOGPROB = pl.Struct({"token": pl.String, "logprob": pl.Float64, "bytes": pl.List(pl.Int64)})
_TOKEN = pl.Struct(
    {
        "token": pl.String,
        "logprob": pl.Float64,
        "bytes": pl.List(pl.Int64),
        "top_logprobs": pl.List(_TOP_LOGPROB),
    }
)
_CHOICE = pl.Struct(
    {
        "index": pl.Int64,
        "message": pl.Struct({"role": pl.String, "content": pl.String}),
        "logprobs": pl.Struct({"content": pl.List(_TOKEN)}),
        "finish_reason": pl.String,
    }
)
_RESPONSE: dict[str, pl.DataType] = {
    "id": pl.String(),
    "model": pl.String(),
    "created": pl.Int64(),
    "choices": pl.List(_CHOICE),
}
# working columns: the token entries of a choice; per choice the answer's alternatives,
# its row-check flags and the example of a bad logprob
_TOKENS, _TOP, _LOGGED = working("tokens"), working("top"), working("logged")
_BAD, _EXAMPLE, _MISSING, _NO_LOGPROBS = (
    working("bad"),
    working("example"),
    working("missing"),
    working("no_logprobs"),
)

_BATCH: dict[str, pl.DataType] = {
    "custom_id": pl.String(),
    "response": pl.Struct({"status_code": pl.Int64, "body": pl.Struct(_RESPONSE)}),
}


def _first_record(file: Path) -> tuple[str, Any]:
    """("jsonl" | "json", the first record) — read from the head of the file."""
    with file.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                return "jsonl", json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                if number == 1 and line.lstrip().startswith((b"[", b"{")):
                    break  # a pretty-printed JSON document
                raise ReadError(f"{file}, line {number}: malformed record ({error})") from error
    try:
        document = json.loads(file.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        line_no = getattr(error, "lineno", None)
        where = f", line {line_no}" if line_no else ""
        raise ReadError(f"{file}{where}: not valid JSON ({error})") from error
    if isinstance(document, list):
        return "json", document[0] if document else {}
    return "json", document


def _locate(file: Path, error: BaseException) -> ReadError:
    def check(number: int, line: bytes, record: dict[str, Any]) -> ReadError | None:
        try:
            pl.read_ndjson(line, schema=_BATCH if "response" in record else _RESPONSE)
        except pl.exceptions.PolarsError as wrong:
            reason = str(wrong).strip().splitlines()[0]
            return ReadError(f"{file}, line {number}: not a chat completion response ({reason})")
        return None

    bad = first_bad_object(file, what="a response", check=check)
    if bad is not None:
        return bad
    lines = str(error).strip().splitlines()
    return ReadError(f"{file}: cannot read responses ({lines[0] if lines else error!r})")


def _responses(file: Path) -> pl.LazyFrame:
    """The file's responses as rows: line, custom_id, id, model, choices."""
    kind, first = _first_record(file)
    if not isinstance(first, dict):
        raise ReadError(f"{file}: a response must be a JSON object, got {type(first).__name__}")
    batch = "response" in first and "choices" not in first
    if not batch and "choices" not in first:
        raise ReadError(
            f"{file}: not chat completion responses (its first record has no 'choices'); "
            "pass the responses file(s) only"
        )
    schema = _BATCH if batch else _RESPONSE
    if kind == "jsonl":
        frame = guarded_scan(
            lambda: pl.scan_ndjson(file, schema=schema, row_index_name="line", row_index_offset=1),
            name=f"openai {file.name}",
            locate=lambda _, error: _locate(file, error),
        )
    else:
        document = json.loads(file.read_bytes())
        records = document if isinstance(document, list) else [document]
        if not all(isinstance(r, dict) for r in records):
            raise ReadError(f"{file}: a JSON file must hold a response or an array of responses")
        try:
            frame = (
                pl.DataFrame(records, schema=schema, strict=False)
                .with_row_index("line", offset=1)
                .lazy()
            )
        except (pl.exceptions.PolarsError, TypeError, ValueError) as error:
            raise ReadError(f"{file}: not chat completion responses ({error})") from error
    line = pl.col("line").cast(pl.Int64)
    if batch:
        body = pl.col("response").struct.field("body")
        responses = frame.select(
            line,
            "custom_id",
            body.struct.field("id").alias("id"),
            body.struct.field("model").alias("model"),
            body.struct.field("choices").alias("choices"),
        )
    else:
        responses = frame.select(
            line, pl.lit(None, pl.String).alias("custom_id"), "id", "model", "choices"
        )
    # a response without choices would be dropped by the explode, silently
    failed = " (a Batch API request that failed has no response body: drop its line)"
    no_choices = (
        pl.col("choices").list.len() > 0,
        "a response without choices ('choices' is missing, null or empty)"
        + (failed if batch else ""),
    )
    return refuse_records(responses, file, [no_choices], line=lambda row: int(row["line"]))


def scan_openai_choices(paths: PathsLike) -> pl.LazyFrame:
    r"""One row per choice of every response: the generated text, for verbalised confidence.

    Parameters
    ----------
    paths
        ``.jsonl``/``.json`` files, globs or folders of them.

    Returns
    -------
    LazyFrame
        :data:`RESPONSE_KEYS`, ``content`` (the message text), ``finish_reason`` and
        ``tokens`` (UInt32: generated tokens with logprobs; 0 without them).

    Raises
    ------
    ReadError
        As :func:`scan_openai_tokens`.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from calib_frames.sources import scan_openai_choices
    >>> resp = {"id": "r1", "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
    ...         "message": {"role": "assistant", "content": "Red. I am 80% sure."}}]}
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = file.write_text(json.dumps(resp) + "\n")
    >>> scan_openai_choices(file).select("id", "content").collect().rows()
    [('r1', 'Red. I am 80% sure.')]
    """
    frames = []
    for file, _ in expand_paths(paths, suffixes=(".jsonl", ".ndjson", ".json")):
        choice = pl.col("choices")
        frames.append(
            _responses(file)
            .explode("choices")
            .filter(choice.is_not_null())
            .select(
                pl.lit(file.name, pl.String).alias("file"),
                "line",
                "custom_id",
                "id",
                "model",
                choice.struct.field("index").alias("choice"),
                choice.struct.field("message").struct.field("content").alias("content"),
                choice.struct.field("finish_reason").alias("finish_reason"),
                choice.struct.field("logprobs")
                .struct.field("content")
                .list.len()
                .fill_null(0)
                .cast(pl.UInt32)
                .alias("tokens"),
            )
        )
    return pl.concat(frames, how="vertical")


def scan_openai_tokens(paths: PathsLike) -> pl.LazyFrame:
    r"""One row per generated token of every response under ``paths`` (lazy for JSONL).

    Parameters
    ----------
    paths
        ``.jsonl``/``.json`` files, globs or folders of them.

    Returns
    -------
    LazyFrame
        ``file`` (name), ``line`` (1-based line, or position in a JSON array),
        ``custom_id`` (Batch API; else null), ``id``, ``model``, ``choice`` (index),
        ``position`` (UInt32, 0-based), ``token``, ``logprob``, ``nll`` (= −logprob),
        ``bytes`` (UInt32: the token's UTF-8 length) and ``top_logprobs``
        (list of struct {token, logprob, bytes}). Choices without logprobs have no rows.

    Raises
    ------
    ReadError
        Unreadable files or malformed lines (file and line), now or at collection.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from calib_frames.sources import scan_openai_tokens
    >>> top = [{"token": "B", "logprob": -0.1}, {"token": "A", "logprob": -2.5}]
    >>> tok = {"token": "B", "logprob": -0.1, "bytes": [66], "top_logprobs": top}
    >>> resp = {"id": "r1", "model": "m", "choices": [{"index": 0,
    ...         "message": {"role": "assistant", "content": "B"},
    ...         "logprobs": {"content": [tok]}}]}
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = file.write_text(json.dumps(resp) + "\n")
    >>> scan_openai_tokens(file).select("id", "token", "nll").collect().rows()
    [('r1', 'B', 0.1)]
    """
    frames = []
    for file, _ in expand_paths(paths, suffixes=(".jsonl", ".ndjson", ".json")):
        responses = _responses(file)
        tokens = (
            responses.explode("choices")
            .filter(pl.col("choices").is_not_null())
            .select(
                "line",
                "custom_id",
                "id",
                "model",
                pl.col("choices").struct.field("index").alias("choice"),
                pl.col("choices").struct.field("logprobs").struct.field("content").alias(_TOKENS),
            )
            .filter(pl.col(_TOKENS).list.len() > 0)
            .with_columns(
                pl.int_ranges(pl.col(_TOKENS).list.len(), dtype=pl.UInt32).alias("position")
            )
            .explode([_TOKENS, "position"])
        )
        entry = pl.col(_TOKENS)
        token = entry.struct.field("token")
        frames.append(
            tokens.select(
                pl.lit(file.name, pl.String).alias("file"),
                "line",
                "custom_id",
                "id",
                "model",
                "choice",
                "position",
                token.alias("token"),
                entry.struct.field("logprob").alias("logprob"),
                (-entry.struct.field("logprob")).alias("nll"),
                pl.coalesce(entry.struct.field("bytes").list.len(), token.str.len_bytes())
                .cast(pl.UInt32)
                .alias("bytes"),
                entry.struct.field("top_logprobs").alias("top_logprobs"),
            )
        )
    return pl.concat(frames, how="vertical")


@check_arguments(position=Integer(0) | None)
def openai_answer_confidence(
    tokens: pl.DataFrame | pl.LazyFrame | PathsLike,
    *,
    position: int | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    r"""Per choice: the answer token's probability as confidence, and its top-k alternatives.

    Parameters
    ----------
    tokens
        The frame of :func:`scan_openai_tokens`, or paths to read with it.
    position
        Which generated token is the answer (0-based). ``None``: the first token that is
        not only whitespace (a one-letter or one-word answer).

    Returns
    -------
    DataFrame or LazyFrame
        :data:`RESPONSE_KEYS`, ``answer`` (the token through
        :func:`~calib_frames.sources.text.clean_text`: NFKC, zero-width and control
        characters removed, then stripped; so a ``"B\u200b"`` or ``"\x00B"`` token
        reads ``"B"``, as do the alternatives), ``position``,
        ``confidence`` = exp(logprob), ``log_confidence`` = logprob (exact),
        ``alternatives`` (the top-k tokens, stripped, most likely first),
        ``alternative_logprobs``, ``top_mass`` (Σ exp of the top-k logprobs: the
        probability the alternatives cover; null when the token was logged without
        alternatives, ``top_logprobs: []``), ``tokens`` (generated tokens of the choice),
        ``nll_sum`` and ``perplexity`` = exp(nll_sum / tokens) of the generated text.
        Lazy for a LazyFrame or paths, eager for a DataFrame.

    Raises
    ------
    ArgumentError
        A ``position`` that is not a non-negative integer.
    TableError
        A frame that is not one of :func:`scan_openai_tokens`.
    DataError
        At collection: a choice with no answer token at ``position`` (too short, or all
        whitespace), a choice logged without logprobs (read from paths), or a logprob
        that is null, NaN or > 0.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import openai_answer_confidence
    >>> top = [{"token": " B", "logprob": -0.2, "bytes": None},
    ...        {"token": " A", "logprob": -1.8, "bytes": None}]
    >>> toks = pl.DataFrame({"file": "f", "line": [1, 1], "custom_id": None, "id": "r",
    ...     "model": "m", "choice": 0, "position": [0, 1], "token": ["\n", " B"],
    ...     "logprob": [-0.01, -0.2], "nll": [0.01, 0.2], "bytes": [1, 2],
    ...     "top_logprobs": [[], top]})
    >>> row = openai_answer_confidence(toks).row(0, named=True)
    >>> row["answer"], round(row["confidence"], 4), row["alternatives"]
    ('B', 0.8187, ['B', 'A'])
    """
    keys = list(RESPONSE_KEYS)
    logged: pl.LazyFrame | None = None
    if isinstance(tokens, pl.DataFrame | pl.LazyFrame):
        frame: pl.DataFrame | pl.LazyFrame = tokens
        needed = [*keys, "position", "token", "logprob", "nll", "top_logprobs"]
        names = as_lazy(tokens).collect_schema().names()
        missing = [c for c in needed if c not in names]
        if missing:
            raise TableError(
                f"column not found: {missing}; openai_answer_confidence takes the frame of "
                f"scan_openai_tokens (or paths); available columns: {names}"
            )
    else:
        frame = scan_openai_tokens(tokens)
        # every choice of the files, so that one logged without logprobs is not just absent
        logged = scan_openai_choices(tokens).select(*keys, pl.col("tokens").alias(_LOGGED))
    lazy = as_lazy(frame)
    token = clean_text(pl.col("token")).str.strip_chars()
    blank = token.str.len_chars() == 0
    if position is None:
        is_answer = ~blank & (
            pl.col("position") == pl.col("position").filter(~blank).min().over(keys)
        )
    else:
        is_answer = pl.col("position") == position
    lp = pl.col("logprob")
    bad = (lp.is_nan() | (lp > 0)).fill_null(True)
    top = pl.col("top_logprobs")
    answers = lazy.group_by(keys).agg(
        token.filter(is_answer).first().alias("answer"),
        pl.col("position").filter(is_answer).first().alias("position"),
        lp.filter(is_answer).first().alias("log_confidence"),
        top.filter(is_answer).first().alias(_TOP),
        pl.len().cast(pl.UInt32).alias("tokens"),
        pl.col("nll").sum().alias("nll_sum"),
        bad.sum().alias(_BAD),
        lp.filter(bad).first().alias(_EXAMPLE),
    )
    no_logprobs = pl.lit(False)
    if logged is not None:
        answers = logged.join(answers, on=keys, how="left", nulls_equal=True)
        no_logprobs = pl.col(_LOGGED) == 0
    answers = answers.with_columns(
        no_logprobs.alias(_NO_LOGPROBS),
        (pl.col("answer").is_null() & ~no_logprobs).alias(_MISSING),
        pl.col(_TOP)
        .list.eval(clean_text(pl.element().struct.field("token")).str.strip_chars())
        .alias("alternatives"),
        pl.col(_TOP).list.eval(pl.element().struct.field("logprob")).alias("alternative_logprobs"),
    ).sort(keys)
    checks = [
        RowCheck(
            "logprob",
            "null, NaN or > 0 (a log-probability is ≤ 0)",
            pl.col(_BAD),
            total=pl.col("tokens").sum(),
            value=_EXAMPLE,
            unit="token rows",
        ),
        RowCheck("token", _missing_answer(position), pl.col(_MISSING), show_value=False,
                 unit="choices"),
        RowCheck(
            "logprobs",
            "without logprobs (request them with logprobs=true, top_logprobs=k)",
            pl.col(_NO_LOGPROBS),
            show_value=False,
            unit="choices",
        ),
    ]  # fmt: skip
    checked = check_rows(answers, checks, keys=keys)
    out = checked.select(
        *keys,
        "answer",
        "position",
        pl.col("log_confidence").exp().alias("confidence"),
        "log_confidence",
        "alternatives",
        "alternative_logprobs",
        pl.when(pl.col("alternative_logprobs").list.len() > 0)
        .then(pl.col("alternative_logprobs").list.eval(pl.element().exp()).list.sum())
        .alias("top_mass"),
        "tokens",
        "nll_sum",
        (pl.col("nll_sum") / pl.col("tokens")).exp().alias("perplexity"),
    )
    if isinstance(frame, pl.DataFrame):
        return out.collect()
    return out


def _missing_answer(position: int | None) -> str:
    if position is None:
        return "without a token that is not whitespace (no answer token)"
    return f"without a token at position {position}"
