"""HELM readers, pinned against the real crfm-helm 0.5.16 run folders (data/helm).

The references are HELM's own files read with ``json``: the run-level ``stats.json``
(HELM's ``exact_match``, ``max_prob`` and ``ece_1_bin`` of each context), and the request
states of ``scenario_state.json``.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from factories import DATA

import calib_frames as cf
from calib_frames.cli import main
from calib_frames.exceptions import ReadError
from calib_frames.sources import read_helm_stats, scan_helm_instances

RUNS = DATA / "helm" / "runs" / "calib"
FOLDERS = sorted(p for p in RUNS.iterdir() if p.is_dir()) if RUNS.is_dir() else []

pytestmark = pytest.mark.skipif(not RUNS.is_dir(), reason="data/helm fixtures not present")


def helm_stat(folder: Path, name: str, perturbed: bool) -> float:
    """HELM's figure of one context: no perturbation, or typos computed on the perturbed."""
    for stat in json.loads((folder / "stats.json").read_text()):
        context = stat["name"].get("perturbation")
        wanted = context is not None and context["computed_on"] == "perturbed"
        if stat["name"]["name"] == name and (wanted if perturbed else context is None):
            return float(stat["mean"])
    raise AssertionError(f"{name} not in {folder}")


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    return scan_helm_instances(RUNS).collect()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name[-8:])
@pytest.mark.parametrize("perturbed", [False, True])
def test_helms_stats_are_reproduced(rows: pl.DataFrame, folder: Path, perturbed: bool) -> None:
    spec = json.loads((folder / "run_spec.json").read_text())
    context = pl.col("perturbation") == "typos" if perturbed else pl.col("perturbation").is_null()
    ours = rows.filter(pl.col("run") == spec["name"], context)
    assert ours.height == 20
    accuracy = ours["correct"].mean()
    assert accuracy == helm_stat(folder, "exact_match", perturbed)
    assert ours["confidence"].mean() == pytest.approx(
        helm_stat(folder, "max_prob", perturbed), abs=1e-15
    )
    # ece_1_bin = |mean p - mean y|: our ECE with one bin
    metrics = cf.calibration_metrics(ours, bins=1)
    assert metrics["ece"].item() == pytest.approx(
        helm_stat(folder, "ece_1_bin", perturbed), rel=1e-12
    )


def test_read_helm_stats_is_stats_json() -> None:
    stats = read_helm_stats(RUNS)
    for folder in FOLDERS:
        document = json.loads((folder / "stats.json").read_text())
        spec = json.loads((folder / "run_spec.json").read_text())
        ours = stats.filter(pl.col("run") == spec["name"])
        assert ours.height == len(document)
        assert ours["value"].to_list() == [s.get("mean") for s in document]
        assert set(ours["model"]) == {spec["adapter_spec"]["model"]}
    assert set(stats["computed_on"].drop_nulls()) == {"perturbed", "original", "worst"}


def test_keys_and_completions_against_the_request_states(rows: pl.DataFrame) -> None:
    for folder in FOLDERS:
        spec = json.loads((folder / "run_spec.json").read_text())
        states: list[dict[str, Any]] = json.loads((folder / "scenario_state.json").read_text())[
            "request_states"
        ]
        ours = rows.filter(pl.col("run") == spec["name"])
        assert set(ours["task"]) == {"custom_mcqa"}
        assert ours.height == len(states) == 40
        for state in states:
            perturbation = (state["instance"].get("perturbation") or {}).get("name")
            key = (
                pl.col("perturbation") == perturbation
                if perturbation
                else pl.col("perturbation").is_null()
            )
            row = ours.filter(pl.col("instance") == state["instance"]["id"], key).row(0, named=True)
            completion = state["result"]["completions"][0]
            assert row["answer"] == completion["text"].strip()
            assert row["log_confidence"] == completion["logprob"]
            assert row["tokens"] == len(completion["tokens"])
            assert math.exp(row["log_confidence"]) == pytest.approx(row["confidence"], rel=1e-12)
    assert rows["predicted_index"].null_count() == rows.height  # the joint method has none


def copy_run(tmp_path: Path) -> Path:
    target = tmp_path / "runs" / "one_run"
    shutil.copytree(FOLDERS[0], target)
    return target


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    stats = run / "per_instance_stats.json"
    lines = stats.read_text().splitlines()
    lines[10] = lines[10].rstrip(",")
    stats.write_text("\n".join(lines))
    with pytest.raises(ReadError, match=r"per_instance_stats\.json, line 1\d: malformed JSON"):
        scan_helm_instances(run)


def test_a_run_without_run_spec(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    (run / "run_spec.json").unlink()
    with pytest.raises(ReadError, match=r"needs run_spec\.json"):
        scan_helm_instances(run)


def test_a_stats_file_of_the_wrong_shape(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    (run / "per_instance_stats.json").write_text('{"instance_id": 3}')
    with pytest.raises(ReadError, match="not what HELM writes here"):
        scan_helm_instances(run)


def test_a_folder_without_runs(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("[]")
    with pytest.raises(ReadError, match="no HELM run folder"):
        scan_helm_instances(tmp_path)


def test_cli_compare_detects_helm_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    assert main(["compare", str(RUNS), "--output", str(out)]) == 0
    table = pl.read_csv(out)
    assert table.columns[:3] == ["model", "task", "perturbation"]
    keys = ["model", "task", "perturbation"]
    expected = cf.calibration_metrics(
        scan_helm_instances(RUNS), by=keys, log_confidence="log_confidence"
    ).collect()
    joined = table.join(expected, on=keys, suffix="_py", nulls_equal=True)
    assert joined.height == expected.height == 4
    for column in ("count", "accuracy", "ece", "brier", "log_loss"):
        assert (joined[column] - joined[f"{column}_py"]).abs().max() < 1e-12  # type: ignore[operator]
    assert main(["compare", str(FOLDERS[0]), "--format", "helm", "--by", "perturbation"]) == 0
    assert "typos" in capsys.readouterr().out


def test_a_run_without_scenario_state_keeps_its_stats(tmp_path: Path) -> None:
    """per_instance_stats.json alone gives confidence and correctness (no completions)."""
    run = copy_run(tmp_path)
    (run / "scenario_state.json").unlink()
    rows = scan_helm_instances(run).collect()
    assert rows.height == 40 and rows["confidence"].null_count() == 0
    assert rows["answer"].null_count() == rows["log_confidence"].null_count() == 40


def test_instances_without_max_prob_are_left_out_by_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = copy_run(tmp_path)
    stats = json.loads((run / "per_instance_stats.json").read_text())
    stats[0]["stats"] = [s for s in stats[0]["stats"] if s["name"]["name"] != "max_prob"]
    (run / "per_instance_stats.json").write_text(json.dumps(stats))
    assert main(["compare", str(run), "--by", "model"]) == 0
    assert "left out 1 HELM instances without max_prob" in capsys.readouterr().err


# --- runs read twice, unfinished, without their completions (issues 29.5, 32.4, 32.16) --


def copy_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "runs" / "suite"
    shutil.copytree(RUNS, suite)
    return suite


def test_a_run_folder_copied_beside_itself_is_refused_naming_both(tmp_path: Path) -> None:
    """The copy's 40 instances were counted again, silently."""
    suite = copy_suite(tmp_path)
    copy = suite / f"{FOLDERS[0].name} (copy)"
    shutil.copytree(FOLDERS[0], copy)
    match = rf"{re.escape(str(suite / FOLDERS[0].name))} and {re.escape(str(copy))} hold the same"
    with pytest.raises(ReadError, match=rf"{match} HELM run \(model 'calib/tiny-gpt2-mc-m'"):
        scan_helm_instances(suite)
    with pytest.raises(ReadError, match=" hold the same HELM run "):
        read_helm_stats(suite)


def test_the_same_run_in_two_suites_is_refused(tmp_path: Path) -> None:
    shutil.copytree(RUNS, tmp_path / "v1")
    shutil.copytree(RUNS, tmp_path / "v2")
    with pytest.raises(ReadError, match=r"v1/custom_mcqa.* and .*v2/custom_mcqa.* hold the same"):
        scan_helm_instances(tmp_path)


def test_an_instance_listed_twice(tmp_path: Path) -> None:
    run = copy_run(tmp_path)
    stats = json.loads((run / "per_instance_stats.json").read_text())
    (run / "per_instance_stats.json").write_text(json.dumps([*stats, stats[5]]))
    stats_file = re.escape(str(run / "per_instance_stats.json"))
    match = rf"{stats_file}, item 6 and {stats_file}, item {len(stats) + 1} hold the same HELM"
    with pytest.raises(ReadError, match=match):
        scan_helm_instances(run)


@pytest.mark.parametrize("kept", ["run_spec.json", "scenario.json"])
def test_a_run_without_per_instance_stats_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kept: str
) -> None:
    """A run folder without per_instance_stats.json was left out with nothing said."""
    suite = copy_suite(tmp_path)
    unfinished = suite / FOLDERS[1].name
    for file in unfinished.iterdir():
        if file.name != kept:
            file.unlink()
    with pytest.raises(ReadError, match=r"without per_instance_stats\.json, which HELM writes"):
        scan_helm_instances(suite)
    assert main(["compare", str(suite), "--no-uncertainty"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(unfinished) in err[0]
    unfinished.rename(suite / f"_{unfinished.name}")  # skipped by folder reads
    assert scan_helm_instances(suite).collect().height == 40


def test_the_cli_reads_a_run_without_scenario_state_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line refused it as 'column log_confidence: 40 of 40 rows are not the
    natural log of the confidence'; per_instance_stats.json holds the confidence and the
    outcome, so its log-confidence is ln(max_prob), and stderr says so."""
    run = copy_run(tmp_path)
    (run / "scenario_state.json").unlink()
    out = tmp_path / "t.csv"
    assert main(["compare", str(run), "--no-uncertainty", "--output", str(out)]) == 0
    err = capsys.readouterr().err
    note = "log_confidence = ln(confidence) for 40 HELM instances without their completion's "
    assert f"{note}log-probability (in scenario_state.json)" in err
    assert "log_confidence'" not in err
    rows = scan_helm_instances(FOLDERS[0]).collect()
    keys = ["model", "task", "perturbation"]
    expected = cf.calibration_metrics(rows, by=keys).sort(keys, nulls_last=False)
    table = pl.read_csv(out).sort(keys, nulls_last=False)
    assert table["count"].to_list() == expected["count"].to_list() == [20, 20]
    assert (table["ece"] - expected["ece"]).abs().max() < 1e-12  # type: ignore[operator]
    assert (table["log_loss"] - expected["log_loss"]).abs().max() < 1e-12  # type: ignore[operator]
