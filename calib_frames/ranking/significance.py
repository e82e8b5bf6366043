"""Paired significance tests between models on per-query ranking metrics.

Input: the per-query table of :func:`~calib_frames.ranking.ranking_metrics_per_query` (one
row per model × query with metric columns). For every pair of models (every pair, or each
model against a ``baseline``) and every metric, the test compares the two models on the
queries both were evaluated on, through the per-query differences d_q = a_q − b_q and
their mean d̄ (the observed difference of the two metric means on those queries):

* ``method="permutation"`` — the paired randomisation test (Fisher; Smucker, Allan &
  Carterette, CIKM 2007): under H0 the labels of a and b are exchangeable within a query,
  so each d_q keeps or flips its sign with probability 1/2. The two-sided p-value is
  (1 + #{|d̄*| >= |d̄|}) / (B + 1) over B random sign vectors. When 2^n <= B (n queries)
  all 2^n sign vectors are enumerated and the p-value is exact: #{|d̄*| >= |d̄|} / 2^n
  (scipy.stats.permutation_test with ``permutation_type="samples"`` gives the same).
* ``method="bootstrap"`` — the paired bootstrap test (Efron & Tibshirani 1993 §16.4;
  Sakai, SIGIR 2006): queries are resampled with replacement, and the resampled mean
  difference, centred on d̄ to impose H0, is compared with the observed one:
  p = (1 + #{|d̄* − d̄| >= |d̄|}) / (B + 1).

Both are vectorised: the per-query differences of all pairs of a family form a matrix
D (pairs × queries) and the B replicates are matrix products with a (B × queries) matrix
of signs or resampling counts, drawn in blocks from one seeded numpy Generator (same seed,
same p-values). A query one model of a pair lacks drops out of that pair only.

The p-values of a family — the pairs of one metric within one ``by=`` group — are adjusted
for multiple testing with :func:`calib_frames.estimators.multiple_testing.adjust_p_values`:
``p_holm`` (Holm step-down, family-wise error rate) and ``p_bh`` (Benjamini–Hochberg
step-up, false discovery rate). Per group, in memory: the table is collected.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
import polars as pl

from calib_frames.arguments import (
    COLUMN,
    FRAME,
    REPLICATES,
    SEED,
    ListOf,
    Options,
    check_arguments,
)
from calib_frames.estimators.multiple_testing import adjust_p_values
from calib_frames.exceptions import ArgumentError
from calib_frames.schema import PAIRED_SIGNIFICANCE
from calib_frames.validation import (
    Frame,
    RowCheck,
    as_lazy,
    check_rows,
    group_keys,
    not_true,
    require_columns,
    return_like,
)

__all__ = ["paired_significance"]

Method = Literal["permutation", "bootstrap"]

_BLOCK = 1 << 20  # entries of one block of replicates (replicates × queries)
F64Array = npt.NDArray[np.float64]


@check_arguments(
    per_query=FRAME,
    metric=COLUMN | ListOf(COLUMN),
    model=COLUMN,
    query=COLUMN,
    method=Options.of(Method),
    replicates=REPLICATES,
    seed=SEED,
)
def paired_significance(
    per_query: Frame,
    *,
    metric: str | Sequence[str] = "ndcg@10",
    model: str = "model",
    query: str = "query",
    by: str | Sequence[str] | None = None,
    baseline: str | None = None,
    method: Method = "permutation",
    replicates: int = 10_000,
    seed: int = 0,
) -> Frame:
    """Paired randomisation or bootstrap tests between models, with Holm and BH corrections.

    Each pair of models is compared on the per-query values of each metric; the p-values
    of a family are adjusted by Holm and by Benjamini–Hochberg.

    Parameters
    ----------
    per_query
        One row per (by…, model, query) with the metric columns, e.g.
        ``ranking_metrics_per_query(run, qrels, by="model")``. Lazy in, lazy out.
    metric
        The metric column(s) to compare.
    model
        The column naming the systems compared (cast to string in the output).
    query
        The query column (the pairing unit).
    by
        Further keys (e.g. ``"task"``): tests and corrections run within each group.
    baseline
        Compare every model with this one (``model_a`` = the other model, ``model_b`` =
        baseline); ``None`` compares every pair (``model_a`` < ``model_b``).
    method
        ``"permutation"`` (paired randomisation test) or ``"bootstrap"``.
    replicates
        B, the number of random replicates (exact enumeration when 2^n <= B). The default
        10000 lets a p-value reach 1e-4 (a Monte-Carlo p-value is never below 1/(B + 1)),
        so that it can survive the Holm and BH corrections across many pairs and metrics.
    seed
        Seed of the numpy Generator (an integer >= 0); the same seed gives the same
        p-values.

    Returns
    -------
    DataFrame or LazyFrame
        Like ``per_query``: the ``by=`` keys, then ``metric``, ``model_a``, ``model_b``,
        ``queries`` (paired queries), ``mean_a``, ``mean_b``, ``difference``
        (mean_a − mean_b), ``p_value`` (two-sided), ``p_holm``, ``p_bh`` (adjusted within
        each by-group and metric), ``method``, ``replicates``. A pair without a common
        query has null means and p-values.

    Raises
    ------
    TableError
        If a column is missing, a metric column is not numeric, or ``by=`` names the
        model, query or a metric column.
    DataError
        If a (by…, model, query) row repeats or a metric value is null/NaN.
    ArgumentError
        On an unknown method or baseline, fewer than two models, replicates < 1 or a
        malformed ``by=``.

    See Also
    --------
    calib_frames.ranking.ranking_metrics_per_query : the input table.
    calib_frames.estimators.multiple_testing.adjust_p_values : the corrections.

    Examples
    --------
    >>> import polars as pl
    >>> per_query = pl.DataFrame({
    ...     "model": ["a"] * 6 + ["b"] * 6,
    ...     "query": list(range(6)) * 2,
    ...     "ndcg@10": [0.9, 0.8, 0.7, 0.9, 0.6, 0.8, 0.5, 0.4, 0.6, 0.3, 0.5, 0.4],
    ... })
    >>> result = paired_significance(per_query, metric="ndcg@10")
    >>> result.select("model_a", "model_b", "difference", "p_value", "replicates")
    shape: (1, 5)
    ┌─────────┬─────────┬────────────┬─────────┬────────────┐
    │ model_a ┆ model_b ┆ difference ┆ p_value ┆ replicates │
    │ ---     ┆ ---     ┆ ---        ┆ ---     ┆ ---        │
    │ str     ┆ str     ┆ f64        ┆ f64     ┆ u64        │
    ╞═════════╪═════════╪════════════╪═════════╪════════════╡
    │ a       ┆ b       ┆ 0.333333   ┆ 0.03125 ┆ 64         │
    └─────────┴─────────┴────────────┴─────────┴────────────┘
    """
    metrics: list[str] = [metric] if isinstance(metric, str) else list(metric)
    keys: list[str] = group_keys(by)
    lazy = as_lazy(per_query)
    schema = lazy.collect_schema()
    roles = {"model": model, "query": query, **{f"metric[{i}]": m for i, m in enumerate(metrics)}}
    require_columns(schema, roles, numeric=list(roles)[2:], keys=keys, inputs_are_not_keys=True)
    out_schema = {key: schema[key] for key in keys} | PAIRED_SIGNIFICANCE.columns
    checks = [
        RowCheck(
            query,
            "repeated (the same model and query as an earlier row)",
            pl.struct(*keys, model, query).is_first_distinct().not_(),
            show_value=False,
        ),
        *(
            RowCheck(
                name,
                "infinite, null or NaN",
                not_true(pl.col(name).cast(pl.Float64).is_finite()),
                show_value=False,
            )
            for name in metrics
        ),
    ]

    def compute(frame: pl.DataFrame) -> pl.DataFrame:
        return _compute(
            frame, keys, model, query, metrics, baseline, method, replicates, seed, out_schema
        )

    selected = lazy.select(*keys, pl.col(model).cast(pl.String), query, *metrics)
    checked = check_rows(selected, checks, keys=[*keys, model, query])
    result = checked.map_batches(compute, schema=out_schema).drop("p_holm", "p_bh")
    result = adjust_p_values(result, by=[*keys, "metric"], method="holm", output="p_holm")
    result = adjust_p_values(result, by=[*keys, "metric"], method="bh", output="p_bh")
    return return_like(per_query, result.select(list(out_schema)))


def _compute(  # noqa: PLR0917
    frame: pl.DataFrame,
    keys: list[str],
    model: str,
    query: str,
    metrics: list[str],
    baseline: str | None,
    method: str,
    replicates: int,
    seed: int,
    out_schema: dict[str, pl.DataType],
) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    parts: list[pl.DataFrame] = []
    groups = frame.partition_by(keys, as_dict=True, maintain_order=True) if keys else {(): frame}
    for key_values, group in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        models = sorted(group[model].unique().drop_nulls().to_list())
        if baseline is not None and baseline not in models:
            raise ArgumentError(
                f"baseline={baseline!r} is not a model of the table"
                + (f" in group {dict(zip(keys, key_values, strict=True))}" if keys else "")
                + f"; models: {models}"
            )
        if len(models) < 2:
            raise ArgumentError(f"need at least two models to compare, found {models}")
        if baseline is None:
            pairs = list(itertools.combinations(models, 2))
        else:
            pairs = [(m, baseline) for m in models if m != baseline]
        for name in metrics:
            wide = group.pivot(on=model, index=query, values=name, aggregate_function=None)
            values = {m: wide[m].cast(pl.Float64).to_numpy() for m in models}
            a = np.stack([values[p[0]] for p in pairs])
            b = np.stack([values[p[1]] for p in pairs])
            row = _test_pairs(a, b, method, replicates, rng)
            part = pl.DataFrame(
                {
                    **{k: [v] * len(pairs) for k, v in zip(keys, key_values, strict=True)},
                    "metric": [name] * len(pairs),
                    "model_a": [p[0] for p in pairs],
                    "model_b": [p[1] for p in pairs],
                    **row,
                    "p_holm": [None] * len(pairs),
                    "p_bh": [None] * len(pairs),
                    "method": [method] * len(pairs),
                },
                schema_overrides=out_schema,
            )
            parts.append(part.select(list(out_schema)).cast(out_schema))  # type: ignore[arg-type]
    if not parts:
        return pl.DataFrame(schema=out_schema)
    return pl.concat(parts)


def _test_pairs(
    a: F64Array, b: F64Array, method: str, replicates: int, rng: np.random.Generator
) -> dict[str, object]:
    """Vectorised over pairs (rows of ``a`` and ``b``, NaN = query missing)."""
    present = ~(np.isnan(a) | np.isnan(b))
    mask = present.astype(np.float64)
    diff = np.where(present, a - b, 0.0)
    n_pair = mask.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = diff.sum(axis=1) / n_pair
        mean_a = np.where(present, a, 0.0).sum(axis=1) / n_pair
        mean_b = np.where(present, b, 0.0).sum(axis=1) / n_pair
    # a pair without shared queries has diff 0 and a NaN p-value below; dividing it by
    # 1 keeps numpy's "invalid value" warning out of the sign loops
    per_pair = np.maximum(n_pair, 1.0)
    n = diff.shape[1]
    tol = 1e-12 * np.maximum(1.0, np.abs(np.nan_to_num(observed)))
    extreme = np.zeros(diff.shape[0])
    exact = method == "permutation" and n <= 62 and (1 << n) <= replicates
    if exact:
        total = 1 << n
        for start in range(0, total, max(1, _BLOCK // max(n, 1))):
            codes = np.arange(start, min(total, start + max(1, _BLOCK // max(n, 1))))
            signs = 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)) & 1)
            means = diff @ signs.T / per_pair[:, None]
            extreme += (np.abs(means) >= np.abs(observed)[:, None] - tol[:, None]).sum(axis=1)
        p_value = extreme / total
        used = total
    else:
        block = max(1, _BLOCK // max(n, 1))
        done = 0
        while done < replicates:
            size = min(block, replicates - done)
            if method == "permutation":
                signs = 1.0 - 2.0 * rng.integers(0, 2, size=(size, n)).astype(np.float64)
                means = diff @ signs.T / per_pair[:, None]
                hit = np.abs(means) >= np.abs(observed)[:, None] - tol[:, None]
            else:
                counts = rng.multinomial(n, np.full(n, 1.0 / n), size=size).astype(np.float64)
                with np.errstate(invalid="ignore", divide="ignore"):
                    means = (diff @ counts.T) / (mask @ counts.T)
                hit = np.abs(means - observed[:, None]) >= np.abs(observed)[:, None] - tol[:, None]
            extreme += hit.sum(axis=1)
            done += size
        p_value = (1.0 + extreme) / (replicates + 1.0)
        used = replicates
    p_value = np.where(n_pair > 0, np.minimum(p_value, 1.0), np.nan)
    return {
        "queries": n_pair.astype(np.uint32),
        "mean_a": _nulls(mean_a),
        "mean_b": _nulls(mean_b),
        "difference": _nulls(observed),
        "p_value": _nulls(p_value),
        "replicates": np.full(diff.shape[0], used, dtype=np.uint64),
    }


def _nulls(values: F64Array) -> pl.Series:
    return pl.Series(values, dtype=pl.Float64).fill_nan(None)
