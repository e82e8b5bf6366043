"""The fit preamble of every ``fit_*``, the collection of fit rows, and the Newton solver.

Every fitter starts with :func:`fit_rows` (or :func:`binary_fit_rows`): ``by=`` through
:func:`calib_frames.validation.group_keys`, the column roles through
:func:`~calib_frames.validation.require_columns`, then the rows its fitting scheme fits on
(:func:`calib_frames.recalibrate.splits.scheme_rows`). The fitters that work in memory
then collect those rows with :func:`collect_binary` or :func:`collect_options` (numpy
arrays indexed by group), whose row checks go through
:func:`~calib_frames.validation.check_rows`; isotonic recalibration checks the same
binary rows lazily (:func:`checked_binary_rows`), histogram binning leaves them to the
bin-statistics pass.

The fitters are per group and in memory: the fit rows are collected once (no sort
unless the options of a question are scattered), every row gets a dense group index, and
every group is then iterated *together* (numpy arrays indexed by group, per-group sums by
``np.bincount`` / ``np.add.reduceat``), never by a Python loop over groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from calib_frames.arguments import COLUMN, Integer, Number, Rule
from calib_frames.recalibrate.splits import FitScheme, scheme_rows
from calib_frames.schema import Table
from calib_frames.validation import (
    RowCheck,
    as_lazy,
    check_rows,
    group_keys,
    not_true,
    require_columns,
    working,
)

__all__ = [
    "FINGERPRINT",
    "Collected",
    "FitRows",
    "P",
    "W",
    "Y",
    "binary_fit_rows",
    "checked_binary_rows",
    "collect_binary",
    "collect_options",
    "fingerprint",
    "fingerprint_hash",
    "fit_rows",
    "group_fingerprints",
    "newton_1d",
    "params_frame",
    "raise_flagged",
]

FloatArray = np.ndarray
_G = working("group")
P, Y, W = working("p"), working("y"), working("w")
_L, _GOLD = working("loglik"), working("gold")
_FLAG = working("flag")
# integer key dtypes numbered through a table over their range (int64 holds them)
_RANGED = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32)
FINGERPRINT = "fit_fingerprint"
"""The parameters tables' column that identifies the fit rows of ``fitted_on="frame"``."""
_FINGERPRINT_SEED = 0x5EED


@dataclass(frozen=True)
class FitRows:
    """The rows one ``fit_*`` call fits on, after the checks every fit shares.

    Attributes
    ----------
    rows
        The fitting scheme's rows (cross-fitting: each row once per other fold of its
        group), lazy.
    keys
        The keys of the fitted groups: ``by``, then the fold column when cross-fitting.
    scheme
        The fitting scheme (written into the parameters table).
    columns
        Role → the user's column (``{"confidence": ..., "correct": ..., "weight": ...}``).
    schema
        The input's schema.
    """

    rows: pl.LazyFrame
    keys: list[str]
    scheme: FitScheme
    columns: Mapping[str, str]
    schema: pl.Schema


def fit_rows(
    predictions: pl.DataFrame | pl.LazyFrame,
    *,
    by: str | Sequence[str] | None,
    scheme: FitScheme,
    table: Table,
    columns: Mapping[str, str],
    outcomes: Sequence[str] = (),
    numbers: Sequence[str] = (),
) -> FitRows:
    """The fit preamble: keys, column roles and the rows of the fitting scheme.

    ``outcomes`` are the roles that must be Boolean or numeric (0/1), ``numbers`` those
    that must be numeric and not Boolean; the group keys must not be named like a column
    of the parameters ``table`` (or start with the reserved prefix) nor like an input
    column. Raises ArgumentError (``by=``, a column argument that is not a name),
    TableError (missing or mistyped columns, key clashes) or DataError (the scheme's
    split or fold column).
    """
    keys = group_keys(by)
    for role, name in columns.items():
        COLUMN.check(name, role)
    source = as_lazy(predictions)
    schema = source.collect_schema()
    require_columns(
        schema,
        columns,
        numeric=outcomes,
        numbers=numbers,
        reserved=table.names,
        keys=keys,
        inputs_are_not_keys=True,
    )
    rows, fit_keys = scheme_rows(source, keys, scheme)
    return FitRows(rows, fit_keys, scheme, dict(columns), schema)


def binary_fit_rows(
    predictions: pl.DataFrame | pl.LazyFrame,
    table: Table,
    scheme: FitScheme,
    *,
    confidence: str,
    correct: str,
    by: str | Sequence[str] | None,
    weight: str | None,
) -> FitRows:
    """:func:`fit_rows` of binary predictions: confidence, correct and optional weight."""
    columns = {"confidence": confidence, "correct": correct}
    if weight is not None:
        columns["weight"] = weight
    numbers = [role for role in columns if role != "correct"]
    return fit_rows(
        predictions,
        by=by,
        scheme=scheme,
        table=table,
        columns=columns,
        outcomes=["correct"],
        numbers=numbers,
    )


def _binary_values(fit: FitRows) -> dict[str, pl.Expr]:
    """The working columns of binary fit rows: confidence ``P``, outcome ``Y``[, weight ``W``]."""
    values = {
        P: pl.col(fit.columns["confidence"]).cast(pl.Float64),
        Y: pl.col(fit.columns["correct"]).cast(pl.Float64),
    }
    if "weight" in fit.columns:
        values[W] = pl.col(fit.columns["weight"]).cast(pl.Float64)
    return values


def _binary_checks(fit: FitRows, *, positive_weights: bool) -> list[RowCheck]:
    """A confidence in [0, 1], an outcome 0/1, a finite weight ≥ 0 (> 0: ``positive_weights``)."""
    checks = [
        RowCheck(
            fit.columns["confidence"],
            "not a probability in [0, 1] (null, NaN, infinite or out of range)",
            not_true(pl.col(P).is_between(0.0, 1.0)),
            value=P,
        ),
        RowCheck(
            fit.columns["correct"],
            "not boolean or 0/1 (or null)",
            not_true((pl.col(Y) == 0.0) | (pl.col(Y) == 1.0)),
            value=Y,
        ),
    ]
    if "weight" in fit.columns:
        w = pl.col(W)
        least = w > 0.0 if positive_weights else w >= 0.0
        checks.append(
            RowCheck(
                fit.columns["weight"],
                f"not a finite weight {'>' if positive_weights else '>='} 0",
                not_true(w.is_finite() & least),
                value=W,
            )
        )
    return checks


def checked_binary_rows(fit: FitRows) -> pl.LazyFrame:
    """Keys…, ``P``, ``Y``[, ``W``] of the fit rows, checked when collected (weights > 0)."""
    rows = fit.rows.select(
        *fit.keys, *(expr.alias(name) for name, expr in _binary_values(fit).items())
    )
    return check_rows(rows, _binary_checks(fit, positive_weights=True), keys=fit.keys)


EPSILON = Number(greater_than=0, less_than=0.5)
"""``epsilon=``, the logit clipping: a number strictly between 0 and 0.5."""
TOL = Number(greater_than=0, less_than=1)
"""``tol=``, the relative tolerance of the solvers."""
MAX_ITER = Integer(1)
"""``max_iter=``, the solvers' most iterations."""
_POSITIVE = Number(greater_than=0)
BOUNDS = Rule(
    "(low, high) with 0 < low < high",
    lambda value: (
        isinstance(value, tuple | list)
        and len(value) == 2
        and all(_POSITIVE.accepts(bound) for bound in value)
        and value[0] < value[1]
    ),
    refused=((2.0, 1.0), (0.0, 1.0), 1.0),
)
"""``bounds=`` of the temperature."""


def logit_expr(p: pl.Expr, epsilon: float) -> pl.Expr:
    """``logit(clip(p, ε, 1 − ε))`` = ln p − ln(1 − p) (finite for every p in [0, 1])."""
    clipped = p.cast(pl.Float64).clip(epsilon, 1.0 - epsilon)
    return clipped.log() - (-clipped).log1p()


def sigmoid_expr(x: pl.Expr) -> pl.Expr:
    """1 / (1 + e^(−x)) (exact 0 or 1 only where the double rounds there)."""
    return 1.0 / (1.0 + (-x).exp())


@dataclass
class Collected:
    """Fit rows as numpy arrays, sorted by group; ``groups`` holds the keys of each group."""

    groups: pl.DataFrame
    group: FloatArray  # int64 group index per row
    columns: dict[str, FloatArray]
    n_groups: int


def collect_grouped(
    rows: pl.LazyFrame,
    keys: Sequence[str],
    values: Mapping[str, pl.Expr],
    *,
    runs_of: str | None = None,
    per_row: bool = True,
) -> tuple[pl.DataFrame, FloatArray, pl.DataFrame, int, FloatArray]:
    """Collect ``values`` with a dense group index (groups numbered in key order).

    No sort of the rows is needed. The rows are cut into *runs* of equal consecutive
    keys (and ``runs_of``, the question column); the first row of each run is matched to
    the small table of distinct keys, and the run's group index repeated over its rows.
    With ``runs_of``, the rows of one question must be contiguous for the per-question
    sums: they usually are (the options of a question arrive together); that no
    question has two runs is checked (question ids that increase from run to run, else a
    hash of each run's first row, sorted, then an exact check only if two hashes
    collide), and otherwise the rows are sorted by keys and question first.

    Returns the groups table (keys, one row per group in index order), the group index
    per row (``per_row=False``: per run), the collected frame (keys, [``runs_of``] and the
    ``values`` columns), the number of groups (a frame without keys is one group if it
    has rows, else none) and the row index where each run starts.
    """
    within = [*keys, *(() if runs_of is None else (runs_of,))]
    select = [*within, *(expr.alias(name) for name, expr in values.items())]
    collected = rows.select(select).collect()
    starts, heads = _runs(collected, within)
    if runs_of is not None and not _distinct_runs(heads, within):
        collected = collected.sort(within, nulls_last=True)
        starts, heads = _runs(collected, within)
    height = collected.height
    if not keys:
        n_groups = 1 if height else 0
        size = height if per_row else starts.size
        return pl.DataFrame(), np.zeros(size, dtype=np.int64), collected, n_groups, starts
    groups, run_group = _group_index(heads.select(keys))
    if not per_row:
        return groups, run_group, collected, groups.height, starts
    group = np.repeat(run_group, np.diff(np.r_[starts, height]))
    return groups, group, collected, groups.height, starts


def _runs(frame: pl.DataFrame, columns: Sequence[str]) -> tuple[FloatArray, pl.DataFrame]:
    """Start row of each run of equal consecutive ``columns`` values, and those rows.

    An integer column without nulls is compared with itself shifted, and its first rows
    taken, in numpy (read in place); any other column with polars (``ne_missing``: nulls
    equal).
    """
    if not columns or frame.height == 0:
        return np.zeros(min(frame.height, 1), dtype=np.int64), frame.select(columns).head(1)
    changed = np.zeros(frame.height - 1, dtype=bool)
    read = {}
    for column in columns:
        series = frame[column]
        if series.dtype.is_integer() and not series.null_count():
            values = read[column] = series.to_numpy()
            changed |= values[1:] != values[:-1]
        else:
            shifted = pl.col(column).ne_missing(pl.col(column).shift(1))
            changed |= frame.select(shifted).to_series().to_numpy()[1:]
    # the first row starts a run whatever its flag (a null first value is not "changed")
    starts = np.r_[0, np.flatnonzero(changed) + 1]
    heads = [
        pl.Series(c, read[c][starts], dtype=frame.schema[c]) if c in read else frame[c][starts]
        for c in columns
    ]
    return starts, pl.DataFrame(heads)


def _group_index(keys: pl.DataFrame) -> tuple[pl.DataFrame, FloatArray]:
    """The distinct rows of ``keys`` in key order (nulls last), and each row's index there.

    One integer key without nulls (and a range at most a few times the rows) is numbered
    through a table over its range; other keys by a join with their distinct rows.
    """
    if keys.width == 1:
        column = keys.to_series()
        if column.dtype in _RANGED and not column.null_count() and len(column):
            values = column.to_numpy().astype(np.int64)
            low = int(values.min())
            values -= low
            if int(values.max()) <= 4 * len(values):
                present = np.zeros(int(values.max()) + 1, dtype=bool)
                present[values] = True
                distinct = pl.Series(column.name, np.flatnonzero(present) + low)
                index: FloatArray = (np.cumsum(present) - 1)[values]
                return pl.DataFrame([distinct.cast(column.dtype)]), index
    groups = keys.unique().sort(keys.columns, nulls_last=True)
    numbered = groups.with_row_index(_G)
    joined = keys.join(
        numbered, on=keys.columns, how="left", nulls_equal=True, maintain_order="left"
    )
    return groups, joined[_G].to_numpy().astype(np.int64)


def _distinct_runs(heads: pl.DataFrame, columns: Sequence[str]) -> bool:
    """Whether no value of ``columns`` starts two runs (i.e. every value is contiguous).

    Question ids that increase from run to run are distinct (one pass); else a hash of
    each run's first row is sorted, and only two equal hashes need an exact check.
    """
    if heads.height < 2:
        return True
    last = heads[columns[-1]]
    if last.dtype.is_numeric() or last.dtype == pl.String:
        increasing = last.slice(1) > last.slice(0, heads.height - 1)
        if increasing.fill_null(False).all():
            return True
    hashed = heads.select(pl.struct(*columns).hash(seed=0).alias("h"))["h"].to_numpy()
    ordered = np.sort(hashed)
    if not (ordered[1:] == ordered[:-1]).any():
        return True
    return not heads.is_duplicated().any()  # a hash collision, or a real repeat


def collect_binary(fit: FitRows, *, epsilon: float) -> tuple[Collected, FloatArray]:
    """Collect and check binary fit rows: logit ``z``, outcome ``y``, weight ``w``, ``p``.

    Returns the collected arrays and the number of clipped rows per group.

    Raises
    ------
    DataError
        Null/NaN/out-of-range confidences, outcomes that are not boolean or 0/1,
        negative or non-finite weights, a group whose weights sum to 0.
    """
    groups, group, frame, n_groups, _ = collect_grouped(fit.rows, fit.keys, _binary_values(fit))
    frame = check_rows(frame, _binary_checks(fit, positive_weights=False), keys=fit.keys)
    p = frame[P].to_numpy().astype(np.float64)
    if W in frame.columns:
        w = frame[W].to_numpy().astype(np.float64)
        # a group whose weights are all 0 has nothing to fit: its map would be the
        # starting point of the solver (and its log-losses 0/0 = NaN)
        total = np.bincount(group, weights=w, minlength=n_groups)
        raise_flagged(
            frame,
            total[group] <= 0,
            fit.columns["weight"],
            "in a group whose weights sum to 0, so there is nothing to fit",
            keys=fit.keys,
            value=W,
        )
    else:
        w = np.ones_like(p)
    clipped_rows = (p < epsilon) | (p > 1.0 - epsilon)
    clipped = np.bincount(group, weights=clipped_rows, minlength=n_groups)
    pc = np.clip(p, epsilon, 1.0 - epsilon)
    z = np.log(pc) - np.log1p(-pc)
    y = frame[Y].to_numpy().astype(np.float64)
    collected = Collected(groups, group, {"z": z, "y": y, "w": w, "p": p}, n_groups)
    return collected, clipped


@dataclass
class Options:
    """Option fit rows collected per question (contiguous runs, in group order)."""

    groups: pl.DataFrame
    question_group: FloatArray  # int64 group index per question
    starts: FloatArray  # the first row of each question
    loglik: FloatArray
    gold_rows: FloatArray  # the row of each question's gold option
    n_groups: int
    fingerprints: FloatArray | None  # per group (``fitted_on="frame"`` only), else None


def collect_options(fit: FitRows) -> Options:
    """Collect and check option fit rows: log-likelihood and gold flag per option row.

    The rows are read out of polars once; the checks run on those arrays, and only a
    failing one goes through :func:`~calib_frames.validation.check_rows` for its message.
    With ``fitted_on="frame"`` the collected log-likelihoods are hashed for the groups'
    fingerprints (:func:`group_fingerprints`).

    Raises
    ------
    DataError
        Log-likelihoods that are not finite, gold flags that are not boolean or 0/1,
        questions without exactly one gold option.
    """
    question, loglik, is_gold = (fit.columns[r] for r in ("question", "loglik", "is_gold"))
    values = {_L: pl.col(loglik).cast(pl.Float64), _GOLD: pl.col(is_gold)}
    groups, gq, frame, n, starts = collect_grouped(
        fit.rows, fit.keys, values, runs_of=question, per_row=False
    )
    checks = [
        RowCheck(loglik, "not a finite log-likelihood", not_true(pl.col(_L).is_finite()), value=_L),
        RowCheck(
            is_gold,
            "not boolean or 0/1 (or null)",
            not_true((pl.col(_GOLD) == 0.0) | (pl.col(_GOLD) == 1.0)),
            value=_GOLD,
        ),
    ]
    ell = frame[_L].to_numpy()  # Float64 already: no copy beyond polars' own
    flags = frame[_GOLD]
    # Boolean flags without nulls are valid as they are; others are read as 0/1 numbers
    plain = flags.dtype == pl.Boolean and not flags.null_count()
    gold = flags.to_numpy() if plain else flags.cast(pl.Float64).to_numpy()
    # the checks run on the arrays (a sum is finite only if every term is, up to an
    # overflow that check_rows then clears); check_rows words the message when one
    # fails, on the flags read as numbers (a null reads as NaN, which fails both)
    worded = frame.lazy().with_columns(pl.col(_GOLD).cast(pl.Float64))
    if not (np.isfinite(ell.sum()) and (plain or np.all((gold == 0.0) | (gold == 1.0)))):
        check_rows(worded.collect(), checks, keys=fit.keys)
    gold_rows = np.flatnonzero(gold)
    if ell.size:
        # one gold option per question: as many gold rows as questions, the i-th inside
        # question i (questions are contiguous runs, in row order)
        ends = np.r_[starts[1:], ell.size]
        one_gold = gold_rows.size == starts.size and bool(
            np.all(gold_rows >= starts) and np.all(gold_rows < ends)
        )
        if not one_gold:
            sizes = np.diff(np.r_[starts, ell.size])
            bad_question = np.add.reduceat(gold.astype(np.float64), starts) != 1
            raise_flagged(
                worded.collect(),
                np.repeat(bad_question, sizes),
                question,
                "in questions without exactly one gold option",
                keys=fit.keys,
                unit="option rows",
            )
    prints = None
    if fit.scheme.fitted_on == "frame":
        # hashed here, not in the collect: an extra column there cuts every column of
        # the collected frame into chunks, and each later read of them copies
        hashes = frame.select(fingerprint_hash(pl.col(_L))).to_series().to_numpy()
        prints = group_fingerprints(hashes, starts, gq, n)
    return Options(groups, gq, starts, ell, gold_rows, n, prints)


def raise_flagged(
    frame: pl.DataFrame,
    bad: FloatArray,
    column: str,
    problem: str,
    *,
    keys: Sequence[str],
    value: str | None = None,
    show_value: bool = True,
    unit: str = "rows",
) -> None:
    """Raise a DataError for the rows of ``frame`` flagged in ``bad``, if any.

    For checks computed on collected numpy arrays (a group's total weight, a question's
    gold count, a group's classes): the flags become a working column for
    :func:`~calib_frames.validation.check_rows`, which words the message; ``frame`` may
    be a groups table without columns (no keys).
    """
    if not bad.any():
        return
    flags = pl.DataFrame({_FLAG: bad})
    flagged = pl.concat([frame, flags], how="horizontal") if frame.width else flags
    shown = value if show_value else _FLAG  # the example is read from a column of ``flagged``
    check = RowCheck(column, problem, pl.col(_FLAG), value=shown, show_value=show_value, unit=unit)
    check_rows(flagged, [check], keys=keys)


def group_sum(group: FloatArray, values: FloatArray, n_groups: int) -> FloatArray:
    """Σ values per group (float64)."""
    return np.bincount(group, weights=values, minlength=n_groups)


@dataclass
class NewtonResult:
    """Per-group outcome of :func:`newton_1d`."""

    x: FloatArray
    iterations: FloatArray
    converged: FloatArray
    at_bound: FloatArray
    loss: FloatArray | None = None  # the objective at x, when derivatives report it
    start_loss: FloatArray | None = None  # the objective at the (clipped) start


def newton_1d(
    derivatives: Callable[
        [FloatArray, FloatArray], tuple[FloatArray, FloatArray, FloatArray | None]
    ],
    *,
    start: FloatArray,
    lower: float,
    upper: float,
    rtol: float,
    max_iter: int,
) -> NewtonResult:
    """Minimise a convex function of one positive variable per group, all groups at once.

    Safeguarded Newton on the bracket ``[lower, upper]``: each step evaluates the first
    and second derivative of every group's objective (``derivatives(x, active)`` →
    (g, h, loss), where the objective itself may be ``None``; entries of groups that
    have stopped, ``active`` False, may be left unevaluated),
    shrinks the group's bracket to the side where the minimum lies (g > 0: minimum below
    x; convexity makes the sign of g decide), and takes the Newton step if it stays
    inside the bracket, else the bound itself (tried once) or the geometric
    midpoint of the bracket. A group stops when its Newton step is below ``rtol``·x,
    its bracket is narrower than that, its gradient is 0, or it sits on a bound with the
    gradient pointing outwards (a constrained minimum: ``at_bound``). A group that
    stops keeps the x it was evaluated at (within ``rtol``·x of the minimum), so the
    objective reported there needs no extra evaluation; the function iterates until
    every group stopped or ``max_iter`` steps were taken (``converged`` False for those
    still moving).
    """
    x = np.clip(np.asarray(start, dtype=np.float64), lower, upper)
    n = x.size
    lo = np.full(n, lower)
    hi = np.full(n, upper)
    tried_lo = np.zeros(n, dtype=bool)
    tried_hi = np.zeros(n, dtype=bool)
    active = np.ones(n, dtype=bool)
    converged = np.zeros(n, dtype=bool)
    at_bound = np.zeros(n, dtype=bool)
    iterations = np.zeros(n, dtype=np.int64)
    loss: FloatArray | None = None
    start_loss: FloatArray | None = None
    for _ in range(max_iter):
        if not active.any():
            break
        g, h, value = derivatives(x, active)
        if value is not None:
            loss = value.copy() if loss is None else np.where(active, value, loss)
            if start_loss is None:
                start_loss = value.copy()
        iterations += active
        g = np.where(np.isfinite(g), g, 0.0)
        hi = np.where(active & (g > 0), x, hi)
        lo = np.where(active & (g < 0), x, lo)
        on_lower = (x <= lower) & (g >= 0)
        on_upper = (x >= upper) & (g <= 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(h > 0, g / h, np.inf)
        newton = x - step
        inside = np.isfinite(newton) & (newton >= lo) & (newton <= hi)
        go_lower = ~inside & (newton <= lo) & (lo <= lower) & ~tried_lo
        go_upper = ~inside & (newton >= hi) & (hi >= upper) & ~tried_hi
        midpoint = np.sqrt(lo * hi)
        new = np.where(
            inside, newton, np.where(go_lower, lower, np.where(go_upper, upper, midpoint))
        )
        tried_lo |= active & go_lower
        tried_hi |= active & go_upper
        # a step below the tolerance ends the group (its bracket end may equal x to
        # rounding, so the step need not be strictly inside the bracket)
        small = np.abs(step) <= rtol * x
        collapsed = (hi - lo) <= rtol * x
        done = active & ((g == 0) | small | collapsed | on_lower | on_upper)
        at_bound |= done & (on_lower | on_upper)
        converged |= done
        x = np.where(active & ~done, new, x)
        active &= ~done
    if loss is not None:
        loss = np.where(active, np.nan, loss)  # groups still moving: x was not evaluated
    return NewtonResult(x, iterations, converged, at_bound, loss, start_loss)


def fingerprint(value: pl.Expr) -> pl.Expr:
    """Σ hash(value) over the rows, wrapping in UInt64: one number per multiset of values.

    Two sets of rows with the same values (in any order) give the same number; others
    collide with probability about 2⁻⁶⁴. The hash is polars' ``Expr.hash`` with a fixed
    seed (:func:`fingerprint_hash`), stable for a given polars version.
    """
    return fingerprint_hash(value).sum()


def fingerprint_hash(value: pl.Expr) -> pl.Expr:
    """The hash of each row that :func:`fingerprint` sums."""
    return value.cast(pl.Float64).hash(seed=_FINGERPRINT_SEED)


def group_fingerprints(
    hashes: FloatArray, starts: FloatArray, run_group: FloatArray, n_groups: int
) -> FloatArray:
    """:func:`fingerprint` of each group, from the rows' :func:`fingerprint_hash`.

    The rows come in runs (``starts``) of one group each (``run_group``); the sums wrap
    in UInt64 as polars' do, so any order of summing gives the same number.
    """
    out = np.zeros(n_groups, dtype=np.uint64)
    if hashes.size:
        np.add.at(out, run_group, np.add.reduceat(hashes, starts))
    return out


def fingerprint_value(columns: Mapping[str, str]) -> pl.Expr:
    """The column a fingerprint hashes: the option log-likelihood, else the confidence.

    Both are columns that ``apply_*`` reads too, so it can compare the rows it is given
    with the fit rows.
    """
    return pl.col(columns["loglik"] if "loglik" in columns else columns["confidence"])


def fingerprinted(
    table: pl.LazyFrame, fit: FitRows, fingerprints: FloatArray | None = None
) -> pl.LazyFrame:
    """``table`` with :data:`FINGERPRINT`: the fit rows' fingerprint per group.

    Only for ``fitted_on="frame"`` (fit on one frame, apply to another), where nothing
    else tells ``apply_*`` that it was given the fit rows again; null for the other
    schemes, which label their fit rows themselves. ``fingerprints``: those of the
    table's groups, in its row order, when the fit already summed them
    (:func:`group_fingerprints`), else a pass over the fit rows sums them here.
    """
    if fit.scheme.fitted_on != "frame":
        return table.with_columns(pl.lit(None, dtype=pl.UInt64).alias(FINGERPRINT))
    if fingerprints is not None:
        return table.with_columns(pl.Series(FINGERPRINT, fingerprints, dtype=pl.UInt64))
    value = fingerprint(fingerprint_value(fit.columns)).alias(FINGERPRINT)
    if not fit.keys:
        return table.join(fit.rows.select(value), how="cross", maintain_order="left")
    prints = fit.rows.group_by(fit.keys).agg(value)
    return table.join(prints, on=fit.keys, how="left", nulls_equal=True, maintain_order="left")


def params_frame(
    groups: pl.DataFrame,
    values: Mapping[str, Any] | None,
    fit: FitRows,
    table: Table,
    fingerprints: FloatArray | None = None,
) -> pl.DataFrame:
    """Keys…, the ``table``'s columns, then ``fitted_on``, ``in_sample`` and the fingerprint.

    ``values`` maps each column of ``table`` (but the labels) to one value per group
    of ``groups`` (cast to the table's dtype); ``None`` gives a table without rows.
    ``fingerprints``: per group of ``groups``, when the fit summed them already.
    """
    labels = ("fitted_on", "in_sample", FINGERPRINT)
    names = [name for name in table.names if name not in labels]
    data = pl.DataFrame(
        [
            pl.Series(name, [] if values is None else values[name], dtype=table.columns[name])
            for name in names
        ]
    )
    if groups.width:
        data = pl.concat([groups, data], how="horizontal")
    labelled = data.lazy().with_columns(*fit.scheme.labels())
    return fingerprinted(labelled, fit, None if values is None else fingerprints).collect()
