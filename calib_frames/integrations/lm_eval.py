r"""lm-evaluation-harness: ECE, MCE, Brier and log loss (and perplexity) from a task YAML.

In a task YAML (lm-eval ≥ 0.4.12 resolves ``!function`` from any installed module)::

    output_type: multiple_choice
    process_results: !function calib_frames.integrations.lm_eval.process_results
    metric_list:
      - metric: acc                # lm-eval's own, computed by lm-eval's own code
        aggregation: mean
        higher_is_better: true
      - metric: ece
        aggregation: !function calib_frames.integrations.lm_eval.ece
        higher_is_better: false
      - metric: brier
        aggregation: !function calib_frames.integrations.lm_eval.brier
        higher_is_better: false

**process_results.** A task that names its own ``process_results`` loses lm-eval's
built-in one, which is the only place lm-eval computes ``acc``, ``acc_norm``,
``acc_bytes``, ``exact_match``, ``brier_score``, ``acc_mutual_info`` … (and it emits
fixed keys, never ``ece``). :func:`process_results` therefore runs lm-eval's built-in
one (``ConfigurableTask.process_results`` with the task's configuration, on a copy of the
task whose ``process_results`` is unset): every lm-eval metric of the ``metric_list`` is
lm-eval's own number. lm-eval calls ``process_results(doc, results)`` without the task;
the function takes it from its caller, lm-eval's ``ConfigurableTask.process_results``
(it raises :class:`~calib_frames.exceptions.ArgumentError` when called from elsewhere).
Then every metric of the ``metric_list`` that lm-eval did not fill gets an *item*:

* ``multiple_choice``: ``[logliks, golds]``, the options' log-likelihoods (the
  conditional ones of an ``acc_mutual_info`` task) and the gold option indices, both as
  lm-eval resolved them (``doc_to_choice``/``doc_to_target``, several golds for a
  ``multiple_target`` task, none for a gold outside the options, which lm-eval scores as
  wrong); the aggregations :func:`ece`, :func:`mce`, :func:`brier` and :func:`log_loss`
  reduce them;
* ``loglikelihood`` and ``loglikelihood_rolling``: ``word_perplexity``,
  ``byte_perplexity`` and ``bits_per_byte`` get lm-eval's item ``[loglikelihood,
  count]`` (words or UTF-8 bytes of the target, counted by the task's own
  ``count_words``/``count_bytes``), which lm-eval's built-in only emits for rolling tasks;
  lm-eval's ``weighted_perplexity`` and ``bits_per_byte`` aggregations or those of this
  module (:func:`word_perplexity`, :func:`byte_perplexity`, :func:`bits_per_byte`) reduce
  them.

**The aggregations.** The prediction of a document is its most likely option (the
argmax of the raw log-likelihoods: lm-eval's ``acc``, ties to the first option), its
confidence the softmax probability of that option over the offered options, and it is
correct when that option is a gold one; :func:`~calib_frames.sources.choice_predictions`
computes them (``no_gold="wrong"``, as lm-eval scores a document without a gold option)
and :func:`~calib_frames.calibration_metrics` reduces them (10 equal-width bins, exact
edges, the log loss from the exact log-probability). So ``ece`` is the number calib_frames
gives on the same task read back from ``--log_samples`` output
(:func:`~calib_frames.sources.scan_lm_eval_options` → ``choice_predictions``). Another bin
count is a one-line aggregation in the task's ``utils.py``:
``def ece15(items): return lm_eval.ece(items, bins=15)``. A task with no document gives
NaN. lm-eval's bootstrap does not know these aggregations and reports their stderr as
``N/A``.

**A group's pooled ECE.** lm-eval's score of a group (``mmlu``) is the mean of its
subtasks' scores, so an ``ece`` listed in a group's ``aggregate_metric_list`` is the mean
of 57 ECEs, not the ECE of the pooled predictions. The pooled number comes from the
``--log_samples`` output through the additive bin tables: per subtask
:func:`~calib_frames.bin_statistics`, summed per model with
:func:`~calib_frames.merge_bin_statistics` (``by="model"``), reduced with
:func:`~calib_frames.metrics_from_bin_statistics`; the group's subtasks are listed in the
results file (``group_subtasks``). The README's "In your lm-eval task YAML" shows it.
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

import polars as pl
from lm_eval.api.task import ConfigurableTask

import calib_frames as cf
from calib_frames.exceptions import ArgumentError
from calib_frames.integrations._common import choice_metrics

__all__ = [
    "bits_per_byte",
    "brier",
    "byte_perplexity",
    "ece",
    "log_loss",
    "mce",
    "process_results",
    "word_perplexity",
]

_CHOICE_TYPES = ("multiple_choice",)
_LOSS_TYPES = ("loglikelihood", "loglikelihood_rolling")
_LIKELIHOOD = "likelihood"  # lm-eval's built-in key for (gold, logliks)
_CALLER_DEPTH = 8  # frames searched for the calling task


def _calling_task() -> ConfigurableTask:
    """The lm-eval task whose ``process_results`` called :func:`process_results`."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(_CALLER_DEPTH):
        if frame is None:
            break
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, ConfigurableTask):
            return candidate
        frame = frame.f_back
    raise ArgumentError(
        "calib_frames.integrations.lm_eval.process_results is lm-eval's hook: name it in a "
        "task YAML (process_results: !function calib_frames.integrations.lm_eval."
        "process_results); lm-eval's ConfigurableTask.process_results calls it"
    )


def _builtin_results(task: ConfigurableTask, doc: Any, results: Sequence[Any]) -> dict[str, Any]:
    """lm-eval's own ``process_results`` of ``task`` (as if the YAML named none).

    Run on a shallow copy of the task whose configuration has no ``process_results`` and
    whose metric list also asks for lm-eval's ``likelihood`` item (gold, logliks), so that
    the gold and the log-likelihoods are the ones lm-eval resolved.
    """
    builtin = copy.copy(task)
    builtin._config = copy.copy(task.config)
    builtin._config.process_results = None
    builtin._metric_fn_list = {**task._metric_fn_list, _LIKELIHOOD: None}
    return dict(ConfigurableTask.process_results(builtin, doc, results))


def process_results(doc: dict[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """lm-eval's own per-document metrics, plus the items of the calibration aggregations.

    Name it as a task's ``process_results`` (module docstring); lm-eval calls it once per
    document.

    Parameters
    ----------
    doc
        The document (lm-eval passes it).
    results
        The model's responses to the document's requests (lm-eval passes them).

    Returns
    -------
    dict
        lm-eval's built-in values of the ``metric_list``'s metrics, and for each metric
        lm-eval did not fill: ``[logliks, golds]`` (``multiple_choice``), or for
        ``word_perplexity``, ``byte_perplexity`` and ``bits_per_byte`` of a
        ``loglikelihood``/``loglikelihood_rolling`` task ``[loglikelihood, count]``.

    Raises
    ------
    ArgumentError
        Called other than by lm-eval's ``ConfigurableTask.process_results``, or for an
        output type other than those above (``generate_until`` has no option
        probabilities).

    Examples
    --------
    >>> process_results({}, [])
    Traceback (most recent call last):
    ...
    calib_frames.exceptions.ArgumentError: ... is lm-eval's hook: name it in a task YAML ...
    """
    task = _calling_task()
    listed = list(task.aggregation())
    output_type = task.OUTPUT_TYPE
    if output_type not in (*_CHOICE_TYPES, *_LOSS_TYPES):
        raise ArgumentError(
            f"task {task.config.task!r}: calib_frames' process_results takes output_type "
            f"multiple_choice, loglikelihood or loglikelihood_rolling, not {output_type!r}"
        )
    builtin = _builtin_results(task, doc, results)
    out = {name: value for name, value in builtin.items() if name in listed}
    if output_type in _CHOICE_TYPES:
        gold, logliks = builtin[_LIKELIHOOD]
        golds = [int(g) for g in gold] if isinstance(gold, list) else [int(gold)]
        item = [[float(value) for value in logliks], golds]
        out.update({name: item for name in listed if name not in out})
        return out
    loglikelihood = float(results[0][0] if output_type == "loglikelihood" else results[0])
    target = task.doc_to_target(doc)
    counts = {
        "word_perplexity": task.count_words(target),
        "byte_perplexity": task.count_bytes(target),
        "bits_per_byte": task.count_bytes(target),
    }
    for name, count in counts.items():
        if name in listed and name not in out:
            out[name] = [loglikelihood, count]
    return out


def _choice_metric(items: Sequence[Sequence[Any]], name: str, *, bins: int = 10) -> float:
    """One calibration metric of the documents' ``[logliks, golds]`` items."""
    metrics = choice_metrics(
        [logliks for logliks, _ in items],
        [golds for _, golds in items],
        bins=bins,
    )
    return metrics[name]


def ece(items: Sequence[Sequence[Any]], bins: int = 10) -> float:
    """Expected calibration error of the documents' most likely options.

    ECE = Σ_b (n_b/N)·|p̄_b − ȳ_b| over ``bins`` equal-width left-closed bins with exact
    edges, p the softmax probability of the argmax option, y whether it is a gold option
    (module docstring); NaN with no document.

    Parameters
    ----------
    items
        The ``[logliks, golds]`` items of :func:`process_results`, one per document.
    bins
        The number of equal-width bins.

    Returns
    -------
    float
        The ECE.

    Examples
    --------
    Three documents of two options: right at p = 0.9168 and 0.9427 (bin 9), wrong at
    p = 0.6900 (bin 6): ECE = (2/3)·|0.9297 − 1| + (1/3)·|0.6900 − 0|.

    >>> items = [[[-0.1, -2.5], [0]], [[-1.2, -0.4], [0]], [[-3.0, -0.2], [1]]]
    >>> round(ece(items), 6)
    0.276824
    """
    return _choice_metric(items, "ece", bins=bins)


def mce(items: Sequence[Sequence[Any]], bins: int = 10) -> float:
    """Maximum calibration error: the largest gap over the populated bins (textbook MCE).

    ``mce`` of :func:`~calib_frames.calibration_metrics` on the predictions of :func:`ece`;
    NaN with no document.

    Parameters
    ----------
    items
        The ``[logliks, golds]`` items of :func:`process_results`.
    bins
        The number of equal-width bins.

    Returns
    -------
    float
        The MCE.

    Examples
    --------
    >>> items = [[[-0.1, -2.5], [0]]] * 10 + [[[-0.1, -2.5], [1]]] * 2
    >>> round(mce(items), 6)  # 12 documents at p = 0.916827 in one bin, 10 right
    0.083494
    """
    return _choice_metric(items, "mce", bins=bins)


def brier(items: Sequence[Sequence[Any]]) -> float:
    """Brier score of the documents' most likely options: (1/N)·Σ (p − y)².

    The binary Brier score of the predicted option's confidence (lm-eval's
    ``brier_score`` is the multi-class one, summed over every option).

    Parameters
    ----------
    items
        The ``[logliks, golds]`` items of :func:`process_results`.

    Returns
    -------
    float
        The Brier score; NaN with no document.

    Examples
    --------
    >>> round(brier([[[-0.1, -2.5], [0]], [[-0.1, -2.5], [1]]]), 6)
    0.423745
    """
    return _choice_metric(items, "brier")


def log_loss(items: Sequence[Sequence[Any]]) -> float:
    """Log loss of the documents' most likely options: (1/N)·Σ −y ln p − (1 − y) ln(1 − p).

    From the exact log-probability of the predicted option (no rounding of p near 1).

    Parameters
    ----------
    items
        The ``[logliks, golds]`` items of :func:`process_results`.

    Returns
    -------
    float
        The log loss; NaN with no document.

    Examples
    --------
    >>> round(log_loss([[[-0.1, -2.5], [0]], [[-0.1, -2.5], [1]]]), 6)
    1.286836
    """
    return _choice_metric(items, "log_loss")


def _nll_metric(items: Sequence[Sequence[float]], column: str) -> float:
    """A column of :func:`~calib_frames.perplexity` of ``[loglikelihood, count]`` items.

    The count is the unit of ``column`` (words or bytes); it fills both unit columns.
    """
    if not items:
        return math.nan
    counts = [int(n) for _, n in items]
    losses = pl.DataFrame(
        {"nll": [-float(ll) for ll, _ in items], "words": counts, "bytes": counts},
        schema={"nll": pl.Float64, "words": pl.Int64, "bytes": pl.Int64},
    )
    value = cf.perplexity(losses, tokens=1, bytes="bytes", words="words")[column].item()
    return math.nan if value is None else float(value)


def word_perplexity(items: Sequence[Sequence[float]]) -> float:
    """exp(Σ nll / Σ words) of ``[loglikelihood, words]`` items (lm-eval's convention).

    Parameters
    ----------
    items
        ``[loglikelihood, words]`` per document.

    Returns
    -------
    float
        The word perplexity; NaN with no document.

    Examples
    --------
    >>> round(word_perplexity([[-6.0, 3], [-2.0, 1]]), 6)  # exp(8 / 4)
    7.389056
    """
    return _nll_metric(items, "word_perplexity")


def byte_perplexity(items: Sequence[Sequence[float]]) -> float:
    """exp(Σ nll / Σ bytes) of ``[loglikelihood, bytes]`` items.

    Parameters
    ----------
    items
        ``[loglikelihood, bytes]`` per document.

    Returns
    -------
    float
        The byte perplexity; NaN with no document.

    Examples
    --------
    >>> round(byte_perplexity([[-6.0, 12], [-2.0, 4]]), 6)  # exp(8 / 16)
    1.648721
    """
    return _nll_metric(items, "byte_perplexity")


def bits_per_byte(items: Sequence[Sequence[float]]) -> float:
    """Σ nll / (Σ bytes · ln 2) of ``[loglikelihood, bytes]`` items.

    Parameters
    ----------
    items
        ``[loglikelihood, bytes]`` per document.

    Returns
    -------
    float
        Bits per byte; NaN with no document.

    Examples
    --------
    >>> round(bits_per_byte([[-6.0, 12], [-2.0, 4]]), 6)  # 8 / (16 ln 2)
    0.721348
    """
    return _nll_metric(items, "bits_per_byte")
