r"""inspect_ai evaluation logs (``.eval`` and ``.json``) → prediction rows per sample and scorer.

inspect_ai (``inspect eval …``) writes one log per (task, model) run, in one of two forms:

* ``.eval``: a zip archive of compact JSON members: ``header.json`` (``eval``, ``results``,
  …), one ``samples/<id>_epoch_<n>.json`` per sample and epoch, ``summaries.json``,
  ``reductions.json`` and a ``_journal/`` folder. Since inspect_ai 0.3.4x the members are
  compressed with **zstd** (zip method 93), which Python's ``zipfile`` lists but cannot
  read before Python 3.14; they are decompressed here with ``zstandard`` from the raw
  member bytes (after the local file header). Stored and deflated members (older logs)
  are read by ``zipfile`` itself. Only ``header.json`` and ``samples/`` are read. What
  a member may expand to is bounded: the members read from one archive may decompress to
  at most :data:`EXPANSION_LIMIT` (1,000) times the archive's size in all (a real log
  expands about 5 times; a zip bomb is refused in one line, before it reaches memory),
  and a member that decompresses to another size than the archive lists (a zstd frame
  cut short) is a ReadError naming archive and member.
* ``.json``: one document with the same header keys and a ``samples`` list, opening with
  ``{"version": …, "status": …, "eval": …``. In a folder, the ``.json`` files that do not
  open so (inspect's own ``logs.json`` and ``eval-set.json``, other tools' files) are
  not logs and are left out; named on their own, they are an error.

Every sample is parsed by polars (``read_ndjson`` over the decompressed members, one
member per line; ``read_json`` for a ``.json`` log) with a schema of the fields used,
so the transcript (``events``, ``attachments``) is skipped by the parser.

**What a row is.** One row per (log, sample, epoch, scorer): every epoch is its own
prediction (its own answer and confidence), and every scorer its own outcome, with the
scorer as a key. A sample that a scorer did not score has no row for it. A sample read
twice (the same model, task, run, sample id and epoch: a copy of a log, a sample stored
twice in one archive) is a ReadError naming both places. A log is ``complete`` when its
run finished (``status`` ``"success"``) over every sample of its data set
(``eval.dataset.samples``): a run of part of it (``--limit``, ``--sample-id``) is not.

**Correctness.** ``score`` is inspect's ``value_to_float`` of
``samples[].scores[scorer].value``: ``"C"`` → 1, ``"P"`` (partial credit) → 0.5,
``"I"`` and ``"N"`` (no answer) → 0, ``"yes"``/``"true"`` → 1, ``"no"``/``"false"`` → 0,
a number as is; any other value (a dict or list of values, another word) is a
ReadError naming file, member and scorer. ``correct`` is **full credit only**
(``score == 1``): a partial-credit answer is not correct (its ``score`` keeps the 0.5).
inspect's own ``accuracy`` (and ``mean``) is the mean over samples of the epoch mean of
``score`` (its default ``mean`` reducer): ``group_by("sample").mean()`` then ``mean()``.

**Confidence** (null when the sample has no logprobs: the run did not ask for them, or
the answer is empty; inspect then omits the key or writes ``"content": []``), from
``output.choices[0].logprobs.content[]``:

* multiple choice (the sample has ``choices``): the *answer token* is the last generated
  token whose text, cleaned as the OpenAI reader cleans it
  (:func:`~calib_frames.sources.text.clean_text`: NFKC, zero-width and control
  characters removed, then stripped, so ``"B\u200b"`` and fullwidth ``"Ｂ"`` are B), is
  one of the option letters (``A`` … the n-th letter);
  ``confidence`` = exp(its ``logprob``), ``log_confidence`` = its ``logprob``. From that
  token's ``top_logprobs``: ``letter_mass`` = Σ exp(logprob) over the alternatives that
  are option letters (``" B"`` and ``"B"`` both count for B), and
  ``letter_confidence`` = p(answer letter) / ``letter_mass``, the distribution over the
  letters renormalised; ``1 − letter_mass`` is the mass the letters do not account for
  (other tokens, and letters outside the top k: ``letters_missing`` counts those).
  No letter token (an answer outside the format): null.
* free answers: the probability of the whole completion, ``confidence`` =
  exp(Σ logprob), ``log_confidence`` = Σ logprob (the letter columns are null).

:func:`scan_inspect_samples` gives the prediction rows (one per sample, epoch and
scorer); :func:`scan_inspect_options` the options frame of the multiple-choice samples
(one row per option letter with its probability at the answer token), for
:func:`~calib_frames.sources.choice_predictions` and
:func:`~calib_frames.multiclass.brier_multiclass`.
"""

from __future__ import annotations

import io
import json
import re
import struct
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import polars as pl

from calib_frames.exceptions import ReadError
from calib_frames.sources.paths import PathsLike, expand_paths, files_under, path_items
from calib_frames.sources.read_errors import refuse_repeats
from calib_frames.sources.text import clean_text
from calib_frames.validation import working

__all__ = [
    "EXPANSION_LIMIT",
    "KEYS",
    "found_in",
    "read_inspect_logs",
    "scan_inspect_options",
    "scan_inspect_samples",
]

KEYS = ("model", "task", "run", "scorer")
"""The group keys of the frames read from inspect logs (``run`` is ``eval.created``)."""

_LOG_COLUMNS = ("model", "task", "run", "log", "complete")
"""The columns naming the log a sample row comes from, and whether that log is complete."""

EXPANSION_LIMIT = 1000
"""The most an ``.eval`` archive's members may decompress to in all, in times its size."""

_ZSTD = 93  # zip compression method of zstd
_LOG_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, …, file name length, extra length
_TOP = pl.List(pl.Struct({"token": pl.String, "logprob": pl.Float64}))
_TOKEN = pl.Struct({"token": pl.String, "logprob": pl.Float64, "top_logprobs": _TOP})
_OUTPUT = pl.Struct(
    {
        "completion": pl.String,
        "choices": pl.List(pl.Struct({"logprobs": pl.Struct({"content": pl.List(_TOKEN)})})),
    }
)
_SCORE = pl.Struct({"value": pl.String, "answer": pl.String})
_HEADER = pl.Struct(
    {
        "task": pl.String,
        "model": pl.String,
        "created": pl.String,
        "eval_id": pl.String,
        "dataset": pl.Struct({"samples": pl.Int64}),
        "scorers": pl.List(pl.Struct({"name": pl.String})),
    }
)
_LETTERS = {chr(65 + i): i for i in range(26)}
_SCORES = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}  # inspect's value_to_float: as written
_WORD_SCORES = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}  # ... and in any case
_GOLDS, _PLACE = working("golds"), working("place")
_ROW, _TOKENS, _POS, _LETTER, _N = (
    working("row"),
    working("tokens"),
    working("position"),
    working("letter"),
    working("options"),
)

LOG_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String(),
    "task": pl.String(),
    "run": pl.String(),
    "eval_id": pl.String(),
    "log": pl.String(),
    "scorers": pl.List(pl.String),
    "file": pl.String(),
}


def _is_log_json(path: Path) -> bool:
    """A ``.json`` file that opens as inspect's logs do: ``{"version": n, "status": …``.

    With ``"eval"`` in its first 4 KiB; inspect's ``logs.json`` (keyed by file name) and
    ``eval-set.json`` do not open so.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return bool(_LOG_HEAD.match(head)) and b'"eval"' in head


def _is_log(path: Path) -> bool:
    suffix = path.suffix.lower()
    return suffix == ".eval" or (suffix == ".json" and _is_log_json(path))


def found_in(path: Path) -> bool:
    """Whether ``path`` is an inspect log, or a folder holding one (searched recursively).

    A log is an ``.eval`` archive, or a ``.json`` file that opens as inspect's logs do.
    """
    if path.is_file():
        return _is_log(path)
    return path.is_dir() and any(_is_log(file) for file in files_under(path))


def _log_files(paths: PathsLike) -> list[Path]:
    """The logs under ``paths``: every file named on its own, and in folders the logs.

    A ``.json`` file in a folder that does not open as inspect's logs do is left out; one
    named on its own is refused when read.
    """
    named = {Path(item) for item in path_items(paths) if Path(item).is_file()}
    files = expand_paths(paths, suffixes=(".eval", ".json"))
    logs = [file for file, _ in files if file in named or _is_log(file)]
    if not logs:
        raise ReadError(
            f"{', '.join(map(str, path_items(paths)))}: no inspect log (an .eval archive, or "
            '.json opening {"version": …, "status": …) found'
        )
    return logs


def _sample_schema(scorers: list[str]) -> dict[str, pl.DataType]:
    return {
        "id": pl.String(),
        "epoch": pl.Int64(),
        "choices": pl.List(pl.String),
        "target": pl.String(),
        "output": _OUTPUT,
        "scores": pl.Struct({name: _SCORE for name in scorers}),
    }


class _Archive:
    """An open ``.eval`` archive and what its members may still decompress to."""

    def __init__(self, file: Path, raw: BinaryIO, archive: zipfile.ZipFile, size: int) -> None:
        self.file, self.raw, self.archive = file, raw, archive
        self.bound = EXPANSION_LIMIT * size
        self.left = self.bound

    def info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self.archive.getinfo(name)
        except KeyError:
            raise ReadError(
                f"{self.file}, member {name}: missing (not a complete inspect log)"
            ) from None

    def read(self, info: zipfile.ZipInfo) -> bytes:
        """The decompressed bytes of one member (zstd by hand, the rest by ``zipfile``)."""
        where = f"{self.file}, member {info.filename}"
        if info.file_size > self.left:
            raise ReadError(
                f"{where}: the archive's members expand past {self.bound:,} bytes, "
                f"{EXPANSION_LIMIT:,} times its size (a real log expands about 5 times: a "
                "zip bomb, or a damaged archive?)"
            )
        if info.compress_type == _ZSTD:
            data = self._zstd(info, where)
        else:
            try:
                data = self.archive.read(info)  # zipfile stops at the listed size
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as error:
                raise ReadError(f"{where}: cannot decompress it ({error})") from error
        self.left -= len(data)
        return data

    def _zstd(self, info: zipfile.ZipInfo, where: str) -> bytes:
        """A zstd member, decompressed in chunks up to the size the archive lists.

        Chunks of at most 1 MiB, one byte past the listed size for a small member: a
        frame that expands further is stopped there.
        """
        import zstandard  # imported on the first zstd member, not with the package

        raw = self.raw
        try:
            raw.seek(info.header_offset)
            signature, name_length, extra_length = _LOCAL_HEADER.unpack(raw.read(30))
            raw.seek(name_length + extra_length, io.SEEK_CUR)
            data = raw.read(info.compress_size)
        except (OSError, struct.error) as error:
            raise ReadError(f"{where}: cannot decompress it ({error})") from error
        if signature != b"PK\x03\x04":
            raise ReadError(f"{where}: no local file header at its offset")
        if len(data) < info.compress_size:
            raise ReadError(f"{where}: cut short (a truncated archive?)")
        chunks, size = [], 0
        try:
            chunk_size = min(info.file_size + 1, 1 << 20)
            decompressor = zstandard.ZstdDecompressor()
            reader = decompressor.read_to_iter(io.BytesIO(data), write_size=chunk_size)
            for chunk in reader:  # a loop over chunks: at most one chunk past the size
                size += len(chunk)
                if size > info.file_size:
                    break
                chunks.append(chunk)
        except zstandard.ZstdError as error:
            raise ReadError(f"{where}: cannot decompress it ({error})") from error
        if size != info.file_size:
            got = f"more than {info.file_size:,}" if size > info.file_size else f"{size:,}"
            raise ReadError(
                f"{where}: its zstd frame decompresses to {got} bytes, the archive lists "
                f"{info.file_size:,} (a frame cut short, or a damaged archive)"
            )
        return b"".join(chunks)


def _json_member(file: Path, name: str, data: bytes) -> Any:
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ReadError(f"{file}, member {name}: malformed JSON ({error})") from error


def _header_row(file: Path, header: Any, where: str) -> dict[str, Any]:
    evaluation = header.get("eval") if isinstance(header, dict) else None
    if not isinstance(evaluation, dict) or not isinstance(evaluation.get("model"), str):
        raise ReadError(f"{file}{where}: not an inspect log header (no eval.model)")
    results = header.get("results") or {}
    scorers = [s.get("name") for s in results.get("scores") or []] or [
        s.get("name") for s in evaluation.get("scorers") or []
    ]
    dataset = evaluation.get("dataset") or {}
    return {
        "model": evaluation["model"],
        "task": evaluation.get("task"),
        "run": evaluation.get("created"),
        "eval_id": evaluation.get("eval_id"),
        "log": file.name,
        "scorers": sorted({s for s in scorers if isinstance(s, str)}),
        "file": str(file),
        "status": header.get("status"),
        "dataset_samples": dataset.get("samples") if isinstance(dataset, dict) else None,
    }


def _read_eval(file: Path, *, samples: bool = True) -> tuple[dict[str, Any], pl.DataFrame]:
    """The header row of an ``.eval`` archive and (with ``samples``) its sample frame.

    Every ``samples/`` entry is read, a name stored twice included (the sample it holds
    is then refused as read twice); the frame's place column names the member.
    """
    try:
        raw = file.open("rb")
        size = file.stat().st_size
    except OSError as error:
        raise ReadError(f"{file}: cannot read it ({error})") from error
    with raw:
        try:
            archive = zipfile.ZipFile(raw)
        except (zipfile.BadZipFile, OSError) as error:
            raise ReadError(
                f"{file}: not a zip archive (an .eval log cut short?) ({error})"
            ) from error
        with archive:
            members = _Archive(file, raw, archive, size)
            data = members.read(members.info("header.json"))
            header = _header_row(
                file, _json_member(file, "header.json", data), ", member header.json"
            )
            infos = sorted(
                (
                    info
                    for info in archive.infolist()
                    if samples
                    and info.filename.startswith("samples/")
                    and info.filename.endswith(".json")
                ),
                key=lambda info: info.filename,
            )
            texts = [members.read(info) for info in infos]  # a loop over members
    names = [info.filename for info in infos]
    for name, text in zip(names, texts, strict=True):
        if not text.strip():
            raise ReadError(f"{file}, member {name}: empty (a sample must be a JSON object)")
    schema = _sample_schema(header["scorers"])
    try:
        frame = pl.read_ndjson(io.BytesIO(b"\n".join(texts)), schema=schema)
    except pl.exceptions.PolarsError as error:
        for name, text in zip(names, texts, strict=True):  # error path: name the member
            if not isinstance(_json_member(file, name, text), dict):
                raise ReadError(f"{file}, member {name}: a sample must be a JSON object") from None
        raise ReadError(f"{file}: samples not readable ({str(error).splitlines()[0]})") from None
    places = [f"{file}, member {name}" for name in names]
    return header, frame.with_columns(pl.Series(_PLACE, places, dtype=pl.String))


def _read_json(file: Path) -> tuple[dict[str, Any], pl.DataFrame]:
    try:
        text = file.read_bytes()
    except OSError as error:
        raise ReadError(f"{file}: cannot read it ({error})") from error
    head_schema = {
        "status": pl.String(),
        "eval": _HEADER,
        "results": pl.Struct({"scores": pl.List(pl.Struct({"name": pl.String}))}),
    }
    try:
        head = pl.read_json(io.BytesIO(text), schema=head_schema).row(0, named=True)
    except pl.exceptions.PolarsError:
        try:
            json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            line = getattr(error, "lineno", None)
            where = f", line {line}" if line else ""
            raise ReadError(f"{file}{where}: malformed JSON ({error})") from error
        raise ReadError(f"{file}: not an inspect log (no eval header)") from None
    header = _header_row(file, head, "")
    schema = {"samples": pl.List(pl.Struct(_sample_schema(header["scorers"])))}
    try:
        samples = pl.read_json(io.BytesIO(text), schema=schema).explode("samples").unnest("samples")
    except pl.exceptions.PolarsError as error:
        _refuse_values(json.loads(text).get("samples"), header["scorers"], file)  # error path
        raise ReadError(f"{file}: samples not readable ({str(error).splitlines()[0]})") from None
    place = pl.format("{}, samples[{}]", pl.lit(str(file)), pl.int_range(pl.len()))
    return header, samples.with_columns(place.alias(_PLACE)).filter(pl.col("id").is_not_null())


def _refuse_values(samples: Any, scorers: list[str], file: Path) -> None:
    """Name the first score value of a ``.json`` log that is a dict or a list (error path)."""
    for index, sample in enumerate(samples if isinstance(samples, list) else []):
        scores = sample.get("scores") if isinstance(sample, dict) else None
        for scorer in scorers:
            score = scores.get(scorer) if isinstance(scores, dict) else None
            value = score.get("value") if isinstance(score, dict) else None
            if isinstance(value, dict | list):
                _refuse_value(f"{file}, samples[{index}]", scorer, json.dumps(value))


def _refuse_value(place: str, scorer: str, value: str) -> None:
    shown = value if len(value) <= 60 else value[:57] + "..."
    raise ReadError(
        f"{place}: scores.{scorer}.value is {shown}; expected one outcome: C, P, I, N, "
        "yes/no/true/false or a number"
    )


def _read(file: Path) -> tuple[dict[str, Any], pl.DataFrame]:
    return _read_eval(file) if file.suffix.lower() == ".eval" else _read_json(file)


def read_inspect_logs(paths: PathsLike) -> pl.DataFrame:
    """The inspect logs under ``paths``: one row per log file (headers only).

    Parameters
    ----------
    paths
        ``.eval``/``.json`` log files, globs or folders of them (searched recursively).

    Returns
    -------
    DataFrame
        ``model`` (``eval.model``, with its provider: ``mockllm/calib-sharp``), ``task``
        (``eval.task``), ``run`` (``eval.created``, an ISO time that sorts as time),
        ``eval_id``, ``log`` (file name), ``scorers`` (the scorer names) and ``file``,
        sorted by model, task, run.

    Raises
    ------
    ReadError
        A file that is not an inspect log: not a zip archive, no ``header.json`` member,
        malformed JSON (file and member, or file and line); a member cut short or
        expanding past :data:`EXPANSION_LIMIT` times the archive's size; no log found.

    Examples
    --------
    >>> from calib_frames.sources import read_inspect_logs
    >>> read_inspect_logs("data/inspect_ai/logs").select("task", "scorers").row(0)
    ('calib_colors_mc', ['choice'])
    """
    rows = []
    for file in _log_files(paths):  # a loop over files
        eval_log = file.suffix.lower() == ".eval"
        rows.append(_read_eval(file, samples=False)[0] if eval_log else _read_json(file)[0])
    return pl.DataFrame(rows, schema=LOG_SCHEMA, orient="row").sort("model", "task", "run")


def _log_frames(
    header: dict[str, Any], samples: pl.DataFrame, offset: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One log's samples (keys, row id from ``offset``) and its long score rows."""
    frame = samples.with_row_index(_ROW, offset=offset)
    content = (
        pl.col("output").struct.field("choices").list.first().struct.field("logprobs")
    ).struct.field("content")
    keys = [pl.lit(header[key], pl.String).alias(key) for key in ("model", "task", "run", "log")]
    size = header["dataset_samples"]
    whole = size is None or frame["id"].n_unique() >= size
    complete = header["status"] in (None, "success") and whole
    base = frame.select(
        *keys,
        pl.lit(complete).alias("complete"),
        _PLACE,
        _ROW,
        pl.col("id").alias("sample"),
        "epoch",
        pl.col("choices").list.len().fill_null(0).alias(_N),
        "choices",
        "target",
        pl.col("output").struct.field("completion").alias("completion"),
        content.alias(_TOKENS),
    )
    scores = [pl.DataFrame(schema={_ROW: pl.UInt32, _PLACE: pl.String, "scorer": pl.String,
                                   "value": pl.String, "answer": pl.String})]  # fmt: skip
    for scorer in header["scorers"]:  # a loop over the log's scorers (columns)
        score = pl.col("scores").struct.field(scorer)
        scores.append(
            frame.select(
                _ROW,
                _PLACE,
                pl.lit(scorer, pl.String).alias("scorer"),
                score.struct.field("value").alias("value"),
                score.struct.field("answer").alias("answer"),
            ).filter(pl.col("value").is_not_null())
        )
    return base, pl.concat(scores, how="vertical")


def _score(value: pl.Expr) -> pl.Expr:
    """Inspect's ``value_to_float`` of a score value written as text (null: none of its forms)."""
    return pl.coalesce(
        value.replace_strict(_SCORES, default=None, return_dtype=pl.Float64),
        value.str.to_lowercase().replace_strict(
            _WORD_SCORES, default=None, return_dtype=pl.Float64
        ),
        value.cast(pl.Float64, strict=False),
    )


def _tokens(base: pl.LazyFrame) -> pl.LazyFrame:
    """One row per generated token: its position, logprob, alternatives and option index."""
    return (
        base.select(_ROW, _N, _TOKENS)
        .filter(pl.col(_TOKENS).list.len() > 0)
        .with_columns(pl.int_ranges(pl.col(_TOKENS).list.len()).alias(_POS))
        .explode([_TOKENS, _POS])
        .select(
            _ROW,
            _N,
            _POS,
            pl.col(_TOKENS).struct.field("logprob").alias("logprob"),
            pl.col(_TOKENS).struct.field("top_logprobs").alias("top"),
            _letter(pl.col(_TOKENS).struct.field("token")).alias(_LETTER),
        )
    )


def _answer_letters(tokens: pl.LazyFrame) -> pl.LazyFrame:
    """Per multiple-choice sample its answer token: the last that is an option letter."""
    return (
        tokens.filter(pl.col(_LETTER) < pl.col(_N))
        .sort(_ROW, _POS)
        .group_by(_ROW)
        .agg(pl.col("logprob", "top", _LETTER, _N).last())
    )


def _letter_alternatives(letters: pl.LazyFrame) -> pl.LazyFrame:
    """The answer token's alternatives that are option letters: row, letter, alt, p."""
    return (
        letters.select(_ROW, _LETTER, _N, "top")
        .explode("top")
        .select(
            _ROW,
            _LETTER,
            _N,
            _letter(pl.col("top").struct.field("token")).alias("alt"),
            pl.col("top").struct.field("logprob").exp().alias("p"),
        )
        .filter(pl.col("alt") < pl.col(_N))
    )


def _rows(base: pl.LazyFrame, scored: pl.LazyFrame) -> pl.LazyFrame:
    """The prediction rows of every log at once (see the module docstring)."""
    tokens = _tokens(base)
    free = tokens.filter(pl.col(_N) == 0).group_by(_ROW).agg(pl.col("logprob").sum())
    letters = _answer_letters(tokens)
    alternatives = (
        _letter_alternatives(letters)
        .group_by(_ROW)
        .agg(
            pl.col("p").sum().alias("letter_mass"),
            pl.col("p").filter(pl.col("alt") == pl.col(_LETTER)).sum().alias("answer_mass"),
            (pl.col(_N).first() - pl.col("alt").n_unique())
            .cast(pl.UInt32)
            .alias("letters_missing"),
        )
    )
    logprob = pl.coalesce(pl.col("letter_logprob"), pl.col("free_logprob"))
    confident = (
        base.join(free.rename({"logprob": "free_logprob"}), on=_ROW, how="left")
        .join(letters.select(_ROW, pl.col("logprob").alias("letter_logprob")), on=_ROW, how="left")
        .join(alternatives, on=_ROW, how="left")
        .select(
            *_LOG_COLUMNS,
            _ROW,
            "sample",
            "epoch",
            "completion",
            logprob.exp().alias("confidence"),
            logprob.alias("log_confidence"),
            (pl.col("answer_mass") / pl.col("letter_mass")).alias("letter_confidence"),
            "letter_mass",
            "letters_missing",
        )
    )
    return (
        scored.join(confident, on=_ROW, how="inner")
        .select(
            *_LOG_COLUMNS,
            "scorer",
            "sample",
            "epoch",
            "value",
            "score",
            (pl.col("score") == 1.0).alias("correct"),
            "answer",
            "completion",
            "confidence",
            "log_confidence",
            "letter_confidence",
            "letter_mass",
            "letters_missing",
        )
        .sort(*KEYS, "log", "sample", "epoch")
    )


def _letter(token: pl.Expr) -> pl.Expr:
    r"""The option index of a token that is a capital letter once cleaned (else null).

    Cleaned as every reader compares answer text (:func:`~calib_frames.sources.text.
    clean_text`, then stripped): ``"B\u200b"``, ``"\x00B"`` and fullwidth ``"Ｂ"`` are B.
    """
    return (
        clean_text(token)
        .str.strip_chars()
        .replace_strict(_LETTERS, default=None, return_dtype=pl.Int64)
        .cast(pl.UInt32)
    )


def scan_inspect_samples(paths: PathsLike) -> pl.LazyFrame:
    r"""One prediction row per (log, scorer, sample, epoch) of the inspect logs under ``paths``.

    Each log is read (and an ``.eval`` archive decompressed) when this is called: zip
    members cannot be scanned in place; the frame is lazy for what follows. How rows,
    scores and confidences are defined: see the module docstring
    (:mod:`calib_frames.sources.inspect_ai`).

    Parameters
    ----------
    paths
        ``.eval``/``.json`` log files, globs or folders of them.

    Returns
    -------
    LazyFrame
        Prediction rows: ``model``, ``task``, ``run`` (``eval.created``), ``log`` (file
        name), ``complete`` (the run finished over every sample of its data set),
        ``scorer``, ``sample`` (String id), ``epoch`` (1-based), ``value``
        (inspect's score value as text), ``score`` (Float64: C 1, P 0.5, I/N 0, numbers
        as is), ``correct`` (Boolean: full credit), ``answer`` (the scorer's extracted
        answer), ``completion``, ``confidence``, ``log_confidence`` (null without
        logprobs), ``letter_confidence``, ``letter_mass`` and ``letters_missing``
        (multiple choice only); sorted by keys, sample, epoch. Feed it to
        :func:`~calib_frames.calibration_metrics` with ``by=["model", "task", "scorer"]``
        and ``log_confidence="log_confidence"`` after dropping the rows without a
        confidence (``.drop_nulls("confidence")``), or with
        ``confidence="letter_confidence"``.

    Raises
    ------
    ReadError
        As :func:`read_inspect_logs`; samples that do not parse, a score value that is no
        outcome, a sample read twice (file and member, each place).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import scan_inspect_samples
    >>> rows = scan_inspect_samples("data/inspect_ai/logs").collect()
    >>> rows.group_by("log", "scorer").agg(pl.col("score").mean()).sort("log", "scorer").row(0)
    ('2026-12-01T21-55-56-00-00_calib-colors-mc_MEdieyqx4JuFjXyJAtZVNc.eval', 'choice', 0.675)
    """
    base, scored = _logs(paths)
    return _rows(base, scored)


def _logs(paths: PathsLike) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The samples and the long score rows of every log under ``paths``, each sample once."""
    bases, scores, offset = [], [], 0
    for file in _log_files(paths):  # a loop over files
        base, scored = _log_frames(*_read(file), offset)
        bases.append(base)
        scores.append(scored)
        offset += base.height
    base = pl.concat(bases)
    refuse_repeats(
        base,
        ["model", "task", "run", "sample", "epoch"],
        place=lambda row: row[_PLACE],
        what="inspect sample",
    )
    scored = pl.concat(scores).with_columns(_score(pl.col("value")).alias("score"))
    unknown = scored.filter(pl.col("score").is_null()).head(1)
    if unknown.height:
        _refuse_value(unknown[_PLACE].item(), unknown["scorer"].item(), unknown["value"].item())
    return base.drop(_PLACE).lazy(), scored.drop(_PLACE).lazy()


def scan_inspect_options(paths: PathsLike) -> pl.LazyFrame:
    r"""The option letters' distribution of every multiple-choice sample: an options frame.

    At the answer token (the last generated token that is an option letter, see the
    module docstring) ``probability`` is Σ exp(logprob) over the ``top_logprobs``
    alternatives that are that option's letter (``" B"`` and ``"B"``); a letter outside
    the top k has probability 0 (``loglik`` −inf). The mass the letters leave out is
    ``1 − Σ probability``; :func:`~calib_frames.sources.choice_predictions` renormalises
    over the options (a softmax of ``loglik``), so its confidence of the answer letter is
    ``letter_confidence`` of :func:`scan_inspect_samples`. Its prediction is the most
    likely letter, which is the generated one at temperature 0 but need not be when the
    answer was sampled. Samples without logprobs, without a letter token, or whose answer
    token has no letter among its alternatives have no rows; free-answer samples neither.

    Parameters
    ----------
    paths
        ``.eval``/``.json`` log files, globs or folders of them.

    Returns
    -------
    LazyFrame
        Option rows: ``model``, ``task``, ``run``, ``log``, ``sample``, ``epoch``,
        ``option`` (UInt32: 0 for A), ``letter``, ``text`` (the choice), ``probability``,
        ``loglik`` (its log), ``is_gold`` (the letter is the ``target``, or one of a list
        of targets) and ``is_answer`` (the generated letter); sorted by log keys, sample,
        epoch, option. Feed it to :func:`~calib_frames.sources.choice_predictions` with
        ``question="sample"`` and ``by=["model", "task", "run", "log", "epoch"]``.

    Raises
    ------
    ReadError
        As :func:`scan_inspect_samples`.

    Examples
    --------
    >>> from calib_frames.sources import scan_inspect_options
    >>> options = scan_inspect_options("data/inspect_ai/logs").collect()
    >>> options.filter(sample="colors-banana", log=options["log"][0]).select(
    ...     "letter", "is_gold", "is_answer").rows()
    [('A', False, False), ('B', True, True), ('C', False, False), ('D', False, False)]
    """
    base, _ = _logs(paths)
    letters = _answer_letters(_tokens(base))
    mass = _letter_alternatives(letters).group_by(_ROW, "alt").agg(pl.col("p").sum())
    target = pl.col("target")
    golds = (
        pl.when(target.str.starts_with("["))
        .then(target.str.extract_all(r"[A-Z]"))
        .otherwise(pl.concat_list(target))
    )
    rows = (
        base.join(letters.select(_ROW, _LETTER), on=_ROW, how="inner")
        .join(mass.select(_ROW).unique(), on=_ROW, how="semi")
        .with_columns(
            pl.int_ranges(pl.col(_N), dtype=pl.UInt32).alias("option"),
            golds.alias(_GOLDS),
        )
        .explode(["option", "choices"])
        .join(mass, left_on=[_ROW, "option"], right_on=[_ROW, "alt"], how="left")
    )
    letter = pl.col("option").replace_strict(
        {i: chr(65 + i) for i in range(26)}, return_dtype=pl.String
    )
    probability = pl.col("p").fill_null(0.0)
    return rows.select(
        "model",
        "task",
        "run",
        "log",
        "sample",
        "epoch",
        "option",
        letter.alias("letter"),
        pl.col("choices").alias("text"),
        probability.alias("probability"),
        probability.log().alias("loglik"),
        pl.col(_GOLDS).list.contains(letter).alias("is_gold"),
        (pl.col("option") == pl.col(_LETTER)).alias("is_answer"),
    ).sort("model", "task", "run", "log", "sample", "epoch", "option")
