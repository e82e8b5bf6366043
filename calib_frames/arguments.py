"""Argument constraints: what each keyword argument of a public function takes, declared once.

A public function declares its arguments' constraints with :func:`check_arguments`; the
decorator checks each argument given before the function runs and raises
:class:`~calib_frames.exceptions.ArgumentError` in the one wording of an argument error,
``function(): name= takes <description>, got <value>``, and lists the constraints in the
function's docstring (so ``help()`` shows them)::

    @check_arguments(correction=Options("bh", "holm", "none"), **RESAMPLING)
    def calibration_change(stats, *, correction="bh", replicates=1000, level=0.95, seed=0): ...

The constraints:

* :class:`Integer` (``Integer(1)``: an integer >= 1) and :class:`Number`
  (``Number(greater_than=0, at_most=1)``: a number in (0, 1]): never a bool, never NaN;
* :class:`Options` (one of a few strings; :meth:`Options.of` a ``Literal`` alias),
  :class:`Flag` (True or False), :class:`Column` (a column name), :class:`InstanceOf`;
* :class:`ListOf` (a non-empty list of values taking a constraint), :class:`MappingOf`
  and :class:`Rule` (a test and its words, for the rare argument none of these describes);
* ``a | b`` takes what either takes; None is refused unless declared (``Integer(2) | None``).

A constraint also checks a value inside a function (:meth:`Constraint.check`, same
wording without the function's name); :mod:`calib_frames.validation` holds the checks
built on it (``check_replicates``, …) and :class:`~calib_frames.validation.Keys` for
``by=``. Data-dependent checks (columns exist, rows valid) are not constraints: they stay
with :func:`~calib_frames.validation.require_columns` and
:class:`~calib_frames.validation.RowCheck`.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from numbers import Integral, Real
from types import MappingProxyType
from typing import ParamSpec, TypeVar, get_args

import polars as pl

from calib_frames.exceptions import ArgumentError

__all__ = [
    "COLUMN",
    "FLAG",
    "FRAME",
    "LEVEL",
    "REPLICATES",
    "RESAMPLING",
    "SEED",
    "TOKENS",
    "AnyOf",
    "Column",
    "Constraint",
    "Flag",
    "InstanceOf",
    "Integer",
    "ListOf",
    "MappingOf",
    "NoneOnly",
    "Number",
    "Options",
    "Rule",
    "check_arguments",
]


class Constraint:
    """What one argument takes: a test (:meth:`accepts`) and its words (``description``).

    :meth:`check` raises the one wording of an argument error, ``name= takes
    <description>, got <value>``. ``a | b`` takes what either takes (``Integer(2) | None``
    also takes None). ``plural`` words a list of such values (:class:`ListOf`);
    ``refused`` holds a few values the constraint refuses, for tests.
    """

    description: str = ""
    plural: str = ""
    refused: tuple[object, ...] = ()

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        raise NotImplementedError

    def message(self, value: object, name: str) -> str:
        """The error message for ``name=value`` (a long value shown by its type)."""
        text = repr(value)
        shown = text if len(text) <= 80 else f"a {type(value).__name__}"
        return f"{name}= takes {self.description}, got {shown}"

    def check(self, value: object, name: str) -> None:
        """Raise an ArgumentError unless ``value`` keeps the constraint.

        Examples
        --------
        >>> Integer(2).check(1, "folds")
        Traceback (most recent call last):
        ...
        calib_frames.exceptions.ArgumentError: folds= takes an integer >= 2, got 1
        """
        if not self.accepts(value):
            raise ArgumentError(self.message(value, name))

    def __or__(self, other: Constraint | None) -> Constraint:
        """The constraint taking what either takes (``None``: also None)."""
        return AnyOf(self, NoneOnly() if other is None else other)

    def __repr__(self) -> str:
        """``<Integer: an integer >= 1>``."""
        return f"<{type(self).__name__}: {self.description}>"


def _bounds(low: float | None, low_open: bool, high: float | None, high_open: bool) -> str:
    """`` >= 1``, `` in (0, 1]``, `` strictly between 0 and 1``, or nothing."""
    if low is not None and high is not None:
        if low_open and high_open:
            return f" strictly between {low:g} and {high:g}"
        return f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high:g}"
    return ""


def _either(words: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


class Integer(Constraint):
    """An integer (Python or numpy; never a bool) in ``[minimum, maximum]``.

    Examples
    --------
    >>> Integer(1).description, Integer(1).accepts(True)
    ('an integer >= 1', False)
    """

    def __init__(self, minimum: int | None = None, maximum: int | None = None) -> None:
        self.minimum, self.maximum = minimum, maximum
        bounds = _bounds(minimum, False, maximum, False)
        self.description, self.plural = f"an integer{bounds}", f"integers{bounds}"
        below = () if minimum is None else (minimum - 1,)
        above = () if maximum is None else (maximum + 1,)
        self.refused = (*below, *above, True, 1.5, "1")

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        if type(value) is not int:  # the common case first: this runs on every call
            if isinstance(value, bool) or not isinstance(value, Integral):
                return False
            value = int(value)
        return (self.minimum is None or value >= self.minimum) and (
            self.maximum is None or value <= self.maximum
        )


class Number(Constraint):
    """A finite real number (never a bool or NaN) within optional bounds.

    Each side is open (``greater_than``, ``less_than``) or closed (``at_least``,
    ``at_most``).

    Examples
    --------
    >>> Number(greater_than=0, at_most=1).description
    'a number in (0, 1]'
    >>> Number(greater_than=0, less_than=1).accepts(float("nan"))
    False
    """

    def __init__(
        self,
        *,
        greater_than: float | None = None,
        at_least: float | None = None,
        less_than: float | None = None,
        at_most: float | None = None,
    ) -> None:
        if greater_than is not None and at_least is not None:
            raise TypeError("Number takes greater_than= or at_least=, not both")
        if less_than is not None and at_most is not None:
            raise TypeError("Number takes less_than= or at_most=, not both")
        self.low = greater_than if greater_than is not None else at_least
        self.low_open = greater_than is not None
        self.high = less_than if less_than is not None else at_most
        self.high_open = less_than is not None
        bounds = _bounds(self.low, self.low_open, self.high, self.high_open)
        self.description = f"a number{bounds}" if bounds else "a finite number"
        self.plural = f"numbers{bounds}" if bounds else "finite numbers"
        ends = [end for end in (self.low, self.high) if end is not None]
        self.refused = (*[end for end in ends if not self.accepts(end)], math.nan, True, "0.5")

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        if isinstance(value, bool) or not isinstance(value, Real):
            return False
        number, low, high = float(value), self.low, self.high
        return (
            math.isfinite(number)
            and (low is None or (number > low if self.low_open else number >= low))
            and (high is None or (number < high if self.high_open else number <= high))
        )


class Options(Constraint):
    """One of a few strings.

    Examples
    --------
    >>> Options("bh", "holm", "none").description
    "'bh', 'holm' or 'none'"
    """

    def __init__(self, *values: str) -> None:
        self.values = values
        self.description = _either([repr(value) for value in values])
        self.plural = f"names among {', '.join(repr(value) for value in values)}"
        self.refused = ("?", 1)

    @classmethod
    def of(cls, literal: object) -> Options:
        """The choices of a ``Literal[...]`` alias, so that the type and the check agree."""
        return cls(*get_args(literal))

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        return isinstance(value, str) and value in self.values


class Flag(Constraint):
    """True or False (an int or None would switch a meaning silently)."""

    description, plural, refused = "True or False", "True or False values", (1, 0, None)

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        return value is True or value is False


class Column(Constraint):
    """A column name (a string)."""

    description, plural, refused = "a column name", "column names", (1, b"x")

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        return isinstance(value, str)


class NoneOnly(Constraint):
    """None, joined to another constraint by ``|``."""

    description, plural = "None", "None"

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        return value is None


class InstanceOf(Constraint):
    """An instance of ``types``, described in words."""

    def __init__(
        self, types: type | tuple[type, ...], description: str, plural: str | None = None
    ) -> None:
        self.types, self.description = types, description
        self.plural = description if plural is None else plural
        self.refused = tuple(v for v in (1.5, "table.csv", None) if not isinstance(v, types))

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        return isinstance(value, self.types)


class Rule(Constraint):
    """A test and its words, for the rare argument no other constraint describes."""

    def __init__(
        self,
        description: str,
        test: Callable[[object], bool],
        *,
        refused: tuple[object, ...],
        plural: str | None = None,
    ) -> None:
        self.description, self.plural = description, description if plural is None else plural
        self.test, self.refused = test, refused

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        return self.test(value)


class ListOf(Constraint):
    """A list (any sized collection but a string or a mapping) of values taking ``item``.

    ``at_least`` is the fewest values; ``distinct`` refuses a value given twice.

    Examples
    --------
    >>> ListOf(Integer(1), distinct=True).description
    'a non-empty list of integers >= 1, each once'
    """

    def __init__(self, item: Constraint, *, at_least: int = 1, distinct: bool = False) -> None:
        self.item, self.at_least, self.distinct = item, at_least, distinct
        size = {0: "a list of", 1: "a non-empty list of"}.get(at_least, f"{at_least} or more")
        self.description = f"{size} {item.plural}" + (", each once" if distinct else "")
        self.plural = f"lists of {item.plural}"
        self.refused = ("x", [item.refused[0]] if item.refused else {}, *([[]] * (at_least > 0)))

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Collection):
            return False
        values = list(value)
        if len(values) < self.at_least or not all(self.item.accepts(v) for v in values):
            return False
        return not self.distinct or len(set(values)) == len(values)


class MappingOf(Constraint):
    """A mapping whose keys take ``keys`` and whose values take ``values``.

    Examples
    --------
    >>> MappingOf(COLUMN, COLUMN).description
    'a mapping of column names to column names'
    """

    def __init__(self, keys: Constraint, values: Constraint) -> None:
        self.keys, self.values = keys, values
        self.description = f"a mapping of {keys.plural} to {values.plural}"
        self.plural = f"mappings of {keys.plural} to {values.plural}"
        self.refused = (["x"], *({"x": v} for v in values.refused[:1]))

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        return isinstance(value, Mapping) and all(
            self.keys.accepts(k) and self.values.accepts(v) for k, v in value.items()
        )


class AnyOf(Constraint):
    """Takes what any of ``options`` takes (what ``a | b`` builds)."""

    options: tuple[Constraint, ...]

    def __init__(self, *options: Constraint) -> None:
        flat: list[Constraint] = []
        for option in options:
            flat += option.options if isinstance(option, AnyOf) else [option]
        self.options = tuple(flat)
        self.description = _either([option.description for option in flat])
        self.plural = _either([option.plural for option in flat])
        refused = [value for option in flat for value in option.refused]
        self.refused = tuple(value for value in refused if not self.accepts(value))

    def accepts(self, value: object) -> bool:
        """Whether ``value`` keeps the constraint."""
        for option in self.options:  # noqa: SIM110  (no generator: runs on every call)
            if option.accepts(value):
                return True
        return False


REPLICATES = Integer(1)
"""``replicates=``: an integer >= 1."""
SEED = Integer(0)
"""``seed=``: an integer >= 0."""
LEVEL = Number(greater_than=0, less_than=1)
"""``level=`` and ``alpha=``: a number strictly between 0 and 1."""
RESAMPLING: dict[str, Constraint] = {"replicates": REPLICATES, "level": LEVEL, "seed": SEED}
"""``replicates=``, ``level=`` and ``seed=`` of a resampling estimator (``**RESAMPLING``)."""
FLAG = Flag()
"""A switch: True or False."""
COLUMN = Column()
"""A column role: a column name."""
FRAME = InstanceOf((pl.DataFrame, pl.LazyFrame), "a polars DataFrame or LazyFrame")
"""A table: a polars DataFrame or LazyFrame."""
TOKENS = (
    COLUMN | Rule("1", lambda value: type(value) is int and value == 1, refused=(2, 0, True)) | None
)
"""``tokens=`` of NLL rows: the column of token counts, 1 (a row is a token) or None."""

Params = ParamSpec("Params")
Result = TypeVar("Result")


def check_arguments(
    **constraints: Constraint,
) -> Callable[[Callable[Params, Result]], Callable[Params, Result]]:
    """Check the named arguments of a function against their constraints before it runs.

    Each keyword names a parameter and its :class:`Constraint`. A call whose argument
    breaks one raises :class:`~calib_frames.exceptions.ArgumentError`, worded
    ``function(): name= takes <description>, got <value>``, before the function runs; an
    argument left out is not checked (the defaults are checked once, when the function
    is decorated). The wrapper keeps the declarations as its ``constraints`` mapping and
    lists them in its docstring (Raises, ArgumentError), so that ``help()`` shows them.

    Examples
    --------
    >>> @check_arguments(replicates=REPLICATES, level=LEVEL)
    ... def interval(*, replicates: int = 1000, level: float = 0.95) -> str:
    ...     return f"{replicates} draws, {level:.0%}"
    >>> interval(level=0.9)
    '1000 draws, 90%'
    >>> interval(replicates=True)
    Traceback (most recent call last):
    ...
    calib_frames.exceptions.ArgumentError: interval(): replicates= takes an integer >= 1, got True
    """

    def decorate(function: Callable[Params, Result]) -> Callable[Params, Result]:
        where = function.__qualname__
        positional, keywords, defaults = _parameters(function)
        plan: list[tuple[str, int | None, Constraint]] = []
        for name, constraint in constraints.items():
            if name not in positional and name not in keywords:
                raise TypeError(f"{where} has no parameter {name!r}")
            default = defaults.get(name, _NO_DEFAULT)
            if default is not _NO_DEFAULT and not constraint.accepts(default):
                raise TypeError(f"{where}: the default {name}={default!r} breaks {constraint}")
            index = positional.index(name) if name in positional else None
            plan.append((name, index, constraint))

        @functools.wraps(function)
        def checked(*args: Params.args, **kwargs: Params.kwargs) -> Result:
            for name, index, constraint in plan:
                if name in kwargs:
                    value = kwargs[name]
                elif index is not None and index < len(args):
                    value = args[index]
                else:
                    continue
                if not constraint.accepts(value):
                    raise ArgumentError(f"{where}(): {constraint.message(value, name)}")
            return function(*args, **kwargs)

        checked.__dict__["constraints"] = MappingProxyType(dict(constraints))
        checked.__doc__ = _documented(function.__doc__, constraints)
        return checked

    return decorate


_NO_DEFAULT = object()


def _parameters(function: Callable[..., object]) -> tuple[list[str], list[str], dict[str, object]]:
    """The positional and the keyword-only parameter names, and the defaults by name.

    From the code object (a few microseconds: decorating runs at import), or from
    :func:`inspect.signature` for a function that wraps another.
    """
    code = getattr(function, "__code__", None)
    if code is None or hasattr(function, "__wrapped__"):
        parameters = inspect.signature(function).parameters.values()
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        return (
            [p.name for p in parameters if p.kind in kinds],
            [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY],
            {p.name: p.default for p in parameters if p.default is not p.empty},
        )
    count, names = code.co_argcount, code.co_varnames
    positional = list(names[:count])
    keywords = list(names[count : count + code.co_kwonlyargcount])
    values = function.__defaults__ or ()
    defaults = dict(zip(positional[len(positional) - len(values) :], values, strict=True))
    defaults.update(function.__kwdefaults__ or {})
    return positional, keywords, defaults


_AFTER_RAISES = ("Warns", "Warnings", "See Also", "Notes", "References", "Examples")


def _documented(doc: str | None, constraints: Mapping[str, Constraint]) -> str | None:
    """``doc`` with each checked argument's constraint under Raises, ArgumentError.

    Appended to the ``ArgumentError`` entry of the numpydoc Raises section; the entry,
    or the section (before See Also, Notes or Examples), is added where there is none.
    """
    if not doc or not constraints:
        return doc
    lines = doc.split("\n")
    headers = {
        lines[i - 1].strip(): i - 1
        for i in range(1, len(lines))
        if lines[i].lstrip().startswith("---") and lines[i - 1].strip()
    }
    first = min(headers.values(), default=None)
    indent = "" if first is None else lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    last = len(constraints) - 1
    text = [f"{indent}    Checked before the call:"] + [
        f"{indent}    ``{name}=`` {constraint.description}{'.' if i == last else ';'}"
        for i, (name, constraint) in enumerate(constraints.items())
    ]
    if "Raises" in headers:
        start = headers["Raises"] + 2
        end = min([i for i in headers.values() if i > start], default=len(lines))
        while end > start and not lines[end - 1].strip():
            end -= 1
        for i in range(start, end):
            entry = lines[i][len(indent) :]
            if entry[:1] not in (" ", "") and "ArgumentError" in entry.replace(" ", "").split(","):
                at = i + 1
                while at < end and lines[at].startswith(indent + " "):
                    at += 1
                return "\n".join([*lines[:at], *text, *lines[at:]])
        return "\n".join([*lines[:end], indent + "ArgumentError", *text, *lines[end:]])
    section = [indent + "Raises", indent + "------", indent + "ArgumentError", *text, ""]
    following = [headers[name] for name in _AFTER_RAISES if name in headers]
    at = min(following, default=len(lines))
    if at == len(lines):
        return "\n".join([*lines, "", *section, indent])
    return "\n".join([*lines[:at], *section, *lines[at:]])
