"""The evaluation-log registry (sources/logs.py): detection, keys, the latest-run policy,
and the rows the command line reads, against each reader called by hand."""

from __future__ import annotations

import shutil
from pathlib import Path

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
    """The seam for reading all of them or refusing (issue 32.4): detection lists each."""
    for name, fixture in FIXTURES.items():
        shutil.copytree(fixture, tmp_path / name)
    found = [record.name for record in sources.log_formats_in(tmp_path)]
    assert found == ["helm", "lighteval", "inspect", "lm-eval"]
    assert sources.detect_log_format(tmp_path).name == "helm"  # today's preference
    # lighteval's results_<date>.json is not taken for lm-eval's
    assert sources.log_formats_in(tmp_path / "lighteval") == [sources.LOG_FORMATS["lighteval"]]
    # inputs of two formats are no one format (read as tables, as before)
    assert sources.detect_log_format([tmp_path / "helm", tmp_path / "inspect"]) is None


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
    with pytest.raises(ArgumentError, match=r"format= takes one of \['parquet'"):
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


def latest(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The latest run of each model × task, written out by hand."""
    newest = frame.group_by("model", "task").agg(pl.col("run").max())
    return frame.join(newest, on=["model", "task", "run"], how="semi")


def test_inspect_rows_are_the_readers_latest_runs_with_a_confidence() -> None:
    read = sources.scan_eval_logs(FIXTURES["inspect"])
    rows = latest(sources.scan_inspect_samples(FIXTURES["inspect"])).collect()
    expected = rows.filter(pl.col("confidence").is_not_null())
    assert read.left_out == rows.height - expected.height == 15
    assert read.note == "left out 15 inspect sample rows without logprobs (no confidence)"
    assert_frame_equal(read.predictions.collect(), expected, check_row_order=False)
    assert sorted(read.files) == sorted(FIXTURES["inspect"].iterdir())


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
