"""Lazy readers of TREC run and qrels files.

A TREC **run** file has one retrieved document per line, six whitespace-separated fields::

    qid  Q0  docno  rank  score  run_tag
    301  Q0  FT911-3  1   12.5   bm25

A TREC **qrels** file has one judgement per line, four fields::

    qid  iteration  docno  relevance
    301  0          FT911-3  2

Both readers return a LazyFrame whose column names fit
:func:`~calib_frames.ranking.ranking_metrics` directly (``query``, ``item``, ``score`` /
``relevance``). Ids stay strings (as in trec_eval, which compares docnos with ``strcmp``,
so the default ``ties="item_desc"`` reproduces its order). Blank lines are skipped. A
line with the wrong number of fields, or a rank / score / relevance that is not a
number, raises :class:`~calib_frames.exceptions.ReadError` naming the file and the
1-based line number when the frame is collected.

trec_eval reads the relevance as an integer and treats negative values specially in some
measures (``-1`` "judged not in pool"); :func:`ranking_metrics` refuses negative
relevance, so filter such rows first (``.filter(pl.col("relevance") >= 0)``).
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from calib_frames.exceptions import ReadError
from calib_frames.validation import working

__all__ = ["scan_trec_qrels", "scan_trec_run"]

_FIELD = r"(\S+)"
_SEP = r"\s+"


def _pattern(fields: int) -> str:
    return r"^\s*" + _SEP.join([_FIELD] * fields) + r"\s*$"


def _scan(
    path: str | os.PathLike[str],
    *,
    kind: str,
    names: list[str],
    numeric: dict[str, pl.DataType],
    layout: str,
) -> pl.LazyFrame:
    file = Path(path)
    if not file.is_file():
        raise ReadError(f"{file}: no such file ({kind} file)")
    fields = len(names)
    text, number = working("line"), working("line_no")
    lines = pl.scan_lines(file, name=text, row_index_name=number, row_index_offset=1)
    lines = lines.filter(pl.col(text).str.strip_chars().str.len_bytes() > 0)
    parts = pl.col(text).str.extract_groups(_pattern(fields))
    parsed = lines.select(
        number,
        text,
        *(parts.struct.field(str(i + 1)).alias(name) for i, name in enumerate(names)),
    ).with_columns(
        pl.col(name).cast(dtype, strict=False).alias(working(name))
        for name, dtype in numeric.items()
    )
    bad_fields = pl.col(names[0]).is_null()
    bad_number = pl.any_horizontal(pl.col(working(name)).is_null() for name in numeric)
    out_schema = {name: numeric.get(name, pl.String()) for name in names}

    def check(frame: pl.DataFrame) -> pl.DataFrame:
        bad = frame.filter(bad_fields | bad_number)
        if bad.height:
            first = bad.row(0, named=True)
            line = first[text]
            shown = line if len(line) <= 80 else line[:77] + "..."
            if first[names[0]] is None:
                found = len(line.split())
                why = f"expected {fields} whitespace-separated fields ({layout}), found {found}"
            else:
                which = next(n for n in numeric if first[working(n)] is None)
                why = f"field {which!r} is not a {'number' if which == 'score' else 'integer'}"
            more = f" ({bad.height:,} malformed lines in all)" if bad.height > 1 else ""
            raise ReadError(
                f"{file}:{first[number]}: malformed {kind} line: {why}: {shown!r}{more}"
            )
        return frame.select(
            *(pl.col(working(n)).alias(n) if n in numeric else pl.col(n) for n in names)
        )

    return parsed.map_batches(check, schema=out_schema)


def scan_trec_run(path: str | os.PathLike[str]) -> pl.LazyFrame:
    r"""Read a TREC run file lazily.

    Parameters
    ----------
    path
        The run file (``qid Q0 docno rank score run_tag`` per line).

    Returns
    -------
    LazyFrame
        Columns ``query`` (String), ``q0`` (String), ``item`` (String), ``rank`` (Int64),
        ``score`` (Float64), ``run`` (String: the run tag, a natural ``by=`` key).

    Raises
    ------
    ReadError
        If the file does not exist (at once), or, when collected, if a line has not six
        fields or its rank or score is not a number (naming file and line number).

    See Also
    --------
    scan_trec_qrels : the judgements.
    calib_frames.ranking.ranking_metrics : the metrics (``by="run"`` per run tag).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "run.txt").write_text("q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.0 bm25\n")
    >>> scan_trec_run(folder / "run.txt").collect()
    shape: (2, 6)
    ┌───────┬─────┬──────┬──────┬───────┬──────┐
    │ query ┆ q0  ┆ item ┆ rank ┆ score ┆ run  │
    │ ---   ┆ --- ┆ ---  ┆ ---  ┆ ---   ┆ ---  │
    │ str   ┆ str ┆ str  ┆ i64  ┆ f64   ┆ str  │
    ╞═══════╪═════╪══════╪══════╪═══════╪══════╡
    │ q1    ┆ Q0  ┆ d1   ┆ 1    ┆ 2.5   ┆ bm25 │
    │ q1    ┆ Q0  ┆ d2   ┆ 2    ┆ 1.0   ┆ bm25 │
    └───────┴─────┴──────┴──────┴───────┴──────┘
    """
    return _scan(
        path,
        kind="TREC run",
        names=["query", "q0", "item", "rank", "score", "run"],
        numeric={"rank": pl.Int64(), "score": pl.Float64()},
        layout="qid Q0 docno rank score run_tag",
    )


def scan_trec_qrels(path: str | os.PathLike[str]) -> pl.LazyFrame:
    r"""Read a TREC qrels file lazily.

    Parameters
    ----------
    path
        The qrels file (``qid iteration docno relevance`` per line).

    Returns
    -------
    LazyFrame
        Columns ``query`` (String), ``iteration`` (String), ``item`` (String),
        ``relevance`` (Int64).

    Raises
    ------
    ReadError
        If the file does not exist (at once), or, when collected, if a line has not four
        fields or its relevance is not an integer (naming file and line number).

    See Also
    --------
    scan_trec_run : the retrieved lists.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "qrels.txt").write_text("q1 0 d1 2\nq1 0 d2 0\n")
    >>> scan_trec_qrels(folder / "qrels.txt").collect()["relevance"].to_list()
    [2, 0]
    """
    return _scan(
        path,
        kind="TREC qrels",
        names=["query", "iteration", "item", "relevance"],
        numeric={"relevance": pl.Int64()},
        layout="qid iteration docno relevance",
    )
