"""Evaluation logs → prediction rows: one record per tool, found, read and keyed one way.

Each tool's logs have a :class:`LogFormat` record in :data:`LOG_FORMATS`: its ``format=``
name (the command line's ``--format``), how it is found, the files it reads, its keys
(the default ``by``: the reader's keys but the run), which key names the model and which
the task, the keys that are not tasks, its reader, and whether only the latest run of
each model × task is kept. :func:`scan_eval_logs` applies them: the command line and a
notebook get the same rows in one call.

=============  ===================================  ==========================  =============
format         found by                             by                          not tasks
=============  ===================================  ==========================  =============
``helm``       ``per_instance_stats.json``,         model, task, perturbation   perturbation
               ``run_spec.json``
``lighteval``  ``details_<task>_<date>.parquet``    model, task
``inspect``    ``.eval``, or ``.json`` with its     model, task, scorer         scorer, epoch
               header
``lm-eval``    a folder with ``results_<date>.json``  model, task
=============  ===================================  ==========================  =============

* **One format at a time**: paths holding logs of several formats (a folder of inspect
  logs and a HELM run, lighteval beside lm-eval output, an inspect folder and a HELM
  folder as two inputs) are refused in one line naming what was found, unless
  ``format=`` names the one to read: their keys, runs and confidences mean different
  things, so no one table holds them, and reading one of them silently would lose the rest.
* **Each prediction once**: every reader refuses a prediction read twice (the same run,
  sample and epoch from two files: a copy of the logs in a subfolder, a run folder copied
  beside itself; a sample stored twice in one archive), naming both places.
* **Latest run** (:func:`latest_runs`): inspect (``eval.created``), lighteval and lm-eval
  (their date stamps) keep the latest run of each model × task: a rerun replaces the
  run before it. inspect keeps the latest *complete* run (its ``complete`` column): a
  later run of part of the data set (``--limit``, ``--sample-id``, or one that stopped)
  does not replace a complete one, and :attr:`EvalLogs.note` says which runs were kept
  over which. HELM's run is the run spec's name, not a time: every run is kept.
* **Rows without a confidence** (an inspect sample without logprobs, a HELM instance
  without ``max_prob``) are left out and counted (:attr:`EvalLogs.left_out`). A HELM run
  without ``scenario_state.json`` (where the completions' log-probabilities are) has
  ``log_confidence`` = ln(``max_prob``), said in the note.
* **Option log-likelihoods** (lighteval, lm-eval) become one prediction per question
  by :func:`~calib_frames.sources.choice_predictions` (raw scoring).

A fifth tool is one reader module (with its ``found_in(path)``) and one record here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from calib_frames.arguments import Constraint, Options, check_arguments
from calib_frames.exceptions import ArgumentError, ReadError
from calib_frames.sources import helm, inspect_ai, lighteval, lm_eval
from calib_frames.sources.options import choice_predictions
from calib_frames.sources.paths import (
    FORMAT_NAMES,
    PathsLike,
    expand_paths,
    is_glob,
    path_items,
)
from calib_frames.validation import Frame, as_lazy, group_keys, require_columns, return_like

__all__ = [
    "LOG_FORMATS",
    "EvalLogs",
    "LogFormat",
    "detect_log_format",
    "latest_runs",
    "log_formats_in",
    "scan_eval_logs",
]


@dataclass(frozen=True)
class LogFormat:
    """One evaluation tool's logs: how they are found, read and keyed.

    Attributes
    ----------
    name
        The ``format=`` (``--format``) name.
    found_by
        How the logs are recognised, in words (the command line's ``--help``).
    suffixes
        The suffixes of the files the reader reads.
    keys
        The reader's group keys, the run included.
    not_tasks
        Keys that are not tasks (a scorer, a perturbation, an epoch): a prediction
        appears once per value, so they are never pooled as tasks.
    found_in
        ``path`` → whether it is such a log, or a folder holding one.
    scan
        ``paths`` → the reader's rows (lazy), keyed by ``keys``.
    to_predictions
        The reader's rows → prediction rows (None: they already are).
    latest_run
        Keep only the latest ``run`` of each ``model`` × ``task``.
    complete
        A Boolean column of the reader's rows: the run covers its whole data set (None:
        not known). The latest complete run is kept over later incomplete ones.
    unconfident
        What the rows without a confidence are, in words (None: every row has one).
    unlogged
        What the rows with a confidence but no ``log_confidence`` are, in words (None:
        there are none); their ``log_confidence`` is ln(confidence).
    model, task, run
        The keys that name the model, the task and the run.
    """

    name: str
    found_by: str
    suffixes: tuple[str, ...]
    keys: tuple[str, ...]
    not_tasks: tuple[str, ...]
    found_in: Callable[[Path], bool]
    scan: Callable[[PathsLike], pl.LazyFrame]
    to_predictions: Callable[[pl.LazyFrame], pl.LazyFrame] | None = None
    latest_run: bool = True
    complete: str | None = None
    unconfident: str | None = None
    unlogged: str | None = None
    model: str = "model"
    task: str = "task"
    run: str = "run"

    @property
    def by(self) -> list[str]:
        """The default group keys: the reader's keys but the run."""
        return [key for key in self.keys if key != self.run]


@dataclass(frozen=True)
class EvalLogs:
    """What :func:`scan_eval_logs` read.

    Attributes
    ----------
    format
        The :class:`LogFormat` of the logs (``format.by`` are the default keys).
    predictions
        The prediction rows (lazy): ``format.keys``, ``confidence``, ``correct``,
        ``log_confidence`` and the reader's other columns.
    files
        The files under the paths that the reader reads.
    left_out
        Rows left out for want of a confidence.
    notes
        What else the read changed, one phrase each: complete runs kept over later
        incomplete ones, log-confidences taken from the confidence.
    """

    format: LogFormat
    predictions: pl.LazyFrame
    files: list[Path]
    left_out: int
    notes: tuple[str, ...] = ()

    @property
    def note(self) -> str | None:
        """The rows left out and the other notes, in one line (None when there is none)."""
        left_out = f"left out {self.left_out:,} {self.format.unconfident} (no confidence)"
        said = [left_out] if self.left_out else []
        return "; ".join([*said, *self.notes]) or None


def _options_to_predictions(options: pl.LazyFrame) -> pl.LazyFrame:
    """One prediction per question of an options frame (raw scoring), keyed with the run."""
    predictions = choice_predictions(options, by=["model", "task", "run"])
    assert isinstance(predictions, pl.LazyFrame)
    return predictions


def _lm_eval_options(paths: PathsLike) -> pl.LazyFrame:
    """:func:`~calib_frames.sources.scan_lm_eval_options`, given output folders only."""
    for item in path_items(paths):
        folder = Path(item)
        if not folder.is_dir():
            raise ArgumentError(f"{item}: an lm-evaluation-harness output folder is needed")
        if not any(folder.rglob("results_*.json")):
            raise ReadError(
                f"{item}: no results_<date>.json under it (not an lm-evaluation-harness "
                "output folder)"
            )
    return lm_eval.scan_lm_eval_options(paths)


LOG_FORMATS: dict[str, LogFormat] = {
    record.name: record
    for record in (
        LogFormat(
            name="helm",
            found_by="HELM run folders by per_instance_stats.json (or run_spec.json)",
            suffixes=(".json",),
            keys=helm.KEYS,
            not_tasks=("perturbation",),
            found_in=helm.found_in,
            scan=helm.scan_helm_instances,
            latest_run=False,
            unconfident="HELM instances without max_prob",
            unlogged="HELM instances without their completion's log-probability (in "
            "scenario_state.json)",
        ),
        LogFormat(
            name="lighteval",
            found_by="lighteval output by details_*.parquet",
            suffixes=(".parquet",),
            keys=lighteval.KEYS,
            not_tasks=(),
            found_in=lighteval.found_in,
            scan=lighteval.scan_lighteval_options,
            to_predictions=_options_to_predictions,
        ),
        LogFormat(
            name="inspect",
            found_by="inspect_ai logs by .eval (or their .json header)",
            suffixes=(".eval", ".json"),
            keys=inspect_ai.KEYS,
            not_tasks=("scorer", "epoch"),
            found_in=inspect_ai.found_in,
            scan=inspect_ai.scan_inspect_samples,
            complete="complete",
            unconfident="inspect sample rows without logprobs",
        ),
        LogFormat(
            name="lm-eval",
            found_by="lm-evaluation-harness folders by results_*.json",
            suffixes=(".json", ".jsonl"),
            keys=lm_eval.KEYS,
            not_tasks=(),
            found_in=lm_eval.found_in,
            scan=_lm_eval_options,
            to_predictions=_options_to_predictions,
        ),
    )
}
"""The evaluation-log formats by ``format=`` name, in the order detection prefers them."""


class _FormatName(Constraint):
    """``format=``: a table format, an evaluation-log format (as registered now) or None."""

    description = plural = "a table format, an evaluation-log format or None"
    refused = ("xlsx", 1)

    def accepts(self, value: object) -> bool:
        """Whether ``value`` names a format of :data:`FORMAT_NAMES` or :data:`LOG_FORMATS`."""
        return value is None or (
            isinstance(value, str) and (value in FORMAT_NAMES or value in LOG_FORMATS)
        )

    def message(self, value: object, name: str) -> str:
        """The message naming every format."""
        return (Options(*FORMAT_NAMES, *LOG_FORMATS) | None).message(value, name)


_FORMAT = _FormatName()


def log_formats_in(path: str | Path) -> list[LogFormat]:
    """Every evaluation-log format found at ``path`` (a file, or a folder searched recursively).

    Parameters
    ----------
    path
        A file or a folder.

    Returns
    -------
    list of LogFormat
        The formats whose logs are there, in :data:`LOG_FORMATS` order (empty: none; a
        glob is never a log).

    Examples
    --------
    >>> from calib_frames.sources import log_formats_in
    >>> [record.name for record in log_formats_in("data/helm/runs/calib")]
    ['helm']
    """
    where = Path(path)
    return [record for record in LOG_FORMATS.values() if record.found_in(where)]


@check_arguments(format=_FORMAT)
def detect_log_format(paths: PathsLike, *, format: str | None = None) -> LogFormat | None:
    """The evaluation-log format of ``paths``, or None for table files.

    Parameters
    ----------
    paths
        Files, folders or globs (a glob is never a log).
    format
        A format name: one of :data:`LOG_FORMATS` (its record) or a table format
        (``parquet``, ``csv``, ``tsv``, ``jsonl``, ``json``: None). Without it, the
        one format the paths hold (:func:`log_formats_in`).

    Returns
    -------
    LogFormat or None
        None when no path holds an evaluation log (table files; a glob is never a log).

    Raises
    ------
    ArgumentError
        An unknown ``format``, or ``paths`` that are not paths.
    ReadError
        Without ``format``: paths holding logs of several formats (in one folder, or
        one format per path), or logs beside table files, in one line naming what was
        found where.

    Examples
    --------
    >>> from calib_frames.sources import detect_log_format
    >>> detect_log_format("data/inspect_ai/logs").by
    ['model', 'task', 'scorer']
    >>> detect_log_format("data/synthetic_predictions.parquet") is None
    True
    """
    items = path_items(paths)
    if format is not None:
        if format in LOG_FORMATS:
            return LOG_FORMATS[format]
        return None  # a table format
    found = {str(item): [r.name for r in log_formats_in(item)] for item in items}
    logs = {item: names for item, names in found.items() if names}
    if not logs:
        return None
    several = [f"{item} holds {_listed(names)} logs" for item, names in logs.items()]
    formats = {name for names in logs.values() for name in names}
    one_at_a_time = "read one format at a time (format= or --format names the one to read)"
    if len(formats) > 1:
        raise ReadError(
            f"evaluation logs of several formats: {'; '.join(several)}: {one_at_a_time}"
        )
    tables = [item for item, names in found.items() if not names and _exists(item)]
    if tables:
        raise ReadError(
            f"{tables[0]} holds no evaluation log, but {several[0]}: read logs and "
            "prediction tables separately"
        )
    return LOG_FORMATS[formats.pop()]


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _exists(item: str) -> bool:
    """A path or a glob (left to the reader to refuse otherwise: 'no such file')."""
    return Path(item).exists() or is_glob(item)


def latest_runs(
    frame: Frame,
    *,
    by: Sequence[str] = ("model", "task"),
    run: str = "run",
    complete: str | None = None,
) -> Frame:
    """The rows of the latest ``run`` of each ``by`` group (run stamps that sort as times).

    Parameters
    ----------
    frame
        Rows with the ``by`` and ``run`` columns; lazy in, lazy out.
    by
        The groups within which runs replace each other (a model × task).
    run
        The run column (an ISO time or a date stamp: the greatest is the latest).
    complete
        A Boolean column: the run covers its whole data set. With it, the latest
        complete run of a group is kept (the latest run when none is complete): a later
        run of part of the data set does not replace a complete one.

    Returns
    -------
    DataFrame or LazyFrame
        The rows whose run is the latest (complete) one of their group.

    Raises
    ------
    ArgumentError
        ``frame`` is not a polars frame, or ``by`` is not a list of column names.
    TableError
        A ``by``, ``run`` or ``complete`` column is missing.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import latest_runs
    >>> runs = pl.DataFrame({"model": "m", "task": ["t", "t", "u"],
    ...                      "run": ["2026-01", "2026-02", "2026-01"],
    ...                      "complete": [True, False, True]})
    >>> latest_runs(runs)["run"].to_list()
    ['2026-02', '2026-01']
    >>> latest_runs(runs, complete="complete")["run"].to_list()
    ['2026-01', '2026-01']
    """
    lazy = as_lazy(frame)
    keys = group_keys(list(by) if isinstance(by, tuple) else by)
    roles = {"run": run, **({"complete": complete} if complete is not None else {})}
    require_columns(lazy.collect_schema(), roles, keys=keys)
    latest = pl.col(run).max()
    if complete is not None:
        done = pl.col(complete)
        latest = pl.when(done.any()).then(pl.col(run).filter(done).max()).otherwise(latest)
    kept = lazy.filter(pl.col(run) == (latest.over(keys) if keys else latest))
    return return_like(frame, kept)


def _kept_over_later(rows: pl.LazyFrame, record: LogFormat) -> list[str]:
    """The complete runs kept over later incomplete ones, in a note (empty: none)."""
    assert record.complete is not None
    keys, run = [record.model, record.task], record.run
    runs = rows.group_by(*keys, run).agg(pl.col(record.complete).all()).collect()
    kept = latest_runs(runs, by=keys, run=run, complete=record.complete)
    later = (
        runs.join(kept.select(*keys, pl.col(run).alias("kept")), on=keys)
        .filter(pl.col(run) > pl.col("kept"))
        .group_by(*keys, "kept")
        .agg(pl.col(run).sort())
        .sort(keys)
    )
    if not later.height:
        return []
    shown = [
        f"{model} × {task}: {kept_run} (not {', '.join(over)})"
        for model, task, kept_run, over in later.head(2).iter_rows()
    ]
    more = f" and {later.height - 2:,} more" if later.height > 2 else ""
    return [
        f"kept the complete run over a later partial one for {later.height:,} model × task "
        f"({'; '.join(shown)}{more})"
    ]


@check_arguments(format=_FORMAT)
def scan_eval_logs(paths: PathsLike, *, format: str | None = None) -> EvalLogs:
    """The prediction rows of evaluation logs, as the command line reads them.

    The format's reader, then its latest-run policy, then (for option log-likelihoods)
    one prediction per question, then the rows without a confidence left out and counted
    (the module docstring has each format's rules).

    Parameters
    ----------
    paths
        Log files, folders (searched recursively) or a list of them.
    format
        One of :data:`LOG_FORMATS` (``helm``, ``lighteval``, ``inspect``, ``lm-eval``);
        default: the format found (:func:`detect_log_format`).

    Returns
    -------
    EvalLogs
        ``predictions`` (lazy rows with ``confidence``, ``correct``, ``log_confidence``),
        ``format`` (its ``by`` are the default keys), ``files`` and ``left_out``.

    Raises
    ------
    ArgumentError
        An unknown ``format``, or a table format.
    ReadError
        No log of a known format under ``paths``; and the readers' errors.

    Examples
    --------
    >>> import calib_frames as cf
    >>> logs = cf.sources.scan_eval_logs("data/inspect_ai/logs")
    >>> logs.format.by, logs.left_out
    (['model', 'task', 'scorer'], 21)
    >>> table = cf.calibration_metrics(logs.predictions, by=logs.format.by,
    ...                                log_confidence="log_confidence").collect()
    >>> table.height
    8
    """
    items = path_items(paths)
    record = detect_log_format(items, format=format)
    if record is None:
        if format is not None:
            raise ArgumentError(f"format={format!r} is a table format: read it with scan_table")
        found_by = "; ".join(f"{r.name}: {r.found_by}" for r in LOG_FORMATS.values())
        raise ReadError(
            f"{', '.join(map(str, items))}: no evaluation log of one known format found "
            f"({found_by}); name it with format="
        )
    rows = record.scan(items)
    notes: list[str] = []
    if record.latest_run:
        if record.complete is not None:
            notes += _kept_over_later(rows, record)
        keys = [record.model, record.task]
        latest = latest_runs(rows, by=keys, run=record.run, complete=record.complete)
        assert isinstance(latest, pl.LazyFrame)
        rows = latest
    if record.to_predictions is not None:
        rows = record.to_predictions(rows)
    left_out = 0
    if record.unconfident is not None:
        left_out = int(rows.select(pl.col("confidence").is_null().sum()).collect().item())
        rows = rows.filter(pl.col("confidence").is_not_null())
    if record.unlogged is not None:
        unlogged = pl.col("log_confidence").is_null() & pl.col("confidence").is_not_null()
        count = int(rows.select(unlogged.sum()).collect().item())
        if count:
            rows = rows.with_columns(pl.coalesce("log_confidence", pl.col("confidence").log()))
            notes.append(f"log_confidence = ln(confidence) for {count:,} {record.unlogged}")
    files = [file for file, _ in expand_paths(items, suffixes=record.suffixes)]
    return EvalLogs(record, rows, files, left_out, tuple(notes))
