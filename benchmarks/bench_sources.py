"""Benchmark of the sources layer: multiple-choice softmax/prediction and the lm-eval reader.

Peers, from the same run:

* ``choice_predictions`` (raw + per-character scoring, checks included) vs lm-eval's own
  per-document code path (``np.argmax`` and ``softmax`` per document, in a Python loop, as
  ``ConfigurableTask.process_results`` does) and vs a fully vectorised numpy version on a
  dense (questions × 4) array (the fastest possible when every question has 4 options);
* ``scan_lm_eval_options(...).collect()`` on a synthetic samples file vs a ``json.loads``
  loop that builds the same rows in Python;
* the readers of the other evaluation tools against a plain Python loop over the same
  files (``zipfile`` + ``zstandard`` + ``json.loads`` for inspect_ai, ``json.load`` for
  HELM, ``pyarrow`` ``to_pylist`` for lighteval), building the same rows: inspect's real
  ``.eval`` fixtures copied until there are about ``--questions`` sample-epochs; a HELM run
  folder and a lighteval details file made of the real fixtures' records, repeated.

Cross-checks (not timed, ``harness.time_interleaved`` against calib_frames): per question the
raw prediction (exact), its confidence (1e-9) and correctness under raw and per-character
scoring (exact; the lm-eval loop gives the raw prediction, confidence and both correctness
flags, the dense numpy version all four); per option row of the reader (question, option,
loglik, is_gold, chars); per row of the other readers the numbers they read (score and
confidence; confidence, exact match and log-probability; option, log-likelihood, gold flag
and characters). A mismatch exits 1.

Run: ``python -m benchmarks.bench_sources [--questions N]`` (default 20,000 questions; best
of ``--repeats`` (3) for calib_frames and the dense numpy version, the Python loops once);
``--quick``: 500 questions, one repeat.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))

import numpy as np
import polars as pl

from benchmarks import harness, report
from benchmarks.peers import Registry, Result
from benchmarks.workload import Source, Spec, frame_source
from calib_frames.sources import (
    choice_predictions,
    scan_helm_instances,
    scan_inspect_samples,
    scan_lighteval_options,
    scan_lm_eval_options,
)

CHOICE, READER = Registry(), Registry()
INSPECT, HELM, LIGHTEVAL = Registry(), Registry(), Registry()
ONCE = ("lm_eval_loop", "json_loads_loop", "python_loop")  # the Python loops run once
FIXTURES = Path(__file__).resolve().parent.parent / "data"


def options_data(n: int, k: int = 4) -> tuple[pl.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    lls = -rng.exponential(3.0, size=(n, k))
    lengths = rng.integers(1, 20, size=(n, k)).astype(float)
    gold = rng.integers(0, k, size=n)
    frame = pl.DataFrame(
        {
            "question": np.repeat(np.arange(n), k),
            "option": np.tile(np.arange(k), n),
            "loglik": lls.ravel(),
            "is_gold": (np.tile(np.arange(k), n) == np.repeat(gold, k)),
            "chars": lengths.ravel(),
        }
    )
    return frame, lls, lengths, gold


def lm_eval_loop(lls: np.ndarray, lengths: np.ndarray, gold: np.ndarray) -> list[tuple]:
    out = []
    for row, length, g in zip(lls, lengths, gold, strict=True):
        pred = np.argmax(row)
        pred_norm = np.argmax(row / length)
        e = np.exp(row - np.max(row))
        prob = e / e.sum()
        out.append((pred, prob[pred], pred == g, pred_norm == g))
    return out


def numpy_dense(lls: np.ndarray, lengths: np.ndarray, gold: np.ndarray) -> tuple:
    results = []
    for scores in (lls, lls / lengths):
        top = scores.max(axis=1, keepdims=True)
        log_conf = -np.log(np.exp(scores - top).sum(axis=1))
        pred = scores.argmax(axis=1)
        results.append((pred, np.exp(log_conf), pred == gold))
    return tuple(results)


def samples_file(folder: Path, n: int, k: int = 4) -> Path:
    rng = np.random.default_rng(1)
    (folder / "results_2026-01-01T00-00-00.000000.json").write_text(
        json.dumps(
            {
                "results": {"bench_task": {"acc,none": 0.5}},
                "configs": {
                    "bench_task": {"output_type": "multiple_choice", "target_delimiter": " "}
                },
                "model_name": "bench/model",
            }
        )
    )
    lines = []
    for doc in range(n):
        lls = -rng.exponential(3.0, size=k)
        lines.append(
            json.dumps(
                {
                    "doc_id": doc,
                    "doc": {"question": f"q{doc}", "choices": [f"choice {i}" for i in range(k)]},
                    "target": str(int(rng.integers(0, k))),
                    "arguments": {
                        f"gen_args_{i}": {"arg_0": f"q{doc}", "arg_1": f" choice {i}"}
                        for i in range(k)
                    },
                    "resps": [[[str(x), "False"]] for x in lls],
                    "filtered_resps": [[str(x), "False"] for x in lls],
                    "filter": "none",
                }
            )
        )
    file = folder / "samples_bench_task_2026-01-01T00-00-00.000000.jsonl"
    file.write_text("\n".join(lines) + "\n")
    return file


def python_reader(file: Path) -> list[tuple]:
    rows = []
    for line in file.read_text().splitlines():
        sample = json.loads(line)
        gold = int(sample["target"])
        for i, (ll, greedy) in enumerate(sample["filtered_resps"]):
            text = sample["arguments"][f"gen_args_{i}"]["arg_1"][1:]
            rows.append(
                (sample["doc_id"], i, float(ll), greedy == "True", i == gold, text, len(text))
            )
    return rows


def choice_result(out: pl.DataFrame, src: Source) -> Result:
    raw = out.filter(pl.col("scoring") == "raw").sort("question")
    per_char = out.filter(pl.col("scoring") == "per_char").sort("question")
    return Result(
        {
            "prediction": raw["prediction"].to_numpy(),
            "confidence": raw["confidence"].to_numpy(),
            "correct": raw["correct"].to_numpy(),
            "correct_per_char": per_char["correct"].to_numpy(),
        },
        exact=("prediction", "correct", "correct_per_char"),
    )


def loop_result(out: list[tuple], src: Source) -> Result:
    pred, conf, correct, correct_norm = (np.array(column) for column in zip(*out, strict=True))
    return Result(
        {"prediction": pred, "confidence": conf, "correct": correct,
         "correct_per_char": correct_norm},
        exact=("prediction", "correct", "correct_per_char"),
    )  # fmt: skip


def dense_result(out: tuple, src: Source) -> Result:
    (pred, conf, correct), (_, _, correct_norm) = out
    return Result(
        {"prediction": pred, "confidence": conf, "correct": correct,
         "correct_per_char": correct_norm},
        exact=("prediction", "correct", "correct_per_char"),
    )  # fmt: skip


@CHOICE.peer(
    "calib_frames",
    role="subject",
    what='choice_predictions(frame, normalize="char") (raw + per character, checks included)',
    normalise=choice_result,
)
def run_choice(src: Source) -> pl.DataFrame:
    return choice_predictions(src.table(), normalize="char")


@CHOICE.peer(
    "lm_eval_loop",
    what="lm-eval's per-document argmax and softmax in a Python loop",
    normalise=loop_result,
)
def run_loop(src: Source) -> list[tuple]:
    return lm_eval_loop(*src.extra["arrays"])


@CHOICE.peer(
    "numpy_dense",
    what="vectorised numpy on a dense (questions x 4) array",
    normalise=dense_result,
)
def run_dense(src: Source) -> tuple:
    return numpy_dense(*src.extra["arrays"])


READ_FIELDS = ("question", "option", "loglik", "is_gold", "chars")


@READER.peer(
    "calib_frames",
    role="subject",
    what="scan_lm_eval_options(folder).collect()",
    normalise=lambda out, src: Result(
        {n: out.sort("question", "option")[n].to_numpy() for n in READ_FIELDS},
        exact=("question", "option", "is_gold", "chars"),
    ),
)
def run_reader(src: Source) -> pl.DataFrame:
    return scan_lm_eval_options(src.extra["folder"]).collect()


def rows_result(out: list[tuple], src: Source) -> Result:
    """The Python reader's rows (doc_id, option, loglik, greedy, gold, text, chars)."""
    columns = [np.array(c) for c in zip(*out, strict=True)]
    values = dict(zip(READ_FIELDS, [*columns[:3], columns[4], columns[6]], strict=True))
    return Result(values, exact=("question", "option", "is_gold", "chars"))


@READER.peer(
    "json_loads_loop",
    what="a json.loads loop building the same rows in Python",
    normalise=rows_result,
)
def run_python_reader(src: Source) -> list[tuple]:
    return python_reader(src.extra["file"])


# ---- inspect_ai: the real .eval fixtures, copied ---------------------------------------------

INSPECT_FIELDS = ("score", "confidence")


def inspect_folder(folder: Path, n: int) -> int:
    """Copies of the four fixture ``.eval`` logs until about ``n`` sample-epochs; the count.

    Each copy is a run of its own (the reader refuses a sample read twice): its
    ``header.json`` is stored again with another ``eval.created`` (``zipfile`` reads the
    last entry of a name), the zstd sample members are the fixture's.
    """
    import warnings
    import zipfile

    import zstandard

    logs = sorted((FIXTURES / "inspect_ai" / "logs").glob("*.eval"))
    headers = []
    for log in logs:
        raw = log.read_bytes()
        with zipfile.ZipFile(log) as archive:
            info = archive.getinfo("header.json")
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        data = raw[start : start + info.compress_size]
        headers.append(json.loads(zstandard.ZstdDecompressor().decompressobj().decompress(data)))
    copies, rows = 0, 0
    while rows < n:
        for log, header in zip(logs, headers, strict=True):
            target = folder / f"{copies:05d}_{log.name}"
            target.write_bytes(log.read_bytes())
            created = header["eval"]["created"].replace("+", f".{copies:06d}+")
            run = {**header, "eval": {**header["eval"], "created": created}}
            with warnings.catch_warnings(), zipfile.ZipFile(target, "a") as archive:
                warnings.simplefilter("ignore", UserWarning)  # header.json stored again
                archive.writestr("header.json", json.dumps(run))
        copies += 1
        rows += 144  # 40 + 40 + 16 x 2 + 16 x 2 sample-epochs
    return rows


def inspect_loop(folder: Path) -> list[tuple]:
    """The rows of every log: zip members decompressed one by one, ``json.loads`` each."""
    import zipfile

    import zstandard

    values = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
    rows = []
    for file in sorted(folder.glob("*.eval")):
        raw = file.read_bytes()
        with zipfile.ZipFile(file) as archive:
            for info in archive.infolist():
                if not info.filename.startswith("samples/"):
                    continue
                at = info.header_offset
                start = at + 30 + int.from_bytes(raw[at + 26 : at + 28], "little")
                start += int.from_bytes(raw[at + 28 : at + 30], "little")
                data = (
                    zstandard.ZstdDecompressor()
                    .decompressobj()
                    .decompress(raw[start : start + info.compress_size])
                )
                sample = json.loads(data)
                tokens = (sample["output"]["choices"][0].get("logprobs") or {}).get("content") or []
                letters = [chr(65 + i) for i in range(len(sample.get("choices") or []))]
                confidence = None
                if tokens and letters:
                    answer = [t for t in tokens if t["token"].strip() in letters]
                    confidence = float(np.exp(answer[-1]["logprob"])) if answer else None
                elif tokens:
                    confidence = float(np.exp(sum(t["logprob"] for t in tokens)))
                for scorer, score in sample["scores"].items():
                    value = values.get(score["value"], score["value"])
                    key = (file.name, scorer, sample["id"], sample["epoch"])
                    rows.append((*key, float(value), confidence))
    rows.sort(key=lambda row: row[:4])
    return rows


def fields_of(frame: pl.DataFrame, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Numeric columns as float arrays, null as -1 (the cross-check counts NaN as a miss)."""
    return {n: frame[n].cast(pl.Float64).fill_null(-1.0).to_numpy() for n in names}


def tuples_of(rows: list[tuple], names: tuple[str, ...], first: int) -> dict[str, np.ndarray]:
    columns = list(zip(*rows, strict=True))[first:]
    return {
        n: np.array([-1.0 if v is None else float(v) for v in c])
        for n, c in zip(names, columns, strict=True)
    }


@INSPECT.peer(
    "calib_frames",
    role="subject",
    what="scan_inspect_samples(folder).collect()",
    normalise=lambda out, src: Result(fields_of(out, INSPECT_FIELDS), exact=("score",)),
)
def run_inspect(src: Source) -> pl.DataFrame:
    return (
        scan_inspect_samples(src.extra["folder"]).collect().sort("log", "scorer", "sample", "epoch")
    )


@INSPECT.peer(
    "python_loop",
    what="zipfile + zstandard + json.loads per member, rows in Python",
    normalise=lambda out, src: Result(tuples_of(out, INSPECT_FIELDS, 4), exact=("score",)),
)
def run_inspect_loop(src: Source) -> list[tuple]:
    return inspect_loop(src.extra["folder"])


# ---- HELM: a run folder of the fixture's records, repeated ------------------------------------

HELM_FIELDS = ("confidence", "exact_match", "log_confidence")


def helm_folder(folder: Path, n: int) -> None:
    """One run folder with about ``n`` (instance, perturbation) entries."""
    run = sorted(p for p in (FIXTURES / "helm" / "runs" / "calib").iterdir() if p.is_dir())[0]
    stats = json.loads((run / "per_instance_stats.json").read_text())
    state = json.loads((run / "scenario_state.json").read_text())
    copies = max(1, n // len(stats))
    new_stats, new_states = [], []
    for copy in range(copies):
        for entry in stats:
            new_stats.append({**entry, "instance_id": f"{entry['instance_id']}_{copy}"})
        for request in state["request_states"]:
            instance = {**request["instance"], "id": f"{request['instance']['id']}_{copy}"}
            new_states.append({**request, "instance": instance})
    target = folder / run.name
    target.mkdir()
    (target / "run_spec.json").write_text((run / "run_spec.json").read_text())
    (target / "per_instance_stats.json").write_text(json.dumps(new_stats, indent=2))
    (target / "scenario_state.json").write_text(
        json.dumps({**state, "request_states": new_states}, indent=2)
    )


def helm_loop(folder: Path) -> list[tuple]:
    """``json.load`` of the two files, joined in a dict, rows in file order."""
    rows = []
    for run in sorted(p for p in folder.iterdir() if p.is_dir()):
        states = json.loads((run / "scenario_state.json").read_text())["request_states"]
        logprob = {}
        for request in states:
            key = (
                request["instance"]["id"],
                (request["instance"].get("perturbation") or {}).get("name"),
            )
            logprob[key] = request["result"]["completions"][0]["logprob"]
        for entry in json.loads((run / "per_instance_stats.json").read_text()):
            stats = {s["name"]["name"]: s.get("mean") for s in entry["stats"]}
            key = (entry["instance_id"], (entry.get("perturbation") or {}).get("name"))
            rows.append((*key, stats.get("max_prob"), stats.get("exact_match"), logprob.get(key)))
    return rows


@HELM.peer(
    "calib_frames",
    role="subject",
    what="scan_helm_instances(folder).collect()",
    normalise=lambda out, src: Result(fields_of(out, HELM_FIELDS), exact=("exact_match",)),
)
def run_helm(src: Source) -> pl.DataFrame:
    return scan_helm_instances(src.extra["folder"]).collect()


@HELM.peer(
    "python_loop",
    what="json.load of both files, a dict join, rows in Python",
    normalise=lambda out, src: Result(tuples_of(out, HELM_FIELDS, 2), exact=("exact_match",)),
)
def run_helm_loop(src: Source) -> list[tuple]:
    return helm_loop(src.extra["folder"])


# ---- lighteval: a details file of the fixture's rows, repeated --------------------------------

LIGHTEVAL_FIELDS = ("option", "loglik", "is_gold", "chars")


def lighteval_folder(folder: Path, n: int) -> None:
    """A details file (struct layout) with about ``n`` documents (each ``doc.id`` once)."""
    source = next((FIXTURES / "lighteval" / "current" / "details").rglob("*.parquet"))
    rows = pl.read_parquet(source)
    repeated = pl.concat(
        rows.with_columns(pl.col("doc").struct.with_fields(pl.field("id") + f"_{copy}"))
        for copy in range(max(1, n // rows.height))
    )
    target = folder / "details" / "bench" / source.parent.name / source.name
    target.parent.mkdir(parents=True)
    repeated.write_parquet(target)


def lighteval_loop(folder: Path) -> list[tuple]:
    """``pyarrow`` ``to_pylist`` of each details file, option rows in Python."""
    import pyarrow.parquet as pq

    rows = []
    for file in sorted(folder.rglob("details_*.parquet")):
        for record in pq.read_table(file).to_pylist():
            doc, response = record["doc"], record["model_response"]
            gold = doc["gold_index"]
            golds = gold if isinstance(gold, list) else [gold]
            for i, (text, loglik) in enumerate(
                zip(doc["choices"], response["logprobs"], strict=True)
            ):
                rows.append((doc["id"], i, loglik, i in golds, len(text)))
    return rows


@LIGHTEVAL.peer(
    "calib_frames",
    role="subject",
    what="scan_lighteval_options(folder).collect()",
    normalise=lambda out, src: Result(
        fields_of(out, LIGHTEVAL_FIELDS), exact=("option", "is_gold", "chars")
    ),
)
def run_lighteval(src: Source) -> pl.DataFrame:
    return scan_lighteval_options(src.extra["folder"]).collect()


@LIGHTEVAL.peer(
    "python_loop",
    what="pyarrow to_pylist, option rows in Python",
    normalise=lambda out, src: Result(
        tuples_of(out, LIGHTEVAL_FIELDS, 1), exact=("option", "is_gold", "chars")
    ),
)
def run_lighteval_loop(src: Source) -> list[tuple]:
    return lighteval_loop(src.extra["folder"])


def timed(src: Source, registry: Registry, title: str, repeats: int) -> dict[str, Any]:
    peers = registry.select([p.name for p in registry])
    highlights = {
        id(READER): ("loglik", "chars"),
        id(INSPECT): ("score", "confidence"),
        id(HELM): ("confidence", "exact_match"),
        id(LIGHTEVAL): ("loglik", "is_gold"),
    }
    highlight = highlights.get(id(registry), ("prediction", "confidence"))
    best, checks, errors = harness.time_interleaved(
        src, peers, repeats, once=ONCE, highlight=highlight
    )
    report.print_table(title, best, checks, errors, highlight=highlight)
    return {"source": title, "seconds": best, "checks": checks, "errors": errors}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="500 questions: seconds")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    n, repeats = (500, 1) if args.quick else (args.questions, args.repeats)
    env = harness.environment()
    report.print_header("Sources: option softmax and the evaluation-log readers", env)
    frame, lls, lengths, gold = options_data(n)
    src = frame_source(frame, Spec(frame.height, n, 1), arrays=(lls, lengths, gold))
    runs = [timed(src, CHOICE, f"choice_predictions, {n:,} questions x 4 options", repeats)]
    with tempfile.TemporaryDirectory() as tmp:
        file = samples_file(Path(tmp), n)
        size = file.stat().st_size / 1e6
        reader = frame_source(None, Spec(4 * n, 1, 1), folder=tmp, file=file)
        title = f"lm-eval samples reader, {n:,} documents ({size:.1f} MB)"
        runs.append(timed(reader, READER, title, repeats))
    makers = (
        (INSPECT, inspect_folder, "inspect_ai reader, {n:,} sample-epochs of .eval logs"),
        (HELM, helm_folder, "HELM reader, {n:,} instances of one run folder"),
        (LIGHTEVAL, lighteval_folder, "lighteval reader, {n:,} documents of one details file"),
    )
    for registry, make, title in makers:
        with tempfile.TemporaryDirectory() as tmp:
            made = make(Path(tmp), n)
            size = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file()) / 1e6
            source = frame_source(None, Spec(n, 1, 1), folder=Path(tmp))
            label = title.format(n=made if made else n) + f" ({size:.1f} MB)"
            runs.append(timed(source, registry, label, repeats))
    failed = sum(report.failures(r["checks"], r["errors"]) for r in runs)
    report.save_json(args.json, environment=env, runs=runs)
    print("\ncross-check ok" if not failed else f"\n{failed} check(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
