"""calib_frames.integrations.inspect_ai: unit checks on inspect's own types, then real
inspect_ai runs (``inspect_runs.py`` in a subprocess, mockllm with logprobs, offline) whose
reported ECE, MCE, Brier and log loss must equal calib_frames on the same log read back."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import polars as pl
import pytest
from harness_runs import HERE, ROOT, harness_env, run, scripts_bin
from inspect_ai._util.registry import registry_info
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import Logprob, Logprobs, ModelOutput, TopLogprob
from inspect_ai.scorer import SampleScore, Score, grouped
from inspect_runs import QUESTIONS

import calib_frames as cf
from calib_frames.integrations import inspect_ai as integration
from calib_frames.integrations.inspect_ai import (
    answer_confidence,
    brier,
    ece,
    log_loss,
    mce,
    missing_confidence,
)

SCORER = "choice_with_confidence"


def reply(tokens: list[tuple[str, float, list[tuple[str, float]] | None]]) -> ModelOutput:
    output = ModelOutput.from_content("mockllm/model", "".join(t for t, _, _ in tokens))
    content = [
        Logprob(
            token=t,
            logprob=lp,
            top_logprobs=None if top is None else [TopLogprob(token=a, logprob=b) for a, b in top],
        )
        for t, lp, top in tokens
    ]
    output.choices[0].logprobs = Logprobs(content=content)
    return output


def scores(pairs: list[tuple[object, float | None]], **metadata: str) -> list[SampleScore]:
    return [
        SampleScore(
            score=Score(value=value, metadata={"confidence": p}),  # type: ignore[arg-type]
            sample_id=str(i),
            sample_metadata=dict(metadata) or {"kind": "a" if i % 2 else "b"},
        )
        for i, (value, p) in enumerate(pairs)
    ]


# ---------------------------------------------------------------- the confidence of an answer


def test_confidence_is_the_letters_share_at_the_answer_token() -> None:
    # " B" and "B" both count for B; " The" is not a letter; E is not an option of 4.
    top = [
        (" B", math.log(0.5)),
        ("B", math.log(0.1)),
        (" A", math.log(0.2)),
        (" The", math.log(0.1)),
        (" E", math.log(0.05)),
    ]
    output = reply([("ANSWER", 0.0, None), (":", 0.0, None), (" B", math.log(0.5), top)])
    assert answer_confidence(output, "B", 4) == pytest.approx(0.6 / 0.8, rel=1e-15)
    assert answer_confidence(output, "A", 4) is None  # no token of the reply is A
    # with 2 options the letters C, D, E do not count; with 5 options E does
    assert answer_confidence(output, "B", 5) == pytest.approx(0.6 / 0.85, rel=1e-15)


def test_the_answer_token_is_the_last_one_of_that_letter() -> None:
    early = [(" C", math.log(0.9)), (" B", math.log(0.1))]
    late = [(" B", math.log(0.3)), (" C", math.log(0.6))]
    output = reply([(" C", math.log(0.9), early), (" B", math.log(0.3), late)])
    assert answer_confidence(output, "B", 4) == pytest.approx(1 / 3, rel=1e-15)
    assert answer_confidence(output, "C", 4) == pytest.approx(0.9, rel=1e-15)  # its own token


def test_no_confidence_without_logprobs_or_letters() -> None:
    assert answer_confidence(ModelOutput.from_content("m", "ANSWER: B"), "B", 4) is None
    no_top = reply([(" B", -0.1, None)])
    assert answer_confidence(no_top, "B", 4) is None
    no_letter = reply([(" B", -0.1, [(" The", -0.5), (" E", -1.0)])])
    assert answer_confidence(no_letter, "B", 4) is None
    assert answer_confidence(reply([(" A", -0.1, [(" A", -0.1)])]), "B", 4) is None
    # the letter token was sampled although it is not in its own top list: probability 0
    sampled = reply([(" B", -4.0, [(" A", -0.1), (" C", -2.5)])])
    assert answer_confidence(sampled, "B", 4) == 0.0


# ---------------------------------------------------------------- the metrics


def test_metrics_are_calibration_metrics_of_the_scores() -> None:
    # inspect's reduced scores are floats (C -> 1.0): full credit is correct, P (0.5) is not
    pairs = [
        ("C", 0.95),
        (1.0, 0.95),
        ("I", 0.95),
        ("P", 0.7),
        (0.5, 0.7),
        ("C", 0.3),
        ("yes", 0.3),
        ("N", 0.05),
        ("C", None),
        ("I", None),
    ]
    frame = pl.DataFrame(
        {
            "confidence": [0.95, 0.95, 0.95, 0.7, 0.7, 0.3, 0.3, 0.05],
            "correct": [True, True, False, False, False, True, True, False],
        }
    )
    expected = cf.calibration_metrics(frame).row(0, named=True)
    sample_scores = scores(pairs)
    assert ece()(sample_scores) == pytest.approx(expected["ece"], rel=1e-12)
    assert brier()(sample_scores) == pytest.approx(expected["brier"], rel=1e-12)
    assert log_loss()(sample_scores) == pytest.approx(expected["log_loss"], rel=1e-12)
    assert mce()(sample_scores) == pytest.approx(expected["mce"], rel=1e-12)
    assert missing_confidence()(sample_scores) == 2.0
    # by hand: bins 9 (2 of 3 right at 0.95), 7 (0 of 2 at 0.7), 3 (2 of 2 at 0.3), 0 (0 at 0.05)
    by_hand = (3 * abs(0.95 - 2 / 3) + 2 * 0.7 + 2 * 0.7 + 0.05) / 8
    assert ece()(sample_scores) == pytest.approx(by_hand, rel=1e-12)
    assert mce()(sample_scores) == pytest.approx(0.7, rel=1e-12)  # the textbook MCE (32.20)


def test_edge_confidences_land_in_the_bin_above() -> None:
    # 0.3 and 0.7 are bin edges: with exact edges they open bins 3 and 7 (a division by the
    # bin width would put 0.3 in bin 2); five right at 0.3 and five wrong at 0.29999999.
    pairs = [("C", 0.3)] * 5 + [("I", 0.29999999)] * 5
    assert ece(bins=10)(scores(pairs)) == pytest.approx(0.5 * 0.7 + 0.5 * 0.29999999)


def test_no_confidence_is_nan_with_a_count_not_an_error() -> None:
    none = scores([("C", None), ("I", None), ("C", None)])
    for factory in (ece, mce, brier, log_loss):
        assert math.isnan(factory()(none))
    assert missing_confidence()(none) == 3.0
    assert math.isnan(ece()([])) and missing_confidence()([]) == 0.0


def test_metrics_nest_in_grouped() -> None:
    pairs = [("C", 0.9), ("I", 0.9), ("C", 0.6), ("C", 0.6), ("I", 0.2), ("C", None)]
    by_kind = grouped(ece(), "kind")(scores(pairs))
    assert isinstance(by_kind, dict)
    # kind b: rows 0, 2, 4 -> 0.9 right, 0.6 right, 0.2 wrong; kind a: 0.9 wrong, 0.6 right
    assert by_kind["b"] == pytest.approx((0.1 + 0.4 + 0.2) / 3, rel=1e-12)
    assert by_kind["a"] == pytest.approx((0.9 + 0.4) / 2, rel=1e-12)
    assert by_kind["all"] == pytest.approx(ece()(scores(pairs)), rel=1e-12)


def test_everything_is_registered_under_calib_frames() -> None:
    for name in ("ece", "mce", "brier", "log_loss", "missing_confidence"):
        assert registry_info(getattr(integration, name)).name == f"calib_frames/{name}"
        assert registry_info(getattr(integration, name)).metadata == {"scores": "unreduced"}
    assert registry_info(integration.choice_with_confidence).name == f"calib_frames/{SCORER}"
    assert integration.ece.__doc__ and "Expected calibration error" in integration.ece.__doc__


# ---------------------------------------------------------------- real runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The four runs of ``inspect_runs.py``, with the statistics hook on."""
    tmp = tmp_path_factory.mktemp("inspect")
    env = harness_env(tmp, CALIB_FRAMES_STATISTICS_DIR=str(tmp / "statistics"))
    out = run([sys.executable, str(HERE / "inspect_runs.py"), str(tmp / "logs")], env, tmp)
    logs = dict(line.split() for line in out.splitlines() if line.endswith(".eval"))
    return {name: tmp / "logs" / file for name, file in logs.items()} | {"tmp": tmp}


def reported(log: EvalLog, scorer: str = SCORER) -> dict[str, float]:
    assert log.results is not None
    return {
        name: metric.value
        for score in log.results.scores
        if score.name == scorer
        for name, metric in score.metrics.items()
    }


def read_back(path: Path, scorer: str = SCORER) -> pl.DataFrame:
    """calib_frames' reader on the log: the predictions the metrics should have seen."""
    rows = cf.sources.scan_inspect_samples(path).filter(pl.col("scorer") == scorer).collect()
    return rows


def answered(rows: pl.DataFrame) -> pl.DataFrame:
    # a sample with a chosen letter has a non-empty answer; without logprobs no confidence
    return rows.filter(pl.col("answer") != "").drop_nulls("letter_confidence")


@pytest.mark.slow
def test_reported_metrics_equal_calib_frames_on_the_log(runs: dict[str, Path]) -> None:
    log = read_eval_log(str(runs["epochs"]))
    rows = read_back(runs["epochs"])
    assert rows.height == QUESTIONS * 2  # every sample and epoch is a prediction
    used = answered(rows)
    expected = cf.calibration_metrics(used, confidence="letter_confidence").row(0, named=True)
    got = reported(log)
    for name in ("ece", "brier", "log_loss"):
        assert got[name] == pytest.approx(expected[name], rel=1e-12, abs=1e-12), name
    assert got["mce"] == pytest.approx(expected["mce"], rel=1e-12)
    assert got["missing_confidence"] == rows.height - used.height > 0
    assert got["accuracy"] == pytest.approx(rows["score"].mean(), rel=1e-12)
    print(f"inspect reported ece {got['ece']!r}; calib_frames on its log {expected['ece']!r}")


@pytest.mark.slow
def test_each_sample_records_the_readers_letter_confidence(runs: dict[str, Path]) -> None:
    log = read_eval_log(str(runs["epochs"]))
    assert log.samples is not None
    recorded = pl.DataFrame(
        [
            (str(s.id), s.epoch, (s.scores or {})[SCORER].metadata["confidence"])  # type: ignore[index]
            for s in log.samples
        ],
        schema={"sample": pl.String, "epoch": pl.Int64, "recorded": pl.Float64},
        orient="row",
    )
    both = read_back(runs["epochs"]).join(recorded, on=["sample", "epoch"])
    assert both.height == QUESTIONS * 2
    with_answer = both.filter(pl.col("answer") != "")
    diff = (with_answer["recorded"] - with_answer["letter_confidence"]).abs().max()
    assert diff is not None and diff < 1e-15
    assert (
        with_answer["recorded"].is_null().sum() == with_answer["letter_confidence"].is_null().sum()
    )
    # the chain-of-thought reply names another letter first; the answer's own token counts
    cot = both.filter(pl.col("sample") == "q-cot").drop_nulls("recorded")
    assert cot.height >= 1
    # no chosen letter (empty reply, wrong format): the score stays, the confidence does not
    unanswered = both.filter(pl.col("sample").is_in(["q-empty", "q-format"]))
    assert unanswered["recorded"].is_null().all() and unanswered["value"].is_in(["N", "I"]).all()


@pytest.mark.slow
def test_grouped_metrics_per_kind(runs: dict[str, Path]) -> None:
    log = read_eval_log(str(runs["grouped"]))
    assert log.samples is not None
    kinds = pl.DataFrame(
        [(str(s.id), (s.metadata or {})["kind"]) for s in log.samples],
        schema={"sample": pl.String, "kind": pl.String},
        orient="row",
    )
    used = answered(read_back(runs["grouped"])).join(kinds, on="sample")
    expected = cf.calibration_metrics(used, confidence="letter_confidence", by="kind")
    got = reported(log)
    for kind, value, brier_value in expected.select("kind", "ece", "brier").iter_rows():
        assert got[f"ece_{kind}"] == pytest.approx(value, rel=1e-12)
        assert got[f"brier_{kind}"] == pytest.approx(brier_value, rel=1e-12)
    pooled = cf.calibration_metrics(used, confidence="letter_confidence").row(0, named=True)
    assert got["ece"] == pytest.approx(pooled["ece"], rel=1e-12)
    assert got["missing_confidence"] == QUESTIONS - used.height


@pytest.mark.slow
def test_a_run_without_logprobs_reports_nan_and_the_count(runs: dict[str, Path]) -> None:
    log = read_eval_log(str(runs["none"]))
    assert log.status == "success"
    got = reported(log)
    assert all(math.isnan(got[name]) for name in ("ece", "mce", "brier", "log_loss"))
    assert got["missing_confidence"] == QUESTIONS
    assert got["accuracy"] == pytest.approx(read_back(runs["none"])["score"].mean(), rel=1e-12)


@pytest.mark.slow
def test_the_hook_writes_each_runs_bin_statistics(runs: dict[str, Path]) -> None:
    files = sorted((runs["tmp"] / "statistics").glob("*.parquet"))
    stored = cf.read_statistics(*files)
    keys = ["model", "task", "scorer"]
    assert stored.keys == keys
    metrics = cf.metrics_from_bin_statistics(cf.merge_bin_statistics(stored.table, by=keys))
    tasks = dict(zip(metrics["task"], metrics["ece"], strict=True))
    assert set(tasks) == {"calib_mc_epochs", "calib_mc_grouped"}  # the no-logprobs run: no file
    for name in ("epochs", "grouped"):
        log = read_eval_log(str(runs[name]), header_only=True)
        assert log.eval.eval_id in stored.batches
        assert tasks[log.eval.task] == pytest.approx(reported(log)["ece"], rel=1e-12)


@pytest.mark.slow
def test_inspect_score_appends_confidences_to_a_log(runs: dict[str, Path], tmp_path: Path) -> None:
    """``inspect score LOG --scorer calib_frames/... --action append`` on a choice() log."""
    env = harness_env(tmp_path)
    out = tmp_path / "scored.eval"
    command = [
        scripts_bin("inspect"),
        "score",
        str(runs["plain"]),
        "--scorer",
        f"calib_frames/{SCORER}",
        "--action",
        "append",
        "--output-file",
        str(out),
        "--display",
        "none",
    ]
    run(command, env, ROOT)
    log = read_eval_log(str(out), header_only=True)
    assert log.results is not None
    assert {s.name for s in log.results.scores} == {"choice", SCORER}
    got = reported(log)
    # the solver's marks are gone from a log: the answers were read again, as inspect's
    # multiple_choice solver reads them, so the accuracy is choice()'s own
    accuracy = read_back(out, "choice")["score"].mean()
    assert got["accuracy"] == reported(log, "choice")["accuracy"] == pytest.approx(accuracy)
    used = answered(read_back(out))
    expected = cf.calibration_metrics(used, confidence="letter_confidence").row(0, named=True)
    assert got["ece"] == pytest.approx(expected["ece"], rel=1e-12)
    assert got["brier"] == pytest.approx(expected["brier"], rel=1e-12)
    # a metric by name replaces the scorer's own
    command[command.index("--output-file") + 1] = str(tmp_path / "brier.eval")
    run([*command, "--metric", "calib_frames/brier"], env, ROOT)
    only = reported(read_eval_log(str(tmp_path / "brier.eval"), header_only=True))
    assert set(only) == {"brier"} and only["brier"] == pytest.approx(expected["brier"], rel=1e-12)
