"""Generic readers: parquet, CSV/TSV, JSONL and JSON files, globs, folders, hive partitions.

:func:`scan_table` turns paths into one LazyFrame; :func:`scan_table_skipping` leaves bad
records out and counts them (a :class:`ScanResult`). They back the command line
(``calib-frames report INPUT…``).

* **Paths and formats**: :mod:`calib_frames.sources.paths` (a file, a glob, a folder or
  a list, local or in object storage: ``s3://``, ``gs://``, ``az://`` with
  ``storage_options=``; the format from the suffix or ``format=``). An object's bad
  record is named by its URL (its line is not looked up), and leaving bad records out
  reads CSV and JSON Lines from local disk only. Folder levels named
  ``key=value`` (hive partitioning) become String columns ``key``, for every format
  (``hive_partitioning=False`` turns that off); cast them with ``schema_overrides``.
* **Types**: CSV and JSONL schemas are inferred from *all* rows (``infer_schema_length=None``),
  so a column whose first thousand rows look like integers and whose last row is ``2.5``
  reads as Float64 instead of failing; ``schema_overrides`` ({column: dtype}, file column
  names) fixes a type outright.
* **Columns**: ``columns`` maps file column names to canonical ones
  (``{"p": "confidence", "label": "correct"}``); a name not in the data is a TableError.
* **Bad input**: an unreadable file (a ``.parquet`` that is not parquet, an empty CSV, a
  JSON document that does not parse) is a :class:`~calib_frames.exceptions.ReadError`
  naming the file; a malformed record (a truncated JSONL line, a value of the wrong JSON
  type under ``schema_overrides``, a CSV row with too many fields) is a ReadError naming
  the file and its line number — raised when the LazyFrame is collected (the file is read
  then; :mod:`calib_frames.sources.read_errors` finds the line). :func:`scan_table_skipping`
  leaves the bad records and unreadable files out and *counts* them: its
  :class:`ScanResult`'s ``skipped_records``, ``skipped_files`` and ``problems`` say what
  was dropped. To count them it parses CSV/JSON/JSONL files when called (their good rows
  are then held in memory); parquet files stay lazy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.arguments import COLUMN, FLAG, Constraint, MappingOf, Rule, check_arguments
from calib_frames.exceptions import ArgumentError, ReadError, TableError
from calib_frames.sources.paths import (
    FORMAT,
    STORAGE_OPTIONS,
    Format,
    Location,
    PathsLike,
    StorageOptions,
    expand_locations,
    format_of,
    hive_columns,
    name_of,
    storage_error,
    storage_options_of,
)
from calib_frames.sources.read_errors import (
    bad_lines,
    guarded_scan,
    locate_bad_record,
    parse_lines,
    schema_of_good_lines,
    short,
    split_lines,
    unreadable,
)

__all__ = ["ScanResult", "scan_table", "scan_table_skipping"]


@dataclass(frozen=True)
class ScanResult:
    """What :func:`scan_table_skipping` (and the other ``_skipping`` readers) return.

    Attributes
    ----------
    frame
        The readable records.
    skipped_records
        How many malformed records (lines) were left out.
    skipped_files
        How many files were left out whole (unreadable).
    problems
        One row per skipped record or file: ``file`` (String), ``line`` (Int64, null for
        a whole file) and ``reason`` (String).
    """

    frame: pl.LazyFrame
    skipped_records: int
    skipped_files: int
    problems: pl.DataFrame


def _native_scan(
    file: Location,
    fmt: Format,
    overrides: Mapping[str, pl.DataType] | None,
    storage_options: StorageOptions = None,
) -> pl.LazyFrame:
    options: dict[str, Any] = (
        {"storage_options": dict(storage_options or {}) or None} if isinstance(file, str) else {}
    )
    if fmt == "parquet":
        return pl.scan_parquet(file, **options)
    if fmt in ("csv", "tsv"):
        return pl.scan_csv(
            file,
            separator="\t" if fmt == "tsv" else ",",
            infer_schema_length=None,
            schema_overrides=overrides,
            **options,
        )
    if fmt == "jsonl":
        return pl.scan_ndjson(file, infer_schema_length=None, schema_overrides=overrides, **options)
    if isinstance(file, str):
        raise ArgumentError(
            f"{file}: a JSON document (.json) is read from local disk only; store it as "
            "JSON Lines or parquet, or copy it down"
        )
    return _read_json(file).lazy()


def _read_json(file: Path) -> pl.DataFrame:
    """A JSON file: an array of records, or an object of columns."""
    text = file.read_bytes()
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        line = getattr(error, "lineno", None)
        where = f", line {line}" if line else ""
        raise ReadError(f"{file}{where}: not valid JSON ({error})") from error
    if not isinstance(document, list | dict):
        raise ReadError(f"{file}: JSON must be an array of records or an object of columns")
    try:
        if (
            isinstance(document, dict)
            and document
            and all(isinstance(v, list) for v in document.values())
        ):
            return pl.DataFrame(document, strict=False)
        return pl.read_json(text, infer_schema_length=None)
    except (pl.exceptions.PolarsError, TypeError, ValueError) as error:
        raise ReadError(f"{file}: cannot read it as a table ({short(error)})") from error


def _scan_file(
    file: Location,
    base: Location,
    fmt: Format,
    *,
    overrides: Mapping[str, pl.DataType] | None,
    hive: bool,
    storage_options: StorageOptions = None,
) -> pl.LazyFrame:
    def locate(schema: pl.Schema, error: BaseException) -> ReadError:
        if isinstance(file, str):  # an object: no local bytes to find the line in
            return _object_error(file, fmt, error)
        if not len(schema):
            return unreadable(file, fmt, error)
        return locate_bad_record(file, fmt, schema, error)

    frame = guarded_scan(
        lambda: _native_scan(file, fmt, overrides, storage_options),
        name=f"{fmt} {name_of(file)}",
        locate=locate,
    )
    if fmt in ("csv", "tsv"):
        # polars renames a repeated header name to NAME_duplicated_0: which column the
        # user meant is unknown, so refuse it (naming file and column) rather than guess
        names = frame.collect_schema().names()
        twice = [n for n in names if re.fullmatch(r".+_duplicated_\d+", n)]
        twice = [n for n in twice if n.rsplit("_duplicated_", 1)[0] in names]
        if twice:
            name = twice[0].rsplit("_duplicated_", 1)[0]
            raise ReadError(f"{file}, line 1: the header names column {name!r} more than once")
    return _with_hive(frame, file, base, hive=hive)


def _object_error(url: str, fmt: Format, error: BaseException) -> ReadError:
    """The ReadError of an object that could not be read: the store's, or its content's."""
    store = isinstance(error, OSError) or "object-store" in str(error)
    return (
        storage_error(error, url)
        if store
        else ReadError(f"{url}: cannot read it as {fmt} ({short(error)})")
    )


def _with_hive(frame: pl.LazyFrame, file: Location, base: Location, *, hive: bool) -> pl.LazyFrame:
    columns = hive_columns(file, base) if hive else {}
    present = set(frame.collect_schema().names())
    extra = {k: v for k, v in columns.items() if k not in present}
    if not extra:
        return frame
    return frame.with_columns(pl.lit(v, pl.String).alias(k) for k, v in extra.items())


def _skip_scan_file(
    file: Location,
    base: Location,
    fmt: Format,
    *,
    overrides: Mapping[str, pl.DataType] | None,
    hive: bool,
    problems: list[tuple[str, int | None, str]],
    storage_options: StorageOptions = None,
) -> pl.LazyFrame | None:
    """Read one file leaving bad records out, listing them in ``problems``.

    Parquet stays lazy (an unreadable file is skipped whole; a corrupt data page still
    raises ReadError at collection); CSV/JSONL/JSON files are parsed now (local files
    only: the lines of an object are not at hand).
    """
    if fmt in ("parquet", "json"):
        try:
            return _scan_file(
                file, base, fmt, overrides=overrides, hive=hive, storage_options=storage_options
            )
        except ReadError as error:
            problems.append((str(file), None, str(error)))
            return None
    if isinstance(file, str):
        raise ArgumentError(
            f"{file}: leaving bad records out (skip) reads CSV and JSON Lines from local "
            "disk; read the object whole, or copy it down"
        )
    if not file.stat().st_size:
        problems.append((str(file), None, f"{file}: empty file"))
        return None
    try:
        frame = _native_scan(file, fmt, overrides).collect()
        return _with_hive(frame.lazy(), file, base, hive=hive)
    except (pl.exceptions.PolarsError, OSError) as error:
        failure: BaseException = error
    header, lines, first = split_lines(file, fmt)
    schema: pl.Schema | None
    try:
        schema = _native_scan(file, fmt, overrides).collect_schema()
    except pl.exceptions.PolarsError:
        schema = schema_of_good_lines(fmt, lines, overrides)
    if schema is None:
        problems.append((str(file), None, str(unreadable(file, fmt, failure))))
        return None
    bad = bad_lines(fmt, header, lines, first, schema, stop_at_first=False)
    bad_numbers = {line for line, _ in bad}
    problems.extend((str(file), line, reason) for line, reason in bad)
    good = [line for i, line in enumerate(lines, start=first) if i not in bad_numbers]
    kept = parse_lines(fmt, header, good, schema) if good else pl.DataFrame(schema=schema)
    return _with_hive(kept.lazy(), file, base, hive=hive)


# --- public entry points --------------------------------------------------------------


def _scan(
    files: list[tuple[Location, Location]],
    *,
    format: Format | None,
    columns: Mapping[str, str] | None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None,
    skip: bool,
    hive_partitioning: bool,
    storage_options: StorageOptions,
) -> ScanResult:
    """Every file of ``files`` stacked; with ``skip``, bad records left out and listed."""
    overrides = {name: _dtype(dtype) for name, dtype in (schema_overrides or {}).items()}
    frames: list[pl.LazyFrame] = []
    problems: list[tuple[str, int | None, str]] = []
    for file, base in files:  # a loop over files, not rows
        fmt = format_of(file, format)
        reader_overrides = overrides if fmt in ("csv", "tsv", "jsonl") else None
        options: dict[str, Any] = {
            "overrides": reader_overrides,
            "hive": hive_partitioning,
            "storage_options": storage_options,
        }
        if skip:
            frame: pl.LazyFrame | None = _skip_scan_file(
                file, base, fmt, problems=problems, **options
            )
        else:
            frame = _scan_file(file, base, fmt, **options)
        if frame is not None:
            frames.append(_cast(frame, overrides, file))
    if not frames:
        result = pl.LazyFrame()
    else:
        try:
            result = pl.concat(frames, how="diagonal_relaxed")
            result.collect_schema()
        except pl.exceptions.PolarsError as error:
            raise TableError(
                f"the files do not stack into one table ({short(error)}); "
                "fix the column types with schema_overrides="
            ) from error
    table = pl.DataFrame(
        problems, schema={"file": pl.String, "line": pl.Int64, "reason": pl.String}, orient="row"
    )
    return ScanResult(
        frame=_rename(result, columns),
        skipped_records=int(table["line"].is_not_null().sum()),
        skipped_files=int(table["line"].is_null().sum()),
        problems=table,
    )


_DTYPE = Rule(
    "a polars dtype",
    lambda value: (
        isinstance(value, pl.DataType)
        or (isinstance(value, type) and issubclass(value, pl.DataType))
    ),
    refused=("Float64", float),
    plural="polars dtypes",
)
_SCAN: dict[str, Constraint] = {
    "format": FORMAT | None,
    "columns": MappingOf(COLUMN, COLUMN) | None,
    "schema_overrides": MappingOf(COLUMN, _DTYPE) | None,
    "roles": MappingOf(COLUMN, _DTYPE) | None,
    "hive_partitioning": FLAG,
    "storage_options": STORAGE_OPTIONS,
}


def _scan_with_roles(
    paths: PathsLike,
    *,
    format: Format | None,
    columns: Mapping[str, str] | None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None,
    roles: Mapping[str, pl.DataType] | None,
    skip: bool,
    hive_partitioning: bool,
    storage_options: StorageOptions = None,
    required: Sequence[str] = (),
    what: str = "",
) -> ScanResult:
    """:func:`_scan`, with the role columns that text inference left as text retyped.

    CSV and JSON inference gives a String (or Null) column where one value is a stray
    word, where the file has a header and no row, or where every value is empty. A
    column named in ``roles`` (its name after ``columns``) that comes out so is read
    again as its role's dtype: a stray value is then a :class:`ReadError` naming file
    and line, and an empty column reaches the row checks as nulls. A
    ``schema_overrides`` entry wins; parquet columns keep their stored type. The
    ``required`` columns (``what`` names the frame) must be there after ``columns``.
    """
    storage = storage_options_of(storage_options)
    files = expand_locations(paths, storage_options=storage)
    options: dict[str, Any] = {
        "format": format,
        "columns": columns,
        "skip": skip,
        "hive_partitioning": hive_partitioning,
        "storage_options": storage,
    }
    overrides = dict(schema_overrides or {})
    result = _scan(files, schema_overrides=overrides or None, **options)
    found = result.frame.collect_schema()
    source = {new: old for old, new in (columns or {}).items()}
    textual = all(format_of(file, format) in ("csv", "tsv", "jsonl", "json") for file, _ in files)
    retype = {
        source.get(name, name): dtype
        for name, dtype in (roles or {}).items()
        if textual
        and name in found
        and found[name] in (pl.String(), pl.Null())
        and source.get(name, name) not in overrides
    }
    if retype:
        result = _scan(files, schema_overrides={**overrides, **retype}, **options)
    names = result.frame.collect_schema().names()
    missing = [c for c in required if c not in names]
    if missing:
        raise TableError(
            f"{what} need columns {missing}; available columns: "
            f"{', '.join(repr(n) for n in names) or 'none'}; map yours with columns="
        )
    return result


@check_arguments(**_SCAN)
def scan_table_skipping(
    paths: PathsLike,
    *,
    format: Format | None = None,
    columns: Mapping[str, str] | None = None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None = None,
    roles: Mapping[str, pl.DataType] | None = None,
    hive_partitioning: bool = True,
    storage_options: StorageOptions = None,
) -> ScanResult:
    r""":func:`scan_table`, leaving malformed records and unreadable files out and counting them.

    To count them it parses CSV/JSON/JSONL files when called (their good rows are then
    held in memory); parquet files stay lazy.

    Parameters
    ----------
    paths, format, columns, schema_overrides, roles, hive_partitioning, storage_options
        As :func:`scan_table`.

    Returns
    -------
    ScanResult
        ``frame`` (the readable records, a LazyFrame), ``skipped_records``,
        ``skipped_files`` and ``problems`` (one row per skipped record or file).

    Raises
    ------
    ReadError
        A missing path or an empty folder.
    TableError, ArgumentError
        As :func:`scan_table`.

    See Also
    --------
    scan_table : the same, raising on the first bad record.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from calib_frames.sources import scan_table_skipping
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.jsonl").write_text('{"p": 0.9}\n{"p": 0.2\n{"p": 0.4}\n')
    >>> result = scan_table_skipping(folder)
    >>> result.skipped_records, result.frame.collect()["p"].to_list()
    (1, [0.9, 0.4])
    """
    return _scan_with_roles(
        paths,
        format=format,
        columns=columns,
        schema_overrides=schema_overrides,
        roles=roles,
        skip=True,
        hive_partitioning=hive_partitioning,
        storage_options=storage_options,
    )


@check_arguments(**_SCAN)
def scan_table(
    paths: PathsLike,
    *,
    format: Format | None = None,
    columns: Mapping[str, str] | None = None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None = None,
    roles: Mapping[str, pl.DataType] | None = None,
    hive_partitioning: bool = True,
    storage_options: StorageOptions = None,
) -> pl.LazyFrame:
    r"""Scan parquet/CSV/TSV/JSONL/JSON files into one LazyFrame (see the module docstring).

    A malformed record or file raises :class:`ReadError` when the frame is collected;
    :func:`scan_table_skipping` leaves them out and counts them instead.

    Parameters
    ----------
    paths
        A file, glob or folder, or a list of them; local or in object storage
        (``s3://bucket/preds/``, ``gs://…/*.parquet``).
    format
        The format of every file; ``None`` tells it from each file's suffix.
    columns
        ``{file column: canonical name}`` renames, applied after reading.
    schema_overrides
        ``{file column: dtype}``: read (CSV/JSONL) or cast (parquet/JSON) to this dtype.
    roles
        Column (after ``columns``) → the dtype its role needs, e.g.
        ``{"confidence": pl.Float64(), "correct": pl.Boolean()}``. CSV and JSON inference
        gives a String (or Null) column where one value is a stray word, where the file
        has a header and no row, or where every value is empty; such a role column is
        read again as its role's dtype, so that a stray value is a :class:`ReadError`
        naming file and line and an empty column reaches the row checks as nulls. A
        ``schema_overrides`` entry wins; parquet columns keep their stored type.
    hive_partitioning
        Add ``key=value`` folder levels below the given folder as String columns.
    storage_options
        Object-store settings and credentials for ``s3://``, ``gs://`` and ``az://``
        paths, as polars takes them (default: the standard environment variables;
        :mod:`calib_frames.sources.paths`).

    Returns
    -------
    LazyFrame
        Files are stacked by column name (a column missing from a file is null there).

    Raises
    ------
    ReadError
        A missing path, an empty folder, an unreadable file, a malformed record (or a
        value of a retyped role column that does not parse), naming file and line.
    TableError
        ``columns`` names a column the data lacks, or files disagree on a column's type.
    ArgumentError
        An unknown format.

    See Also
    --------
    scan_table_skipping : the same, leaving bad records out and counting them.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> from calib_frames.sources import scan_table
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.jsonl").write_text('{"p": 0.9, "y": 1}\n{"p": 0.2, "y": 0}\n')
    >>> scan_table(folder, columns={"p": "confidence", "y": "correct"}).collect().shape
    (2, 2)
    >>> _ = (folder / "b.csv").write_text("confidence,correct\n")  # a header, no row
    >>> lazy = scan_table(folder / "b.csv", roles={"confidence": pl.Float64()})
    >>> lazy.collect_schema()["confidence"]
    Float64
    """
    return _scan_with_roles(
        paths,
        format=format,
        columns=columns,
        schema_overrides=schema_overrides,
        roles=roles,
        skip=False,
        hive_partitioning=hive_partitioning,
        storage_options=storage_options,
    ).frame


def _dtype(dtype: pl.DataType | type[pl.DataType]) -> pl.DataType:
    return dtype() if isinstance(dtype, type) else dtype


def _cast(
    frame: pl.LazyFrame, overrides: Mapping[str, pl.DataType], file: Location
) -> pl.LazyFrame:
    schema = frame.collect_schema()
    todo = {n: d for n, d in overrides.items() if n in schema and schema[n] != d}
    if not todo:
        return frame
    return frame.with_columns(pl.col(n).cast(d) for n, d in todo.items())


def _rename(frame: pl.LazyFrame, columns: Mapping[str, str] | None) -> pl.LazyFrame:
    if not columns:
        return frame
    names = frame.collect_schema().names()
    missing = [source for source in columns if source not in names]
    if missing:
        raise TableError(
            f"columns= names {missing}, not in the data; available columns: "
            f"{', '.join(repr(n) for n in names) or 'none'}"
        )
    targets = list(columns.values())
    clash = [t for t in targets if t in names and t not in columns]
    if len(set(targets)) != len(targets) or clash:
        raise TableError(f"columns= would create duplicate column names: {targets}")
    return frame.rename(dict(columns))
