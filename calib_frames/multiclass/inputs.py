"""The three input layouts → one long class-probability table, with its checks.

A list/array column, several per-class columns, or a long per-class frame (see
:mod:`calib_frames.multiclass`) all become the canonical long rows: keys…, ``item``,
``class``, ``probability``, ``is_label``, one row per item and class. Column checks go
through :func:`calib_frames.validation.require_columns` at call time; the per-item
checks (probabilities in [0, 1] summing to one, exactly one label naming a class, the
same classes for every item of a group) aggregate the rows by item and go through
:func:`calib_frames.validation.check_rows` when anything built on the rows is collected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from calib_frames.arguments import (
    COLUMN,
    FLAG,
    Constraint,
    InstanceOf,
    ListOf,
    Number,
    check_arguments,
)
from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.validation import (
    Frame,
    RowCheck,
    as_lazy,
    check_rows,
    group_keys,
    require_columns,
    return_like,
    working,
)

__all__ = ["ClassProbabilities", "ClassRows", "class_probability_rows"]

ITEM, CLASS, PROBABILITY, IS_LABEL = "item", "class", "probability", "is_label"
ORDER = working("order")
"""The class's position in class order (ties for the top label go to the first)."""

_LABEL, _LABEL_INDEX, _BAD_LABEL = working("label"), working("label_index"), working("bad_label")
_SUM, _LABELS, _NULL_LABELS = working("sum"), working("labels"), working("null_labels")
_BAD_P, _CLASSES = working("bad_p"), working("classes")
_RESERVED = (ITEM, CLASS, PROBABILITY, IS_LABEL, "confidence", "correct")

LAYOUT: dict[str, Constraint] = {
    "probabilities": COLUMN | ListOf(COLUMN, at_least=2, distinct=True),
    "label": COLUMN | ListOf(COLUMN),
    "item": COLUMN | None,
    "class_column": COLUMN | None,
    "classes": ListOf(InstanceOf(str, "a class name", "class names")) | None,
    "renormalize": FLAG,
    "tolerance": Number(at_least=0),
    "multilabel": FLAG,
}
"""The constraints of the layout arguments that the public functions of
:mod:`calib_frames.multiclass` take (:func:`~calib_frames.arguments.check_arguments`)."""


@dataclass(frozen=True)
class ClassRows:
    """The checked long rows of one call.

    Attributes
    ----------
    rows
        Keys…, ``item``, the class column, ``probability``, ``is_label`` and
        :data:`ORDER`; the item checks run when anything built on them is collected.
    keys
        The group keys.
    class_name
        The class column: ``class``, or the long layout's own class column.
    multilabel
        Whether any number of labels per item is allowed (no sum or label-count checks).
    """

    rows: pl.LazyFrame
    keys: list[str]
    class_name: str
    multilabel: bool


@dataclass(frozen=True)
class ClassProbabilities:
    """Where the class probabilities of a frame are, and how they are checked.

    The fields are the layout arguments of every public function of
    :mod:`calib_frames.multiclass`, in their order (see :func:`class_probability_rows`).
    """

    probabilities: str | Sequence[str]
    label: str | Sequence[str]
    item: str | None
    class_column: str | None
    by: str | Sequence[str] | None
    classes: Sequence[str] | None
    renormalize: bool
    tolerance: float
    multilabel: bool

    def rows(self, predictions: pl.DataFrame | pl.LazyFrame) -> ClassRows:
        """The long rows of ``predictions``, checked (see the module docstring)."""
        source = as_lazy(predictions)
        keys = group_keys(self.by)
        schema = source.collect_schema()
        require_columns(schema, {}, reserved=_RESERVED, keys=keys)
        probabilities = self.probabilities
        if isinstance(probabilities, str):
            _require(schema, {"probabilities": probabilities}, keys)
            listed = isinstance(schema[probabilities], pl.List | pl.Array)
            rows, class_name = (_from_list if listed else _from_long)(source, schema, self, keys)
        else:
            rows, class_name = _from_wide(source, schema, self, keys)
        if self.renormalize:
            total = pl.col(PROBABILITY).sum().over([*keys, ITEM])
            rows = rows.with_columns(
                pl.when(total > 0).then(pl.col(PROBABILITY) / total).otherwise(pl.col(PROBABILITY))
            )
        checked = _item_checks(rows, keys, self, _named(probabilities), _named(self.label))
        return ClassRows(checked, keys, class_name, self.multilabel)


@check_arguments(**LAYOUT)
def class_probability_rows(
    predictions: Frame,
    *,
    probabilities: str | Sequence[str],
    label: str | Sequence[str],
    item: str | None = None,
    class_column: str | None = None,
    by: str | Sequence[str] | None = None,
    classes: Sequence[str] | None = None,
    renormalize: bool = False,
    tolerance: float = 1e-4,
    multilabel: bool = False,
) -> Frame:
    """The canonical long table: one row per (item, class) with its probability.

    Parameters
    ----------
    predictions
        DataFrame or LazyFrame of per-class probabilities in one of the layouts of
        :mod:`calib_frames.multiclass` (a row per item, or a row per item and class).
    probabilities
        A list/array column, a sequence of per-class columns, or (long layout) the
        probability column.
    label
        The label: class index (list layout), class column name or index (wide), a
        boolean column (long); for multi-label wide data a sequence of boolean columns
        parallel to ``probabilities``.
    item
        Item id column (long layout: required; others: default the row number).
    class_column
        Class column of the long layout.
    by
        Group key column(s) kept in front.
    classes
        Wide layout: the class names of the probability columns, in their order
        (default: the column names); labels and the ``class`` key use them.
    renormalize
        Divide each item's probabilities by their sum instead of requiring sum 1.
    tolerance
        Largest accepted ``|Σ_k p_k − 1|`` per item.
    multilabel
        Allow any number of labels per item and any probability sums.

    Returns
    -------
    DataFrame or LazyFrame (same kind as the input)
        Keys…, ``item``, ``class``, ``probability`` (Float64), ``is_label`` (Boolean),
        one row per item and class. ``class`` is the long layout's class column name
        when given.

    Raises
    ------
    TableError
        Missing columns, wrong dtypes, a layout that does not fit the arguments.
    DataError
        Probabilities outside [0, 1] or null, items whose probabilities do not sum to
        one, items without exactly one label, labels that name no class (raised when
        the result is collected).
    ArgumentError
        Bad ``tolerance``.

    See Also
    --------
    multiclass_calibration : the summary of every notion per group.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.multiclass import class_probability_rows
    >>> df = pl.DataFrame({"probs": [[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]], "label": [0, 1]})
    >>> class_probability_rows(df, probabilities="probs", label="label")
    shape: (6, 4)
    ┌──────┬───────┬─────────────┬──────────┐
    │ item ┆ class ┆ probability ┆ is_label │
    │ ---  ┆ ---   ┆ ---         ┆ ---      │
    │ u32  ┆ u32   ┆ f64         ┆ bool     │
    ╞══════╪═══════╪═════════════╪══════════╡
    │ 0    ┆ 0     ┆ 0.7         ┆ true     │
    │ 0    ┆ 1     ┆ 0.2         ┆ false    │
    │ 0    ┆ 2     ┆ 0.1         ┆ false    │
    │ 1    ┆ 0     ┆ 0.3         ┆ false    │
    │ 1    ┆ 1     ┆ 0.3         ┆ true     │
    │ 1    ┆ 2     ┆ 0.4         ┆ false    │
    └──────┴───────┴─────────────┴──────────┘
    """
    layout = ClassProbabilities(
        probabilities, label, item, class_column, by, classes, renormalize, tolerance, multilabel
    )
    long = layout.rows(predictions)
    out = long.rows.select(*long.keys, ITEM, long.class_name, PROBABILITY, IS_LABEL)
    return return_like(predictions, out)


def _named(columns: str | Sequence[str]) -> str:
    """How a message names the column(s) of a role: ``'probs'`` or ``'p_a, p_b'``."""
    return columns if isinstance(columns, str) else ", ".join(columns)


def _require(
    schema: pl.Schema,
    columns: dict[str, str],
    keys: list[str],
    *,
    numeric: Sequence[str] = (),
    numbers: Sequence[str] = (),
) -> None:
    """:func:`~calib_frames.validation.require_columns`; no key names an input column."""
    require_columns(
        schema, columns, numeric=numeric, numbers=numbers, keys=keys, inputs_are_not_keys=True
    )


def _item_column(item: str | None, schema: pl.Schema, keys: list[str]) -> pl.Expr:
    """The item id: the ``item`` column, or the row number."""
    if item is None:
        return pl.int_range(pl.len(), dtype=pl.UInt32).alias(ITEM)
    _require(schema, {"item": item}, keys)
    return pl.col(item).alias(ITEM)


def _from_list(
    source: pl.LazyFrame, schema: pl.Schema, layout: ClassProbabilities, keys: list[str]
) -> tuple[pl.LazyFrame, str]:
    probabilities, label = layout.probabilities, layout.label
    assert isinstance(probabilities, str)
    if not isinstance(label, str):
        raise ArgumentError(
            "with a list column of probabilities, label= is one column of class indices"
        )
    _require(schema, {"label": label}, keys)
    if not schema[label].is_integer():
        raise TableError(
            f"column {label!r} (label) must hold integer class indices, got {schema[label]}"
        )
    item_expr = _item_column(layout.item, schema, keys)
    dtype = schema[probabilities]
    inner = dtype.inner if isinstance(dtype, pl.List | pl.Array) else None
    if not (isinstance(inner, pl.DataType) and inner.is_numeric()):
        raise TableError(
            f"column {probabilities!r} (probabilities) must hold lists of numbers, "
            f"got {schema[probabilities]}"
        )
    values = pl.col(probabilities)
    if isinstance(schema[probabilities], pl.Array):
        values = values.arr.to_list()
    rows = (
        source.select(
            *keys,
            item_expr,
            values.cast(pl.List(pl.Float64)).alias(PROBABILITY),
            pl.col(label).alias(_LABEL),
        )
        .with_columns(pl.int_ranges(pl.col(PROBABILITY).list.len(), dtype=pl.UInt32).alias(CLASS))
        .explode(PROBABILITY, CLASS)
        .with_columns(
            (pl.col(CLASS).cast(pl.Int64) == pl.col(_LABEL).cast(pl.Int64))
            .fill_null(False)
            .alias(IS_LABEL),
            pl.col(CLASS).alias(ORDER),
        )
    )
    return _with_label_checks(rows, pl.col(_LABEL).cast(pl.Int64), keys), CLASS


def _from_wide(
    source: pl.LazyFrame, schema: pl.Schema, layout: ClassProbabilities, keys: list[str]
) -> tuple[pl.LazyFrame, str]:
    columns, label = list(layout.probabilities), layout.label
    classes = None if layout.classes is None else list(layout.classes)
    names = columns if classes is None else classes
    if len(names) != len(columns) or len(set(names)) != len(names):
        raise ArgumentError(
            f"classes= must name each of the {len(columns)} probability columns' class once, "
            f"got {classes}"
        )
    roles = {f"probabilities[{i}]": c for i, c in enumerate(columns)}
    _require(schema, roles, keys, numbers=list(roles))
    item_expr = _item_column(layout.item, schema, keys)
    order = pl.col(CLASS).replace_strict(columns, list(range(len(columns))), return_dtype=pl.UInt32)
    rename = pl.col(CLASS).replace_strict(columns, names, return_dtype=pl.String)
    if not isinstance(label, str):
        labels = list(label)
        if not layout.multilabel or len(labels) != len(columns):
            raise ArgumentError(
                "label= as a list of columns is for multi-label data (multilabel=True), "
                "one boolean column per probability column"
            )
        label_roles = {f"label[{i}]": c for i, c in enumerate(labels)}
        _require(schema, label_roles, keys, numeric=list(label_roles))
        probs = source.select(*keys, item_expr, *columns).unpivot(
            index=[*keys, ITEM], on=columns, variable_name=CLASS, value_name=PROBABILITY
        )
        hits = source.select(
            *keys,
            item_expr,
            *[
                _is_label(pl.col(lab), schema[lab]).alias(col)
                for lab, col in zip(labels, columns, strict=True)
            ],
        ).unpivot(index=[*keys, ITEM], on=columns, variable_name=CLASS, value_name=IS_LABEL)
        rows = probs.join(hits, on=[*keys, ITEM, CLASS], nulls_equal=True).with_columns(
            pl.col(PROBABILITY).cast(pl.Float64), order.alias(ORDER), rename.alias(CLASS)
        )
        return _with_label_checks(rows, pl.lit(0), keys), CLASS
    _require(schema, {"label": label}, keys)
    label_dtype = schema[label]
    if label_dtype.is_integer():
        label_index = pl.col(_LABEL).cast(pl.Int64)
    elif label_dtype in (pl.String, pl.Categorical, pl.Enum) or isinstance(
        label_dtype, pl.Enum | pl.Categorical
    ):
        label_index = (
            pl.col(_LABEL)
            .cast(pl.String)
            .replace_strict(names, list(range(len(names))), default=None, return_dtype=pl.Int64)
        )
    else:
        raise TableError(
            f"column {label!r} (label) must hold class names or 0-based positions, "
            f"got {label_dtype}"
        )
    rows = (
        source.select(*keys, item_expr, pl.col(label).alias(_LABEL), *columns)
        .unpivot(
            index=[*keys, ITEM, _LABEL], on=columns, variable_name=CLASS, value_name=PROBABILITY
        )
        .with_columns(pl.col(PROBABILITY).cast(pl.Float64), order.alias(ORDER), rename.alias(CLASS))
        .with_columns(
            (pl.col(ORDER).cast(pl.Int64) == label_index).fill_null(False).alias(IS_LABEL),
            label_index.alias(_LABEL_INDEX),
        )
    )
    return _with_label_checks(rows, pl.col(_LABEL_INDEX), keys, n_classes=len(columns)), CLASS


def _from_long(
    source: pl.LazyFrame, schema: pl.Schema, layout: ClassProbabilities, keys: list[str]
) -> tuple[pl.LazyFrame, str]:
    probability, label = layout.probabilities, layout.label
    item, class_column = layout.item, layout.class_column
    assert isinstance(probability, str)
    if item is None or class_column is None or not isinstance(label, str):
        raise ArgumentError(
            f"probabilities={probability!r} is not a list column: for a long frame (one row per "
            "item and class) give item=, class_column= and label= (a boolean is-label column)"
        )
    _require(
        schema,
        {"probabilities": probability, "item": item, "class_column": class_column, "label": label},
        keys,
        numeric=["label"],
        numbers=["probabilities"],
    )
    rows = source.select(
        *keys,
        pl.col(item).alias(ITEM),
        pl.col(class_column),
        pl.col(probability).cast(pl.Float64).alias(PROBABILITY),
        _is_label(pl.col(label), schema[label]).alias(IS_LABEL),
        pl.col(class_column).alias(ORDER),
    )
    return rows.with_columns(pl.lit(False).alias(_BAD_LABEL)), class_column


def _is_label(label: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """A boolean label as is; numbers 0/1 as False/True, anything else null (an error)."""
    if dtype == pl.Boolean:
        return label
    value = label.cast(pl.Float64)
    return pl.when(value == 1.0).then(True).when(value == 0.0).then(False)


def _with_label_checks(
    rows: pl.LazyFrame, index: pl.Expr, keys: list[str], n_classes: int | None = None
) -> pl.LazyFrame:
    """Flag rows whose item's label names no class (null or out of range)."""
    limit = pl.col(CLASS).count().over([*keys, ITEM]) if n_classes is None else pl.lit(n_classes)
    bad = index.is_null() | (index < 0) | (index >= limit)
    return rows.with_columns(bad.alias(_BAD_LABEL))


def _item_checks(
    rows: pl.LazyFrame,
    keys: list[str],
    layout: ClassProbabilities,
    probabilities: str,
    label: str,
) -> pl.LazyFrame:
    """The rows, raising the item checks when (anything built on them is) collected.

    The checks aggregate the rows per item (the items are the checked rows of
    :func:`~calib_frames.validation.check_rows`); the checked items become an empty
    frame with the rows' schema, concatenated in front of the rows, so every consumer of
    the rows runs them before its own aggregation finishes. The long rows are cached
    (held in memory) because the checks and the metrics both read them.
    """
    item_keys = [*keys, ITEM]
    p = pl.col(PROBABILITY)
    rows = rows.cache()
    items = rows.group_by(item_keys).agg(
        p.sum().alias(_SUM),
        pl.col(IS_LABEL).sum().alias(_LABELS),
        pl.col(IS_LABEL).is_null().sum().alias(_NULL_LABELS),
        p.is_between(0.0, 1.0).not_().fill_null(True).sum().alias(_BAD_P),
        pl.col(_BAD_LABEL).any(),
        pl.len().alias(_CLASSES),
    )
    most = pl.col(_CLASSES).max()
    # ragged lists ([0.5, 0.5] next to [0.2, 0.3, 0.5]) would give the short items no
    # row for the missing classes: classwise counts silently differ between classes
    ragged = pl.col(_CLASSES) < (most.over(keys) if keys else most)

    def items_where(column: str, problem: str, bad: pl.Expr, count: str) -> RowCheck:
        """Items (not rows) that break a rule; the example shows its keys and item only."""
        return RowCheck(column, problem, bad, value=count, show_value=False, unit="items")

    checks = [
        items_where(
            probabilities,
            "outside [0, 1] in some class (a null, NaN or out-of-range probability)",
            pl.col(_BAD_P) > 0,
            _BAD_P,
        ),
        items_where(
            label,
            "not boolean in some class (a null label)",
            pl.col(_NULL_LABELS) > 0,
            _NULL_LABELS,
        ),
        items_where(
            probabilities,
            "short of classes (fewer class probabilities than other items of their group)",
            ragged,
            _CLASSES,
        ),
    ]
    if not layout.multilabel:
        if layout.renormalize:
            sum_bad, sum_problem = pl.col(_SUM) <= 0, "without a positive probability sum"
        else:
            sum_bad = (pl.col(_SUM) - 1.0).abs() > layout.tolerance
            sum_problem = (
                f"not normalised (the probabilities do not sum to 1 within "
                f"{layout.tolerance:g}; pass renormalize=True to divide by the sum)"
            )
        checks += [
            items_where(
                label,
                "labelled with no class (a label that names no class)",
                pl.col(_BAD_LABEL),
                _BAD_LABEL,
            ),
            RowCheck(
                probabilities,
                sum_problem,
                sum_bad & (pl.col(_BAD_P) == 0),
                value=_SUM,
                unit="items",
            ),
            items_where(
                label,
                "not labelled once (exactly one label is needed, not none or several)",
                (pl.col(_LABELS) != 1) & ~pl.col(_BAD_LABEL),
                _LABELS,
            ),
        ]
    schema = rows.collect_schema()
    empty = pl.DataFrame(schema=schema)
    checked = check_rows(items, checks, keys=item_keys).map_batches(lambda _: empty, schema=schema)
    return pl.concat([checked, rows])
