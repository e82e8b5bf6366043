r"""lighteval: ECE, MCE, Brier score and log loss of a multiple-choice task (``--custom-tasks``).

In the custom tasks file of ``lighteval accelerate MODEL_ARGS "my_task|0" --custom-tasks
my_tasks.py`` (or any other lighteval backend)::

    from lighteval.metrics.metrics import Metrics
    from calib_frames.integrations.lighteval import calibration

    my_task = LightevalTaskConfig(..., metrics=[Metrics.loglikelihood_acc, calibration()])

**What it computes.** The prediction of a document is its most likely choice (the argmax
of the raw log-likelihoods, ties to the first: lighteval's ``acc``), its confidence the
softmax probability of that choice over the document's choices, and it is correct when
that choice is a gold one (``doc.gold_index``, an int or a list; a gold outside the
choices is a wrong answer, as lighteval's ``acc`` scores it).
:func:`~calib_frames.sources.choice_predictions` computes them and
:func:`~calib_frames.calibration_metrics` reduces them (equal-width bins with exact edges,
the log loss from the exact log-probability), so ``ece`` is the number calib_frames gives
on the same task read back from lighteval's ``--save-details`` output
(:func:`~calib_frames.sources.scan_lighteval_options` → ``choice_predictions``).

**How it plugs in.** :func:`calibration` is a ``CorpusLevelMetricGrouping``, lighteval's
corpus-level metric with several numbers. Its sample-level half records, per document, the
item ``{"logprobs": [...], "golds": [...]}`` (the choices' log-likelihoods as the model
returned them, and the gold indices) under each of its names; lighteval keeps the items
(and writes them to the details' ``metric`` column); its corpus-level half reduces all of
a task's items at once, in one call of the engine, to the four metrics.

**No stderr.** lighteval bootstraps the stderr of a corpus-level metric that returns one
number (1,000 recomputations in a fork-based multiprocessing pool, in which polars' thread
pool does not survive the fork: a one-number ECE metric on calib_frames hangs there); for
a metric that returns several numbers it skips the bootstrap. This one returns its four
numbers together, so the results file has ``ece`` but no ``ece_stderr``.

**Installing.** ``pip install 'calib-frames[lighteval]'``: lighteval 0.13 with
``huggingface_hub<1`` (lighteval 0.13 builds its task registry by importing every built-in
task, and two of them call ``HfApi.list_models(model_name=...)``, a keyword
huggingface_hub 1.0 removed) and ``xxhash<4`` (lighteval hashes ``str`` prompts, which
xxhash 4 refuses). Offline, lighteval 0.13 cannot build its registry unless its
``tasks/tasks/tinyBenchmarks.pkl`` has been downloaded once: that task module fetches it
when imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lighteval.metrics.metrics_corpus import CorpusLevelComputation
from lighteval.metrics.metrics_sample import SampleLevelComputation
from lighteval.metrics.utils.metric_utils import CorpusLevelMetricGrouping
from lighteval.models.model_output import ModelResponse
from lighteval.tasks.requests import Doc, SamplingMethod

from calib_frames.arguments import Integer, check_arguments
from calib_frames.integrations._common import choice_metrics

__all__ = ["calibration"]

_METRICS = ("ece", "mce", "brier", "log_loss")
_DEFAULT_BINS = 10


class _Calibration(SampleLevelComputation, CorpusLevelComputation):
    """Both halves of :func:`calibration`: a document's item, and a corpus' four metrics."""

    def __init__(self, bins: int) -> None:
        self.bins = bins

    @property
    def metric_names(self) -> list[str]:
        """The four names, each with its non-default parameters: ``ece:bins=15``, ...

        lighteval reads this attribute when a grouping is parametrised, so that the names
        follow ``bins`` however it was set.
        """
        binned = ("ece", "mce") if self.bins != _DEFAULT_BINS else ()
        return [f"{name}:bins={self.bins}" if name in binned else name for name in _METRICS]

    def compute(self, doc: Doc, model_response: ModelResponse, **kwargs: Any) -> dict[str, Any]:
        """The document's item under each metric name (lighteval's sample-level call)."""
        gold = doc.gold_index
        item = {
            # the first len(choices): a PMI task appends the unconditioned log-likelihoods
            "logprobs": [float(v) for v in model_response.logprobs[: len(doc.choices)]],
            "golds": [int(g) for g in gold] if isinstance(gold, list) else [int(gold)],
        }
        return dict.fromkeys(self.metric_names, item)

    def compute_corpus(self, items: Sequence[dict[str, Any]]) -> dict[str, float]:
        """The four metrics of a task's items (lighteval's corpus-level call)."""
        metrics = choice_metrics(
            [item["logprobs"] for item in items],
            [item["golds"] for item in items],
            bins=self.bins,
        )
        return {name: metrics[key] for name, key in zip(self.metric_names, _METRICS, strict=True)}


@check_arguments(bins=Integer(1))
def calibration(bins: int = 10) -> CorpusLevelMetricGrouping:
    """Metrics ``ece``, ``mce``, ``brier`` and ``log_loss`` of a lighteval multiple-choice task.

    With p the softmax probability of the document's argmax choice and y whether it is a
    gold choice (module docstring), over the task's N documents:
    ECE = Σ_b (n_b/N)·|p̄_b − ȳ_b| over ``bins`` equal-width left-closed bins with exact
    edges; MCE = max_b |p̄_b − ȳ_b| over the populated bins (the textbook MCE);
    Brier = (1/N)·Σ (p − y)²; log loss = (1/N)·Σ −y ln p − (1 − y) ln(1 − p). A ``bins``
    other than 10 is named in the metrics it changes, as lighteval names its parametrised
    metrics (``ece:bins=15``, ``mce:bins=15``), so that several can sit in one task.

    Parameters
    ----------
    bins
        The number of equal-width bins of ``ece`` and ``mce``.

    Returns
    -------
    CorpusLevelMetricGrouping
        A new metric for a ``LightevalTaskConfig``'s ``metrics`` list.

    Raises
    ------
    ArgumentError
        ``bins`` is not a positive integer.

    Examples
    --------
    >>> metric = calibration()
    >>> metric.metric_name
    ['ece', 'mce', 'brier', 'log_loss']
    >>> calibration(bins=15).metric_name
    ['ece:bins=15', 'mce:bins=15', 'brier', 'log_loss']

    Three documents of two choices: right at p = 0.9168 and 0.9427 (bin 9), wrong at
    p = 0.6900 (bin 6): ECE = (2/3)·|0.9297 − 1| + (1/3)·|0.6900 − 0|, MCE = 0.6900.

    >>> items = [
    ...     {"logprobs": [-0.1, -2.5], "golds": [0]},
    ...     {"logprobs": [-1.2, -0.4], "golds": [0]},
    ...     {"logprobs": [-3.0, -0.2], "golds": [1]},
    ... ]
    >>> values = metric.corpus_level_fn.compute_corpus(items)
    >>> {name: round(value, 6) for name, value in values.items()}
    {'ece': 0.276824, 'mce': 0.689974, 'brier': 0.16209, 'log_loss': 0.43899}
    """
    computation = _Calibration(bins)
    names = computation.metric_names
    # lighteval annotates higher_is_better and corpus_level_fn of a grouping as dicts of
    # callables; its Metric takes bools and one computation too (as its HLE metric does)
    return CorpusLevelMetricGrouping(
        metric_name=names,
        higher_is_better=dict.fromkeys(names, False),  # type: ignore[arg-type]
        category=SamplingMethod.LOGPROBS,
        sample_level_fn=computation,
        corpus_level_fn=computation,  # type: ignore[arg-type]
    )
