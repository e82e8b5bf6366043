"""Row checks for the source transformations: counted in the frame, raised with an example.

The transformations of :mod:`calib_frames.sources` build per-question or per-answer
frames that are small next to the raw logs, and that need every row of a question anyway
(a softmax). Their contract checks are boolean columns of that frame; :func:`raise_if_bad`
attaches one ``map_batches`` step that counts them when the query is collected and raises
:class:`~calib_frames.exceptions.DataError` naming the column, "N of M rows" and one
example with its keys. Lazy stays lazy: nothing is checked before ``collect``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from calib_frames.exceptions import DataError

__all__ = ["Check", "raise_if_bad"]


@dataclass(frozen=True)
class Check:
    """One contract: ``flag`` names a boolean column of the checked frame (True = bad).

    ``column`` is the user's column shown in the message, ``value`` the column whose
    value is shown for the example (``None``: show only the keys), ``unit`` what the
    rows are ("option rows", "questions").
    """

    flag: str
    column: str
    problem: str
    value: str | None = None
    unit: str = "rows"


def raise_if_bad(
    frame: pl.LazyFrame,
    checks: Sequence[Check],
    *,
    keys: Sequence[str],
    count: str | None = None,
    scope: pl.Expr | None = None,
) -> pl.LazyFrame:
    """Drop the flag columns of ``checks`` after raising if any of them is set somewhere.

    A Boolean flag marks bad rows of ``frame`` itself. An integer flag counts bad input
    rows behind each row of ``frame`` (bad option rows of a question); their total is
    then the sum of the ``count`` column (the options of each question). ``scope``
    selects the rows that the totals count (one copy of rows stacked per scoring).
    """
    schema = frame.collect_schema()
    flags = [check.flag for check in checks]
    out_schema = {name: dtype for name, dtype in schema.items() if name not in flags}
    shown = list(dict.fromkeys(keys))

    def check(full: pl.DataFrame) -> pl.DataFrame:
        df = full if scope is None else full.filter(scope)
        # One pass for every count; examples are looked up only on the error path.
        totals: list[pl.Expr] = [pl.len().alias("__rows")]
        if count is not None:
            totals.append(pl.col(count).cast(pl.UInt64).sum().alias("__units"))
        counts = df.select(
            *(pl.col(c.flag).cast(pl.UInt64).sum().alias(f"__n{i}") for i, c in enumerate(checks)),
            *totals,
        ).row(0, named=True)
        problems = []
        for i, item in enumerate(checks):
            n_bad = counts[f"__n{i}"]
            if not n_bad:
                continue
            counted = count is not None and df.schema[item.flag] != pl.Boolean
            n_all = counts["__units"] if counted else counts["__rows"]
            example = df.filter(pl.col(item.flag).cast(pl.Boolean)).row(0, named=True)
            where = ", ".join(f"{key}={example[key]!r}" for key in shown)
            value = f": {item.column}={example[item.value]!r}" if item.value else ""
            verb = "is" if n_bad == 1 else "are"
            problems.append(
                f"column {item.column!r}: {n_bad:,} of {n_all:,} {item.unit} {verb} "
                f"{item.problem}; e.g. {where}{value}"
            )
        if problems:
            raise DataError("invalid input:\n  " + "\n  ".join(problems))
        return full.drop(flags)

    return frame.map_batches(check, schema=out_schema)
