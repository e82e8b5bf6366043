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

The tables of :mod:`calib_frames.sources` and the lm-eval comparison:

========================  ===============  ================================================
table                     first column     built by
========================  ===============  ================================================
``CHOICE_PREDICTIONS``    ``scoring``      :func:`~calib_frames.sources.choice_predictions`
``OPTION_PROBABILITIES``  ``scoring``      :func:`~calib_frames.sources.option_probabilities`
``BRIER_MULTICLASS``      ``scoring``      :func:`~calib_frames.sources.brier_multiclass`
``LM_EVAL_COMPARISON``    ``output_type``  :func:`~calib_frames.comparison.lm_eval_comparison`
========================  ===============  ================================================

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
    "BIN_STATISTICS",
    "BRIER_MULTICLASS",
    "CELLS",
    "CHOICE_PREDICTIONS",
    "FORMAT_VERSION",
    "LM_EVAL_COMPARISON",
    "METRICS",
    "NLL_SUMS",
    "OPTION_PROBABILITIES",
    "PERPLEXITY",
    "RELIABILITY",
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
        "mce_raw": F64,
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
    built_by="sources.brier_multiclass",
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
