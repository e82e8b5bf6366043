r"""Model against model on the same items: paired tests of accuracy, ECE and Brier.

Paired bootstrap intervals of the difference in accuracy, ECE and Brier score, paired
permutation p-values, corrected across tasks and model pairs.

What is estimated
-----------------
For two models a and b that answered the same items (a shared item id) within a group
(e.g. a task), the difference d = metric(a) − metric(b) on the *shared items*, its
percentile interval under the **paired bootstrap** (items drawn with replacement, each
drawn item bringing both models' predictions, so that the item difficulty both models
share cancels), and a two-sided p-value of "no difference".

The default p-value is the **paired permutation test**: under H₀ the two models'
predictions of an item are exchangeable, so swapping them on a random half of the items
(each item independently with probability ½) leaves the distribution of d unchanged;

    p = (1 + #{ |d_swap| ≥ |d| }) / (1 + replicates)

(never 0; exact up to the approximation below, whatever the metric's bias).
``method="bootstrap"`` instead uses the bootstrap distribution shifted to zero,
(1 + #{ |d* − d| ≥ |d| }) / (1 + replicates): the test that inverts the basic bootstrap
interval; for ECE it is conservative (the bootstrap of a sum of absolute values is biased
near zero: 0.3% false positives at a nominal 5% on two calibrated models, measured).
Holm and Benjamini–Hochberg adjustments
(:func:`~calib_frames.estimators.multiple_testing.adjust_p_values`) treat all rows of the
result (every model pair on every task) as one family, per metric.

How it is computed (per group, in memory)
-----------------------------------------
Each shared item falls in one *joint cell* (bin and outcome under model a, bin and
outcome under model b); a self-join of the rows on (keys, item), which holds the rows in
memory, reduces them to per-joint-cell counts and residual sums (at most (2M)² cells per
model pair); the resampling then works on the cells only. Resampling items with replacement draws a
Multinomial count for every joint cell, exactly as the row-level paired bootstrap does,
and each model's cell sums follow as in :mod:`calib_frames.estimators.bootstrap` (scaled
to the drawn count, normal approximation of the within-cell mean; the two models'
within-cell noise is drawn independently, which overstates the variance of the
difference when their residuals are positively correlated within a cell: conservative).
The permutation draws, per joint cell of n items, k ~ Binomial(n, ½) swapped items:
the first model keeps n − k of its own items in its cell and receives k of the other
model's items in theirs. The residual sum of a random k-subset of a cell is drawn as
k·r̄ plus a normal deviation with the without-replacement variance k(n − k)s²/(n − 1);
the n − k others get the rest of the cell's sums, so totals are kept exactly.
Each model's replicated bin statistics then go through
:func:`~calib_frames.metrics_from_bin_statistics`. Cost: model pairs × joint cells ×
replicates, whatever the number of items.

Items present for only one model of a pair are not silently dropped: they are counted in
``only_a`` and ``only_b``; the difference uses the shared items only.

Weights. With ``weight=`` each model's accuracy, ECE and Brier score are the weighted
ones of :func:`~calib_frames.calibration_metrics` over the shared items, each model's
rows weighted by their own weights (a weight of 2 counts like the item answered twice,
unit weights change nothing). The item stays the unit of resampling: the joint cells
carry the weight sums Σw and the weighted residual sums Σw·r, Σw·r², and a drawn or
swapped item carries its cell's mean weight (a swapped prediction takes its weight with
it); exact when the weights are equal within a cell, as in
:mod:`calib_frames.estimators.bootstrap`.

Replicates. ``replicates=10000`` by default: the p-values of many model pairs and tasks
are corrected together (Holm, BH), and a permutation p-value cannot fall below
1/(replicates + 1), so fewer replicates would leave no p-value small enough to survive
the correction of a large family.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Literal, NamedTuple

import numpy as np
import polars as pl

from calib_frames.arguments import RESAMPLING, Options, check_arguments
from calib_frames.binning import BINS, BinsLike, as_binning
from calib_frames.estimators._groups import prediction_checks, require_prediction_columns
from calib_frames.estimators.bootstrap import _resample_class, _safe_divide
from calib_frames.estimators.multiple_testing import adjust_p_values
from calib_frames.exceptions import ArgumentError
from calib_frames.metrics.calibration import metrics_from_bin_statistics
from calib_frames.schema import BIN_STATISTICS
from calib_frames.validation import (
    Frame,
    RowCheck,
    as_lazy,
    check_memory,
    check_rows,
    group_keys,
    return_like,
    working,
)

__all__ = ["PAIRED_METRICS", "paired_comparison"]

PAIRED_METRICS = ("accuracy", "ece", "brier")
"""Metrics whose paired differences are reported."""

_SEG, _SIDE, _REP = working("pair"), working("side"), working("rep")
_BIN, _Y, _R, _W = working("bin"), working("y"), working("r"), working("w")


@check_arguments(
    bins=BINS,
    method=Options("permutation", "bootstrap"),
    **RESAMPLING,
)
def paired_comparison(
    predictions: Frame,
    *,
    confidence: str = "confidence",
    correct: str = "correct",
    model: str = "model",
    item: str = "item",
    by: str | Sequence[str] | None = None,
    bins: BinsLike = 10,
    weight: str | None = None,
    method: Literal["permutation", "bootstrap"] = "permutation",
    replicates: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> Frame:
    """Paired differences in accuracy, ECE and Brier score between every two models.

    Parameters
    ----------
    predictions
        One row per (group, model, item): keys…, ``model``, ``item``, ``confidence``,
        ``correct`` [, ``weight``]. Lazy in, lazy out.
    confidence, correct, bins
        As for :func:`~calib_frames.bin_statistics` (equal-mass bins are computed per
        group and model).
    model
        Column naming the model.
    item
        Column identifying the item (question); the pairing is on (keys, item).
    by
        Group keys compared separately (e.g. ``"task"``); ``None``: one group.
    weight
        Optional column of finite weights ≥ 0: each model's metrics are weighted means
        over the shared items (module docstring); ``None``: every item weighs 1.
    method
        How the p-value is computed: ``"permutation"`` (default; the paired permutation
        test, module docstring) or ``"bootstrap"`` (from the shifted bootstrap
        distribution; conservative for ECE, whose bootstrap is biased near zero).
    replicates
        Paired bootstrap (and permutation) replicates (≥ 1). The default 10000 lets a
        p-value reach 1e-4 (it is never below 1/(replicates + 1)), so that it can survive
        the Holm and BH corrections across many pairs and tasks.
    level
        Level of the difference intervals, in (0, 1).
    seed
        Seed (≥ 0).

    Returns
    -------
    DataFrame or LazyFrame
        One row per (keys…, ``model_a``, ``model_b``) with ``model_a < model_b``:
        ``shared_items``, ``only_a``, ``only_b`` (UInt64: items both / only a / only b
        answered), then per metric m in :data:`PAIRED_METRICS`: ``m_a``, ``m_b`` (on the
        shared items), ``m_difference`` (a − b), ``m_difference_ci_low``,
        ``m_difference_ci_high``, ``m_p_value``, ``m_p_value_holm``, ``m_p_value_bh``.
        Pairs without shared items have nulls there (and are not counted in the
        corrections).

    Raises
    ------
    TableError
        Missing or mistyped columns (a Boolean confidence or weight); a group key named
        like an output column or an input column.
    DataError
        Invalid confidences, outcomes or weights, null models or items, or an item that
        appears twice for one model in a group (checked when the result is collected).
    ArgumentError
        For bad ``replicates``, ``level``, ``seed`` or ``by``; ``model`` = ``item``.

    See Also
    --------
    calib_frames.estimators.multiple_testing.adjust_p_values : the corrections.

    Examples
    --------
    >>> import numpy as np
    >>> import polars as pl
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1.0, 500)
    >>> df = pl.concat([
    ...     pl.DataFrame({"model": "calibrated", "item": np.arange(500), "confidence": p,
    ...                   "correct": rng.random(500) < p}),
    ...     pl.DataFrame({"model": "overconfident", "item": np.arange(500), "confidence": p,
    ...                   "correct": rng.random(500) < p**3}),
    ... ])
    >>> t = paired_comparison(df, replicates=500)
    >>> t.select("model_a", "model_b", "shared_items").rows()
    [('calibrated', 'overconfident', 500)]
    >>> bool(t["ece_difference_ci_high"].item() < 0), bool(t["ece_p_value"].item() < 0.01)
    (True, True)
    """
    keys: list[str] = group_keys(by)
    binning = as_binning(bins)
    source = as_lazy(predictions)
    schema = source.collect_schema()
    if model == item:
        raise ArgumentError(f"model= and item= name the same column {model!r}")
    require_prediction_columns(
        schema,
        confidence=confidence,
        correct=correct,
        weight=weight,
        keys=keys,
        reserved=("model_a", "model_b", "shared_items", "only_a", "only_b"),
        others={"model": model, "item": item},
    )
    p = pl.col(confidence).cast(pl.Float64)
    y = pl.col(correct).cast(pl.Float64)
    w = pl.lit(1.0) if weight is None else pl.col(weight).cast(pl.Float64)
    low, high = binning.range
    checks = prediction_checks(
        confidence=confidence, correct=correct, weight=weight, low=low, high=high
    )
    checks += [
        RowCheck(
            f"{model}/{item}",
            "null (a null model or item)",
            pl.col(model).is_null() | pl.col(item).is_null(),
            show_value=False,
        ),
        RowCheck(
            item,
            f"repeated (an item the same {model!r} answered before in its group)",
            pl.struct(*keys, model, item).is_first_distinct().not_(),
            show_value=False,
        ),
    ]
    inputs = [*keys, model, item, confidence, correct, *([weight] if weight else [])]
    inputs = list(dict.fromkeys(inputs))
    checked = check_rows(source.select(inputs), checks, keys=[*keys, model, item]).select(
        *keys,
        pl.col(model),
        pl.col(item),
        binning.assign(p, keys=[*keys, model]).alias(_BIN),
        (y == 1).alias(_Y),
        pl.when(y == 1).then(1.0 - p).otherwise(p).alias(_R),
        w.alias(_W),
    )
    sides = {
        side: checked.select(
            *keys,
            pl.col(model).alias(f"model_{side}"),
            pl.col(item),
            pl.col(_BIN, _Y, _R, _W).name.suffix(f"_{side}"),
        )
        for side in ("a", "b")
    }
    on = [*keys, item]
    pairs = (
        sides["a"]
        .join(sides["b"], on=on, how="inner", nulls_equal=True)
        .filter(pl.col("model_a") < pl.col("model_b"))
    )
    pair_keys = [*keys, "model_a", "model_b"]
    sums = []
    for side in ("a", "b"):
        weights, residuals = pl.col(f"{_W}_{side}"), pl.col(f"{_R}_{side}")
        sums += [
            weights.sum().alias(working(f"w_{side}")),
            (weights * residuals).sum().alias(working(f"r_{side}")),
            (weights * residuals**2).sum().alias(working(f"q_{side}")),
        ]
    joint = (
        pairs.group_by(*pair_keys, f"{_BIN}_a", f"{_Y}_a", f"{_BIN}_b", f"{_Y}_b")
        .agg(pl.len().alias(working("n")), *sums)
        .cache()
    )
    coverage = _coverage(checked, joint, keys, model)
    bounds = binning.bounds()
    out_metrics: dict[str, pl.DataType] = {}
    for m in PAIRED_METRICS:
        for suffix in ("a", "b", "difference", "difference_ci_low", "difference_ci_high"):
            out_metrics[f"{m}_{suffix}"] = pl.Float64()
        out_metrics[f"{m}_p_value"] = pl.Float64()
    diff_schema: dict[str, pl.DataType] = {
        **{k: schema[k] for k in keys},
        "model_a": schema[model],
        "model_b": schema[model],
        **out_metrics,
    }
    draw = partial(
        _paired_draws,
        pair_keys=pair_keys,
        bounds=bounds,
        replicates=replicates,
        level=level,
        seed=seed,
        method=method,
    )
    differences = joint.map_batches(draw, schema=diff_schema)
    result = coverage.join(differences, on=pair_keys, how="left", nulls_equal=True).sort(
        pair_keys, nulls_last=True
    )
    for m in PAIRED_METRICS:
        for correction in ("holm", "bh"):
            result = adjust_p_values(
                result,
                p_value=f"{m}_p_value",
                method=correction,  # type: ignore[arg-type]
                output=f"{m}_p_value_{correction}",
            )
    return return_like(predictions, result)


def _coverage(rows: pl.LazyFrame, joint: pl.LazyFrame, keys: list[str], model: str) -> pl.LazyFrame:
    """Every model pair of every group with shared / only-a / only-b item counts."""
    items = rows.group_by(*keys, model).agg(pl.len().cast(pl.UInt64).alias(working("items")))
    a = items.rename({model: "model_a", working("items"): working("items_a")})
    b = items.rename({model: "model_b", working("items"): working("items_b")})
    grid = a.join(b, on=keys, nulls_equal=True) if keys else a.join(b, how="cross")
    pair_keys = [*keys, "model_a", "model_b"]
    shared = joint.group_by(pair_keys).agg(
        pl.col(working("n")).sum().cast(pl.UInt64).alias("shared_items")
    )
    return (
        grid.filter(pl.col("model_a") < pl.col("model_b"))
        .join(shared, on=pair_keys, how="left", nulls_equal=True)
        .with_columns(pl.col("shared_items").fill_null(0))
        .select(
            *pair_keys,
            "shared_items",
            (pl.col(working("items_a")) - pl.col("shared_items")).alias("only_a"),
            (pl.col(working("items_b")) - pl.col("shared_items")).alias("only_b"),
        )
    )


_CHUNK = 4_000_000  # joint cells × replicates per vectorised block (bounds the memory)
_BYTES_PER_PAIR_CELL = 192  # the multinomial draws and about twenty float64 arrays per cell
_CELLS = ("n", "w_a", "r_a", "q_a", "w_b", "r_b", "q_b")
"""The joint cells' sums: items, and per model Σw, Σw·r, Σw·r² (columns ``working(name)``)."""
_CELL_KEYS = (f"{_BIN}_a", f"{_Y}_a", f"{_BIN}_b", f"{_Y}_b")


def _paired_draws(
    joint: pl.DataFrame,
    *,
    pair_keys: list[str],
    bounds: pl.DataFrame,
    replicates: int,
    level: float,
    seed: int,
    method: str,
) -> pl.DataFrame:
    """The numpy side: joint cells → replicated per-model bin statistics → differences."""
    joint = joint.sort([*pair_keys, *_CELL_KEYS], nulls_last=True)
    if joint.height == 0:
        return joint.select(pair_keys).with_columns(
            pl.lit(None, pl.Float64).alias(name) for name in _metric_columns()
        )
    segment = joint.select(pl.struct(pair_keys).rle_id()).to_series().to_numpy()
    sizes = np.bincount(segment)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    cells = {name: joint[working(name)].cast(pl.Float64).to_numpy() for name in _CELLS}
    cells |= {name: joint[name].cast(pl.Float64).to_numpy() for name in _CELL_KEYS}
    n_bins = bounds.height
    edges = (
        bounds["bin_lower"].fill_null(0.0).to_numpy() if "bin_lower" in bounds.columns
        else np.zeros(n_bins),
        bounds["bin_upper"].fill_null(1.0).to_numpy() if "bin_upper" in bounds.columns
        else np.ones(n_bins),
    )  # fmt: skip
    # a block holds at least one whole pair: its cells × replicates must fit
    check_memory(
        int(sizes.max()) * (replicates + 1),
        _BYTES_PER_PAIR_CELL,
        f"{int(sizes.max()):,} cells of one model pair × {replicates + 1:,} replicates",
    )
    rng = np.random.default_rng(seed)
    # blocks of whole model pairs with at most _CHUNK cells × replicates (memory bound)
    block = (starts * (replicates + 1)) // _CHUNK
    boot, perm = [], []
    for b in np.unique(block):  # a loop over memory blocks, not over rows or pairs
        chosen = np.flatnonzero(block == b)
        rows = slice(int(starts[chosen[0]]), int(starts[chosen[-1]] + sizes[chosen[-1]]))
        part = {name: values[rows] for name, values in cells.items()}
        local = segment[rows] - chosen[0]
        shape = _Shape(len(chosen), replicates, n_bins)
        boot.append(_bootstrap_metrics(part, local, edges, shape, rng))
        if method == "permutation":
            perm.append(_permuted_metrics(part, local, edges, shape, rng))
    metric = {m: np.concatenate([v[m] for v in boot]) for m in PAIRED_METRICS}
    permuted = {m: np.concatenate([v[m] for v in perm]) for m in PAIRED_METRICS} if perm else {}
    alpha = (1.0 - level) / 2.0
    columns: dict[str, np.ndarray] = {}
    for m in PAIRED_METRICS:
        both = metric[m]  # (pairs, replicates + 1, 2): the last replicate is observed
        difference = both[..., 0] - both[..., 1]
        observed, drawn = difference[:, -1], difference[:, :-1]
        low, high = np.quantile(drawn, [alpha, 1.0 - alpha], axis=1)
        threshold = (np.abs(observed) * (1.0 - 1e-12))[:, None]
        if method == "permutation":
            null = permuted[m][..., 0] - permuted[m][..., 1]
        else:
            null = drawn - observed[:, None]
        columns[f"{m}_a"], columns[f"{m}_b"] = both[:, -1, 0], both[:, -1, 1]
        columns[f"{m}_difference"] = observed
        columns[f"{m}_difference_ci_low"], columns[f"{m}_difference_ci_high"] = low, high
        extreme = (np.abs(null) >= threshold).sum(axis=1)
        columns[f"{m}_p_value"] = (1.0 + extreme) / (1.0 + replicates)
    firsts = joint.select(pair_keys).gather(starts)
    return firsts.with_columns(pl.Series(name, values) for name, values in columns.items())


def _metric_columns() -> list[str]:
    names = []
    for m in PAIRED_METRICS:
        for suffix in ("a", "b", "difference", "difference_ci_low", "difference_ci_high"):
            names.append(f"{m}_{suffix}")
        names.append(f"{m}_p_value")
    return names


class _Shape(NamedTuple):
    pairs: int
    replicates: int
    bins: int


def _targets(
    local: np.ndarray, bin_index: np.ndarray, y: np.ndarray, reps: int, bins: int
) -> np.ndarray:
    """Flat (pair, replicate, bin, outcome) index of each (cell, replicate)."""
    pair_rep = local[:, None] * reps + np.arange(reps)[None, :]
    flat: np.ndarray = ((pair_rep * bins + bin_index[:, None]) * 2 + y[:, None]).ravel()
    return flat


def _side(cells: dict[str, np.ndarray], side: str) -> tuple[np.ndarray, np.ndarray]:
    return cells[f"{_BIN}_{side}"].astype(np.int64), (cells[f"{_Y}_{side}"] > 0.5).astype(np.int64)


def _reduce(
    parts: Sequence[tuple[np.ndarray, Sequence[np.ndarray]]], shape: _Shape, reps: int, side: int
) -> pl.DataFrame:
    """Bin-statistics table keyed (pair, side, replicate) from (cell, replicate) sums.

    ``parts``: (flat targets, (W, R, Q) sums) whose contributions add up.
    """
    size = shape.pairs * reps * shape.bins * 2
    totals = [np.zeros(size) for _ in range(3)]
    for targets, sums in parts:
        for total, values in zip(totals, sums, strict=True):
            np.add(total, np.bincount(targets, weights=values.ravel(), minlength=size), out=total)
    w, r, q = (total.reshape(shape.pairs, reps, shape.bins, 2) for total in totals)
    return _bin_table(w, r, q, side=side)


def _bootstrap_metrics(
    cells: dict[str, np.ndarray],
    local: np.ndarray,
    edges: tuple[np.ndarray, np.ndarray],
    shape: _Shape,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Metrics (pairs, replicates + 1, side) of one block; the last replicate is observed."""
    n = cells["n"]
    reps = shape.replicates
    sizes = np.bincount(local, minlength=shape.pairs)
    position = np.arange(n.size) - np.concatenate([[0], np.cumsum(sizes)[:-1]])[local]
    padded = np.zeros((shape.pairs, int(sizes.max())))
    padded[local, position] = n
    total = padded.sum(axis=1).astype(np.int64)
    drawn = rng.multinomial(total[:, None], (padded / total[:, None])[:, None, :],
                            size=(shape.pairs, reps))  # fmt: skip
    n_star = drawn[local, :, position].astype(np.float64)  # (cells, replicates)
    tables = []
    for code, side in enumerate(("a", "b")):
        bin_index, y = _side(cells, side)
        lo, hi = edges[0][bin_index], edges[1][bin_index]
        r_low = np.where(y == 1, 1.0 - hi, lo)[:, None]
        r_high = np.where(y == 1, 1.0 - lo, hi)[:, None]
        w, r, q = (cells[f"{total}_{side}"][:, None] for total in ("w", "r", "q"))
        w_star, r_star, q_star = _resample_class(
            rng, n=n[:, None], n_star=n_star, sums=(w, r, q), bounds=(r_low, r_high)
        )
        sums = [np.concatenate([v, o], axis=1) for v, o in ((w_star, w), (r_star, r),
                                                            (q_star, q))]  # fmt: skip
        targets = _targets(local, bin_index, y, reps + 1, shape.bins)
        tables.append(_reduce([(targets, sums)], shape, reps + 1, code))
    return _metrics(tables, shape.pairs, reps + 1)


def _split(
    rng: np.random.Generator,
    n: np.ndarray,
    k: np.ndarray,
    sums: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Sums (W, R, Q) of a random k-subset of each cell of n items, and of the other n − k.

    ``sums`` are the cell's Σw, Σw·r, Σw·r². The subset carries k/n of the weight (its
    items the cell's mean weight w̄); its residual sum is its share of R plus a normal
    deviation of the without-replacement variance w̄·k(n − k)/(n − 1)·S/n, S = Σw(r − r̄)².
    """
    w, r, q = sums
    row_weight = _safe_divide(w, n)
    mean = _safe_divide(r, w)
    within = np.maximum(q - mean * r, 0.0)  # Σ w (r − r̄)² of the cell
    rest = n - k
    scale = _safe_divide(np.ones_like(within), n - 1.0)
    sd = np.sqrt(k * rest * _safe_divide(within, n) * scale * row_weight)
    bound = np.sqrt(within * rest**2 * k * scale * _safe_divide(np.ones_like(n), n) * row_weight)
    deviation = np.clip(sd * rng.standard_normal(k.shape), -bound, bound)
    w_sel = k * row_weight
    r_sel = w_sel * mean + deviation
    q_sel = _safe_divide(r_sel**2, w_sel) + within * np.maximum(k - 1.0, 0.0) * scale
    return (w_sel, r_sel, q_sel), (w - w_sel, r - r_sel, q - q_sel)


def _permuted_metrics(
    cells: dict[str, np.ndarray],
    local: np.ndarray,
    edges: tuple[np.ndarray, np.ndarray],
    shape: _Shape,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Metrics (pairs, replicates, side) after swapping a random half of the items."""
    del edges  # a swapped item keeps its bin and outcome under each model
    n = cells["n"][:, None]
    reps = shape.replicates
    k = rng.binomial(n.astype(np.int64), 0.5, size=(n.size, reps)).astype(np.float64)
    parts = {}
    for side in ("a", "b"):
        bin_index, y = _side(cells, side)
        w, r, q = (cells[f"{total}_{side}"][:, None] for total in ("w", "r", "q"))
        selected, rest = _split(rng, n, k, (w, r, q))
        target = _targets(local, bin_index, y, reps, shape.bins)
        parts[side] = (target, selected, rest)
    tables = []
    for code, (side, other) in enumerate((("a", "b"), ("b", "a"))):
        own_target, _, kept = parts[side]
        other_target, received, _ = parts[other]
        kept_sums = [np.broadcast_to(values, k.shape) for values in kept]
        tables.append(
            _reduce([(own_target, kept_sums), (other_target, received)], shape, reps, code)
        )
    return _metrics(tables, shape.pairs, reps)


def _metrics(tables: list[pl.DataFrame], pairs: int, reps: int) -> dict[str, np.ndarray]:
    metrics = metrics_from_bin_statistics(pl.concat(tables)).sort(_SEG, _REP, _SIDE)
    return {m: metrics[m].to_numpy().reshape(pairs, reps, 2) for m in PAIRED_METRICS}


def _bin_table(w: np.ndarray, r: np.ndarray, q: np.ndarray, *, side: int) -> pl.DataFrame:
    """A bin-statistics table keyed (pair, side, replicate) from (pair, rep, bin, y) sums.

    The bin bounds are left null and ``count`` is the rounded weight: accuracy, ECE and
    Brier score read the weight and residual sums only.
    """
    w1, w0, r1, r0, q1, q0 = w[..., 1], w[..., 0], r[..., 1], r[..., 0], q[..., 1], q[..., 0]
    weight = w1 + w0
    index = np.indices(weight.shape)
    size = weight.size
    frame = pl.DataFrame(
        {
            _SEG: index[0].ravel().astype(np.uint32),
            _SIDE: np.full(size, side, dtype=np.uint8),
            _REP: index[1].ravel().astype(np.uint32),
            "bin": index[2].ravel().astype(np.uint32),
            "bin_lower": pl.Series([None] * size, dtype=pl.Float64),
            "bin_upper": pl.Series([None] * size, dtype=pl.Float64),
            "closed": pl.Series([None] * size, dtype=pl.String),
            "count": np.rint(weight).ravel().astype(np.uint64),
            "weight": weight.ravel(),
            "mean_confidence": _safe_divide(w1 - r1 + r0, weight).ravel(),
            "accuracy": _safe_divide(w1, weight).ravel(),
            "weight_correct": w1.ravel(),
            "weight_wrong": w0.ravel(),
            "sum_confidence_correct": (w1 - r1).ravel(),
            "sum_residual_correct": r1.ravel(),
            "sum_residual_wrong": r0.ravel(),
            "sum_sq_residual_correct": q1.ravel(),
            "sum_sq_residual_wrong": q0.ravel(),
            "sum_log_loss": np.zeros(size),
        }
    )
    return frame.select(_SEG, _SIDE, _REP, *BIN_STATISTICS.names)
