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
``helm``       ``per_instance_stats.json``          model, task, perturbation   perturbation
``lighteval``  ``details_<task>_<date>.parquet``    model, task
``inspect``    ``.eval``, or ``.json`` with its     model, task, scorer         scorer, epoch
               header
``lm-eval``    a folder with ``results_<date>.json``  model, task
=============  ===================================  ==========================  =============

* **Latest run** (:func:`latest_runs`): inspect (``eval.created``), lighteval and lm-eval
  (their date stamps) keep the latest run of each model × task: a rerun replaces the
  run before it. HELM's run is the run spec's name, not a time: every run is kept.
* **Rows without a confidence** (an inspect sample without logprobs, a HELM instance
  without ``max_prob``) are left out and counted (:attr:`EvalLogs.left_out`).
* **Option log-likelihoods** (lighteval, lm-eval) become one prediction per question
  by :func:`~calib_frames.sources.choice_predictions` (raw scoring).

A fifth tool is one reader module (with its ``found_in(path)``) and one record here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from calib_frames.exceptions import ArgumentError, ReadError
from calib_frames.sources import helm, inspect_ai, lighteval, lm_eval
from calib_frames.sources.options import choice_predictions
from calib_frames.sources.paths import FORMAT_NAMES, PathsLike, expand_paths, path_items
from calib_frames.validation import Frame

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
    unconfident
        What the rows without a confidence are, in words (None: every row has one).
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
    unconfident: str | None = None
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
    """

    format: LogFormat
    predictions: pl.LazyFrame
    files: list[Path]
    left_out: int

    @property
    def note(self) -> str | None:
        """The rows left out, in one line (None when none was)."""
        if not self.left_out:
            return None
        return f"left out {self.left_out:,} {self.format.unconfident} (no confidence)"


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
            found_by="HELM run folders by per_instance_stats.json",
            suffixes=(".json",),
            keys=helm.KEYS,
            not_tasks=("perturbation",),
            found_in=helm.found_in,
            scan=helm.scan_helm_instances,
            latest_run=False,
            unconfident="HELM instances without max_prob",
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


def detect_log_format(paths: PathsLike, *, format: str | None = None) -> LogFormat | None:
    """The evaluation-log format of ``paths``, or None for table files.

    Parameters
    ----------
    paths
        Files, folders or globs (a glob is never a log).
    format
        A format name: one of :data:`LOG_FORMATS` (its record) or a table format
        (``parquet``, ``csv``, ``tsv``, ``jsonl``, ``json``: None). Without it, the
        format every path is found to hold (the first of :func:`log_formats_in`), when
        they all agree.

    Returns
    -------
    LogFormat or None

    Raises
    ------
    ArgumentError
        An unknown ``format``, or ``paths`` that are not paths.

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
        if format in FORMAT_NAMES:
            return None
        names = [*FORMAT_NAMES, *LOG_FORMATS]
        raise ArgumentError(f"format= takes one of {names}, got {format!r}")
    found = {next(iter(log_formats_in(item)), None) for item in items}
    if len(found) != 1 or not items:
        return None
    return found.pop()


def latest_runs(frame: Frame, *, by: Sequence[str] = ("model", "task"), run: str = "run") -> Frame:
    """The rows of the latest ``run`` of each ``by`` group (run stamps that sort as times).

    Parameters
    ----------
    frame
        Rows with the ``by`` and ``run`` columns; lazy in, lazy out.
    by
        The groups within which runs replace each other (a model × task).
    run
        The run column (an ISO time or a date stamp: the greatest is the latest).

    Returns
    -------
    DataFrame or LazyFrame
        The rows whose run is the greatest of their group.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import latest_runs
    >>> runs = pl.DataFrame({"model": "m", "task": ["t", "t", "u"],
    ...                      "run": ["2026-01", "2026-02", "2026-01"]})
    >>> latest_runs(runs)["run"].to_list()
    ['2026-02', '2026-01']
    """
    return frame.filter(pl.col(run) == pl.col(run).max().over(list(by)))


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
    (['model', 'task', 'scorer'], 15)
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
    if record.latest_run:
        latest = latest_runs(rows, by=[record.model, record.task], run=record.run)
        assert isinstance(latest, pl.LazyFrame)
        rows = latest
    if record.to_predictions is not None:
        rows = record.to_predictions(rows)
    left_out = 0
    if record.unconfident is not None:
        left_out = int(rows.select(pl.col("confidence").is_null().sum()).collect().item())
        rows = rows.filter(pl.col("confidence").is_not_null())
    files = [file for file, _ in expand_paths(items, suffixes=record.suffixes)]
    return EvalLogs(record, rows, files, left_out)
