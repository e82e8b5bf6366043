"""calib_frames.integrations.lighteval in real lighteval runs: lighteval's own pipeline runs
the custom tasks of ``lighteval_tasks.py`` (``calibration()`` in their ``metrics``) with its
dummy model and a seeded variant of it, offline, saving details (``lighteval_runs.py``);
what it reports must equal calib_frames on the details it saved, read back with
``scan_lighteval_options`` → ``choice_predictions``."""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest
from harness_runs import HERE, ROOT, harness_env, raw_predictions, run

import calib_frames as cf
from calib_frames.exceptions import ArgumentError
from calib_frames.integrations.lighteval import calibration

CALIBRATION = ("ece", "mce", "brier", "log_loss")
MODELS = ("dummy", "calib/spread")
# each task's calibration() metrics: the names lighteval reports (in CALIBRATION's order)
# and bins
PARAMETERS = {
    "calib_colors|0": [
        (CALIBRATION, 10),
        (("ece:bins=15", "mce:bins=15", "brier", "log_loss"), 15),
    ],
    "calib_sums|0": [(CALIBRATION, 10)],
}


@pytest.fixture(scope="module")
def lighteval_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both models on both tasks (about 20 s, most of it importing lighteval)."""
    tmp = tmp_path_factory.mktemp("lighteval")
    data = tmp / "data"
    for task, source in (
        ("calib_colors", ROOT / "data" / "lighteval" / "calib_colors" / "test.jsonl"),
        ("calib_sums", ROOT / "data" / "lm_eval_tasks" / "calib_sums.jsonl"),
    ):
        (data / task).mkdir(parents=True)
        shutil.copy(source, data / task / "test.jsonl")
    out = tmp / "out"
    env = harness_env(
        tmp, CALIB_LIGHTEVAL_DATA=str(data), TRANSFORMERS_OFFLINE="1", LIGHTEVAL_DISABLE_TQDM="1"
    )
    run([sys.executable, str(HERE / "lighteval_runs.py"), str(out)], env, tmp)
    return out


def reported(out: Path) -> dict[str, dict[str, dict[str, float]]]:
    """lighteval's results per model: task → metric → value."""
    by_model = {}
    for model in MODELS:
        (file,) = (out / "results" / model).glob("results_*.json")
        by_model[model] = json.loads(file.read_text(encoding="utf-8"))["results"]
    return by_model


@pytest.mark.slow
def test_reported_calibration_equals_calib_frames_on_the_details(lighteval_run: Path) -> None:
    results = reported(lighteval_run)
    preds = raw_predictions(cf.sources.scan_lighteval_options(lighteval_run))
    assert preds.group_by("model", "task").len().height == 4
    compared = 0
    for model in MODELS:
        for task, metrics in PARAMETERS.items():
            rows = preds.filter(model=model, task=task)
            got = results[model][task]
            # lighteval's own acc (its code) is calib_frames' accuracy on the same details
            accuracy = cf.calibration_metrics(rows)["accuracy"].item()
            assert got["acc"] == pytest.approx(accuracy, rel=1e-12), (model, task)
            for keys, bins in metrics:
                expected = cf.calibration_metrics(
                    rows, bins=bins, log_confidence="log_confidence"
                ).row(0, named=True)
                for name, key in zip(CALIBRATION, keys, strict=True):
                    assert got[key] == pytest.approx(expected[name], rel=1e-12, abs=1e-15), key
                    compared += 1
                    assert f"{key}_stderr" not in got  # lighteval bootstraps no grouping
    assert compared == 2 * 3 * len(CALIBRATION)
    spread = cf.calibration_metrics(preds.filter(model="calib/spread"), bins=10, by="task")
    assert spread["ece"].min() > 0.05  # a run whose calibration is far from perfect
    print(json.dumps(results, indent=1))


@pytest.mark.slow
def test_details_keep_each_documents_item(lighteval_run: Path) -> None:
    """The metric column of the details holds the item: the choices' log-likelihoods as the
    model returned them and the gold indices as the task's Doc gave them."""
    (file,) = (lighteval_run / "details" / "calib" / "spread").glob("*/details_calib_sums|0_*")
    details = pl.read_parquet(file)
    items = details.select(
        item=pl.col("metric").struct.field("ece"),
        logprobs=pl.col("model_response").struct.field("logprobs"),
        golds=pl.col("doc").struct.field("gold_index"),
        id=pl.col("doc").struct.field("id"),  # lighteval's: the row in the data set
        query=pl.col("doc").struct.field("query"),
    ).unnest("item", separator=".")
    assert items.height == 100
    assert items["item.logprobs"].to_list() == items["logprobs"].to_list()
    assert items["item.golds"].to_list() == items["golds"].to_list()
    golds = dict(zip(items["query"], items["golds"].to_list(), strict=True))
    assert golds["Question: what is zero plus zero?\nAnswer:"] == [3]  # outside the choices
    assert sum(len(g) == 2 for g in golds.values()) > 0  # held-out questions, two golds
    ties = items.filter(pl.col("logprobs").list.n_unique() == 1)
    assert ties.height > 0  # all choices tied: prediction = the first, p = 1/3
    preds = raw_predictions(cf.sources.scan_lighteval_options(lighteval_run)).filter(
        model="calib/spread", task="calib_sums|0"
    )
    tied = preds.filter(pl.col("question").is_in(ties["id"].implode()))
    assert tied["prediction"].to_list() == [0] * ties.height
    assert tied["confidence"].to_list() == pytest.approx([1 / 3] * ties.height, rel=1e-12)


def test_calibration_names_follow_its_parameters() -> None:
    assert calibration().metric_name == list(CALIBRATION)
    assert calibration(bins=15).metric_name == list(PARAMETERS["calib_colors|0"][1][0])
    metric = calibration(bins=20)
    assert metric.higher_is_better == dict.fromkeys(metric.metric_name, False)


def test_calibration_of_no_document_is_nan() -> None:
    values = calibration().corpus_level_fn.compute_corpus([])
    assert list(values) == list(CALIBRATION)
    assert all(math.isnan(value) for value in values.values())


@pytest.mark.parametrize("bad", [{"bins": 0}, {"bins": 2.5}, {"bins": True}])
def test_calibration_refuses_bad_parameters(bad: dict[str, object]) -> None:
    name = next(iter(bad))
    with pytest.raises(ArgumentError, match=rf"^calibration\(\): {name}= takes an integer >= 1"):
        calibration(**bad)  # type: ignore[arg-type]
