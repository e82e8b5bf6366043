"""Names that moved in the redesign of 0.2, handed out from their old homes for one release."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping

__all__ = ["moved"]


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
            f"{module}.{name} has moved to {target}; the old name will be removed in the "
            "next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), attribute)

    return __getattr__
