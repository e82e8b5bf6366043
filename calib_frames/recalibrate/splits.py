"""Honest fitting: which rows a recalibration map is fitted on, and which rows it scores.

Recalibration maps fitted and scored on the same rows look better than they are (the
map has seen the outcomes it is judged on). Every ``fit_*`` function of
:mod:`calib_frames.recalibrate` therefore takes one of four *fitting schemes*, and the
scheme is written into every output as the columns ``fitted_on`` (String) and
``in_sample`` (Boolean):

==============  ===================================================  ==============
``fitted_on``   how it is asked for                                  ``in_sample``
==============  ===================================================  ==============
``"frame"``     nothing: every row of the frame given to ``fit_*``   False
                is fit data (the "two frames" way: fit on one frame,
                apply to another)
``"split"``     ``split="split"``: the rows whose ``split`` column   False (the rows
                equals ``fit_value`` (default ``"fit"``)             of the fit split
                                                                     are labelled True
                                                                     when applied)
``"cross_fit"`` ``fold="fold"`` (a fold column, e.g. from            False
                :func:`assign_folds`): one map per (group, fold),
                fitted on the group's *other* folds, applied to
                the fold's own rows
``"in_sample"`` ``in_sample=True``: fit on every row, score the      True
                same rows (HELM's in-sample Platt scaling); only
                on this explicit request
==============  ===================================================  ==============

A map fitted on a whole frame (``"frame"``) and applied to that same frame would score
its own fit rows as if they were new: the parameters table therefore holds, per group,
``fit_fingerprint`` (a UInt64: the wrapping sum of the hashes of the fit rows'
confidences, or option log-likelihoods; null under the other schemes), and ``apply_*``
labels ``in_sample=True`` every row of a group whose rows have the same fingerprint, so
:func:`~calib_frames.recalibrate.recalibration_metrics` refuses to score them as it
does for :func:`~calib_frames.recalibrate.recalibrate`. Only the same rows are
recognised (in any order): a frame that adds rows to the fit rows, or leaves some out, is
not; the hash is polars' and stable for a given polars version.

Folds are deterministic: :func:`assign_folds` hashes an item-id column with a seed
(polars' ``Expr.hash``, stable for a given polars version) and takes the remainder, so
the same item gets the same fold in every run and in every frame that holds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from calib_frames.arguments import COLUMN, FLAG, SEED, Constraint, Integer, check_arguments
from calib_frames.exceptions import ArgumentError, DataError, TableError
from calib_frames.validation import (
    Frame,
    RowCheck,
    as_lazy,
    check_rows,
    return_like,
    working,
)

__all__ = ["FitScheme", "assign_folds", "fit_scheme"]

FittedOn = Literal["frame", "split", "cross_fit", "in_sample"]
_HELD_OUT = working("held_out")
_FOLDS = working("folds")

SCHEME: dict[str, Constraint] = {"split": COLUMN | None, "fold": COLUMN | None, "in_sample": FLAG}
"""The constraints of the fitting-scheme arguments of :func:`fit_scheme` and every ``fit_*``."""


@dataclass(frozen=True)
class FitScheme:
    """Which rows a map is fitted on (see the module docstring).

    Attributes
    ----------
    fitted_on
        ``"frame"``, ``"split"``, ``"cross_fit"`` or ``"in_sample"``.
    split, fit_value
        The split column and the value that marks fit rows (scheme ``"split"``).
    fold
        The fold column (scheme ``"cross_fit"``).
    """

    fitted_on: FittedOn
    split: str | None = None
    fit_value: object = "fit"
    fold: str | None = None

    @property
    def in_sample(self) -> bool:
        """Whether the map is meant to score the rows it was fitted on."""
        return self.fitted_on == "in_sample"

    def labels(self) -> list[pl.Expr]:
        """The ``fitted_on`` and ``in_sample`` columns of a parameters table."""
        return [
            pl.lit(self.fitted_on, dtype=pl.String).alias("fitted_on"),
            pl.lit(self.in_sample, dtype=pl.Boolean).alias("in_sample"),
        ]


@check_arguments(**SCHEME)
def fit_scheme(
    *,
    split: str | None = None,
    fit_value: object = "fit",
    fold: str | None = None,
    in_sample: bool = False,
) -> FitScheme:
    """Build the :class:`FitScheme` named by the arguments of a ``fit_*`` function.

    Parameters
    ----------
    split
        Column whose value ``fit_value`` marks the fit rows (scheme ``"split"``).
    fit_value
        The value of ``split`` on fit rows (default ``"fit"``).
    fold
        Fold column for cross-fitting (scheme ``"cross_fit"``).
    in_sample
        Fit and score the same rows (scheme ``"in_sample"``).

    Returns
    -------
    FitScheme
        ``"frame"`` when nothing is asked for (every row of the frame is fit data).

    Raises
    ------
    ArgumentError
        If more than one scheme is asked for, or an argument has the wrong type.

    Examples
    --------
    >>> fit_scheme(split="split").fitted_on
    'split'
    >>> fit_scheme(in_sample=True).in_sample
    True
    """
    chosen = [
        name for name, on in (("split=", split is not None), ("fold=", fold is not None)) if on
    ] + (["in_sample=True"] if in_sample else [])
    if len(chosen) > 1:
        raise ArgumentError(
            f"choose one fitting scheme, got {' and '.join(chosen)}: a split column, "
            "cross-fitting folds, or in_sample=True"
        )
    if split is not None:
        return FitScheme("split", split=split, fit_value=fit_value)
    if fold is not None:
        return FitScheme("cross_fit", fold=fold)
    if in_sample:
        return FitScheme("in_sample")
    return FitScheme("frame")


def scheme_rows(
    frame: pl.LazyFrame, keys: Sequence[str], scheme: FitScheme
) -> tuple[pl.LazyFrame, list[str]]:
    """The rows a scheme fits on, and the keys of the fitted groups; checks the scheme's column.

    Split: the rows whose split column equals ``fit_value`` (a non-empty frame without
    any is a DataError). Cross-fitting replicates each row once per *other* fold of its
    group: the row of fold j is fit data of the maps of every fold k ≠ j of the group;
    the returned keys are ``[*keys, fold]`` where ``fold`` now names the held-out fold of
    each map (null folds and groups with a single fold are DataErrors).
    """
    schema = frame.collect_schema()
    if scheme.fitted_on == "split":
        assert scheme.split is not None
        check_split(schema, scheme.split, scheme.fit_value)
        rows = frame.filter(pl.col(scheme.split) == pl.lit(scheme.fit_value))
        _check_fit_rows_exist(frame, rows, scheme)
        return rows, list(keys)
    if scheme.fitted_on != "cross_fit":
        return frame, list(keys)
    fold = scheme.fold
    assert fold is not None
    if fold not in schema:
        raise TableError(
            f"fold column {fold!r} not found; add one with "
            "calib_frames.recalibrate.assign_folds(frame, item=...)"
        )
    if fold in keys:
        raise ArgumentError(f"the fold column {fold!r} cannot also be a group key")
    _check_fold_column(frame.select(*keys, fold).collect(), fold, keys)
    folds = frame.select(*keys, pl.col(fold).alias(_HELD_OUT)).unique()
    replicated = (
        frame.join(folds, on=list(keys), nulls_equal=True)
        if keys
        else frame.join(folds, how="cross")
    )
    rows = replicated.filter(pl.col(fold) != pl.col(_HELD_OUT)).drop(fold)
    return rows.rename({_HELD_OUT: fold}), [*keys, fold]


def _check_fit_rows_exist(frame: pl.LazyFrame, rows: pl.LazyFrame, scheme: FitScheme) -> None:
    """DataError when a non-empty frame has no row with ``split == fit_value``.

    Without it a typo in ``fit_value=`` (or an all-null split column) fits no map and
    every applied row silently gets a null. Two early-stopping one-column scans.
    """
    split = scheme.split
    assert split is not None
    if rows.select(pl.col(split)).head(1).collect().height:
        return
    seen = frame.select(pl.col(split)).unique(maintain_order=True).head(6).collect()[split]
    if seen.len() == 0:
        return  # an empty frame fits nothing, and says so by an empty table
    total = frame.select(pl.len()).collect().item()
    shown = ", ".join(repr(v) for v in seen.to_list()[:5]) + (", ..." if seen.len() > 5 else "")
    raise DataError(
        f"column {split!r}: 0 of {total:,} rows have {split}={scheme.fit_value!r}, the fit "
        f"rows of split=; the column holds {shown}: pass fit_value= one of them"
    )


def check_split(schema: pl.Schema, split: str, fit_value: object) -> None:
    """The split column exists and can be compared with ``fit_value`` (TableError)."""
    if split not in schema:
        raise TableError(f"split column {split!r} not found; available: {schema.names()}")
    dtype = schema[split]
    textual = dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum)
    if isinstance(fit_value, str) != textual or not (
        textual or dtype.is_numeric() or dtype == pl.Boolean
    ):
        raise TableError(
            f"split column {split!r} is {dtype}, which cannot be compared with "
            f"fit_value={fit_value!r}; pass a fit_value of the column's type"
        )


def _check_fold_column(frame: pl.DataFrame, fold: str, keys: Sequence[str]) -> None:
    """Refuse null folds, and groups with a single fold (nothing to fit on)."""
    null_fold = RowCheck(fold, "in no fold (a null fold)", pl.col(fold).is_null())
    check_rows(frame, [null_fold], keys=keys)
    n_folds = pl.col(fold).n_unique().alias(_FOLDS)
    per_group = frame.group_by(*keys).agg(n_folds) if keys else frame.select(n_folds)
    single = RowCheck(
        fold,
        "in a single fold, so no rows are left to fit their map on",
        pl.col(_FOLDS) < 2,
        value=_FOLDS,
        show_value=False,
        unit="groups",
    )
    check_rows(per_group, [single], keys=keys)


@check_arguments(item=COLUMN, output=COLUMN, folds=Integer(2), seed=SEED)
def assign_folds(
    table: Frame,
    *,
    item: str,
    output: str = "fold",
    folds: int = 5,
    seed: int = 0,
) -> Frame:
    """Add a deterministic fold column: ``hash(item, seed) mod folds`` (UInt32).

    Every row of one item gets the same fold, in any frame and in any run (for a given
    polars version: the hash is polars' ``Expr.hash(seed)``). Folds are roughly, not
    exactly, equal in size.

    Parameters
    ----------
    table
        DataFrame or LazyFrame (any rows; only ``item`` is read).
    item
        Column identifying the item (question id, document id): all rows of an item
        share a fold, so options of one question never straddle fit and apply.
    output
        Name of the new column.
    folds
        Number of folds, at least 2.
    seed
        Seed of the hash; another seed gives another, equally deterministic, split.

    Returns
    -------
    DataFrame or LazyFrame
        ``table`` with the column ``output`` added.

    Raises
    ------
    TableError
        If ``item`` is missing or ``output`` already exists.
    ArgumentError
        If ``folds`` is not an integer >= 2 or ``seed`` not an integer >= 0.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"question": ["q1", "q2", "q1"]})
    >>> out = assign_folds(df, item="question", folds=3, seed=1)
    >>> out["fold"][0] == out["fold"][2]
    True
    """
    lazy = as_lazy(table)
    schema = lazy.collect_schema()
    if item not in schema:
        raise TableError(f"item column {item!r} not found; available: {schema.names()}")
    if output in schema:
        raise TableError(f"column {output!r} already exists; pass output= to choose another")
    fold = (pl.col(item).hash(seed) % folds).cast(pl.UInt32).alias(output)
    return return_like(table, lazy.with_columns(fold))
