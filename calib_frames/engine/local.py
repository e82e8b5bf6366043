"""The row pass on polars: element-wise row work, then one ``group_by(...).agg(sums)``.

Everything here is streaming-friendly and GPU-translatable: per row only casts,
comparisons, ``when/then`` and one log; per cell only sums (conditional sums are written
as ``when/then`` inside the sum, never as ``filter(...).sum()``). Equal-mass bins are the
exception: their ranks need every row of a group (a window), which the docstring of
:meth:`~calib_frames.Binning.quantile` says.

The schema checks (missing columns, dtypes, clashing names) run when the pass is built
(:meth:`PredictionPass.build`, :meth:`TokenPass.build`); the row checks are counted by
the pass itself (:meth:`PredictionPass.row_checks`) and raised after it by
:func:`calib_frames.validation.raise_on_bad_rows`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

import polars as pl

from calib_frames.arguments import TOKENS
from calib_frames.binning import Binning, BinsLike, as_binning
from calib_frames.exceptions import TableError
from calib_frames.schema import BIN_STATISTICS, CELLS, METRICS, PERPLEXITY
from calib_frames.validation import (
    RowCheck,
    check_tokens_named,
    count_bad_rows,
    group_keys,
    integral_check,
    not_true,
    prediction_checks,
    require_columns,
)

__all__ = [
    "PredictionPass",
    "TokenPass",
    "log_outcome_probability",
    "prediction_cells",
    "token_sums",
    "weighted",
]

# Row-level working columns of the pass (dropped by the aggregation).
_CODE = "__calib_code"
_Q, _R = "__calib_q", "__calib_r"
SMALLEST_NORMAL = sys.float_info.min  # the smallest normal float64
LARGEST_COUNT = 2**53
"""Largest token/byte/word count accepted per row (every whole number up to it is exact
in float64; real counts are many orders of magnitude below)."""
_INT64_MAX = float(2**63 - 1)


def log_outcome_probability(q: pl.Expr, r: pl.Expr) -> pl.Expr:
    """Ln q to full precision with one log per row, from q and the residual r = 1 − q.

    q = 1 − p of a wrong row with tiny p is rounded; its rounding error (1 − q) − r is
    exact (0 for correct rows) and is added to ln q as a first-order correction.
    """
    return q.log() + ((1.0 - q) - r)


def weighted(term: pl.Expr, weight: pl.Expr | None) -> pl.Expr:
    """w·term, with 0 for a weight-0 row even where the term is infinite (0·inf is NaN)."""
    return term if weight is None else pl.when(weight > 0).then(weight * term).otherwise(0.0)


@dataclass(frozen=True)
class PredictionPass:
    """The columns and binning of one pass over prediction rows.

    Build it with :meth:`build`, which checks the frame's schema; then
    :func:`prediction_cells` runs the pass and :meth:`row_checks` says how its output
    counts the rows that break the contract.
    """

    confidence: str
    correct: str
    keys: tuple[str, ...]
    binning: Binning
    weight: str | None = None
    log_confidence: str | None = None
    correct_is_boolean: bool = True

    @classmethod
    def build(
        cls,
        schema: pl.Schema,
        *,
        confidence: str,
        correct: str,
        by: str | Sequence[str] | None,
        bins: BinsLike,
        weight: str | None = None,
        log_confidence: str | None = None,
    ) -> PredictionPass:
        """Check ``schema`` for the given roles and return the pass.

        Raises
        ------
        TableError
            A column is missing, not numeric, a Boolean confidence (almost always a
            swapped column), or a group key clashes with an output column.
        ArgumentError
            ``by=`` or ``bins=`` is malformed.
        """
        keys = group_keys(by)
        binning = as_binning(bins)
        roles = {
            "confidence": confidence,
            "correct": correct,
            "weight": weight,
            "log_confidence": log_confidence,
        }
        columns = {role: name for role, name in roles.items() if name is not None}
        require_columns(
            schema,
            columns,
            numeric=list(columns),
            reserved=(*BIN_STATISTICS.names, *CELLS.names, *METRICS.names),
            keys=keys,
        )
        for role in ("confidence", "weight", "log_confidence"):
            name = columns.get(role)
            if name is not None and schema[name] == pl.Boolean:
                raise TableError(
                    f"column {name!r} ({role}) is Boolean; a {role} must be a number "
                    "(were the confidence and correct columns swapped?)"
                )
        return cls(
            confidence,
            correct,
            tuple(keys),
            binning,
            weight,
            log_confidence,
            schema[correct] == pl.Boolean,
        )

    # -- row-level expressions ------------------------------------------------------------

    @property
    def p(self) -> pl.Expr:
        """The confidence as Float64."""
        return pl.col(self.confidence).cast(pl.Float64)

    def outcome(self) -> pl.Expr:
        """True/False for a correct/wrong row; null for anything not boolean or 0/1."""
        correct = pl.col(self.correct)
        if self.correct_is_boolean:
            return correct
        y = correct.cast(pl.Float64)
        return pl.when(y == 1.0).then(True).when(y == 0.0).then(False)

    def bin_key(self) -> pl.Expr:
        """The bin index; M (one past the last bin) where the confidence is not in range."""
        low, high = self.binning.range
        inside = self.binning.assign(self.p, keys=self.keys)
        return pl.when(self.p.is_between(low, high)).then(inside).otherwise(self.binning.n_bins)

    def log_outcome_probability(self, q: pl.Expr, r: pl.Expr, correct: pl.Expr) -> pl.Expr:
        """Ln q per row, to full precision.

        Without a log-confidence column: :func:`log_outcome_probability`. With a
        log-confidence column ℓ = ln p: ln q = ℓ for a correct row and
        ln(1 − e^ℓ) = ln(−expm1(ℓ)) for a wrong one, with expm1(ℓ) = 2t/(1 − t),
        t = tanh(ℓ/2), exact even where p rounds to 1.0.
        """
        if self.log_confidence is None:
            return log_outcome_probability(q, r)
        ell = pl.col(self.log_confidence).cast(pl.Float64)
        t = (ell / 2.0).tanh()
        return pl.when(correct).then(ell).otherwise((-2.0 * t / (1.0 - t)).log())

    # -- the checks the pass counts -------------------------------------------------------

    def row_checks(self) -> list[RowCheck]:
        """The row contracts, each counted from the cell table (:data:`CELLS`)."""
        low, high = self.binning.range
        count = pl.col("count")

        def cells_where(condition: pl.Expr) -> pl.Expr:
            return pl.when(condition).then(count).otherwise(0).sum()

        in_range, outcome = prediction_checks(
            confidence=self.confidence, correct=self.correct, weight=None, low=low, high=high
        )
        checks = [
            replace(in_range, count=cells_where(pl.col("bin").is_null())),
            replace(outcome, count=cells_where(pl.col("correct").is_null())),
        ]
        if self.weight is not None:
            w = pl.col(self.weight).cast(pl.Float64)
            total = pl.col("weight").sum()
            group_total = total.over(list(self.keys)) if self.keys else total
            checks += [
                RowCheck(
                    self.weight,
                    "not a finite weight >= 0 (or subnormal, below 2.2e-308, which loses "
                    "precision: rescale the weights)",
                    bad=self._bad_weight(),
                    count=pl.col("invalid_weight").sum(),
                ),
                RowCheck(
                    self.weight,
                    "in a group whose weights sum past the float64 range (rescale the weights)",
                    bad=w.is_infinite(),
                    count=cells_where(
                        group_total.is_infinite() & (pl.col("invalid_weight").sum() == 0)
                    ),
                    with_example=False,
                ),
            ]
        if self.log_confidence is not None:
            checks.append(
                RowCheck(
                    self.log_confidence,
                    "not the natural log of the confidence (must be <= 0 and "
                    "exp(log_confidence) equal to the confidence within 1e-9)",
                    bad=self._bad_log_confidence(),
                    count=pl.col("invalid_log_confidence").sum(),
                )
            )
        return checks

    def _bad_weight(self) -> pl.Expr:
        assert self.weight is not None
        w = pl.col(self.weight).cast(pl.Float64)
        ok = w.is_finite() & ((w == 0) | (w >= SMALLEST_NORMAL))
        return not_true(ok)

    def _bad_log_confidence(self) -> pl.Expr:
        assert self.log_confidence is not None
        ell = pl.col(self.log_confidence).cast(pl.Float64)
        ok = (ell <= 0) & ((ell.exp() - self.p).abs() <= 1e-9)
        return not_true(ok)


def prediction_cells(source: pl.LazyFrame, spec: PredictionPass) -> pl.LazyFrame:
    """Run the row pass: rows → the cell table (:data:`calib_frames.schema.CELLS`).

    One ``group_by`` of (keys…, bin and outcome as one small integer key) with per cell:
    rows, Σw, Σw·q, Σw·r, Σw·r², Σw·ln q (q = the probability given to the outcome,
    r = |p − y|), and the counts of rows with an invalid weight or log-confidence. Rows
    with an invalid confidence or outcome get a null bin or outcome, so they form cells
    of their own and are counted at no extra cost. Nothing is raised here: pair it with
    :meth:`PredictionPass.row_checks`.

    Parameters
    ----------
    source
        The prediction rows.
    spec
        Columns and binning, from :meth:`PredictionPass.build`.

    Returns
    -------
    LazyFrame
        keys…, ``bin``, ``correct``, ``count``, ``weight``, ``sum_outcome_probability``,
        ``sum_residual``, ``sum_sq_residual``, ``sum_log_outcome_probability``
        [, ``invalid_weight``] [, ``invalid_log_confidence``] [, ``bin_lower``,
        ``bin_upper`` for equal-mass bins].

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.engine import PredictionPass, prediction_cells
    >>> rows = pl.LazyFrame({"confidence": [0.2, 0.9, 0.95], "correct": [False, True, False]})
    >>> spec = PredictionPass.build(
    ...     rows.collect_schema(), confidence="confidence", correct="correct", by=None, bins=10
    ... )
    >>> cells = prediction_cells(rows, spec).sort("bin", "correct").collect()
    >>> cells.select("bin", "correct", "count").rows()
    [(2, False, 1), (9, False, 1), (9, True, 1)]
    """
    p = spec.p
    outcome = spec.outcome()
    q, r = pl.col(_Q), pl.col(_R)
    w = None if spec.weight is None else pl.col(spec.weight).cast(pl.Float64)

    sums = [
        pl.len().cast(pl.UInt64).alias("count"),
        (pl.len().cast(pl.Float64) if w is None else w.sum()).alias("weight"),
        weighted(q, w).sum().alias("sum_outcome_probability"),
        weighted(r, w).sum().alias("sum_residual"),
        weighted(r * r, w).sum().alias("sum_sq_residual"),
        weighted(spec.log_outcome_probability(q, r, outcome), w)
        .sum()
        .alias("sum_log_outcome_probability"),
    ]
    if spec.weight is not None:
        sums.append(spec._bad_weight().sum().cast(pl.UInt64).alias("invalid_weight"))
    if spec.log_confidence is not None:
        sums.append(
            spec._bad_log_confidence().sum().cast(pl.UInt64).alias("invalid_log_confidence")
        )
    if not spec.binning.additive:
        sums += [p.min().alias("bin_lower"), p.max().alias("bin_upper")]
    # q and r are row columns: polars does not share subexpressions inside an agg. The bin
    # and the outcome travel as one small integer key (one key fewer to hash per row):
    # code = 3·bin + outcome, with bin M for an invalid confidence and outcome 2 for an
    # invalid one; the cell table's nullable bin and correct are decoded from it.
    m = spec.binning.n_bins
    code, small = pl.col(_CODE), _code_type(m)
    return (
        source.with_columns(
            (spec.bin_key().cast(small) * 3 + outcome.cast(small).fill_null(2)).alias(_CODE),
            pl.when(outcome).then(p).otherwise(1.0 - p).alias(_Q),
            pl.when(outcome).then(1.0 - p).otherwise(p).alias(_R),
        )
        .group_by(*spec.keys, _CODE)
        .agg(sums)
        .select(
            *spec.keys,
            pl.when(code < 3 * m).then(code // 3).cast(pl.UInt32).alias("bin"),
            pl.when(code % 3 < 2).then(code % 3 == 1).alias("correct"),
            pl.exclude(*spec.keys, _CODE),
        )
    )


def _code_type(bins: int) -> pl.DataType:
    """The smallest unsigned integer type that holds 3·(bins + 1) codes."""
    for dtype, largest in ((pl.UInt8(), 2**8), (pl.UInt16(), 2**16)):
        if 3 * (bins + 1) <= largest:
            return dtype
    return pl.UInt32()


@dataclass(frozen=True)
class TokenPass:
    """The columns of one pass over token-level or sequence-level NLL rows.

    ``tokens=None`` means one token per row (token-level rows).
    """

    nll: str
    keys: tuple[str, ...]
    tokens: str | None = None
    bytes: str | None = None
    words: str | None = None
    log_probs: bool = False

    @classmethod
    def build(
        cls,
        schema: pl.Schema,
        *,
        nll: str,
        tokens: str | int | None,
        bytes: str | None,
        words: str | None,
        by: str | Sequence[str] | None,
        log_probs: bool,
    ) -> TokenPass:
        """Check ``schema`` and return the pass.

        ``tokens`` is a column of token counts (sequence-level rows) or ``1`` (each row is
        one token). ``None`` is accepted only when the frame has no column named
        ``tokens``: with such a column the caller must say which is meant, because
        treating documents as single tokens gives an absurd perplexity.

        Raises
        ------
        TableError
            A column is missing or not numeric, or a key clashes with an output column.
        ArgumentError
            ``tokens`` is ambiguous or not a column name or 1.
        """
        TOKENS.check(tokens, "tokens")
        keys = group_keys(by)
        check_tokens_named(schema, tokens, keys)
        count_column = tokens if isinstance(tokens, str) else None
        roles = {"nll": nll, "tokens": count_column, "bytes": bytes, "words": words}
        columns = {role: name for role, name in roles.items() if name is not None}
        require_columns(
            schema,
            columns,
            numeric=list(columns),
            reserved=(*PERPLEXITY.names, "nll_count"),
            keys=keys,
        )
        return cls(nll, tuple(keys), count_column, bytes, words, log_probs)

    def count_columns(self) -> list[tuple[str, str]]:
        """(output column, input column) of the count columns given."""
        named = (("tokens", self.tokens), ("bytes", self.bytes), ("words", self.words))
        return [(role, name) for role, name in named if name is not None]

    def row_checks(self) -> list[RowCheck]:
        """The row contracts, counted by :func:`token_sums` (columns ``__cf_bad_*``)."""
        value = pl.col(self.nll).cast(pl.Float64)
        if self.log_probs:
            nll_check = RowCheck(
                self.nll,
                "not a log-probability (finite and <= 0; log_probs=True was given)",
                not_true(value.is_finite() & (value <= 0)),
            )
        else:
            nll_check = RowCheck(
                self.nll,
                "not a finite NLL >= 0 in nats (a negative NLL usually means the adapter "
                "returned log p instead of -log p; pass log_probs=True if the column "
                "holds log p)",
                not_true(value.is_finite() & (value >= 0)),
            )
        checks = [nll_check]
        for role, name in self.count_columns():
            minimum = 1 if role == "tokens" else 0
            checks.append(
                integral_check(
                    name,
                    minimum=minimum,
                    maximum=LARGEST_COUNT,
                    problem=f"not a whole number in [{minimum}, 2^53]",
                )
            )
        for role, name in self.count_columns():
            checks.append(
                RowCheck(
                    name,
                    f"in a group whose {role} sum past the Int64 range",
                    bad=pl.lit(False),
                    count=pl.when(pl.col(f"__calib_float_{role}") > _INT64_MAX)
                    .then(pl.col("count"))
                    .otherwise(0)
                    .sum(),
                    with_example=False,
                )
            )
        return checks


def token_sums(source: pl.LazyFrame, spec: TokenPass, checks: Sequence[RowCheck]) -> pl.LazyFrame:
    """Run the row pass over NLL rows: one row per group with the additive sums.

    Output: keys…, ``count``, ``nll_sum``, ``tokens`` [, ``bytes``, ``words``] (Int64), and
    working columns ``__cf_bad_<i>`` (the checks counted in the pass) and
    ``__calib_float_<role>`` (Float64 sums that reveal an Int64 overflow), which
    :func:`calib_frames.validation.raise_on_bad_rows` and the caller drop.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.engine import TokenPass, token_sums
    >>> rows = pl.LazyFrame({"nll": [1.0, 2.5]})
    >>> spec = TokenPass.build(
    ...     rows.collect_schema(), nll="nll", tokens=None, bytes=None, words=None,
    ...     by=None, log_probs=False,
    ... )
    >>> sums = token_sums(rows, spec, spec.row_checks()).collect()
    >>> sums.select("count", "nll_sum", "tokens").rows()
    [(2, 3.5, 2)]
    """
    value = pl.col(spec.nll).cast(pl.Float64)
    aggs = [
        pl.len().cast(pl.UInt64).alias("count"),
        (-value if spec.log_probs else value).sum().alias("nll_sum"),
    ]
    if spec.tokens is None:
        aggs.append(pl.len().cast(pl.Int64).alias("tokens"))
    for role, name in spec.count_columns():
        number = pl.col(name).cast(pl.Float64)
        valid = pl.when(number.is_finite() & (number.abs() <= LARGEST_COUNT)).then(number)
        aggs += [
            valid.cast(pl.Int64).sum().alias(role),
            valid.sum().alias(f"__calib_float_{role}"),
        ]
    aggs += count_bad_rows(checks)
    keys = list(spec.keys)
    return source.group_by(keys).agg(aggs) if keys else source.select(aggs)
