"""Names that moved in the redesign of 0.2, handed out from their old homes for one release.

* :func:`moved`: a module ``__getattr__`` for a name that moved (or was renamed).
* :func:`renamed_keywords`: a function still accepts a keyword argument's old name.
* :func:`keyword_chooses`: a function still accepts a removed keyword that used to switch
  its return type (``on_bad_record="skip"``): each value now has its own function.

Each use warns with a :class:`DeprecationWarning` naming the new spelling.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

__all__ = ["keyword_chooses", "moved", "renamed_keywords"]

F = TypeVar("F", bound=Callable[..., Any])

_REMOVAL = "will be removed in the next release"


def moved(module: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` that returns each moved name with a DeprecationWarning.

    ``names`` maps the old attribute name to the new dotted path
    (``"calib_frames.comparison.lm_eval_comparison"``).
    """

    def __getattr__(name: str) -> object:
        target = names.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        home, _, attribute = target.rpartition(".")
        warnings.warn(
            f"{module}.{name} has moved to {target}; the old name {_REMOVAL}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), attribute)

    return __getattr__


def renamed_keywords(**new_names: str) -> Callable[[F], F]:
    """Let a function still take keyword arguments by their old names (old=new).

    Passing both spellings is an :class:`~calib_frames.exceptions.ArgumentError`.
    """

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in new_names.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    from calib_frames.exceptions import ArgumentError

                    raise ArgumentError(
                        f"{function.__name__}() got {new}= and its old name {old}=; pass {new}="
                    )
                warnings.warn(
                    f"{function.__name__}({old}=...) is now {function.__name__}({new}=...); "
                    f"the old keyword {_REMOVAL}",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return cast("F", wrapper)

    return decorate


def keyword_chooses(
    keyword: str, functions: Mapping[str, Callable[..., Any] | None]
) -> Callable[[F], F]:
    """Let a function still take a removed ``keyword=`` whose value chose the return type.

    ``functions`` maps each value the keyword took to the function that now does what
    that value did (``None``: the decorated function itself); the call is forwarded to
    it with the other arguments. Any other value is an
    :class:`~calib_frames.exceptions.ArgumentError`.
    """

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if keyword not in kwargs:
                return function(*args, **kwargs)
            value = kwargs.pop(keyword)
            if not isinstance(value, str) or value not in functions:
                from calib_frames.exceptions import ArgumentError

                allowed = " or ".join(repr(choice) for choice in functions)
                raise ArgumentError(f"{keyword}= takes {allowed}, got {value!r}")
            target = functions[value] or function
            warnings.warn(
                f"{function.__name__}({keyword}={value!r}) is deprecated and {_REMOVAL}; "
                f"call {target.__name__}() instead",
                DeprecationWarning,
                stacklevel=2,
            )
            return target(*args, **kwargs)

        return cast("F", wrapper)

    return decorate
