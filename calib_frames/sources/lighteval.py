r"""lighteval ``--save-details`` parquet files → options frames (lazy).

lighteval writes ``<output>/details/<model_name>/<date>/details_<task>_<date>.parquet``
(one row per document, **not** in data-set order) next to
``<output>/results/<model_name>/results_<date>.json``. ``<model_name>`` may hold ``/``
(nested folders), ``<date>`` is ``datetime.now().isoformat()`` with ``:`` as ``-``, and
``<task>`` keeps its ``|`` (``calib_colors|0``, ``community|calib_colors|0``): the file
name splits at its **last** underscore.

Two layouts, told apart by the parquet schema:

* **struct layout** (lighteval 0.11 and later): option texts ``doc.choices``,
  log-likelihoods ``model_response.logprobs[i]``, greedy flags
  ``model_response.argmax_logits_eq_gold[i]``, gold ``doc.gold_index`` (an int, or a
  list), question id ``doc.id`` (lighteval sets it to the row's index in the data set).
* **flat layout** (lighteval 0.10 and earlier): ``choices``, ``predictions[i][0]`` (the
  log-likelihood; ``predictions[i][1] == 1`` the greedy flag), ``gold_index`` (a list);
  no question id: the row's position in the file is used.

``loglik`` is the summed log-probability (nats) of the choice's text after the query.
``text`` is the choice as lighteval scores it, **with** its leading space, and ``chars``
counts that space: lighteval's ``acc_norm`` (0.10) and
``acc:logprob_normalization=LogProbCharNorm(…)`` (0.11 and later) divide by
``len(choice)`` including it, so :func:`~calib_frames.sources.choice_predictions` with
``normalize="char"`` reproduces them, as ``raw`` reproduces ``acc``.

A question read twice (two details files of the same model, task and run: a copy of the
output folder; a ``doc.id`` twice in one file; one file's bytes under another model's
folder) is a ReadError naming both places.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from calib_frames.exceptions import ReadError
from calib_frames.sources.lm_eval import DATE_STAMP
from calib_frames.sources.paths import PathsLike, expand_paths, files_under
from calib_frames.sources.read_errors import guarded_scan, refuse_copies, refuse_repeats

__all__ = ["KEYS", "found_in", "scan_lighteval_options"]

KEYS = ("model", "task", "run")
"""The group keys of the frames read from lighteval details."""

_DETAILS = re.compile(rf"^details_(?P<task>.+)_(?P<run>{DATE_STAMP.pattern})\.parquet$")


def found_in(path: Path) -> bool:
    """Whether ``path`` is a lighteval details file, or a folder holding one.

    A details file is named ``details_<task>_<date>.parquet``.
    """
    if path.is_file():
        return bool(_DETAILS.match(path.name))
    details = files_under(path, "details_*.parquet") if path.is_dir() else ()
    return any(_DETAILS.match(file.name) for file in details)


def _model_of(file: Path) -> str:
    """``details/<model_name>/<date>/file``: the path between ``details`` and the date."""
    parts = file.parent.parent.parts
    if "details" in parts:
        start = len(parts) - parts[::-1].index("details")
        return "/".join(parts[start:]) or file.parent.parent.name
    return file.parent.parent.name


def _options_of(file: Path, task: str, run: str) -> pl.LazyFrame:
    def locate(_: pl.Schema, error: BaseException) -> ReadError:
        first = str(error).strip().splitlines()
        return ReadError(f"{file}: not a readable parquet file ({first[0] if first else error})")

    scan = guarded_scan(lambda: pl.scan_parquet(file), name=f"lighteval {file.name}", locate=locate)
    schema = scan.collect_schema()
    if "doc" in schema and "model_response" in schema:  # the struct layout
        doc, response = pl.col("doc"), pl.col("model_response")
        gold = doc.struct.field("gold_index")
        question = doc.struct.field("id")
        choices = doc.struct.field("choices")
        loglik = response.struct.field("logprobs")
        greedy = response.struct.field("argmax_logits_eq_gold")
        gold_dtype = schema["doc"].to_schema()["gold_index"]  # type: ignore[attr-defined]
    elif "predictions" in schema and "gold_index" in schema and "choices" in schema:
        gold, choices = pl.col("gold_index"), pl.col("choices")
        question = pl.int_range(pl.len()).cast(pl.String)
        predictions = pl.col("predictions")
        loglik = predictions.list.eval(pl.element().list.get(0, null_on_oob=True))
        greedy = predictions.list.eval(pl.element().list.get(1, null_on_oob=True) == 1.0)
        gold_dtype = schema["gold_index"]
    else:
        raise ReadError(
            f"{file}: not a lighteval details file (neither doc/model_response nor "
            f"predictions/gold_index/choices columns; has {schema.names()})"
        )
    questions = scan.select(question.alias("question")).collect()  # each question once
    refuse_repeats(
        questions.with_row_index("row", offset=1),
        ["question"],
        place=lambda row: f"{file}, row {row['row']}",
        what="lighteval question",
    )
    golds = gold if isinstance(gold_dtype, pl.List) else pl.concat_list(gold)
    option = pl.int_ranges(choices.list.len(), dtype=pl.UInt32)
    rows = scan.select(
        question.alias("question"),
        option.alias("option"),
        loglik.alias("loglik"),
        greedy.alias("is_greedy"),
        choices.alias("text"),
        golds.alias("golds"),
    ).explode(["option", "loglik", "is_greedy", "text"])
    text = pl.col("text")
    return rows.select(
        pl.lit(_model_of(file), pl.String).alias("model"),
        pl.lit(task, pl.String).alias("task"),
        pl.lit(run, pl.String).alias("run"),
        "question",
        "option",
        "loglik",
        "is_greedy",
        pl.col("golds").list.contains(pl.col("option").cast(pl.Int64)).alias("is_gold"),
        "text",
        text.str.len_chars().cast(pl.UInt32).alias("chars"),
        text.str.len_bytes().cast(pl.UInt32).alias("bytes"),
    )


def scan_lighteval_options(paths: PathsLike) -> pl.LazyFrame:
    r"""The options frame of every lighteval details file under ``paths`` (lazy).

    Parameters
    ----------
    paths
        lighteval output folders (``details/`` is searched recursively), details files
        or globs; files not named ``details_<task>_<date>.parquet`` are left out.

    Returns
    -------
    LazyFrame
        ``model`` (the folder path under ``details/``: lighteval's ``model_name``),
        ``task`` (with its ``|`` parts), ``run`` (the date stamp), ``question`` (String:
        ``doc.id``, or the row in the file for the flat layout), ``option`` (UInt32, in
        choice order), ``loglik``, ``is_greedy``, ``is_gold``, ``text`` (the choice with
        its leading space), ``chars`` and ``bytes`` (of ``text``), in file order. Feed it
        to :func:`~calib_frames.sources.choice_predictions` with
        ``by=["model", "task", "run"]`` (``normalize="char"`` for ``acc_norm``).

    Raises
    ------
    ReadError
        No details file, a file that is not parquet, or a parquet file with neither
        layout's columns; a question read twice (both places).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import choice_predictions, scan_lighteval_options
    >>> options = scan_lighteval_options("data/lighteval/current")
    >>> acc = choice_predictions(options, by=["model", "task", "run"]).group_by("model").agg(
    ...     pl.col("correct").mean()).sort("model").collect()
    >>> acc.rows()
    [('calib/tiny-gpt2-m', 0.7), ('calib/tiny-gpt2-s', 0.3)]
    """
    found = []
    for file, _ in expand_paths(paths, suffixes=(".parquet",)):  # a loop over files
        match = _DETAILS.match(file.name)
        if match:
            found.append((str(file), _model_of(file), match.group("task"), match.group("run")))
    if not found:
        raise ReadError(f"{paths}: no lighteval details_<task>_<date>.parquet file found")
    keyed = pl.DataFrame(found, schema=["file", "model", "task", "run"], orient="row")
    refuse_repeats(
        keyed, ["model", "task", "run"], place=lambda row: row["file"], what="lighteval run"
    )
    names: dict[str, list[Path]] = {}  # a rerun's file has its own name (date), a copy not
    for name, *_ in found:
        names.setdefault(Path(name).name, []).append(Path(name))
    for files in names.values():
        refuse_copies(files, what="lighteval details file")
    frames = [_options_of(Path(name), task, run) for name, _, task, run in found]
    return pl.concat(frames, how="vertical")
