"""lm-evaluation-harness' own metrics recomputed from its samples, next to what it reported.

The reading is :mod:`calib_frames.sources.lm_eval` (its docstring says how lm-eval's
format is read); this module computes: accuracy, ``acc_norm``, ``acc_bytes`` and the
multi-class Brier score from the options frame, ECE of the raw softmax, and the word and
byte perplexities and bits per byte from the rolling-loglikelihood documents, joined with
the values of the results files.
"""

from __future__ import annotations

import polars as pl

from calib_frames.arguments import check_arguments
from calib_frames.binning import BINS
from calib_frames.exceptions import ArgumentError
from calib_frames.metrics.calibration import calibration_metrics
from calib_frames.metrics.tokens import perplexity
from calib_frames.multiclass.scores import brier_multiclass
from calib_frames.sources.lm_eval import (
    KEYS,
    read_lm_eval_reported,
    read_lm_eval_runs,
    scan_lm_eval_documents,
    scan_lm_eval_options,
)
from calib_frames.sources.options import choice_predictions
from calib_frames.sources.paths import PathsLike

__all__ = ["lm_eval_comparison"]

_METRICS = {
    "acc": "accuracy",
    "acc_norm": "acc_norm",
    "acc_bytes": "acc_bytes",
    "brier_score": "brier_multiclass",
    "word_perplexity": "word_perplexity",
    "byte_perplexity": "byte_perplexity",
    "bits_per_byte": "bits_per_byte",
}
"""lm-eval metric → the calib_frames column that reproduces it."""


@check_arguments(bins=BINS)
def lm_eval_comparison(
    paths: PathsLike | pl.DataFrame, *, bins: int = 10, filter: str = "none"
) -> pl.DataFrame:
    """Per model × task × run: lm-eval's metrics recomputed by calib_frames, next to its own.

    Parameters
    ----------
    paths
        lm-eval output folders/files, or the frame of
        :func:`~calib_frames.sources.read_lm_eval_runs`.
    bins
        Equal-width bins of the calibration columns (``ece``).
    filter
        Which of lm-eval's filters the reported values are taken from.

    Returns
    -------
    DataFrame
        ``model``, ``task``, ``run``, ``output_type``, ``count`` (documents), then for
        each metric the calib_frames value and lm-eval's as ``<name>_lm_eval``:
        ``accuracy`` (lm-eval ``acc``), ``acc_norm``, ``acc_bytes``, ``brier_multiclass``
        (lm-eval ``brier_score``), ``word_perplexity``, ``byte_perplexity``,
        ``bits_per_byte``; and ``mean_confidence``, ``ece`` (top-label confidence of the
        raw softmax), ``tokens`` (null for perplexity tasks) and ``note``. A metric a
        task does not have is null. Multiple-choice documents without a gold option
        count as wrong, as in lm-eval.

    Raises
    ------
    ReadError
        As :func:`~calib_frames.sources.read_lm_eval_runs`; a malformed samples line (file,
        line), or a samples file with fewer lines than the results file's ``n-samples``.
    ArgumentError
        ``filter`` is not one of the filters in the results files.
    DataError
        Samples whose log-likelihoods are not numbers ≤ 0.

    Examples
    --------
    >>> from calib_frames.comparison import lm_eval_comparison
    >>> table = lm_eval_comparison("data/lm_eval")  # doctest: +SKIP
    """
    runs = read_lm_eval_runs(paths)
    keys = list(KEYS)
    options = scan_lm_eval_options(runs)
    predictions = choice_predictions(
        options, by=keys, normalize=["char", "byte"], no_gold="wrong"
    ).collect()
    names = {"raw": "accuracy", "per_char": "acc_norm", "per_byte": "acc_bytes"}
    accuracy = (
        predictions.group_by([*keys, "scoring"])
        .agg(pl.col("correct").mean(), pl.len().alias("count"))
        .with_columns(pl.col("scoring").replace_strict(names))
        .pivot("scoring", index=[*keys], values="correct")
    )
    counts = (
        predictions.filter(pl.col("scoring") == "raw")
        .group_by(keys)
        .agg(pl.len().cast(pl.UInt64).alias("count"))
    )
    brier = brier_multiclass(options, by=keys, no_gold="wrong").collect()
    brier = brier.filter(pl.col("scoring") == "raw").select(*keys, "brier_multiclass")
    raw = predictions.filter(pl.col("scoring") == "raw")
    calibration = calibration_metrics(raw, by=keys, bins=bins).select(
        *keys, "mean_confidence", "ece"
    )
    documents = scan_lm_eval_documents(runs).collect()
    # No token counts: the per-token columns of this call are not used (tokens=1 only
    # fills the token denominator); byte and word measures do not depend on it.
    ppl = perplexity(
        documents.drop("tokens"), nll="nll", tokens=1, bytes="bytes", words="words", by=keys
    )
    ppl = ppl.select(*keys, "word_perplexity", "byte_perplexity", "bits_per_byte")
    doc_counts = documents.group_by(keys).agg(pl.len().cast(pl.UInt64).alias("count"))
    every = read_lm_eval_reported(runs)
    filters = sorted(set(every["filter"].drop_nulls().to_list()))
    if not isinstance(filter, str) or (filters and filter not in filters):
        raise ArgumentError(
            f"filter= names one of lm-eval's filters in these results ({filters}), got {filter!r}"
        )
    reported = (
        every.filter(pl.col("filter") == filter, pl.col("metric").is_in(list(_METRICS)))
        .with_columns((pl.col("metric").replace_strict(_METRICS) + "_lm_eval").alias("metric"))
        .pivot("metric", index=keys, values="value")
    )
    table = runs.select(*keys, "output_type")
    all_counts = pl.concat([counts, doc_counts])
    for part in (all_counts, accuracy, brier, calibration, ppl, reported):
        table = table.join(part, on=keys, how="left")
    columns = ["count"]
    for name in _METRICS.values():
        columns += [name, f"{name}_lm_eval"]
    table = table.with_columns(
        pl.lit(None, pl.Float64).alias(c) for c in columns if c not in table.columns
    )
    rolling = pl.col("output_type") == "loglikelihood_rolling"
    table = table.with_columns(
        pl.when(rolling).then(pl.lit(None, pl.Int64)).alias("tokens"),
        pl.when(pl.col("count").is_null())
        .then(pl.lit("no samples logged for this task"))
        .when(rolling)
        .then(pl.lit("lm-eval logs no token counts: per-token perplexity unavailable"))
        .alias("note"),
    )
    return table.select(
        *keys, "output_type", *columns, "mean_confidence", "ece", "tokens", "note"
    ).sort(keys)
