r"""The proper scores of class probabilities per group: the multi-class Brier score and log loss.

With N items, class probabilities p_ik and labels y_ik ∈ {0, 1} (one-hot for
single-label data):

* **Brier score** ``(1/N) Σ_i Σ_k (p_ik − y_ik)²``, the sum over classes, as
  lm-evaluation-harness' ``brier_score`` and scikit-learn's
  ``brier_score_loss(..., scale_by_half=False)`` (scikit-learn's default halves it for
  two classes, where it equals the binary Brier score). Range [0, 2]; for multi-label
  data the sum runs over every label. Items are unweighted: N counts items.
* **Log loss** ``(1/N) Σ_i −ln p_i,label`` (nats), as scikit-learn's ``log_loss``;
  null for multi-label data.

This module is the one home of the multi-class Brier score: :func:`brier_multiclass`
scores the options of multiple-choice questions (an options frame, through
:func:`calib_frames.sources.option_probabilities`), and
:func:`~calib_frames.multiclass.multiclass_calibration` the class probabilities of the
other layouts, both through :func:`brier_by_group`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from calib_frames.arguments import Options, check_arguments
from calib_frames.multiclass.inputs import IS_LABEL, ITEM, PROBABILITY, ClassRows
from calib_frames.schema import BRIER_MULTICLASS
from calib_frames.validation import (
    Frame,
    as_lazy,
    group_keys,
    require_columns,
    return_like,
    working,
)

__all__ = ["brier_and_log_loss", "brier_by_group", "brier_multiclass", "label_residual"]

_ALL, _SQ, _LL = working("all"), working("sq"), working("ll")


def label_residual(
    probability: pl.Expr, is_label: pl.Expr, log_probability: pl.Expr | None = None
) -> pl.Expr:
    """|p − y| of one class row: 1 − p on a label, p elsewhere.

    With the exact ``log_probability`` (ln p) a label's 1 − p is −expm1(ln p), computed as
    −2t/(1 − t) with t = tanh(ln p / 2): exact also where p rounds to 1.0 (a near-certain
    answer keeps its tiny residual).

    Examples
    --------
    >>> import math
    >>> import polars as pl
    >>> df = pl.DataFrame({"p": [1.0], "ln_p": [-1e-20], "y": [True]})
    >>> df.select(label_residual(pl.col("p"), pl.col("y"), pl.col("ln_p"))).item()
    1e-20
    """
    if log_probability is None:
        complement = 1.0 - probability
    else:
        t = (log_probability / 2).tanh()
        complement = -2 * t / (1 - t)
    return pl.when(is_label).then(complement).otherwise(probability)


def brier_by_group(
    rows: pl.LazyFrame,
    *,
    keys: Sequence[str],
    item: str,
    residual: pl.Expr,
    log_loss: pl.Expr | None = None,
) -> pl.LazyFrame:
    """Keys…, ``count`` (UInt64 items), ``brier`` [, ``log_loss``] of long class rows.

    Per item Σ_k residual² (:func:`label_residual`) and, if given, the item's log loss
    (an aggregation over its rows); then their means over the items of each group (the
    module docstring's formulas). One row per group, in no particular order.
    """
    per_item = [(residual * residual).sum().alias(_SQ)]
    means = [pl.len().cast(pl.UInt64).alias("count"), pl.col(_SQ).mean().alias("brier")]
    if log_loss is not None:
        per_item.append(log_loss.alias(_LL))
        means.append(pl.col(_LL).mean().alias("log_loss"))
    items = rows.group_by([*keys, item]).agg(per_item)
    return items.group_by(list(keys) or pl.lit(0).alias(_ALL)).agg(means).drop(_ALL, strict=False)


def brier_and_log_loss(long: ClassRows) -> pl.LazyFrame:
    """Keys…, ``brier`` and ``log_loss`` of the long rows, one row per group (formulas above)."""
    p = pl.col(PROBABILITY)
    log_loss = (
        pl.lit(None, dtype=pl.Float64)
        if long.multilabel
        else (-p.log()).filter(pl.col(IS_LABEL)).sum()  # one label per item (checked)
    )
    scores = brier_by_group(
        long.rows,
        keys=long.keys,
        item=ITEM,
        residual=label_residual(p, pl.col(IS_LABEL)),
        log_loss=log_loss,
    )
    return scores.select(*long.keys, "brier", "log_loss")


@check_arguments(no_gold=Options("raise", "wrong", "drop"))
def brier_multiclass(
    options: Frame,
    *,
    question: str = "question",
    option: str = "option",
    loglik: str = "loglik",
    is_gold: str | None = "is_gold",
    gold: str | None = None,
    chars: str = "chars",
    bytes: str = "bytes",
    tokens: str = "tokens",
    by: str | Sequence[str] | None = None,
    normalize: str | Sequence[str] | None = None,
    no_gold: Literal["raise", "wrong", "drop"] = "raise",
) -> Frame:
    r"""The multi-class Brier score of multiple-choice options per group and scoring.

    The mean over questions of Σᵢ (pᵢ − yᵢ)² (module docstring), with pᵢ option i's
    softmax probability (:func:`~calib_frames.sources.option_probabilities`) and yᵢ = 1
    for a gold option, else 0 (several gold options: a multi-hot target). This is
    lm-evaluation-harness' ``brier_score``: the sum over options, *not* halved, so it
    lies in [0, 2]. It is not the binary Brier score of the top-label confidence
    (``brier`` of :func:`~calib_frames.calibration_metrics`), hence the name. The gold
    option's term uses 1 − p = −expm1(ln p) (:func:`label_residual`), exact for
    near-certain answers.

    Parameters
    ----------
    options, question, option, loglik, is_gold, gold, chars, bytes, tokens, by, normalize
        As :func:`~calib_frames.sources.choice_predictions`.
    no_gold
        As :func:`~calib_frames.sources.choice_predictions`; with ``"wrong"`` a question
        without a gold option scores Σᵢ pᵢ² (all targets 0).

    Returns
    -------
    DataFrame or LazyFrame
        Keys…, then the columns of :data:`calib_frames.schema.BRIER_MULTICLASS`:
        ``scoring``, ``count`` (UInt64, questions) and ``brier_multiclass``; sorted by
        keys and scoring.

    Raises
    ------
    TableError, ArgumentError, DataError
        As :func:`~calib_frames.sources.choice_predictions`; a key named like an output
        column is a TableError.

    See Also
    --------
    calib_frames.sources.option_probabilities : the probabilities it scores.
    calib_frames.sources.choice_predictions : the top option per question.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.multiclass import brier_multiclass
    >>> opts = pl.DataFrame({"question": [1, 1], "option": [0, 1],
    ...                      "loglik": [-1.0, -1.0], "is_gold": [True, False]})
    >>> brier_multiclass(opts)["brier_multiclass"].item()
    0.5
    """
    # imported here: importing calib_frames.multiclass need not load the readers
    from calib_frames.sources.options import option_probabilities

    keys: list[str] = group_keys(by)
    lazy = as_lazy(options)
    require_columns(lazy.collect_schema(), {}, keys=keys, reserved=BRIER_MULTICLASS.names)
    long = option_probabilities(
        lazy,
        by=by,
        question=question,
        option=option,
        loglik=loglik,
        is_gold=is_gold,
        gold=gold,
        normalize=normalize,
        chars=chars,
        bytes=bytes,
        tokens=tokens,
        no_gold=no_gold,
    )
    group = [*keys, "scoring"]
    residual = label_residual(pl.col("probability"), pl.col("is_answer"), pl.col("log_probability"))
    scores = brier_by_group(long, keys=group, item=question, residual=residual)
    out = scores.rename({"brier": "brier_multiclass"}).sort(group)
    return return_like(options, out.select(*keys, *BRIER_MULTICLASS.names))
