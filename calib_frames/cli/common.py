"""What every subcommand shares: reading inputs, checking outputs, running a query.

* Inputs are read lazily (parquet, CSV, JSONL/NDJSON; files, globs, hive-partitioned
  directories, local or in object storage: ``s3://``, ``gs://``, ``az://`` with
  credentials from the standard environment variables or ``--storage-option
  KEY=VALUE``), the format taken from the extension or ``--format``. Role columns
  (confidence, NLL, weight, counts) are read as numbers whatever CSV type inference
  guesses, and ``--schema COL=DTYPE`` overrides any other column.
* Outputs are checked before any computing: the directory exists, no output is an input
  (by path, symlink or hard link), and the file type is known. They are written
  atomically (:func:`calib_frames.storage.atomic_write`).
* Queries run on polars' streaming engine; ``--engine gpu`` uses polars' GPU engine where
  cudf-polars is installed and otherwise falls back with one message.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import polars as pl

from calib_frames.binning import Binning
from calib_frames.exceptions import ArgumentError, DataError, ReadError
from calib_frames.sources.paths import Location, is_url

__all__ = [
    "add_binning_arguments",
    "add_input_arguments",
    "add_storage_arguments",
    "binning_from",
    "by_from",
    "check_output_type",
    "check_outputs",
    "collect",
    "location",
    "require_rows",
    "says_progress",
    "scan_inputs",
    "stage",
    "storage_options_from",
]

DTYPES: dict[str, pl.DataType] = {
    "float64": pl.Float64(),
    "float32": pl.Float32(),
    "int64": pl.Int64(),
    "int32": pl.Int32(),
    "uint64": pl.UInt64(),
    "bool": pl.Boolean(),
    "boolean": pl.Boolean(),
    "str": pl.String(),
    "string": pl.String(),
    "utf8": pl.String(),
}


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that say how to read inputs and how to group them."""
    parser.add_argument(
        "--by",
        action="append",
        default=None,
        metavar="KEYS",
        help="group keys, comma-separated and/or repeated: --by model,task (needed for "
        "prediction files: keys are never guessed; evaluation logs have their own default)",
    )
    parser.add_argument(
        "--pooled",
        action="store_true",
        help="every row in one group, no keys (prediction files without --by)",
    )
    from calib_frames.sources.logs import LOG_FORMATS
    from calib_frames.sources.paths import FORMAT_NAMES

    found_by = ", ".join(record.found_by for record in LOG_FORMATS.values())
    parser.add_argument(
        "--format",
        choices=[*FORMAT_NAMES, *LOG_FORMATS],
        default=None,
        help=f"input format (default: from the file extension; evaluation logs are "
        f"recognised: {found_by})",
    )
    parser.add_argument(
        "--schema",
        action="append",
        default=[],
        metavar="COL=DTYPE",
        help=f"read COL as DTYPE ({', '.join(sorted(DTYPES))}); repeatable",
    )
    parser.add_argument(
        "--columns",
        action="append",
        default=[],
        metavar="FILE_COL=NAME",
        help="rename a column of the files, e.g. --columns prob=confidence; repeatable",
    )
    parser.add_argument(
        "--on-bad-record",
        choices=["raise", "skip"],
        default="raise",
        help="a malformed record is an error (default) or skipped and counted",
    )
    add_storage_arguments(parser)


def add_storage_arguments(parser: argparse.ArgumentParser) -> None:
    """``--storage-option KEY=VALUE`` (object storage) and ``--quiet``."""
    parser.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an object-storage setting for s3://, gs:// and az:// paths, as polars names "
        "it (e.g. aws_endpoint_url=http://127.0.0.1:9000, aws_region=eu-west-1); "
        "repeatable; credentials otherwise come from the standard environment variables",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (by default one per stage that takes over 1 s)",
    )


def location(text: str) -> Location:
    """A command-line path: an object-storage URL stays a str, anything else is a Path."""
    return text if is_url(text) else Path(text)


def storage_options_from(args: argparse.Namespace) -> dict[str, str] | None:
    """The ``--storage-option KEY=VALUE`` pairs as polars' ``storage_options`` (None: none)."""
    return _mapping(getattr(args, "storage_option", []), "--storage-option") or None


PROGRESS_SECONDS = 1.0
"""A stage that takes longer than this says so on stderr (unless ``--quiet``)."""


def says_progress(args: argparse.Namespace, seconds: float) -> bool:
    """Whether a stage of ``seconds`` gets its progress line (over 1 s, not ``--quiet``)."""
    return seconds > PROGRESS_SECONDS and not getattr(args, "quiet", False)


@contextmanager
def stage(args: argparse.Namespace, what: str) -> Iterator[None]:
    """Time a stage; over a second, one line on stderr: ``calib-frames: WHAT in 2.3 s``.

    On a terminal or not (a job runner's log shows it too); nothing with ``--quiet``.
    """
    started = time.perf_counter()
    yield
    seconds = time.perf_counter() - started
    if says_progress(args, seconds):
        print(f"calib-frames: {what} in {seconds:.1f} s", file=sys.stderr, flush=True)


def add_binning_arguments(parser: argparse.ArgumentParser) -> None:
    """``--bins``, ``--binning`` and ``--closed``."""
    parser.add_argument("--bins", type=int, default=10, help="number of bins (default 10)")
    parser.add_argument(
        "--binning",
        choices=["uniform", "quantile"],
        default="uniform",
        help="equal-width (default) or equal-mass bins (per group, not mergeable)",
    )
    parser.add_argument(
        "--closed", choices=["left", "right"], default="left", help="bin closedness"
    )


def by_from(values: Sequence[str] | None) -> list[str]:
    """``--by model,task --by seed`` → ``["model", "task", "seed"]``.

    Raises
    ------
    ArgumentError
        An empty key or a key named twice.
    """
    keys = [key.strip() for value in values or [] for key in value.split(",")]
    if any(not key for key in keys):
        raise ArgumentError(f"--by has an empty key: {values}")
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ArgumentError(f"--by names {twice} twice")
    return keys


def binning_from(args: argparse.Namespace) -> Binning:
    """The :class:`Binning` of ``--bins/--binning/--closed``."""
    if args.binning == "quantile":
        if args.closed != "left":
            raise ArgumentError("--closed applies to equal-width bins only")
        return Binning.quantile(args.bins)
    return Binning.uniform(args.bins, closed=args.closed)


def _mapping(specs: Sequence[str], flag: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key or not value:
            raise ArgumentError(f"{flag} {spec!r}: expected NAME=VALUE")
        pairs[key] = value
    return pairs


def _schema_overrides(specs: Sequence[str]) -> dict[str, pl.DataType]:
    overrides: dict[str, pl.DataType] = {}
    for column, dtype in _mapping(specs, "--schema").items():
        if dtype.lower() not in DTYPES:
            raise ArgumentError(f"--schema {column}={dtype}: DTYPE must be one of {sorted(DTYPES)}")
        overrides[column] = DTYPES[dtype.lower()]
    return overrides


def scan_inputs(
    inputs: Sequence[str],
    *,
    format: str | None,
    schema: Sequence[str],
    columns: Sequence[str] = (),
    on_bad_record: str = "raise",
    roles: Mapping[str, pl.DataType] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> tuple[pl.LazyFrame, list[Location]]:
    """One LazyFrame over every input (files, globs, folders, hive layouts) and the files.

    Reading is :func:`calib_frames.sources.scan_table` (its ``_skipping`` twin with
    ``--on-bad-record skip``): CSV and JSONL types are inferred
    from every row (a column whose first rows look like integers stays a float column),
    ``--schema COL=DTYPE`` overrides a column, ``--columns FILE_COL=NAME`` renames one, and
    a malformed record is a ReadError naming file and line unless ``--on-bad-record skip``,
    which leaves it out and says how many were skipped on stderr. ``roles`` maps role
    columns (names after ``--columns``) to their type: one that inference left as text
    or null is read as that type, so that a stray value is named by file and line
    (``roles=`` of :func:`calib_frames.sources.scan_table`).

    Raises
    ------
    ArgumentError
        A path that does not exist, an unknown file type, a malformed flag.
    ReadError
        A file that cannot be read as what it claims to be.
    """
    from calib_frames.sources.files import scan_table, scan_table_skipping
    from calib_frames.sources.paths import FORMATS as KNOWN
    from calib_frames.sources.paths import Format, expand_locations

    for text in inputs:
        path = Path(text)
        if any(ch in text for ch in "*?[") or is_url(text):
            continue
        if not path.exists():
            raise ArgumentError(f"{text}: no such file or directory")
        if path.is_file() and format is None and not path.name.lower().endswith(tuple(KNOWN)):
            raise ArgumentError(
                f"{text}: unknown file type {path.suffix!r}; use one of {sorted(KNOWN)} "
                "or say --format"
            )
    paths = [file for file, _ in expand_locations(list(inputs), storage_options=storage_options)]
    options: dict[str, Any] = {
        "roles": roles or {},
        "format": cast("Format | None", format),  # checked by the reader
        "columns": _mapping(columns, "--columns") or None,
        "schema_overrides": _schema_overrides(schema) or None,
        "storage_options": storage_options,
    }
    if on_bad_record == "skip":
        scanned = scan_table_skipping(list(inputs), **options)
        if scanned.skipped_records or scanned.skipped_files:
            print(
                f"calib-frames: skipped {scanned.skipped_records:,} malformed record(s) and "
                f"{scanned.skipped_files} unreadable file(s) (--on-bad-record skip)",
                file=sys.stderr,
            )
        return scanned.frame, paths
    return scan_table(list(inputs), **options), paths


def require_rows(
    table: pl.DataFrame, files: Sequence[Location], *, what: str = "prediction rows"
) -> None:
    """Refuse to report on inputs without a single row (every metric would be 0 or NaN).

    Parameters
    ----------
    table
        Bin statistics or NLL sums (a ``count`` column).
    files
        The files read, for the message.
    what
        What the rows are, for the message.

    Raises
    ------
    DataError
        The table counts no row.
    """
    if table.is_empty() or not table["count"].sum():
        names = ", ".join(str(f) for f in files[:3]) + (" …" if len(files) > 3 else "")
        raise DataError(f"no {what} in {names or 'the inputs'}: nothing to report")


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def check_outputs(outputs: Sequence[Location | None], inputs: Sequence[Location]) -> None:
    """Refuse outputs before any work: a missing directory, or an output that is an input.

    An object-storage URL output is refused only when it is an input's URL (the store
    has no folders to check; a missing bucket is found when the object is written).

    Raises
    ------
    ArgumentError
        An output's directory does not exist, or the output is an input (same path,
        symlink or hard link: compared by device and inode; the same URL).
    """
    for out in outputs:
        if out is None:
            continue
        if isinstance(out, str):
            if out in {str(path) for path in inputs}:
                raise ArgumentError(f"output {out} is an input: it would be overwritten")
            continue
        parent = out.parent if str(out.parent) else Path(".")
        if not parent.is_dir():
            raise ArgumentError(f"output {out}: directory {parent} does not exist")
        if out.exists():
            for path in inputs:
                if isinstance(path, Path) and os.path.samefile(out, path):
                    raise ArgumentError(
                        f"output {out} is the input {path}: it would be overwritten"
                    )


def collect(query: pl.LazyFrame, *, engine: str, files: Sequence[Location]) -> pl.DataFrame:
    """Run ``query`` on the chosen engine, turning read failures into :class:`ReadError`.

    ``engine="gpu"`` uses polars' GPU engine when cudf-polars is installed; without it,
    one message on stderr and the streaming engine.
    """
    if engine == "gpu":
        try:
            return query.collect(engine=pl.GPUEngine(raise_on_fail=True))
        except (ModuleNotFoundError, ImportError):
            print(
                "calib-frames: the GPU engine needs cudf-polars (not installed, or not "
                "compatible with this polars); running on the streaming engine",
                file=sys.stderr,
            )
        except pl.exceptions.ComputeError as error:
            if "gpu" not in str(error).lower() and "cudf" not in str(error).lower():
                raise
            print(
                f"calib-frames: GPU engine unavailable ({_first_line(error)}); running on "
                "the streaming engine",
                file=sys.stderr,
            )
    chosen: Any = "streaming" if engine in ("gpu", "streaming") else "in-memory"
    try:
        return query.collect(engine=chosen)
    except pl.exceptions.PolarsError as error:
        names = ", ".join(str(f) for f in files[:3]) + (" …" if len(files) > 3 else "")
        raise ReadError(f"reading {names}: {_first_line(error)}") from None


TABLE_WRITERS = (".parquet", ".csv", ".json", ".md")


def check_output_type(path: Path) -> None:
    """Refuse an output file whose extension names no known table format."""
    if path.suffix.lower() not in TABLE_WRITERS:
        raise ArgumentError(f"output {path}: unknown file type; use one of {list(TABLE_WRITERS)}")


def write_frame(frame: pl.DataFrame, path: Path) -> None:
    """Write ``frame`` by the extension of ``path`` (.parquet, .csv, .json, .md), atomically.

    CSV cells are written as they are, also text that begins with ``=``, ``+``, ``-`` or
    ``@`` (a model named ``=HYPERLINK(…)``): prefixing them, the usual guard against
    spreadsheet formula injection, would change the names every other reader sees and
    no longer join with the inputs. A spreadsheet should import the file as text
    (or open the ``.md``/``.parquet`` outputs instead); the README says so.
    """
    from calib_frames.storage import atomic_write

    writers: dict[str, Callable[[Path], object]] = {
        ".parquet": frame.write_parquet,
        ".csv": frame.write_csv,
        ".json": frame.write_json,
        ".md": lambda tmp: tmp.write_text(markdown(frame), encoding="utf-8"),
    }
    writer = writers.get(path.suffix.lower())
    if writer is None:
        raise ArgumentError(f"output {path}: unknown file type; use one of {sorted(writers)}")
    atomic_write(path, writer)


def markdown(frame: pl.DataFrame, digits: int = 4) -> str:
    r"""A GitHub-style markdown table of ``frame`` (floats to ``digits`` significant digits).

    Text shows as written and never as markup: ``&``, ``<`` and ``>`` become HTML entities
    (a model named ``<img onerror=…>`` is text, as in the HTML page), the markdown
    punctuation that could format or link (backslash, backtick, ``*``, ``[``, ``]``, ``|``,
    and ``_`` at a word's edge) is escaped with a backslash, and line breaks become ``<br>``,
    so every frame row is one table row.

    Examples
    --------
    >>> print(markdown(pl.DataFrame({"model": ["<b>x</b>", "a|b", "*c*"]})), end="")
    | model |
    | --- |
    | &lt;b&gt;x&lt;/b&gt; |
    | a\|b |
    | \*c\* |
    """

    def cell(value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, float):
            return f"{value:.{digits}g}"
        text = re.sub(r"([\\`*\[\]|])", r"\\\1", str(value))
        text = re.sub(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])", r"\\_", text)
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        # one table row per frame row: a line break in a name becomes <br>, as GitHub
        # renders it inside a cell (a raw newline would end the row)
        return re.sub(r"\r\n|[\r\n\u2028\u2029\x0b\x0c\x85]", "<br>", text)

    header = "| " + " | ".join(cell(name) for name in frame.columns) + " |"
    rule = "|" + "|".join(" --- " for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([header, rule, *rows]) + "\n"
