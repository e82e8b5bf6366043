"""The ``calib`` namespace on polars frames: ``frame.calib.calibration_metrics(...)`` etc.

Registered on both DataFrame and LazyFrame when calib_frames is imported. Every method
has the name and the keyword parameters of the plain function it forwards to (with the
frame as the first argument), so the output kind follows the input;
``tests/core/test_api.py`` checks that the signatures agree.

=====================================  ==============================================
method                                 function
=====================================  ==============================================
``bin_statistics(...)``                :func:`~calib_frames.bin_statistics`
``reliability_table(...)``             :func:`~calib_frames.reliability_table`
``calibration_metrics(...)``           :func:`~calib_frames.calibration_metrics`
``metrics_from_bin_statistics()``      :func:`~calib_frames.metrics_from_bin_statistics`
``merge_bin_statistics(*others)``      :func:`~calib_frames.merge_bin_statistics`
``nll_sums(...)``                      :func:`~calib_frames.nll_sums`
``perplexity(...)``                    :func:`~calib_frames.perplexity`
``perplexity_from_nll_sums()``         :func:`~calib_frames.perplexity_from_nll_sums`
``merge_nll_sums(*others)``            :func:`~calib_frames.merge_nll_sums`
``comparison_table(perplexity)``       :func:`~calib_frames.comparison_table`
=====================================  ==============================================

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

from collections.abc import Sequence
from typing import Generic

import polars as pl

from calib_frames.binning import BinsLike
from calib_frames.comparison.side_by_side import comparison_table
from calib_frames.metrics.calibration import (
    MCE_MIN_COUNT,
    calibration_metrics,
    metrics_from_bin_statistics,
)
from calib_frames.metrics.tokens import perplexity, perplexity_from_nll_sums
from calib_frames.nll import merge_nll_sums, nll_sums
from calib_frames.stats import bin_statistics, merge_bin_statistics, reliability_table
from calib_frames.validation import Frame

__all__ = ["CalibNamespace"]


class CalibNamespace(Generic[Frame]):
    """Calibration and perplexity methods of a DataFrame or LazyFrame.

    Parameters
    ----------
    frame
        The DataFrame or LazyFrame the namespace is attached to.
    """

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
        log_confidence: str | None = None,
    ) -> Frame:
        """Per (group, bin) additive sums: :func:`calib_frames.bin_statistics`.

        Parameters
        ----------
        confidence, correct, by, bins, weight, log_confidence
            As in :func:`calib_frames.bin_statistics`.

        Returns
        -------
        DataFrame or LazyFrame
            The bin-statistics table.
        """
        return bin_statistics(
            self._frame,
            confidence=confidence,
            correct=correct,
            by=by,
            bins=bins,
            weight=weight,
            log_confidence=log_confidence,
        )

    def reliability_table(
        self,
        *,
        confidence: str = "confidence",
        correct: str = "correct",
        by: str | Sequence[str] | None = None,
        bins: BinsLike = 10,
        weight: str | None = None,
    ) -> Frame:
        """Reliability-diagram data: :func:`calib_frames.reliability_table`.

        Parameters
        ----------
        confidence, correct, by, bins, weight
            As in :func:`calib_frames.reliability_table`.

        Returns
        -------
        DataFrame or LazyFrame
            The reliability table.
        """
        return reliability_table(
            self._frame, confidence=confidence, correct=correct, by=by, bins=bins, weight=weight
        )

    def calibration_metrics(
        self,
        *,
        confidence: str = "confidence",
        correct: str = "correct",
        by: str | Sequence[str] | None = None,
        bins: BinsLike = 10,
        weight: str | None = None,
        log_confidence: str | None = None,
        mce_min_count: int = MCE_MIN_COUNT,
    ) -> Frame:
        """Per-group calibration metrics: :func:`calib_frames.calibration_metrics`.

        Parameters
        ----------
        confidence, correct, by, bins, weight, log_confidence, mce_min_count
            As in :func:`calib_frames.calibration_metrics`.

        Returns
        -------
        DataFrame or LazyFrame
            The metrics table.
        """
        return calibration_metrics(
            self._frame,
            confidence=confidence,
            correct=correct,
            by=by,
            bins=bins,
            weight=weight,
            log_confidence=log_confidence,
            mce_min_count=mce_min_count,
        )

    def metrics_from_bin_statistics(self, *, mce_min_count: int = MCE_MIN_COUNT) -> Frame:
        """Metrics of this bin-statistics table: :func:`calib_frames.metrics_from_bin_statistics`.

        Parameters
        ----------
        mce_min_count
            As in :func:`calib_frames.metrics_from_bin_statistics`.

        Returns
        -------
        DataFrame or LazyFrame
            The metrics table.
        """
        return metrics_from_bin_statistics(self._frame, mce_min_count=mce_min_count)

    def merge_bin_statistics(self, *tables: Frame, by: str | Sequence[str] | None = None) -> Frame:
        """Merge this table with others: :func:`calib_frames.merge_bin_statistics`.

        Parameters
        ----------
        *tables
            The other bin-statistics tables.
        by
            Keys to keep (a roll-up); ``None`` keeps all.

        Returns
        -------
        DataFrame or LazyFrame
            The merged table.
        """
        return merge_bin_statistics(self._frame, *tables, by=by)

    def nll_sums(
        self,
        *,
        nll: str = "nll",
        tokens: str | int | None = None,
        bytes: str | None = None,
        words: str | None = None,
        by: str | Sequence[str] | None = None,
        log_probs: bool = False,
    ) -> Frame:
        """Per-group additive NLL sums: :func:`calib_frames.nll_sums`.

        Parameters
        ----------
        nll, tokens, bytes, words, by, log_probs
            As in :func:`calib_frames.nll_sums`.

        Returns
        -------
        DataFrame or LazyFrame
            The NLL-sums table.
        """
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
        tokens: str | int | None = None,
        bytes: str | None = None,
        words: str | None = None,
        by: str | Sequence[str] | None = None,
        log_probs: bool = False,
    ) -> Frame:
        """Per-group perplexity family: :func:`calib_frames.perplexity`.

        Parameters
        ----------
        nll, tokens, bytes, words, by, log_probs
            As in :func:`calib_frames.perplexity`.

        Returns
        -------
        DataFrame or LazyFrame
            The perplexity table.
        """
        return perplexity(
            self._frame,
            nll=nll,
            tokens=tokens,
            bytes=bytes,
            words=words,
            by=by,
            log_probs=log_probs,
        )

    def perplexity_from_nll_sums(self) -> Frame:
        """Perplexity of this NLL-sums table: :func:`calib_frames.perplexity_from_nll_sums`.

        Returns
        -------
        DataFrame or LazyFrame
            The perplexity table.
        """
        return perplexity_from_nll_sums(self._frame)

    def merge_nll_sums(self, *tables: Frame, by: str | Sequence[str] | None = None) -> Frame:
        """Merge this table with others: :func:`calib_frames.merge_nll_sums`.

        Parameters
        ----------
        *tables
            The other NLL-sums tables.
        by
            Keys to keep (a roll-up); ``None`` keeps all.

        Returns
        -------
        DataFrame or LazyFrame
            The merged table.
        """
        return merge_nll_sums(self._frame, *tables, by=by)

    def comparison_table(self, perplexity: Frame) -> Frame:
        """Join this metrics table with a perplexity table: :func:`calib_frames.comparison_table`.

        Parameters
        ----------
        perplexity
            The perplexity table.

        Returns
        -------
        DataFrame or LazyFrame
            The comparison table.
        """
        return comparison_table(self._frame, perplexity)


pl.api.register_dataframe_namespace("calib")(CalibNamespace)
pl.api.register_lazyframe_namespace("calib")(CalibNamespace)
