r"""Bootstrap intervals of the perplexity family per group, from additive moment sums.

What is estimated
-----------------
For each group, the ``level`` percentile interval of mean NLL, perplexity, bits per
token and bits per byte under the *nonparametric bootstrap over rows* (or over
``cluster`` units): how much each number would move if the evaluation rows were drawn
again from the same population.

How
---
Perplexity is a ratio of sums, Σnll/Σtokens. Its bootstrap replicates are drawn from the
normal approximation of the resampled sums (Σnll*, Σtokens*[, Σbytes*]): mean the
observed sums, covariance N times the per-row covariance, which needs only the additive
second moments Σx², Σxy, Σy² of one pass over the rows (:func:`nll_moment_sums`, the
NLL-sums table plus :data:`MOMENT_COLUMNS`; like the NLL sums they merge exactly by
adding tables of disjoint data). Then exp(Σnll*/Σtokens*) and Σnll*/(Σbytes*·ln 2) per
replicate, and the percentiles [q(α/2), q(1 − α/2)] (α = 1 − level). Costs groups ×
replicates after the pass, whatever the number of rows.

The normal approximation of the sums (the central limit theorem over rows) is accurate
when a group has many rows (documents); ``tests/estimators/test_perplexity_bootstrap.py``
checks it against a row-level bootstrap. For token-level rows, pass ``cluster=`` (a
document id) so that the resampling unit is the document: tokens of one document are not
independent.

Reproducibility: a fixed ``seed`` gives the same draws for the same table; the draws of a
group depend on its position among the sorted groups.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import numpy as np
import polars as pl

from calib_frames.arguments import (
    COLUMN,
    FLAG,
    RESAMPLING,
    TOKENS,
    check_arguments,
)
from calib_frames.exceptions import TableError
from calib_frames.schema import NLL_MOMENTS
from calib_frames.validation import (
    Frame,
    RowCheck,
    as_lazy,
    check_memory,
    check_tokens_named,
    first_offending_row,
    group_keys,
    not_true,
    raise_on_bad_rows,
    require_columns,
    return_like,
    working,
)

__all__ = [
    "MOMENT_COLUMNS",
    "PERPLEXITY_CI_METRICS",
    "nll_moment_sums",
    "perplexity_intervals",
    "perplexity_intervals_from_nll_sums",
]

PERPLEXITY_CI_METRICS = ("mean_nll", "perplexity", "bits_per_token", "bits_per_byte")
"""Perplexity-table columns that get intervals (``bits_per_byte`` only with bytes)."""

MOMENT_COLUMNS = {
    "nll_sq_sum": ("nll", "nll"),
    "nll_tokens_sum": ("nll", "tokens"),
    "tokens_sq_sum": ("tokens", "tokens"),
    "nll_bytes_sum": ("nll", "bytes"),
    "tokens_bytes_sum": ("tokens", "bytes"),
    "bytes_sq_sum": ("bytes", "bytes"),
}
"""Additive second-moment columns of :func:`nll_moment_sums`: name → (factor, factor),
e.g. ``nll_tokens_sum`` = Σ nll·tokens over the rows (units) of a group."""


def _sum_name(variable: str) -> str:
    return "nll_sum" if variable == "nll" else variable


@check_arguments(tokens=TOKENS, cluster=COLUMN | None, log_probs=FLAG)
def nll_moment_sums(
    losses: Frame,
    *,
    nll: str = "nll",
    tokens: str | int | None = None,
    bytes: str | None = None,
    by: str | Sequence[str] | None = None,
    cluster: str | None = None,
    log_probs: bool = False,
) -> Frame:
    """Per-group first and second moments of (nll, tokens[, bytes]): additive sums.

    The NLL-sums table (:func:`~calib_frames.nll_sums`) plus Σnll², Σnll·tokens,
    Σtokens² (and with bytes Σnll·bytes, Σtokens·bytes, Σbytes²), summed over rows, or
    over ``cluster`` units (rows first summed per (keys, cluster)). Like the NLL sums they
    merge exactly by adding tables of disjoint data, so they can ride along the same pass.

    Parameters
    ----------
    losses, nll, tokens, bytes, by, cluster, log_probs
        As for :func:`perplexity_intervals`.

    Returns
    -------
    DataFrame or LazyFrame
        An NLL-moments table (:data:`calib_frames.schema.NLL_MOMENTS`): keys…, ``count``
        (UInt64: rows or clusters), ``nll_sum``, ``tokens`` [, ``bytes``] (Float64) and
        the :data:`MOMENT_COLUMNS` that apply (Float64).

    Raises
    ------
    TableError, DataError, ArgumentError
        As :func:`perplexity_intervals`.

    Examples
    --------
    >>> import polars as pl
    >>> docs = pl.DataFrame({"nll": [3.0, 5.0], "tokens": [2, 4]})
    >>> nll_moment_sums(docs, tokens="tokens").row(0)
    (2, 8.0, 6.0, 34.0, 26.0, 20.0)
    """
    source = as_lazy(losses)
    schema = source.collect_schema()
    keys: list[str] = group_keys(by)
    check_tokens_named(schema, tokens, keys)
    column_tokens = tokens if isinstance(tokens, str) else None
    roles = {"nll": nll, "tokens": column_tokens, "bytes": bytes, "cluster": cluster}
    named = {role: column for role, column in roles.items() if column is not None}
    require_columns(
        schema,
        named,
        numeric=[role for role in ("nll", "tokens", "bytes") if role in named],
        reserved=NLL_MOMENTS.names,
        keys=keys,
        inputs_are_not_keys=True,
    )
    x = pl.col(nll).cast(pl.Float64)
    x = -x if log_probs else x
    y = pl.lit(1.0) if column_tokens is None else pl.col(column_tokens).cast(pl.Float64)
    values = {"nll": x, "tokens": y}
    if bytes is not None:
        values["bytes"] = pl.col(bytes).cast(pl.Float64)
    nll_problem = (
        "null, NaN, infinite or positive (a log-probability is <= 0; log_probs=True was given)"
        if log_probs
        else "null, NaN, infinite or negative (an NLL is >= 0 nats; pass log_probs=True for "
        "log-probabilities)"
    )
    problems = {"nll": nll_problem, "tokens": "null, NaN, infinite or negative",
                "bytes": "null, NaN, infinite or negative"}  # fmt: skip
    checked_values = {role: value for role, value in values.items() if role in named}
    flags: dict[str, str] = {role: working(f"bad_{role}") for role in checked_values}
    checks = [
        RowCheck(
            named[role],
            problems[role],
            not_true(value.is_finite() & (value >= 0)),
            count=pl.col(flags[role]).sum(),
        )
        for role, value in checked_values.items()
    ]
    rows_column = working("rows")
    frame = source.select(
        *keys,
        *([cluster] if cluster else []),
        *[v.alias(working(k)) for k, v in values.items()],
        *[
            check.bad.cast(pl.UInt64).alias(flag)
            for flag, check in zip(flags.values(), checks, strict=True)
        ],
        pl.lit(1, pl.UInt64).alias(rows_column),
    )
    if cluster is not None:  # the resampled units: the rows of a cluster summed
        frame = frame.group_by(*keys, cluster).agg(pl.exclude(*keys, cluster).sum())
    names = list(values)
    sums = [pl.len().cast(pl.UInt64).alias("count"), pl.col(rows_column, *flags.values()).sum()]
    sums += [pl.col(working(v)).sum().alias(_sum_name(v)) for v in names]
    sums += [
        (pl.col(working(a)) * pl.col(working(b))).sum().alias(name)
        for name, (a, b) in MOMENT_COLUMNS.items()
        if a in names and b in names
    ]
    table = (
        frame.group_by(keys).agg(sums).sort(keys, nulls_last=True) if keys else frame.select(sums)
    )
    checked = raise_on_bad_rows(
        table,
        keys=keys,
        checks=checks,
        total_rows=pl.col(rows_column).sum(),
        find_example=first_offending_row(source, keys),
        drop=[rows_column, *flags.values()],
    )
    return return_like(losses, checked)


@check_arguments(**RESAMPLING)
def perplexity_intervals_from_nll_sums(
    sums: Frame, *, replicates: int = 1000, level: float = 0.95, seed: int = 0
) -> Frame:
    """Bootstrap intervals of the perplexity family from an NLL-moments table.

    The normal approximation of the bootstrap of the sums (module docstring) from the
    first and second moments of :func:`nll_moment_sums` (or an NLL-sums table that
    carries the :data:`MOMENT_COLUMNS`); costs groups × replicates.

    Parameters
    ----------
    sums
        An NLL-moments table (:data:`calib_frames.schema.NLL_MOMENTS`): keys…,
        ``count``, ``nll_sum``, ``tokens`` [, ``bytes``] and the second moments.
    replicates
        Number of bootstrap replicates (≥ 1).
    level
        Confidence level in (0, 1).
    seed
        Seed (≥ 0); the same seed gives the same intervals.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, then ``<metric>_ci_low/high`` (Float64) for ``mean_nll``, ``perplexity``,
        ``bits_per_token`` and (with bytes) ``bits_per_byte``; null where a group has no
        tokens (bytes). One row per group, sorted by the keys.

    Raises
    ------
    TableError
        If a needed sum or moment column is missing.
    ArgumentError
        For bad ``replicates``, ``level`` or ``seed``.

    Examples
    --------
    >>> import polars as pl
    >>> docs = pl.DataFrame({"nll": [30.0, 42.0, 25.0, 50.0], "tokens": [10, 14, 10, 16]})
    >>> ci = perplexity_intervals_from_nll_sums(nll_moment_sums(docs, tokens="tokens"))
    >>> ci.columns[:2]
    ['mean_nll_ci_low', 'mean_nll_ci_high']
    """
    lazy = as_lazy(sums)
    schema = lazy.collect_schema()
    keys = NLL_MOMENTS.keys(schema)
    with_bytes: bool = "bytes" in schema
    needed = [c for c in NLL_MOMENTS.names if with_bytes or c not in NLL_MOMENTS.optional]
    missing = [c for c in needed if c not in schema]
    if missing:  # bytes without their moments
        raise TableError(
            f"not an {NLL_MOMENTS.name} with bytes: missing columns {missing}; build one "
            f"with calib_frames.{NLL_MOMENTS.built_by}"
        )
    variables = ["nll", "tokens", *(["bytes"] if with_bytes else [])]
    metrics = [m for m in PERPLEXITY_CI_METRICS if with_bytes or m != "bits_per_byte"]
    out_schema: dict[str, pl.DataType] = {key: schema[key] for key in keys}
    for name in metrics:
        out_schema[f"{name}_ci_low"] = pl.Float64()
        out_schema[f"{name}_ci_high"] = pl.Float64()
    draw = partial(
        _draw_ratios, keys=keys, variables=variables, metrics=metrics, replicates=replicates,
        level=level, seed=seed,
    )  # fmt: skip
    result = lazy.select(*keys, *needed).map_batches(draw, schema=out_schema)
    return return_like(sums, result)


@check_arguments(
    tokens=TOKENS,
    cluster=COLUMN | None,
    log_probs=FLAG,
    **RESAMPLING,
)
def perplexity_intervals(
    losses: Frame,
    *,
    nll: str = "nll",
    tokens: str | int | None = None,
    bytes: str | None = None,
    by: str | Sequence[str] | None = None,
    cluster: str | None = None,
    log_probs: bool = False,
    replicates: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """Bootstrap intervals of perplexity, mean NLL, bits per token and bits per byte.

    Estimates, per group, the ``level`` percentile interval of the perplexity family
    under the bootstrap over rows (or over ``cluster`` units), with the resampled sums
    drawn from their normal approximation (module docstring): one streaming pass of
    additive first and second moments, then groups × replicates draws.

    Parameters
    ----------
    losses
        Token-level rows (``tokens=None``: each row is one token) or document-level rows
        (``nll`` summed over the document, ``tokens`` its token count), as for
        :func:`~calib_frames.nll_sums`.
    nll
        Column of negative log-likelihoods in nats (≥ 0, finite).
    tokens
        Column of token counts per row, or ``1``: each row is one token. ``None``
        means 1 unless the frame has a column named ``tokens`` (then it raises: say
        which is meant), as in :func:`~calib_frames.nll_sums`.
    bytes
        Column of UTF-8 bytes per row; adds ``bits_per_byte`` intervals.
    by
        Group keys (``None``: one group).
    cluster
        Optional column (e.g. a document id) whose units are resampled instead of rows;
        rows are first summed per (keys, cluster) (a group_by over the rows).
    log_probs
        Treat ``nll`` as ln p (≤ 0) and negate it.
    replicates, level, seed
        As for :func:`perplexity_intervals_from_nll_sums`.

    Returns
    -------
    DataFrame or LazyFrame
        keys…, then
        ``<metric>_ci_low/high`` for ``mean_nll``, ``perplexity``, ``bits_per_token`` and
        (with ``bytes``) ``bits_per_byte``. Null where a group has no tokens (bytes).

    Raises
    ------
    TableError
        Missing or non-numeric columns, a key named like an output column.
    DataError
        Negative, NaN, infinite or null NLL, or token/byte counts that are negative
        or not finite (checked when the result is collected).
    ArgumentError
        For bad ``replicates``, ``level``, ``seed`` or ``tokens``.

    Examples
    --------
    >>> import polars as pl
    >>> docs = pl.DataFrame({"nll": [30.0, 42.0, 25.0, 50.0], "tokens": [10, 14, 10, 16]})
    >>> ci = perplexity_intervals(docs, tokens="tokens", replicates=500)
    >>> low, high = ci.select("perplexity_ci_low", "perplexity_ci_high").row(0)
    >>> point = 2.94  # exp(147 / 50) = 18.9
    >>> bool(low < 2.71828**point < high)
    True
    """
    moments = nll_moment_sums(
        as_lazy(losses), nll=nll, tokens=tokens, bytes=bytes, by=by, cluster=cluster,
        log_probs=log_probs,
    )  # fmt: skip
    result = perplexity_intervals_from_nll_sums(
        moments, replicates=replicates, level=level, seed=seed
    )
    return return_like(losses, result)


def _draw_ratios(
    frame: pl.DataFrame,
    *,
    keys: list[str],
    variables: list[str],
    metrics: list[str],
    replicates: int,
    level: float,
    seed: int,
) -> pl.DataFrame:
    frame = frame.sort(keys, nulls_last=True) if keys else frame
    groups, k = frame.height, len(variables)
    n = frame["count"].cast(pl.Float64).to_numpy()
    mean = np.stack([frame[_sum_name(a)].cast(pl.Float64).to_numpy() for a in variables], axis=1)
    second = np.empty((groups, k, k))
    for name, (a, b) in MOMENT_COLUMNS.items():
        if a in variables and b in variables:
            i, j = variables.index(a), variables.index(b)
            second[:, i, j] = second[:, j, i] = frame[name].cast(pl.Float64).to_numpy()
    per_row = mean / np.maximum(n, 1.0)[:, None]
    # covariance of the resampled sums: N × per-row covariance
    cov = second - n[:, None, None] * per_row[:, :, None] * per_row[:, None, :]
    cov = (cov + np.swapaxes(cov, 1, 2)) / 2.0
    eigval, eigvec = np.linalg.eigh(cov)
    root = eigvec * np.sqrt(np.clip(eigval, 0.0, None))[:, None, :]
    # the normal draws, the drawn sums and about four per-replicate metric arrays
    check_memory(
        groups * replicates,
        (2 * k + 6) * 8,
        f"{groups:,} groups × {replicates:,} replicates",
    )
    rng = np.random.default_rng(seed)
    normal = rng.standard_normal((groups, replicates, k))
    drawn = mean[:, None, :] + np.einsum("gij,gbj->gbi", root, normal)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_token = drawn[..., 0] / drawn[..., 1]
        values = {
            "mean_nll": per_token,
            "perplexity": np.exp(per_token),
            "bits_per_token": per_token / math.log(2.0),
        }
        if "bytes" in variables:
            values["bits_per_byte"] = drawn[..., 0] / (drawn[..., 2] * math.log(2.0))
    alpha = (1.0 - level) / 2.0
    columns: dict[str, pl.Series] = {}
    for name in metrics:
        valid = mean[:, 2 if name == "bits_per_byte" else 1] > 0
        low, high = np.quantile(values[name], [alpha, 1.0 - alpha], axis=1)
        columns[f"{name}_ci_low"] = pl.Series(np.where(valid, low, np.nan)).fill_nan(None)
        columns[f"{name}_ci_high"] = pl.Series(np.where(valid, high, np.nan)).fill_nan(None)
    out = pl.DataFrame([series.alias(name) for name, series in columns.items()])
    return pl.concat([frame.select(keys), out], how="horizontal") if keys else out
