"""The array API: numpy arrays in, plain numbers out — a thin layer over the frame engine.

Use it for one set of predictions at a time; for groups, lazy frames or data larger
than memory use the frame functions (:func:`~calib_frames.calibration_metrics`, ...).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from calib_frames.binning import BinsLike, as_binning
from calib_frames.exceptions import DataError
from calib_frames.metrics.calibration import metrics_from_bin_statistics
from calib_frames.metrics.tokens import perplexity
from calib_frames.stats import bin_statistics

__all__ = ["BrierDecomposition", "CalibrationReport", "PerplexityResult"]

ArrayLike = npt.ArrayLike


def _column(name: str, values: ArrayLike) -> pl.Series:
    array = np.asarray(values)
    if array.ndim != 1:
        raise DataError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.dtype == object:
        raise DataError(f"{name} must be numeric or boolean, got dtype object")
    return pl.Series(name, array)


def _same_length(**series: pl.Series) -> None:
    lengths = {name: s.len() for name, s in series.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name} has {n:,}" for name, n in lengths.items())
        raise DataError(f"arrays must have the same length: {detail}")


@dataclass(frozen=True)
class BrierDecomposition:
    """Terms of the binned Brier decomposition; :attr:`total` adds them up.

    brier = reliability − resolution + uncertainty + within_bin_variance
    + within_bin_covariance (see :mod:`calib_frames.metrics.calibration`).
    """

    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float

    @property
    def total(self) -> float:
        """The sum of the terms, equal to the Brier score up to rounding."""
        return (
            self.reliability
            - self.resolution
            + self.uncertainty
            + self.within_bin_variance
            + self.within_bin_covariance
        )


@dataclass(frozen=True)
class CalibrationReport:
    """Calibration of one set of predictions.

    Attributes
    ----------
    ece, rmsce, mce, brier, log_loss, accuracy, mean_confidence : float
        As defined in :mod:`calib_frames.metrics.calibration` (``mce`` the textbook
        maximum gap over the populated bins); NaN when the weights sum to 0 (the frame
        API's null: no weight, no number).
    mce_guarded : float or None
        The MCE over bins of at least 10 predictions (None when no bin has that many).
    decomposition : BrierDecomposition
        The Brier score's terms.
    populated_bins : int
        Bins holding at least one prediction.
    reliability : tuple of three numpy arrays
        Per bin: mean confidence, accuracy and count (zero-filled for empty bins).
    bin_edges : numpy array or None
        The M + 1 edges (None for equal-mass bins).

    Examples
    --------
    >>> import numpy as np
    >>> r = CalibrationReport.from_predictions(np.full(10, 0.25), np.arange(10) < 6)
    >>> round(r.ece, 12), r.populated_bins
    (0.35, 1)
    >>> r.reliability[2][2], r.reliability[1][2]
    (np.int64(10), np.float64(0.6))

    The seeds' worked example: confidences 0.80, 0.50, 0.55, right, right, wrong, in the
    right-closed bins (0, 0.4], (0.4, 0.6], (0.6, 1]: the gaps are 0.2 and 0.025.

    >>> from calib_frames import Binning
    >>> seeds = CalibrationReport.from_predictions(
    ...     [0.80, 0.50, 0.55], [1, 1, 0], Binning.edges([0, 0.4, 0.6, 1], closed="right"))
    >>> round(seeds.mce, 12), seeds.mce_guarded
    (0.2, None)
    """

    ece: float
    rmsce: float
    mce: float
    mce_guarded: float | None
    brier: float
    log_loss: float
    accuracy: float
    mean_confidence: float
    decomposition: BrierDecomposition
    populated_bins: int
    reliability: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64]]
    bin_edges: npt.NDArray[np.float64] | None

    @classmethod
    def from_predictions(
        cls,
        confidences: ArrayLike,
        correct: ArrayLike,
        bins: BinsLike = 10,
        *,
        weights: ArrayLike | None = None,
    ) -> CalibrationReport:
        """Compute the report from arrays of confidences and 0/1 (or boolean) outcomes."""
        columns = {
            "confidence": _column("confidence", confidences),
            "correct": _column("correct", correct),
        }
        if weights is not None:
            columns["weight"] = _column("weight", weights)
        _same_length(**columns)
        frame = pl.DataFrame(list(columns.values()))
        stats = bin_statistics(frame, bins=bins, weight="weight" if weights is not None else None)
        row: dict[str, Any] = metrics_from_bin_statistics(stats).row(0, named=True)
        edge_values = as_binning(bins).edge_values()

        def number(name: str) -> float:  # null (no weight) is NaN among plain numbers
            value = row[name]
            return math.nan if value is None else float(value)

        return cls(
            ece=number("ece"),
            rmsce=number("rmsce"),
            mce=number("mce"),
            mce_guarded=row["mce_guarded"],
            brier=number("brier"),
            log_loss=number("log_loss"),
            accuracy=number("accuracy"),
            mean_confidence=number("mean_confidence"),
            decomposition=BrierDecomposition(
                **{name: number(name) for name in BrierDecomposition.__dataclass_fields__}
            ),
            populated_bins=row["populated_bins"],
            reliability=(
                stats["mean_confidence"].fill_null(0.0).to_numpy(),
                stats["accuracy"].fill_null(0.0).to_numpy(),
                stats["count"].to_numpy().astype(np.int64),
            ),
            bin_edges=None if edge_values is None else np.array(edge_values),
        )


@dataclass(frozen=True)
class PerplexityResult:
    """Perplexity of one set of token (or sequence) negative log-likelihoods.

    Examples
    --------
    >>> r = PerplexityResult.from_token_nll([4.0, 6.0], token_counts=[2, 3])
    >>> r.mean_nll, r.tokens
    (2.0, 5)
    >>> round(r.perplexity, 6)
    7.389056
    """

    perplexity: float
    mean_nll: float
    bits_per_token: float
    nll_sum: float
    tokens: int

    @classmethod
    def from_token_nll(
        cls, neg_log_probs: ArrayLike, token_counts: ArrayLike | Sequence[int] | None = None
    ) -> PerplexityResult:
        """From per-token NLLs (nats), or per-sequence summed NLLs with their token counts."""
        columns = {"nll": _column("nll", neg_log_probs)}
        if token_counts is not None:
            columns["tokens"] = _column("tokens", token_counts)
        _same_length(**columns)
        frame = pl.DataFrame(list(columns.values()))
        row = perplexity(frame, tokens="tokens" if token_counts is not None else 1).row(
            0, named=True
        )
        return cls(
            perplexity=row["perplexity"],
            mean_nll=row["mean_nll"],
            bits_per_token=row["bits_per_token"],
            nll_sum=row["nll_sum"],
            tokens=row["tokens"],
        )
