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

(never 0; a Monte-Carlo estimate of the exact permutation p-value, whatever the
metric's bias).
``method="bootstrap"`` instead uses the bootstrap distribution shifted to zero,
(1 + #{ |d* − d| ≥ |d| }) / (1 + replicates): the test that inverts the basic bootstrap
interval; for ECE it is conservative (the bootstrap of a sum of absolute values is biased
near zero: 0.3% false positives at a nominal 5% on two calibrated models, measured).
Holm and Benjamini–Hochberg adjustments
(:func:`~calib_frames.estimators.multiple_testing.adjust_p_values`) treat all rows of the
result (every model pair on every task) as one family, per metric.

How it is computed (per group, in memory)
-----------------------------------------
Each model's accuracy, ECE and Brier score on a set of items are functions of one sum
over the items of a vector of K = M + 3 numbers per (item, model) row, x = (p − y in the
column of the row's bin (M columns), 1, y, (p − y)²), each item's vector counted w times
(w its weight, 1 without weights). With these sums, N = Σw, accuracy = Σwy/N, Brier =
Σw(p − y)²/N and ECE = Σ_b |Σ_{i∈b} w(p − y)|/N. A resampled set of items is a sum of the
item vectors times their multiplicities, so R replicates are one matrix product of an
R × items matrix of draws with the items × (models · K) table of the group, for all its
models at once:

* the **paired bootstrap** draws each replicate's item multiplicities as n draws with
  replacement from the group's n items (a Multinomial(n, 1/n) count per item); with
  weights, round(N) draws with probabilities w/N (Multinomial(round(N), w/N)); both
  models of a pair take the same multiplicities;
* the **permutation** draws, per item and replicate, the weight s that the two models
  swap: a swap indicator s ∈ {0, 1} without weights (with weights, the item's swapped
  units, below): model a's permuted sums are its own plus S·(X_b − X_a) over the shared
  items, model b's minus it.

Both are the exact item-level resampling (no approximation inside bins); the draws of a
group are shared by all its model pairs (each pair's interval and p-value are those of
its own items; their Monte-Carlo errors are correlated across the pairs of a group).
Cost: replicates × items × models × (M + 3) multiply-adds per group and method (BLAS
matrix products, in blocks of replicates), then the three metrics per pair and
replicate; memory: one block of draws and the pairs × replicates bootstrap differences
of a block of groups.

Items present for only one model of a pair are not silently dropped: they are counted in
``only_a`` and ``only_b``; the difference uses the shared items only. When the two models
of a pair answered different item sets, the group's multinomial draws restricted to their
shared items are a bootstrap of those items with a random number of draws
(Binomial(n, shared/n)); a replicate that draws none of them is left out of the interval.

**Weights are frequencies**: a weight of k is k identical items, answered alike by
every model, in the point values and in both tests, so that the same predictions as rows
and as count-weighted rows (identical items merged, weight = count) give the same
differences, and p-values and intervals equal up to resampling noise. Each model's
accuracy, ECE and Brier score are the weighted ones of
:func:`~calib_frames.calibration_metrics` over the shared items. The bootstrap draws
round(N) items (at least 1 when N > 0), each with probability w/N, as the bin-table
bootstrap (:mod:`calib_frames.estimators.bootstrap`) does; the permutation swaps each
unit of an item on its own: an item of weight w is ⌊w⌋ units of weight 1 and one of
weight w − ⌊w⌋, each swapped with probability ½ (a Binomial(⌊w⌋, ½) count, plus the
remainder with probability ½), so an item of weight below 1 is swapped whole. A weight
belongs to the item, not to a model: two models of a group that weight one item
differently are refused (DataError). Weights that are all 1 draw exactly as no weights.
Weights that are not counts (importance weights) give the right point differences but
not the right uncertainty, as for the noise floor (README, "Weights are frequencies").

Replicates. ``replicates=10000`` by default: the p-values of many model pairs and tasks
are corrected together (Holm, BH), and a permutation p-value cannot fall below
1/(replicates + 1), so fewer replicates would leave no p-value small enough to survive
the correction of a large family.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import partial
from typing import Literal, NamedTuple

import numpy as np
import polars as pl

from calib_frames.arguments import RESAMPLING, Options, check_arguments
from calib_frames.binning import BINS, BinsLike, as_binning
from calib_frames.estimators._groups import require_prediction_columns
from calib_frames.estimators.multiple_testing import adjust_p_values
from calib_frames.exceptions import ArgumentError
from calib_frames.validation import (
    LARGEST_COUNT,
    Frame,
    RowCheck,
    as_lazy,
    check_memory,
    check_rows,
    group_keys,
    prediction_checks,
    return_like,
    working,
)

__all__ = ["PAIRED_METRICS", "paired_comparison"]

PAIRED_METRICS = ("accuracy", "ece", "brier")
"""Metrics whose paired differences are reported."""

_BIN, _Y, _D, _W = working("bin"), working("y"), working("d"), working("w")


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
        Optional column of finite weights ≥ 0, frequencies: a weight of k is k identical
        items (module docstring), the same for every model that answered the item;
        ``None``: every item weighs 1.
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
        Invalid confidences, outcomes or weights, null models or items, an item that
        appears twice for one model in a group, an item weighted differently by two
        models, or one model's weights in a group adding up to more than 2**53 (checked
        when the result is collected).
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
    if weight is not None:  # a frequency is the item's: the same for every model
        item_keys = [*keys, item]
        checks.append(
            RowCheck(
                weight,
                "weighted differently by different models (a weight is the item's "
                "frequency, the same for every model that answered it)",
                (pl.col(weight).n_unique().over(item_keys) > 1)
                & pl.struct(item_keys).is_first_distinct(),
                total=pl.struct(item_keys).n_unique(),
                unit="items",
            )
        )
        checks.append(
            RowCheck(
                weight,
                "in a group where one model's weights add up to more than 2**53 (weights "
                "are frequencies: the bootstrap draws that many items)",
                pl.col(weight).cast(pl.Float64).sum().over([*keys, model]) > LARGEST_COUNT,
                show_value=False,
            )
        )
    inputs = [*keys, model, item, confidence, correct, *([weight] if weight else [])]
    inputs = list(dict.fromkeys(inputs))
    checked = check_rows(source.select(inputs), checks, keys=[*keys, model, item]).select(
        *keys,
        pl.col(model),
        pl.col(item),
        binning.assign(p, keys=[*keys, model]).alias(_BIN),
        y.alias(_Y),
        (p - y).alias(_D),
        w.alias(_W),
    )
    out_schema: dict[str, pl.DataType] = {
        **{k: schema[k] for k in keys},
        "model_a": schema[model],
        "model_b": schema[model],
        "shared_items": pl.UInt64(),
        "only_a": pl.UInt64(),
        "only_b": pl.UInt64(),
        **dict.fromkeys(_metric_columns(), pl.Float64()),
    }
    table = partial(
        _paired_table,
        keys=keys,
        model=model,
        item=item,
        bins=binning.n_bins,
        draws=_Draws(replicates, level, seed, method),
        schema=out_schema,
    )
    result = checked.map_batches(table, schema=out_schema).sort(
        [*keys, "model_a", "model_b"], nulls_last=True
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


class _Draws(NamedTuple):
    """The resampling settings of a call."""

    replicates: int
    level: float
    seed: int
    method: str


_SUMS = 3
"""Sums after the M bin columns of a row's vector: w, w·y, w·(p − y)²."""
_BLOCK_CELLS = 4_000_000  # groups × replicates × items of one block of draws
_BLOCK_PAIRS = 8_000_000  # pairs × replicates whose bootstrap differences a block keeps
_BYTES_PER_PAIR_REPLICATE = 8 * len(PAIRED_METRICS)


def _metric_columns() -> list[str]:
    names = []
    for m in PAIRED_METRICS:
        for suffix in ("a", "b", "difference", "difference_ci_low", "difference_ci_high"):
            names.append(f"{m}_{suffix}")
        names.append(f"{m}_p_value")
    return names


def _paired_table(
    frame: pl.DataFrame,
    *,
    keys: list[str],
    model: str,
    item: str,
    bins: int,
    draws: _Draws,
    schema: dict[str, pl.DataType],
) -> pl.DataFrame:
    """The numpy side: checked rows → every model pair of every group, with the tests."""
    if frame.height == 0:
        return pl.DataFrame(schema=schema)
    frame = frame.sort([*keys, item, model], nulls_last=True)
    codes = frame.select(
        (pl.struct(keys).rle_id() if keys else pl.repeat(0, pl.len())).alias("g"),
        pl.struct(*keys, item).rle_id().alias("i"),
        (pl.col(model).rank("dense") - 1).alias("m"),
    )
    group, item_code, model_code = (codes[c].to_numpy().astype(np.int64) for c in codes.columns)
    layout = _Layout.of(group, item_code, model_code)
    pairs = layout.pairs()
    if pairs.group.size == 0:
        return pl.DataFrame(schema=schema)
    values = {name: np.full(pairs.group.size, np.nan) for name in _metric_columns()}
    rows = _RowVectors.of(frame, bins)
    rng = np.random.default_rng(draws.seed)
    for block in layout.blocks(pairs, draws.replicates):
        _test_block(
            block, layout=layout, pairs=pairs, rows=rows, draws=draws, rng=rng, values=values
        )
    models = frame[model].unique().sort()
    firsts = frame.select(keys).gather(layout.first_row[pairs.group]) if keys else None
    columns = [
        *([] if firsts is None else firsts.get_columns()),
        models.gather(layout.model_of[pairs.first]).alias("model_a"),
        models.gather(layout.model_of[pairs.second]).alias("model_b"),
        pl.Series("shared_items", pairs.shared, dtype=pl.UInt64),
        pl.Series("only_a", pairs.only_first, dtype=pl.UInt64),
        pl.Series("only_b", pairs.only_second, dtype=pl.UInt64),
        *(pl.Series(name, value).fill_nan(None) for name, value in values.items()),
    ]
    return pl.DataFrame(columns).select(list(schema))


class _Pairs(NamedTuple):
    """Every model pair of every group (local model indices a < b), with item counts."""

    group: np.ndarray  # (P,) the pair's group
    first: np.ndarray  # (P,) index into _Layout.model_of of model a
    second: np.ndarray  # (P,) and of model b
    shared: np.ndarray  # (P,) items both answered
    only_first: np.ndarray
    only_second: np.ndarray


class _Layout(NamedTuple):
    """Rows sorted by (group, item, model): each group's items and models, numbered."""

    first_row: np.ndarray  # (G,) the group's first row
    rows: np.ndarray  # (G,) its row count
    items: np.ndarray  # (G,) its item count
    model_start: np.ndarray  # (G,) its first entry in model_of
    models: np.ndarray  # (G,) its model count
    model_of: np.ndarray  # (Σ models,) the model code of each (group, model) entry
    item_of_row: np.ndarray  # (n,) the row's item within its group
    model_of_row: np.ndarray  # (n,) the row's model within its group

    @classmethod
    def of(cls, group: np.ndarray, item: np.ndarray, model: np.ndarray) -> _Layout:
        first_row = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        rows = np.diff(np.r_[first_row, group.size])
        items = item[np.r_[first_row[1:], group.size] - 1] - item[first_row] + 1
        n_models = int(model.max()) + 1
        entry = np.unique(group * n_models + model)  # (group, model) pairs, sorted
        entry_group = entry // n_models
        model_start = np.searchsorted(entry_group, np.arange(first_row.size))
        models = np.diff(np.r_[model_start, entry.size])
        local_model = np.searchsorted(entry, group * n_models + model) - model_start[group]
        return cls(
            first_row, rows, items, model_start, models, entry % n_models,
            item - item[first_row][group], local_model,
        )  # fmt: skip

    def presence(self, g: int) -> np.ndarray:
        """(items, models) of group ``g``: which model answered which item."""
        seen = np.zeros((int(self.items[g]), int(self.models[g])), dtype=bool)
        rows = slice(int(self.first_row[g]), int(self.first_row[g] + self.rows[g]))
        seen[self.item_of_row[rows], self.model_of_row[rows]] = True
        return seen

    def pairs(self) -> _Pairs:
        """Every pair a < b of each group's models, with shared / only-a / only-b items."""
        parts: list[tuple[np.ndarray, ...]] = []
        for g in np.flatnonzero(self.models > 1):  # bookkeeping per group, no row work
            seen = self.presence(int(g))
            a, b = np.triu_indices(int(self.models[g]), 1)
            answered = seen.sum(axis=0)
            shared = (seen[:, a] & seen[:, b]).sum(axis=0)
            start = self.model_start[g]
            only_a, only_b = answered[a] - shared, answered[b] - shared
            parts.append((np.full(a.size, g), start + a, start + b, shared, only_a, only_b))
        if not parts:
            return _Pairs(*(np.zeros(0, dtype=np.int64) for _ in range(6)))
        columns = zip(*parts, strict=True)
        return _Pairs(*(np.concatenate(column).astype(np.int64) for column in columns))

    def blocks(self, pairs: _Pairs, replicates: int) -> list[np.ndarray]:
        """Groups with pairs sharing items, in blocks of similar item counts."""
        tested = np.unique(pairs.group[pairs.shared > 0])
        order = tested[np.argsort(-self.items[tested], kind="stable")]
        count = np.bincount(pairs.group, minlength=self.items.size)
        largest = int(count[order].max()) if order.size else 0
        check_memory(
            largest * replicates,
            _BYTES_PER_PAIR_REPLICATE,
            f"{largest:,} model pairs of one group × {replicates:,} replicates",
        )
        blocks: list[np.ndarray] = []
        current: list[int] = []
        width = held = 0
        for g in order:
            width = max(width, int(self.items[g]))
            held += int(count[g]) * replicates
            if current and ((len(current) + 1) * width > _BLOCK_CELLS or held > _BLOCK_PAIRS):
                blocks.append(np.array(current))
                current, width, held = [], int(self.items[g]), int(count[g]) * replicates
            current.append(int(g))
        if current:
            blocks.append(np.array(current))
        return blocks


class _RowVectors(NamedTuple):
    """Each row's K = M + 3 numbers: p − y in its bin's column, 1, y, (p − y)²; its weight."""

    bins: int
    bin: np.ndarray  # (n,) the row's bin
    sums: np.ndarray  # (n, 1 + _SUMS): p − y, 1, y, (p − y)²
    weight: np.ndarray | None  # (n,) the row's item's weight; None: every weight is 1

    @classmethod
    def of(cls, frame: pl.DataFrame, bins: int) -> _RowVectors:
        d, w = frame[_D].to_numpy(), frame[_W].to_numpy()
        sums = np.stack([d, np.ones_like(d), frame[_Y].to_numpy(), d * d], axis=1)
        weight = None if (w == 1.0).all() else w
        return cls(bins, frame[_BIN].to_numpy().astype(np.int64), sums, weight)


def _test_block(
    block: np.ndarray,
    *,
    layout: _Layout,
    pairs: _Pairs,
    rows: _RowVectors,
    draws: _Draws,
    rng: np.random.Generator,
    values: dict[str, np.ndarray],
) -> None:
    """Both resamplings of one block of groups; fills ``values`` at the block's pairs."""
    in_block = np.flatnonzero(np.isin(pairs.group, block) & (pairs.shared > 0))
    slot = np.searchsorted(np.sort(block), pairs.group[in_block])
    slot = np.argsort(block)[slot]  # the pair's group's place in the block
    table, column_a, column_b, weight = _block_table(
        block, layout=layout, pairs=pairs, rows=rows, in_block=in_block, slot=slot
    )
    n_items = layout.items[block]
    width, sums = table.shape[1], np.arange(table.shape[2])[:, None]
    # (Gb, K, C): the observed sums, each item's vector times its weight
    base = table.sum(axis=1) if weight is None else np.einsum("gikc,gi->gkc", table, weight)
    base_a, base_b = base[slot, sums, column_a], base[slot, sums, column_b]  # (K, P)
    observed = {}
    for m, (a, b) in _metrics(base_a, base_b).items():
        observed[m] = a - b
        values[f"{m}_a"][in_block], values[f"{m}_b"][in_block] = a, b
        values[f"{m}_difference"][in_block] = a - b
    reps = draws.replicates
    boot = {m: np.empty((in_block.size, reps)) for m in PAIRED_METRICS}
    extreme = {m: np.zeros(in_block.size) for m in PAIRED_METRICS}
    threshold = {m: np.abs(observed[m])[:, None] * (1.0 - 1e-12) for m in PAIRED_METRICS}
    flat = table.reshape(block.size, width, -1)
    shape = (block.size, -1, *table.shape[2:])
    chunk = max(1, _BLOCK_CELLS // (block.size * width))
    for start in range(0, reps, chunk):
        r = min(chunk, reps - start)
        # (K, P, r): each pair's two models' resampled sums
        multiplicity = (
            _multinomial(rng, n_items, r, width)
            if weight is None
            else _weighted_multinomial(rng, weight, r)
        )
        drawn = (multiplicity @ flat).reshape(shape)
        pair_a, pair_b = drawn[slot, :, sums, column_a], drawn[slot, :, sums, column_b]
        for m, (a, b) in _metrics(pair_a, pair_b).items():
            boot[m][:, start : start + r] = a - b
        if draws.method == "permutation":
            swapped = (
                _swaps(rng, block.size, r, width)
                if weight is None
                else _swapped_units(rng, weight, r)
            )
            moved = (swapped @ flat).reshape(shape)
            delta = moved[slot, :, sums, column_b] - moved[slot, :, sums, column_a]
            permuted = _metrics(base_a[..., None] + delta, base_b[..., None] - delta)
            for m, (a, b) in permuted.items():
                extreme[m] += (np.abs(a - b) >= threshold[m]).sum(axis=1)
    alpha = (1.0 - draws.level) / 2.0
    for m in PAIRED_METRICS:
        with warnings.catch_warnings():  # a pair whose every replicate missed its items
            warnings.simplefilter("ignore", RuntimeWarning)
            quantile = np.nanquantile if np.isnan(boot[m]).any() else np.quantile
            low, high = quantile(boot[m], [alpha, 1.0 - alpha], axis=1)
        values[f"{m}_difference_ci_low"][in_block] = low
        values[f"{m}_difference_ci_high"][in_block] = high
        if draws.method == "bootstrap":
            extreme[m] = (np.abs(boot[m] - observed[m][:, None]) >= threshold[m]).sum(axis=1)
        p_value = (1.0 + extreme[m]) / (1.0 + reps)
        values[f"{m}_p_value"][in_block] = np.where(np.isnan(observed[m]), np.nan, p_value)


def _block_table(
    block: np.ndarray,
    *,
    layout: _Layout,
    pairs: _Pairs,
    rows: _RowVectors,
    in_block: np.ndarray,
    slot: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The block's (groups, items, K, columns) table, each pair's two columns, item weights.

    A column is one model's rows. A pair whose two models answered different items gets
    two more columns: each model's rows on the items the other answered. The weights are
    (groups, items), 0 past a group's items; None when every weight is 1.
    """
    starts, counts = layout.first_row[block], layout.rows[block]
    row = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
    owner = np.repeat(np.arange(block.size), counts)
    item, model = layout.item_of_row[row], layout.model_of_row[row]
    width, n_models = int(layout.items[block].max()), int(layout.models[block].max())
    seen = np.zeros((block.size, width, n_models), dtype=bool)
    seen[owner, item, model] = True
    group = pairs.group[in_block]
    column_a = pairs.first[in_block] - layout.model_start[group]
    column_b = pairs.second[in_block] - layout.model_start[group]
    differ = np.flatnonzero((seen[slot, :, column_a] != seen[slot, :, column_b]).any(axis=1))
    order = np.argsort(slot[differ], kind="stable")
    rank = np.empty(differ.size, dtype=np.int64)  # the pair's place among its group's
    rank[order] = np.arange(differ.size) - np.searchsorted(slot[differ][order], slot[differ][order])
    extra = int(rank.max()) + 1 if differ.size else 0
    table = np.zeros((block.size, width, rows.bins + _SUMS, n_models + 2 * extra))
    table[owner, item, rows.bin[row], model] = rows.sums[row, 0]
    table[owner, item, rows.bins :, model] = rows.sums[row, 1:]
    if differ.size:
        at, a, b = slot[differ], column_a[differ], column_b[differ]
        first, second = n_models + 2 * rank, n_models + 2 * rank + 1
        table[at, :, :, first] = table[at, :, :, a] * seen[at, :, b][..., None]
        table[at, :, :, second] = table[at, :, :, b] * seen[at, :, a][..., None]
        column_a[differ], column_b[differ] = first, second
    if rows.weight is None:
        return table, column_a, column_b, None
    weight = np.zeros((block.size, width))
    weight[owner, item] = rows.weight[row]  # the item's, whichever model's row
    return table, column_a, column_b, weight


def _multinomial(rng: np.random.Generator, items: np.ndarray, reps: int, width: int) -> np.ndarray:
    """(groups, reps, width) multinomial counts of n draws with replacement from n items.

    n is each group's ``items``; the columns past them stay 0.
    """
    groups = items.size
    cells = groups * reps * width
    high = width if (items == width).all() else items[:, None, None]
    drawn = rng.integers(0, high, size=(groups, reps, width))
    drawn += (np.arange(groups * reps) * width).reshape(groups, reps, 1)
    if (items < width).any():  # groups with fewer items draw fewer times
        drawn = drawn[np.broadcast_to(np.arange(width) < items[:, None, None], drawn.shape)]
    counts = np.bincount(drawn.ravel(), minlength=cells).astype(np.float64)
    return counts.reshape(groups, reps, width)


def _weighted_multinomial(rng: np.random.Generator, weight: np.ndarray, reps: int) -> np.ndarray:
    """(groups, reps, items) Multinomial(round(N), w/N) counts: N = a group's total weight.

    A group with some weight draws at least 1; one without draws none.
    """
    groups = weight.shape[0]
    total = weight.sum(axis=1)
    draws = np.where(total > 0, np.maximum(np.rint(total), 1.0), 0.0).astype(np.int64)
    pvals = weight / np.where(total > 0, total, 1.0)[:, None]
    pvals[total == 0, 0] = 1.0
    counts = rng.multinomial(draws[:, None], pvals[:, None, :], size=(groups, reps))
    return counts.astype(np.float64)


def _swapped_units(rng: np.random.Generator, weight: np.ndarray, reps: int) -> np.ndarray:
    """(groups, reps, items) swapped weight: each whole unit and the remainder, each ½.

    An item of weight w is ⌊w⌋ units of weight 1 and one of weight w − ⌊w⌋, each swapped
    independently with probability ½: Binomial(⌊w⌋, ½) + (w − ⌊w⌋)·Bernoulli(½).
    """
    whole = np.floor(weight)
    shape = (weight.shape[0], reps, weight.shape[1])
    swapped = rng.binomial(whole.astype(np.int64)[:, None, :], 0.5, size=shape).astype(np.float64)
    remainder = weight - whole
    if remainder.any():
        swapped += remainder[:, None, :] * rng.integers(0, 2, size=shape)
    return swapped


def _swaps(rng: np.random.Generator, groups: int, reps: int, width: int) -> np.ndarray:
    """(groups, reps, width) independent fair 0/1 swap indicators."""
    bits = rng.integers(0, 256, size=(groups, reps, (width + 7) // 8), dtype=np.uint8)
    return np.unpackbits(bits, axis=-1, count=width).astype(np.float64)


def _metrics(a: np.ndarray, b: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Accuracy, ECE and Brier score of both models from their (K, ...) sums."""
    out: dict[str, list[np.ndarray]] = {m: [] for m in PAIRED_METRICS}
    for sums in (a, b):
        bins = sums.shape[0] - _SUMS
        n = sums[bins]
        with np.errstate(invalid="ignore", divide="ignore"):
            out["accuracy"].append(sums[bins + 1] / n)  # NaN without weight
        gaps = np.abs(sums[:bins]).sum(axis=0)
        for m, total in (("ece", gaps), ("brier", sums[bins + 2])):
            out[m].append(np.divide(total, n, out=np.zeros_like(total), where=n > 0))
    return {m: (first, second) for m, (first, second) in out.items()}
