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

import re
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
    "cut_middle",
    "facet_columns",
    "fold_names",
    "frame",
    "group_labels",
    "interval_columns",
    "key_split",
    "label_heights",
    "label_keys",
    "label_text",
    "metric_table",
    "metrics_columns",
    "noise_status",
    "prepare",
    "records",
    "shared_parts",
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


ELLIPSIS = "…"
COLOR_LIMIT, PANEL_LIMIT = 30, 24
"""Most characters of a colour label (legend, axis rows) and of a panel title by default."""
SHARED_LIMIT = 28
"""Most characters of what folded colour labels share (:attr:`Prepared.color_shared`)."""
_TOKEN = r"[^-_./: ]+[-_./: ]*|[-_./: ]+"
"""A name's parts: a run of other characters with the separators (-_./: ) after it."""
_PROTOTYPE = frozenset(
    {"constructor", "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable", "toString"}
    | {"toLocaleString", "valueOf", "__defineGetter__", "__defineSetter__", "__proto__"}
    | {"__lookupGetter__", "__lookupSetter__"}
)
"""Names of JavaScript's Object.prototype: Vega keys some of its tables by the values of a
field, and a value with one of these names breaks the chart (a zero-width space follows
such a label)."""


def label_text(text: pl.Expr) -> pl.Expr:
    r"""``text`` as a chart draws it: line breaks as spaces, other control characters as �.

    A NUL stops vl-convert's text rendering (the process aborts) and U+2028/U+2029 end a
    Vega expression's string, so no label carries them; tooltips keep the names whole.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import label_text
    >>> pl.select(label_text(pl.lit("a\x00b\u2028c"))).item()
    'a�b c'
    """
    return text.str.replace_all(r"[\t\n\r\x{2028}\x{2029}]", " ").str.replace_all(
        r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\x{fffe}\x{ffff}]", "\ufffd"
    )


def cut_middle(text: pl.Expr, limit: int) -> pl.Expr:
    """``text`` cut in the middle to ``limit`` characters (start … end) when longer.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import cut_middle
    >>> pl.select(cut_middle(pl.lit("arc_challenge_subset_12"), 12)).item()
    'arc_c…set_12'
    """
    head = (limit - 1) // 2
    return (
        pl.when(text.str.len_chars() > limit)
        .then(pl.concat_str(text.str.head(head), pl.lit(ELLIPSIS), text.str.tail(limit - 1 - head)))
        .otherwise(text)
    )


def _folded_parts(names: pl.Series) -> pl.DataFrame | None:
    """The parts of each of ``names`` (``_i``, ``_part``), and which are folded (``_fold``).

    None for fewer than two distinct names. See :func:`fold_names` for the rule.
    """
    if names.n_unique() < 2:
        return None
    count = names.len()
    parts = (
        pl.DataFrame({"_name": names})
        .with_row_index("_i")
        .with_columns(pl.col("_name").str.extract_all(_TOKEN).alias("_part"))
    )
    lengths = parts.get_column("_part").list.len()
    position = pl.int_range(pl.len()).over("_i")
    long = (
        parts.explode("_part")
        .drop_nulls("_part")
        .with_columns(position.alias("_start"), (pl.len().over("_i") - 1 - position).alias("_end"))
    )

    def shared(at: str) -> pl.DataFrame:
        """Per position, whether every name has a part there and all are the same."""
        same = (pl.col("_part").n_unique() == 1) & (pl.len() == count)
        return long.group_by(at).agg(same.alias("_shared")).sort(at)

    if lengths.n_unique() == 1:
        common = shared("_start").filter("_shared").get_column("_start")
        fold = pl.col("_start").is_in(common.implode())
    else:
        shortest = int(lengths.min())  # type: ignore[arg-type]
        start = int(shared("_start").get_column("_shared").cum_min().sum())
        end = int(shared("_end").get_column("_shared").cum_min().sum())
        start = min(start, shortest - 1)
        end = max(0, min(end, shortest - 1 - start))
        fold = (pl.col("_start") < start) | (pl.col("_end") < end)
    return long.with_columns(fold.alias("_fold")).with_columns(
        pl.col("_fold").shift(1, fill_value=False).over("_i").alias("_after"),
        pl.col("_fold").shift(-1, fill_value=False).over("_i").alias("_before"),
    )


def fold_names(names: pl.Series) -> pl.Series:
    """Each of the distinct ``names`` with the parts that all of them share folded to "…".

    A name's parts are the runs between the separators ``- _ . / :`` and space. When the
    names have as many parts each, every position where they all have the same part is
    folded; otherwise the parts they all start with and all end with are (at least one
    part of every name is kept). A run of folded parts is one "…", and a kept part before
    it loses its separator: ``acme-instruct-70b-checkpoint-096000`` beside
    ``acme-instruct-7b-checkpoint-012000`` reads ``…70b…096000``. Fewer than two distinct
    names are kept whole. Distinct names stay distinct.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import fold_names
    >>> fold_names(pl.Series(["acme-instruct-70b-checkpoint-096000",
    ...                       "acme-instruct-7b-checkpoint-012000"])).to_list()
    ['…70b…096000', '…7b…012000']
    >>> fold_names(pl.Series(["mmlu_physics", "mmlu_college_chemistry"])).to_list()
    ['…physics', '…college_chemistry']
    """
    folded = _folded_parts(names)
    if folded is None:
        return names
    piece = (
        pl.when(pl.col("_fold") & pl.col("_after"))
        .then(pl.lit(""))
        .when(pl.col("_fold"))
        .then(pl.lit(ELLIPSIS))
        .when(pl.col("_before"))
        .then(pl.col("_part").str.replace(r"[-_./: ]+$", ""))
        .otherwise(pl.col("_part"))
    )
    joined = folded.group_by("_i").agg(piece.str.join("").alias("_label"))
    out = names.to_frame("_name").with_row_index("_i").join(joined, on="_i", how="left")
    return out.sort("_i").select(pl.coalesce("_label", "_name")).to_series().alias(names.name)


def shared_parts(names: pl.Series) -> str:
    """What :func:`fold_names` folds, with "…" where the names differ ("" if nothing is).

    Said beside the folded labels (a legend's or an axis's title), so that a reader sees
    the whole names' shape: ``acme-instruct-…-checkpoint-…``.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import shared_parts
    >>> shared_parts(pl.Series(["acme-instruct-70b-checkpoint-012000",
    ...                         "acme-instruct-7b-checkpoint-012000"]))
    'acme-instruct-…-checkpoint-012000'
    >>> shared_parts(pl.Series(["a", "b"]))
    ''
    """
    folded = _folded_parts(names)
    if folded is None or not folded.get_column("_fold").any():
        return ""
    first = folded.filter(pl.col("_i") == 0)
    piece = (
        pl.when(pl.col("_fold"))
        .then(pl.col("_part"))
        .otherwise(pl.col("_part").str.replace(r"^[^-_./: ]+", ELLIPSIS))
    )
    text = str(first.select(piece.str.join("")).item())
    return re.sub(f"{ELLIPSIS}(?:[-_./: ]*{ELLIPSIS})+", ELLIPSIS, text)


def group_labels(
    table: pl.DataFrame, keys: Sequence[str], limit: int | None = COLOR_LIMIT
) -> pl.Series:
    """One label per row naming its group: the key values joined by " · ", distinct per group.

    The groups are those of ``table`` (the names shown together). When a label would be
    longer than ``limit`` characters, each key's values are folded (:func:`fold_names`:
    the parts all of them share become "…"), then cut in the middle (:func:`cut_middle`)
    where still too long, each key to its share of ``limit``; tooltips and files keep
    the names whole. Nulls read ``(null)``, an empty name ``""``, and the text is
    :func:`label_text`'s. Two groups never share a label: where cutting would make two
    the same they keep their folded names, and where a name reads like another (a
    string ``"(null)"`` beside a null) the later ones get `` #2``, `` #3``… (a null
    keeps ``(null)``). A label
    spelled like a member of JavaScript's ``Object.prototype`` (``constructor``,
    ``toString``…) gets a zero-width space after it: Vega breaks on those. No keys:
    every row is ``all``.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot.frames import group_labels
    >>> table = pl.DataFrame({"model": ["acme-instruct-70b-checkpoint-096000",
    ...                                 "acme-instruct-7b-checkpoint-012000"], "task": "arc"})
    >>> group_labels(table, ["model", "task"], limit=20).to_list()
    ['…70b…096000 · arc', '…7b…012000 · arc']
    >>> group_labels(pl.DataFrame({"model": ["(null)", None, "toString"]}), ["model"]).to_list()
    ['(null) #2', '(null)', 'toString\u200b']
    """
    if not keys:
        return pl.Series("_label", ["all"] * table.height, dtype=pl.String)
    keys = list(keys)
    groups = table.select(keys).unique(maintain_order=True)
    whole = groups.select(
        label_text(pl.col(key).cast(pl.String)).replace("", '""').fill_null(NULL_KEY)
        for key in keys
    )
    joined = pl.concat_str(keys, separator=SEPARATOR)
    label = whole.select(joined).to_series()
    if limit is not None and int(label.str.len_chars().max() or 0) > limit:  # type: ignore[arg-type]
        folded = whole.select(_folded(whole.get_column(key)) for key in keys)
        budgets = _budgets(folded, limit - len(SEPARATOR) * (len(keys) - 1))
        cut = folded.select(
            pl.concat_str([cut_middle(pl.col(k), budgets[k]) for k in keys], separator=SEPARATOR)
        ).to_series()
        label = pl.select(
            pl.when(cut.is_duplicated()).then(folded.select(joined).to_series()).otherwise(cut)
        ).to_series()
    # a label read twice: the first keeps it (a null before a name spelled like one)
    nulls = pl.any_horizontal(pl.col(k).is_null() for k in keys)
    numbered = groups.with_columns(label.alias("_label"), nulls.alias("_nulls"))
    numbered = numbered.with_row_index("_at").sort("_nulls", descending=True, maintain_order=True)
    repeat = pl.int_range(pl.len()).over("_label")
    label = (
        numbered.select(
            "_at",
            pl.when(repeat > 0)
            .then(pl.format("{} #{}", "_label", repeat + 1))
            .when(pl.col("_label").is_in(list(_PROTOTYPE)))
            .then(pl.col("_label") + "\u200b")
            .otherwise(pl.col("_label"))
            .alias("_label"),
        )
        .sort("_at")
        .get_column("_label")
    )
    groups = groups.with_columns(label.alias("_label"))
    return (
        table.select(keys)
        .join(groups, on=keys, how="left", nulls_equal=True, maintain_order="left")
        .get_column("_label")
    )


def _folded(values: pl.Series) -> pl.Series:
    """Each value with the parts all the distinct values share folded (:func:`fold_names`)."""
    distinct = values.unique(maintain_order=True)
    return values.replace_strict(distinct, fold_names(distinct), return_dtype=pl.String)


def _budgets(parts: pl.DataFrame, room: int) -> dict[str, int]:
    """Characters for each column of ``parts`` out of ``room``: the shortest first get theirs.

    Each column gets at most its longest value, and at least 6.
    """
    longest = {key: int(parts.get_column(key).str.len_chars().max() or 0) for key in parts.columns}  # type: ignore[arg-type]
    budgets = {}
    left = list(sorted(longest, key=longest.__getitem__))
    while left:
        key = left.pop(0)
        budgets[key] = max(6, min(longest[key], room // (len(left) + 1)))
        room -= budgets[key]
    return budgets


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
    color_shared: str = ""
    """What the folded colour labels leave out (:func:`shared_parts`), for the legend's
    title; empty when the labels are the names or there are several colour keys."""

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
    color_limit: int = COLOR_LIMIT,
    panel_limit: int = PANEL_LIMIT,
) -> Prepared:
    """Add the ``_color`` and ``_panel`` label columns and sort by panel, colour.

    ``facet`` keys make one panel per combination; ``color`` keys one colour per
    combination inside a panel (default: the keys not faceted). The labels are
    :func:`group_labels` of the colour groups (at most ``color_limit`` characters) and of
    the panels (``panel_limit``): distinct, and shortened to the part that tells them
    apart. Keys sort by value: an Enum in its categories' order (``stage``: before,
    after), a Categorical in order of first appearance, numbers numerically, text
    alphabetically; the legend and the panels follow that order, not the order of the
    labels as text.

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
    data = table
    order = [*facet_keys, *color_keys]
    if order:
        data = data.sort(
            [_sort_key(data, key) for key in order], nulls_last=True, maintain_order=True
        )
    data = data.with_columns(
        group_labels(data, color_keys, color_limit).alias(COLOR),
        group_labels(data, facet_keys, panel_limit).alias(PANEL),
    )
    color_order: tuple[str, ...] = ()
    if color_keys:
        combos = data.select(*color_keys, COLOR).unique(maintain_order=True)
        combos = combos.sort(
            [_sort_key(data, key) for key in color_keys], nulls_last=True, maintain_order=True
        )
        color_order = tuple(combos.get_column(COLOR).unique(maintain_order=True).to_list())
    shared = ""
    if len(color_keys) == 1:
        names = data.get_column(color_keys[0]).cast(pl.String).drop_nulls().unique()
        if names.len() and not names.is_in(data.get_column(COLOR).implode()).all():
            shared = str(
                pl.select(cut_middle(pl.lit(shared_parts(names.sort())), SHARED_LIMIT)).item()
            )
    return Prepared(data, keys, color_keys, facet_keys, color_order, shared)


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
    data: pl.DataFrame,
    keys: list[str],
    label: str | None,
    facet: str | Sequence[str] | None,
    *,
    color_limit: int = COLOR_LIMIT,
) -> Prepared:
    """One colour per value of the label key, one panel per combination of the others."""
    labelled = label_keys(label, keys)
    default_facet = [key for key in keys if key not in labelled]
    return prepare(
        data,
        keys,
        color=labelled,
        facet=facet,
        default_facet=default_facet,
        color_limit=color_limit,
    )


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
