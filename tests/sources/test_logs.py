"""The evaluation-log registry (sources/logs.py): detection, keys, the latest-run policy,
and the rows the command line reads, against each reader called by hand."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from factories import DATA
from polars.testing import assert_frame_equal

import calib_frames as cf
from calib_frames import sources
from calib_frames.cli import main
from calib_frames.exceptions import ArgumentError, ReadError
from calib_frames.sources import logs
from calib_frames.sources.paths import PathsLike, expand_paths

FIXTURES = {
    "helm": DATA / "helm" / "runs" / "calib",
    "lighteval": DATA / "lighteval" / "current",
    "inspect": DATA / "inspect_ai" / "logs",
    "lm-eval": DATA / "lm_eval",
}


@pytest.mark.parametrize("name", list(FIXTURES))
def test_each_fixture_is_found_as_its_format_only(name: str) -> None:
    assert [record.name for record in sources.log_formats_in(FIXTURES[name])] == [name]
    record = sources.detect_log_format(FIXTURES[name])
    assert record is sources.LOG_FORMATS[name]
    # the default keys are the reader's keys but the run (one definition: the reader's)
    assert record.by == [key for key in record.keys if key != "run"]
    assert {record.model, record.task} <= set(record.by)
    assert set(record.not_tasks).isdisjoint({record.model, record.task})


def test_the_keys_the_command_line_defaults_to() -> None:
    assert {name: record.by for name, record in sources.LOG_FORMATS.items()} == {
        "helm": ["model", "task", "perturbation"],
        "lighteval": ["model", "task"],
        "inspect": ["model", "task", "scorer"],
        "lm-eval": ["model", "task"],
    }
    assert sources.LOG_FORMATS["inspect"].not_tasks == ("scorer", "epoch")
    assert sources.LOG_FORMATS["helm"].not_tasks == ("perturbation",)


def test_every_format_under_one_folder_is_reported(tmp_path: Path) -> None:
    """Detection lists each format; without format= several are refused in one line
    naming what was found (issue 32.4: a folder was read as HELM only, silently)."""
    for name, fixture in FIXTURES.items():
        shutil.copytree(fixture, tmp_path / name)
    found = [record.name for record in sources.log_formats_in(tmp_path)]
    assert found == ["helm", "lighteval", "inspect", "lm-eval"]
    with pytest.raises(ReadError, match=r"holds helm, lighteval, inspect and lm-eval logs"):
        sources.detect_log_format(tmp_path)
    # lighteval's results_<date>.json is not taken for lm-eval's
    assert sources.log_formats_in(tmp_path / "lighteval") == [sources.LOG_FORMATS["lighteval"]]
    # format= names the one to read: its rows are those of its own folder
    read = sources.scan_eval_logs(tmp_path, format="helm").predictions.collect()
    assert_frame_equal(read, sources.scan_eval_logs(FIXTURES["helm"]).predictions.collect())


@pytest.mark.parametrize(("first", "second"), [("helm", "inspect"), ("lighteval", "lm-eval")])
def test_two_formats_in_one_folder_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], first: str, second: str
) -> None:
    """inspect logs beside a HELM run were read as HELM only; lighteval beside lm-eval
    output as lighteval only."""
    shutil.copytree(FIXTURES[first], tmp_path / first)
    shutil.copytree(FIXTURES[second], tmp_path / second)
    assert main(["compare", str(tmp_path), "--no-uncertainty"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"{tmp_path} holds {first} and {second} logs" in err[0]
    assert "--format names the one to read" in err[0]
    assert main(["compare", str(tmp_path), "--format", second, "--no-uncertainty"]) == 0


def test_inputs_of_two_formats_are_refused_naming_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An inspect folder and a HELM folder as two inputs were read as tables: 'cannot read
    it as a table (error deserializing value …)' (issue 32.16)."""
    inputs = [str(FIXTURES["inspect"]), str(FIXTURES["helm"])]
    assert main(["compare", *inputs, "--no-uncertainty"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "as a table" not in err[0]
    assert f"{inputs[0]} holds inspect logs; {inputs[1]} holds helm logs" in err[0]
    table = DATA / "synthetic_predictions.parquet"
    with pytest.raises(ReadError, match=rf"{table.name} holds no evaluation log, but .* inspect"):
        sources.detect_log_format([FIXTURES["inspect"], table])
    # a path that does not exist is left to the reader: "no such file or folder"
    with pytest.raises(ReadError, match=r"missing: no such file or folder"):
        sources.scan_eval_logs([FIXTURES["inspect"], tmp_path / "missing"])


def test_detection_of_files_globs_and_format_names(tmp_path: Path) -> None:
    eval_log = next(FIXTURES["inspect"].glob("*.eval"))
    assert sources.detect_log_format(eval_log).name == "inspect"
    helm_file = next(FIXTURES["helm"].rglob("per_instance_stats.json"))
    assert sources.detect_log_format(helm_file).name == "helm"
    details = next(FIXTURES["lighteval"].rglob("details_*.parquet"))
    assert sources.detect_log_format(details).name == "lighteval"
    assert sources.detect_log_format(str(FIXTURES["inspect"] / "*.eval")) is None  # a glob
    assert sources.detect_log_format(DATA / "synthetic_predictions.parquet") is None
    assert sources.detect_log_format(FIXTURES["helm"], format="inspect").name == "inspect"
    assert sources.detect_log_format(FIXTURES["helm"], format="csv") is None
    with pytest.raises(
        ArgumentError,
        match=r"format= takes 'parquet', 'csv', 'tsv', 'jsonl', 'json', 'helm'.* got 'xlsx'",
    ):
        sources.detect_log_format(FIXTURES["helm"], format="xlsx")
    not_a_log = tmp_path / "other.json"
    not_a_log.write_text('{"a": 1}')
    assert sources.log_formats_in(not_a_log) == []


def test_scan_eval_logs_refuses_what_is_no_log(tmp_path: Path) -> None:
    with pytest.raises(ReadError, match="no evaluation log of one known format"):
        sources.scan_eval_logs(DATA / "synthetic_predictions.parquet")
    with pytest.raises(ArgumentError, match="a table format"):
        sources.scan_eval_logs(DATA / "synthetic_predictions.parquet", format="parquet")
    with pytest.raises(ArgumentError, match="output folder is needed"):
        sources.scan_eval_logs(DATA / "synthetic_predictions.parquet", format="lm-eval")


@pytest.mark.parametrize("name", list(FIXTURES))
def test_a_copy_of_the_logs_in_a_subfolder_is_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """A copy of the logs in logs/backup/ was read too: every prediction counted twice,
    silently (issue 29.5). Now each reader refuses it, naming both places; a copy in a
    folder starting with '_' is skipped by the folder read."""
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES[name], logs)
    shutil.copytree(FIXTURES[name], logs / "backup")
    with pytest.raises(ReadError, match=" hold the same ") as error:
        sources.scan_eval_logs(logs).predictions.collect()
    places = str(error.value).split(" hold the same ")[0].split(" and ")
    assert len(places) == 2 and [str(logs / "backup") in place for place in places].count(True) == 1
    assert main(["compare", str(logs), "--no-uncertainty"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "backup" in err[0] and "start its folder's name with '_'" in err[0]
    (logs / "backup").rename(logs / "_backup")
    once = sources.scan_eval_logs(logs).predictions.collect()
    assert_frame_equal(once, sources.scan_eval_logs(FIXTURES[name]).predictions.collect())


def latest(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The latest run of each model × task, written out by hand."""
    newest = frame.group_by("model", "task").agg(pl.col("run").max())
    return frame.join(newest, on=["model", "task", "run"], how="semi")


def latest_complete(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The latest complete run of each model × task (the latest run if none is), by hand."""
    complete = latest(frame.filter("complete"))
    others = frame.join(complete, on=["model", "task"], how="anti")
    return pl.concat([complete, latest(others)])


def test_inspect_rows_are_the_readers_latest_complete_runs_with_a_confidence() -> None:
    """The two .json logs are later runs of 11 and 6 samples (sample_id=): the complete
    .eval runs they followed are kept, and the note says so (issue 32.6)."""
    read = sources.scan_eval_logs(FIXTURES["inspect"])
    rows = latest_complete(sources.scan_inspect_samples(FIXTURES["inspect"])).collect()
    expected = rows.filter(pl.col("confidence").is_not_null())
    assert read.left_out == rows.height - expected.height == 21
    assert read.note == (
        "left out 21 inspect sample rows without logprobs (no confidence); kept the complete "
        "run over a later partial one for 2 model × task (mockllm/calib-hedged × "
        "calib_sums_free: 2026-12-01T21:56:01+00:00 (not 2026-12-01T21:56:03+00:00); "
        "mockllm/calib-sharp × calib_colors_mc: 2026-12-01T21:55:56+00:00 (not "
        "2026-12-01T21:56:03+00:00))"
    )
    assert_frame_equal(read.predictions.collect(), expected, check_row_order=False)
    assert set(expected["log"]) == {file.name for file in FIXTURES["inspect"].glob("*.eval")}
    assert sorted(read.files) == sorted(FIXTURES["inspect"].iterdir())


def test_partial_runs_alone_are_read_and_a_later_complete_run_wins(tmp_path: Path) -> None:
    """Only the .json runs are read: each is the latest (and only) run, kept though
    partial; and a run is complete when it holds every sample of its data set."""
    for file in FIXTURES["inspect"].glob("*.json"):
        shutil.copy(file, tmp_path / file.name)
    read = sources.scan_eval_logs(tmp_path)
    rows = read.predictions.collect()
    assert read.note is not None and "kept the complete run" not in read.note
    assert rows["complete"].unique().to_list() == [False]
    samples = (
        sources.scan_inspect_samples(tmp_path).group_by("model").agg(pl.col("sample").n_unique())
    )
    assert samples.sort("model").collect()["sample"].to_list() == [6, 11]
    runs = pl.DataFrame(
        {
            "model": "m",
            "task": "t",
            "run": ["2026-01", "2026-02", "2026-03"],
            "complete": [True, True, False],
        }
    )
    assert sources.latest_runs(runs, complete="complete")["run"].to_list() == ["2026-02"]
    assert sources.latest_runs(runs.with_columns(complete=False), complete="complete")[
        "run"
    ].to_list() == ["2026-03"]


def test_helm_keeps_every_run_and_leaves_out_rows_without_max_prob() -> None:
    read = sources.scan_eval_logs(FIXTURES["helm"])
    rows = sources.scan_helm_instances(FIXTURES["helm"]).collect()
    assert read.left_out == 0 and read.note is None
    assert_frame_equal(read.predictions.collect(), rows)
    assert {f.name for f in read.files} >= {"per_instance_stats.json", "run_spec.json"}


@pytest.mark.parametrize(
    ("name", "scan"),
    [("lm-eval", sources.scan_lm_eval_options), ("lighteval", sources.scan_lighteval_options)],
)
def test_option_logs_give_one_prediction_per_question_of_the_latest_run(
    name: str, scan: object
) -> None:
    read = sources.scan_eval_logs(FIXTURES[name], format=name)
    options = latest(scan(FIXTURES[name]))  # type: ignore[operator]
    expected = sources.choice_predictions(options, by=["model", "task", "run"]).collect()
    got = read.predictions.collect()
    assert_frame_equal(got, expected, check_row_order=False)
    runs = got.group_by("model", "task").agg(pl.col("run").n_unique())
    assert runs["run"].to_list() == [1] * runs.height


def test_the_lm_eval_rerun_replaces_its_run() -> None:
    """calib/tiny-gpt2-s ran calib_colors twice: its table holds the later run only."""
    read = sources.scan_eval_logs(FIXTURES["lm-eval"]).predictions.collect()
    colors = read.filter(model="calib/tiny-gpt2-s", task="calib_colors")
    assert colors["run"].unique().to_list() == ["2026-12-01T08-08-50.885946"]
    assert colors.height == 150


def test_a_fifth_format_is_one_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new tool needs its reader and its record: detection, keys, the latest run and the
    command line follow from the record."""

    def scan(paths: PathsLike) -> pl.LazyFrame:
        files = [file for file, _ in expand_paths(paths, suffixes=(".toy",))]
        return sources.scan_table(files, format="csv")

    record = logs.LogFormat(
        name="toy",
        found_by="toy logs by .toy",
        suffixes=(".toy",),
        keys=("model", "task", "run", "judge"),
        not_tasks=("judge",),
        found_in=lambda path: path.suffix == ".toy" or any(path.glob("*.toy")),
        scan=scan,
        unconfident="toy rows without a score",
    )
    monkeypatch.setitem(logs.LOG_FORMATS, "toy", record)
    rows = "model,task,run,judge,confidence,correct,log_confidence\n"
    rows += "m,t,1,j,0.5,true,-0.6931471805599453\nm,t,2,j,1.0,true,0.0\nm,t,2,j,,false,\n"
    rows += "m,t,2,k,0.25,false,-1.3862943611198906\n"
    (tmp_path / "a.toy").write_text(rows)
    read = sources.scan_eval_logs(tmp_path)
    assert read.format is record and read.left_out == 1
    got = read.predictions.collect()
    assert got["run"].to_list() == [2, 2] and got["judge"].to_list() == ["j", "k"]
    assert main(["compare", str(tmp_path), "--no-uncertainty"]) == 0
    out, err = capsys.readouterr()
    assert "left out 1 toy rows without a score" in err
    assert "judge" in out  # the record's keys are the default --by


def test_notebook_and_command_line_read_the_same_rows(tmp_path: Path) -> None:
    out = tmp_path / "t.parquet"
    assert main(["compare", str(FIXTURES["inspect"]), "--output", str(out), "--quiet"]) == 0
    read = sources.scan_eval_logs(FIXTURES["inspect"])
    table = cf.compare(read.predictions, by=read.format.by, log_confidence="log_confidence")
    assert_frame_equal(table.collect(), pl.read_parquet(out), rel_tol=1e-12, abs_tol=1e-15)


def test_a_subfolder_that_cannot_be_listed_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unreadable subfolder was left out of a folder read without a word (pathlib's
    rglob passes over it): now it is named. (Simulated: the tests may run as root.)"""
    shutil.copytree(FIXTURES["inspect"], tmp_path / "logs")
    shutil.copytree(FIXTURES["inspect"], tmp_path / "logs" / "sub")
    listing = os.scandir

    def scandir(path: str) -> Any:
        if Path(path).name == "sub":
            raise PermissionError(13, "Permission denied", str(path))
        return listing(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(ReadError, match=r"logs/sub: cannot list the folder \(Permission denied\)"):
        sources.scan_eval_logs(tmp_path / "logs")
    with pytest.raises(ReadError, match=r"logs/sub: cannot list the folder"):
        sources.scan_table(tmp_path / "logs")
