"""Regenerate the OpenAI-style chat-completion fixtures in ``data/openai/`` with real tools.

A tiny GPT-2 chat model is trained here on synthetic facts (the same world as
``make_lm_eval_fixtures.py``), converted to GGUF with llama.cpp's own converter, served by
llama-cpp-python's OpenAI-compatible server on 127.0.0.1, and queried with the official
``openai`` Python client (``chat.completions.create(..., logprobs=True, top_logprobs=5)``).
Each response is written as the client parsed it (``ChatCompletion.model_dump_json()``).
Nothing is downloaded from a model or data hub. Not run in CI.

Run from the repository root, with a separate venv that has ``torch``, ``transformers``,
``tokenizers``, ``openai`` and ``llama-cpp-python[server]`` (built from its sdist), and the
unpacked llama-cpp-python sdist (for ``vendor/llama.cpp/convert_hf_to_gguf.py``)::

    /work/venvs/lmeval/bin/python data/make_openai_fixtures.py all \\
        --llama-src /tmp/llamasrc/llama_cpp_python-0.3.36

Steps: ``train`` (tokenizer + model, saved under ``MODEL_ROOT/calib/tiny-gpt2-chat``),
``gguf`` (convert to ``.../tiny-gpt2-chat-f32.gguf``), ``serve`` (start the server, send the
requests, stop the server), ``all``.

The chat template renders a user message ``m`` as ``"Question: m\\nAnswer:"``; the model then
answers with one or a few tokens and ``<|endoftext|>``. Request kinds (``kind`` in
``gold.jsonl``):

``mc_letter``
    four lettered options, the answer is one letter token (`` A`` .. `` D``). The options are
    always in the order A. red, B. blue, C. green, D. yellow: a first try with options shuffled
    per question gave a model at chance (a 400k-parameter model does not learn to find the
    option), so the letter stands for the colour here.
``short_answer``
    free text: a colour word or a number word ("what is three plus four?").
``verbalized``
    "... Say how sure you are." The model was trained to answer ``"<colour>. I am P% sure."``
    with P from 50 to 90 rising with how often the fact was seen in training.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
OUT_DIR = DATA_DIR / "openai"
MODEL_ROOT = Path(os.environ.get("CALIB_FIXTURE_MODELS", "/work/venvs/models"))
MODEL_NAME = "tiny-gpt2-chat"
SEED = 20261202
LETTERS = ["A", "B", "C", "D"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'user' %}"
    "Question: {{ message['content'] }}\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}Answer:{% endif %}"
)
SURE = {0: 30, 1: 50, 2: 60, 3: 70, 4: 70, 5: 80, 6: 80, 7: 90, 8: 90}


def _lmf():  # the lm-eval script, for the synthetic world
    sys.path.insert(0, str(DATA_DIR))
    return importlib.import_module("make_lm_eval_fixtures")


def _lettered(question: str, choices: list[str]) -> str:
    return question + "".join(f"\n{L}. {c}" for L, c in zip(LETTERS, choices, strict=True))


def _examples(rng: random.Random) -> list[tuple[str, str]]:
    """Training pairs (user message, answer) from the synthetic world."""
    lmf = _lmf()
    w = lmf._world(random.Random(lmf.SEED))
    pairs: list[tuple[str, str]] = []
    for o in w.single + w.tie:
        for k in range(w.seen_times[o]):
            colour = w.colour_of[o][k % len(w.colour_of[o])]
            q = f"what color is the {o}?"
            pairs.append((q, colour))
            choices = lmf.COLORS  # one fixed option order (a tiny model cannot learn shuffles)
            pairs.append((_lettered(q, choices), LETTERS[choices.index(colour)]))
            p = 50 if o in w.tie else SURE[w.seen_times[o]]
            pairs.append((f"{q} Say how sure you are.", f"{colour}. I am {p}% sure."))
    for a, b in w.pairs:
        if (a, b) not in w.held_out:
            q = f"what is {lmf.NUMBERS[a]} plus {lmf.NUMBERS[b]}?"
            pairs.append((q, lmf.NUMBERS[a + b]))
    return pairs


def train() -> None:
    """Train a tokenizer and a small GPT-2 on the chat-formatted examples; save them."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    texts = []
    for _ in range(4):
        ex = _examples(rng)
        rng.shuffle(ex)
        texts.extend(f"Question: {q}\nAnswer: {a}" for q, a in ex)
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
    hf_tok.chat_template = CHAT_TEMPLATE
    eos = hf_tok.eos_token_id
    ids: list[int] = []
    for t in texts:
        ids.extend([eos, *hf_tok.encode(t)])
    data = torch.tensor(ids, dtype=torch.long)
    cfg = GPT2Config(
        vocab_size=len(hf_tok),
        n_positions=256,
        n_embd=96,
        n_layer=3,
        n_head=4,
        bos_token_id=eos,
        eos_token_id=eos,
    )
    model = GPT2LMHeadModel(cfg)
    steps, block, batch = 800, 96, 32
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
            print(f"step {step} loss {loss.item():.3f} ({time.time() - t0:.0f}s)", flush=True)
    model.eval()
    dest = MODEL_ROOT / "calib" / MODEL_NAME
    if dest.exists():
        shutil.rmtree(dest)
    model.save_pretrained(dest)
    hf_tok.save_pretrained(dest)
    n = sum(p.numel() for p in model.parameters())
    print(f"saved {MODEL_NAME} ({n} parameters, {len(ids)} training tokens) to {dest}")


def _gguf_path() -> Path:
    return MODEL_ROOT / "calib" / f"{MODEL_NAME}-f32.gguf"


def to_gguf(llama_src: Path) -> None:
    """Convert the saved model with llama.cpp's ``convert_hf_to_gguf.py`` (f32).

    The converter identifies a BPE pre-tokenizer by hashing the token ids of a probe text and
    refuses unknown tokenizers; ours is a freshly trained byte-level BPE with GPT-2's split
    rules, so the probe is told its name (``gpt-2``) instead. ``n_ctx`` is added to
    config.json when missing.
    """
    src = llama_src / "vendor" / "llama.cpp"
    # the converter reads GPT-2's context length from ``n_ctx``, which transformers 5 no longer
    # writes to config.json (only ``n_positions``)
    cfg_path = MODEL_ROOT / "calib" / MODEL_NAME / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg.setdefault("n_ctx", cfg["n_positions"])
    cfg_path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    code = (
        "import sys, runpy\n"
        f"sys.path.insert(0, {str(src)!r}); sys.path.insert(1, {str(src / 'gguf-py')!r})\n"
        "import conversion.base as b\n"
        "b.TextModel.get_vocab_base_pre = lambda self, tokenizer: 'gpt-2'\n"
        f"sys.argv = ['convert_hf_to_gguf.py', {str(MODEL_ROOT / 'calib' / MODEL_NAME)!r},"
        f" '--outfile', {str(_gguf_path())!r}, '--outtype', 'f32']\n"
        f"runpy.run_path({str(src / 'convert_hf_to_gguf.py')!r}, run_name='__main__')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, NO_LOCAL_GGUF=""))
    print(f"wrote {_gguf_path()}")


def _requests() -> list[dict[str, object]]:
    """The requests: (id, kind, user message, gold answer, extra facts for the gold file)."""
    lmf = _lmf()
    w = lmf._world(random.Random(lmf.SEED))
    rng = random.Random(SEED + 1)
    objs = sorted(w.single + w.tie + w.unseen)
    rng.shuffle(objs)
    reqs: list[dict[str, object]] = []

    def kind_of(o: str) -> str:
        return "single" if o in w.single else ("tie" if o in w.tie else "unseen")

    for o in objs[:20]:
        choices = lmf.COLORS  # the fixed order of training: A. red B. blue C. green D. yellow
        reqs.append(
            {
                "kind": "mc_letter",
                "message": _lettered(f"what color is the {o}?", choices),
                "gold": LETTERS[choices.index(w.colour_of[o][0])],
                "choices": choices,
                "fact": kind_of(o),
                "seen_times": w.seen_times[o],
            }
        )
    for o in objs[20:32]:
        reqs.append(
            {
                "kind": "short_answer",
                "message": f"what color is the {o}?",
                "gold": w.colour_of[o][0],
                "fact": kind_of(o),
                "seen_times": w.seen_times[o],
            }
        )
    for a, b in rng.sample(w.pairs, 8):
        reqs.append(
            {
                "kind": "short_answer",
                "message": f"what is {lmf.NUMBERS[a]} plus {lmf.NUMBERS[b]}?",
                "gold": lmf.NUMBERS[a + b],
                "fact": "held_out" if (a, b) in w.held_out else "seen",
            }
        )
    for o in objs[32:42]:
        reqs.append(
            {
                "kind": "verbalized",
                "message": f"what color is the {o}? Say how sure you are.",
                "gold": w.colour_of[o][0],
                "fact": kind_of(o),
                "seen_times": w.seen_times[o],
            }
        )
    for i, r in enumerate(reqs):
        r["request_id"] = f"req-{i:03d}"
    return reqs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_and_capture() -> None:
    """Start llama-cpp-python's server on 127.0.0.1, send the requests, write the files."""
    import openai

    port = _free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(_gguf_path())]
    cmd += ["--model_alias", f"calib/{MODEL_NAME}", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--n_ctx", "256", "--logits_all", "True", "--n_threads", "1", "--seed", "1234"]
    log = open(Path("/tmp") / "calib_llama_server.log", "w")  # noqa: SIM115
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="local")
        for _ in range(120):
            try:
                client.models.list()
                break
            except openai.APIConnectionError:
                time.sleep(0.5)
        else:
            raise RuntimeError("server did not start; see /tmp/calib_llama_server.log")
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        reqs = _requests()
        with (
            (OUT_DIR / "responses.jsonl").open("w", encoding="utf-8") as out,
            (OUT_DIR / "gold.jsonl").open("w", encoding="utf-8") as gold,
        ):
            for r in reqs:
                resp = client.chat.completions.create(
                    model=f"calib/{MODEL_NAME}",
                    messages=[{"role": "user", "content": str(r["message"])}],
                    max_tokens=3 if r["kind"] == "mc_letter" else 12,
                    temperature=0.0,
                    logprobs=True,
                    top_logprobs=5,
                    seed=1234,
                )
                out.write(resp.model_dump_json() + "\n")
                gold.write(json.dumps({"id": resp.id, **r}) + "\n")
                print(r["request_id"], r["kind"], repr(resp.choices[0].message.content))
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["train", "gguf", "serve", "all"])
    parser.add_argument(
        "--llama-src", type=Path, default=Path("/tmp/llamasrc/llama_cpp_python-0.3.36")
    )
    args = parser.parse_args()
    if args.step in ("train", "all"):
        train()
    if args.step in ("gguf", "all"):
        to_gguf(args.llama_src)
    if args.step in ("serve", "all"):
        serve_and_capture()


if __name__ == "__main__":
    main()
