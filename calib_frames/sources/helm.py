r"""HELM run folders (``helm-run`` output) → one prediction row per instance and perturbation.

``helm-run --suite S`` writes one folder per run under ``benchmark_output/runs/S/``, named
after the run spec (``<scenario>,<args>:model=<model with / as _>``; the name holds
``,``, ``=`` and ``:``). The readers use four of its files:

* ``run_spec.json``: ``name`` (the run), ``adapter_spec.model`` (the model, as
  ``org/name``), ``adapter_spec.method``; the task is the scenario part of the name
  (before the first ``,`` or ``:``).
* ``per_instance_stats.json``: a list of ``{"instance_id", "train_trial_index",
  ["perturbation"], "stats": [{"name": {"name", "split", …}, "mean", …}, …]}``; the
  confidence and the outcome are the stats ``max_prob`` (the probability of the
  generated answer, exp of its log-probability) and ``exact_match`` (1.0 or 0.0), as
  HELM's calibration metrics use them; ``predicted_index`` where HELM computes it
  (the ``multiple_choice_separate_*`` methods).
* ``scenario_state.json``: the request states, for the completion's ``text``,
  ``logprob`` and ``tokens``, joined on (instance, train trial, perturbation).
* ``stats.json``: HELM's run-level figures (:func:`read_helm_stats`).

A perturbed instance (``data_augmentation=…``) keeps the original's ``instance_id``:
``perturbation`` (the perturbation's ``name``, null for the original) is part of the
key, as it is a context of HELM's ``stats.json`` (``computed_on: "perturbed"``).

A run folder is one holding ``run_spec.json``, ``scenario.json``, ``scenario_state.json``
or ``per_instance_stats.json``. One without ``per_instance_stats.json`` (HELM writes it
when the run finishes: a failed or unfinished run) is a ReadError naming it, never left
out silently; so are two folders of the same run (a run folder copied beside itself, the
same run in two suites) and an instance listed twice, each naming both places.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.exceptions import ReadError
from calib_frames.sources.paths import PathsLike, expand_paths, files_under
from calib_frames.sources.read_errors import refuse_repeats

__all__ = ["KEYS", "found_in", "read_helm_stats", "scan_helm_instances"]

KEYS = ("model", "task", "run", "perturbation")
"""The group keys of the frames read from HELM run folders."""

_STATS = "per_instance_stats.json"
_RUN_FILES = ("run_spec.json", "scenario.json", "scenario_state.json", _STATS)
_NAME = pl.Struct(
    {"name": pl.String, "split": pl.String, "perturbation": pl.Struct({"name": pl.String})}
)
_STAT = pl.Struct({"name": _NAME, "count": pl.Int64, "mean": pl.Float64})
_INSTANCE_STATS = {
    "instance_id": pl.String(),
    "train_trial_index": pl.Int64(),
    "perturbation": pl.Struct({"name": pl.String}),
    "stats": pl.List(_STAT),
}
_TOKEN = pl.Struct({"text": pl.String, "logprob": pl.Float64})
_STATE = pl.Struct(
    {
        "instance": pl.Struct(
            {
                "id": pl.String,
                "split": pl.String,
                "perturbation": pl.Struct({"name": pl.String}),
            }
        ),
        "train_trial_index": pl.Int64,
        "result": pl.Struct(
            {
                "completions": pl.List(
                    pl.Struct({"text": pl.String, "logprob": pl.Float64, "tokens": pl.List(_TOKEN)})
                )
            }
        ),
    }
)
_JOIN = ["instance", "train_trial_index", "perturbation"]


def found_in(path: Path) -> bool:
    """Whether ``path`` is a HELM ``per_instance_stats.json``, or a folder holding one.

    A folder holding a ``run_spec.json`` is one too (a run folder, finished or not).
    """
    if path.is_file():
        return path.name == _STATS
    names = (_STATS, "run_spec.json")
    return path.is_dir() and any(any(files_under(path, name)) for name in names)


def _load(file: Path) -> Any:
    try:
        return json.loads(file.read_bytes())
    except OSError as error:
        raise ReadError(f"{file}: cannot read it ({error})") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        line = getattr(error, "lineno", None)
        where = f", line {line}" if line else ""
        raise ReadError(f"{file}{where}: malformed JSON ({error})") from error


def _read_json(file: Path, schema: dict[str, pl.DataType], *, array: bool) -> pl.DataFrame:
    """A JSON document (an array of objects with ``array``) read by polars with ``schema``.

    Malformed JSON is named by line (``json`` finds it, on the error path only).
    """
    try:
        text = file.read_bytes()
    except OSError as error:
        raise ReadError(f"{file}: cannot read it ({error})") from error
    try:
        if array and not text.lstrip().startswith(b"["):
            raise pl.exceptions.ComputeError("HELM writes a JSON array of objects here")
        return pl.read_json(io.BytesIO(text), schema=schema)
    except pl.exceptions.PolarsError as error:
        document = _load(file)  # error path: json names the line of malformed JSON
        kind = type(document).__name__
        first = str(error).strip().splitlines()
        raise ReadError(
            f"{file}: not what HELM writes here (a JSON {kind}; {first[0] if first else error})"
        ) from None


def _runs(paths: PathsLike) -> list[tuple[Path, dict[str, Any]]]:
    """Every run folder under ``paths`` and its spec, each run once (see the module)."""
    files = expand_paths(paths, suffixes=(".json",))
    folders = sorted({file.parent for file, _ in files if file.name in _RUN_FILES})
    if not folders:
        raise ReadError(f"{paths}: no HELM run folder ({_STATS}) found")
    unfinished = [folder for folder in folders if not (folder / _STATS).is_file()]
    if unfinished:
        more = f" (and {len(unfinished) - 1:,} more)" if len(unfinished) > 1 else ""
        raise ReadError(
            f"{unfinished[0]}{more}: a HELM run folder without {_STATS}, which HELM writes "
            "when a run finishes (a failed or unfinished run?): finish it, or move it out of "
            "the folder read (or start its name with '_', which folder reads skip)"
        )
    runs = []
    for folder in folders:  # a loop over run folders
        spec_file = folder / "run_spec.json"
        if not spec_file.is_file():
            raise ReadError(f"{folder}: a HELM run folder needs run_spec.json next to {_STATS}")
        spec = _load(spec_file)
        adapter = spec.get("adapter_spec") if isinstance(spec, dict) else None
        if not isinstance(adapter, dict) or not isinstance(adapter.get("model"), str):
            raise ReadError(f"{spec_file}: not a HELM run spec (no adapter_spec.model)")
        runs.append((folder, spec))
    keyed = pl.DataFrame(
        [
            (str(folder), spec["adapter_spec"]["model"], _run_name(folder, spec))
            for folder, spec in runs
        ],
        schema={"folder": pl.String, "model": pl.String, "run": pl.String},
        orient="row",
    )
    refuse_repeats(keyed, ["model", "run"], place=lambda row: row["folder"], what="HELM run")
    return runs


def _run_name(folder: Path, spec: dict[str, Any]) -> str:
    """The run spec's name (the folder's name when the spec has none)."""
    name = spec.get("name")
    return name if isinstance(name, str) else folder.name


def _run_keys(folder: Path, spec: dict[str, Any]) -> list[pl.Expr]:
    name = _run_name(folder, spec)
    task = re.split(r"[,:]", name, maxsplit=1)[0]
    return [
        pl.lit(spec["adapter_spec"]["model"], pl.String).alias("model"),
        pl.lit(task, pl.String).alias("task"),
        pl.lit(name, pl.String).alias("run"),
    ]


def _stat(name: str) -> pl.Expr:
    return (
        pl.col("stats")
        .list.eval(
            pl.element().filter(pl.element().struct.field("name").struct.field("name") == name)
        )
        .list.first()
        .struct.field("mean")
    )


def _instances(folder: Path, spec: dict[str, Any]) -> pl.LazyFrame:
    stats = _read_json(folder / _STATS, _INSTANCE_STATS, array=True)
    keyed = stats.select(
        pl.int_range(pl.len()).alias("item"),
        pl.col("instance_id").alias("instance"),
        "train_trial_index",
        pl.col("perturbation").struct.field("name").alias("perturbation"),
    )
    refuse_repeats(
        keyed.with_columns(pl.col("perturbation").fill_null("")),  # null: the original
        ["instance", "train_trial_index", "perturbation"],
        place=lambda row: f"{folder / _STATS}, item {row['item'] + 1}",
        what="HELM instance",
    )
    split = pl.col("stats").list.first().struct.field("name").struct.field("split").alias("split")
    rows = stats.lazy().select(
        pl.col("instance_id").alias("instance"),
        "train_trial_index",
        pl.col("perturbation").struct.field("name").alias("perturbation"),
        split,
        _stat("max_prob").alias("confidence"),
        _stat("exact_match").alias("exact_match"),
        _stat("predicted_index").cast(pl.Int64).alias("predicted_index"),
    )
    state_file = folder / "scenario_state.json"
    if state_file.is_file():
        states = _read_json(state_file, {"request_states": pl.List(_STATE)}, array=False).lazy()
        completion = (
            pl.col("request_states").struct.field("result").struct.field("completions").list.first()
        )
        instance = pl.col("request_states").struct.field("instance")
        answers = (
            states.explode("request_states")
            .select(
                instance.struct.field("id").alias("instance"),
                pl.col("request_states").struct.field("train_trial_index"),
                instance.struct.field("perturbation").struct.field("name").alias("perturbation"),
                completion.struct.field("text").str.strip_chars().alias("answer"),
                completion.struct.field("logprob").alias("log_confidence"),
                completion.struct.field("tokens").list.len().cast(pl.UInt32).alias("tokens"),
            )
            .unique(_JOIN, keep="first", maintain_order=True)
        )
        rows = rows.join(answers, on=_JOIN, how="left", nulls_equal=True, maintain_order="left")
    else:
        rows = rows.with_columns(
            pl.lit(None, pl.String).alias("answer"),
            pl.lit(None, pl.Float64).alias("log_confidence"),
            pl.lit(None, pl.UInt32).alias("tokens"),
        )
    return rows.select(
        *_run_keys(folder, spec),
        "perturbation",
        "instance",
        "train_trial_index",
        "split",
        "confidence",
        "log_confidence",
        (pl.col("exact_match") == 1.0).alias("correct"),
        "exact_match",
        "predicted_index",
        "answer",
        "tokens",
    )


def scan_helm_instances(paths: PathsLike) -> pl.LazyFrame:
    r"""One prediction row per (run, perturbation, instance, train trial) of HELM run folders.

    The JSON files are parsed by polars when this is called (they are single documents,
    not line-delimited: nothing to scan lazily); the frame is lazy for what follows.

    Parameters
    ----------
    paths
        ``benchmark_output/runs/<suite>`` folders, run folders, or their files.

    Returns
    -------
    LazyFrame
        Prediction rows: ``model`` (``adapter_spec.model``), ``task`` (the scenario),
        ``run`` (the run spec's name), ``perturbation`` (its name; null for the
        original instance), ``instance`` (HELM's ``instance_id``), ``train_trial_index``,
        ``split``, ``confidence`` (``max_prob``), ``log_confidence`` (the completion's
        ``logprob``, whose exp is ``max_prob``), ``correct`` (``exact_match == 1``),
        ``exact_match``, ``predicted_index`` (null where HELM has none), ``answer`` (the
        completion's text, stripped) and ``tokens`` (its token count); in file order
        within a run, runs sorted by folder. A run without ``max_prob`` (HELM writes it
        only when the model returned log-probabilities) has null confidences. Feed it to
        :func:`~calib_frames.calibration_metrics` with
        ``by=["model", "task", "perturbation"]``.

    Raises
    ------
    ReadError
        No run folder, a run folder without ``run_spec.json`` or ``per_instance_stats.json``,
        malformed JSON (file and line), a file that is not what HELM writes there; a run
        or an instance read twice (both places).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import scan_helm_instances
    >>> rows = scan_helm_instances("data/helm/runs/calib").collect()
    >>> accuracy = rows.group_by("model", "perturbation").agg(pl.col("correct").mean())
    >>> accuracy.sort("model", "perturbation")["correct"].to_list()  # original, then typos
    [0.75, 0.5, 0.35, 0.35]
    """
    frames = [_instances(folder, spec) for folder, spec in _runs(paths)]
    return pl.concat(frames, how="vertical")


def read_helm_stats(paths: PathsLike) -> pl.DataFrame:
    """HELM's own run-level figures (``stats.json``), long: one row per (run, context, stat).

    Parameters
    ----------
    paths
        As :func:`scan_helm_instances`.

    Returns
    -------
    DataFrame
        ``model``, ``task``, ``run``, ``perturbation`` (the perturbation's name, null
        without one), ``computed_on`` (``perturbed``, ``original``, ``worst``; null
        without a perturbation), ``split``, ``stat`` (HELM's name: ``exact_match``,
        ``max_prob``, ``ece_10_bin``, …), ``count`` and ``value`` (HELM's ``mean``).

    Raises
    ------
    ReadError
        As :func:`scan_helm_instances`, or a run folder without ``stats.json``.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.sources import read_helm_stats
    >>> stats = read_helm_stats("data/helm/runs/calib")
    >>> stats.filter(pl.col("stat") == "ece_1_bin", pl.col("perturbation").is_null())[
    ...     "value"].round(4).to_list()
    [0.1948, 0.0937]
    """
    schema = {
        "name": pl.Struct(
            {
                "name": pl.String,
                "split": pl.String,
                "perturbation": pl.Struct({"name": pl.String, "computed_on": pl.String}),
            }
        ),
        "count": pl.Int64(),
        "mean": pl.Float64(),
    }
    frames = []
    for folder, spec in _runs(paths):
        file = folder / "stats.json"
        if not file.is_file():
            raise ReadError(f"{folder}: no stats.json (HELM writes it at the end of a run)")
        stat = pl.col("name")
        perturbation = stat.struct.field("perturbation")
        frames.append(
            _read_json(file, schema, array=True).select(
                *_run_keys(folder, spec),
                perturbation.struct.field("name").alias("perturbation"),
                perturbation.struct.field("computed_on").alias("computed_on"),
                stat.struct.field("split").alias("split"),
                stat.struct.field("name").alias("stat"),
                "count",
                pl.col("mean").alias("value"),
            )
        )
    return pl.concat(frames, how="vertical")
