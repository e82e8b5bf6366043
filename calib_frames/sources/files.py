"""Generic readers: parquet, CSV/TSV, JSONL and JSON files, globs, folders, hive partitions.

:func:`scan_table` turns paths into one LazyFrame; :func:`scan_predictions` and
:func:`scan_tokens` add the check that the canonical columns are there. Each has a
``_skipping`` twin (:func:`scan_table_skipping`, …) that leaves bad records out and
returns a :class:`ScanResult`. They back the command line (``calib-frames report
INPUT…``).

* **Paths**: a file, a glob (``runs/**/*.parquet``), a folder (every data file below it,
  hidden files and ``_SUCCESS``-style markers skipped) or a list of those. Folder levels
  named ``key=value`` (hive partitioning) become String columns ``key``, for every format
  (``hive_partitioning=False`` turns that off); cast them with ``schema_overrides``.
* **Format**: from the suffix (``.parquet``/``.pq``, ``.csv``, ``.tsv``, ``.jsonl``/``.ndjson``,
  ``.json``) or ``format=`` for all files.
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
  then), found by bisecting the failing file with polars' own parser (native speed, on
  the error path only). The ``_skipping`` readers leave the bad records and unreadable
  files out and *count* them: they return a :class:`ScanResult` whose
  ``skipped_records``, ``skipped_files`` and ``problems`` say what was dropped. To count
  them it parses CSV/JSON/JSONL files when called (their good rows are then held in memory);
  parquet files stay lazy.

Line numbers are 1-based lines of the file (a CSV header is line 1). A CSV field quoted
across several lines makes line-based bisection approximate; such files should use
parquet.
"""

from __future__ import annotations

import codecs
import glob as globbing
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl
from polars.io.plugins import register_io_source

from calib_frames._deprecated import keyword_chooses, moved
from calib_frames.exceptions import ArgumentError, ReadError, TableError

__all__ = [
    "FORMATS",
    "PREDICTION_ROLES",
    "TOKEN_ROLES",
    "ScanResult",
    "expand_paths",
    "scan_predictions",
    "scan_predictions_skipping",
    "scan_table",
    "scan_table_skipping",
    "scan_tokens",
    "scan_tokens_skipping",
]

Format = Literal["parquet", "csv", "tsv", "jsonl", "json"]
PathsLike = str | Path | Sequence[str | Path]

FORMATS: dict[str, Format] = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv.gz": "csv",
    ".tsv.gz": "tsv",
    ".jsonl.gz": "jsonl",
    ".ndjson.gz": "jsonl",
}
"""File suffix → format (gzip-compressed CSV, TSV and JSON Lines by their inner suffix:
polars' readers decompress them)."""

PREDICTION_ROLES: dict[str, pl.DataType] = {
    "confidence": pl.Float64(),
    "correct": pl.Boolean(),
    "weight": pl.Float64(),
    "log_confidence": pl.Float64(),
}
"""The dtypes of the prediction role columns (what text inference left as text is read as)."""

TOKEN_ROLES: dict[str, pl.DataType] = {
    "nll": pl.Float64(),
    "tokens": pl.Int64(),
    "bytes": pl.Int64(),
    "words": pl.Int64(),
}
"""The dtypes of the token-file role columns."""

_GLOB = re.compile(r"[*?\[]")
_HIVE = re.compile(r"^([^=/\\]+)=([^/\\]*)$")


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


def _path_items(paths: object) -> list[str | Path]:
    """``paths=`` as a list of str/Path (an ArgumentError for anything else)."""
    if isinstance(paths, str | Path):
        return [paths]
    if not isinstance(paths, Iterable) or isinstance(paths, bytes):
        raise ArgumentError(
            f"paths= takes a path, a glob or a list of them, got {type(paths).__name__}"
        )
    items = list(paths)
    bad = [p for p in items if not isinstance(p, str | Path)]
    if bad:
        raise ArgumentError(f"paths= takes str or Path items, got {bad[0]!r}")
    return items


def expand_paths(
    paths: PathsLike, *, suffixes: Sequence[str] | None = None
) -> list[tuple[Path, Path]]:
    """Resolve files, globs and folders to ``(file, base)`` pairs, sorted and deduplicated.

    ``base`` is the folder the path was given as (where hive partition names start).

    Raises
    ------
    ReadError
        A path that does not exist, or a folder or glob with no data file.
    """
    items = _path_items(paths)
    if not items:
        raise ArgumentError("no input paths given")
    known = tuple(suffixes if suffixes is not None else FORMATS)
    found: dict[Path, Path] = {}
    for item in items:
        text = str(item)
        if _GLOB.search(text):
            matches = sorted(Path(m) for m in globbing.glob(text, recursive=True))
            files = [m for m in matches if m.is_file()]
            if not files:
                raise ReadError(f"{text}: the pattern matches no file")
            root = Path(_GLOB.split(text, maxsplit=1)[0] or ".")
            base = root if root.is_dir() else root.parent
            for file in files:
                found.setdefault(file, base)
            continue
        path = Path(item)
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)
                and p.name.lower().endswith(known)
            )
            if not files:
                raise ReadError(
                    f"{path}: the folder holds no data file (looked for {', '.join(known)})"
                )
            for file in files:
                found.setdefault(file, path)
        elif path.is_file():
            found.setdefault(path, path.parent)
        else:
            raise ReadError(f"{path}: no such file or folder")
    return sorted(found.items())


def _format_of(file: Path, format: str | None) -> Format:
    if format is not None:
        if format not in ("parquet", "csv", "tsv", "jsonl", "json"):
            raise ArgumentError(
                f"format= takes 'parquet', 'csv', 'tsv', 'jsonl' or 'json', got {format!r}"
            )
        return format  # type: ignore[return-value]
    for suffix, fmt in FORMATS.items():
        if file.name.lower().endswith(suffix):
            return fmt
    raise ArgumentError(f"{file}: cannot tell the file format from its name; pass format=")


def _hive_columns(file: Path, base: Path) -> dict[str, str]:
    try:
        parts = file.parent.relative_to(base).parts
    except ValueError:
        return {}
    out: dict[str, str] = {}
    for part in parts:
        match = _HIVE.match(part)
        if match:
            out[match.group(1)] = match.group(2)
    return out


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


# --- locating bad records -------------------------------------------------------------


def _parse_lines(
    fmt: Format, header: bytes | None, lines: list[bytes], schema: pl.Schema
) -> pl.DataFrame:
    data = b"\n".join(lines)
    if fmt == "jsonl":
        return pl.read_ndjson(data, schema=schema)
    separator = "\t" if fmt == "tsv" else ","
    assert header is not None
    return pl.read_csv(header + b"\n" + data, schema=schema, separator=separator)


def _bad_lines(
    fmt: Format,
    header: bytes | None,
    lines: list[bytes],
    first: int,
    schema: pl.Schema,
    *,
    stop_at_first: bool,
) -> list[tuple[int, str]]:
    """Line numbers (and polars' reason) of the records that do not parse, by bisection."""
    if not lines:
        return []
    try:
        _parse_lines(fmt, header, lines, schema)
        return []
    except pl.exceptions.PolarsError as error:
        if len(lines) == 1:
            return [(first, _short(error))]
    half = len(lines) // 2
    bad = _bad_lines(fmt, header, lines[:half], first, schema, stop_at_first=stop_at_first)
    if bad and stop_at_first:
        return bad
    return bad + _bad_lines(
        fmt, header, lines[half:], first + half, schema, stop_at_first=stop_at_first
    )


def _split_lines(file: Path, fmt: Format) -> tuple[bytes | None, list[bytes], int]:
    """The header (CSV), the record lines, and the line number of the first record."""
    raw = file.read_bytes().splitlines()
    if fmt == "jsonl":
        return None, raw, 1
    if not raw:
        raise ReadError(f"{file}: empty file")
    return raw[0], raw[1:], 2


def _locate(file: Path, fmt: Format, schema: pl.Schema, error: BaseException) -> ReadError:
    """A ReadError naming the first bad line of ``file`` (error path only)."""
    if fmt in ("jsonl", "csv", "tsv"):
        header, lines, first = _split_lines(file, fmt)
        bad = _bad_lines(fmt, header, lines, first, schema, stop_at_first=True)
        if bad:
            line, reason = bad[0]
            return ReadError(f"{file}, line {line}: malformed record ({reason})")
    return ReadError(f"{file}: cannot read it as {fmt} ({_short(error)})")


# --- scanning one file ----------------------------------------------------------------


def _native_scan(
    file: Path, fmt: Format, overrides: Mapping[str, pl.DataType] | None
) -> pl.LazyFrame:
    if fmt == "parquet":
        return pl.scan_parquet(file)
    if fmt in ("csv", "tsv"):
        return pl.scan_csv(
            file,
            separator="\t" if fmt == "tsv" else ",",
            infer_schema_length=None,
            schema_overrides=overrides,
        )
    if fmt == "jsonl":
        return pl.scan_ndjson(file, infer_schema_length=None, schema_overrides=overrides)
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
        raise ReadError(f"{file}: cannot read it as a table ({_short(error)})") from error


def guarded_scan(
    build: Callable[[], pl.LazyFrame],
    *,
    name: str,
    locate: Callable[[pl.Schema, BaseException], ReadError],
) -> pl.LazyFrame:
    """Wrap a native scan so that read errors at collection become ReadError.

    ``build`` makes the native LazyFrame; its schema is resolved now (a file that is not
    what it claims raises here). The returned LazyFrame is a polars IO source that
    forwards projections, predicates and row limits to the native scan and streams its
    batches in the size the engine asks for (the streaming engine's morsels, so that its
    pipeline starts on the first rows: 2^20-row chunks made the guarded scan 20% slower
    than the bare one over 10^7 rows of parquet); a polars error while reading is
    turned into ``locate(schema, error)``.
    """
    try:
        native = build()
        schema = native.collect_schema()
    except ReadError:
        raise
    except (pl.exceptions.PolarsError, OSError) as error:
        raise locate(pl.Schema(), error) from error

    def source(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        query = native
        if with_columns is not None:
            query = query.select(with_columns)
        if predicate is not None:
            query = query.filter(predicate)
        if n_rows is not None:
            query = query.head(n_rows)
        try:
            yield from query.collect_batches(chunk_size=batch_size)
        except (pl.exceptions.PolarsError, OSError) as error:
            raise locate(schema, error) from error

    return register_io_source(source, schema=schema, explain_name=name)


def _scan_file(
    file: Path,
    base: Path,
    fmt: Format,
    *,
    overrides: Mapping[str, pl.DataType] | None,
    hive: bool,
) -> pl.LazyFrame:
    def locate(schema: pl.Schema, error: BaseException) -> ReadError:
        if not len(schema):
            return _unreadable(file, fmt, error)
        return _locate(file, fmt, schema, error)

    frame = guarded_scan(
        lambda: _native_scan(file, fmt, overrides), name=f"{fmt} {file.name}", locate=locate
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


def refuse_records(
    records: pl.LazyFrame,
    file: Path,
    problems: Sequence[tuple[pl.Expr, str]],
    *,
    line: Callable[[dict[str, Any]], int],
    detail: Callable[[dict[str, Any]], str] = lambda _: "",
) -> pl.LazyFrame:
    """``records`` (one row per record of ``file``) checked when collected.

    ``problems`` pairs a *good* expression with the wording of its failure; the first
    record where one is not true raises a ReadError naming the file, the record's
    ``line`` (computed from its row, on the error path only), the problem and
    ``detail`` of the row. Lazy stays lazy.
    """

    def check(frame: pl.DataFrame) -> pl.DataFrame:
        for good, problem in problems:
            found = frame.filter(~good.fill_null(False)).head(1)
            if found.height:
                row = found.row(0, named=True)
                raise ReadError(f"{file}, line {line(row)}: {problem}{detail(row)}")
        return frame

    return records.map_batches(check, schema=records.collect_schema())


BOM_PROBLEM = (
    "the file starts with a UTF-8 byte-order mark (BOM), which JSON Lines does not allow; "
    "save it without one (e.g. as UTF-8, not UTF-8 with BOM)"
)
"""How a read error names a JSON Lines file that starts with a byte-order mark."""


def _unreadable(file: Path, fmt: Format, error: BaseException) -> ReadError:
    if isinstance(error, pl.exceptions.NoDataError) or (file.exists() and not file.stat().st_size):
        return ReadError(f"{file}: empty file")
    if fmt == "jsonl" and file.is_file():
        with file.open("rb") as handle:
            if handle.read(len(codecs.BOM_UTF8)) == codecs.BOM_UTF8:
                return ReadError(f"{file}, line 1: {BOM_PROBLEM}")
    if fmt == "jsonl":
        # Schema inference failed: name the first line polars cannot parse.
        _, lines, first = _split_lines(file, fmt)
        for offset, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as bad:
                return ReadError(f"{file}, line {first + offset}: malformed record ({bad})")
    return ReadError(f"{file}: cannot read it as {fmt} ({_short(error)})")


def _with_hive(frame: pl.LazyFrame, file: Path, base: Path, *, hive: bool) -> pl.LazyFrame:
    columns = _hive_columns(file, base) if hive else {}
    present = set(frame.collect_schema().names())
    extra = {k: v for k, v in columns.items() if k not in present}
    if not extra:
        return frame
    return frame.with_columns(pl.lit(v, pl.String).alias(k) for k, v in extra.items())


def _skip_scan_file(
    file: Path,
    base: Path,
    fmt: Format,
    *,
    overrides: Mapping[str, pl.DataType] | None,
    hive: bool,
    problems: list[tuple[str, int | None, str]],
) -> pl.LazyFrame | None:
    """Read one file leaving bad records out, listing them in ``problems``.

    Parquet stays lazy (an unreadable file is skipped whole; a corrupt data page still
    raises ReadError at collection); CSV/JSONL/JSON files are parsed now.
    """
    if fmt in ("parquet", "json"):
        try:
            return _scan_file(file, base, fmt, overrides=overrides, hive=hive)
        except ReadError as error:
            problems.append((str(file), None, str(error)))
            return None
    if not file.stat().st_size:
        problems.append((str(file), None, f"{file}: empty file"))
        return None
    try:
        frame = _native_scan(file, fmt, overrides).collect()
        return _with_hive(frame.lazy(), file, base, hive=hive)
    except (pl.exceptions.PolarsError, OSError) as error:
        failure: BaseException = error
    header, lines, first = _split_lines(file, fmt)
    schema: pl.Schema | None
    try:
        schema = _native_scan(file, fmt, overrides).collect_schema()
    except pl.exceptions.PolarsError:
        schema = _schema_of_good_lines(fmt, lines, overrides)
    if schema is None:
        problems.append((str(file), None, str(_unreadable(file, fmt, failure))))
        return None
    bad = _bad_lines(fmt, header, lines, first, schema, stop_at_first=False)
    bad_numbers = {line for line, _ in bad}
    problems.extend((str(file), line, reason) for line, reason in bad)
    good = [line for i, line in enumerate(lines, start=first) if i not in bad_numbers]
    kept = _parse_lines(fmt, header, good, schema) if good else pl.DataFrame(schema=schema)
    return _with_hive(kept.lazy(), file, base, hive=hive)


def _schema_of_good_lines(
    fmt: Format,
    lines: list[bytes],
    overrides: Mapping[str, pl.DataType] | None,
) -> pl.Schema | None:
    """The schema inferred from the lines that parse on their own.

    For a JSONL file whose schema inference failed on a malformed line.
    """
    if fmt != "jsonl":
        return None
    good = []
    for line in lines:
        try:
            json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        good.append(line)
    if not good:
        return None
    frame = pl.read_ndjson(b"\n".join(good), infer_schema_length=None, schema_overrides=overrides)
    return frame.schema


# --- public entry points --------------------------------------------------------------


def _scan(
    paths: PathsLike,
    *,
    format: Format | None,
    columns: Mapping[str, str] | None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None,
    skip: bool,
    hive_partitioning: bool,
) -> ScanResult:
    """Every file under ``paths`` stacked; with ``skip``, bad records left out and listed."""
    overrides = {name: _dtype(dtype) for name, dtype in (schema_overrides or {}).items()}
    files = expand_paths(paths)
    frames: list[pl.LazyFrame] = []
    problems: list[tuple[str, int | None, str]] = []
    for file, base in files:  # a loop over files, not rows
        fmt = _format_of(file, format)
        reader_overrides = overrides if fmt in ("csv", "tsv", "jsonl") else None
        if skip:
            frame: pl.LazyFrame | None = _skip_scan_file(
                file,
                base,
                fmt,
                overrides=reader_overrides,
                hive=hive_partitioning,
                problems=problems,
            )
        else:
            frame = _scan_file(file, base, fmt, overrides=reader_overrides, hive=hive_partitioning)
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
                f"the files do not stack into one table ({_short(error)}); "
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


def _scan_with_roles(
    paths: PathsLike,
    *,
    format: Format | None,
    columns: Mapping[str, str] | None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None,
    roles: Mapping[str, pl.DataType] | None,
    skip: bool,
    hive_partitioning: bool,
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
    options: dict[str, Any] = {
        "format": format,
        "columns": columns,
        "skip": skip,
        "hive_partitioning": hive_partitioning,
    }
    overrides = dict(schema_overrides or {})
    result = _scan(paths, schema_overrides=overrides or None, **options)
    found = result.frame.collect_schema()
    source = {new: old for old, new in (columns or {}).items()}
    textual = all(
        _format_of(file, format) in ("csv", "tsv", "jsonl", "json")
        for file, _ in expand_paths(paths)
    )
    retype = {
        source.get(name, name): dtype
        for name, dtype in (roles or {}).items()
        if textual
        and name in found
        and found[name] in (pl.String(), pl.Null())
        and source.get(name, name) not in overrides
    }
    if retype:
        result = _scan(paths, schema_overrides={**overrides, **retype}, **options)
    names = result.frame.collect_schema().names()
    missing = [c for c in required if c not in names]
    if missing:
        raise TableError(
            f"{what} need columns {missing}; available columns: "
            f"{', '.join(repr(n) for n in names) or 'none'}; map yours with columns="
        )
    return result


def scan_table_skipping(
    paths: PathsLike,
    *,
    format: Format | None = None,
    columns: Mapping[str, str] | None = None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None = None,
    roles: Mapping[str, pl.DataType] | None = None,
    hive_partitioning: bool = True,
) -> ScanResult:
    r""":func:`scan_table`, leaving malformed records and unreadable files out and counting them.

    To count them it parses CSV/JSON/JSONL files when called (their good rows are then
    held in memory); parquet files stay lazy.

    Parameters
    ----------
    paths, format, columns, schema_overrides, roles, hive_partitioning
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
    )


@keyword_chooses("on_bad_record", {"raise": None, "skip": scan_table_skipping})
def scan_table(
    paths: PathsLike,
    *,
    format: Format | None = None,
    columns: Mapping[str, str] | None = None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None = None,
    roles: Mapping[str, pl.DataType] | None = None,
    hive_partitioning: bool = True,
) -> pl.LazyFrame:
    r"""Scan parquet/CSV/TSV/JSONL/JSON files into one LazyFrame (see the module docstring).

    A malformed record or file raises :class:`ReadError` when the frame is collected;
    :func:`scan_table_skipping` leaves them out and counts them instead (what
    ``on_bad_record="skip"`` did until 0.2; the keyword still works for one release,
    with a DeprecationWarning).

    Parameters
    ----------
    paths
        A file, glob or folder, or a list of them.
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
    scan_table_skipping, scan_predictions, scan_tokens

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
    ).frame


def scan_predictions_skipping(
    paths: PathsLike,
    *,
    format: Format | None = None,
    columns: Mapping[str, str] | None = None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None = None,
    hive_partitioning: bool = True,
) -> ScanResult:
    r""":func:`scan_predictions`, leaving bad records out and counting them.

    Parameters
    ----------
    paths, format, columns, schema_overrides, hive_partitioning
        As :func:`scan_table`.

    Returns
    -------
    ScanResult
        As :func:`scan_table_skipping`.

    Raises
    ------
    TableError
        ``confidence`` or ``correct`` is missing after ``columns`` is applied; and the
        errors of :func:`scan_table_skipping`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from calib_frames.sources import scan_predictions_skipping
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
    >>> _ = file.write_text("confidence,correct\n0.9,1\n0.6,0,extra\n")
    >>> scan_predictions_skipping(file).skipped_records
    1
    """
    return _scan_with_roles(
        paths,
        format=format,
        columns=columns,
        schema_overrides=schema_overrides,
        roles=PREDICTION_ROLES,
        skip=True,
        hive_partitioning=hive_partitioning,
        required=("confidence", "correct"),
        what="predictions",
    )


@keyword_chooses("on_bad_record", {"raise": None, "skip": scan_predictions_skipping})
def scan_predictions(
    paths: PathsLike,
    *,
    format: Format | None = None,
    columns: Mapping[str, str] | None = None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None = None,
    hive_partitioning: bool = True,
) -> pl.LazyFrame:
    r""":func:`scan_table`, checked to hold ``confidence`` and ``correct`` after mapping.

    The prediction columns (``confidence``, ``correct``, ``weight``, ``log_confidence``)
    are the ``roles`` (:data:`PREDICTION_ROLES`). :func:`scan_predictions_skipping`
    leaves bad records out and counts them.

    Parameters
    ----------
    paths, format, columns, schema_overrides, hive_partitioning
        As :func:`scan_table`.

    Returns
    -------
    LazyFrame
        As :func:`scan_table`.

    Raises
    ------
    TableError
        ``confidence`` or ``correct`` is missing after ``columns`` is applied; and the
        errors of :func:`scan_table`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from calib_frames.sources import scan_predictions
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
    >>> _ = file.write_text("model,p,ok\na,0.9,1\na,0.6,0\n")
    >>> scan_predictions(file, columns={"p": "confidence", "ok": "correct"}).collect().columns
    ['model', 'confidence', 'correct']
    """
    return _scan_with_roles(
        paths,
        format=format,
        columns=columns,
        schema_overrides=schema_overrides,
        roles=PREDICTION_ROLES,
        skip=False,
        hive_partitioning=hive_partitioning,
        required=("confidence", "correct"),
        what="predictions",
    ).frame


def scan_tokens_skipping(
    paths: PathsLike,
    *,
    format: Format | None = None,
    columns: Mapping[str, str] | None = None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None = None,
    hive_partitioning: bool = True,
) -> ScanResult:
    r""":func:`scan_tokens`, leaving bad records out and counting them.

    Parameters
    ----------
    paths, format, columns, schema_overrides, hive_partitioning
        As :func:`scan_table`.

    Returns
    -------
    ScanResult
        As :func:`scan_table_skipping`.

    Raises
    ------
    TableError
        ``nll`` is missing after ``columns`` is applied; and the errors of
        :func:`scan_table_skipping`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from calib_frames.sources import scan_tokens_skipping
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = file.write_text('{"nll": 2.5}\n{"nll": \n')
    >>> scan_tokens_skipping(file).frame.collect()["nll"].to_list()
    [2.5]
    """
    return _scan_with_roles(
        paths,
        format=format,
        columns=columns,
        schema_overrides=schema_overrides,
        roles=TOKEN_ROLES,
        skip=True,
        hive_partitioning=hive_partitioning,
        required=("nll",),
        what="token frames",
    )


@keyword_chooses("on_bad_record", {"raise": None, "skip": scan_tokens_skipping})
def scan_tokens(
    paths: PathsLike,
    *,
    format: Format | None = None,
    columns: Mapping[str, str] | None = None,
    schema_overrides: Mapping[str, pl.DataType | type[pl.DataType]] | None = None,
    hive_partitioning: bool = True,
) -> pl.LazyFrame:
    r""":func:`scan_table`, checked to hold ``nll`` after mapping (token frames).

    The token columns (``nll``, ``tokens``, ``bytes``, ``words``) are the ``roles``
    (:data:`TOKEN_ROLES`). :func:`scan_tokens_skipping` leaves bad records out and
    counts them.

    Parameters
    ----------
    paths, format, columns, schema_overrides, hive_partitioning
        As :func:`scan_table`.

    Returns
    -------
    LazyFrame
        As :func:`scan_table`.

    Raises
    ------
    TableError
        ``nll`` is missing after ``columns`` is applied; and the errors of
        :func:`scan_table`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from calib_frames.sources import scan_tokens
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = file.write_text('{"doc": 1, "nll": 2.5, "tokens": 4}\n')
    >>> scan_tokens(file).collect().columns
    ['doc', 'nll', 'tokens']
    """
    return _scan_with_roles(
        paths,
        format=format,
        columns=columns,
        schema_overrides=schema_overrides,
        roles=TOKEN_ROLES,
        skip=False,
        hive_partitioning=hive_partitioning,
        required=("nll",),
        what="token frames",
    ).frame


def _dtype(dtype: pl.DataType | type[pl.DataType]) -> pl.DataType:
    if isinstance(dtype, type) and issubclass(dtype, pl.DataType):
        return dtype()
    if isinstance(dtype, pl.DataType):
        return dtype
    raise ArgumentError(f"schema_overrides= takes polars dtypes, got {dtype!r}")


def _cast(frame: pl.LazyFrame, overrides: Mapping[str, pl.DataType], file: Path) -> pl.LazyFrame:
    schema = frame.collect_schema()
    todo = {n: d for n, d in overrides.items() if n in schema and schema[n] != d}
    if not todo:
        return frame
    return frame.with_columns(pl.col(n).cast(d) for n, d in todo.items())


def _rename(frame: pl.LazyFrame, columns: Mapping[str, str] | None) -> pl.LazyFrame:
    if not columns:
        return frame
    if not isinstance(columns, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in columns.items()
    ):
        raise ArgumentError(
            f"columns= maps file column names to names, e.g. {{'prob': 'confidence'}}; "
            f"got {columns!r}"
        )
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


__getattr__ = moved(
    "calib_frames.sources.files", {"scan_with_roles": "calib_frames.sources.files.scan_table"}
)
