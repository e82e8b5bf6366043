r"""The perplexity family per group: closed-form reductions of the NLL-sums table.

The table is :func:`calib_frames.nll_sums` (Σ nll in nats, Σ tokens, and Σ bytes, Σ words
when given). The reduction follows lm-evaluation-harness:

=====================  ===========================================
column                 formula
=====================  ===========================================
``mean_nll``           Σ nll / Σ tokens               (nats per token)
``perplexity``         exp(Σ nll / Σ tokens)
``bits_per_token``     Σ nll / (Σ tokens · ln 2)
``byte_perplexity``    exp(Σ nll / Σ bytes)
``bits_per_byte``      Σ nll / (Σ bytes · ln 2)
``word_perplexity``    exp(Σ nll / Σ words)
=====================  ===========================================

A ratio over zero tokens, bytes or words is NaN (no warning).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from calib_frames.arguments import FLAG, TOKENS, check_arguments
from calib_frames.nll import nll_sums
from calib_frames.schema import NLL_SUMS, PERPLEXITY
from calib_frames.validation import Frame, as_lazy, divide, return_like

__all__ = ["perplexity", "perplexity_from_nll_sums"]


def perplexity_from_nll_sums(sums: Frame) -> Frame:
    """Perplexity, bits per token and (when available) byte/word measures from NLL sums.

    Parameters
    ----------
    sums
        An NLL-sums table (:func:`nll_sums`, :func:`merge_nll_sums`).

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        The table with ``mean_nll``, ``perplexity``, ``bits_per_token`` and, when the
        counts exist, ``byte_perplexity``, ``bits_per_byte``, ``word_perplexity``.

    Raises
    ------
    TableError
        ``sums`` is not an NLL-sums table.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> sums = pl.DataFrame({"count": [1], "nll_sum": [10.0], "tokens": [5], "bytes": [20]})
    >>> cf.perplexity_from_nll_sums(sums).select("perplexity", "bits_per_byte").rows()
    [(7.38905609893065, 0.7213475204444817)]
    """
    lazy = as_lazy(sums)
    schema = lazy.collect_schema()
    keys = NLL_SUMS.keys(schema)
    total = pl.col("nll_sum")

    def per(column: str) -> pl.Expr:
        count = pl.col(column)
        return pl.when(count > 0).then(total / count).otherwise(float("nan"))

    measures = [
        per("tokens").alias("mean_nll"),
        per("tokens").exp().alias("perplexity"),
        divide(per("tokens"), math.log(2)).alias("bits_per_token"),
    ]
    if "bytes" in schema:
        measures += [
            per("bytes").exp().alias("byte_perplexity"),
            divide(per("bytes"), math.log(2)).alias("bits_per_byte"),
        ]
    if "words" in schema:
        measures.append(per("words").exp().alias("word_perplexity"))
    result = lazy.with_columns(measures)
    return return_like(sums, result.select(PERPLEXITY.select(keys, result.collect_schema())))


@check_arguments(tokens=TOKENS, log_probs=FLAG)
def perplexity(
    losses: Frame,
    *,
    nll: str = "nll",
    tokens: str | int | None = None,
    bytes: str | None = None,
    words: str | None = None,
    by: str | Sequence[str] | None = None,
    log_probs: bool = False,
) -> Frame:
    """Per-group perplexity family: ``perplexity_from_nll_sums(nll_sums(...))``.

    Formulas in :mod:`calib_frames.metrics.tokens`.

    Parameters
    ----------
    losses
        DataFrame or LazyFrame of token-level or sequence-level rows of negative
        log-likelihoods (keys…, nll[, tokens, bytes, words]).
    nll, tokens, bytes, words, by, log_probs
        As in :func:`nll_sums`.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        keys…, the NLL sums, then ``mean_nll``, ``perplexity``, ``bits_per_token``
        [, ``byte_perplexity``, ``bits_per_byte``] [, ``word_perplexity``].

    Raises
    ------
    ArgumentError, TableError, DataError
        As :func:`nll_sums`.

    See Also
    --------
    calib_frames.token_perplexity : the same number as an expression.

    Examples
    --------
    Token-level rows, one token each:

    >>> import polars as pl
    >>> import calib_frames as cf
    >>> toks = pl.DataFrame({"model": ["a", "a", "b"], "nll": [1.0, 3.0, 0.5]})
    >>> cf.perplexity(toks, by="model").select("model", "tokens", "mean_nll", "perplexity")
    shape: (2, 4)
    ┌───────┬────────┬──────────┬────────────┐
    │ model ┆ tokens ┆ mean_nll ┆ perplexity │
    │ ---   ┆ ---    ┆ ---      ┆ ---        │
    │ str   ┆ i64    ┆ f64      ┆ f64        │
    ╞═══════╪════════╪══════════╪════════════╡
    │ a     ┆ 2      ┆ 2.0      ┆ 7.389056   │
    │ b     ┆ 1      ┆ 0.5      ┆ 1.648721   │
    └───────┴────────┴──────────┴────────────┘
    """
    sums = nll_sums(
        as_lazy(losses),
        nll=nll,
        tokens=tokens,
        bytes=bytes,
        words=words,
        by=by,
        log_probs=log_probs,
    )
    return return_like(losses, perplexity_from_nll_sums(sums))
