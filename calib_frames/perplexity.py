r"""Perplexity per group from token negative log-likelihoods.

Input rows are either token-level (one row per token: ``nll`` = −ln p(token), no
``tokens`` column, so each row counts one token) or sequence-level (``nll`` = the summed
NLL of a document and ``tokens`` its token count). Optional ``bytes`` and ``words``
columns give the document's UTF-8 bytes and words (for token-level rows: the token's
share, which may be 0).

The additive table (:func:`nll_sums`) holds per group ``rows``, ``nll_sum`` = Σ nll (nats),
``tokens`` = Σ tokens and, when given, ``bytes`` and ``words``. The reduction follows
lm-evaluation-harness:

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

A ratio over zero tokens, bytes or words is NaN (no warning). NLL is in nats and must be
>= 0: a negative value usually means an adapter returned ln p instead of −ln p, and
raises. Pass ``log_probs=True`` when the column holds log-probabilities (<= 0) on purpose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from calib_frames.validation import (
    CalibrationInputError,
    Frame,
    RowCheck,
    as_lazy,
    count_bad_rows,
    divide,
    group_keys,
    integral_check,
    not_true,
    raise_on_bad_rows,
    require_columns,
    return_like,
)

__all__ = [
    "PERPLEXITY_COLUMNS",
    "merge_nll_sums",
    "nll_sums",
    "perplexity",
    "perplexity_from_nll_sums",
]

SUM_COLUMNS = ("rows", "nll_sum", "tokens", "bytes", "words")
PERPLEXITY_COLUMNS = (
    "mean_nll",
    "perplexity",
    "bits_per_token",
    "byte_perplexity",
    "bits_per_byte",
    "word_perplexity",
)


def nll_sums(
    data: Frame,
    *,
    nll: str = "nll",
    tokens: str | None = None,
    bytes: str | None = None,
    words: str | None = None,
    by: str | Sequence[str] | None = None,
    log_probs: bool = False,
) -> Frame:
    """Per-group additive NLL sums: ``rows``, ``nll_sum``, ``tokens`` [, ``bytes``, ``words``].

    Parameters
    ----------
    data
        DataFrame or LazyFrame of token-level or sequence-level rows.
    nll
        Column of negative log-likelihoods in nats (>= 0), or of log-probabilities
        (<= 0) when ``log_probs=True``.
    tokens
        Column of token counts per row (positive whole numbers); ``None`` = 1 per row.
    bytes, words
        Optional columns of UTF-8 byte and word counts (whole numbers >= 0).
    by
        Group key column(s); ``None`` = the whole frame.
    log_probs
        Treat ``nll`` as ln p and negate it.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input), one row per group, sorted by keys.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> docs = pl.DataFrame({"nll": [4.0, 6.0], "n_tokens": [2, 3], "n_bytes": [9, 11]})
    >>> cf.nll_sums(docs, tokens="n_tokens", bytes="n_bytes")
    shape: (1, 4)
    ┌──────┬─────────┬────────┬───────┐
    │ rows ┆ nll_sum ┆ tokens ┆ bytes │
    │ ---  ┆ ---     ┆ ---    ┆ ---   │
    │ u64  ┆ f64     ┆ i64    ┆ i64   │
    ╞══════╪═════════╪════════╪═══════╡
    │ 2    ┆ 10.0    ┆ 5      ┆ 20    │
    └──────┴─────────┴────────┴───────┘
    """
    source = as_lazy(data)
    keys = group_keys(by)
    roles = {"nll": nll, "tokens": tokens, "bytes": bytes, "words": words}
    columns = {role: name for role, name in roles.items() if name is not None}
    require_columns(
        source.collect_schema(),
        columns,
        numeric=list(columns),
        reserved=(*SUM_COLUMNS, *PERPLEXITY_COLUMNS),
        keys=keys,
    )
    value = pl.col(nll).cast(pl.Float64)
    nll_value = -value if log_probs else value
    checks = [_nll_check(nll, value, log_probs)]
    if tokens is not None:
        checks.append(integral_check(tokens, minimum=1, problem="not a whole number >= 1"))
    checks += [
        integral_check(name, minimum=0, problem="not a whole number >= 0")
        for name in (bytes, words)
        if name is not None
    ]

    aggs = [
        pl.len().cast(pl.UInt64).alias("rows"),
        nll_value.sum().alias("nll_sum"),
        (pl.len().cast(pl.Int64) if tokens is None else _count_sum(tokens)).alias("tokens"),
    ]
    aggs += [
        _count_sum(name).alias(role)
        for role, name in (("bytes", bytes), ("words", words))
        if name is not None
    ]
    first_pass = (
        source.group_by(keys).agg(*aggs, *count_bad_rows(checks))
        if keys
        else source.select(*aggs, *count_bad_rows(checks))
    )
    sums = raise_on_bad_rows(
        first_pass, source=source, keys=keys, checks=checks, total_rows=pl.col("rows").sum()
    )
    if keys:
        sums = sums.sort(keys, nulls_last=True)
    return return_like(data, sums)


def _count_sum(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.Int64, strict=False).sum()


def _nll_check(column: str, value: pl.Expr, log_probs: bool) -> RowCheck:
    if log_probs:
        return RowCheck(
            column,
            "not a log-probability (finite and <= 0; log_probs=True was given)",
            not_true(value.is_finite() & (value <= 0)),
        )
    return RowCheck(
        column,
        "not a finite NLL >= 0 in nats (a negative NLL usually means the adapter "
        "returned log p instead of -log p; pass log_probs=True if the column holds log p)",
        not_true(value.is_finite() & (value >= 0)),
    )


def _sum_keys(schema: pl.Schema) -> list[str]:
    if "nll_sum" not in schema or "tokens" not in schema:
        raise CalibrationInputError(
            "not an NLL-sums table: needs columns 'nll_sum' and 'tokens'; build one with "
            "calib_frames.nll_sums"
        )
    return [name for name in schema.names() if name not in SUM_COLUMNS]


def merge_nll_sums(*tables: Frame) -> Frame:
    """Add up NLL-sums tables of disjoint parts of the data (same keys and columns).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> a = cf.nll_sums(pl.DataFrame({"nll": [1.0, 2.0]}))
    >>> b = cf.nll_sums(pl.DataFrame({"nll": [3.0]}))
    >>> cf.merge_nll_sums(a, b).rows()
    [(3, 6.0, 3)]
    """
    if not tables:
        raise ValueError("merge_nll_sums needs at least one table")
    frames = [as_lazy(table) for table in tables]
    schema = frames[0].collect_schema()
    keys = _sum_keys(schema)
    for frame in frames[1:]:
        other = frame.collect_schema()
        if other.names() != schema.names():
            raise CalibrationInputError(
                f"cannot merge NLL sums with different columns: {schema.names()} vs {other.names()}"
            )
    combined = pl.concat(frames)
    sums = [pl.col(name).sum() for name in schema.names() if name in SUM_COLUMNS]
    merged = (
        combined.group_by(keys).agg(sums).sort(keys, nulls_last=True)
        if keys
        else combined.select(sums)
    )
    return return_like(tables[0], merged)


def perplexity_from_nll_sums(sums: Frame) -> Frame:
    """Perplexity, bits per token and (when available) byte/word measures from NLL sums.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> sums = pl.DataFrame({"rows": [1], "nll_sum": [10.0], "tokens": [5], "bytes": [20]})
    >>> cf.perplexity_from_nll_sums(sums).select("perplexity", "bits_per_byte").rows()
    [(7.38905609893065, 0.7213475204444817)]
    """
    lazy = as_lazy(sums)
    schema = lazy.collect_schema()
    _sum_keys(schema)  # raises unless this is an NLL-sums table
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
    return return_like(sums, lazy.with_columns(measures))


def perplexity(
    data: Frame,
    *,
    nll: str = "nll",
    tokens: str | None = None,
    bytes: str | None = None,
    words: str | None = None,
    by: str | Sequence[str] | None = None,
    log_probs: bool = False,
) -> Frame:
    """Per-group perplexity family: ``perplexity_from_nll_sums(nll_sums(...))``.

    Parameters are those of :func:`nll_sums`; formulas in :mod:`calib_frames.perplexity`.

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
        as_lazy(data),
        nll=nll,
        tokens=tokens,
        bytes=bytes,
        words=words,
        by=by,
        log_probs=log_probs,
    )
    return return_like(data, perplexity_from_nll_sums(sums))
