r"""Calibration metrics per group: closed-form reductions of the bin-statistics table.

Notation, for one group with bins b = 1 … M (rows i, weights w_i, confidence p_i,
outcome y_i ∈ {0, 1}):

* W_b = Σ_{i∈b} w_i,  N = Σ_b W_b = Σ_i w_i (the total weight; without weights every
  w_i = 1 and N is the row count),  p̄_b = Σ w_i p_i / W_b (mean confidence),
  ȳ_b = Σ w_i y_i / W_b (accuracy),  ȳ = Σ_b W_b ȳ_b / N

==========================  ===========================================================
column                      formula
==========================  ===========================================================
``count``, ``weight``       number of rows, N
``accuracy``                ȳ
``mean_confidence``         Σ_b W_b p̄_b / N
``overconfidence``          mean_confidence − accuracy (> 0: overconfident)
``ece``                     Σ_b (W_b/N)·|p̄_b − ȳ_b|                       (L1)
``rmsce``                   √( Σ_b (W_b/N)·(p̄_b − ȳ_b)² )                 (L2)
``mce``                     max over populated bins |p̄_b − ȳ_b|            (L∞, every bin)
``mce_guarded``             max over bins with W_b ≥ m of |p̄_b − ȳ_b|      (L∞, m below)
``populated_bins``          number of bins with W_b > 0
``brier``                   (1/N)·Σ_i w_i (p_i − y_i)²
``reliability``             (1/N)·Σ_b W_b (p̄_b − ȳ_b)²   (= rmsce²)
``resolution``              (1/N)·Σ_b W_b (ȳ_b − ȳ)²
``uncertainty``             ȳ (1 − ȳ)
``within_bin_variance``     (1/N)·Σ_b Σ_{i∈b} w_i (p_i − p̄_b)²
``within_bin_covariance``   −(2/N)·Σ_b Σ_{i∈b} w_i (p_i − p̄_b)(y_i − ȳ_b)
``log_loss``                (1/N)·Σ_i w_i (−y_i ln p_i − (1 − y_i) ln(1 − p_i))
``rmsce_debiased``          √max(0, Σ_{b: W_b ≥ 2} (W_b/N)·[(p̄_b − ȳ_b)² − ȳ_b(1 − ȳ_b)/(W_b − 1)])
==========================  ===========================================================

``rmsce_debiased`` is the debiased L2 calibration error of Kumar, Liang and Ma (2019,
"Verified uncertainty calibration"): the plug-in (p̄_b − ȳ_b)² overestimates the squared
gap by the variance of ȳ_b, ȳ_b(1 − ȳ_b)/(n_b − 1) unbiasedly estimated; bins with fewer
than two rows contribute 0, and a negative total is clipped to 0 before the root, as in
their ``uncertainty-calibration`` package (``get_calibration_error(..., debias=True)``;
its bins are right-closed with edges k/M: use ``Binning.uniform(M, closed="right")``
to reproduce its numbers). With weights n_b is the bin's weight W_b: a weight of k
counts as k predictions (weights are frequencies, see below).

The Brier score decomposes exactly (Murphy 1973, with the two within-bin terms of
Stephenson, Coelho and Jolliffe 2008, which binning introduces):

    brier = reliability − resolution + uncertainty + within_bin_variance + within_bin_covariance

How they are computed from the bin statistics (:mod:`calib_frames.stats`): split each bin
into its correct rows (weight W¹, S¹ = Σwp, residual sums R¹ = Σw(1 − p),
Q¹ = Σw(1 − p)²) and its wrong rows (W⁰, R⁰ = Σwp, Q⁰ = Σwp²). Then W_b p̄_b = S¹ + R⁰,
W_b(p̄_b − ȳ_b) = R⁰ − R¹, the Brier sum is Q¹ + Q⁰, and with the gap between the two
classes' mean confidences
Δ = 1 − R¹/W¹ − R⁰/W⁰:

* Σ_{i∈b} w_i (p_i − p̄_b)² = (Q¹ − (R¹)²/W¹) + (Q⁰ − (R⁰)²/W⁰) + W¹W⁰Δ²/W_b
* Σ_{i∈b} w_i (p_i − p̄_b)(y_i − ȳ_b) = W¹W⁰Δ/W_b

(a class with no weight drops out). Precision: ``brier`` and ``ece`` are sums of
residuals, so they keep full relative precision even for near-certain predictions
(10⁷ rows at p ≈ 1 − 10⁻⁶: both within 1e-15 relative of an exactly rounded reference).
The within-bin terms subtract sums of squared residuals, whose scale is the Brier score,
so each term is accurate to about 1e-13 × brier (absolute) and the terms add up to
``brier`` to about 12 significant digits.

The same formulas serve the table reduction (:func:`metrics_from_bin_statistics`, bins
are rows) and the expression API (:mod:`calib_frames.expr`, bins are per-bin sums inside
one aggregation): :func:`metric_expressions` is written once over :class:`BinSums`.

**MCE and small bins.** ``mce`` is the textbook maximum calibration error, the largest
gap over every populated bin (the seeds', netcal's and torchmetrics' ``norm="max"``). A
bin of n_b predictions estimates its accuracy with a standard error of up to
0.5/√n_b (0.35 for two predictions), so that maximum is usually the gap of the emptiest
bin, not the worst calibrated confidence level. ``mce_guarded`` takes the maximum over
the bins holding at least ``mce_min_count`` predictions (default :data:`MCE_MIN_COUNT` =
10, a standard error of at most 0.16) and is **null** when no bin has that many: the one
the report ranks. ``mce_min_count=1`` makes the two equal.

**Weights are frequencies.** A weight of k counts as k identical predictions, in the
metrics (which only divide by N) and wherever a number of predictions matters: the bins
of ``mce_guarded`` and ``rmsce_debiased`` count weight, and so do the inference of
:mod:`calib_frames.estimators` (noise floor, bootstrap, the ECE interval). Importance
weights (a reweighting to another population, normalised to any sum) give the right
point metrics, but not the right uncertainty: see "How far to trust a number" in the
README.

**No weight, no number.** A group whose weights sum to 0 (no rows, or only rows of
weight 0) has null ``accuracy``, ``mean_confidence``, ``overconfidence``, ``ece``,
``rmsce``, ``mce``, ``mce_guarded``, ``brier``, its terms, ``log_loss`` and
``rmsce_debiased``, ``populated_bins`` 0: an absent group never reads as a perfectly
calibrated one. ``log_loss`` is +inf when a prediction of confidence 1 (or 0) is wrong
(right); it is not clipped.

Examples
--------
Weights count as repeated rows (N = Σ w): a right 0.9 of weight 3 and a wrong 0.8 of
weight 1, in bins 9 and 8, give brier = (3·0.1² + 1·0.8²)/4 = 0.1675 and
ece = (3/4)·|0.9 − 1| + (1/4)·|0.8 − 0| = 0.275.

>>> import polars as pl
>>> import calib_frames as cf
>>> df = pl.DataFrame({"confidence": [0.9, 0.8], "correct": [True, False], "w": [3, 1]})
>>> cf.calibration_metrics(df, weight="w").select(pl.col("brier", "ece").round(12)).row(0)
(0.1675, 0.275)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from calib_frames.arguments import Integer, check_arguments
from calib_frames.binning import BINS, BinsLike
from calib_frames.exceptions import TableError
from calib_frames.schema import BIN_STATISTICS, METRICS
from calib_frames.stats import _bin_statistics
from calib_frames.validation import Frame, as_lazy, return_like

__all__ = [
    "MCE_MIN_COUNT",
    "BinSums",
    "calibration_metrics",
    "metric_expressions",
    "metrics_from_bin_statistics",
]

Reduce = Callable[[list[pl.Expr]], pl.Expr]

MCE_MIN_COUNT = 10
"""Default least number of predictions of a bin that ``mce`` looks at (module docstring)."""


@dataclass(frozen=True)
class BinSums:
    """The additive sums of one bin, as expressions (notation of the module docstring).

    In the table reduction each field is a column of the bin-statistics table and the
    bins are its rows; in the expression API each field is the sum over one bin's rows
    inside an aggregation, and there is one :class:`BinSums` per bin. ``G`` and ``Q`` are
    sums over both classes that the formulas read when given (one sum each instead of
    two); without them they follow from the class sums.
    """

    count: pl.Expr
    W: pl.Expr
    W1: pl.Expr
    W0: pl.Expr
    S1: pl.Expr
    R1: pl.Expr
    R0: pl.Expr
    Q1: pl.Expr
    Q0: pl.Expr
    G: pl.Expr | None = None  # Σ w·(p − y) = R0 − R1, the bin's signed gap W_b(p̄_b − ȳ_b)
    Q: pl.Expr | None = None  # Σ w·(p − y)² = Q1 + Q0, the bin's Brier sum

    def gap(self) -> pl.Expr:
        """W_b·(p̄_b − ȳ_b): ``G``, or R0 − R1."""
        return self.R0 - self.R1 if self.G is None else self.G

    def squared(self) -> pl.Expr:
        """Σ w·(p − y)² of the bin: ``Q``, or Q1 + Q0."""
        return self.Q1 + self.Q0 if self.Q is None else self.Q


TABLE_BIN = BinSums(
    count=pl.col("count"),
    W=pl.col("weight"),
    W1=pl.col("weight_correct"),
    W0=pl.col("weight_wrong"),
    S1=pl.col("sum_confidence_correct"),
    R1=pl.col("sum_residual_correct"),
    R0=pl.col("sum_residual_wrong"),
    Q1=pl.col("sum_sq_residual_correct"),
    Q0=pl.col("sum_sq_residual_wrong"),
)
"""The bin-statistics table's columns as :class:`BinSums` (bins are rows)."""


@check_arguments(mce_min_count=Integer(1))
def metric_expressions(
    bins: Sequence[BinSums],
    *,
    total: Reduce,
    largest: Reduce,
    log_loss_sum: pl.Expr,
    mce_min_count: int = MCE_MIN_COUNT,
    bin_accuracy: pl.Expr | None = None,
) -> dict[str, pl.Expr]:
    """Every per-group metric of the module docstring, as expressions.

    Parameters
    ----------
    bins
        The bins' sums: ``[TABLE_BIN]`` when the bins are the rows of a table, or one
        :class:`BinSums` per bin inside an aggregation.
    total, largest
        How to sum / take the maximum over bins of per-bin expressions (``.sum()`` /
        ``.max()`` over rows, or ``pl.sum_horizontal`` / ``pl.max_horizontal``). Both
        must skip nulls: an empty bin's terms are null.
    log_loss_sum
        Σ w·(−ln q) of the group.
    mce_min_count
        Least weight (number of predictions) of a bin that ``mce_guarded`` looks at
        (``mce`` looks at every populated bin).
    bin_accuracy
        The group's accuracy where a bin's own term needs it (resolution), default the
        aggregate itself. Bins as table rows pass a column that holds it on every row
        (a window), so that no term mixes row values with an aggregate: that mix puts
        polars' whole ``group_by`` on its slow path.

    Returns
    -------
    dict[str, pl.Expr]
        Column name → expression, in the order of :data:`calib_frames.schema.METRICS`.

    Examples
    --------
    Over the rows of a bin-statistics table (what :func:`metrics_from_bin_statistics`
    does): two predictions at 0.9, one right, and one right at 0.6 give ECE
    (2·|0.9 − 0.5| + |0.6 − 1|)/3 = 0.4 and Brier (0.1² + 0.9² + 0.4²)/3 = 0.98/3.

    >>> import polars as pl
    >>> import calib_frames as cf
    >>> preds = pl.DataFrame({"confidence": [0.9, 0.9, 0.6], "correct": [True, False, True]})
    >>> expressions = metric_expressions(
    ...     [TABLE_BIN],
    ...     total=lambda terms: terms[0].sum(),
    ...     largest=lambda terms: terms[0].max(),
    ...     log_loss_sum=pl.col("sum_log_loss").sum(),
    ... )
    >>> table = cf.bin_statistics(preds).select(expressions["ece"], expressions["brier"])
    >>> table.select(pl.all().round(6)).rows()
    [(0.4, 0.326667)]
    """

    def over_bins(term: Callable[[BinSums], pl.Expr]) -> pl.Expr:
        return total([term(b) for b in bins])

    def where_populated(term: Callable[[BinSums], pl.Expr]) -> Callable[[BinSums], pl.Expr]:
        return lambda b: pl.when(b.W > 0).then(term(b))

    n = over_bins(lambda b: b.W)
    accuracy = over_bins(lambda b: b.W1) / n

    def per_n(term: pl.Expr) -> pl.Expr:
        """Term / N, null for a group without weight (module docstring)."""
        return pl.when(n > 0).then(term / n)

    def gap(b: BinSums) -> pl.Expr:  # W_b·(p̄_b − ȳ_b)
        return b.gap()

    def within_class(q: pl.Expr, r: pl.Expr, w: pl.Expr) -> pl.Expr:
        """Σ w (x − x̄)² of one outcome class of a bin from its residual sums."""
        return pl.when(w > 0).then(q - r * (r / w)).otherwise(0.0)

    def class_gap(b: BinSums) -> pl.Expr:
        """Δ = mean confidence of the correct rows − that of the wrong rows."""
        both = (b.W1 > 0) & (b.W0 > 0)
        return pl.when(both).then(1.0 - b.R1 / b.W1 - b.R0 / b.W0).otherwise(0.0)

    # Products are formed as sum × ratio (never sum × sum), so that weights near the
    # float64 maximum cannot overflow an intermediate term.
    def between(b: BinSums) -> pl.Expr:
        return b.W1 * (b.W0 / b.W)

    squared_gap = over_bins(where_populated(lambda b: gap(b) * (gap(b) / b.W)))
    variance = over_bins(
        where_populated(
            lambda b: (
                within_class(b.Q1, b.R1, b.W1)
                + within_class(b.Q0, b.R0, b.W0)
                + between(b) * class_gap(b) * class_gap(b)
            )
        )
    )
    covariance = over_bins(where_populated(lambda b: between(b) * class_gap(b)))
    mean_y = accuracy if bin_accuracy is None else bin_accuracy
    resolution = over_bins(where_populated(lambda b: b.W * (b.W1 / b.W - mean_y) ** 2))

    def bin_gap(b: BinSums) -> pl.Expr:  # |p̄_b − ȳ_b|, null in an empty bin
        return where_populated(lambda b: (gap(b) / b.W).abs())(b)

    def debiased(b: BinSums) -> pl.Expr:
        y = b.W1 / b.W
        noise = y * (1.0 - y) / (b.W - 1.0)
        return pl.when(b.W >= 2).then(gap(b) * (gap(b) / b.W) - b.W * noise)

    return {
        "count": total([b.count for b in bins]).cast(pl.UInt64),
        "weight": n,
        "accuracy": per_n(over_bins(lambda b: b.W1)),
        "mean_confidence": per_n(over_bins(lambda b: b.S1 + b.R0)),
        "overconfidence": per_n(over_bins(gap)),
        "ece": per_n(over_bins(lambda b: gap(b).abs())),
        "rmsce": per_n(squared_gap).sqrt(),
        "mce": largest([bin_gap(b) for b in bins]),
        "mce_guarded": largest([pl.when(mce_min_count <= b.W).then(bin_gap(b)) for b in bins]),
        "populated_bins": total([(b.W > 0).cast(pl.UInt32) for b in bins]).cast(pl.UInt32),
        "brier": per_n(over_bins(lambda b: b.squared())),
        "reliability": per_n(squared_gap),
        "resolution": per_n(resolution),
        "uncertainty": (accuracy * (1 - accuracy)).fill_nan(None),  # 0/0 = NaN when N = 0
        "within_bin_variance": per_n(variance),
        "within_bin_covariance": per_n(-2 * covariance),
        "log_loss": per_n(log_loss_sum),
        "rmsce_debiased": per_n(over_bins(debiased)).clip(lower_bound=0.0).sqrt(),
    }


_GROUP_ACCURACY = "__group_accuracy"
"""The group's accuracy on each bin row of a table (a window column of the query)."""


def _table_metrics(mce_min_count: int) -> dict[str, pl.Expr]:
    return metric_expressions(
        [TABLE_BIN],
        total=lambda terms: terms[0].sum(),
        largest=lambda terms: terms[0].max(),
        log_loss_sum=pl.col("sum_log_loss").sum(),
        mce_min_count=mce_min_count,
        bin_accuracy=pl.col(_GROUP_ACCURACY),
    )


@check_arguments(mce_min_count=Integer(1))
def metrics_from_bin_statistics(stats: Frame, *, mce_min_count: int = MCE_MIN_COUNT) -> Frame:
    """Per-group calibration metrics from a bin-statistics table (see module docstring).

    Parameters
    ----------
    stats
        A bin-statistics table (:func:`~calib_frames.bin_statistics`,
        :func:`~calib_frames.merge_bin_statistics`). Its group keys are the columns
        before ``bin``; columns appended after the table's own are ignored.
    mce_min_count
        Least number of predictions (weight) of a bin that ``mce_guarded`` looks at
        (default 10; ``mce`` looks at every populated bin); an integer >= 1.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        One row per group (one row in all when there are no keys), sorted by the keys:
        keys…, then the columns of :data:`calib_frames.schema.METRICS`.

    Raises
    ------
    TableError
        ``stats`` is not a bin-statistics table, or a key is named like a metric.
    ArgumentError
        ``mce_min_count`` is not an integer >= 1.

    See Also
    --------
    calibration_metrics : rows → metrics in one call.
    merge_bin_statistics : roll the table up to fewer keys first (``by=``).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.95] * 10, "correct": [True] * 6 + [False] * 4})
    >>> m = cf.metrics_from_bin_statistics(cf.bin_statistics(df))
    >>> round(m["ece"].item(), 12), round(m["brier"].item(), 12)
    (0.35, 0.3625)
    """
    lazy = as_lazy(stats)
    keys = BIN_STATISTICS.keys(lazy.collect_schema())
    clashes = [key for key in keys if key in METRICS.columns]
    if clashes:
        raise TableError(
            f"group key(s) {clashes} clash with metric columns of the same name; "
            "rename them first, e.g. frame.rename({'count': 'count_key'})"
        )
    formulas = _table_metrics(mce_min_count)
    exprs = [expr.alias(name) for name, expr in formulas.items()]
    accuracy = formulas["accuracy"]  # an aggregate only: as a window, every bin row has it
    if keys:
        lazy = lazy.with_columns(accuracy.over(keys).alias(_GROUP_ACCURACY))
        result = lazy.group_by(keys).agg(exprs).sort(keys, nulls_last=True)
    else:
        result = lazy.with_columns(accuracy.alias(_GROUP_ACCURACY)).select(exprs)
    return return_like(stats, result)


@check_arguments(bins=BINS, mce_min_count=Integer(1))
def calibration_metrics(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    log_confidence: str | None = None,
    mce_min_count: int = MCE_MIN_COUNT,
) -> Frame:
    """Accuracy, ECE, RMSCE, MCE, Brier score with its decomposition and log loss per group.

    ``metrics_from_bin_statistics(bin_statistics(...))`` in one call. Formulas and
    conventions: see :mod:`calib_frames.metrics.calibration`.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame with one row per prediction.
    confidence
        Column of probabilities in [0, 1].
    correct
        Column of outcomes: boolean, or numbers 0/1.
    by
        Group key column(s); ``None`` treats the whole frame as one group.
    bins
        ``int`` (equal-width, default 10), a sequence of edges, or a
        :class:`~calib_frames.Binning`.
    weight
        Optional column of row weights.
    log_confidence
        Optional column of ln(confidence), used for the log loss (see
        :func:`~calib_frames.bin_statistics`).
    mce_min_count
        Least number of predictions of a bin that ``mce_guarded`` looks at (default 10;
        see :func:`metrics_from_bin_statistics`).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        keys…, then the columns of :data:`calib_frames.schema.METRICS`, one row per group.

    Raises
    ------
    TableError, ArgumentError, DataError
        As :func:`~calib_frames.bin_statistics`.

    See Also
    --------
    bin_statistics : the additive table the metrics are reduced from.
    calib_frames.binned_metrics : the same numbers as one expression in ``group_by().agg``.
    sklearn.metrics.brier_score_loss : the same Brier score for one group.

    Examples
    --------
    Ten predictions at confidence 0.95 with six correct (10 bins):

    >>> import polars as pl
    >>> import calib_frames as cf
    >>> df = pl.DataFrame({"confidence": [0.95] * 10, "correct": [True] * 6 + [False] * 4})
    >>> m = cf.calibration_metrics(df)
    >>> m.select("count", "accuracy", "ece", "mce", "populated_bins").rows()
    [(10, 0.6, 0.35, 0.35, 1)]

    Two predictions in a bin of their own make the textbook ``mce``, not ``mce_guarded``:

    >>> two = pl.DataFrame({"confidence": [0.15, 0.15], "correct": [True, True]})
    >>> m = cf.calibration_metrics(pl.concat([df, two]))
    >>> m.select(pl.col("mce").round(12), "mce_guarded").rows()
    [(0.85, 0.35)]

    A group whose weights sum to 0 has no metrics (null), not a perfect score:

    >>> zero = df.with_columns(w=pl.lit(0.0))
    >>> cf.calibration_metrics(zero, weight="w").select("count", "ece", "brier").rows()
    [(10, None, None)]

    Weights divide by their sum N: with weights 3 and 1 the Brier score is
    (3·0.1² + 1·0.8²) / 4 = 0.1675.

    >>> w = pl.DataFrame({"confidence": [0.9, 0.8], "correct": [True, False], "w": [3, 1]})
    >>> round(cf.calibration_metrics(w, weight="w")["brier"].item(), 12)
    0.1675
    """
    stats = _bin_statistics(
        as_lazy(predictions),
        confidence=confidence,
        correct=correct,
        by=by,
        bins=bins,
        weight=weight,
        log_confidence=log_confidence,
        empty_bins=False,
    )
    return return_like(predictions, metrics_from_bin_statistics(stats, mce_min_count=mce_min_count))
