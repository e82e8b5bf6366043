"""The custom lighteval tasks of the integration tests (lighteval's ``--custom-tasks`` file).

Written as a user would write one (the README's recipe): two local multiple-choice tasks
whose ``metrics`` hold lighteval's own ``loglikelihood_acc`` and calib_frames'
``calibration()``. The data folders are under ``$CALIB_LIGHTEVAL_DATA`` (the test copies
them there: the datasets library writes its cache and lock files next to a local data
folder):

``calib_colors``  ``calib_colors/test.jsonl``: 50 colour questions, 4 choices, one gold
                  index; ``calibration()`` and ``calibration(bins=15)``
``calib_sums``    ``calib_sums/test.jsonl``: 100 sums, 3 choices; the gold as a list, with
                  a second gold on held-out questions and, on the first one, a gold outside
                  the choices (wrong whatever the answer, as lighteval's ``acc`` scores it)
"""

from __future__ import annotations

import os
from typing import Any

from lighteval.metrics.metrics import Metrics
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc

from calib_frames.integrations.lighteval import calibration

DATA = os.environ["CALIB_LIGHTEVAL_DATA"]


def colors_prompt(line: dict[str, Any], task_name: str | None = None) -> Doc:
    return Doc(
        task_name=task_name,
        query=line["question"],
        choices=[" " + choice for choice in line["choices"]],
        gold_index=line["label"],
    )


def sums_prompt(line: dict[str, Any], task_name: str | None = None) -> Doc:
    golds = [line["label"]]
    if line["held_out"]:
        golds.append((line["label"] + 1) % len(line["choices"]))
    if line["id"] == "sums-0-0":
        golds = [len(line["choices"])]
    return Doc(
        task_name=task_name,
        query=line["question"],
        choices=[" " + choice for choice in line["choices"]],
        gold_index=golds,
    )


def task(name: str, prompt: Any, metrics: list[Any]) -> LightevalTaskConfig:
    return LightevalTaskConfig(
        name=name,
        prompt_function=prompt,
        hf_repo=os.path.join(DATA, name),
        hf_subset="default",
        evaluation_splits=["test"],
        few_shots_split=None,
        few_shots_select=None,
        metrics=metrics,
    )


TASKS_TABLE = [
    task(
        "calib_colors",
        colors_prompt,
        [Metrics.loglikelihood_acc, calibration(), calibration(bins=15)],
    ),
    task("calib_sums", sums_prompt, [Metrics.loglikelihood_acc, calibration()]),
]
