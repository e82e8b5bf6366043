"""What a report says first: a few labelled lines, the same on stdout and at the top of the page.

:func:`summary_lines` reads the comparison table (and the leaderboard, when there is one)
and says which model is best and which worst, how many groups are beyond the noise of a
calibrated model (after the table's correction, when it has one) and in which direction,
and how many have too few predictions or no weight. Polars alone; the command line
prints the lines (and where the report is), the page writes them as its first section.
"""

from __future__ import annotations

import polars as pl

from calib_frames.plot.frames import COMPARISON_COLUMNS, TOO_FEW, key_split, noise_status

__all__ = ["AMONG_BEST", "RANK", "board_order", "summary_lines"]

RANK = "rank"
"""A leaderboard's rank column (1 = best); ``rank_ci_low`` / ``rank_ci_high`` its interval."""
AMONG_BEST = "indistinguishable_from_best"
"""A leaderboard's column marking the models indistinguishable from the best (Boolean)."""
NO_WEIGHT = "no weight"
NAMES_SHOWN = 5
"""Most models the summary names on one line; the rest are counted (the leaderboard lists them)."""


def _number(value: object, spec: str = ".3f") -> str:
    return "n/a" if not isinstance(value, int | float) else format(value, spec)


def _names(names: list[object]) -> str:
    """The names, in order, up to :data:`NAMES_SHOWN`; beyond, the first and a count."""
    shown = ", ".join(str(v) for v in names[:NAMES_SHOWN])
    if len(names) <= NAMES_SHOWN:
        return shown
    return f"{len(names):,} models: {shown} and {len(names) - NAMES_SHOWN:,} more (leaderboard)"


def _interval(row: dict[str, object], column: str) -> str:
    low, high = row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high")
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        return ""
    return f" [{_number(low)}, {_number(high)}]"


def board_order(board: pl.DataFrame) -> str:
    """How the leaderboard's rows run, in words: by rank, or as given.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.report.summary import board_order
    >>> board_order(pl.DataFrame({"model": ["a", "b"], "rank": [1, 2]}))
    'by rank: the mean Brier score over tasks, lower first'
    """
    if RANK in board.columns:
        return "by rank: the mean Brier score over tasks, lower first"
    return "in the leaderboard's order"


def _model_line(row: dict[str, object], model: str) -> str:
    """A model's line: its name, the ranking score and rank, then its calibration.

    The score the leaderboard ranks by (the mean Brier score over tasks) with its rank
    interval, then the pooled ECE with its interval, its mean over tasks, and on how many
    tasks the ECE is beyond noise: a model can rank first and still be miscalibrated.
    """
    text = f"{row[model]} —"
    if isinstance(row.get("brier_task_mean"), float):
        text += f" Brier {_number(row['brier_task_mean'])} mean over tasks"
        if isinstance(row.get(RANK), int | float):
            text += f", rank {_number(row[RANK], '.0f')}"
            low, high = row.get(f"{RANK}_ci_low"), row.get(f"{RANK}_ci_high")
            if isinstance(low, int | float) and isinstance(high, int | float):
                text += f" ({_number(low, '.0f')}–{_number(high, '.0f')})"
        text += ";"
    text += f" ECE {_number(row.get('ece'))}{_interval(row, 'ece')}"
    if isinstance(row.get("ece_task_mean"), float):
        text += f" pooled, {_number(row['ece_task_mean'])} mean over tasks"
    if isinstance(row.get("miscalibrated_tasks"), int) and isinstance(row.get("tasks"), int):
        text += f"; beyond noise on {row['miscalibrated_tasks']} of {row['tasks']} tasks"
    return text


def summary_lines(
    comparison: pl.DataFrame, leaderboard: pl.DataFrame | None = None
) -> list[tuple[str, str]]:
    """The first lines of a report, as (label, text): what a reader looks at first.

    * ``groups``: how many groups have predictions (with two keys or more, models ×
      tasks, and how many pairs have none), and how many predictions;
    * ``best`` and ``worst``: the first and the last model of the leaderboard (the mean
      Brier score over tasks it ranks by, its rank with interval, its pooled ECE with
      interval, mean over tasks, on how many tasks it is beyond noise), or without one
      the groups of lowest and highest ECE;
    * ``indistinguishable from the best``: the models the leaderboard marks
      (:data:`AMONG_BEST`), when it does (beyond :data:`NAMES_SHOWN`, how many and the
      first of them);
    * ``beyond noise``: how many groups have an ECE beyond the noise of a calibrated
      model (``ece_beyond_noise``), said to be after the table's correction when it has
      ``ece_p_adjusted``, with their directions (``ece_direction``, else the verdict's
      first word);
    * ``too few``, ``no weight``: the groups the noise floor could not test.

    Lines whose columns the tables lack are left out.

    Parameters
    ----------
    comparison
        The comparison table (:func:`~calib_frames.compare`).
    leaderboard
        The leaderboard (:func:`~calib_frames.leaderboard`), or None.

    Returns
    -------
    list of (str, str)
        The lines, in order.

    Examples
    --------
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> from calib_frames.report.summary import summary_lines
    >>> stats = cf.bin_statistics(pl.read_parquet("data/synthetic_predictions.parquet"),
    ...                           by=["model", "task"])
    >>> tables = cf.comparison.report_tables(stats, model="model", replicates=20)
    >>> lines = dict(summary_lines(tables.comparison, tables.leaderboard))
    >>> lines["groups"]
    '3 models × 4 tasks: 12 groups, 24,000 predictions'
    >>> lines["best"].split(" — ")[0], lines["worst"].split(" — ")[0]  # by Brier score
    ('underconfident', 'overconfident')
    >>> lines["beyond noise"].split(": ")  # doctest: +NORMALIZE_WHITESPACE
    ['8 of 12 groups (67%), after correction across the table',
     '4 overconfident, 4 underconfident']
    """
    keys = key_split(comparison.schema, COMPARISON_COLUMNS)
    counted = (
        comparison.filter(pl.col("count").fill_null(0) > 0)
        if "count" in comparison.columns
        else comparison
    )
    lines = [("groups", _groups_line(counted, keys))]
    if leaderboard is not None and leaderboard.height:
        model = leaderboard.columns[0]
        rows = (
            leaderboard.filter(pl.col("ece").is_not_null())
            if "ece" in leaderboard.columns
            else leaderboard
        )
        rows = rows if rows.height else leaderboard
        lines.append(("best", _model_line(rows.row(0, named=True), model)))
        if rows.height > 1:
            lines.append(("worst", _model_line(rows.row(-1, named=True), model)))
        if AMONG_BEST in leaderboard.columns:
            tied = leaderboard.filter(pl.col(AMONG_BEST).fill_null(False)).get_column(model)
            lines.append(("indistinguishable from the best", _names(tied.to_list())))
    elif "ece" in counted.columns and keys and counted.height > 1:
        ranked = counted.filter(pl.col("ece").is_not_null()).sort("ece", nulls_last=True)
        for label, row in (("lowest ECE", 0), ("highest ECE", -1)):
            if ranked.height:
                named = ranked.row(row, named=True)
                name = " · ".join(str(named[k]) for k in keys)
                lines.append(
                    (label, f"{name} — ECE {_number(named['ece'])}{_interval(named, 'ece')}")
                )
    lines += _noise_lines(counted)
    return lines


def _groups_line(counted: pl.DataFrame, keys: list[str]) -> str:
    """How many groups have predictions (models × tasks with two keys), and predictions."""
    total = (
        int(counted.get_column("count").cast(pl.Int64).sum())
        if "count" in counted.columns
        else None
    )
    groups = counted.select(keys).n_unique() if keys else counted.height
    text = f"{groups:,} group{'s' if groups != 1 else ''}"
    if len(keys) >= 2:
        models = counted.select(keys[0]).n_unique()
        tasks = counted.select(keys[1:]).n_unique()
        text = f"{models:,} models × {tasks:,} tasks: {text}"
        empty = models * tasks - groups
        if empty > 0:
            text += f" ({empty:,} model × task pair{'s' if empty != 1 else ''} without predictions)"
    if total is not None:
        text += f", {total:,} predictions"
    return text


def _noise_lines(counted: pl.DataFrame) -> list[tuple[str, str]]:
    """Beyond noise (how many, corrected or not, directions), too few, no weight."""
    names = counted.columns
    if "ece_beyond_noise" not in names:
        return []
    status = counted.select(
        noise_status(names).alias("status"),
        (pl.col("verdict") == NO_WEIGHT if "verdict" in names else pl.lit(value=False)).alias(
            "empty"
        ),
        (
            pl.col("ece_direction")
            .cast(pl.String)
            .replace({"over": "overconfident", "under": "underconfident"})
            if "ece_direction" in names
            else pl.col("verdict")
            .cast(pl.String)
            .str.extract(r"^(overconfident|underconfident|mixed)")
            if "verdict" in names
            else pl.lit(None, dtype=pl.String)
        ).alias("direction"),
    )
    tested = status.filter(~pl.col("empty"))
    beyond = tested.filter(pl.col("status") == "beyond noise")
    how = (
        "after correction across the table"
        if "ece_p_adjusted" in names
        else "each tested alone (no correction across the table)"
    )
    share = f" ({beyond.height / tested.height:.0%})" if tested.height else ""
    text = f"{beyond.height:,} of {tested.height:,} groups{share}, {how}"
    directions = beyond.group_by("direction").len().drop_nulls("direction").sort("direction")
    if directions.height:
        text += ": " + ", ".join(f"{n:,} {d}" for d, n in directions.iter_rows())
    lines = [("beyond noise", text)]
    few = tested.filter(pl.col("status") == TOO_FEW).height
    if few:
        lines.append(
            ("too few", f"{few:,} group{'s' if few != 1 else ''} with too few predictions to test")
        )
    empty = status.filter(pl.col("empty")).height
    if empty:
        lines.append(
            ("no weight", f"{empty:,} group{'s' if empty != 1 else ''} whose weights sum to 0")
        )
    return lines
