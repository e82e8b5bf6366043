"""Regenerate the lm-evaluation-harness fixtures in ``data/lm_eval/`` with the real tool.

Nothing is downloaded: the training text, the task data, the tokenizer and the two tiny
causal language models are all made here, and lm-eval runs with the hubs switched off
(``HF_HUB_OFFLINE=1``, ``HF_DATASETS_OFFLINE=1``). Not run in CI (it needs torch,
transformers, tokenizers and lm-eval, which are not calib_frames dependencies).

Run from the repository root, with a separate venv that has ``torch``, ``transformers``,
``tokenizers``, ``datasets`` and ``lm-eval``::

    /work/venvs/lmeval/bin/python data/make_lm_eval_fixtures.py all

Steps (each can be run alone: ``data``, ``train``, ``eval``, ``all``):

``data``
    Writes a synthetic "world" of facts (object colours, sums of small numbers), from
    ``random.Random(SEED)``: the training text ``data/lm_eval_tasks/train_corpus.txt``, the
    task data ``data/lm_eval_tasks/*.jsonl`` and the task YAML files next to them.
``train``
    Trains one byte-level BPE tokenizer on the training text and two GPT-2 models of
    different sizes on it (CPU, about a minute each), saved with ``save_pretrained`` under
    ``MODEL_ROOT/calib/<name>`` (outside the repository; not committed).
``eval``
    Runs ``lm_eval --model hf`` on the three tasks for each model with ``--log_samples``
    into ``data/lm_eval/`` (lm-eval's own layout: ``<sanitized model name>/results_<date>.json``
    and ``samples_<task>_<date>.jsonl``). The small model is evaluated twice, so its folder
    holds two runs with different date stamps (the second one without ``calib_ppl``).
    lm-eval runs in a scratch directory in which ``calib/<name>`` are symlinks to the saved
    models and ``data`` is a symlink to this repository's ``data/``, so that
    ``pretrained=calib/<name>`` looks like a hub id (its folder name shows lm-eval's
    ``/`` -> ``__`` sanitising) and the YAML's relative ``data_files`` resolve.

Tasks (defined in ``data/lm_eval_tasks/``):

``calib_colors``
    multiple_choice, 4 options (red, blue, green, yellow in a shuffled order per question),
    150 questions = 50 objects x 3 question templates. Of the objects, 34 have one colour,
    seen 1 to 8 times in training (so confidence varies); 8 are seen equally often with two
    colours (ties: the gold is the first colour); 8 never occur in training (near uniform).
    Metrics: acc, acc_norm, brier_score.
``calib_sums``
    multiple_choice, 3 options (the true sum, a near miss, a random other number), 100
    questions "what is a plus b?" for a, b in 0..9 written as words. 80 of the sums occur in
    training, 20 are held out. Metrics: acc, acc_norm, brier_score.
``calib_ppl``
    loglikelihood_rolling over 50 short documents made from held-out sentences of the same
    world. Metrics: word_perplexity, byte_perplexity, bits_per_byte.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SEED = 20261201
DATA_DIR = Path(__file__).resolve().parent
TASK_DIR = DATA_DIR / "lm_eval_tasks"
OUT_DIR = DATA_DIR / "lm_eval"
MODEL_ROOT = Path(os.environ.get("CALIB_FIXTURE_MODELS", "/work/venvs/models"))
SCRATCH = Path(os.environ.get("CALIB_FIXTURE_SCRATCH", "/tmp/calib_lmeval_run"))

COLORS = ["red", "blue", "green", "yellow"]
NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
OBJECTS = [
    "apple", "banana", "lemon", "cherry", "grape", "plum", "pear", "lime", "tomato", "carrot",
    "pepper", "onion", "melon", "peach", "berry", "kiwi", "corn", "bean", "leaf", "grass",
    "frog", "duck", "crow", "fox", "whale", "shark", "snail", "bee", "moth", "crab",
    "sky", "sea", "sun", "moon", "cloud", "rose", "tulip", "daisy", "lily", "fern",
    "car", "boat", "kite", "ball", "cup", "hat", "shoe", "door", "lamp", "book",
]  # fmt: skip
N_SINGLE = 34  # objects with one colour
N_TIE = 8  # objects seen with two colours equally often
# the remaining 8 objects never occur in the training text

FACT_TEMPLATES = [
    "the {obj} is {color}.",
    "a {obj} is always {color}.",
    "my {obj} is {color}.",
    "question: what color is the {obj}? answer: {color}.",
    "question: which color does the {obj} have? answer: {color}.",
    "question: tell me the color of the {obj}. answer: {color}.",
]
QUESTION_TEMPLATES = [
    "Question: what color is the {obj}?\nAnswer:",
    "Question: which color does the {obj} have?\nAnswer:",
    "Question: tell me the color of the {obj}.\nAnswer:",
]
SUM_TEMPLATES = [
    "{a} plus {b} is {c}.",
    "question: what is {a} plus {b}? answer: {c}.",
]

MODELS = {
    # name: (n_embd, n_layer, n_head, train_steps)
    "tiny-gpt2-s": (48, 2, 2, 400),
    "tiny-gpt2-m": (96, 3, 4, 400),
}
TASKS = ["calib_colors", "calib_sums", "calib_ppl"]


@dataclass
class World:
    """The synthetic facts: which objects have which colours, which sums are held out."""

    single: list[str]
    tie: list[str]
    unseen: list[str]
    colour_of: dict[str, list[str]]
    seen_times: dict[str, int]
    pairs: list[tuple[int, int]]
    held_out: set[tuple[int, int]]


def _world(rng: random.Random) -> World:
    objects = OBJECTS[:]
    rng.shuffle(objects)
    single = objects[:N_SINGLE]
    tie = objects[N_SINGLE : N_SINGLE + N_TIE]
    unseen = objects[N_SINGLE + N_TIE :]
    colour_of = {o: [rng.choice(COLORS)] for o in single + unseen}
    for o in tie:
        colour_of[o] = rng.sample(COLORS, 2)
    seen_times = {o: 1 + i % 8 for i, o in enumerate(single)}
    seen_times.update(dict.fromkeys(tie, 6))
    seen_times.update(dict.fromkeys(unseen, 0))
    pairs = [(a, b) for a in range(10) for b in range(10)]
    held_out = set(rng.sample(pairs, 20))
    return World(single, tie, unseen, colour_of, seen_times, pairs, held_out)


def _corpus(w: World, rng: random.Random) -> list[str]:
    lines: list[str] = []
    for i, o in enumerate(w.single):
        for k in range(w.seen_times[o]):
            t = FACT_TEMPLATES[(i + k) % len(FACT_TEMPLATES)]
            lines.append(t.format(obj=o, color=w.colour_of[o][0]))
    for o in w.tie:
        for k in range(w.seen_times[o]):
            c = w.colour_of[o][k % 2]
            lines.append(FACT_TEMPLATES[k % len(FACT_TEMPLATES)].format(obj=o, color=c))
    for a, b in w.pairs:
        if (a, b) in w.held_out:
            continue
        for t in SUM_TEMPLATES:
            lines.append(t.format(a=NUMBERS[a], b=NUMBERS[b], c=NUMBERS[a + b]))
    # the corpus is the fact lines repeated in shuffled order, one line each
    corpus: list[str] = []
    for _ in range(6):
        block = lines[:]
        rng.shuffle(block)
        corpus.extend(block)
    return corpus


def _colour_rows(w: World, rng: random.Random) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for o in sorted(w.single + w.tie + w.unseen):
        kind = "single" if o in w.single else ("tie" if o in w.tie else "unseen")
        for q, t in enumerate(QUESTION_TEMPLATES):
            choices = COLORS[:]
            rng.shuffle(choices)
            rows.append(
                {
                    "id": f"colors-{o}-{q}",
                    "question": t.format(obj=o),
                    "choices": choices,
                    "label": choices.index(w.colour_of[o][0]),
                    "kind": kind,
                    "seen_times": w.seen_times[o],
                }
            )
    return rows


def _sum_rows(w: World, rng: random.Random) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for a, b in w.pairs:
        c = a + b
        near = c + 1 if (c == 0 or rng.random() < 0.5) else c - 1
        other = rng.choice([n for n in range(19) if n not in (c, near)])
        opts = [c, near, other]
        rng.shuffle(opts)
        rows.append(
            {
                "id": f"sums-{a}-{b}",
                "question": f"Question: what is {NUMBERS[a]} plus {NUMBERS[b]}?\nAnswer:",
                "choices": [NUMBERS[n] for n in opts],
                "label": opts.index(c),
                "held_out": (a, b) in w.held_out,
            }
        )
    return rows


def _ppl_rows(w: World, rng: random.Random) -> list[dict[str, object]]:
    # 50 documents of 2-4 sentences: sums (some held out) and colour facts
    all_objects = sorted(w.single + w.tie + w.unseen)
    rows: list[dict[str, object]] = []
    for i in range(50):
        sents = []
        for _ in range(rng.randint(2, 4)):
            r = rng.random()
            if r < 0.5:
                # 30% of the sums are held out of training
                pool = sorted(w.held_out) if r < 0.15 else w.pairs
                a, b = rng.choice(pool)
                sents.append(f"{NUMBERS[a]} plus {NUMBERS[b]} is {NUMBERS[a + b]}.")
            else:
                o = rng.choice(all_objects)
                sents.append(f"the {o} is {rng.choice(w.colour_of[o])}.")
        rows.append({"id": f"ppl-{i:02d}", "text": " ".join(sents)})
    return rows


MC_YAML = """\
task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: data/lm_eval_tasks/{task}.jsonl
output_type: multiple_choice
test_split: test
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
  - metric: brier_score
    higher_is_better: false
metadata:
  version: 1.0
"""
PPL_YAML = """\
task: calib_ppl
dataset_path: json
dataset_kwargs:
  data_files:
    test: data/lm_eval_tasks/calib_ppl.jsonl
output_type: loglikelihood_rolling
test_split: test
doc_to_text: ""
doc_to_target: "{{text}}"
metric_list:
  - metric: word_perplexity
  - metric: byte_perplexity
  - metric: bits_per_byte
metadata:
  version: 1.0
"""


def write_data() -> None:
    """Write the training text, the task JSONL files and the task YAML files."""
    rng = random.Random(SEED)
    w = _world(rng)
    corpus = _corpus(w, rng)
    TASK_DIR.mkdir(parents=True, exist_ok=True)
    (TASK_DIR / "train_corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    colour_rows = _colour_rows(w, rng)
    sum_rows = _sum_rows(w, rng)
    _write_jsonl(TASK_DIR / "calib_colors.jsonl", colour_rows)
    _write_jsonl(TASK_DIR / "calib_sums.jsonl", sum_rows)
    _write_jsonl(TASK_DIR / "calib_ppl.jsonl", _ppl_rows(w, rng))
    for task in ("calib_colors", "calib_sums"):
        (TASK_DIR / f"{task}.yaml").write_text(MC_YAML.format(task=task), encoding="utf-8")
    (TASK_DIR / "calib_ppl.yaml").write_text(PPL_YAML, encoding="utf-8")
    print(f"wrote {len(corpus)} training lines, {len(colour_rows)} + {len(sum_rows)} questions")


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def train() -> None:
    """Train the tokenizer and the two models; save them under ``MODEL_ROOT/calib``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.set_num_threads(1)  # robust on a small shared machine; bit-for-bit runs too
    torch.manual_seed(SEED)
    corpus_path = TASK_DIR / "train_corpus.txt"
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train([str(corpus_path)], trainer)
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        model_max_length=256,
    )
    eos = hf_tok.eos_token_id
    ids: list[int] = []
    for line in corpus_path.read_text(encoding="utf-8").splitlines():
        # train on the question format too (the tasks' "Question: ...\nAnswer: x")
        text = line
        if line.startswith("question: "):
            q, a = line[len("question: ") :].split(" answer: ")
            text = f"Question: {q}\nAnswer: {a.rstrip('.')}"
        ids.extend([eos, *hf_tok.encode(text)])
    data = torch.tensor(ids, dtype=torch.long)
    block, batch = 64, 32
    for name, (n_embd, n_layer, n_head, steps) in MODELS.items():
        torch.manual_seed(SEED)
        cfg = GPT2Config(
            vocab_size=len(hf_tok),
            n_positions=256,
            n_embd=n_embd,
            n_layer=n_layer,
            n_head=n_head,
            bos_token_id=eos,
            eos_token_id=eos,
        )
        model = GPT2LMHeadModel(cfg)
        n_params = sum(p.numel() for p in model.parameters())
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
        model.train()
        t0 = time.time()
        for step in range(steps):
            starts = torch.randint(0, len(data) - block - 1, (batch,))
            x = torch.stack([data[s : s + block] for s in starts])
            out = model(input_ids=x, labels=x)
            opt.zero_grad()
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            if step % 100 == 0 or step == steps - 1:
                print(f"{name} step {step} loss {out.loss.item():.3f} ({time.time() - t0:.0f}s)")
        model.eval()
        dest = MODEL_ROOT / "calib" / name
        if dest.exists():
            shutil.rmtree(dest)
        model.save_pretrained(dest)
        hf_tok.save_pretrained(dest)
        print(f"saved {name} ({n_params} parameters) to {dest}")


def evaluate() -> None:
    """Run lm-eval on every model (the small one twice) into ``data/lm_eval/``."""
    (SCRATCH / "calib").mkdir(parents=True, exist_ok=True)
    link = SCRATCH / "data"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(DATA_DIR)
    for name in MODELS:
        m = SCRATCH / "calib" / name
        if m.is_symlink() or m.exists():
            m.unlink()
        m.symlink_to(MODEL_ROOT / "calib" / name)
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["OMP_NUM_THREADS"] = "1"
    env["HF_DATASETS_CACHE"] = str(SCRATCH / "hf_datasets_cache")
    lm_eval = Path(sys.executable).with_name("lm_eval")
    # the second run of the small model: other batch size, only the two multiple-choice tasks
    runs = [(name, 4, TASKS) for name in MODELS] + [("tiny-gpt2-s", 8, TASKS[:2])]
    for name, bs, tasks in runs:
        cmd = [
            str(lm_eval),
            "run",
            "--model",
            "hf",
            "--model_args",
            f"pretrained=calib/{name},dtype=float32",
            "--tasks",
            ",".join(tasks),
            "--include_path",
            str(TASK_DIR),
            "--device",
            "cpu",
            "--batch_size",
            str(bs),
            "--log_samples",
            "--output_path",
            str(OUT_DIR),
            "--seed",
            "1234",
        ]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=SCRATCH, env=env)
        time.sleep(1.5)  # distinct date stamps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["data", "train", "eval", "all"])
    step = parser.parse_args().step
    if step in ("data", "all"):
        write_data()
    if step in ("train", "all"):
        train()
    if step in ("eval", "all"):
        if step == "all" and OUT_DIR.exists():
            shutil.rmtree(OUT_DIR)
        evaluate()


if __name__ == "__main__":
    main()
