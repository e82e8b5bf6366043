"""Benchmark of the sources layer: multiple-choice softmax/prediction and the lm-eval reader.

Peers, from the same run:

* ``choice_predictions`` (raw + per-character scoring, checks included) vs lm-eval's own
  per-document code path (``np.argmax`` and ``softmax`` per document, in a Python loop, as
  ``ConfigurableTask.process_results`` does) and vs a fully vectorised numpy version on a
  dense (questions × 4) array (the fastest possible when every question has 4 options);
* ``scan_lm_eval_options(...).collect()`` on a synthetic samples file vs a ``json.loads``
  loop that builds the same rows in Python.

Run: ``python -m benchmarks.bench_sources [--questions N]`` (default 20,000 questions).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from calib_frames.sources import choice_predictions, scan_lm_eval_options


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20_000)
    args = parser.parse_args()
    n = args.questions
    frame, lls, lengths, gold = options_data(n)
    ours = best_of(lambda: choice_predictions(frame, normalize="char"))
    loop = best_of(lambda: lm_eval_loop(lls, lengths, gold), repeat=1)
    dense = best_of(lambda: numpy_dense(lls, lengths, gold))
    print(f"choice_predictions, {n:,} questions x 4 options, raw + per_char scoring")
    print(f"  calib_frames              {ours * 1e3:9.1f} ms")
    print(f"  lm-eval per-document loop {loop * 1e3:9.1f} ms   ({loop / ours:5.1f}x ours)")
    print(f"  numpy dense (n x 4)       {dense * 1e3:9.1f} ms   ({dense / ours:5.2f}x ours)")
    with tempfile.TemporaryDirectory() as tmp:
        file = samples_file(Path(tmp), n)
        read = best_of(lambda: scan_lm_eval_options(tmp).collect())
        python = best_of(lambda: python_reader(file), repeat=1)
        size = file.stat().st_size / 1e6
        print(f"lm-eval samples reader, {n:,} documents ({size:.1f} MB)")
        print(f"  scan_lm_eval_options      {read * 1e3:9.1f} ms")
        print(f"  json.loads loop           {python * 1e3:9.1f} ms   ({python / read:5.1f}x ours)")


if __name__ == "__main__":
    main()
