"""Real inspect_ai runs for the integration tests: ``python inspect_runs.py LOG_DIR [RUN ...]``.

Run in a subprocess by ``test_inspect_ai_integration.py`` (inspect's own dependencies warn on
import, which pytest's ``filterwarnings = error`` would turn into failures). The model is inspect's
``mockllm`` with a callable that answers each multiple-choice prompt with ``ANSWER: X`` and
log-probabilities in inspect's own types (``usage=`` set, else mockllm counts tokens with
tiktoken, which downloads its encoding). Everything else — the ``multiple_choice`` solver,
the scorers, the metrics, epochs, grouping, hooks and the ``.eval`` logs — is inspect's.

The answers come from a seeded ``random.Random`` per (model, sample, call): a softmax over
the four option letters (the gold one boosted on "easy" questions) and a few other tokens,
so that the letters share the token's probability with non-letters and, on "hard"
questions, a letter can fall out of the top 5. Among the 24 questions: ``q-empty`` is
answered with nothing (scored N), ``q-format`` outside the ``ANSWER: X`` format (scored I),
``q-cot`` with a chain of thought whose text names another letter before the answer, and
every 5th answer comes back without logprobs.

Runs (each writes one ``.eval`` log into LOG_DIR; all of them without arguments):

``epochs``   ``choice_with_confidence()`` with its own metrics, ``epochs=2``
``grouped``  ``Task(metrics=[grouped(ece(), "kind"), grouped(brier(), "kind"), ...])``
``plain``    inspect's ``choice()`` alone (for ``inspect score --action append``)
``none``     the same model asked for no logprobs: every confidence missing
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

from inspect_ai import Epochs, Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    GenerateConfig,
    Logprob,
    Logprobs,
    ModelOutput,
    ModelUsage,
    TopLogprob,
    get_model,
)
from inspect_ai.scorer import choice, grouped
from inspect_ai.solver import multiple_choice

from calib_frames.integrations.inspect_ai import (
    brier,
    choice_with_confidence,
    ece,
    missing_confidence,
)

LETTERS = "ABCD"
SEED = 33
QUESTIONS = 40
OTHERS = ["A", " E", " The", " a", " None"]  # tokens that take some of the probability


def samples() -> list[Sample]:
    rng = random.Random(SEED)
    rows = []
    for i in range(QUESTIONS):
        kind = "easy" if i % 3 else "hard"
        name = {5: "q-empty", 7: "q-format", 11: "q-cot"}.get(i, f"q-{i}")
        rows.append(
            Sample(
                id=name,
                input=f"Question {i}: which one?",
                choices=[f"option {k} of {i}" for k in range(4)],
                target=LETTERS[rng.randrange(4)],
                metadata={"kind": kind},
            )
        )
    return rows


TARGETS = {str(s.id): (str(s.target), str((s.metadata or {})["kind"])) for s in samples()}
PROMPTS = {str(s.input).split(" which")[0]: str(s.id) for s in samples()}


def token(text: str, logprob: float, top: list[tuple[str, float]] | None) -> Logprob:
    alternatives = None if top is None else [TopLogprob(token=t, logprob=lp) for t, lp in top]
    return Logprob(token=text, logprob=logprob, top_logprobs=alternatives)


def output(content: str, tokens: list[Logprob] | None) -> ModelOutput:
    usage = ModelUsage(input_tokens=20, output_tokens=len(content.split()), total_tokens=25)
    return ModelOutput(
        model="calib-mock",
        usage=usage,
        choices=[
            ChatCompletionChoice(
                message=ChatMessageAssistant(content=content, model="calib-mock"),
                stop_reason="stop",
                logprobs=None if tokens is None else Logprobs(content=tokens),
            )
        ],
    )


class Answers:
    """The ``custom_outputs`` callable of the mock model."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.count = 0

    def __call__(self, input, tools, tool_choice, config):
        text = input[-1].text
        sample = next(name for key, name in PROMPTS.items() if key in text)
        gold, kind = TARGETS[sample]
        n = self.calls.get(sample, 0)
        self.calls[sample] = n + 1
        rng = random.Random(f"{SEED}-{sample}-{n}")
        logits = {" " + letter: rng.gauss(0.0, 1.0) for letter in LETTERS}
        logits[" " + gold] += 3.0 if kind == "easy" else 0.3
        for other in OTHERS:
            logits[other] = rng.gauss(-1.5 if kind == "hard" else -3.0, 1.0)
        top = max(logits.values())
        log_z = top + math.log(sum(math.exp(v - top) for v in logits.values()))
        logprobs = {t: v - log_z for t, v in logits.items()}
        ranked = sorted(logprobs.items(), key=lambda kv: -kv[1])[: config.top_logprobs or 5]
        letter = max((t for t in logprobs if t.strip() in LETTERS), key=logprobs.__getitem__)
        fixed = [("ANSWER", -0.01, [("ANSWER", -0.01), ("Answer", -4.7)]), (":", -0.02, None)]
        if sample == "q-empty":
            return output("", [])
        if sample == "q-format":
            tokens = [token("The", -0.1, None), token(" answer", -0.1, None)]
            tokens.append(token(letter, logprobs[letter], ranked))
            return output(f"The answer is{letter}.", tokens)
        tokens = [token(t, lp, top_) for t, lp, top_ in fixed]
        tokens.append(token(letter, logprobs[letter], ranked))
        content = f"ANSWER:{letter}"
        if sample == "q-cot":  # another letter's token comes first in the reply
            other = " " + next(x for x in LETTERS if " " + x != letter)
            head = [token("Not", -0.3, None), token(other, -0.2, [(other, -0.2), (" E", -1.7)])]
            tokens = [*head, token(".\n", -0.1, None), *tokens]
            content = f"Not{other}.\n{content}"
        self.count += 1
        if not config.logprobs or self.count % 5 == 0:
            tokens = None
        return output(content, tokens)


def run(log_dir: str, name: str) -> None:
    dataset = MemoryDataset(samples(), name="calib_mc")
    logprobs = name != "none"
    task = {
        "epochs": Task(
            dataset=dataset,
            solver=multiple_choice(),
            scorer=choice_with_confidence(),
            epochs=2,
            name="calib_mc_epochs",
        ),
        "grouped": Task(
            dataset=dataset,
            solver=multiple_choice(),
            scorer=choice_with_confidence(),
            metrics=[
                grouped(ece(), "kind", name_template="ece_{group_name}", all_label="ece"),
                grouped(brier(), "kind", name_template="brier_{group_name}", all_label="brier"),
                missing_confidence(),
            ],
            epochs=Epochs(1, []),
            name="calib_mc_grouped",
        ),
        "plain": Task(
            dataset=dataset, solver=multiple_choice(), scorer=choice(), name="calib_mc_plain"
        ),
        "none": Task(
            dataset=dataset,
            solver=multiple_choice(),
            scorer=choice_with_confidence(),
            name="calib_mc_none",
        ),
    }[name]
    config = GenerateConfig(logprobs=logprobs, top_logprobs=5 if logprobs else None)
    model = get_model("mockllm/calib-mock", config=config, custom_outputs=Answers())
    (log,) = inspect_eval(task, model=model, log_dir=log_dir, display="none", max_samples=1)
    if log.status != "success":
        raise SystemExit(f"{name}: {log.status} {log.error}")
    print(name, Path(log.location).name)


if __name__ == "__main__":
    folder, *names = sys.argv[1:]
    for run_name in names or ["epochs", "grouped", "plain", "none"]:
        run(folder, run_name)
