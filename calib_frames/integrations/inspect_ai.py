r"""inspect_ai: a multiple-choice scorer that records the answer's confidence, and its metrics.

Calibration in an inspect task in three lines::

    from calib_frames.integrations.inspect_ai import choice_with_confidence

    Task(dataset=..., solver=multiple_choice(), scorer=choice_with_confidence())
    # run with logprobs: inspect eval task.py --logprobs --top-logprobs 5

**The scorer.** :func:`choice_with_confidence` scores exactly as inspect's ``choice()``
(it calls it) and adds to the score's metadata ``confidence``: the probability of the
chosen answer's letter *among the option letters*, at the token that generated it:

    confidence = p(letter) / Σ_{ℓ ∈ option letters} p(ℓ)

with p(ℓ) = Σ exp(logprob) over that token's ``top_logprobs`` alternatives that are ℓ
once stripped (``" B"`` and ``"B"`` both count for B). The token is the *last* generated
token that is the chosen letter, wherever it sits in the reply (the multiple-choice
template answers ``ANSWER: B``, so the letter is not the first token; a chain of thought
may come before it). This is ``letter_confidence`` of
:func:`calib_frames.sources.scan_inspect_samples`, which reads the same number back from
the log. No confidence (``None``) is recorded when the sample has no logprobs (the run
did not ask for them; reasoning models return none), when the token has no
``top_logprobs`` with an option letter, or when there is no single chosen letter (an
empty reply, one outside the ``ANSWER: X`` format, several letters): the sample keeps
its score and the metrics count it in ``missing_confidence``. Ask for at least as many
``top_logprobs`` as there are options, or a letter outside the top k counts as 0.

Scoring a log again (``inspect score``) rebuilds the samples without the solver's marks;
the scorer then reads the answer from the completion with the ``multiple_choice``
solver's own parser, so ``inspect score LOG --scorer calib_frames/choice_with_confidence
--action append`` adds the confidences to a log already written.

**The metrics.** :func:`ece`, :func:`mce`, :func:`brier`, :func:`log_loss` and
:func:`missing_confidence` are scalar inspect metrics over the scores' ``confidence``
metadata and their values, one prediction per sample *and epoch* (they declare
``scores="unreduced"``: inspect's epoch reducers keep only the first epoch's metadata).
A prediction is correct when inspect's ``value_to_float`` gives 1 (full credit: ``C``,
``1``, ``yes``; a partial ``P`` is not correct). The numbers are
:func:`~calib_frames.calibration_metrics` of those predictions: ``ece`` with 10
equal-width left-closed bins and exact edges, ``mce`` the largest gap over the populated
bins (the textbook MCE), ``brier`` = mean (p − y)², ``log_loss`` unclipped.
With no confidence at all every metric is NaN (inspect's convention for an empty
metric), never an exception in the middle of an evaluation.

Scalar values, so the metrics nest in inspect's ``grouped()``:
``grouped(ece(), "subject")``. inspect hands ``grouped`` the epoch-reduced scores; with
``epochs > 1`` give the task ``epochs=Epochs(n, [])`` (no reducer) so that every epoch
is a prediction there too. ``Task(metrics=[...])`` replaces the scorer's own metrics:
list the calibration metrics there as well.

**By name.** The ``inspect_ai`` entry point of calib-frames registers everything here
under ``calib_frames/``: ``--scorer calib_frames/choice_with_confidence`` and
``--metric calib_frames/ece`` work on inspect's command line.

**Statistics for the nightly job.** With ``CALIB_FRAMES_STATISTICS_DIR`` set when inspect
starts, the hook :class:`StatisticsHook` writes each finished run's bin statistics (per
model, task and scorer) to ``<dir>/<eval_id>.parquet`` with :func:`~calib_frames.write_statistics`
(batch id: the run's ``eval_id``, batch time: ``eval.created``); ``calib-frames merge``
and :func:`~calib_frames.read_statistics` fold them.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec

import polars as pl

# inspect's registry naming, and the multiple_choice solver's parser of "ANSWER: X"
from inspect_ai._util.registry import registry_name
from inspect_ai.hooks import Hooks, TaskEnd, hooks
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    accuracy,
    choice,
    metric,
    scorer,
    stderr,
    value_to_float,
)
from inspect_ai.solver import TaskState
from inspect_ai.solver._multiple_choice import (
    parse_answers,
    set_choices_based_on_generated_response,
)

import calib_frames as cf
from calib_frames.integrations._common import group_metrics

__all__ = [
    "CONFIDENCE",
    "STATISTICS_DIR",
    "StatisticsHook",
    "answer_confidence",
    "brier",
    "choice_with_confidence",
    "ece",
    "log_loss",
    "mce",
    "missing_confidence",
    "run_statistics",
    "write_run_statistics",
]

CONFIDENCE = "confidence"
"""The ``Score.metadata`` key the metrics read (a probability in [0, 1], or None)."""

STATISTICS_DIR = "CALIB_FRAMES_STATISTICS_DIR"
"""The environment variable that turns :class:`StatisticsHook` on: the folder it writes to."""

_TO_FLOAT = value_to_float()
_P = ParamSpec("_P")


def answer_confidence(output: ModelOutput, letter: str, options: int) -> float | None:
    """The probability of ``letter`` among the option letters at its last token.

    Parameters
    ----------
    output
        The model's output (``state.output``), with ``logprobs`` and ``top_logprobs``.
    letter
        The chosen answer's letter (``"A"`` for the first option).
    options
        The number of options: the letters ``A`` … its n-th letter count.

    Returns
    -------
    float or None
        p(letter) / Σ p(option letters) from the ``top_logprobs`` of the last generated
        token that is ``letter`` once stripped (module docstring); None without
        logprobs, without such a token, or without an option letter among its
        alternatives.

    Examples
    --------
    >>> from inspect_ai.model import Logprob, Logprobs, ModelOutput, TopLogprob
    >>> top = [TopLogprob(token=" B", logprob=-0.2), TopLogprob(token=" A", logprob=-1.9),
    ...        TopLogprob(token=" The", logprob=-3.0)]
    >>> output = ModelOutput.from_content("mockllm/model", "ANSWER: B")
    >>> output.choices[0].logprobs = Logprobs(content=[
    ...     Logprob(token="ANSWER", logprob=0.0), Logprob(token=":", logprob=0.0),
    ...     Logprob(token=" B", logprob=-0.2, top_logprobs=top)])
    >>> round(answer_confidence(output, "B", 4), 6)  # e^-0.2 / (e^-0.2 + e^-1.9)
    0.845535
    """
    logprobs = output.choices[0].logprobs if output.choices else None
    if logprobs is None:
        return None
    token = next((t for t in reversed(logprobs.content) if t.token.strip() == letter), None)
    if token is None or not token.top_logprobs:
        return None
    letters = {chr(65 + i) for i in range(options)}
    alternatives = [
        (alt.token.strip(), math.exp(alt.logprob))
        for alt in token.top_logprobs
        if alt.token.strip() in letters
    ]
    if not alternatives:
        return None
    mass = sum(p for _, p in alternatives)
    return sum(p for alt, p in alternatives if alt == letter) / mass


def _predictions(scores: list[SampleScore]) -> tuple[pl.DataFrame, int]:
    """The scores with a confidence as prediction rows, and how many had none."""
    pairs = [
        ((s.score.metadata or {}).get(CONFIDENCE), _TO_FLOAT(s.score.value) == 1.0) for s in scores
    ]
    known = [(p, y) for p, y in pairs if p is not None]
    frame = pl.DataFrame(
        known, schema={"confidence": pl.Float64, "correct": pl.Boolean}, orient="row"
    )
    return frame, len(pairs) - len(known)


def _namespaced(factory: Callable[..., object], name: str) -> str:
    """The name to register ``factory`` with so that inspect lists it as calib_frames/name.

    inspect prefixes the package of an installed or editable-installed distribution
    itself, but it finds the distribution by the first ``calib_frames`` metadata on
    ``sys.path``: a source checkout's ``calib_frames.egg-info`` (left by ``pip install
    -e``) hides the editable marker, and the name would stay bare.
    """
    return name if "/" in registry_name(factory, name) else f"calib_frames/{name}"


def _unreduced(name: str) -> Callable[[Callable[_P, Metric]], Callable[_P, Metric]]:
    """Register a metric factory with inspect (unreduced scores), keeping its docstring."""

    def register(factory: Callable[_P, Metric]) -> Callable[_P, Metric]:
        registered = metric(_namespaced(factory, name), scores="unreduced")(factory)
        return functools.wraps(factory)(registered)

    return register


def _calibration_metric(name: str, *, bins: int = 10) -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        frame, _ = _predictions(scores)
        return group_metrics(frame, bins=bins)[name]

    return compute


@_unreduced("ece")
def ece(bins: int = 10) -> Metric:
    """Expected calibration error of the scores' confidences (``bins`` equal-width bins).

    ECE = Σ_b (n_b/N)·|p̄_b − ȳ_b| over left-closed bins [k/M, (k+1)/M) (the last closed
    at 1) with exact edges, by :func:`~calib_frames.calibration_metrics`; NaN with no
    confidence.

    Parameters
    ----------
    bins
        The number of equal-width bins M.

    Returns
    -------
    Metric
        A scalar inspect metric over every sample and epoch (``scores="unreduced"``).

    Examples
    --------
    >>> from inspect_ai.scorer import SampleScore, Score
    >>> scores = [SampleScore(score=Score(value=v, metadata={"confidence": 0.95}))
    ...           for v in "CCCCCCIIII"]
    >>> round(ece()(scores), 12)  # 10 at 0.95, 6 right
    0.35
    """
    return _calibration_metric("ece", bins=bins)


@_unreduced("mce")
def mce(bins: int = 10) -> Metric:
    """Maximum calibration error: the largest gap over the populated bins (textbook MCE).

    MCE = max_b |p̄_b − ȳ_b| (``mce`` of :func:`~calib_frames.calibration_metrics`); NaN
    with no confidence.

    Parameters
    ----------
    bins
        The number of equal-width bins.

    Returns
    -------
    Metric
        A scalar inspect metric over every sample and epoch.

    Examples
    --------
    >>> from inspect_ai.scorer import SampleScore, Score
    >>> scores = [SampleScore(score=Score(value=v, metadata={"confidence": 0.95}))
    ...           for v in "CCCCCCIIII"]
    >>> round(mce()(scores), 12), round(mce()(scores[:9]), 12)  # 10 at 0.95, 6 right; 9, 6
    (0.35, 0.283333333333)
    """
    return _calibration_metric("mce", bins=bins)


@_unreduced("brier")
def brier() -> Metric:
    """Brier score of the scores' confidences: (1/N)·Σ (p − y)², y = 1 for full credit.

    Returns
    -------
    Metric
        A scalar inspect metric over every sample and epoch; NaN with no confidence.

    Examples
    --------
    >>> from inspect_ai.scorer import SampleScore, Score
    >>> scores = [SampleScore(score=Score(value=v, metadata={"confidence": 0.8}))
    ...           for v in ("C", "I")]
    >>> round(brier()(scores), 12)  # (0.2² + 0.8²) / 2
    0.34
    """
    return _calibration_metric("brier")


@_unreduced("log_loss")
def log_loss() -> Metric:
    """Log loss of the scores' confidences: (1/N)·Σ −y ln p − (1 − y) ln(1 − p), unclipped.

    Returns
    -------
    Metric
        A scalar inspect metric over every sample and epoch; NaN with no confidence,
        +inf when a confidence of 0 was right (or of 1 wrong).

    Examples
    --------
    >>> from inspect_ai.scorer import SampleScore, Score
    >>> scores = [SampleScore(score=Score(value=v, metadata={"confidence": 0.8}))
    ...           for v in ("C", "I")]
    >>> round(log_loss()(scores), 6)  # (−ln 0.8 − ln 0.2) / 2
    0.916291
    """
    return _calibration_metric("log_loss")


@_unreduced("missing_confidence")
def missing_confidence() -> Metric:
    """How many scores (samples × epochs) have no confidence, and so no part in the others.

    Returns
    -------
    Metric
        A scalar inspect metric: the count, as a float.

    Examples
    --------
    >>> from inspect_ai.scorer import SampleScore, Score
    >>> scores = [SampleScore(score=Score(value="C", metadata={"confidence": None})),
    ...           SampleScore(score=Score(value="I"))]
    >>> missing_confidence()(scores), ece()(scores)
    (2.0, nan)
    """

    def compute(scores: list[SampleScore]) -> float:
        return float(_predictions(scores)[1])

    return compute


def _choice_with_confidence() -> Scorer:
    """Inspect's ``choice()`` score, with the chosen letter's confidence in its metadata.

    The value, answer and explanation are ``choice()``'s; ``metadata["confidence"]`` is
    :func:`answer_confidence` of the one chosen letter (None when there is none, or no
    logprobs: see the module docstring). Samples whose choices the ``multiple_choice``
    solver did not mark (``inspect score`` on a log) are read with that solver's parser.

    Returns
    -------
    Scorer
        With the metrics accuracy, stderr, ece, mce, brier, log_loss and
        missing_confidence.

    Examples
    --------
    >>> from inspect_ai import Task
    >>> from inspect_ai.dataset import Sample
    >>> from inspect_ai.solver import multiple_choice
    >>> task = Task(dataset=[Sample(input="2 + 2?", choices=["3", "4"], target="B")],
    ...             solver=multiple_choice(), scorer=choice_with_confidence())
    """
    score_choice = choice()

    async def score(state: TaskState, target: Target) -> Score | None:
        if state.choices and all(option.correct is None for option in state.choices):
            answers = parse_answers(state, multiple_correct=len(target.target) > 1)
            set_choices_based_on_generated_response(state, answers)
        result = await score_choice(state, target)
        if result is None:  # choice() always scores; the protocol allows None
            return None
        chosen = [i for i, option in enumerate(state.choices) if option.correct is True]
        confidence = (
            answer_confidence(state.output, chr(65 + chosen[0]), len(state.choices))
            if len(chosen) == 1
            else None
        )
        metadata = {**(result.metadata or {}), CONFIDENCE: confidence}
        return result.model_copy(update={"metadata": metadata})

    return score


choice_with_confidence = scorer(
    metrics=[accuracy(), stderr(), ece(), mce(), brier(), log_loss(), missing_confidence()],
    name=_namespaced(_choice_with_confidence, "choice_with_confidence"),
)(_choice_with_confidence)


def run_statistics(log: EvalLog, *, bins: int = 10) -> pl.DataFrame:
    """The bin statistics of one inspect run, per model, task and scorer.

    Every score whose metadata has a ``confidence`` is a prediction (correct when
    ``value_to_float`` gives 1), one per sample and epoch, as the metrics count them.

    Parameters
    ----------
    log
        A finished run's log; one without samples (an ``eval_set`` hands hooks headers)
        is read again from its ``location``.
    bins
        The number of equal-width bins.

    Returns
    -------
    DataFrame
        :func:`~calib_frames.bin_statistics` with keys ``model``, ``task``, ``scorer``
        (no rows when no score has a confidence).

    Examples
    --------
    A run of 40 questions × 2 epochs, 61 of the 80 answers with a confidence
    (``data/inspect_ai/harness``); its reported ECE is the table's:

    >>> from pathlib import Path
    >>> import calib_frames as cf
    >>> from inspect_ai.log import read_eval_log
    >>> (path,) = Path("data/inspect_ai/harness").glob("*.eval")
    >>> log = read_eval_log(str(path))
    >>> stats = run_statistics(log)
    >>> stats.select("task", "scorer").unique().rows(), int(stats["count"].sum())
    ([('calib_mc_epochs', 'choice_with_confidence')], 61)
    >>> reported = log.results.scores[1].metrics["ece"].value
    >>> abs(cf.metrics_from_bin_statistics(stats)["ece"].item() - reported) < 1e-12
    True
    """
    if log.samples is None and log.location:
        log = read_eval_log(log.location)
    rows = [
        (scorer_name, (score.metadata or {}).get(CONFIDENCE), _TO_FLOAT(score.value) == 1.0)
        for sample in log.samples or []
        for scorer_name, score in (sample.scores or {}).items()
    ]
    frame = pl.DataFrame(
        [row for row in rows if row[1] is not None],
        schema={"scorer": pl.String, "confidence": pl.Float64, "correct": pl.Boolean},
        orient="row",
    ).select(
        pl.lit(log.eval.model, pl.String).alias("model"),
        pl.lit(log.eval.task, pl.String).alias("task"),
        pl.all(),
    )
    return cf.bin_statistics(frame, by=["model", "task", "scorer"], bins=bins)


def write_run_statistics(log: EvalLog, folder: str | Path, *, bins: int = 10) -> Path | None:
    """Write :func:`run_statistics` as one batch, ``<folder>/<eval_id>.parquet``.

    Parameters
    ----------
    log
        A finished run's log.
    folder
        Where the statistics files go (created if missing).
    bins
        The number of equal-width bins (every batch of a nightly series must agree).

    Returns
    -------
    Path or None
        The file written; None when no score had a confidence (nothing is written).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import calib_frames as cf
    >>> from inspect_ai.log import read_eval_log
    >>> (path,) = Path("data/inspect_ai/harness").glob("*.eval")
    >>> log = read_eval_log(str(path))
    >>> written = write_run_statistics(log, tempfile.mkdtemp())
    >>> written.name == f"{log.eval.eval_id}.parquet"
    True
    >>> cf.read_statistics(written).batches == [log.eval.eval_id]
    True
    """
    stats = run_statistics(log, bins=bins)
    if stats.height == 0:
        return None
    path = Path(folder) / f"{log.eval.eval_id}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    cf.write_statistics(
        stats,
        path,
        batch_id=log.eval.eval_id,
        batch_time=log.eval.created,
        binning=cf.Binning.uniform(bins),
    )
    return path


class StatisticsHook(Hooks):
    """Writes every finished run's bin statistics to ``$CALIB_FRAMES_STATISTICS_DIR``.

    Registered with inspect when this module is imported (inspect imports it through
    calib-frames' entry point) with ``CALIB_FRAMES_STATISTICS_DIR`` set; without it no
    hook is registered, so inspect does not list one on every run.
    """

    def enabled(self) -> bool:
        """On while ``CALIB_FRAMES_STATISTICS_DIR`` names a folder."""
        return bool(os.environ.get(STATISTICS_DIR))

    async def on_task_end(self, data: TaskEnd) -> None:
        """Write the run's statistics file (see :func:`write_run_statistics`)."""
        write_run_statistics(data.log, os.environ[STATISTICS_DIR])


if os.environ.get(STATISTICS_DIR):
    hooks(
        name="calib_frames_statistics",
        description=f"bin statistics of each run to ${STATISTICS_DIR}/<eval_id>.parquet",
    )(StatisticsHook)
