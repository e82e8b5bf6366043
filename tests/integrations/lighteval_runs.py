"""Real lighteval runs for the integration tests: ``python lighteval_runs.py OUTPUT_DIR``.

Run in a subprocess by ``test_lighteval_integration.py`` (importing lighteval takes about
10 s and brings torch and transformers). lighteval's own ``Pipeline`` and
``EvaluationTracker`` (what its ``lighteval accelerate|custom ... --custom-tasks FILE
--save-details`` commands build) run the tasks of ``lighteval_tasks.py`` with two models
that need no download, each writing its results and details into OUTPUT_DIR:

``dummy``         lighteval's ``DummyModel`` as lighteval ships it (seed 33): every
                  choice's log-likelihood is −U(0, 1), so the confidences sit near 1/n
``calib/spread``  the same model with seeded log-likelihoods spread over the whole
                  confidence range: per document a sharpness of 0.3 to 8 nats, the
                  first gold choice boosted on 60 % of them, all choices tied on 5 %

Offline, lighteval 0.13 cannot build its task registry: it imports every built-in task
module, and ``tasks/tasks/tiny_benchmarks.py`` downloads ``tinyBenchmarks.pkl`` into its
own folder at import (a ``ConnectionError`` without a network). An empty module stands in
for that one module, which leaves lighteval's tinyBenchmarks tasks out of the registry;
everything else is lighteval's.
"""

from __future__ import annotations

import random
import sys
import types
from pathlib import Path

TINY_BENCHMARKS = "lighteval.tasks.tasks.tiny_benchmarks"
sys.modules[TINY_BENCHMARKS] = types.ModuleType(TINY_BENCHMARKS)

from lighteval.logging.evaluation_tracker import EvaluationTracker  # noqa: E402
from lighteval.models.dummy.dummy_model import DummyModel, DummyModelConfig  # noqa: E402
from lighteval.models.model_output import ModelResponse  # noqa: E402
from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters  # noqa: E402
from lighteval.tasks.requests import Doc  # noqa: E402

TASKS_FILE = Path(__file__).resolve().with_name("lighteval_tasks.py")
TASKS = "calib_colors|0,calib_sums|0"
SEED = 33


class SpreadModel(DummyModel):
    """lighteval's dummy model with log-likelihoods over the whole confidence range."""

    def loglikelihood(self, docs: list[Doc]) -> list[ModelResponse]:
        responses = []
        for doc in docs:
            rng = random.Random(f"{SEED}:{doc.task_name}:{doc.id}")
            sharpness = rng.choice([0.3, 1.0, 3.0, 8.0])
            logliks = [-0.05 - sharpness * rng.random() for _ in doc.choices]
            gold = doc.gold_index[0] if isinstance(doc.gold_index, list) else doc.gold_index
            if rng.random() < 0.6 and gold < len(logliks):
                logliks[gold] = -0.02
            if rng.random() < 0.05:
                logliks = [-1.0] * len(logliks)
            responses.append(
                ModelResponse(logprobs=logliks, argmax_logits_eq_gold=[False] * len(logliks))
            )
        return responses


def evaluate(model: DummyModel, out: Path) -> None:
    tracker = EvaluationTracker(output_dir=str(out), save_details=True)
    parameters = PipelineParameters(
        launcher_type=ParallelismManager.NONE, custom_tasks_directory=str(TASKS_FILE)
    )
    pipeline = Pipeline(
        tasks=TASKS, pipeline_parameters=parameters, evaluation_tracker=tracker, model=model
    )
    pipeline.evaluate()
    pipeline.show_results()
    pipeline.save_and_push_results()


def main() -> None:
    out = Path(sys.argv[1])
    for name, model_class in (("dummy", DummyModel), ("calib/spread", SpreadModel)):
        cache = str(out.parent / "lighteval-cache" / name)
        model = model_class(DummyModelConfig(model_name=name, seed=SEED, cache_dir=cache))
        evaluate(model, out)


if __name__ == "__main__":
    main()
