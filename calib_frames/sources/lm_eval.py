r"""lm-evaluation-harness ``--log_samples`` output → options frames, token frames, comparisons.

lm-eval (``lm_eval --output_path OUT --log_samples``) writes, per model, a folder
``OUT/<model_name_sanitized>/`` holding ``results_<date>.json`` (the aggregates and every
task's config) and one ``samples_<task>_<date>.jsonl`` per task (one line per document).
Several runs may share a folder; their files share the run's date stamp
(``2026-12-01T07-55-15.561609``), which is how samples are paired with their results.
The readers take a folder (searched recursively, so ``OUT`` with many models works), a
file, or a list; the model is named as lm-eval names it in the results file
(``model_name``), the task as in the samples file name.

How lm-eval's format is read (checked against lm-eval's source, ``lm_eval/api/task.py``,
``lm_eval/api/metrics.py``, ``lm_eval/loggers/evaluation_tracker.py``):

* File names split at the **last** underscore: ``samples_calib_colors_2026-…jsonl`` is
  task ``calib_colors`` of run ``2026-…`` (task names contain underscores).
* Every value in ``resps``/``filtered_resps`` is a **string** (lm-eval logs them through
  ``str()``): a log-likelihood ``"-8.0001"`` is parsed as a float and the greedy flag
  ``"False"`` is compared with ``"True"`` (as a non-empty string it would be truthy).
* ``arguments`` is an object keyed ``gen_args_0 … gen_args_{n-1}`` (one per option), each
  ``{"arg_0": context, "arg_1": continuation}``; the continuation is
  ``target_delimiter + choice`` (the delimiter from the task config, stripped when the
  continuation starts with it, as under a chat template it is left out).
* ``target`` is ``str()`` of the gold: ``"2"`` (an index), ``"[0, 2]"`` (several golds,
  lm-eval's ``multiple_target``) or a choice's text. An index outside the options means no
  gold option; lm-eval then warns and scores the document as wrong, and so does
  :func:`~calib_frames.comparison.lm_eval_comparison` (``no_gold="wrong"``). (A task
  whose choices are the texts "0", "1", … with a string target is read as indices:
  ``str()`` made them equal.)
* Documents are sorted by ``doc_id`` (samples of several processes are interleaved).
* Each document is read once: a task's run found twice (a copy of the output folder:
  the same model, task and run stamp) and a ``doc_id`` logged twice for one filter in a
  samples file are ReadErrors naming both places.
* ``multiple_choice`` samples become an options frame; ``acc`` is the argmax of the
  log-likelihoods, ``acc_norm`` that of ``loglik / len(choice)`` in **characters**
  (``completion_len`` in lm-eval's code; the paper says bytes), ``acc_bytes`` that of
  ``loglik / len(choice.encode("utf-8"))``; ``brier_score`` is the multi-class Brier
  score of the softmax of the log-likelihoods (summed over options, not halved).
* ``loglikelihood_rolling`` samples become a token frame with document rows:
  ``nll`` = −loglikelihood, ``words`` = ``len(re.split(r"\s+", target))`` and
  ``bytes`` = ``len(target.encode("utf-8"))`` (lm-eval's ``count_words`` and
  ``count_bytes``; Python's ``\s`` is Unicode whitespace *and* the separators
  U+001C–U+001F, matched here as ``[\s\x1c-\x1f]``). lm-eval logs **no token count**
  for these tasks, so ``tokens`` is null and per-token perplexity is not available
  (never "one token per document").

From the samples alone, :func:`calib_frames.comparison.lm_eval_comparison` reproduces
lm-eval's ``acc``, ``acc_norm``, ``acc_bytes``, ``brier_score``, ``word_perplexity``,
``byte_perplexity`` and ``bits_per_byte`` (to floating-point summation order, ~1e-15
relative) and puts them next to the values of the results file.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.exceptions import ReadError, TableError
from calib_frames.sources.paths import PathsLike, expand_paths, files_under
from calib_frames.sources.read_errors import (
    BOM_PROBLEM,
    first_bad_object,
    guarded_scan,
    refuse_records,
    refuse_repeats,
    short,
)
from calib_frames.validation import working

__all__ = [
    "DATE_STAMP",
    "KEYS",
    "found_in",
    "read_lm_eval_reported",
    "read_lm_eval_runs",
    "scan_lm_eval_documents",
    "scan_lm_eval_options",
]

KEYS = ("model", "task", "run")
"""The group keys of every frame read from lm-eval logs."""

DATE_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?")
"""lm-eval's run stamp: ``datetime.now().isoformat()`` with ``:`` replaced by ``-``."""

_SAMPLES = re.compile(rf"^samples_(?P<task>.+)_(?P<run>{DATE_STAMP.pattern})\.jsonl$")
_RESULTS = re.compile(rf"^(?P<stem>.+)_(?P<run>{DATE_STAMP.pattern})\.json$")
_RESPONSES, _CONTINUATIONS = working("responses"), working("continuations")
_RECORD, _N_RESPONSES, _N_ARGUMENTS = working("record"), working("responses_n"), working("args_n")
# Python's re "\s" on str = str.isspace(): Unicode White_Space plus U+001C..U+001F.
WORD_SEPARATOR = r"[\s\x1c-\x1f]+"

RUN_SCHEMA = {
    "model": pl.String,
    "task": pl.String,
    "run": pl.String,
    "output_type": pl.String,
    "target_delimiter": pl.String,
    "mutual_info": pl.Boolean,
    "results_file": pl.String,
    "samples_file": pl.String,
}


def _is_results(file: Path) -> bool:
    """A ``results_*.json`` that lm-eval wrote, not lighteval's (named the same way).

    lighteval's results file opens with its ``config_general``.
    """
    try:
        with file.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return b'"config_general"' not in head


def found_in(path: Path) -> bool:
    """Whether ``path`` is a folder holding an lm-eval ``results_<date>.json`` (recursively).

    lm-eval's output is read by folder: a samples file needs the results file of its run.
    """
    return path.is_dir() and any(_is_results(f) for f in files_under(path, "results_*.json"))


def _load_results(file: Path) -> dict[str, Any]:
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        line = getattr(error, "lineno", None)
        where = f", line {line}" if line else ""
        raise ReadError(f"{file}{where}: not a readable lm-eval results file ({error})") from error
    if not isinstance(document, dict) or not isinstance(document.get("results"), dict):
        raise ReadError(f"{file}: not an lm-eval results file (no 'results' object)")
    configs = document.get("configs", {})
    if not isinstance(configs, dict):
        raise ReadError(f"{file}: 'configs' must be an object of task configs")
    return document


def _model_name(document: dict[str, Any], file: Path) -> str:
    name = document.get("model_name")
    if isinstance(name, str) and name:
        return name
    config = document.get("config") or {}
    args = config.get("model_args") if isinstance(config, dict) else None
    if isinstance(args, dict) and isinstance(args.get("pretrained"), str):
        return str(args["pretrained"])
    if isinstance(args, str):
        match = re.search(r"pretrained=([^,]+)", args)
        if match:
            return match.group(1)
    if isinstance(config, dict) and isinstance(config.get("model"), str):
        return str(config["model"])
    return file.parent.name


def _uses_mutual_info(config: dict[str, Any]) -> bool:
    metrics = config.get("metric_list") or []
    names = [m.get("metric") if isinstance(m, dict) else m for m in metrics]
    return "acc_mutual_info" in names


def read_lm_eval_runs(paths: PathsLike | pl.DataFrame) -> pl.DataFrame:
    """The runs and tasks found under ``paths``: one row per (results file, task).

    Parameters
    ----------
    paths
        lm-eval output folders or files (searched recursively), or a frame this function
        returned (passed through).

    Returns
    -------
    DataFrame
        ``model`` (lm-eval's ``model_name``), ``task``, ``run`` (the date stamp),
        ``output_type``, ``target_delimiter``, ``mutual_info`` (the task computes
        ``acc_mutual_info``: its requests hold each option twice, conditional then
        unconditional), ``results_file`` and ``samples_file`` (null when the run logged
        no samples for the task), sorted by model, task, run.

    Raises
    ------
    ReadError
        No results file, an unreadable results file, or a samples file without the
        results file of its run (or whose task that file does not know); a task's run
        found twice (both places).
    TableError
        A frame that is not one of this function's (missing its columns).

    Examples
    --------
    >>> from calib_frames.sources import read_lm_eval_runs
    >>> runs = read_lm_eval_runs("data/lm_eval")  # doctest: +SKIP
    """
    if isinstance(paths, pl.DataFrame):
        missing = [c for c in RUN_SCHEMA if c not in paths.columns]
        if missing:
            raise TableError(
                f"a runs frame needs columns {missing} (pass lm-eval folders, or the frame "
                f"of read_lm_eval_runs); available columns: {paths.columns}"
            )
        return paths
    files = [file for file, _ in expand_paths(paths, suffixes=(".json", ".jsonl"))]
    results: dict[tuple[Path, str], tuple[Path, dict[str, Any]]] = {}
    samples: list[tuple[Path, str, str]] = []
    for file in files:  # a loop over files
        sample_match = _SAMPLES.match(file.name)
        if sample_match:
            samples.append((file, sample_match.group("task"), sample_match.group("run")))
            continue
        result_match = _RESULTS.match(file.name)
        if result_match and file.suffix == ".json":
            results[(file.parent, result_match.group("run"))] = (file, _load_results(file))
    if not results:
        raise ReadError(f"{paths}: no lm-eval results_<date>.json file found")
    rows: dict[tuple[Path, str, str], dict[str, Any]] = {}
    for (folder, run), (file, document) in results.items():
        configs = document.get("configs", {})
        model = _model_name(document, file)
        for task in sorted(set(document["results"]) | set(configs)):
            config = configs.get(task)
            if not isinstance(config, dict):
                continue  # a group's aggregate row, not a task
            rows[(folder, run, task)] = {
                "model": model,
                "task": task,
                "run": run,
                "output_type": config.get("output_type"),
                "target_delimiter": config.get("target_delimiter", " "),
                "mutual_info": _uses_mutual_info(config),
                "results_file": str(file),
                "samples_file": None,
            }
    for file, task, run in samples:
        row = rows.get((file.parent, run, task))
        if row is None:
            raise ReadError(
                f"{file}: no results_{run}.json next to it that configures task {task!r} "
                "(samples are paired with the results file of the same run)"
            )
        row["samples_file"] = str(file)
    frame = pl.DataFrame(list(rows.values()), schema=RUN_SCHEMA, orient="row")
    refuse_repeats(
        frame,
        ["model", "task", "run"],
        place=lambda row: row["samples_file"] or row["results_file"],
        what="lm-eval run of a task",
    )
    return frame.sort("model", "task", "run")


def _expected_samples(run: Mapping[str, Any]) -> int | None:
    """lm-eval's ``n-samples.effective`` of the run's task (None when not recorded)."""
    document = _load_results(Path(run["results_file"]))
    counts = document.get("n-samples")
    entry = counts.get(run["task"]) if isinstance(counts, dict) else None
    value = entry.get("effective") if isinstance(entry, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _check_samples(path: Path, run: Mapping[str, Any]) -> None:
    """Refuse a samples file that logs a document twice, or fewer than were evaluated.

    One pass over ``doc_id`` and ``filter`` (a malformed line is named here). A
    ``doc_id`` logged twice for one filter would be counted twice. A run killed while
    writing can leave whole lines only; the results file written before the samples
    then says how many there should be. (More lines than documents is fine: lm-eval
    logs one line per document and filter.)
    """
    try:
        logged = (
            pl.scan_ndjson(path, schema={"doc_id": pl.Int64(), "filter": pl.String()})
            .select(
                pl.int_range(pl.len()).alias("record"), "doc_id", pl.col("filter").fill_null("")
            )
            .collect()
        )
    except OSError as error:
        raise ReadError(f"{path}: cannot read it ({error})") from error
    except pl.exceptions.PolarsError as error:
        raise _locate_sample(path, error) from None
    refuse_repeats(
        logged,
        ["doc_id", "filter"],
        place=lambda row: f"{path}, line {_line_of(path, row['record'])}",
        what="lm-eval document",
    )
    expected = _expected_samples(run)
    if expected is not None and logged.height < expected:
        lines = logged.height
        raise ReadError(
            f"{path}: {lines:,} samples, but {Path(run['results_file']).name} says lm-eval "
            f"evaluated {expected:,} documents of {run['task']!r} (n-samples): the file is "
            "incomplete (an interrupted run?)"
        )


def _scan_json_lines(
    file: str, schema: Mapping[str, pl.DataType], run: Mapping[str, Any]
) -> pl.LazyFrame:
    path = Path(file)
    try:
        with path.open("rb") as handle:  # the head only: samples files are large
            head = handle.read(1 << 16)
        blank = not head.strip() and len(head) < 1 << 16
    except OSError as error:
        raise ReadError(f"{path}: cannot read it ({error})") from error
    if blank:
        raise ReadError(
            f"{path}: empty samples file (lm-eval wrote no sample: an interrupted run?)"
        )
    _check_samples(path, run)

    def locate(_: pl.Schema, error: BaseException) -> ReadError:
        return _locate_sample(path, error)

    return guarded_scan(
        lambda: pl.scan_ndjson(path, schema=schema), name=f"lm-eval {path.name}", locate=locate
    )


def _locate_sample(file: Path, error: BaseException) -> ReadError:
    """Name the first line of ``file`` that is not valid JSON (error path only)."""
    with file.open("rb") as handle:
        if handle.read(len(codecs.BOM_UTF8)) == codecs.BOM_UTF8:
            return ReadError(f"{file}, line 1: {BOM_PROBLEM}")
    bad = first_bad_object(file, what="a sample")
    return bad or ReadError(f"{file}: not an lm-eval samples file ({short(error)})")


def _line_of(file: Path, record: int) -> int:
    """The line number of the ``record``-th (0-based) non-blank line of ``file`` (error path)."""
    seen = -1
    with file.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            seen += bool(line.strip())
            if seen == record:
                return number
    return record + 1


def _counts(row: dict[str, Any]) -> str:
    """The response and request counts of a sample, for a read error."""
    if row[_N_RESPONSES] is None:
        return ""
    return f" ({row[_N_RESPONSES]} responses for {row[_N_ARGUMENTS]} requests)"


def _record_line(file: Path, row: dict[str, Any]) -> int:
    """The line of the record ``row`` (with :data:`_RECORD`) of ``file``."""
    return _line_of(file, int(row[_RECORD]))


def _with_keys(frame: pl.LazyFrame, run: dict[str, Any]) -> pl.LazyFrame:
    return frame.with_columns(
        pl.lit(run["model"], pl.String).alias("model"),
        pl.lit(run["task"], pl.String).alias("task"),
        pl.lit(run["run"], pl.String).alias("run"),
    )


def _option_count(file: str) -> int:
    """An upper bound of the options per document: the most ``"gen_args_`` keys on a line.

    A native line scan with a literal substring count (no JSON parse). Inside JSON strings
    a quote is escaped, so the count can only over-estimate (harmless: extra fields read
    as null and are cut to the number of responses), never miss an option.
    """
    try:
        counted = pl.scan_lines(file).select(
            pl.first().str.count_matches('"gen_args_', literal=True).max()
        )
        value = counted.collect().item()
    except (pl.exceptions.PolarsError, OSError) as error:
        raise ReadError(f"{file}: cannot read it ({error})") from error
    return int(value or 0)


def _options_of(run: dict[str, Any]) -> pl.LazyFrame:
    file = run["samples_file"]
    width = max(_option_count(file), 1)
    argument = pl.Struct({"arg_1": pl.String})  # the continuation; the context is not read
    schema: dict[str, pl.DataType] = {
        "doc_id": pl.Int64(),
        "target": pl.String(),
        "filtered_resps": pl.List(pl.List(pl.String)),
        "arguments": pl.Struct({f"gen_args_{i}": argument for i in range(width)}),
    }
    continuations = pl.concat_list(
        [
            pl.col("arguments").struct.field(f"gen_args_{i}").struct.field("arg_1")
            for i in range(width)
        ]
    )
    n_requests = pl.col("filtered_resps").list.len()
    # acc_mutual_info tasks append one unconditional request per option: keep the first half.
    n_options = n_requests // 2 if run["mutual_info"] else n_requests
    n_arguments = continuations.list.drop_nulls().list.len()
    samples = (
        _scan_json_lines(file, schema, run)
        .with_row_index(_RECORD)
        .with_columns(n_requests.alias(_N_RESPONSES), n_arguments.alias(_N_ARGUMENTS))
    )
    # a sample whose responses do not match its options (lost, or logged for another
    # document) would be read as a smaller question, silently
    samples = refuse_records(
        samples,
        Path(file),
        [
            (pl.col("filtered_resps").is_not_null(), "no filtered_resps (missing or null)"),
            (
                (pl.col(_N_ARGUMENTS) == 0) | (pl.col(_N_RESPONSES) == pl.col(_N_ARGUMENTS)),
                "filtered_resps does not hold one response per request (gen_args_* of arguments)",
            ),
        ],
        line=partial(_record_line, Path(file)),
        detail=_counts,
    )
    rows = samples.select(
        pl.col("doc_id").alias("question"),
        "target",
        pl.col("filtered_resps").list.head(n_options).alias(_RESPONSES),
        continuations.list.head(n_options).alias(_CONTINUATIONS),
        pl.int_ranges(n_options, dtype=pl.UInt32).alias("option"),
    ).explode([_RESPONSES, _CONTINUATIONS, "option"])
    delimiter = str(run["target_delimiter"] or "")
    cont = pl.col(_CONTINUATIONS)
    text = (
        pl.when(cont.str.starts_with(delimiter) & pl.lit(bool(delimiter)))
        .then(cont.str.slice(len(delimiter)))
        .otherwise(cont)
    )
    target = pl.col("target").str.strip_chars()
    index = pl.col("option").cast(pl.Int64)
    is_gold = (
        pl.when(target.str.contains(r"^-?\d+$"))
        .then(index == target.cast(pl.Int64, strict=False))
        .when(target.str.contains(r"^\[[\d,\s-]*\]$"))
        .then(
            target.str.extract_all(r"-?\d+")
            .list.eval(pl.element().cast(pl.Int64))
            .list.contains(index)
        )
        .otherwise(text == pl.col("target"))
        .fill_null(False)
    )
    out = rows.select(
        "question",
        "option",
        pl.col(_RESPONSES)
        .list.get(0, null_on_oob=True)
        .cast(pl.Float64, strict=False)
        .alias("loglik"),
        (pl.col(_RESPONSES).list.get(1, null_on_oob=True) == "True").alias("is_greedy"),
        is_gold.alias("is_gold"),
        text.alias("text"),
        text.str.len_chars().cast(pl.UInt32).alias("chars"),
        text.str.len_bytes().cast(pl.UInt32).alias("bytes"),
    )
    # Sorted per file (integers only); files come in key order, so the stack is sorted.
    out = out.sort("question", "option")
    return _with_keys(out, run).select(*KEYS, *out.collect_schema().names())


def scan_lm_eval_options(paths: PathsLike | pl.DataFrame) -> pl.LazyFrame:
    """The options frame of every ``multiple_choice`` task under ``paths`` (lazy).

    Parameters
    ----------
    paths
        lm-eval output folders/files, or the frame of :func:`read_lm_eval_runs`.

    Each samples file is read once when this is called, by a line scan that counts the
    options (no JSON parse); the rows are read when the frame is collected. For
    ``acc_mutual_info`` tasks only the conditional requests (the first half) are options.

    Returns
    -------
    LazyFrame
        ``model``, ``task``, ``run``, ``question`` (lm-eval's ``doc_id``), ``option``
        (UInt32 index in choice order), ``loglik`` (Float64), ``is_greedy``, ``is_gold``,
        ``text`` (the choice, without the target delimiter), ``chars`` and ``bytes``
        (its length in characters and UTF-8 bytes); sorted by keys, question, option.
        Feed it to :func:`~calib_frames.sources.choice_predictions` with
        ``by=["model", "task", "run"]`` and ``normalize=["char", "byte"]``.

    Raises
    ------
    ReadError
        As :func:`read_lm_eval_runs`; a malformed samples line, or a document logged twice
        (file and lines).

    Examples
    --------
    >>> from calib_frames.sources import scan_lm_eval_options
    >>> options = scan_lm_eval_options("data/lm_eval")  # doctest: +SKIP
    """
    runs = (
        read_lm_eval_runs(paths)
        .filter(pl.col("output_type") == "multiple_choice", pl.col("samples_file").is_not_null())
        .sort(KEYS)
    )
    frames = [_options_of(run) for run in runs.iter_rows(named=True)]  # a loop over files
    if not frames:
        return _empty_options()
    return pl.concat(frames, how="vertical")


def _empty_options() -> pl.LazyFrame:
    schema = {
        **dict.fromkeys(KEYS, pl.String()),
        "question": pl.Int64(),
        "option": pl.UInt32(),
        "loglik": pl.Float64(),
        "is_greedy": pl.Boolean(),
        "is_gold": pl.Boolean(),
        "text": pl.String(),
        "chars": pl.UInt32(),
        "bytes": pl.UInt32(),
    }
    return pl.LazyFrame(schema=schema)


def _documents_of(run: dict[str, Any]) -> pl.LazyFrame:
    schema: dict[str, pl.DataType] = {
        "doc_id": pl.Int64(),
        "target": pl.String(),
        "filtered_resps": pl.List(pl.String),
    }
    text = pl.col("target")
    loglik = pl.col("filtered_resps").list.get(0, null_on_oob=True).cast(pl.Float64, strict=False)
    samples = _scan_json_lines(run["samples_file"], schema, run).with_row_index(_RECORD)
    missing = (
        pl.col("filtered_resps").list.len() > 0,
        "no filtered_resps (missing, null or empty)",
    )
    file = Path(run["samples_file"])
    line = partial(_record_line, file)
    out = refuse_records(samples, file, [missing], line=line).select(
        "doc_id",
        (-loglik).alias("nll"),
        pl.lit(None, pl.Int64).alias("tokens"),
        text.str.len_bytes().cast(pl.Int64).alias("bytes"),
        (text.str.count_matches(WORD_SEPARATOR) + 1).cast(pl.Int64).alias("words"),
    )
    out = out.sort("doc_id")
    return _with_keys(out, run).select(*KEYS, "doc_id", "nll", "tokens", "bytes", "words")


def scan_lm_eval_documents(paths: PathsLike | pl.DataFrame) -> pl.LazyFrame:
    """The document-level token frame of every ``loglikelihood_rolling`` task (lazy).

    Parameters
    ----------
    paths
        lm-eval output folders/files, or the frame of :func:`read_lm_eval_runs`.

    Returns
    -------
    LazyFrame
        ``model``, ``task``, ``run``, ``doc_id``, ``nll`` (−loglikelihood of the document,
        nats), ``tokens`` (Int64, **null**: lm-eval does not log token counts),
        ``bytes`` and ``words`` (counted as lm-eval counts them); sorted by keys, doc_id.
        Feed it to :func:`~calib_frames.perplexity` with ``bytes="bytes", words="words"``
        for byte/word perplexity and bits per byte; per-token perplexity is unavailable.

    Raises
    ------
    ReadError
        As :func:`scan_lm_eval_options`.

    Examples
    --------
    >>> from calib_frames.sources import scan_lm_eval_documents
    >>> documents = scan_lm_eval_documents("data/lm_eval")  # doctest: +SKIP
    """
    runs = (
        read_lm_eval_runs(paths)
        .filter(
            pl.col("output_type") == "loglikelihood_rolling", pl.col("samples_file").is_not_null()
        )
        .sort(KEYS)
    )
    frames = [_documents_of(run) for run in runs.iter_rows(named=True)]
    if not frames:
        schema = {
            **dict.fromkeys(KEYS, pl.String()),
            "doc_id": pl.Int64(),
            "nll": pl.Float64(),
            "tokens": pl.Int64(),
            "bytes": pl.Int64(),
            "words": pl.Int64(),
        }
        return pl.LazyFrame(schema=schema)
    return pl.concat(frames, how="vertical")


def read_lm_eval_reported(paths: PathsLike | pl.DataFrame) -> pl.DataFrame:
    """What lm-eval wrote in its results files, long: one row per (run, task, metric, filter).

    Parameters
    ----------
    paths
        lm-eval output folders/files, or the frame of :func:`read_lm_eval_runs`.

    Returns
    -------
    DataFrame
        ``model``, ``task``, ``run``, ``metric`` (lm-eval's name: ``acc``, ``acc_norm``,
        ``brier_score``, ``word_perplexity``, …), ``filter`` (``none``, …), ``value`` and
        ``stderr`` (Float64; null where lm-eval wrote ``"N/A"``).

    Raises
    ------
    ReadError
        As :func:`read_lm_eval_runs`.

    Examples
    --------
    >>> from calib_frames.sources import read_lm_eval_reported
    >>> reported = read_lm_eval_reported("data/lm_eval")  # doctest: +SKIP
    """
    runs = read_lm_eval_runs(paths)
    rows: list[tuple[str, str, str, str, str, float | None, float | None]] = []
    seen: set[tuple[str, str]] = set()
    for model, run, file in runs.select("model", "run", "results_file").unique().iter_rows():
        if (file, run) in seen:
            continue
        seen.add((file, run))
        document = _load_results(Path(file))
        for task, values in document["results"].items():
            if not isinstance(values, dict):
                continue
            for key, value in values.items():
                metric, _, filter_name = key.partition(",")
                if metric.endswith("_stderr") or not filter_name:
                    continue
                if isinstance(value, bool) or not isinstance(value, int | float):
                    continue
                stderr = values.get(f"{metric}_stderr,{filter_name}")
                err = float(stderr) if isinstance(stderr, int | float) else None
                rows.append((model, task, run, metric, filter_name, float(value), err))
    schema = {
        "model": pl.String,
        "task": pl.String,
        "run": pl.String,
        "metric": pl.String,
        "filter": pl.String,
        "value": pl.Float64,
        "stderr": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort(*KEYS, "metric", "filter")
