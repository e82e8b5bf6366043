"""lm-evaluation-harness readers, pinned against the real --log_samples fixtures (data/lm_eval).

The fixtures were written by lm-eval itself (data/README.md says how). The references here
are read independently with ``json`` and plain Python: lm-eval's own aggregates from its
results files, its per-sample ``acc``/``acc_norm`` fields, its word and byte counts
(``len(re.split(r"\\s+", text))``, ``len(text.encode("utf-8"))``).
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from calib_frames import multiclass, sources
from calib_frames.comparison import lm_eval_comparison
from calib_frames.exceptions import DataError, ReadError
from calib_frames.sources import (
    choice_predictions,
    read_lm_eval_reported,
    read_lm_eval_runs,
    scan_lm_eval_documents,
    scan_lm_eval_options,
)
from calib_frames.sources.lm_eval import WORD_SEPARATOR

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "lm_eval"

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="data/lm_eval fixtures not present")


def results_files() -> list[Path]:
    return sorted(DATA.rglob("results_*.json"))


def samples_of(results: Path, task: str) -> list[dict]:
    stamp = results.name[len("results_") : -len(".json")]
    file = results.parent / f"samples_{task}_{stamp}.jsonl"
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def comparison() -> pl.DataFrame:
    return lm_eval_comparison(DATA)


def test_runs_pair_samples_with_results_by_date_stamp() -> None:
    runs = read_lm_eval_runs(DATA)
    expected = set()
    for file in results_files():
        document = json.loads(file.read_text(encoding="utf-8"))
        stamp = file.name[len("results_") : -len(".json")]
        for task in document["configs"]:
            expected.add((document["model_name"], task, stamp))
    assert set(runs.select("model", "task", "run").iter_rows()) == expected
    for row in runs.iter_rows(named=True):
        assert row["samples_file"].endswith(f"samples_{row['task']}_{row['run']}.jsonl")
        assert Path(row["results_file"]).parent == Path(row["samples_file"]).parent
    # At least one folder holds several runs of the same model.
    per_folder = runs.group_by(pl.col("results_file").str.replace(r"/[^/]*$", "")).agg(
        pl.col("run").n_unique()
    )
    assert per_folder["run"].max() >= 2


def test_every_aggregate_reproduced_to_1e_12(comparison: pl.DataFrame) -> None:
    names = {
        "acc": "accuracy",
        "acc_norm": "acc_norm",
        "brier_score": "brier_multiclass",
        "word_perplexity": "word_perplexity",
        "byte_perplexity": "byte_perplexity",
        "bits_per_byte": "bits_per_byte",
    }
    checked = 0
    for file in results_files():
        document = json.loads(file.read_text(encoding="utf-8"))
        stamp = file.name[len("results_") : -len(".json")]
        for task, values in document["results"].items():
            row = comparison.filter(
                pl.col("model") == document["model_name"],
                pl.col("task") == task,
                pl.col("run") == stamp,
            ).row(0, named=True)
            for metric, column in names.items():
                reported = values.get(f"{metric},none")
                if reported is None:
                    continue
                assert row[column] == pytest.approx(reported, rel=1e-12, abs=1e-12), (
                    file,
                    task,
                    metric,
                )
                assert row[f"{column}_lm_eval"] == reported
                checked += 1
    assert checked >= 20


def test_per_sample_acc_and_acc_norm_match_lm_evals_fields() -> None:
    options = scan_lm_eval_options(DATA)
    preds = choice_predictions(
        options, by=["model", "task", "run"], normalize="char", no_gold="wrong"
    ).collect()
    for file in results_files():
        document = json.loads(file.read_text(encoding="utf-8"))
        stamp = file.name[len("results_") : -len(".json")]
        for task, config in document["configs"].items():
            if config["output_type"] != "multiple_choice":
                continue
            ours = preds.filter(
                pl.col("model") == document["model_name"],
                pl.col("task") == task,
                pl.col("run") == stamp,
            )
            raw = dict(
                ours.filter(pl.col("scoring") == "raw").select("question", "correct").iter_rows()
            )
            norm = dict(
                ours.filter(pl.col("scoring") == "per_char")
                .select("question", "correct")
                .iter_rows()
            )
            samples = samples_of(file, task)
            assert len(raw) == len(samples)
            for sample in samples:
                assert raw[sample["doc_id"]] == bool(sample["acc"])
                assert norm[sample["doc_id"]] == bool(sample["acc_norm"])


def test_options_frame_parses_strings_exactly() -> None:
    file = results_files()[0]
    document = json.loads(file.read_text(encoding="utf-8"))
    task = next(t for t, c in document["configs"].items() if c["output_type"] == "multiple_choice")
    stamp = file.name[len("results_") : -len(".json")]
    got = (
        scan_lm_eval_options(DATA)
        .filter(
            pl.col("model") == document["model_name"],
            pl.col("task") == task,
            pl.col("run") == stamp,
        )
        .collect()
    )
    assert got.columns == [
        "model",
        "task",
        "run",
        "question",
        "option",
        "loglik",
        "is_greedy",
        "is_gold",
        "text",
        "chars",
        "bytes",
    ]
    delimiter = document["configs"][task]["target_delimiter"]
    expected = []
    for sample in sorted(samples_of(file, task), key=lambda s: s["doc_id"]):
        for i, (ll, greedy) in enumerate(sample["filtered_resps"]):
            cont = sample["arguments"][f"gen_args_{i}"]["arg_1"]
            choice = cont[len(delimiter) :] if cont.startswith(delimiter) else cont
            gold = int(sample["target"])
            expected.append(
                (
                    sample["doc_id"],
                    i,
                    float(ll),
                    greedy == "True",
                    i == gold,
                    choice,
                    len(choice),
                    len(choice.encode()),
                )
            )
    rows = got.select(
        "question", "option", "loglik", "is_greedy", "is_gold", "text", "chars", "bytes"
    ).rows()
    assert rows == expected
    assert got["is_greedy"].any() and not got["is_greedy"].all()  # "False" is not truthy here


def test_documents_count_words_and_bytes_as_lm_eval() -> None:
    docs = scan_lm_eval_documents(DATA).collect()
    assert docs.columns == ["model", "task", "run", "doc_id", "nll", "tokens", "bytes", "words"]
    assert docs["tokens"].null_count() == docs.height  # lm-eval logs no token counts
    runs = read_lm_eval_runs(DATA).filter(pl.col("output_type") == "loglikelihood_rolling")
    assert runs.height >= 1
    for row in runs.iter_rows(named=True):
        samples = [
            json.loads(x)
            for x in Path(row["samples_file"]).read_text(encoding="utf-8").splitlines()
        ]
        ours = docs.filter(
            pl.col("model") == row["model"],
            pl.col("run") == row["run"],
            pl.col("task") == row["task"],
        )
        expected = sorted(
            (
                s["doc_id"],
                -float(s["filtered_resps"][0]),
                len(s["target"].encode("utf-8")),
                len(re.split(r"\s+", s["target"])),
            )
            for s in samples
        )
        assert ours.select("doc_id", "nll", "bytes", "words").rows() == expected
        # lm-eval's own per-sample (loglikelihood, count) pairs agree.
        for sample in samples:
            words = ours.filter(pl.col("doc_id") == sample["doc_id"])["words"].item()
            assert sample["word_perplexity"][1] == words


def test_word_separator_is_pythons_unicode_whitespace() -> None:
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    frame = pl.DataFrame({"c": [f"a{c}b" for c in chars]})
    ours = frame.select(pl.col("c").str.count_matches(WORD_SEPARATOR) + 1)["c"].to_list()
    python = [len(re.split(r"\s+", f"a{c}b")) for c in chars]
    assert ours == python


def test_comparison_columns_and_notes(comparison: pl.DataFrame) -> None:
    assert comparison.columns[:5] == ["model", "task", "run", "output_type", "count"]
    assert {"accuracy_lm_eval", "brier_multiclass", "bits_per_byte_lm_eval", "ece", "note"} <= set(
        comparison.columns
    )
    rolling = comparison.filter(pl.col("output_type") == "loglikelihood_rolling")
    assert rolling["note"].str.contains("no token counts").all()
    assert rolling["tokens"].null_count() == rolling.height
    mc = comparison.filter(pl.col("output_type") == "multiple_choice")
    assert mc["accuracy"].is_not_null().all() and mc["note"].is_null().all()
    assert set(comparison["model"]) == {
        json.loads(f.read_text(encoding="utf-8"))["model_name"] for f in results_files()
    }
    reported = read_lm_eval_reported(DATA)
    assert reported.columns == ["model", "task", "run", "metric", "filter", "value", "stderr"]
    acc = reported.filter(pl.col("metric") == "acc")
    assert acc["stderr"].is_not_null().all()


# --- traps and malformed logs, on copies of a fixture folder ---------------------------------


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    folder = results_files()[0].parent
    target = tmp_path / "out" / folder.name
    shutil.copytree(folder, target)
    return target


def test_interleaved_processes_are_sorted_by_doc_id(copy: Path) -> None:
    before = lm_eval_comparison(copy)
    for file in copy.glob("samples_*.jsonl"):
        lines = file.read_text(encoding="utf-8").splitlines()
        random.Random(3).shuffle(lines)
        file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    after = lm_eval_comparison(copy)
    for column in ("accuracy", "acc_norm", "brier_multiclass", "word_perplexity", "bits_per_byte"):
        for a, b in zip(before[column], after[column], strict=True):
            assert (a is None and b is None) or math.isclose(a, b, rel_tol=1e-12)
    options = scan_lm_eval_options(copy).collect()
    assert options.equals(options.sort("model", "task", "run", "question", "option"))


def test_truncated_samples_line_is_a_read_error_with_its_line(copy: Path) -> None:
    file = sorted(copy.glob("samples_*.jsonl"))[0]
    lines = file.read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4][: len(lines[4]) // 2]
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ReadError, match=rf"{re.escape(file.name)}, line 5: malformed record"):
        lm_eval_comparison(copy)


def test_non_numeric_response_is_a_data_error(copy: Path) -> None:
    file = next(f for f in sorted(copy.glob("samples_*.jsonl")) if "ppl" not in f.name)
    lines = file.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["filtered_resps"][0][0] = "nan?"
    lines[0] = json.dumps(record)
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="'loglik': 1 of"):
        lm_eval_comparison(copy)


def test_samples_without_results_and_broken_results(copy: Path, tmp_path: Path) -> None:
    results = sorted(copy.glob("results_*.json"))
    stamp = results[0].name[len("results_") : -len(".json")]
    for file in results:
        file.unlink() if file.name != results[0].name else None
    orphan = next(copy.glob(f"samples_*_{stamp}.jsonl"))
    orphan.rename(copy / orphan.name.replace(stamp, "2030-01-01T00-00-00.000000"))
    with pytest.raises(ReadError, match=r"no results_2030-01-01T00-00-00\.000000\.json next to it"):
        read_lm_eval_runs(copy)
    (copy / (orphan.name.replace(stamp, "2030-01-01T00-00-00.000000"))).unlink()
    results[0].write_text('{"results": {"x": 1', encoding="utf-8")
    with pytest.raises(ReadError, match="not a readable lm-eval results file"):
        read_lm_eval_runs(copy)
    results[0].write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ReadError, match="not an lm-eval results file"):
        read_lm_eval_runs(copy)
    empty = tmp_path / "nothing"
    empty.mkdir()
    with pytest.raises(ReadError, match="holds no data file"):
        read_lm_eval_runs(empty)


def test_list_targets_string_targets_and_out_of_range_golds(copy: Path) -> None:
    file = next(f for f in sorted(copy.glob("samples_*.jsonl")) if "ppl" not in f.name)
    records = [json.loads(x) for x in file.read_text(encoding="utf-8").splitlines()]
    records[0]["target"] = "[0, 1]"
    cont = records[1]["arguments"]["gen_args_1"]["arg_1"]
    records[1]["target"] = cont.lstrip(" ")  # a gold given as the choice's text
    records[2]["target"] = "99"  # no such option: lm-eval warns and scores it wrong
    file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    options = scan_lm_eval_options(copy).collect()
    task = file.name[len("samples_") : file.name.rfind("_")]
    mine = options.filter(pl.col("task") == task)
    gold = lambda q: mine.filter(pl.col("question") == records[q]["doc_id"])["is_gold"].to_list()  # noqa: E731
    assert gold(0)[:2] == [True, True]
    assert gold(1).index(True) == 1 and sum(gold(1)) == 1
    assert not any(gold(2))
    with pytest.raises(DataError, match="without a gold option"):
        choice_predictions(mine, by=["model", "task", "run"]).shape  # noqa: B018


def test_output_tables_follow_their_specs(comparison: pl.DataFrame) -> None:
    from calib_frames.schema import (
        BRIER_MULTICLASS,
        CHOICE_PREDICTIONS,
        LM_EVAL_COMPARISON,
        OPTION_PROBABILITIES,
    )

    options = scan_lm_eval_options(DATA)
    keys = ["model", "task", "run"]
    tables = [
        (LM_EVAL_COMPARISON, comparison),
        (CHOICE_PREDICTIONS, choice_predictions(options, by=keys, no_gold="wrong").collect()),
        (OPTION_PROBABILITIES, sources.option_probabilities(options, by=keys).collect()),
        (BRIER_MULTICLASS, multiclass.brier_multiclass(options, by=keys).collect()),
    ]
    for spec, table in tables:
        assert spec.keys(table.schema) == keys
        assert table.columns == [*keys, *spec.names]
        for name, dtype in spec.columns.items():
            if dtype != pl.Unknown:
                assert table.schema[name] == dtype, (spec.name, name)


def test_tasks_without_samples_keep_lm_evals_values(copy: Path) -> None:
    for file in copy.glob("samples_*.jsonl"):
        file.unlink()
    table = lm_eval_comparison(copy)
    assert table["count"].null_count() == table.height
    assert (table["note"] == "no samples logged for this task").all()
    assert table["accuracy_lm_eval"].drop_nulls().len() >= 1
    assert table["accuracy"].null_count() == table.height


def test_mutual_info_tasks_keep_the_conditional_half(copy: Path) -> None:
    before = lm_eval_comparison(copy)
    results = sorted(copy.glob("results_*.json"))[0]
    stamp = results.name[len("results_") : -len(".json")]
    document = json.loads(results.read_text(encoding="utf-8"))
    task = next(t for t, c in document["configs"].items() if c["output_type"] == "multiple_choice")
    document["configs"][task]["metric_list"].append({"metric": "acc_mutual_info"})
    results.write_text(json.dumps(document), encoding="utf-8")
    file = copy / f"samples_{task}_{stamp}.jsonl"
    records = [json.loads(x) for x in file.read_text(encoding="utf-8").splitlines()]
    for record in records:  # append the unconditional requests, as lm-eval does
        n = len(record["filtered_resps"])
        for i in range(n):
            arg = record["arguments"][f"gen_args_{i}"]
            record["arguments"][f"gen_args_{n + i}"] = {"arg_0": "", "arg_1": arg["arg_1"]}
        record["filtered_resps"] += [["-30.0", "False"]] * n
    file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    runs = read_lm_eval_runs(copy)
    assert runs.filter(pl.col("task") == task, pl.col("run") == stamp)["mutual_info"].item()
    after = lm_eval_comparison(copy)
    # to rounding: polars' parallel float sums may differ in the last bit between runs
    assert_frame_equal(
        after.select("accuracy", "acc_norm", "brier_multiclass"),
        before.select("accuracy", "acc_norm", "brier_multiclass"),
        rel_tol=1e-12,
        abs_tol=1e-15,
    )
