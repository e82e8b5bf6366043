"""Check the engine's tables and shape them into the small frames the charts draw.

Everything here is polars on tables that are already small (one row per group, or per
group and bin): no chart ever sees a prediction row. Nothing here imports altair. The
charts of :mod:`calib_frames.plot` and the report (:mod:`calib_frames.report`) read their
tables through these functions, so both accept and refuse the same tables.

Column names come from :mod:`calib_frames.schema`; the group keys of a table are the
columns before the first column of its spec (how the schema records them). The derived
columns the charts add all start with ``_`` so that they cannot clash with a key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from calib_frames.exceptions import ArgumentError, TableError
from calib_frames.metrics.registry import metric
from calib_frames.schema import METRICS, PERPLEXITY, Table

__all__ = [
    "COLOR",
    "COMPARISON_COLUMNS",
    "INTERNAL_COLUMNS",
    "PANEL",
    "Prepared",
    "bin_counts",
    "bin_label",
    "bin_rows",
    "by_label",
    "check_columns",
    "facet_columns",
    "frame",
    "group_label",
    "interval_columns",
    "key_split",
    "label_heights",
    "label_keys",
    "metric_table",
    "metrics_columns",
    "noise_status",
    "prepare",
    "records",
    "spec_keys",
]

# Derived columns of the chart data (never a user's key: they start with "_").
COLOR, PANEL = "_color", "_panel"
SEPARATOR = " · "
NULL_KEY = "(null)"
INTERNAL_COLUMNS = frozenset(
    {COLOR, PANEL, "_bin_mid", "_bin_range", "_direction", "_gap", "_metric", "_mid", "_order"}
    | {"_part", "_share", "_signed", "_term", "_value", "_x"}
    | {"_status", "_tested", "_verdict", "_extreme", "_label", "_label_y", "_labelled", "_side"}
)
"""Helper columns the charts add to a table; a group key may not carry one of these names."""

# A comparison table renames the perplexity table's row count ``nll_count``.
COMPARISON_COLUMNS = frozenset(METRICS.names) | frozenset(PERPLEXITY.names) | {"nll_count"}
"""Every column name of a metrics, perplexity or comparison table after its keys."""


def frame(table: object, role: str) -> pl.DataFrame:
    """``table`` as an eager DataFrame (a LazyFrame is collected: it is a small table).

    Parameters
    ----------
    table
        A polars DataFrame or LazyFrame.
    role
        What the table is for, as error messages name it (``"reliability_diagram"``).

    Returns
    -------
    polars.DataFrame
        The table, collected.

    Raises
    ------
    ArgumentError
        If ``table`` is not a polars frame.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import frame
    >>> frame(pl.LazyFrame({"ece": [0.1]}), "chart").shape
    (1, 1)
    >>> frame({"ece": [0.1]}, "chart")
    Traceback (most recent call last):
    calib_frames.exceptions.ArgumentError: chart: expected a polars DataFrame or LazyFrame, got dict
    """
    if isinstance(table, pl.LazyFrame):
        return table.collect()
    if isinstance(table, pl.DataFrame):
        return table
    raise ArgumentError(
        f"{role}: expected a polars DataFrame or LazyFrame, got {type(table).__name__}"
    )


def key_split(schema: pl.Schema, first_columns: Sequence[str] | frozenset[str]) -> list[str]:
    """The keys: the columns before the first one that belongs to the table's spec.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import COMPARISON_COLUMNS, key_split
    >>> key_split(pl.Schema({"model": pl.String, "task": pl.String, "ece": pl.Float64}),
    ...           COMPARISON_COLUMNS)
    ['model', 'task']
    """
    names = schema.names()
    for position, name in enumerate(names):
        if name in first_columns:
            return names[:position]
    return names


def check_columns(
    schema: pl.Schema,
    required: Sequence[str],
    *,
    role: str,
    built_by: str,
    numeric: Sequence[str] = (),
) -> None:
    """Raise :class:`TableError` for missing or non-numeric columns, naming them all.

    ``built_by`` names the function that builds such a table (a hint in the message;
    ``""`` for none).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import check_columns
    >>> schema = pl.Schema({"model": pl.String, "ece": pl.String})
    >>> check_columns(schema, ["ece", "mce"], role="metrics table", built_by="")
    Traceback (most recent call last):
    calib_frames.exceptions.TableError: not a metrics table: missing columns ['mce']
    >>> check_columns(schema, ["ece"], role="metrics table", built_by="", numeric=["ece"])
    Traceback (most recent call last):
    calib_frames.exceptions.TableError: metrics table: columns ['ece (String)'] must be numeric
    """
    names = schema.names()
    missing = [name for name in required if name not in names]
    if missing:
        hint = f"; build one with calib_frames.{built_by}" if built_by else ""
        raise TableError(f"not a {role}: missing columns {missing}{hint}")
    wrong = [
        f"{name} ({schema[name]})"
        for name in numeric
        if name in names and not schema[name].is_numeric()
    ]
    if wrong:
        raise TableError(f"{role}: columns {wrong} must be numeric")


def spec_keys(table: pl.DataFrame, spec: Table, role: str) -> list[str]:
    """Keys of a table checked against ``spec`` (a TableError names what is missing).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot.frames import spec_keys
    >>> from calib_frames.schema import RELIABILITY
    >>> stats = cf.bin_statistics(pl.DataFrame({"model": ["a"], "confidence": [0.7],
    ...                                         "correct": [True]}), by="model")
    >>> spec_keys(stats, RELIABILITY, "bin table")
    ['model']
    """
    numeric = [name for name, dtype in spec.columns.items() if dtype.is_numeric()]
    check_columns(
        table.schema,
        [c for c in spec.names if c not in spec.optional],
        role=role,
        built_by=spec.built_by,
        numeric=[c for c in numeric if c in table.schema],
    )
    return spec.keys(table.schema)


def group_label(keys: Sequence[str]) -> pl.Expr:
    """One string naming a group: its key values joined by " · " (nulls spelled out).

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import group_label
    >>> table = pl.DataFrame({"model": ["a", None], "task": ["x", "y"]})
    >>> table.select(group_label(["model", "task"])).to_series().to_list()
    ['a · x', '(null) · y']
    """
    if not keys:
        return pl.lit("all")
    parts = [pl.col(key).cast(pl.String).fill_null(NULL_KEY) for key in keys]
    return pl.concat_str(parts, separator=SEPARATOR) if len(parts) > 1 else parts[0]


def bin_label(has_closed: bool) -> pl.Expr:
    """The bin's range as text: ``[0.8, 0.9)`` following its closedness, else ``0.8–0.9``.

    The first and last bin of a group are closed at the outer end. Reads ``bin``,
    ``bin_lower``, ``bin_upper`` (and ``closed`` with ``has_closed``) of a prepared table.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import bin_label
    >>> bins = pl.DataFrame({"_panel": "all", "_color": "all", "bin": [0, 1],
    ...                      "bin_lower": [0.0, 0.5], "bin_upper": [0.5, 1.0], "closed": "left"})
    >>> bins.select(bin_label(True)).to_series().to_list()
    ['[0.0, 0.5)', '[0.5, 1.0]']
    """
    low = pl.col("bin_lower").round(4).cast(pl.String)
    high = pl.col("bin_upper").round(4).cast(pl.String)
    plain = pl.concat_str(low, pl.lit("–"), high)
    if not has_closed:
        return plain
    first = pl.col("bin") == pl.col("bin").min().over(pl.col(PANEL), pl.col(COLOR))
    last = pl.col("bin") == pl.col("bin").max().over(pl.col(PANEL), pl.col(COLOR))
    left = pl.col("closed") == "left"
    right = pl.col("closed") == "right"
    opening = pl.when(left | first).then(pl.lit("[")).otherwise(pl.lit("("))
    closing = pl.when(right | last).then(pl.lit("]")).otherwise(pl.lit(")"))
    bracketed = pl.concat_str(opening, low, pl.lit(", "), high, closing)
    return pl.when(left | right).then(bracketed).otherwise(plain)


@dataclass(frozen=True)
class Prepared:
    """A table ready to chart: its frame, keys and which keys colour and which facet."""

    data: pl.DataFrame
    keys: list[str]
    color: list[str]
    facet: list[str]
    color_order: tuple[str, ...] = ()
    """Colour-group labels in key order (see :func:`prepare`); empty: sort the labels."""

    @property
    def panels(self) -> list[str]:
        """Panel labels in drawing order."""
        return self.data.get_column(PANEL).unique(maintain_order=True).to_list()

    @property
    def colors(self) -> list[str]:
        """Colour-group labels in legend order: the order of the colour keys' values."""
        if self.color_order:
            return list(self.color_order)
        return sorted(self.data.get_column(COLOR).unique().to_list())


def _as_keys(value: str | Sequence[str] | None, keys: Sequence[str], name: str) -> list[str]:
    if value is None:
        return []
    chosen = [value] if isinstance(value, str) else list(value)
    unknown = [c for c in chosen if c not in keys]
    if unknown:
        raise ArgumentError(f"{name}= names {unknown}, which are not group keys {list(keys)}")
    if len(set(chosen)) != len(chosen):
        raise ArgumentError(f"{name}= names a key twice: {chosen}")
    return chosen


def prepare(
    table: pl.DataFrame,
    keys: list[str],
    *,
    color: str | Sequence[str] | None,
    facet: str | Sequence[str] | None,
    default_facet: Sequence[str] = (),
) -> Prepared:
    """Add the ``_color`` and ``_panel`` label columns and sort by panel, colour.

    ``facet`` keys make one panel per combination; ``color`` keys one colour per
    combination inside a panel (default: the keys not faceted). Keys sort by value:
    an Enum in its categories' order (``stage``: before, after), a Categorical in
    order of first appearance, numbers numerically, text alphabetically; the legend
    and the panels follow that order, not the order of the labels as text.

    Raises
    ------
    TableError
        If a key carries the name of a column the charts add (:data:`INTERNAL_COLUMNS`).
    ArgumentError
        If ``color``/``facet`` name something that is not a key, or the same key.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import prepare
    >>> table = pl.DataFrame({"model": ["b", "a", "a"], "task": ["x", "y", "x"]})
    >>> ready = prepare(table, ["model", "task"], color=None, facet="task")
    >>> ready.color, ready.panels, ready.colors
    (['model'], ['x', 'y'], ['a', 'b'])
    """
    internal = sorted(key for key in keys if key in INTERNAL_COLUMNS)
    if internal:
        raise TableError(
            f"group key(s) {internal} clash with the chart's own columns; rename them, "
            f"e.g. table.rename({{{internal[0]!r}: {internal[0].lstrip('_') + '_key'!r}}})"
        )
    facet_keys = _as_keys(facet, keys, "facet") if facet is not None else list(default_facet)
    if color is None:
        color_keys = [key for key in keys if key not in facet_keys]
    else:
        color_keys = _as_keys(color, keys, "color")
        overlap = [key for key in color_keys if key in facet_keys]
        if overlap:
            raise ArgumentError(f"keys {overlap} are given to both color= and facet=")
    data = table.with_columns(
        group_label(color_keys).alias(COLOR),
        group_label(facet_keys).alias(PANEL),
    )
    order = [*facet_keys, *color_keys]
    if order:
        data = data.sort(
            [_sort_key(data, key) for key in order], nulls_last=True, maintain_order=True
        )
    color_order: tuple[str, ...] = ()
    if color_keys:
        combos = data.select(*color_keys, COLOR).unique(maintain_order=True)
        combos = combos.sort(
            [_sort_key(data, key) for key in color_keys], nulls_last=True, maintain_order=True
        )
        color_order = tuple(combos.get_column(COLOR).unique(maintain_order=True).to_list())
    return Prepared(data, keys, color_keys, facet_keys, color_order)


def _sort_key(data: pl.DataFrame, key: str) -> pl.Expr:
    """Sort expression of one key: a Categorical by first appearance in ``data``."""
    if data.schema[key] == pl.Categorical:
        first = data.get_column(key).unique(maintain_order=True)
        return (
            pl.col(key)
            .cast(pl.String)
            .replace_strict(
                first.cast(pl.String), pl.int_range(first.len(), eager=True), default=None
            )
        )
    return pl.col(key)


def facet_columns(
    panels: int, facet_keys: Sequence[str], data: pl.DataFrame, wanted: int | None
) -> int:
    """Panels per row: ``wanted``, else the values of the last of two or more facet keys.

    With one facet key, up to four panels a row.
    """
    if wanted is not None:  # checked by the chart function (PANELS)
        return wanted
    if len(facet_keys) >= 2:
        return max(1, data.get_column(facet_keys[-1]).n_unique())
    return max(1, min(panels, 4))


def bin_rows(prepared: Prepared) -> pl.DataFrame:
    """Every bin of a prepared bin table, typed for the charts and with its range as text.

    ``count`` as Int64; ``mean_confidence``, ``accuracy``, ``bin_lower``, ``bin_upper`` as
    Float64; ``_bin_range`` (:func:`bin_label`).
    """
    bins = prepared.data.with_columns(
        pl.col("count").cast(pl.Int64),
        pl.col("mean_confidence", "accuracy", "bin_lower", "bin_upper").cast(pl.Float64),
    )
    return bins.with_columns(bin_label("closed" in bins.columns).alias("_bin_range"))


def bin_counts(bins: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """The bins of :func:`bin_rows` that have bounds, with their midpoint and share.

    Columns: the keys, ``_color``, ``_panel``, ``bin``, ``_bin_range``, ``bin_lower``,
    ``bin_upper``, ``_bin_mid`` (the bin's middle), ``count`` and ``_share`` (the bin's
    share of its group's predictions: its colour group's within its panel).

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.plot.frames import bin_counts, bin_rows, prepare
    >>> stats = cf.bin_statistics(pl.DataFrame({"confidence": [0.1, 0.7, 0.8],
    ...                                         "correct": [0, 1, 1]}), bins=2)
    >>> counts = bin_counts(bin_rows(prepare(stats, [], color=None, facet=None)), [])
    >>> counts.select("_bin_range", "_bin_mid", "count", "_share").rows()
    [('[0.0, 0.5)', 0.25, 1, 0.3333333333333333), ('[0.5, 1.0]', 0.75, 2, 0.6666666666666666)]
    """
    bounded = bins.filter(pl.col("bin_lower").is_not_null(), pl.col("bin_upper").is_not_null())
    return bounded.with_columns(
        ((pl.col("bin_lower") + pl.col("bin_upper")) / 2).alias("_bin_mid"),
        (pl.col("count") / pl.col("count").sum().over(PANEL, COLOR)).alias("_share"),
    ).select(
        *keys,
        COLOR,
        PANEL,
        "bin",
        "_bin_range",
        "bin_lower",
        "bin_upper",
        "_bin_mid",
        "count",
        "_share",
    )


def metrics_columns(
    metrics: pl.DataFrame, keys: Sequence[str], columns: Sequence[str], *, role: str
) -> pl.DataFrame:
    """The ``columns`` of a metrics (or comparison) table, one row per group of ``keys``.

    Raises
    ------
    TableError
        If the table lacks a column or is not keyed by exactly ``keys``.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import metrics_columns
    >>> metrics = pl.DataFrame({"model": ["a"], "count": [3], "ece": [0.1], "mce": [0.2]})
    >>> metrics_columns(metrics, ["model"], ["ece"], role="chart").columns
    ['model', 'ece']
    """
    metric_keys = key_split(metrics.schema, COMPARISON_COLUMNS)
    if sorted(metric_keys) != sorted(keys):
        raise TableError(
            f"{role}: the metrics table is grouped by {metric_keys}, the bin table by "
            f"{list(keys)}; compute both with the same by="
        )
    check_columns(
        metrics.schema, columns, role=role, built_by="calibration_metrics", numeric=columns
    )
    duplicated = metrics.select(keys).is_duplicated().any() if keys else metrics.height > 1
    if duplicated:
        raise TableError(f"{role}: the metrics table has more than one row for some group")
    return metrics.select(*keys, *columns)


def interval_columns(schema: pl.Schema, column: str, *, role: str) -> tuple[str, str] | None:
    """The bounds of ``column``'s interval when the table has both (checked numeric), else None.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import interval_columns
    >>> schema = pl.Schema({"ece": pl.Float64, "ece_ci_low": pl.Float64,
    ...                     "ece_ci_high": pl.Float64, "mce": pl.Float64})
    >>> interval_columns(schema, "ece", role="chart"), interval_columns(schema, "mce", role="chart")
    (('ece_ci_low', 'ece_ci_high'), None)
    """
    low, high = metric(column).bounds
    if low not in schema or high not in schema:
        return None
    check_columns(schema, [low, high], role=role, built_by="", numeric=[low, high])
    return low, high


def metric_table(
    table: object, name: str, columns: list[str], *, role: str, built_by: str
) -> tuple[pl.DataFrame, list[str]]:
    """The table and its keys, checked to hold the numeric ``columns``."""
    data = frame(table, name)
    keys = key_split(data.schema, COMPARISON_COLUMNS)
    if len(keys) == len(data.columns):
        raise TableError(
            f"not a {role}: no metric column found; build one with "
            "calib_frames.calibration_metrics or calib_frames.comparison_table"
        )
    check_columns(data.schema, columns, role=role, built_by=built_by, numeric=columns)
    return data, keys


def label_keys(label: str | None, keys: list[str]) -> list[str]:
    """The key that names the marks: ``label``, else the first key."""
    if label is not None and label not in keys:
        raise ArgumentError(f"label= names {label!r}, which is not a group key {keys}")
    return [label] if label is not None else keys[:1]


def by_label(
    data: pl.DataFrame, keys: list[str], label: str | None, facet: str | Sequence[str] | None
) -> Prepared:
    """One colour per value of the label key, one panel per combination of the others."""
    labelled = label_keys(label, keys)
    default_facet = [key for key in keys if key not in labelled]
    return prepare(data, keys, color=labelled, facet=facet, default_facet=default_facet)


def records(data: pl.DataFrame) -> list[dict[str, object]]:
    """Rows as JSON-ready dicts (temporal and other non-JSON dtypes as strings).

    NaN and infinities become None (JSON has neither).

    Examples
    --------
    >>> import datetime
    >>> import polars as pl
    >>> from calib_frames.plot.frames import records
    >>> records(pl.DataFrame({"day": [datetime.date(2026, 1, 2)], "ece": [float("nan")]}))
    [{'day': '2026-01-02', 'ece': None}]
    """
    casts = []
    for name, dtype in data.schema.items():
        if dtype.is_float():
            casts.append(pl.when(pl.col(name).is_finite()).then(pl.col(name)).alias(name))
        elif not (dtype.is_numeric() or dtype in (pl.String, pl.Boolean)):
            casts.append(pl.col(name).cast(pl.String))
    return (data.with_columns(casts) if casts else data).to_dicts()


BEYOND, WITHIN, TOO_FEW = "beyond noise", "within noise", "too few predictions"
"""What the noise floor found for a group, as :func:`noise_status` spells it."""


def noise_status(columns: Sequence[str]) -> pl.Expr:
    """The noise floor's finding per group: beyond noise, within noise or too few predictions.

    Reads ``ece_beyond_noise`` (True: beyond) and ``verdict`` (``"too few predictions"``
    and ``"one populated bin"`` are too little data); a table without them is null.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import noise_status
    >>> table = pl.DataFrame({"ece_beyond_noise": [True, False, False],
    ...                       "verdict": ["overconfident, p = 0.001", "within noise, p = 0.4",
    ...                                   "too few predictions"]})
    >>> table.select(noise_status(table.columns)).to_series().to_list()
    ['beyond noise', 'within noise', 'too few predictions']
    """
    if "ece_beyond_noise" not in columns:
        return pl.lit(None, dtype=pl.String)
    few = (
        pl.col("verdict").is_in(["too few predictions", "one populated bin"])
        if "verdict" in columns
        else pl.lit(False)
    )
    return (
        pl.when(pl.col("ece_beyond_noise"))
        .then(pl.lit(BEYOND))
        .when(few | pl.col("ece_beyond_noise").is_null())
        .then(pl.lit(TOO_FEW))
        .otherwise(pl.lit(WITHIN))
    )


def label_heights(
    data: pl.DataFrame, y: str, *, by: Sequence[str], labelled: pl.Expr, gap: float, floor: float
) -> pl.DataFrame:
    """``data`` with ``_label_y``: label heights at least ``gap`` apart within ``by``.

    Among the ``labelled`` rows of each ``by`` group, in order of falling ``y``, each label
    sits at its point's height unless the label over it is closer than ``gap``, in
    which case it moves down to ``gap`` under that one (hᵢ = min(yᵢ, hᵢ₋₁ − gap), a
    running minimum of yᵢ + i·gap, less i·gap); then labels pushed under ``floor`` move
    back up, the lowest to ``floor`` and each one over it at least ``gap`` higher
    (hᵢ = max(hᵢ, floor + (n − 1 − i)·gap), which keeps the spacing). Other rows keep
    ``y``. Rows come back sorted by ``by`` and falling ``y``.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import label_heights
    >>> table = pl.DataFrame({"panel": "a", "y": [0.50, 0.49, 0.10, 0.01]})
    >>> out = label_heights(table, "y", by=["panel"], labelled=pl.lit(True), gap=0.05,
    ...                     floor=0.05)
    >>> [round(h, 2) for h in out["_label_y"]]
    [0.5, 0.45, 0.1, 0.05]
    """
    groups = [*by, "_labelled"]
    ordered = data.with_columns(labelled.alias("_labelled")).sort(
        [*groups, y], descending=[False] * len(by) + [True, True], nulls_last=True
    )
    step = pl.int_range(pl.len()).over(groups).cast(pl.Float64) * gap
    down = (pl.col(y) + step).cum_min().over(groups) - step
    rest = (pl.len().over(groups) - 1).cast(pl.Float64) * gap - step
    height = pl.max_horizontal(down, pl.lit(floor) + rest)
    placed = ordered.with_columns(
        pl.when(pl.col("_labelled")).then(height).otherwise(pl.col(y)).alias("_label_y")
    )
    return placed.drop("_labelled")
