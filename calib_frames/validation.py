"""The input kernel: frames, group keys, column roles and row checks, for every layer.

Every entry point of calib_frames accepts a polars ``DataFrame`` or ``LazyFrame``
and returns the same kind (:func:`as_lazy`, :func:`return_like`): lazy in, lazy out;
eager in, eager out. Every layer checks its input through this module:

* **Keys**: :func:`group_keys` normalises ``by=`` (a name, a list of names or ``None``);
  :func:`rollup_keys` the ``by=`` of a merge or roll-up.
* **Columns** (at once, from the schema alone): :func:`require_columns` checks that each
  role's column exists and has the role's dtype and that keys clash with nothing.
  Working columns added inside a query are named with :func:`working` (the one
  reserved prefix, ``__cf_``).
* **Rows**: a :class:`RowCheck` is a row-level contract. Inside an aggregation pass it
  either adds one ``sum`` to the aggregation (:func:`count_bad_rows`) or is counted from
  a group key that is null on offending rows; after the pass the small aggregated frame
  goes through :func:`raise_on_bad_rows`, which looks up one offending row only if some
  count is non-zero (a short, early-stopping filtered scan on the error path). A frame
  whose rows are themselves the checked rows (what an in-memory estimator gathered, a
  source's per-question frame) goes through :func:`check_rows`. Both raise
  :class:`~calib_frames.exceptions.DataError` worded by :func:`describe_problem`: the
  column, "N of M rows" and one example with its group keys. The contracts of
  prediction rows (a confidence in range, a 0/1 outcome, a finite weight) are
  :func:`prediction_checks`, shared by the row pass and the in-memory estimators.
* **Arguments** (at once, from the values alone): public functions declare their
  arguments' constraints with :func:`calib_frames.arguments.check_arguments` (one
  wording: ``name= takes …, got …``); :class:`Keys` is ``by=``'s. :func:`check_replicates`,
  :func:`check_seed`, :func:`check_level` and :func:`check_integer` check a value inside a
  function in the same words, :func:`check_memory` the memory a resampling plans for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, SupportsIndex, TypeVar, cast

import polars as pl

from calib_frames.arguments import LEVEL, Constraint, Integer, Options
from calib_frames.exceptions import ArgumentError, DataError, TableError

__all__ = [
    "CORRECTION",
    "CORRECTIONS",
    "LARGEST_COUNT",
    "MEMORY_LIMIT",
    "RESERVED_PREFIX",
    "Correction",
    "Frame",
    "Keys",
    "RowCheck",
    "as_expr",
    "as_lazy",
    "check_integer",
    "check_level",
    "check_memory",
    "check_replicates",
    "check_rows",
    "check_seed",
    "check_tokens_named",
    "count_bad_rows",
    "describe_problem",
    "divide",
    "first_offending_row",
    "group_keys",
    "integral_check",
    "not_true",
    "prediction_checks",
    "raise_on_bad_rows",
    "require_columns",
    "return_like",
    "rollup_keys",
    "working",
]

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


RESERVED_PREFIX = "__cf_"
"""The prefix of every working column calib_frames adds inside a query (``__cf_bin``, …).

Input columns must not start with it; :func:`working` builds the names."""


def working(name: str) -> str:
    """The name of a working column: ``working("bin")`` is ``"__cf_bin"``."""
    return RESERVED_PREFIX + name


def as_lazy(frame: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Return ``frame`` as a LazyFrame, raising a clear error for anything else."""
    if isinstance(frame, pl.LazyFrame):
        return frame
    if isinstance(frame, pl.DataFrame):
        return frame.lazy()
    raise ArgumentError(
        f"expected a polars DataFrame or LazyFrame, got {type(frame).__name__}; "
        "wrap arrays with pl.DataFrame({...}) or use CalibrationReport.from_predictions"
    )


def as_expr(column: str | pl.Expr) -> pl.Expr:
    """A column argument of an expression function as an expression: a name is ``pl.col(name)``.

    Examples
    --------
    >>> import polars as pl
    >>> pl.DataFrame({"x": [1, 2]}).select(as_expr("x") * 2)["x"].to_list()
    [2, 4]
    """
    return pl.col(column) if isinstance(column, str) else column


def return_like(template: Frame, result: pl.LazyFrame) -> Frame:
    """Collect ``result`` if ``template`` was eager, so that the output kind matches the input."""
    if isinstance(template, pl.DataFrame):
        return result.collect()
    return result


def group_keys(by: str | Sequence[str] | None) -> list[str]:
    """Normalise a ``by=`` argument to a list of column names (``None`` = whole frame).

    A string is one column name; one with a comma (``"model,task"``, the command line's
    spelling) is refused with the list to pass instead (a column whose name has a comma
    is still ``by=["a,b"]``).

    Examples
    --------
    >>> group_keys("model"), group_keys(["model", "task"])
    (['model'], ['model', 'task'])
    >>> group_keys("model,task")
    Traceback (most recent call last):
    ...
    calib_frames.exceptions.ArgumentError: by='model,task' names one column; ...
    """
    if by is None:
        return []
    if isinstance(by, str):
        if "," in by:
            names = [name.strip() for name in by.split(",")]
            raise ArgumentError(
                f"by={by!r} names one column; for several keys pass a list: by={names!r}"
            )
        return [by]
    if not isinstance(by, Sequence):
        raise ArgumentError(
            f"by= takes a column name or a list of column names, got {by!r} of type "
            f"{type(by).__name__}"
        )
    keys = list(by)
    for key in keys:
        if not isinstance(key, str):
            raise ArgumentError(
                f"by= takes column names (str), got {key!r} of type {type(key).__name__}"
            )
    if len(set(keys)) != len(keys):
        twice = sorted({key for key in keys if keys.count(key) > 1})
        raise ArgumentError(f"by= names a column twice: {twice} in {keys}")
    return keys


class Keys(Constraint):
    """A ``by=`` argument as :func:`group_keys` takes it; ``required``: at least one key.

    The messages are :func:`group_keys`'s (a comma inside one name, a key named twice).

    Examples
    --------
    >>> Keys(required=True).accepts([]), Keys().accepts(["model", "task"])
    (False, True)
    """

    def __init__(self, *, required: bool = False) -> None:
        self.required = required
        words = "one or more column names" if required else "a column name or a list of them"
        self.description = self.plural = words
        self.refused = ("a,b", ["a", "a"], 1, *([[]] * required))

    def accepts(self, value: object) -> bool:
        """Whether ``value`` is a ``by=`` that :func:`group_keys` takes (and not empty)."""
        try:
            keys = group_keys(value)  # type: ignore[arg-type]
        except ArgumentError:
            return False
        return bool(keys) or not self.required

    def message(self, value: object, name: str) -> str:
        """:func:`group_keys`' message, else the constraint's."""
        try:
            group_keys(value)  # type: ignore[arg-type]
        except ArgumentError as error:
            return str(error).replace("by=", f"{name}=")
        return super().message(value, name)


def rollup_keys(keys: Sequence[str], by: str | Sequence[str] | None) -> list[str]:
    """The keys a roll-up keeps: ``by=`` (normalised) if given, else all of ``keys``.

    Raises :class:`~calib_frames.exceptions.TableError` when ``by=`` names a column
    that is not one of the table's keys.
    """
    if by is None:
        return list(keys)
    kept = group_keys(by)
    unknown = [key for key in kept if key not in keys]
    if unknown:
        raise TableError(
            f"by={unknown} are not keys of the tables (keys: {list(keys)}); a roll-up can "
            "only keep some of the keys the statistics were computed by"
        )
    return kept


def require_columns(
    schema: pl.Schema,
    columns: Mapping[str, str],
    *,
    numeric: Sequence[str] = (),
    numbers: Sequence[str] = (),
    reserved: Sequence[str] = (),
    keys: Sequence[str] = (),
    inputs_are_not_keys: bool = False,
    table: str | None = None,
) -> None:
    """Check that the columns exist and have their roles' dtypes, and that keys do not clash.

    ``columns`` maps a role (``"confidence"``) to the user's column name. The roles in
    ``numeric`` must be numeric or Boolean (an outcome); those in ``numbers`` must be
    numeric and not Boolean (a confidence, a weight: a Boolean there is almost always a
    swapped column). The group keys must not be named like output columns
    (``reserved``) or start with :data:`RESERVED_PREFIX` and, with
    ``inputs_are_not_keys``, not be named like an input column either. ``table`` names
    the input the columns belong to when a call takes several (``"run"``, ``"qrels"``)
    and prefixes the messages. Raises :class:`~calib_frames.exceptions.TableError`
    naming the role, the column and the available columns.

    Examples
    --------
    >>> import polars as pl
    >>> schema = pl.Schema({"model": pl.String, "p": pl.Float64, "y": pl.Boolean})
    >>> require_columns(schema, {"confidence": "p", "correct": "y"}, numbers=["confidence"],
    ...                 numeric=["correct"], keys=["model"])
    >>> require_columns(schema, {"confidence": "y", "correct": "p"}, numbers=["confidence"])
    Traceback (most recent call last):
    ...
    calib_frames.exceptions.TableError: column 'y' (confidence) is Boolean but must hold ...
    """
    where = f"{table}: " if table else ""
    missing = [f"{role}={name!r}" for role, name in columns.items() if name not in schema]
    missing += [f"by={key!r}" for key in keys if key not in schema]
    if missing:
        available = ", ".join(repr(c) for c in schema.names())
        first = missing[0].split("=")[0]
        fix = f'{first}=["COL", ...]' if first == "by" else f'{first}="COL"'
        raise TableError(
            f"{where}column not found: {', '.join(missing)}; name the column with {fix}, "
            f"one of the available columns: {available or 'none'}"
        )
    for role in [*numeric, *numbers]:
        name = columns[role]
        dtype = schema[name]
        if role in numbers and dtype == pl.Boolean:
            swapped = " (were the confidence and correct columns swapped?)"
            raise TableError(
                f"{where}column {name!r} ({role}) is Boolean but must hold numbers"
                + (swapped if "correct" in columns else "")
            )
        if not (dtype.is_numeric() or dtype == pl.Boolean):
            raise TableError(f"{where}column {name!r} ({role}) must be numeric, got dtype {dtype}")
    clashes = [key for key in keys if key in reserved or key.startswith(RESERVED_PREFIX)]
    if clashes:
        raise TableError(
            f"{where}group key(s) {clashes} clash with output columns of the same name; "
            f"rename them first, e.g. frame.rename({{{clashes[0]!r}: {clashes[0] + '_key'!r}}})"
        )
    if inputs_are_not_keys:
        same = [f"{role}={name!r}" for role, name in columns.items() if name in keys]
        if same:
            raise TableError(
                f"{where}group key(s) are also input columns: {', '.join(same)}; by= must "
                "not name a column the estimate is computed from"
            )


@dataclass(frozen=True)
class RowCheck:
    """A row-level contract and how its violations are counted.

    Attributes
    ----------
    column
        The user's column the check is about (named in the message).
    problem
        What is wrong with the offending rows, phrased to follow "N rows are ...".
    bad
        Boolean expression over the checked rows, True on offending rows (nulls mapped to
        True), or an integer expression counting offending input rows behind each row
        (bad option rows of a question). Used to count (:func:`check_rows`,
        :func:`count_bad_rows`) and to find an example.
    count
        Expression over the *aggregated* frame giving the number of offending rows, for
        checks counted by the aggregation pass itself (an invalid confidence gets a null
        bin key, so its rows form their own cells). ``None``: count ``bad``.
    total
        What the count is out of, as an expression over the frame the counts are taken
        on (``pl.col("options").sum()``); ``None``: the call's row total.
    value
        The column whose value the example shows, under the name ``column`` (``None``:
        ``column`` itself); see ``show_value``.
    show_value
        Whether the example shows a value at all (False: only the group keys; ``column``
        need not then be a column of the checked frame, e.g. ``"query/item"``).
    with_example
        Whether an offending row can be shown (False for checks on sums, such as an
        overflowing group total, where no single row is at fault).
    table
        Which input the column belongs to, when a call takes several (``"run"``,
        ``"qrels"``); prefixes the message.
    unit
        What the counted rows are ("rows", "option rows", "questions").
    """

    column: str
    problem: str
    bad: pl.Expr
    count: pl.Expr | None = None
    total: pl.Expr | None = None
    value: str | None = None
    show_value: bool = True
    with_example: bool = True
    table: str | None = None
    unit: str = "rows"


ExampleFinder = Callable[[RowCheck], "dict[str, object] | None"]
"""Returns one offending row of a check (its group keys and column) or None."""


def first_offending_row(source: pl.LazyFrame, keys: Sequence[str]) -> ExampleFinder:
    """An :data:`ExampleFinder` that scans ``source`` until the first offending row.

    It runs only on the error path, so a valid input is still read once.
    """

    def find(check: RowCheck) -> dict[str, object] | None:
        columns = _example_columns(check, keys)
        example = source.filter(check.bad.cast(pl.Boolean)).select(columns).head(1).collect()
        return example.row(0, named=True) if example.height else None

    return find


def count_bad_rows(checks: Sequence[RowCheck]) -> list[pl.Expr]:
    """Aggregation expressions for the checks counted by an extra sum in the pass."""
    return [
        check.bad.cast(pl.UInt64).sum().alias(_count_name(i))
        for i, check in enumerate(checks)
        if check.count is None
    ]


def _count_name(index: int) -> str:
    return working(f"bad_{index}")


def raise_on_bad_rows(
    aggregated: pl.LazyFrame,
    *,
    keys: Sequence[str],
    checks: Sequence[RowCheck],
    total_rows: pl.Expr,
    find_example: ExampleFinder,
    drop: Sequence[str] = (),
) -> pl.LazyFrame:
    """Raise a DataError after an aggregation pass if any check counted offending rows.

    Otherwise pass the frame on unchanged (less the working columns).

    ``aggregated`` is the small output of the pass (with the columns of
    :func:`count_bad_rows`, which are dropped, and any working columns named in
    ``drop``); ``total_rows`` evaluates to the number of input rows on it. The check runs
    when the result is collected, so lazy stays lazy. The message names each column,
    "N of M rows" and one example with its group keys (found by ``find_example``, on the
    error path only).
    """
    counted = [_count_name(i) for i, check in enumerate(checks) if check.count is None]
    counted += list(drop)
    totals = _count_expressions(checks, total_rows, counted_in_pass=True)
    schema = aggregated.collect_schema()
    out_schema = {name: dtype for name, dtype in schema.items() if name not in counted}

    def check(frame: pl.DataFrame) -> pl.DataFrame:
        _raise_if_any(checks, frame.select(totals).row(0), keys, find_example)
        return frame.drop(counted)

    return aggregated.map_batches(check, schema=out_schema)


def check_rows(
    frame: Frame,
    checks: Sequence[RowCheck],
    *,
    keys: Sequence[str],
    scope: pl.Expr | None = None,
    drop: Sequence[str] = (),
) -> Frame:
    """Raise a DataError if any row of ``frame`` breaks a check; return it less ``drop``.

    For frames whose rows are the checked rows (the rows an in-memory estimator gathered,
    the per-question frame of a source): every check is counted in one ``select`` and an
    example is taken from the same frame. A DataFrame is checked at once; a LazyFrame
    when it is collected (lazy stays lazy). ``scope`` restricts the rows counted (one
    copy of rows stacked per scoring); ``drop`` names working columns (flags) to remove
    after the check.
    """
    if not checks:
        return frame.drop(drop) if drop else frame

    def check(full: pl.DataFrame) -> pl.DataFrame:
        rows = full if scope is None else full.filter(scope)
        counts = rows.select(_count_expressions(checks, pl.len(), counted_in_pass=False)).row(0)

        def find(row_check: RowCheck) -> dict[str, object] | None:
            columns = _example_columns(row_check, keys)
            found = rows.filter(row_check.bad.cast(pl.Boolean)).select(columns).head(1)
            return found.row(0, named=True) if found.height else None

        _raise_if_any(checks, counts, keys, find)
        return full.drop(drop)

    if isinstance(frame, pl.DataFrame):
        return check(frame)
    schema = frame.collect_schema()
    out_schema = {name: dtype for name, dtype in schema.items() if name not in drop}
    return frame.map_batches(check, schema=out_schema)


def _count_expressions(
    checks: Sequence[RowCheck], total_rows: pl.Expr, *, counted_in_pass: bool
) -> list[pl.Expr]:
    """For each check its count and its total, in that order, as one row of a select."""
    out: list[pl.Expr] = []
    for i, check in enumerate(checks):
        if check.count is not None:
            count = check.count
        elif counted_in_pass:
            count = pl.col(_count_name(i)).sum()
        else:
            count = check.bad.cast(pl.UInt64).sum()
        total = total_rows if check.total is None else check.total
        out += [count.alias(f"c{i}"), total.alias(f"t{i}")]
    return out


def _raise_if_any(
    checks: Sequence[RowCheck],
    counts: tuple[object, ...],
    keys: Sequence[str],
    find_example: ExampleFinder,
) -> None:
    problems = []
    for i, check in enumerate(checks):
        count, total = counts[2 * i], counts[2 * i + 1]
        if not count:
            continue
        row = find_example(check) if check.with_example else None
        if row is not None and check.show_value and check.value is not None:  # user's name
            row = {**row, check.column: row[check.value]}
        problems.append(
            describe_problem(
                check.column,
                int(count),  # type: ignore[call-overload]
                int(total or 0),  # type: ignore[call-overload]
                check.problem,
                example=row,
                keys=keys,
                value=check.column if check.show_value else None,
                unit=check.unit,
                table=check.table,
            )
        )
    if problems:
        raise DataError("invalid input:\n  " + "\n  ".join(problems))


def _example_columns(check: RowCheck, keys: Sequence[str]) -> list[str]:
    """The columns an example row is read with: the keys, and the value when it is shown."""
    shown = [check.value if check.value is not None else check.column] if check.show_value else []
    return list(dict.fromkeys([*keys, *shown]))


def describe_problem(
    column: str,
    count: int,
    total: int,
    problem: str,
    *,
    example: Mapping[str, object] | None,
    keys: Sequence[str],
    value: str | None,
    unit: str = "rows",
    table: str | None = None,
) -> str:
    """One line of a DataError: the column, "N of M rows", and an example with its keys.

    Every row check of the package words its message through here, e.g.
    ``column 'confidence': 3 of 1,000 rows are not a probability …; e.g. model='b':
    confidence=1.5``.
    """
    where = ""
    if example is not None:
        group = ", ".join(f"{key}={example[key]!r}" for key in keys if key in example)
        shown = f"{value}={example[value]!r}" if value is not None else ""
        if group or shown:
            where = f"; e.g. {group}{': ' if group and shown else ''}{shown}"
    verb = "is" if count == 1 else "are"
    name = f"{table} column" if table else "column"
    return f"{name} {column!r}: {count:,} of {total:,} {unit} {verb} {problem}{where}"


def divide(numerator: pl.Expr, denominator: float) -> pl.Expr:
    """``numerator / denominator``, correctly rounded like Python's ``/``.

    polars divides a column by a scalar through the scalar's reciprocal, so
    ``3.0 / 10`` gives 0.30000000000000004 there. Dividing by a column made from the
    numerator (``numerator * 0 + denominator``, NaN where the numerator is not finite)
    keeps plain IEEE division. Bin edges and ratios that must match other tools to the
    last digit go through here.
    """
    return numerator / (numerator * 0.0 + float(denominator))


def not_true(expr: pl.Expr) -> pl.Expr:
    """``~expr`` with null counted as a violation (the building block of RowCheck.bad)."""
    return expr.not_().fill_null(True)


def prediction_checks(
    *,
    confidence: str,
    correct: str,
    weight: str | None,
    low: float = 0.0,
    high: float = 1.0,
    positive_weight: bool = False,
) -> list[RowCheck]:
    """The row contracts of prediction rows, over the user's columns.

    A confidence in [low, high], an outcome boolean or 0/1, a finite weight ≥ 0 (> 0 with
    ``positive_weight``: the in-memory fits divide by a block's weight).
    """
    p = pl.col(confidence).cast(pl.Float64)
    y = pl.col(correct).cast(pl.Float64)
    checks = [
        RowCheck(
            confidence,
            f"not a probability in [{low:g}, {high:g}] (null, NaN, infinite or out of range)",
            not_true(p.is_between(low, high)),
        ),
        RowCheck(correct, "not boolean or 0/1 (or null)", not_true((y == 0) | (y == 1))),
    ]
    if weight is not None:
        w = pl.col(weight).cast(pl.Float64)
        valid = w.is_finite() & ((w > 0) if positive_weight else (w >= 0))
        rule = "> 0" if positive_weight else ">= 0"
        checks.append(RowCheck(weight, f"not a finite weight {rule}", not_true(valid)))
    return checks


def integral_check(column: str, *, minimum: int, maximum: int, problem: str) -> RowCheck:
    """Rows whose value in ``column`` is not a finite whole number in [minimum, maximum]."""
    value = pl.col(column).cast(pl.Float64)
    ok = (
        value.is_finite()
        & (value >= minimum)
        & (value <= float(maximum))
        & (value == value.floor())
    )
    return RowCheck(column, problem, not_true(ok))


MEMORY_LIMIT = 8 * 2**30
"""The most memory (bytes) one resampling call may plan for, 8 GiB: past it, ArgumentError.

Each resampling estimator estimates its largest arrays before the work starts (the
bootstrap's resampled cells or crossed rows, the noise floor's null draws, the paired
tests' blocks, the perplexity draws) and calls :func:`check_memory`, so that a mistyped
``replicates=10**7`` is refused at once instead of being killed for memory."""


def check_integer(value: object, *, name: str, minimum: int) -> int:
    """``value`` if it is an integer >= ``minimum`` (bools refused), else an ArgumentError.

    :class:`Integer` for a value checked inside a function rather than by
    :func:`check_arguments`.

    Examples
    --------
    >>> check_integer(5, name="folds", minimum=2)
    5
    >>> check_integer(True, name="folds", minimum=2)
    Traceback (most recent call last):
    ...
    calib_frames.exceptions.ArgumentError: folds= takes an integer >= 2, got True
    """
    Integer(minimum).check(value, name)
    return int(cast("SupportsIndex", value))


def check_replicates(replicates: object, *, name: str = "replicates") -> int:
    """``replicates`` if it is an integer >= 1 (:data:`REPLICATES`), else an ArgumentError.

    ``name`` is the argument's name in the message (``noise_replicates``).

    Examples
    --------
    >>> check_replicates(200)
    200
    """
    return check_integer(replicates, name=name, minimum=1)


def check_seed(seed: object) -> int:
    """``seed`` if it is an integer >= 0 (:data:`SEED`), else an ArgumentError.

    Examples
    --------
    >>> check_seed(0)
    0
    """
    return check_integer(seed, name="seed", minimum=0)


Correction = Literal["bh", "holm", "none"]
"""A correction across the tests of a table: Benjamini–Hochberg, Holm, or none."""

CORRECTIONS: tuple[Correction, ...] = ("bh", "holm", "none")
"""The values of ``correction=`` (and ``--correction``), the default first."""


CORRECTION = Options(*CORRECTIONS)
"""``correction=`` of a table's tests (``@check_arguments(correction=CORRECTION)``)."""

LARGEST_COUNT = 2.0**53
"""The largest total weight a resampling draws as whole predictions (weights are
frequencies; past 2**53 a float no longer holds every whole number, nor numpy's int64
multinomial the count)."""


def check_level(level: object, *, name: str = "level") -> float:
    """``level`` if it is a number strictly between 0 and 1 (:data:`LEVEL`), else an ArgumentError.

    For confidence levels and significance levels alike (``name="alpha"``); bools and
    NaN are refused.

    Examples
    --------
    >>> check_level(0.95)
    0.95
    >>> check_level(1.5, name="alpha")
    Traceback (most recent call last):
    ...
    calib_frames.exceptions.ArgumentError: alpha= takes a number strictly between 0 and 1, got 1.5
    """
    LEVEL.check(level, name)
    return float(level)  # type: ignore[arg-type]


def check_tokens_named(schema: Mapping[str, object], tokens: object, keys: Sequence[str]) -> None:
    """Refuse ``tokens=None`` where the frame has a ``tokens`` column that is not a key.

    A column named ``tokens`` may be per-row token counts (sequence rows) or something
    else: the caller says which, rather than calib_frames guessing (one rule for every
    reader of token rows).

    Raises
    ------
    ArgumentError
        ``tokens`` is None and ``"tokens"`` is a column but not one of ``keys``.

    Examples
    --------
    >>> check_tokens_named({"nll": 1, "tokens": 2}, None, [])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calib_frames.exceptions.ArgumentError: the frame has a column 'tokens' but tokens= was ...
    >>> check_tokens_named({"nll": 1, "tokens": 2}, None, ["tokens"])  # a key, not counts
    """
    if tokens is None and "tokens" in schema and "tokens" not in keys:
        raise ArgumentError(
            "the frame has a column 'tokens' but tokens= was not given: pass "
            "tokens='tokens' if each row is a sequence with that many tokens, or "
            "tokens=1 if each row is one token"
        )


def check_memory(units: int, bytes_per_unit: int, what: str) -> None:
    """ArgumentError when ``units`` × ``bytes_per_unit`` passes :data:`MEMORY_LIMIT`.

    ``what`` names the units in the message (``"2,000 groups × 1,000 replicates"``).

    Examples
    --------
    >>> check_memory(1_000, 320, "cells")
    >>> check_memory(10**9, 320, "cells")
    Traceback (most recent call last):
    ...
    calib_frames.exceptions.ArgumentError: this call would need about 298.0 GiB (cells = ...
    """
    planned = units * bytes_per_unit
    if planned > MEMORY_LIMIT:
        raise ArgumentError(
            f"this call would need about {planned / 2**30:,.1f} GiB ({what} = {units:,}), "
            f"over the {MEMORY_LIMIT / 2**30:.0f} GiB limit (calib_frames.validation."
            "MEMORY_LIMIT): pass fewer replicates (1000 is plenty for a 95% interval) or "
            "fewer groups at a time"
        )
