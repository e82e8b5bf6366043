"""Regenerate the Inspect AI fixtures in ``data/inspect_ai/`` with the real tool.

The logs are written by inspect_ai itself (``inspect_ai.eval``), in both of its log formats:
``.eval`` (a zip archive of JSON members) and ``.json`` (one JSON document). The models are
inspect's own ``mockllm`` provider, given a Python callable (``custom_outputs=``) that answers
each request with a ``ModelOutput`` carrying ``logprobs``/``top_logprobs`` in inspect's own
types. Those answers and their log-probabilities are synthetic: drawn from a seeded
``random.Random`` from how well a pretend model "knows" each fact of the synthetic world of
``make_lm_eval_fixtures.py``. Everything else (prompts, solver, scorers, metrics, reductions
over epochs, the log files) is inspect's. Nothing is downloaded; no API key is used. Not run
in CI (inspect_ai is not a calib_frames dependency).

Run from the repository root, with a separate venv that has ``inspect-ai``::

    /work/venvs/inspect/bin/python data/make_inspect_fixtures.py

It deletes and rewrites ``data/inspect_ai/logs/`` (file names carry the run time and a random
id, so a rerun gives new names; the answers, scores and logprobs are the same).

Models (``mockllm/<name>``; ``eval.model`` in the logs):

``mockllm/calib-sharp``
    overconfident: near-certain on facts it "saw", still confident (and often wrong) on unseen
    ones. Asks for and returns ``top_logprobs=5``.
``mockllm/calib-hedged``
    softer distributions, so letters are more often missing from the top 5; some answers come
    back without any ``logprobs`` at all (``logprobs: null``, as some providers do).
``mockllm/calib-grader``
    the grader for ``model_graded_qa`` (no logprobs).

Tasks:

``calib_colors_mc``
    40 samples, ``multiple_choice()`` solver (inspect's single-answer template, letters A-D)
    and ``choice()`` scorer. Gold is a letter. The answer is ``"ANSWER: X"`` in three tokens
    (``"ANSWER"``, ``":"``, ``" X"``); ``top_logprobs`` of the letter token come from a
    softmax over the four letters and a few other tokens (``" E"``, ``"A"``, ``" The"``, ...)
    so that a letter with little mass can fall out of the top 5. Among the answers: some
    wrong, one in the wrong format (``"The answer is C."``, scored ``I`` with
    ``reason: invalid_response_format``) and one empty (scored ``N``, ``no_response``). Run
    once per model.
``calib_sums_free``
    16 samples ``"What is three plus four?"`` with a number-word target, ``generate()``
    solver, ``epochs=2`` (mean reducer), answers sampled at temperature 1 (so the two epochs
    can differ, and the sampled token is not always in its own ``top_logprobs``; a number
    from thirteen up is two tokens, ``"four"`` ``"teen"``), three scorers: ``match()``
    (``C``/``I``), ``model_graded_qa(partial_credit=True)`` (``C``/``P``/``I``) and a custom
    ``near_miss`` scorer (numeric 1.0 / 0.5 for an answer off by one / 0.0, metrics ``mean``
    and ``stderr``). Run once per model.

Log formats: every run is written as ``.eval``; two runs are also written as ``.json``, on
part of the samples to keep the files small (``sample_id=``): ``calib_colors_mc`` with
``calib-sharp`` on 11 samples (including the empty and the wrongly formatted answer) and
``calib_sums_free`` with ``calib-hedged`` on 6 samples x 2 epochs. Their answers are the same
as in the ``.eval`` logs of the same model (the mock answers depend only on the sample id and
the call count), but their metrics are over those samples only.
"""

from __future__ import annotations

import importlib
import math
import random
import re
import shutil
import sys
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
OUT_DIR = DATA_DIR / "inspect_ai" / "logs"
SEED = 20261203
LETTERS = ["A", "B", "C", "D"]
# tokens that compete with the answer letter for probability mass
LETTER_DISTRACTORS = [" E", "A", " a", " The", " b", " None"]
MODELS = {
    # name: (sharpness: scale of the gold logit, noise on the logits, logprob-less share)
    "calib-sharp": (5.0, 1.2, 0.0),
    "calib-hedged": (2.2, 0.8, 0.15),
}


def _lmf():  # the lm-eval script, for the synthetic world
    sys.path.insert(0, str(DATA_DIR))
    return importlib.import_module("make_lm_eval_fixtures")


def _mc_rows() -> list[dict[str, object]]:
    """40 colour questions: objects of every kind, choices shuffled, gold a letter."""
    lmf = _lmf()
    w = lmf._world(random.Random(lmf.SEED))
    rng = random.Random(SEED)
    objects = sorted(w.single)[:26] + sorted(w.tie)[:7] + sorted(w.unseen)[:7]
    rows = []
    for o in objects:
        choices = lmf.COLORS[:]
        rng.shuffle(choices)
        kind = "single" if o in w.single else ("tie" if o in w.tie else "unseen")
        rows.append(
            {
                "id": f"colors-{o}",
                "question": f"What color is the {o}?",
                "choices": choices,
                "target": LETTERS[choices.index(w.colour_of[o][0])],
                "kind": kind,
                "seen_times": w.seen_times[o],
                "colours": w.colour_of[o],
            }
        )
    rng.shuffle(rows)
    return rows


def _sum_rows() -> list[dict[str, object]]:
    lmf = _lmf()
    rng = random.Random(SEED + 1)
    pairs = rng.sample([(a, b) for a in range(10) for b in range(10)], 16)
    return [
        {
            "id": f"sums-{a}-{b}",
            "question": f"What is {lmf.NUMBERS[a]} plus {lmf.NUMBERS[b]}?",
            "target": lmf.NUMBERS[a + b],
            "value": a + b,
        }
        for a, b in pairs
    ]


def _softmax(logits: dict[str, float]) -> dict[str, float]:
    m = max(logits.values())
    z = sum(math.exp(v - m) for v in logits.values())
    return {k: v - m - math.log(z) for k, v in logits.items()}


def _tok(token: str, logprob: float, top: list[tuple[str, float]] | None):
    from inspect_ai.model import Logprob, TopLogprob

    return Logprob(
        token=token,
        logprob=logprob,
        bytes=list(token.encode("utf-8")),
        top_logprobs=None
        if top is None
        else [TopLogprob(token=t, logprob=lp, bytes=list(t.encode("utf-8"))) for t, lp in top],
    )


def _fixed_token(token: str, rng: random.Random, alts: list[str], k: int):
    """A near-certain token (``"ANSWER"``, ``":"``) with ``k`` top_logprobs entries."""
    logits = {token: 9.0 + rng.random()}
    for a in alts:
        logits[a] = rng.gauss(0.0, 1.0)
    lp = _softmax(logits)
    top = sorted(lp.items(), key=lambda kv: -kv[1])[:k]
    return _tok(token, lp[token], top)


def _output(model: str, content: str, tokens: list | None, prompt: str):
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessageAssistant,
        Logprobs,
        ModelOutput,
        ModelUsage,
    )

    # usage is set here: mockllm would otherwise count tokens with tiktoken, which downloads
    # its encoding. Input = whitespace words of the prompt, output = tokens of the answer.
    n_in, n_out = len(prompt.split()), len(tokens) if tokens else len(content.split())
    return ModelOutput(
        model=model,
        usage=ModelUsage(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out),
        choices=[
            ChatCompletionChoice(
                message=ChatMessageAssistant(content=content, model=model, source="generate"),
                stop_reason="stop",
                logprobs=None if tokens is None else Logprobs(content=tokens),
            )
        ],
    )


class MockAnswers:
    """The ``custom_outputs`` callable of one mock model: answers from the synthetic world."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sharp, self.noise, self.no_lp = MODELS[name]
        self.mc = {str(r["question"]): r for r in _mc_rows()}
        self.sums = {str(r["question"]): r for r in _sum_rows()}
        self.calls: dict[str, int] = {}

    def __call__(self, input, tools, tool_choice, config):
        text = input[-1].text
        self.prompt = "\n".join(m.text for m in input)
        k = config.top_logprobs or 5
        for q, row in self.mc.items():
            if q in text:
                return self._mc(row, k)
        for q, row in self.sums.items():
            if q in text:
                return self._sum(row, k)
        raise ValueError(f"unknown prompt: {text[:80]!r}")

    def _rng(self, key: str) -> random.Random:
        n = self.calls.get(key, 0)
        self.calls[key] = n + 1
        return random.Random(f"{SEED}-{self.name}-{key}-{n}")

    def _knowledge(self, row: dict[str, object]) -> dict[str, float]:
        """How strongly the pretend model favours each colour (logit boosts)."""
        kind, seen = row["kind"], int(row["seen_times"])  # type: ignore[call-overload]
        colours = list(row["colours"])  # type: ignore[call-overload]
        if kind == "single":
            return {colours[0]: self.sharp * min(1.0, 0.25 + seen / 6)}
        if kind == "tie":
            return {c: self.sharp * 0.6 for c in colours}
        return {}

    def _mc(self, row: dict[str, object], k: int):
        rng = self._rng(str(row["id"]))
        choices = list(row["choices"])  # type: ignore[call-overload]
        boost = self._knowledge(row)
        logits = {}
        for i, c in enumerate(choices):
            logits[" " + LETTERS[i]] = boost.get(c, 0.0) + rng.gauss(0.0, self.noise)
        if row["kind"] == "unseen":  # a confident guess on what it never saw
            guess = " " + rng.choice(LETTERS)
            logits[guess] += self.sharp * 0.9
        for d in LETTER_DISTRACTORS:
            logits[d] = rng.gauss(-3.5, 1.5)
        lp = _softmax(logits)
        top = sorted(lp.items(), key=lambda kv: -kv[1])
        letter = max((t for t in lp if t.strip() in LETTERS and t.startswith(" ")), key=lp.get)
        rid = str(row["id"])
        if self.name == "calib-sharp" and rid == "colors-cup":
            return _output(self.name, "", [], self.prompt)  # an empty answer: scored N
        if self.name == "calib-sharp" and rid == "colors-fern":
            content = f"The answer is{letter}."  # not in the requested format: scored I
            toks = [
                _fixed_token("The", rng, ["ANSWER", "Answer", "I", "**"], k),
                _fixed_token(" answer", rng, [" correct", " color", ":", " final"], k),
                _fixed_token(" is", rng, [":", " would", " must", " was"], k),
                _tok(letter, lp[letter], top[:k]),
                _fixed_token(".", rng, ["\n", "!", " (", "?"], k),
            ]
            return _output(self.name, content, toks, self.prompt)
        content = f"ANSWER:{letter}"
        if rng.random() < self.no_lp:
            return _output(self.name, content, None, self.prompt)
        toks = [
            _fixed_token("ANSWER", rng, ["Answer", "The", "ANS", "**", "answer"], k),
            _fixed_token(":", rng, [" :", ":\n", " is", "-"], k),
            _tok(letter, lp[letter], top[:k]),
        ]
        return _output(self.name, content, toks, self.prompt)

    def _sum(self, row: dict[str, object], k: int):
        lmf = _lmf()
        rng = self._rng(str(row["id"]))
        v = int(row["value"])  # type: ignore[call-overload]
        logits = {n: rng.gauss(-2.0, 1.0) for n in range(19)}
        logits[v] += self.sharp * (1.2 if v < 10 else 0.5)
        for near in (v - 1, v + 1):
            if near in logits:
                logits[near] += self.sharp * 0.45
        # sample the answer (temperature 1), so the two epochs can differ
        lp_num = _softmax({str(n): x for n, x in logits.items()})
        r, acc, pick = rng.random(), 0.0, v
        for n in range(19):
            acc += math.exp(lp_num[str(n)])
            if r <= acc:
                pick = n
                break
        word = lmf.NUMBERS[pick]
        # a chat answer starts without a space; a "teen" word is two tokens ("four" "teen"), so
        # the first token's probability is summed over the words that start with it, and
        # "teen" gets P(word) / P(first token): the token probabilities multiply to P(word)
        p_first: dict[str, float] = {}
        for n in range(19):
            t = lmf.NUMBERS[n].removesuffix("teen")
            p_first[t] = p_first.get(t, 0.0) + math.exp(lp_num[str(n)])
        head = word.removesuffix("teen")
        top = sorted(((t, math.log(p)) for t, p in p_first.items()), key=lambda kv: -kv[1])
        toks = [_tok(head, math.log(p_first[head]), top[:k])]
        if head != word:
            lp_teen = lp_num[str(pick)] - math.log(p_first[head])
            rest = max(1.0 - math.exp(lp_teen), 1e-9)
            alts = [("teen", lp_teen)] + [
                (t, math.log(rest * f))
                for t, f in (("ty", 0.5), ("ven", 0.3), (".", 0.1), ("th", 0.1))
            ]
            toks.append(_tok("teen", lp_teen, sorted(alts, key=lambda kv: -kv[1])[:k]))
        if rng.random() < self.no_lp:
            toks = None
        return _output(self.name, word, toks, self.prompt)


def _grader(input, tools, tool_choice, config):
    """The mock grader: C for the right number word, P for one off by one, else I."""
    lmf = _lmf()
    text = input[-1].text
    answer = re.search(r"\[Submission\]: (.*?)\n", text)
    criterion = re.search(r"\[Criterion\]: (.*?)\n", text)
    got = answer.group(1).strip().lower() if answer else ""
    want = criterion.group(1).strip().lower() if criterion else ""
    if got == want:
        grade = "C"
    elif (
        got in lmf.NUMBERS
        and want in lmf.NUMBERS
        and abs(lmf.NUMBERS.index(got) - lmf.NUMBERS.index(want)) == 1
    ):
        grade = "P"
    else:
        grade = "I"
    return _output("calib-grader", f"The submission is {got!r}.\n\nGRADE: {grade}", None, text)


def _tasks():
    from inspect_ai import Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.scorer import (
        Score,
        Target,
        choice,
        match,
        mean,
        model_graded_qa,
        scorer,
        stderr,
    )
    from inspect_ai.solver import TaskState, generate, multiple_choice

    lmf = _lmf()

    @scorer(metrics=[mean(), stderr()])
    def near_miss():
        """1.0 for the right number word, 0.5 for one off by one, else 0.0."""

        async def score(state: TaskState, target: Target) -> Score:
            got = state.output.completion.strip().lower().rstrip(".")
            want = target.text.strip().lower()
            if got == want:
                value = 1.0
            elif got in lmf.NUMBERS and abs(lmf.NUMBERS.index(got) - lmf.NUMBERS.index(want)) == 1:
                value = 0.5
            else:
                value = 0.0
            return Score(value=value, answer=got, explanation=f"{got!r} vs {want!r}")

        return score

    @task
    def calib_colors_mc():
        samples = [
            Sample(
                id=str(r["id"]),
                input=str(r["question"]),
                choices=list(r["choices"]),  # type: ignore[call-overload]
                target=str(r["target"]),
                metadata={"kind": r["kind"], "seen_times": r["seen_times"]},
            )
            for r in _mc_rows()
        ]
        return Task(
            dataset=MemoryDataset(samples, name="calib_colors"),
            solver=multiple_choice(),
            scorer=choice(),
        )

    @task
    def calib_sums_free():
        samples = [
            Sample(
                id=str(r["id"]),
                input=str(r["question"]) + " Answer with a number word.",
                target=str(r["target"]),
                metadata={"value": r["value"]},
            )
            for r in _sum_rows()
        ]
        return Task(
            dataset=MemoryDataset(samples, name="calib_sums"),
            solver=generate(),
            scorer=[match(), model_graded_qa(partial_credit=True), near_miss()],
            epochs=2,
        )

    return calib_colors_mc, calib_sums_free


def main() -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import GenerateConfig, get_model

    if OUT_DIR.exists():
        shutil.rmtree(OUT_DIR)
    OUT_DIR.mkdir(parents=True)
    mc, free = _tasks()
    grader = get_model("mockllm/calib-grader", custom_outputs=_grader)
    # the .json logs are about 8 times the size of the .eval ones (indented JSON, not
    # compressed), so those two runs are limited to some of the samples
    mc_ids = [str(r["id"]) for r in _mc_rows()][:10]
    mc_ids += [i for i in ("colors-cup", "colors-fern") if i not in mc_ids]
    sum_ids = [str(r["id"]) for r in _sum_rows()][:6]
    runs = [
        (mc, "calib-sharp", "eval", None),
        (mc, "calib-hedged", "eval", None),
        (free, "calib-sharp", "eval", None),
        (free, "calib-hedged", "eval", None),
        (mc, "calib-sharp", "json", mc_ids),
        (free, "calib-hedged", "json", sum_ids),
    ]
    for task_fn, name, fmt, ids in runs:
        # the colour answers are the most likely letter (temperature 0); the sums are sampled
        # (temperature 1), so the chosen token need not be in its own top_logprobs
        temperature = 0.0 if task_fn is mc else 1.0
        model = get_model(
            f"mockllm/{name}",
            config=GenerateConfig(logprobs=True, top_logprobs=5, temperature=temperature),
            custom_outputs=MockAnswers(name),
        )
        (log,) = inspect_eval(
            task_fn(),
            model=model,
            model_roles={"grader": grader},
            log_dir=str(OUT_DIR),
            log_format=fmt,
            sample_id=ids,
            display="none",
            max_samples=1,
            seed=1234,
        )
        print(f"{fmt:4} {name:12} {log.eval.task:16} {log.status} {Path(log.location).name}")
        for s in log.results.scores if log.results else []:
            vals = {k: round(m.value, 4) for k, m in s.metrics.items()}
            print(f"     {s.name:16} {vals}")


if __name__ == "__main__":
    main()
