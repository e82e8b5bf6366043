"""The ``calib`` namespace on polars frames: ``frame.calib.calibration_metrics(...)`` etc.

Registered on both DataFrame and LazyFrame when calib_frames is imported. Each method *is*
the function of the same name with the frame bound as its first argument (its signature,
types, defaults and docstring are the function's), so the output kind follows the input:

``bin_statistics``, ``reliability_table``, ``merge_bin_statistics(*others)``,
``calibration_metrics``, ``metrics_from_bin_statistics``, ``nll_sums``, ``perplexity``,
``perplexity_from_nll_sums``, ``merge_nll_sums(*others)``, ``comparison_table(perplexity)``.

These are the frame functions of the additive core (``stats``, ``nll``, ``metrics``,
``comparison.side_by_side``); ``tests/test_common.py`` keeps the two lists equal.

Examples
--------
>>> import polars as pl
>>> import calib_frames  # registers the namespace
>>> df = pl.DataFrame({"confidence": [0.6] * 10, "correct": [True] * 6 + [False] * 4})
>>> df.calib.calibration_metrics()["ece"].item() < 1e-12
True
>>> df.lazy().calib.calibration_metrics().collect()["populated_bins"].item()
1
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, Self, overload

import polars as pl

from calib_frames import nll, stats
from calib_frames.comparison import side_by_side
from calib_frames.metrics import calibration, tokens
from calib_frames.validation import Frame

__all__ = ["CalibNamespace"]

P = ParamSpec("P")


class _Method(Generic[P]):
    """A namespace method: the function, with the namespace's frame as its first argument.

    Read on a ``CalibNamespace[DataFrame]`` it is the function's signature less its first
    parameter, returning a DataFrame (a LazyFrame on a LazyFrame); read on the class it is
    this descriptor, whose ``function`` is the function.
    """

    def __init__(self, function: Callable[Concatenate[Any, P], Any]) -> None:
        self.function = function
        self.__doc__ = function.__doc__
        self.__wrapped__ = function

    @overload
    def __get__(self, namespace: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, namespace: CalibNamespace[Frame], owner: type[Any]) -> Callable[P, Frame]: ...

    def __get__(self, namespace: CalibNamespace[Any] | None, owner: type[Any]) -> Any:
        if namespace is None:
            return self
        return types.MethodType(self.function, namespace._frame)


class CalibNamespace(Generic[Frame]):
    """Calibration and perplexity methods of a DataFrame or LazyFrame.

    Parameters
    ----------
    frame
        The DataFrame or LazyFrame the namespace is attached to.
    """

    def __init__(self, frame: Frame) -> None:
        self._frame: Frame = frame

    bin_statistics = _Method(stats.bin_statistics)
    reliability_table = _Method(stats.reliability_table)
    merge_bin_statistics = _Method(stats.merge_bin_statistics)
    calibration_metrics = _Method(calibration.calibration_metrics)
    metrics_from_bin_statistics = _Method(calibration.metrics_from_bin_statistics)
    nll_sums = _Method(nll.nll_sums)
    perplexity = _Method(tokens.perplexity)
    perplexity_from_nll_sums = _Method(tokens.perplexity_from_nll_sums)
    merge_nll_sums = _Method(nll.merge_nll_sums)
    comparison_table = _Method(side_by_side.comparison_table)


pl.api.register_dataframe_namespace("calib")(CalibNamespace)
pl.api.register_lazyframe_namespace("calib")(CalibNamespace)
