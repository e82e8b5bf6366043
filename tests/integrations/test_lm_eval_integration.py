"""calib_frames.integrations.lm_eval in a real lm-evaluation-harness run: its ``dummy`` model
on local tasks (the shipped ``data/lm_eval_tasks`` data, YAMLs written here that name
calib_frames' ``process_results`` and aggregations), offline, through lm-eval's own command
line with ``--log_samples``; what it reports must equal calib_frames on the samples it logged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from harness_runs import ROOT, harness_env, raw_predictions, run, scripts_bin

import calib_frames as cf
from calib_frames.comparison import lm_eval_comparison
from calib_frames.exceptions import ArgumentError
from calib_frames.integrations import lm_eval as integration

TASKS = ROOT / "data" / "lm_eval_tasks"
HOOK = "!function calib_frames.integrations.lm_eval"
CALIBRATION = ("ece", "mce", "brier", "log_loss")


def choice_task(name: str, data: str, *, calibrated: bool = True) -> str:
    lines = [
        f"task: {name}",
        "dataset_path: json",
        f"dataset_kwargs:\n  data_files:\n    test: {TASKS / data}",
        "output_type: multiple_choice",
        "test_split: test",
        'doc_to_text: "{{question}}"',
        'doc_to_choice: "{{choices}}"',
        "doc_to_target: label",
    ]
    if calibrated:
        lines.append(f"process_results: {HOOK}.process_results")
    lines.append("metric_list:")
    for metric, aggregation in [
        ("acc", "mean"),
        ("acc_norm", "mean"),
        ("brier_score", "brier_score"),
    ]:
        lines.append(f"  - metric: {metric}\n    aggregation: {aggregation}")
    if calibrated:
        for metric in CALIBRATION:
            lines.append(f"  - metric: {metric}\n    aggregation: {HOOK}.{metric}")
            lines.append("    higher_is_better: false")
    return "\n".join(lines) + "\nmetadata:\n  version: 1.0\n"


def loss_task(name: str, data: str, output_type: str, text: str, target: str) -> str:
    return (
        f"task: {name}\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {TASKS / data}\n"
        f"output_type: {output_type}\ntest_split: test\n"
        f'doc_to_text: "{text}"\ndoc_to_target: "{target}"\n'
        f"process_results: {HOOK}.process_results\n"
        "metric_list:\n"
        f"  - metric: word_perplexity\n    aggregation: {HOOK}.word_perplexity\n"
        "  - metric: byte_perplexity\n    aggregation: weighted_perplexity\n"
        f"  - metric: bits_per_byte\n    aggregation: {HOOK}.bits_per_byte\n"
        "metadata:\n  version: 1.0\n"
    )


GROUP = """group: calib_group
task:
  - calib_colors_cf
  - calib_sums_cf
aggregate_metric_list:
  - metric: ece
    aggregation: mean
    weight_by_size: true
metadata:
  version: 1.0
"""


@pytest.fixture(scope="module")
def lm_eval_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One lm-eval run of every task (about 20 s, most of it lm-eval's start)."""
    tmp = tmp_path_factory.mktemp("lm_eval")
    tasks = tmp / "tasks"
    tasks.mkdir()
    yamls = {
        "calib_colors_cf": choice_task("calib_colors_cf", "calib_colors.jsonl"),
        "calib_sums_cf": choice_task("calib_sums_cf", "calib_sums.jsonl"),
        "calib_colors_plain": choice_task(
            "calib_colors_plain", "calib_colors.jsonl", calibrated=False
        ),
        "calib_ppl_cf": loss_task(
            "calib_ppl_cf", "calib_ppl.jsonl", "loglikelihood_rolling", "", "{{text}}"
        ),
        "calib_sums_ll": loss_task(
            "calib_sums_ll",
            "calib_sums.jsonl",
            "loglikelihood",
            "{{question}}",
            "{{choices[label]}}",
        ),
        "calib_group": GROUP,
    }
    for name, text in yamls.items():
        (tasks / f"{name}.yaml").write_text(text, encoding="utf-8")
    out = tmp / "out"
    command = [
        scripts_bin("lm_eval"),
        "--model",
        "dummy",
        "--tasks",
        "calib_group,calib_colors_plain,calib_ppl_cf,calib_sums_ll",
        "--include_path",
        str(tasks),
        "--output_path",
        str(out),
        "--log_samples",
    ]
    run(command, harness_env(tmp), tmp)
    return out


def results(out: Path) -> dict[str, dict[str, object]]:
    (file,) = out.glob("*/results_*.json")
    document = json.loads(file.read_text(encoding="utf-8"))
    return document["results"] | {"group_subtasks": document["group_subtasks"]}


@pytest.mark.slow
def test_reported_calibration_equals_calib_frames_on_the_samples(lm_eval_run: Path) -> None:
    reported = results(lm_eval_run)
    preds = raw_predictions(cf.sources.scan_lm_eval_options(lm_eval_run))
    metrics = cf.calibration_metrics(preds, by="task", log_confidence="log_confidence")
    for task in ("calib_colors_cf", "calib_sums_cf"):
        expected = metrics.filter(task=task).row(0, named=True)
        got = reported[task]
        for name in CALIBRATION:
            value = got[f"{name},none"]
            if expected[name] is None:  # no document
                assert isinstance(value, float) and math.isnan(value)
            else:
                assert value == pytest.approx(expected[name], rel=1e-12, abs=1e-15), (task, name)
            assert got[f"{name}_stderr,none"] == "N/A"  # lm-eval bootstraps only its own
        assert got["acc,none"] == pytest.approx(expected["accuracy"], rel=1e-12)
        print(f"{task}: lm-eval reported ece {got['ece,none']!r}; calib_frames {expected['ece']!r}")


@pytest.mark.slow
def test_lm_evals_own_metrics_are_kept(lm_eval_run: Path) -> None:
    reported = results(lm_eval_run)
    comparison = lm_eval_comparison(lm_eval_run)
    for task in ("calib_colors_cf", "calib_sums_cf", "calib_colors_plain"):
        row = comparison.filter(task=task).row(0, named=True)
        got = reported[task]
        # lm-eval's own acc, acc_norm and multi-class brier_score, recomputed from its samples
        assert got["acc,none"] == pytest.approx(row["accuracy"], rel=1e-12)
        assert got["acc_norm,none"] == pytest.approx(row["acc_norm"], rel=1e-12)
        assert got["brier_score,none"] == pytest.approx(row["brier_multiclass"], rel=1e-12)
        assert got["acc_stderr,none"] != "N/A"
    assert "ece,none" not in reported["calib_colors_plain"]
    samples = next(lm_eval_run.glob("*/samples_calib_colors_cf_*.jsonl"))
    first = json.loads(samples.read_text(encoding="utf-8").splitlines()[0])
    logliks = [float(response[0]) for response in first["filtered_resps"]]
    assert first["ece"] == [logliks, [int(first["target"])]]  # the item, as logged


@pytest.mark.slow
def test_group_pooled_ece_from_the_bin_tables(lm_eval_run: Path) -> None:
    """lm-eval's group ECE is the size-weighted mean of its subtasks' ECEs; the pooled one
    comes from the bin tables of the logged samples."""
    reported = results(lm_eval_run)
    subtasks = reported["group_subtasks"]["calib_group"]  # type: ignore[index]
    assert sorted(subtasks) == ["calib_colors_cf", "calib_sums_cf"]
    preds = raw_predictions(cf.sources.scan_lm_eval_options(lm_eval_run)).filter(
        pl.col("task").is_in(subtasks)
    )
    stats = cf.bin_statistics(preds, by=["model", "task"])
    pooled = cf.metrics_from_bin_statistics(cf.merge_bin_statistics(stats, by="model"))
    direct = cf.calibration_metrics(preds.drop("task"), by="model")
    assert pooled["ece"].item() == pytest.approx(direct["ece"].item(), rel=1e-12)
    sizes = preds.group_by("task").len()
    per_task = dict(zip(sizes["task"], sizes["len"], strict=True))
    mean_of_tasks = sum(
        reported[t]["ece,none"] * per_task[t]
        for t in subtasks  # type: ignore[operator]
    ) / sum(per_task.values())
    assert reported["calib_group"]["ece,none"] == pytest.approx(mean_of_tasks, rel=1e-12)
    # per bin the pooled gap is at most the sum of the subtasks' gaps (equal when all err alike)
    assert pooled["ece"].item() <= mean_of_tasks + 1e-12


@pytest.mark.slow
def test_perplexity_items_of_rolling_and_loglikelihood_tasks(lm_eval_run: Path) -> None:
    reported = results(lm_eval_run)
    documents = cf.sources.scan_lm_eval_documents(lm_eval_run).collect()
    rolling = cf.perplexity(
        documents.filter(task="calib_ppl_cf"), tokens=1, bytes="bytes", words="words"
    ).row(0, named=True)
    got = reported["calib_ppl_cf"]
    for name in ("word_perplexity", "byte_perplexity", "bits_per_byte"):
        assert got[f"{name},none"] == pytest.approx(rolling[name], rel=1e-12), name
    # a loglikelihood task: lm-eval alone reports no word or byte perplexity for it
    samples = next(lm_eval_run.glob("*/samples_calib_sums_ll_*.jsonl"))
    records = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    nll = sum(-float(r["filtered_resps"][0][0]) for r in records)
    # the units are those of the target text (the continuation less its " " delimiter)
    targets = [r["arguments"]["gen_args_0"]["arg_1"].removeprefix(" ") for r in records]
    words = sum(len(t.split()) for t in targets)
    n_bytes = sum(len(t.encode("utf-8")) for t in targets)
    got = reported["calib_sums_ll"]
    assert words == len(records)  # one number word each
    assert got["word_perplexity,none"] == pytest.approx(math.exp(nll / words), rel=1e-12)
    assert got["byte_perplexity,none"] == pytest.approx(math.exp(nll / n_bytes), rel=1e-12)
    assert got["bits_per_byte,none"] == pytest.approx(nll / (n_bytes * math.log(2)), rel=1e-12)


def test_process_results_refuses_to_run_outside_lm_eval() -> None:
    with pytest.raises(ArgumentError, match="task YAML"):
        integration.process_results({"question": "?"}, [(-0.1, True)])


def test_aggregations_of_no_document_are_nan() -> None:
    for aggregation in (
        integration.ece,
        integration.mce,
        integration.brier,
        integration.log_loss,
        integration.word_perplexity,
        integration.bits_per_byte,
    ):
        assert math.isnan(aggregation([]))


def test_aggregations_against_hand_values() -> None:
    # two options each; a gold outside the options (lm-eval's -100) is a wrong answer
    items = [[[-0.1, -2.5], [0]], [[-1.2, -0.4], [-100]], [[-3.0, -0.2], [0, 1]]]
    p = [1 / (1 + math.exp(-2.4)), 1 / (1 + math.exp(-0.8)), 1 / (1 + math.exp(-2.8))]
    y = [1, 0, 1]
    assert integration.brier(items) == pytest.approx(
        sum((pi - yi) ** 2 for pi, yi in zip(p, y, strict=True)) / 3, rel=1e-12
    )
    assert integration.log_loss(items) == pytest.approx(
        -(math.log(p[0]) + math.log(1 - p[1]) + math.log(p[2])) / 3, rel=1e-12
    )
    # bins 9 (p0, p2: both right) and 6 (p1: wrong)
    by_hand = (2 * abs((p[0] + p[2]) / 2 - 1) + abs(p[1])) / 3
    assert integration.ece(items) == pytest.approx(by_hand, rel=1e-12)
    assert integration.ece(items, bins=2) == pytest.approx(abs(sum(p) / 3 - 2 / 3), rel=1e-12)
