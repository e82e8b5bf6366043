r"""HELM's calibration suite, per group, as HELM computes it.

HELM (``helm.benchmark.metrics.calibration_metrics``) reports, for each run and
perturbation context, eight figures from the per-instance ``max_prob`` (p) and
``exact_match`` (y, truncated to an integer: partial credit below 1 counts as wrong),
through the ``uncertainty-calibration`` package (``import calibration``):

``ece_10_bin``
    ``get_ece_em(p, y, num_bins=10)``: equal-mass ECE. The sorted p are split by position
    into min(10, n) parts as ``numpy.array_split`` does (the first n mod k parts one row
    longer); the edges are the midpoints between adjacent parts, plus 1.0, deduplicated;
    a row's bin is the number of edges below it (``numpy.searchsorted``, side left: bins
    are right-closed, (e₋, e]). ECE = Σ_b (n_b/n)·|mean p_b − mean y_b|.
``ece_1_bin``
    ``get_ece(p, y, num_bins=1)``: |mean p − mean y|.
``selective_cov_acc_area``, ``selective_acc@10``
    ``get_selective_stats``: with the rows sorted by p descending, acc_k the accuracy of
    the first k, the mean of acc_1 … acc_n, and acc at index ``int(0.1·n)`` (the top
    ``int(0.1·n) + 1`` rows: 3 of 20).
``platt_coef``, ``platt_intercept``, ``platt_ece_10_bin``, ``platt_ece_1_bin``
    ``get_platt_scaler``: a logistic regression of y on logit(clip(p, 1e-12, 1 − 1e-12)),
    fitted and evaluated **in-sample** (on the same rows), then the two ECEs of the
    recalibrated p. When every y is equal HELM writes 0.0 for both Platt ECEs and no
    coefficient: here the ECEs are 0.0 and the coefficient and intercept are null.

Where HELM's conventions differ from calib_frames' own
------------------------------------------------------
* **Equal-mass bins**: HELM's edges are midpoints between the parts of a split by
  position, and its bins are right-closed; :meth:`calib_frames.Binning.quantile` ranks
  within each group and never splits tied confidences across bins, with left-closed
  bins. The two ECEs differ on the same data.
* **Ties in the selective figures**: HELM orders tied confidences by numpy's (unstable)
  ``argsort``, so its figures can depend on the row order. Here ties keep the rows'
  input order (a stable sort), which is numpy's order whenever the tied rows share their
  outcome; :func:`calib_frames.estimators.selective.selective_metrics` averages over tie
  groups instead (AURC = 1 − ``selective_cov_acc_area`` without ties) and interpolates
  accuracy at a coverage rather than rounding it to a row.
* **Platt scaling**: HELM's scikit-learn ``LogisticRegression(C=1e10, solver="lbfgs")``
  stops at a gradient tolerance of 1e-4; here the maximum-likelihood fit of
  :func:`~calib_frames.recalibrate.fit_platt` (Newton's method to 1e-10) is used, so
  coefficient and intercept agree with HELM's to about 1e-4, and ``platt_ece_1_bin``,
  which is exactly 0 at the maximum-likelihood fit (the intercept's score equation makes
  mean σ equal mean y), is ~1e-16 here where HELM shows the optimiser's residue (1e-7
  to 1e-5). Classes that the confidence separates have no finite maximum-likelihood fit
  (HELM's tiny penalty keeps it finite but arbitrary).

Per group, in memory. HELM computes nothing when no instance has a negative log-prob
(no logprobs); that check belongs to the reader, not to this function.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import polars as pl

from calib_frames.estimators._groups import P, Y, attach, group_rows, grouped
from calib_frames.recalibrate.platt import apply_platt, fit_platt
from calib_frames.schema import HELM_CALIBRATION
from calib_frames.validation import Frame

__all__ = ["helm_calibration"]

F64Array = npt.NDArray[np.float64]
I64Array = npt.NDArray[np.int64]

_RECALIBRATED = "platt_confidence"  # apply_platt's output (keys may not take the name)
_EPSILON = 1e-12  # get_platt_scaler's clipping
_BINS = 10


def helm_calibration(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    by: str | Sequence[str] | None = None,
) -> Frame:
    """HELM's calibration figures per group: equal-mass ECE, selective stats, Platt.

    Per group, in memory; the definitions, and where they differ from calib_frames' own
    conventions, are in the module docstring. Column names are HELM's stat names, so a
    table of HELM runs and this one line up.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame, one row per instance (HELM: per instance and
        perturbation; put the perturbation in ``by``).
    confidence
        Column of confidences in [0, 1] (HELM's ``max_prob``).
    correct
        Column of outcomes, boolean or 0/1 (HELM's ``exact_match``; truncate partial
        credit first, as HELM does with ``int``).
    by
        Group key column(s); ``None`` treats the whole frame as one group.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Group keys, then ``count``, ``ece_10_bin``, ``ece_1_bin``,
        ``selective_cov_acc_area``, ``selective_acc@10``, ``platt_ece_10_bin``,
        ``platt_ece_1_bin``, ``platt_coef``, ``platt_intercept`` (null where a group has
        one class) and ``in_sample`` (True: the Platt figures are fitted and scored on
        the same rows), one row per group sorted by the keys. An empty frame without
        keys gives one row with count 0 and null figures.

    Raises
    ------
    TableError
        Missing or non-numeric columns, keys clashing with output names.
    DataError
        Confidences outside [0, 1] (or null/NaN), outcomes not boolean or 0/1.

    See Also
    --------
    calib_frames.sources.scan_helm_instances : HELM run folders as these rows
        (``by=["model", "perturbation"]`` gives the runs' ``stats.json`` figures).
    calib_frames.estimators.selective.selective_metrics : AURC with averaged ties.
    calib_frames.recalibrate.fit_platt : the Platt fit, with its diagnostics.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.recalibrate import helm_calibration
    >>> df = pl.DataFrame(
    ...     {"confidence": [0.95, 0.9, 0.8, 0.7, 0.6, 0.55], "correct": [1, 1, 0, 1, 0, 0]}
    ... )
    >>> out = helm_calibration(df)
    >>> out.select(pl.col("ece_10_bin", "ece_1_bin", "selective_acc@10").round(4))
    shape: (1, 3)
    ┌────────────┬───────────┬──────────────────┐
    │ ece_10_bin ┆ ece_1_bin ┆ selective_acc@10 │
    │ ---        ┆ ---       ┆ ---              │
    │ f64        ┆ f64       ┆ f64              │
    ╞════════════╪═══════════╪══════════════════╡
    │ 0.4        ┆ 0.25      ┆ 1.0              │
    └────────────┴───────────┴──────────────────┘
    """
    prepared = group_rows(
        predictions, confidence=confidence, correct=correct, by=by, weight=None,
        columns=HELM_CALIBRATION.columns, reserved=(_RECALIBRATED,),
    )  # fmt: skip
    keys, schema = prepared.keys, prepared.schema

    def compute(frame: pl.DataFrame) -> pl.DataFrame:
        if frame.height == 0:
            return _empty(keys, schema)
        recalibrated, params = _platt(frame, keys)
        group, table, n_groups, values = grouped(recalibrated, keys)
        p = values[P].to_numpy().astype(np.float64)
        y = values[Y].to_numpy().astype(np.float64)
        fitted = values[_RECALIBRATED].to_numpy().astype(np.float64)  # NaN: one class
        positives = np.bincount(group, weights=y, minlength=n_groups)
        two_classes = (positives > 0) & (positives < np.bincount(group, minlength=n_groups))
        area, top = _selective_stats(group, p, y, n_groups)
        platt_10 = _ece_equal_mass(group, np.where(np.isnan(fitted), p, fitted), y, n_groups)
        platt_1 = _ece_one_bin(group, np.where(np.isnan(fitted), p, fitted), y, n_groups)
        coef = (
            table.join(params, on=keys, how="left", maintain_order="left", nulls_equal=True)
            if keys
            else params
        )
        slope = coef["slope"].to_numpy() if coef.height else np.full(n_groups, np.nan)
        intercept = coef["intercept"].to_numpy() if coef.height else np.full(n_groups, np.nan)
        figures: dict[str, F64Array] = {
            "ece_10_bin": _ece_equal_mass(group, p, y, n_groups),
            "ece_1_bin": _ece_one_bin(group, p, y, n_groups),
            "selective_cov_acc_area": area,
            "selective_acc@10": top,
            "platt_ece_10_bin": np.where(two_classes, platt_10, 0.0),
            "platt_ece_1_bin": np.where(two_classes, platt_1, 0.0),
            "platt_coef": np.where(two_classes, slope.astype(np.float64), np.nan),
            "platt_intercept": np.where(two_classes, intercept.astype(np.float64), np.nan),
        }
        count = pl.Series("count", np.bincount(group, minlength=n_groups)).cast(pl.UInt64)
        series: list[pl.Series] = [
            pl.Series(name, value, dtype=pl.Float64).fill_nan(None)
            for name, value in figures.items()
        ]
        return attach(table, [count, *series, pl.Series("in_sample", [True] * n_groups)])

    return prepared.result(predictions, compute)


def _platt(frame: pl.DataFrame, keys: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rows with their in-sample Platt-recalibrated confidence, and the fit per group.

    Groups of one class are not fitted (HELM does not either); their recalibrated
    confidence is null, their parameters absent.
    """
    y = pl.col(Y)
    both = (y.min() < y.max()).over(keys) if keys else (y.min() < y.max())
    two_class = frame.filter(both)
    if two_class.height == 0:
        params = pl.DataFrame(
            schema={
                **{k: frame.schema[k] for k in keys},
                "slope": pl.Float64,
                "intercept": pl.Float64,
            }
        )
        return frame.with_columns(pl.lit(None, pl.Float64).alias(_RECALIBRATED)), params
    fitted = fit_platt(
        two_class, confidence=P, correct=Y, by=keys or None, in_sample=True, epsilon=_EPSILON
    )
    assert isinstance(fitted, pl.DataFrame)
    recalibrated = apply_platt(
        frame, fitted, confidence=P, output=_RECALIBRATED, epsilon=_EPSILON
    ).drop("in_sample")
    assert isinstance(recalibrated, pl.DataFrame)
    return recalibrated, fitted.select(*keys, "slope", "intercept")


def _ece_one_bin(group: I64Array, p: F64Array, y: F64Array, n_groups: int) -> F64Array:
    """|mean p − mean y| per group (``get_ece(num_bins=1)``)."""
    n = np.bincount(group, minlength=n_groups)
    mean_p = np.bincount(group, weights=p, minlength=n_groups) / n
    mean_y = np.bincount(group, weights=y, minlength=n_groups) / n
    result: F64Array = np.abs(mean_p - mean_y)
    return result


def _ece_equal_mass(group: I64Array, p: F64Array, y: F64Array, n_groups: int) -> F64Array:
    """``get_ece_em(p, y, num_bins=10)`` per group (edges as the module docstring)."""
    order = np.lexsort((p, group))
    group, p, y = group[order], p[order], y[order]
    n = np.bincount(group, minlength=n_groups)
    first = np.r_[0, np.cumsum(n)[:-1]]
    parts = np.minimum(n, _BINS)
    quotient, remainder = n // np.maximum(parts, 1), n % np.maximum(parts, 1)
    j = np.arange(_BINS - 1)[None, :]
    # the end (exclusive) of part j of numpy.array_split, for j < parts − 1
    end = (j + 1) * quotient[:, None] + np.minimum(j + 1, remainder[:, None])
    valid = j < (parts - 1)[:, None]
    end = np.where(valid, first[:, None] + end, 1)
    midpoint = (p[end - 1] + p[np.minimum(end, p.size - 1)]) / 2.0
    distinct = valid & np.r_["1", np.ones((n_groups, 1), bool), midpoint[:, 1:] != midpoint[:, :-1]]
    edges = np.where(distinct, midpoint, np.inf)  # (G, 9); inf: no edge
    bin_ = (edges[group] < p[:, None]).sum(axis=1)
    cell = group * _BINS + bin_
    size = np.bincount(cell, minlength=n_groups * _BINS).reshape(n_groups, _BINS)
    sum_p = np.bincount(cell, weights=p, minlength=n_groups * _BINS).reshape(n_groups, _BINS)
    sum_y = np.bincount(cell, weights=y, minlength=n_groups * _BINS).reshape(n_groups, _BINS)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(size > 0, np.abs(sum_p / size - sum_y / size), 0.0)
    result: F64Array = (size / n[:, None] * gap).sum(axis=1)
    return result


def _selective_stats(
    group: I64Array, p: F64Array, y: F64Array, n_groups: int
) -> tuple[F64Array, F64Array]:
    """``get_selective_stats``: mean prefix accuracy and the accuracy at int(0.1·n)."""
    order = np.lexsort((-p, group))  # stable: ties keep the input order
    group, y = group[order], y[order]
    n = np.bincount(group, minlength=n_groups)
    first = np.r_[0, np.cumsum(n)[:-1]]
    hits = np.cumsum(y)
    hits -= np.r_[0.0, hits][first][group]
    position = np.arange(group.size) - first[group] + 1
    accuracy = hits / position
    area = np.bincount(group, weights=accuracy, minlength=n_groups) / n
    top = accuracy[first + (0.1 * n).astype(np.int64)]
    return area, top


def _empty(keys: list[str], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    if keys:
        return pl.DataFrame(schema=schema)
    values: dict[str, list[object]] = {name: [None] for name in schema}
    values.update(count=[0], in_sample=[True])
    return pl.DataFrame(values, schema=schema)
