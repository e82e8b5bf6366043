r"""NLL sums per group: the additive table of token negative log-likelihoods.

Input rows are either token-level (one row per token: ``nll`` = −ln p(token); pass
``tokens=1``, or leave ``tokens`` unset when the frame has no column named ``tokens``) or
sequence-level (``nll`` = the summed NLL of a document and ``tokens=`` the column of its
token count). A frame with a ``tokens`` column must say which it is: treating documents
as single tokens gives an absurd perplexity. Optional ``bytes`` and ``words``
columns give the document's UTF-8 bytes and words (for token-level rows: the token's
share, which may be 0).

The table (:func:`nll_sums`) holds per group ``count`` (rows), ``nll_sum`` = Σ nll (nats),
``tokens`` = Σ tokens and, when given, ``bytes`` and ``words``: plain sums, so tables of
disjoint parts of the data merge exactly (:func:`merge_nll_sums`). The perplexity family
is a closed-form reduction of it (:mod:`calib_frames.metrics.tokens`).

NLL is in nats and must be >= 0: a negative value usually means an adapter returned ln p
instead of −ln p, and raises. Pass ``log_probs=True`` when the column holds
log-probabilities (<= 0) on purpose. Counts must be whole numbers up to 2^53 per row, and
a group's sum must fit in Int64; otherwise the call raises instead of dropping or
wrapping values.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from calib_frames.arguments import FLAG, TOKENS, check_arguments
from calib_frames.engine import TokenPass, token_sums
from calib_frames.exceptions import TableError
from calib_frames.schema import NLL_SUMS
from calib_frames.validation import (
    Frame,
    as_lazy,
    first_offending_row,
    raise_on_bad_rows,
    return_like,
    rollup_keys,
)

__all__ = ["merge_nll_sums", "nll_sums"]


@check_arguments(tokens=TOKENS, log_probs=FLAG)
def nll_sums(
    losses: Frame,
    *,
    nll: str = "nll",
    tokens: str | int | None = None,
    bytes: str | None = None,
    words: str | None = None,
    by: str | Sequence[str] | None = None,
    log_probs: bool = False,
) -> Frame:
    """Per-group additive NLL sums: ``count``, ``nll_sum``, ``tokens`` [, ``bytes``, ``words``].

    Parameters
    ----------
    losses
        DataFrame or LazyFrame of token-level or sequence-level rows of negative
        log-likelihoods (keys…, nll[, tokens, bytes, words]).
    nll
        Column of negative log-likelihoods in nats (>= 0), or of log-probabilities
        (<= 0) when ``log_probs=True``.
    tokens
        Column of token counts per row (positive whole numbers), or ``1``: each row is
        one token. ``None`` (default) means 1 unless the frame has a column named
        ``tokens``, which raises: say which is meant.
    bytes, words
        Optional columns of UTF-8 byte and word counts (whole numbers >= 0).
    by
        Group key column(s); ``None`` = the whole frame.
    log_probs
        Treat ``nll`` as ln p and negate it.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        keys…, ``count``, ``nll_sum``, ``tokens`` [, ``bytes``, ``words``], one row per
        group, sorted by keys (:data:`calib_frames.schema.NLL_SUMS`).

    Raises
    ------
    ArgumentError
        ``tokens`` left unset on a frame with a ``tokens`` column; malformed ``by=``.
    TableError
        Missing or non-numeric columns.
    DataError
        Negative or non-finite NLL, counts that are not whole numbers in range, or sums
        beyond Int64 (counted in the pass, raised when the result is collected).

    See Also
    --------
    merge_nll_sums : add up tables of parts of the data.
    perplexity_from_nll_sums : the perplexity family from this table.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> docs = pl.DataFrame({"nll": [4.0, 6.0], "n_tokens": [2, 3], "n_bytes": [9, 11]})
    >>> cf.nll_sums(docs, tokens="n_tokens", bytes="n_bytes")
    shape: (1, 4)
    ┌───────┬─────────┬────────┬───────┐
    │ count ┆ nll_sum ┆ tokens ┆ bytes │
    │ ---   ┆ ---     ┆ ---    ┆ ---   │
    │ u64   ┆ f64     ┆ i64    ┆ i64   │
    ╞═══════╪═════════╪════════╪═══════╡
    │ 2     ┆ 10.0    ┆ 5      ┆ 20    │
    └───────┴─────────┴────────┴───────┘
    """
    source = as_lazy(losses)
    spec = TokenPass.build(
        source.collect_schema(),
        nll=nll,
        tokens=tokens,
        bytes=bytes,
        words=words,
        by=by,
        log_probs=log_probs,
    )
    checks = spec.row_checks()
    floats = [f"__calib_float_{role}" for role, _ in spec.count_columns()]
    sums = raise_on_bad_rows(
        token_sums(source, spec, checks),
        keys=spec.keys,
        checks=checks,
        total_rows=pl.col("count").sum(),
        find_example=first_offending_row(source, spec.keys),
        drop=floats,
    )
    if spec.keys:
        sums = sums.sort(list(spec.keys), nulls_last=True)
    return return_like(losses, sums)


def merge_nll_sums(*tables: Frame, by: str | Sequence[str] | None = None) -> Frame:
    """Add up NLL-sums tables of disjoint parts of the data.

    Parameters
    ----------
    *tables
        NLL-sums tables with the same keys (any order) and the same count columns.
    by
        Keys to keep (a roll-up over the others); ``None`` keeps all keys.

    Returns
    -------
    DataFrame or LazyFrame (the kind of the first table)
        One NLL-sums table.

    Raises
    ------
    TableError
        The tables are not NLL-sums tables, or differ in keys or count columns.
    ArgumentError
        No table was given.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> a = cf.nll_sums(pl.DataFrame({"nll": [1.0, 2.0]}))
    >>> b = cf.nll_sums(pl.DataFrame({"nll": [3.0]}))
    >>> cf.merge_nll_sums(a, b).rows()
    [(3, 6.0, 3)]
    """
    frames, keys = NLL_SUMS.aligned(tables)
    kept = rollup_keys(keys, by)
    schema = frames[0].collect_schema()
    columns = [c for c in NLL_SUMS.names if c in schema]
    for frame in frames[1:]:
        other = [c for c in NLL_SUMS.names if c in frame.collect_schema()]
        if other != columns:
            raise TableError(
                f"cannot merge NLL sums with different count columns: {columns} vs {other}"
            )
    try:
        combined = pl.concat(
            [frame.select(*keys, *columns) for frame in frames], how="vertical_relaxed"
        )
    except pl.exceptions.PolarsError as error:
        raise TableError(f"cannot merge NLL sums: the key dtypes differ ({error})") from None
    sums = [pl.col(name).sum() for name in columns]
    merged = (
        combined.group_by(kept).agg(sums).sort(kept, nulls_last=True)
        if kept
        else combined.select(sums)
    )
    return return_like(tables[0], merged)
