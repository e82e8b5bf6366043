"""The ``calib`` namespace on polars frames: ``frame.calib.metrics(...)`` and friends.

Registered on both DataFrame and LazyFrame when calib_frames is imported; every method
forwards to the plain function of the same meaning, so the output kind follows the input.

Examples
--------
>>> import polars as pl
>>> import calib_frames  # registers the namespace
>>> df = pl.DataFrame({"confidence": [0.6] * 10, "correct": [True] * 6 + [False] * 4})
>>> df.calib.metrics()["ece"].item() < 1e-12
True
>>> df.lazy().calib.metrics().collect()["populated_bins"].item()
1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic

import polars as pl

from calib_frames.binning import BinsLike
from calib_frames.validation import Frame
from calib_frames.metrics import calibration_metrics
from calib_frames.perplexity import nll_sums, perplexity
from calib_frames.stats import bin_statistics, reliability_table

__all__ = ["CalibNamespace"]


class CalibNamespace(Generic[Frame]):
    """Calibration and perplexity methods of a DataFrame or LazyFrame."""

    def __init__(self, frame: Frame) -> None:
        self._frame: Frame = frame

    def bin_statistics(
        self,
        *,
        confidence: str = "confidence",
        correct: str = "correct",
        by: str | Sequence[str] | None = None,
        bins: BinsLike = 10,
        weight: str | None = None,
    ) -> Frame:
        """See :func:`calib_frames.bin_statistics`."""
        return bin_statistics(
            self._frame, confidence=confidence, correct=correct, by=by, bins=bins, weight=weight
        )

    def reliability(
        self,
        *,
        confidence: str = "confidence",
        correct: str = "correct",
        by: str | Sequence[str] | None = None,
        bins: BinsLike = 10,
        weight: str | None = None,
    ) -> Frame:
        """See :func:`calib_frames.reliability_table`."""
        return reliability_table(
            self._frame, confidence=confidence, correct=correct, by=by, bins=bins, weight=weight
        )

    def metrics(
        self,
        *,
        confidence: str = "confidence",
        correct: str = "correct",
        by: str | Sequence[str] | None = None,
        bins: BinsLike = 10,
        weight: str | None = None,
    ) -> Frame:
        """See :func:`calib_frames.calibration_metrics`."""
        return calibration_metrics(
            self._frame, confidence=confidence, correct=correct, by=by, bins=bins, weight=weight
        )

    def nll_sums(
        self,
        *,
        nll: str = "nll",
        tokens: str | None = None,
        bytes: str | None = None,
        words: str | None = None,
        by: str | Sequence[str] | None = None,
        log_probs: bool = False,
    ) -> Frame:
        """See :func:`calib_frames.nll_sums`."""
        return nll_sums(
            self._frame,
            nll=nll,
            tokens=tokens,
            bytes=bytes,
            words=words,
            by=by,
            log_probs=log_probs,
        )

    def perplexity(
        self,
        *,
        nll: str = "nll",
        tokens: str | None = None,
        bytes: str | None = None,
        words: str | None = None,
        by: str | Sequence[str] | None = None,
        log_probs: bool = False,
    ) -> Frame:
        """See :func:`calib_frames.perplexity`."""
        return perplexity(
            self._frame,
            nll=nll,
            tokens=tokens,
            bytes=bytes,
            words=words,
            by=by,
            log_probs=log_probs,
        )


pl.api.register_dataframe_namespace("calib")(CalibNamespace)
pl.api.register_lazyframe_namespace("calib")(CalibNamespace)
