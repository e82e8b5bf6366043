"""lighteval reader, pinned against real lighteval 0.13.0 and 0.10.0 details (data/lighteval).

The references are lighteval's own: the aggregates of its results files (``acc``,
``acc_norm`` / ``acc:…LogProbCharNorm…`` and their stderr) read with ``json``, and the
per-row ``metric`` / ``metrics`` values of the details files.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from factories import DATA

import calib_frames as cf
from calib_frames.cli import main
from calib_frames.exceptions import ReadError
from calib_frames.sources import choice_predictions, scan_lighteval_options

ROOT = DATA / "lighteval"
LAYOUTS = {"current": "acc:logprob_normalization=LogProbCharNorm(name='norm', "
           "ignore_first_space=False)", "v0_10": "acc_norm"}  # fmt: skip
KEYS = ["model", "task", "run"]

pytestmark = pytest.mark.skipif(not ROOT.is_dir(), reason="data/lighteval fixtures not present")


def predictions(layout: str) -> pl.DataFrame:
    options = scan_lighteval_options(ROOT / layout)
    frame = choice_predictions(options, by=KEYS, normalize="char").collect()
    assert isinstance(frame, pl.DataFrame)
    return frame


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_lightevals_results_are_reproduced(layout: str) -> None:
    ours = predictions(layout)
    files = sorted((ROOT / layout / "results").rglob("results_*.json"))
    assert len(files) == 2
    for file in files:
        document = json.loads(file.read_text())
        model = document["config_general"]["model_name"]
        run = file.stem.removeprefix("results_")
        (task,) = [t for t in document["results"] if t != "all"]
        reported = document["results"][task]
        for scoring, metric in (("raw", "acc"), ("per_char", LAYOUTS[layout])):
            correct = ours.filter(
                pl.col("model") == model,
                pl.col("task") == task,
                pl.col("run") == run,
                pl.col("scoring") == scoring,
            )["correct"]
            assert correct.len() == 50
            assert correct.mean() == reported[metric]
            stderr = correct.cast(pl.Float64).std() / math.sqrt(correct.len())  # type: ignore[operator]
            assert stderr == pytest.approx(reported[f"{metric}_stderr"], rel=1e-14)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_rows_metric_is_reproduced(layout: str) -> None:
    """The per-document metric values lighteval stored, row by row (question = row key)."""
    ours = predictions(layout)
    for file in sorted((ROOT / layout / "details").rglob("*.parquet")):
        details = pl.read_parquet(file)
        if layout == "current":
            metric = details["metric"].struct.unnest()
            question = details["doc"].struct.field("id")
        else:
            metric = details["metrics"].struct.unnest()
            question = pl.Series(range(details.height)).cast(pl.String)
        run = file.parent.name
        for scoring, name in (("raw", "acc"), ("per_char", LAYOUTS[layout])):
            mine = ours.filter(pl.col("run") == run, pl.col("scoring") == scoring)
            expected = pl.DataFrame({"question": question, "theirs": metric[name] == 1})
            joined = expected.join(mine, on="question")
            assert joined.height == 50
            assert (joined["theirs"] == joined["correct"]).all()


def test_both_layouts_read_the_same_log_likelihoods() -> None:
    """The two versions scored the same models on the same data (0.13 rounds to ~1e-10)."""
    current = scan_lighteval_options(ROOT / "current").collect()
    old = scan_lighteval_options(ROOT / "v0_10").collect()
    assert current.columns == old.columns

    def keyed(frame: pl.DataFrame, layout: str) -> pl.DataFrame:
        """The options keyed by the question's text (read from the details files)."""
        queries = []
        for file in sorted((ROOT / layout / "details").rglob("*.parquet")):
            details = pl.read_parquet(file)
            if layout == "current":
                ids, text = details["doc"].struct.field("id"), details["doc"].struct.field("query")
            else:
                ids, text = pl.Series(range(details.height)).cast(pl.String), details["example"]
            queries.append(pl.DataFrame({"run": file.parent.name, "question": ids, "query": text}))
        return frame.join(pl.concat(queries), on=["run", "question"])

    on = ["model", "query", "option", "text", "is_gold"]
    joined = keyed(current, "current").join(keyed(old, "v0_10"), on=on, suffix="_old")
    assert joined.height == current.height == 400
    assert (joined["loglik"] - joined["loglik_old"]).abs().max() < 1e-8  # type: ignore[operator]
    assert set(current["text"].str.slice(0, 1)) == {" "}  # the leading space is kept
    assert set(current["model"]) == {"calib/tiny-gpt2-m", "calib/tiny-gpt2-s"}


def copy_details(tmp_path: Path) -> Path:
    file = next((ROOT / "current" / "details").rglob("*.parquet"))
    target = tmp_path / "details" / "m" / file.parent.name / file.name
    target.parent.mkdir(parents=True)
    shutil.copy(file, target)
    return target


def test_a_file_that_is_not_parquet(tmp_path: Path) -> None:
    target = copy_details(tmp_path)
    target.write_bytes(target.read_bytes()[:200])
    with pytest.raises(ReadError, match=r"details_.*\.parquet: not a readable parquet file"):
        scan_lighteval_options(tmp_path).collect()


def test_a_parquet_file_with_neither_layout(tmp_path: Path) -> None:
    target = copy_details(tmp_path)
    pl.DataFrame({"x": [1]}).write_parquet(target)
    with pytest.raises(ReadError, match="not a lighteval details file"):
        scan_lighteval_options(tmp_path)


def test_a_folder_without_details(tmp_path: Path) -> None:
    pl.DataFrame({"x": [1]}).write_parquet(tmp_path / "other.parquet")
    with pytest.raises(ReadError, match="no lighteval details"):
        scan_lighteval_options(tmp_path)


def test_the_model_is_the_folder_path_under_details(tmp_path: Path) -> None:
    nested = scan_lighteval_options(ROOT / "v0_10").collect()["model"]  # details/calib/<name>
    assert set(nested) == {"calib/tiny-gpt2-m", "calib/tiny-gpt2-s"}
    copy_details(tmp_path)
    assert set(scan_lighteval_options(tmp_path).collect()["model"]) == {"m"}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_cli_compare_detects_lighteval_not_lm_eval(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, layout: str
) -> None:
    """lighteval writes results_*.json too: it must not be read as an lm-eval folder."""
    out = tmp_path / "t.csv"
    assert main(["compare", str(ROOT / layout), "--output", str(out)]) == 0
    table = pl.read_csv(out)
    keys = ["model", "task"]
    expected = cf.calibration_metrics(
        predictions(layout).filter(pl.col("scoring") == "raw"),
        by=keys,
        log_confidence="log_confidence",
    )
    joined = table.join(expected, on=keys, suffix="_py")
    assert joined.height == 2
    for column in ("count", "accuracy", "ece", "brier", "log_loss"):
        assert (joined[column] - joined[f"{column}_py"]).abs().max() < 1e-12  # type: ignore[operator]
    assert main(["compare", str(ROOT / layout), "--format", "lighteval", "--by", "model"]) == 0
    assert "calib/tiny-gpt2-m" in capsys.readouterr().out


def test_a_question_read_twice_is_refused_naming_both_places(tmp_path: Path) -> None:
    """A details file copied beside itself (same model, task and run), or a doc.id twice
    in one file, was counted twice (or refused as 'repeated option ids', naming no file)."""
    target = copy_details(tmp_path)
    copy = tmp_path / "details" / "m" / "backup" / target.name
    copy.parent.mkdir()
    shutil.copy(target, copy)
    match = rf"{re.escape(str(target))} and {re.escape(str(copy))} hold the same lighteval run"
    with pytest.raises(ReadError, match=match):
        scan_lighteval_options(tmp_path)
    shutil.rmtree(copy.parent)
    details = pl.read_parquet(target)
    pl.concat([details, details.slice(3, 1)]).write_parquet(target)
    rows = (
        rf"{re.escape(str(target))}, row 4 and {re.escape(str(target))}, row {details.height + 1}"
    )
    with pytest.raises(ReadError, match=rf"{rows} hold the same lighteval question"):
        scan_lighteval_options(tmp_path)


def test_a_details_file_copied_where_its_path_names_another_model(tmp_path: Path) -> None:
    """lighteval's model is the folder path under details/: a copy in details_old/ read as
    model 'tiny-gpt2-m' beside 'calib/tiny-gpt2-m', every question counted twice."""
    shutil.copytree(ROOT / "current" / "details", tmp_path / "details")
    shutil.copytree(ROOT / "current" / "details", tmp_path / "details_old")
    with pytest.raises(ReadError, match=r"details/calib/.* and .*details_old/calib/.* are the"):
        scan_lighteval_options(tmp_path)
    with pytest.raises(ReadError, match=r"same lighteval details file, byte for byte: each is"):
        scan_lighteval_options(tmp_path)
