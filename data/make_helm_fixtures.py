"""Regenerate the HELM fixtures in ``data/helm/`` with the real tool (``helm-run``).

HELM runs fully offline: the scenario is HELM's own ``custom_mcqa`` scenario, which reads its
instances from a local JSONL file (written here, ``data/helm/custom_mcqa/calib_colors.jsonl``),
and the models are two tiny GPT-2 models trained here on the synthetic world of
``make_lm_eval_fixtures.py``, served by HELM's own ``HuggingFaceClient`` from local folders
(registered in a ``prod_env/`` of ``model_deployments.yaml``, ``model_metadata.yaml`` and
``tokenizer_configs.yaml`` written to a scratch directory). Nothing is downloaded
(``HF_HUB_OFFLINE=1``, ``HF_DATASETS_OFFLINE=1``). Not run in CI (crfm-helm, torch and
transformers are not calib_frames dependencies).

Run from the repository root, with a separate venv that has ``crfm-helm`` and ``torch``::

    /work/venvs/helm/bin/python data/make_helm_fixtures.py all     # or: data | train | run

The venv used (crfm-helm 0.5.16, torch 2.13.0+cpu, transformers 5.24.0, uncertainty-calibration
0.1.4, scikit-learn 1.9.1)::

    python3 -m venv /work/venvs/helm
    /work/venvs/helm/bin/pip install torch==2.13.0 crfm-helm==0.5.16  # torch pinned, same call
    /work/venvs/helm/bin/pip uninstall -y torchvision

(crfm-helm requires torchvision; with ``pip install torch==2.13.0`` and then ``pip install
crfm-helm`` pip upgraded torch to a 2.14.1 CUDA build to match the newest torchvision, so that
was undone; torchvision 0.28.0, the release for torch 2.13, does not load with the CPU torch
build ("operator torchvision::nms does not exist"), and text runs do not need it.)

Steps:

``data``
    Writes ``data/helm/custom_mcqa/calib_colors.jsonl``: 50 HELM ``Instance`` records, one per
    object of the synthetic world, "what color is the <object>?", four references in the fixed
    order red, blue, green, yellow, the gold one tagged ``correct``, split ``test``, with
    ``extra_data`` = ``{"qid", "kind", "seen_times"}`` (``kind``: ``single`` = one colour seen
    ``seen_times`` = 1..8 times in training, ``tie`` = seen with two colours, ``unseen``).
``train``
    Trains one byte-level BPE tokenizer and two GPT-2 models of different sizes on the facts,
    written as HELM's multiple-choice prompt (instructions, ``Question: ...``, ``A. red`` ..
    ``D. yellow``, ``Answer: B``) and as ``Question: ...\\nAnswer: red``; saved under
    ``MODEL_ROOT/calib/<name>`` (outside the repository).
``run``
    Runs ``helm-run`` once per model on the run entry
    ``custom_mcqa:path=calib_colors.jsonl,method=multiple_choice_joint,
    data_augmentation=typo_medium,temperature=1.0`` (suite ``calib``), then copies the run
    folders ``benchmark_output/runs/calib/<run name>/`` into ``data/helm/runs/calib/``.

Why ``temperature=1.0`` (HELM's ``TemperatureRunExpander``): the multiple-choice adapter asks
for temperature 0, which HELM's ``HuggingFaceClient`` turns into 1e-7 and samples with
``output_scores``; transformers returns those scores after the temperature warper, so every
generated token then has log-probability 0, HELM logs "Skipping computing calibration metrics
because logprobs were not available." and writes none of them (tried first). At temperature 1
the one completion that the joint adapter asks for (``num_completions=1``) is a letter sampled
from the model, with its real log-probability; HELM takes ``max_prob`` = exp(that logprob)
(the probability of the sampled answer, not always the largest one) and computes
``ece_10_bin``, ``ece_1_bin``, ``selective_cov_acc_area``, ``selective_acc@10``,
``platt_coef``, ``platt_intercept``, ``platt_ece_10_bin``, ``platt_ece_1_bin``.

``--max-eval-instances 20``: HELM draws 20 of the 50 instances (its own seeded choice, so the
ids are not contiguous), to keep ``per_instance_stats.json`` (about 10 KB of indented JSON per
instance and perturbation) to a few hundred KB.

``data_augmentation=typo_medium`` adds HELM's ``TyposPerturbation(prob=0.3)``: each changed
instance appears a second time with the same ``id`` and a ``perturbation`` record, and the
stats get a ``perturbation`` key (``robustness``, ``fairness`` flags, ``computed_on``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
OUT_DIR = DATA_DIR / "helm"
SCENARIO_FILE = OUT_DIR / "custom_mcqa" / "calib_colors.jsonl"
MODEL_ROOT = Path(os.environ.get("CALIB_FIXTURE_MODELS", "/work/venvs/models"))
SCRATCH = Path(os.environ.get("CALIB_FIXTURE_SCRATCH", "/tmp/calib_helm_run"))
SEED = 20261204
SUITE = "calib"
LETTERS = ["A", "B", "C", "D"]
INSTRUCTIONS = "The following are multiple choice questions (with answers)."
MODELS = {
    # name: (n_embd, n_layer, n_head, train_steps)
    "tiny-gpt2-mc-s": (48, 2, 2, 300),
    "tiny-gpt2-mc-m": (96, 3, 4, 700),
}
RUN_ENTRY = (
    "custom_mcqa:path=calib_colors.jsonl,method=multiple_choice_joint,"
    "data_augmentation=typo_medium,temperature=1.0,model=calib/{name}"
)


def _lmf():  # the lm-eval script, for the synthetic world
    sys.path.insert(0, str(DATA_DIR))
    return importlib.import_module("make_lm_eval_fixtures")


def _mc_prompt(question: str, choices: list[str]) -> str:
    """HELM's multiple_choice_joint prompt (no in-context examples), up to ``Answer:``."""
    refs = "".join(f"{L}. {c}\n" for L, c in zip(LETTERS, choices, strict=True))
    return f"{INSTRUCTIONS}\n\nQuestion: {question}\n{refs}Answer:"


def write_data() -> None:
    """Write the custom_mcqa instances (HELM ``Instance`` JSON, one a line)."""
    lmf = _lmf()
    w = lmf._world(random.Random(lmf.SEED))
    SCENARIO_FILE.parent.mkdir(parents=True, exist_ok=True)
    with SCENARIO_FILE.open("w", encoding="utf-8") as fh:
        for o in sorted(w.single + w.tie + w.unseen):
            kind = "single" if o in w.single else ("tie" if o in w.tie else "unseen")
            gold = w.colour_of[o][0]
            inst = {
                "input": {"text": f"what color is the {o}?"},
                "references": [
                    {"output": {"text": c}, "tags": ["correct"] if c == gold else []}
                    for c in lmf.COLORS
                ],
                "split": "test",
                "extra_data": {"qid": f"colors-{o}", "kind": kind, "seen_times": w.seen_times[o]},
            }
            fh.write(json.dumps(inst) + "\n")
    print(f"wrote {SCENARIO_FILE}")


def _texts(rng: random.Random) -> list[str]:
    lmf = _lmf()
    w = lmf._world(random.Random(lmf.SEED))
    texts: list[str] = []
    for _ in range(4):
        block = []
        for o in w.single + w.tie:
            for k in range(w.seen_times[o]):
                colour = w.colour_of[o][k % len(w.colour_of[o])]
                q = f"what color is the {o}?"
                block.append(f"{_mc_prompt(q, lmf.COLORS)} {LETTERS[lmf.COLORS.index(colour)]}")
                block.append(f"Question: {q}\nAnswer: {colour}")
        rng.shuffle(block)
        texts.extend(block)
    return texts


def train() -> None:
    """Train the tokenizer and the two models; save them under ``MODEL_ROOT/calib``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.set_num_threads(1)
    rng = random.Random(SEED)
    texts = _texts(rng)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        model_max_length=256,
    )
    eos = hf_tok.eos_token_id
    ids: list[int] = []
    for t in texts:
        ids.extend([eos, *hf_tok.encode(t)])
    data = torch.tensor(ids, dtype=torch.long)
    block, batch = 96, 32
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
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
        model.train()
        t0 = time.time()
        for step in range(steps):
            starts = torch.randint(0, len(data) - block - 1, (batch,))
            x = torch.stack([data[s : s + block] for s in starts])
            loss = model(input_ids=x, labels=x).loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            if step % 100 == 0 or step == steps - 1:
                print(f"{name} step {step} loss {loss.item():.3f} ({time.time() - t0:.0f}s)")
        model.eval()
        dest = MODEL_ROOT / "calib" / name
        if dest.exists():
            shutil.rmtree(dest)
        model.save_pretrained(dest)
        hf_tok.save_pretrained(dest)
        n = sum(p.numel() for p in model.parameters())
        print(f"saved {name} ({n} parameters, {len(ids)} training tokens) to {dest}")


def _prod_env(path: Path) -> None:
    """HELM's local configuration: the two models as HuggingFaceClient deployments."""
    path.mkdir(parents=True, exist_ok=True)
    deployments, metadata, tokenizers = [], [], []
    for name in MODELS:
        local = str(MODEL_ROOT / "calib" / name)
        deployments.append(
            f"  - name: calib/{name}\n"
            f"    model_name: calib/{name}\n"
            f"    tokenizer_name: calib/{name}\n"
            "    max_sequence_length: 256\n"
            "    client_spec:\n"
            '      class_name: "helm.clients.huggingface_client.HuggingFaceClient"\n'
            "      args:\n"
            f"        pretrained_model_name_or_path: {local}\n"
        )
        metadata.append(
            f"  - name: calib/{name}\n"
            f"    display_name: {name}\n"
            "    description: tiny GPT-2 trained on synthetic colour facts (calib_frames)\n"
            "    creator_organization_name: calib_frames\n"
            "    access: open\n"
            "    release_date: 2026-12-01\n"
            "    tags: [TEXT_MODEL_TAG, PARTIAL_FUNCTIONALITY_TEXT_MODEL_TAG]\n"
        )
        tokenizers.append(
            f"  - name: calib/{name}\n"
            "    tokenizer_spec:\n"
            '      class_name: "helm.tokenizers.huggingface_tokenizer.HuggingFaceTokenizer"\n'
            "      args:\n"
            f"        pretrained_model_name_or_path: {local}\n"
            '    end_of_text_token: "<|endoftext|>"\n'
            '    prefix_token: "<|endoftext|>"\n'
        )
    (path / "model_deployments.yaml").write_text(
        "model_deployments:\n" + "".join(deployments), encoding="utf-8"
    )
    (path / "model_metadata.yaml").write_text("models:\n" + "".join(metadata), encoding="utf-8")
    (path / "tokenizer_configs.yaml").write_text(
        "tokenizer_configs:\n" + "".join(tokenizers), encoding="utf-8"
    )


def run() -> None:
    """Run helm-run for each model and copy the run folders into ``data/helm/runs``."""
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    _prod_env(SCRATCH / "prod_env")
    scen = SCRATCH / "benchmark_output" / "scenarios" / "custom_mcqa"
    scen.mkdir(parents=True)
    shutil.copy(SCENARIO_FILE, scen / SCENARIO_FILE.name)
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["OMP_NUM_THREADS"] = "1"
    env["HF_HOME"] = str(SCRATCH / "hf_home")
    helm_run = Path(sys.executable).with_name("helm-run")
    for name in MODELS:
        cmd = [
            str(helm_run),
            "--run-entries",
            RUN_ENTRY.format(name=name),
            "--suite",
            SUITE,
            "--max-eval-instances",
            "20",
            "--local-path",
            "prod_env",
            "--output-path",
            "benchmark_output",
            "--num-threads",
            "1",
        ]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=SCRATCH, env=env)
    dest = OUT_DIR / "runs" / SUITE
    if dest.exists():
        shutil.rmtree(dest)
    # eval_cache/ is HELM's (empty here) metric cache folder, not part of a run
    shutil.copytree(
        SCRATCH / "benchmark_output" / "runs" / SUITE,
        dest,
        ignore=shutil.ignore_patterns("eval_cache"),
    )
    for p in sorted(dest.rglob("*")):
        if p.is_file():
            print(f"{p.relative_to(OUT_DIR)}  {p.stat().st_size} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["data", "train", "run", "all"])
    step = parser.parse_args().step
    if step in ("data", "all"):
        write_data()
    if step in ("train", "all"):
        train()
    if step in ("run", "all"):
        run()


if __name__ == "__main__":
    main()
