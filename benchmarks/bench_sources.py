"""Benchmark of the sources layer: multiple-choice softmax/prediction and the lm-eval reader.

Peers, from the same run:

* ``choice_predictions`` (raw + per-character scoring, checks included) vs lm-eval's own
  per-document code path (``np.argmax`` and ``softmax`` per document, in a Python loop, as
  ``ConfigurableTask.process_results`` does) and vs a fully vectorised numpy version on a
  dense (questions × 4) array (the fastest possible when every question has 4 options);
* ``scan_lm_eval_options(...).collect()`` on a synthetic samples file vs a ``json.loads``
  loop that builds the same rows in Python.

Cross-checks (not timed, ``harness.time_interleaved`` against calib_frames): per question the
raw prediction (exact), its confidence (1e-9) and correctness under raw and per-character
scoring (exact; the lm-eval loop gives the raw prediction, confidence and both correctness
flags, the dense numpy version all four); per option row of the reader (question, option,
loglik, is_gold, chars). A mismatch exits 1.

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
from calib_frames.sources import choice_predictions, scan_lm_eval_options

CHOICE, READER = Registry(), Registry()
ONCE = ("lm_eval_loop", "json_loads_loop")  # the Python loops run once


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


def timed(src: Source, registry: Registry, title: str, repeats: int) -> dict[str, Any]:
    peers = registry.select([p.name for p in registry])
    highlight = ("loglik", "chars") if registry is READER else ("prediction", "confidence")
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
    report.print_header("Sources: option softmax and the lm-eval reader", env)
    frame, lls, lengths, gold = options_data(n)
    src = frame_source(frame, Spec(frame.height, n, 1), arrays=(lls, lengths, gold))
    runs = [timed(src, CHOICE, f"choice_predictions, {n:,} questions x 4 options", repeats)]
    with tempfile.TemporaryDirectory() as tmp:
        file = samples_file(Path(tmp), n)
        size = file.stat().st_size / 1e6
        reader = frame_source(None, Spec(4 * n, 1, 1), folder=tmp, file=file)
        title = f"lm-eval samples reader, {n:,} documents ({size:.1f} MB)"
        runs.append(timed(reader, READER, title, repeats))
    failed = sum(report.failures(r["checks"], r["errors"]) for r in runs)
    report.save_json(args.json, environment=env, runs=runs)
    print("\ncross-check ok" if not failed else f"\n{failed} check(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
