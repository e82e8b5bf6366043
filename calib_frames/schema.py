"""Every table calib_frames produces: its columns, their dtypes, and where its keys are.

A table is its group-key columns followed by the columns of its :class:`Table` spec, in
the spec's order. The keys are *recorded by position*: they are exactly the columns
before the spec's first column. A column a user appends later (``ece_pct``) comes after
them and so never becomes a key: merges, roll-ups and joins stay on the keys the table
was built with. Columns beyond the spec's (interval columns, derived columns) may follow.

==================  ===========================  =========================================
table               first column                 built by
==================  ===========================  =========================================
``CELLS``           ``bin``                      the row pass (:mod:`calib_frames.engine`)
``BIN_STATISTICS``  ``bin``                      :func:`~calib_frames.bin_statistics`
``RELIABILITY``     ``bin``                      :func:`~calib_frames.reliability_table`
``METRICS``         ``count``                    :func:`~calib_frames.calibration_metrics`
``NLL_SUMS``        ``count``                    :func:`~calib_frames.nll_sums`
``PERPLEXITY``      ``count``                    :func:`~calib_frames.perplexity`
==================  ===========================  =========================================

The tables of :mod:`calib_frames.sources`, the multi-class Brier score and the lm-eval
comparison:

========================  ===============  ================================================
table                     first column     built by
========================  ===============  ================================================
``CHOICE_PREDICTIONS``    ``scoring``      :func:`~calib_frames.sources.choice_predictions`
``OPTION_PROBABILITIES``  ``scoring``      :func:`~calib_frames.sources.option_probabilities`
``BRIER_MULTICLASS``      ``scoring``      :func:`~calib_frames.multiclass.brier_multiclass`
``LM_EVAL_COMPARISON``    ``output_type``  :func:`~calib_frames.comparison.lm_eval_comparison`
========================  ===============  ================================================

The tables of the estimators, multi-class calibration, recalibration and ranking, each
named after the function that builds it (the ``built_by`` of its spec):
``NLL_MOMENTS``, ``NOISE_FLOOR``, ``ISOTONIC_BLOCKS``, ``SMOOTH_ECE``,
``SMOOTH_RELIABILITY_CURVE``, ``CORP_RELIABILITY``, ``CORP_DECOMPOSITION``,
``ADAPTIVE_ECE``, ``ECE_BY_BIN_COUNT``, ``SELECTIVE_METRICS``, ``SELECTIVE_CURVE``,
``MULTICLASS_CALIBRATION``, ``TEMPERATURE``, ``PLATT``, ``HISTOGRAM``, ``ISOTONIC``,
``HELM_CALIBRATION``, ``RANKING_PER_QUERY``, ``RANKING_METRICS`` and
``PAIRED_SIGNIFICANCE``.

``pl.Unknown`` marks a column whose dtype is the caller's (the option and question ids
keep the input's dtypes); the specs name the question and option columns by their
defaults (``question``, ``option``): called with other names, the tables keep those.

``count`` is the number of input rows everywhere (per bin, per group); the comparison
table, which joins a metrics and a perplexity table, calls the latter's ``nll_count``.

Persisted statistics carry :data:`FORMAT_VERSION`, their binning and their keys in the
parquet file's key-value metadata (:mod:`calib_frames.storage`).

Examples
--------
>>> import polars as pl
>>> import calib_frames as cf
>>> from calib_frames.schema import METRICS
>>> df = pl.DataFrame({"model": ["a", "b"], "confidence": [0.9, 0.6], "correct": [1, 0]})
>>> table = cf.calibration_metrics(df, by="model").with_columns(ece_pct=pl.col("ece") * 100)
>>> METRICS.keys(table.collect_schema())
['model']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.validation import as_lazy

__all__ = [
    "ADAPTIVE_ECE",
    "BIN_STATISTICS",
    "BRIER_MULTICLASS",
    "CELLS",
    "CHOICE_PREDICTIONS",
    "CORP_DECOMPOSITION",
    "CORP_RELIABILITY",
    "ECE_BY_BIN_COUNT",
    "FORMAT_VERSION",
    "HELM_CALIBRATION",
    "HISTOGRAM",
    "ISOTONIC",
    "ISOTONIC_BLOCKS",
    "LM_EVAL_COMPARISON",
    "METRICS",
    "MULTICLASS_CALIBRATION",
    "NLL_MOMENTS",
    "NLL_SUMS",
    "NOISE_FLOOR",
    "OPTION_PROBABILITIES",
    "PAIRED_SIGNIFICANCE",
    "PERPLEXITY",
    "PLATT",
    "RANKING_METRICS",
    "RANKING_PER_QUERY",
    "RELIABILITY",
    "SELECTIVE_CURVE",
    "SELECTIVE_METRICS",
    "SMOOTH_ECE",
    "SMOOTH_RELIABILITY_CURVE",
    "TEMPERATURE",
    "Table",
]

FORMAT_VERSION = 1
"""Version of the persisted bin-statistics / NLL-sums format (bumped on any change)."""

F64 = pl.Float64()


@dataclass(frozen=True)
class Table:
    """The columns (after the keys) of one kind of table, with their dtypes.

    Attributes
    ----------
    name
        How error messages call the table ("bin-statistics table").
    columns
        Column name → dtype, in output order; the first one marks where the keys end.
    additive
        The columns that add up when tables of disjoint data are merged.
    built_by
        The function that builds such a table (named in error messages).
    optional
        Columns of ``columns`` a table may lack (e.g. ``bytes`` of NLL sums).
    """

    name: str
    columns: dict[str, pl.DataType]
    additive: tuple[str, ...] = ()
    built_by: str = ""
    optional: tuple[str, ...] = field(default=())

    @property
    def names(self) -> tuple[str, ...]:
        """The spec's column names, in order."""
        return tuple(self.columns)

    @property
    def first(self) -> str:
        """The column that follows the keys."""
        return next(iter(self.columns))

    def keys(self, schema: pl.Schema) -> list[str]:
        """The group keys of a table with this ``schema``: the columns before :attr:`first`.

        Checks first that it is such a table.

        Raises
        ------
        TableError
            If a required column is missing.
        """
        names = schema.names()
        missing = [c for c in self.columns if c not in names and c not in self.optional]
        if missing:
            hint = f"; build one with calib_frames.{self.built_by}" if self.built_by else ""
            raise TableError(f"not a {self.name}: missing columns {missing}{hint}")
        return names[: names.index(self.first)]

    def only(self, *names: str) -> Table:
        """The same table kind with only ``names`` required (what a consumer reads of it).

        Examples
        --------
        >>> METRICS.only("count", "ece").names
        ('count', 'ece')
        """
        return Table(self.name, {n: self.columns[n] for n in names}, built_by=self.built_by)

    def select(self, keys: Sequence[str], schema: pl.Schema) -> list[str]:
        """``keys`` followed by the spec's columns present in ``schema``, in spec order."""
        return [*keys, *(c for c in self.columns if c in schema)]

    def aligned(
        self, tables: Sequence[pl.DataFrame | pl.LazyFrame]
    ) -> tuple[list[pl.LazyFrame], list[str]]:
        """Tables of this spec to merge, as LazyFrames, and their common keys.

        Raises
        ------
        ArgumentError
            No table was given.
        TableError
            A table is not of this spec, or the tables are grouped by different keys
            (the same set in another order is fine).
        """
        if not tables:
            raise ArgumentError(f"merging needs at least one {self.name}")
        frames = [as_lazy(table) for table in tables]
        keys = self.keys(frames[0].collect_schema())
        for frame in frames[1:]:
            other = self.keys(frame.collect_schema())
            if sorted(other) != sorted(keys):
                raise TableError(
                    f"cannot merge {self.name}s grouped by different keys: {keys} vs {other}"
                )
        return frames, keys


_BIN_SUMS: dict[str, pl.DataType] = {
    "weight_correct": F64,
    "weight_wrong": F64,
    "sum_confidence_correct": F64,
    "sum_residual_correct": F64,
    "sum_residual_wrong": F64,
    "sum_sq_residual_correct": F64,
    "sum_sq_residual_wrong": F64,
    "sum_log_loss": F64,
}

CELLS = Table(
    "cell table (the row pass's output)",
    {
        "bin": pl.UInt32(),
        "correct": pl.Boolean(),
        "count": pl.UInt64(),
        "weight": F64,
        "sum_outcome_probability": F64,
        "sum_residual": F64,
        "sum_sq_residual": F64,
        "sum_log_outcome_probability": F64,
        "invalid_weight": pl.UInt64(),
        "invalid_log_confidence": pl.UInt64(),
        "bin_lower": F64,
        "bin_upper": F64,
    },
    additive=(
        "count",
        "weight",
        "sum_outcome_probability",
        "sum_residual",
        "sum_sq_residual",
        "sum_log_outcome_probability",
        "invalid_weight",
        "invalid_log_confidence",
    ),
    built_by="engine.prediction_cells",
    optional=("invalid_weight", "invalid_log_confidence", "bin_lower", "bin_upper"),
)
"""One row per (keys…, bin, outcome) with the row pass's sums.

* ``bin`` is null for rows whose confidence is invalid, ``correct`` null for rows whose
  outcome is not boolean or 0/1: such rows form their own cells and are counted, not lost.
* ``sum_outcome_probability`` = Σ w·q with q = p for correct rows and 1 − p for wrong
  ones; ``sum_residual`` = Σ w·r with r = |p − y|; ``sum_sq_residual`` = Σ w·r²;
  ``sum_log_outcome_probability`` = Σ w·ln q (≤ 0; negated in the reduction).
* ``invalid_weight``: rows whose weight is negative, null or not finite (only with a
  weight column); ``invalid_log_confidence``: rows whose log-confidence column is not
  ≤ 0 or disagrees with the confidence (only with a log-confidence column).
* ``bin_lower``/``bin_upper``: smallest/largest confidence (equal-mass bins only).

Another engine (Spark) that writes this table reuses everything after the row pass.
"""

BIN_STATISTICS = Table(
    "bin-statistics table",
    {
        "bin": pl.UInt32(),
        "bin_lower": F64,
        "bin_upper": F64,
        "closed": pl.String(),
        "count": pl.UInt64(),
        "weight": F64,
        "mean_confidence": F64,
        "accuracy": F64,
        **_BIN_SUMS,
    },
    additive=("count", "weight", *_BIN_SUMS),
    built_by="bin_statistics",
)
"""One row per (keys…, bin) for every bin of every group; see :mod:`calib_frames.stats`."""

RELIABILITY = Table(
    "reliability table",
    {
        "bin": pl.UInt32(),
        "bin_lower": F64,
        "bin_upper": F64,
        "count": pl.UInt64(),
        "mean_confidence": F64,
        "accuracy": F64,
    },
    built_by="reliability_table",
)
"""The reliability-diagram data: null means in empty bins (``count`` 0 says why)."""

METRICS = Table(
    "calibration-metrics table",
    {
        "count": pl.UInt64(),
        "weight": F64,
        "accuracy": F64,
        "mean_confidence": F64,
        "overconfidence": F64,
        "ece": F64,
        "rmsce": F64,
        "mce": F64,
        "mce_guarded": F64,
        "populated_bins": pl.UInt32(),
        "brier": F64,
        "reliability": F64,
        "resolution": F64,
        "uncertainty": F64,
        "within_bin_variance": F64,
        "within_bin_covariance": F64,
        "log_loss": F64,
        "rmsce_debiased": F64,
    },
    built_by="calibration_metrics",
)
"""One row per group; formulas in :mod:`calib_frames.metrics.calibration`."""

NLL_SUMS = Table(
    "NLL-sums table",
    {
        "count": pl.UInt64(),
        "nll_sum": F64,
        "tokens": pl.Int64(),
        "bytes": pl.Int64(),
        "words": pl.Int64(),
    },
    additive=("count", "nll_sum", "tokens", "bytes", "words"),
    built_by="nll_sums",
    optional=("bytes", "words"),
)
"""One row per group: rows, Σ nll, Σ tokens [, Σ bytes, Σ words]."""

PERPLEXITY = Table(
    "perplexity table",
    {
        **NLL_SUMS.columns,
        "mean_nll": F64,
        "perplexity": F64,
        "bits_per_token": F64,
        "byte_perplexity": F64,
        "bits_per_byte": F64,
        "word_perplexity": F64,
    },
    built_by="perplexity",
    optional=("bytes", "words", "byte_perplexity", "bits_per_byte", "word_perplexity"),
)
"""One row per group; formulas in :mod:`calib_frames.metrics.tokens`."""

ANY = pl.Unknown()

CHOICE_PREDICTIONS = Table(
    "choice-predictions table",
    {
        "scoring": pl.String(),
        "question": ANY,
        "options": pl.UInt32(),
        "gold_options": pl.UInt32(),
        "prediction": ANY,
        "confidence": F64,
        "log_confidence": F64,
        "correct": pl.Boolean(),
    },
    built_by="sources.choice_predictions",
)
"""One row per (keys…, scoring, question)."""

OPTION_PROBABILITIES = Table(
    "option-probabilities table",
    {
        "scoring": pl.String(),
        "question": ANY,
        "option": ANY,
        "probability": F64,
        "log_probability": F64,
        "is_answer": pl.Boolean(),
        "is_prediction": pl.Boolean(),
    },
    built_by="sources.option_probabilities",
)
"""One row per (keys…, scoring, question, option)."""

BRIER_MULTICLASS = Table(
    "multi-class Brier table",
    {"scoring": pl.String(), "count": pl.UInt64(), "brier_multiclass": F64},
    built_by="multiclass.brier_multiclass",
)
"""One row per (keys…, scoring)."""

_LM_EVAL_PAIRS = (
    "accuracy",
    "acc_norm",
    "acc_bytes",
    "brier_multiclass",
    "word_perplexity",
    "byte_perplexity",
    "bits_per_byte",
)

LM_EVAL_COMPARISON = Table(
    "lm-eval comparison table",
    {
        "output_type": pl.String(),
        "count": pl.UInt64(),
        **{c: F64 for name in _LM_EVAL_PAIRS for c in (name, f"{name}_lm_eval")},
        "mean_confidence": F64,
        "ece": F64,
        "tokens": pl.Int64(),
        "note": pl.String(),
    },
    built_by="comparison.lm_eval_comparison",
)
"""One row per (model, task, run): calib_frames' value and lm-eval's (``*_lm_eval``)."""


# --- the tables of the in-memory estimators (calib_frames.estimators) ---------------

_NLL_MOMENT_SUMS: dict[str, pl.DataType] = {
    "count": pl.UInt64(),
    "nll_sum": F64,
    "tokens": F64,
    "bytes": F64,
    "nll_sq_sum": F64,
    "nll_tokens_sum": F64,
    "tokens_sq_sum": F64,
    "nll_bytes_sum": F64,
    "tokens_bytes_sum": F64,
    "bytes_sq_sum": F64,
}

NLL_MOMENTS = Table(
    "NLL-moments table",
    _NLL_MOMENT_SUMS,
    additive=tuple(_NLL_MOMENT_SUMS),  # every column adds up
    built_by="estimators.perplexity_bootstrap.nll_moment_sums",
    optional=("bytes", "nll_bytes_sum", "tokens_bytes_sum", "bytes_sq_sum"),
)
"""One row per group: the NLL sums and their second moments (Σnll², Σnll·tokens, …)."""

NOISE_FLOOR = Table(
    "noise-floor table",
    {
        "count": pl.UInt64(),
        "weight": F64,
        "populated_bins": pl.UInt32(),
        "ece": F64,
        "ece_direction": pl.String(),
        "ece_null_mean": F64,
        "ece_noise_floor": F64,
        "ece_p_value": F64,
        "ece_p_adjusted": F64,
        "ece_beyond_noise": pl.Boolean(),
        "verdict": pl.String(),
    },
    built_by="estimators.calibration_noise_floor",
)
"""One row per group: the ECE, its distribution under perfect calibration, a verdict."""

ISOTONIC_BLOCKS = Table(
    "isotonic-blocks table",
    {
        "block": pl.UInt32(),
        "x_lower": F64,
        "x_upper": F64,
        "count": pl.UInt64(),
        "weight": F64,
        "value": F64,
    },
    built_by="estimators.isotonic_blocks",
)
"""One row per (group, block) of the pool-adjacent-violators fit."""

SMOOTH_ECE = Table(
    "smooth-ECE table",
    {"count": pl.UInt64(), "smooth_ece": F64, "bandwidth": F64},
    built_by="estimators.smooth_ece",
)
"""One row per group."""

SMOOTH_RELIABILITY_CURVE = Table(
    "smooth reliability curve",
    {"x": F64, "y": F64, "density": F64},
    built_by="estimators.smooth_reliability_curve",
)
"""One row per (group, grid point)."""

CORP_RELIABILITY = Table(
    "CORP reliability table",
    {
        "block": pl.UInt32(),
        "confidence_lower": F64,
        "confidence_upper": F64,
        "count": pl.UInt64(),
        "weight": F64,
        "recalibrated": F64,
    },
    built_by="estimators.corp_reliability",
)
"""One row per (group, block)."""

CORP_DECOMPOSITION = Table(
    "CORP decomposition table",
    {
        "count": pl.UInt64(),
        "weight": F64,
        "mean_score": F64,
        "miscalibration": F64,
        "discrimination": F64,
        "uncertainty": F64,
    },
    built_by="estimators.corp_decomposition",
)
"""One row per group."""

ADAPTIVE_ECE = Table(
    "adaptive-ECE table",
    {
        "count": pl.UInt64(),
        "bins": pl.UInt32(),
        "adaptive_ece": F64,
        "populated_bins": pl.UInt32(),
    },
    built_by="estimators.adaptive_ece",
)
"""One row per group."""

ECE_BY_BIN_COUNT = Table(
    "ECE-by-bin-count table",
    {"bins": pl.UInt32(), "ece": F64},
    built_by="estimators.ece_by_bin_count",
)
"""One row per (group, number of bins)."""

SELECTIVE_METRICS = Table(
    "selective-metrics table",
    {
        "count": pl.UInt64(),
        "weight": F64,
        "accuracy": F64,
        "aurc": F64,
        "aurc_oracle": F64,
        "e_aurc": F64,
        "accuracy_at_coverage": F64,
        "coverage_at_accuracy": F64,
    },
    built_by="estimators.selective_metrics",
)
"""One row per group."""

SELECTIVE_CURVE = Table(
    "risk-coverage curve",
    {"threshold": F64, "coverage": F64, "accuracy": F64, "risk": F64},
    built_by="estimators.selective_curve",
)
"""One row per (group, threshold)."""

# --- multi-class, recalibration, ranking ---------------------------------------------

MULTICLASS_CALIBRATION = Table(
    "multi-class calibration table",
    {
        "items": pl.UInt64(),
        "classes": pl.UInt32(),
        "accuracy": F64,
        "top_label_ece": F64,
        "classwise_ece": F64,
        "classwise_ece_weighted": F64,
        "pooled_ece": F64,
        "brier": F64,
        "log_loss": F64,
    },
    built_by="multiclass.multiclass_calibration",
)
"""One row per group."""

_FIT = {"fitted_on": pl.String(), "in_sample": pl.Boolean(), "fit_fingerprint": pl.UInt64()}

TEMPERATURE = Table(
    "temperature-parameters table",
    {
        "temperature": F64,
        "nll_before": F64,
        "nll_after": F64,
        "count": pl.UInt64(),
        "iterations": pl.UInt32(),
        "converged": pl.Boolean(),
        "at_bound": pl.Boolean(),
        "clipped": pl.UInt64(),
        **_FIT,
    },
    built_by="recalibrate.fit_temperature",
)
"""One row per group: T, the mean NLL at T = 1 and at T, rows (questions), diagnostics."""

PLATT = Table(
    "Platt-parameters table",
    {
        "slope": F64,
        "intercept": F64,
        "nll_before": F64,
        "nll_after": F64,
        "count": pl.UInt64(),
        "iterations": pl.UInt32(),
        "converged": pl.Boolean(),
        "clipped": pl.UInt64(),
        **_FIT,
    },
    built_by="recalibrate.fit_platt",
)
"""One row per group: a (slope), b (intercept), mean NLL before/after, diagnostics."""

HISTOGRAM = Table(
    "histogram-binning table",
    {
        "bin": pl.UInt32(),
        "bin_lower": F64,
        "bin_upper": F64,
        "closed": pl.String(),
        "count": pl.UInt64(),
        "weight": F64,
        "value": F64,
        **_FIT,
    },
    built_by="recalibrate.fit_histogram",
    optional=("fit_fingerprint",),
)
"""One row per (group, bin): edges, fit rows, fit weight and the recalibrated value."""

ISOTONIC = Table(
    "isotonic-recalibration table",
    {**ISOTONIC_BLOCKS.columns, **_FIT},
    built_by="recalibrate.fit_isotonic",
    optional=("count", "weight", "fitted_on", "fit_fingerprint"),
)
"""One row per (group, block): the block's confidence range, rows, weight and value."""

HELM_CALIBRATION = Table(
    "HELM calibration table",
    {
        "count": pl.UInt64(),
        "ece_10_bin": F64,
        "ece_1_bin": F64,
        "selective_cov_acc_area": F64,
        "selective_acc@10": F64,
        "platt_ece_10_bin": F64,
        "platt_ece_1_bin": F64,
        "platt_coef": F64,
        "platt_intercept": F64,
        "in_sample": pl.Boolean(),
    },
    built_by="recalibrate.helm_calibration",
)
"""One row per group, HELM's stat names."""

_WHOLE_RANKING = {name: F64 for name in ("mrr", "map", "ndcg", "ndcg_exp", "r_precision")}

RANKING_PER_QUERY = Table(
    "ranking per-query table",
    {"relevant": pl.UInt32(), "retrieved": pl.UInt32(), **_WHOLE_RANKING},
    built_by="ranking.ranking_metrics_per_query",
)
"""One row per (keys…, query) evaluated; the ``<metric>@<k>`` columns follow.

The keys are the ``by=`` columns *and* the query column (everything before
``relevant``); ``relevant`` is R, ``retrieved`` the number of run rows of the query.
"""

RANKING_METRICS = Table(
    "ranking-metrics table",
    {
        "queries": pl.UInt32(),
        "queries_missing": pl.UInt32(),
        "queries_no_relevant": pl.UInt32(),
        "queries_unjudged": pl.UInt32(),
        "tie_policy": pl.String(),
        "no_relevant_policy": pl.String(),
        "missing_policy": pl.String(),
        **_WHOLE_RANKING,
    },
    built_by="ranking.ranking_metrics",
)
"""One row per group; the ``<metric>@<k>`` columns follow.

``queries`` is the number of queries in the means; ``queries_missing`` the judged queries
the group's run lacks (in the means as 0 under ``missing="zero"``), ``queries_no_relevant``
the judged queries without a relevant item (in the means as 0 under
``no_relevant="zero"``), ``queries_unjudged`` the run's queries absent from the qrels.
"""

PAIRED_SIGNIFICANCE = Table(
    "paired-significance table",
    {
        "metric": pl.String(),
        "model_a": pl.String(),
        "model_b": pl.String(),
        "queries": pl.UInt32(),
        "mean_a": F64,
        "mean_b": F64,
        "difference": F64,
        "p_value": F64,
        "p_holm": F64,
        "p_bh": F64,
        "method": pl.String(),
        "replicates": pl.UInt64(),
    },
    built_by="ranking.paired_significance",
)
"""One row per (keys…, metric, model pair); ``replicates`` is 2^n when exact."""
