r"""Histogram binning (Zadrozny and Elkan 2001): a confidence becomes the accuracy of its bin.

Fit: the bin statistics of the fit rows (:func:`calib_frames.bin_statistics`, the same
additive table as every binned metric, so the fit streams and merges) give, per group
and bin, the fit-split accuracy Σ w·y / Σ w. Apply: each row's confidence is assigned
to its bin with the same :class:`~calib_frames.Binning` (same edges, same closedness)
and replaced by that bin's accuracy.

An empty fit bin has no accuracy; it maps to the bin's midpoint (netcal's
``HistogramBinning`` convention), so a confidence that falls there on the apply split
moves at most half a bin width. Bins are fixed edges (``bins=`` an int or a sequence of
edges, or a fixed-edge Binning); equal-mass bins, whose edges differ per group, are
refused.

Conventions of the peers: netcal fits with ``binned_statistic_dd`` (left-closed, last
bin closed at 1) but applies with ``np.digitize(..., right=True)`` (right-closed), so
only confidences exactly on an inner edge are binned differently at fit and at apply
there; ``Binning.like_netcal`` reproduces its fit. netcal also clips confidences to
[ε, 1 − ε] first, which moves nothing across a bin edge except 0 and 1 themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import polars as pl

from calib_frames.arguments import check_arguments
from calib_frames.binning import FIXED_BINS, Binning, BinsLike, as_binning
from calib_frames.exceptions import TableError
from calib_frames.recalibrate import _core
from calib_frames.recalibrate._apply import (
    APPLIED,
    ApplyInput,
    apply_input,
    param,
    with_mapped,
)
from calib_frames.recalibrate.splits import SCHEME, fit_scheme
from calib_frames.schema import HISTOGRAM
from calib_frames.stats import bin_statistics
from calib_frames.validation import Frame, as_lazy, return_like

__all__ = ["apply_histogram", "fit_histogram"]


@check_arguments(bins=FIXED_BINS, **SCHEME)
def fit_histogram(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    split: str | None = None,
    fit_value: object = "fit",
    fold: str | None = None,
    in_sample: bool = False,
) -> Frame:
    """Fit histogram binning: per group and bin, the accuracy of the fit rows.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame with one row per prediction.
    confidence, correct
        As in :func:`calib_frames.bin_statistics`.
    by
        Group key column(s) (``None``: one map for the frame).
    bins
        Fixed bins: an int (equal width, left-closed, last bin closed at 1), edges, or a
        Binning (not equal-mass).
    weight
        Optional row weights, as in :func:`calib_frames.bin_statistics`.
    split, fit_value, fold, in_sample
        The fitting scheme (:mod:`calib_frames.recalibrate.splits`).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input; lazy stays lazy: this fit is the
    additive bin-statistics pass)
        Keys…, [fold], then the columns of :data:`calib_frames.schema.HISTOGRAM`:
        ``bin``, ``bin_lower``, ``bin_upper``, ``closed``, ``count`` and ``weight`` (fit
        rows in the bin), ``value`` (their accuracy; the bin midpoint for an empty bin),
        ``fitted_on``, ``in_sample``.

    Raises
    ------
    TableError, DataError, ArgumentError
        As :func:`calib_frames.bin_statistics`; equal-mass bins (ArgumentError); a
        ``split=`` column with no row equal to ``fit_value`` (DataError).

    See Also
    --------
    apply_histogram : the recalibrated confidences.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import fit_histogram
    >>> df = pl.DataFrame({"confidence": [0.1, 0.2, 0.8, 0.9], "correct": [0, 1, 1, 1]})
    >>> fit_histogram(df, bins=2).select("bin", "count", "value").rows()
    [(0, 2, 0.5), (1, 2, 1.0)]
    """
    binning = as_binning(bins)
    scheme = fit_scheme(split=split, fit_value=fit_value, fold=fold, in_sample=in_sample)
    fit = _core.binary_fit_rows(
        predictions, HISTOGRAM, scheme, by=by, confidence=confidence, correct=correct, weight=weight
    )
    # the rows are checked by the bin-statistics pass itself (additive: lazy stays lazy)
    stats = bin_statistics(
        fit.rows,
        confidence=confidence,
        correct=correct,
        by=fit.keys or None,
        bins=binning,
        weight=weight,
    )
    midpoint = (pl.col("bin_lower") + pl.col("bin_upper")) / 2.0
    table = stats.select(
        *fit.keys,
        "bin",
        "bin_lower",
        "bin_upper",
        "closed",
        "count",
        "weight",
        pl.when(pl.col("weight") > 0).then(pl.col("accuracy")).otherwise(midpoint).alias("value"),
        *scheme.labels(),
    )
    if not fit.keys:
        # bin_statistics keeps an empty frame's bins; a frame without rows fits nothing
        table = table.filter(pl.col("count").sum() > 0)
    return return_like(predictions, _core.fingerprinted(as_lazy(table), fit))


@check_arguments(**APPLIED)
def apply_histogram(
    predictions: Frame,
    params: pl.DataFrame | pl.LazyFrame,
    *,
    confidence: str = "confidence",
    output: str = "recalibrated",
    split: str | None = None,
    fit_value: object = "fit",
) -> Frame:
    """Replace each confidence by the fit accuracy of its bin: a lazy join on keys and bin.

    The bins are rebuilt from the parameters' edges and closedness, so a confidence lands
    in the same bin as it would have at fit time.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame with the parameters' keys (and fold) and ``confidence``.
    params
        The table returned by :func:`fit_histogram` (read once, at call time).
    confidence, output
        Input column and the name of the new column.
    split, fit_value
        If given, rows whose ``split`` equals ``fit_value`` are labelled in-sample.

    Returns
    -------
    DataFrame or LazyFrame (same kind as ``predictions``)
        ``predictions`` with ``output`` (null where the group has no parameters or the
        confidence is outside the bins) and ``in_sample``; row order kept.

    Raises
    ------
    TableError
        Missing columns, parameters that are not one binning (or repeat a bin), an
        existing ``output``.
    DataError
        Parameter values outside [0, 1] (e.g. a hand-edited table).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import apply_histogram, fit_histogram
    >>> fit = pl.DataFrame({"confidence": [0.1, 0.2, 0.8, 0.9], "correct": [0, 1, 1, 1]})
    >>> params = fit_histogram(fit, bins=2)
    >>> apply_histogram(pl.DataFrame({"confidence": [0.3, 0.5, 1.0]}), params)[
    ...     "recalibrated"
    ... ].to_list()
    [0.5, 1.0, 1.0]
    """
    applied: ApplyInput = apply_input(
        predictions,
        params,
        HISTOGRAM,
        columns={"confidence": confidence},
        output=output,
        split=split,
        fit_value=fit_value,
        values={"value": (pl.col("value").is_between(0.0, 1.0), "not in [0, 1]")},
        within=["bin"],
    )
    binning = _binning_of(applied.params)
    low, high = binning.range
    p = pl.col(confidence).cast(pl.Float64)
    bin_key = pl.when(p.is_between(low, high)).then(binning.assign(p)).alias(param("bin"))
    binned = replace(
        applied,
        predictions=applied.predictions.with_columns(bin_key),
        params=applied.params.rename({"bin": param("bin")}),
    )
    result = with_mapped(binned, pl.col(param("value")), ["value"], output=output, split=split,
                         fit_value=fit_value, source=confidence, within=[param("bin")])  # fmt: skip
    return return_like(predictions, result)


def _binning_of(table: pl.DataFrame) -> Binning:
    """The Binning whose bins the parameters table holds (one for every group)."""
    bins = table.select("bin", "bin_lower", "bin_upper", "closed").unique().sort("bin")
    if bins.height == 0:
        return Binning.uniform(1)
    if bins["bin"].n_unique() != bins.height or bins["closed"].n_unique() != 1:
        raise TableError(
            "the histogram-binning parameters do not hold one binning for every group "
            "(bins with different edges or closedness); fit them with one bins= value"
        )
    closed = bins["closed"][0]
    if closed not in ("left", "right"):
        raise TableError(f"histogram-binning parameters have closed={closed!r}")
    lower, upper = bins["bin_lower"].to_list(), bins["bin_upper"].to_list()
    n = len(lower)
    if lower == [k / n for k in range(n)] and upper == [(k + 1) / n for k in range(n)]:
        return Binning.uniform(n, closed=closed)
    if bins["bin"].to_list() != list(range(n)) or lower[1:] != upper[:-1]:
        raise TableError("the histogram-binning parameters' bins are not contiguous")
    return Binning.edges([*lower, upper[-1]], closed=closed)
