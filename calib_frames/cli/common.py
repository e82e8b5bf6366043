"""What every subcommand shares: reading inputs, checking outputs, running a query.

* Inputs are read lazily (parquet, CSV, JSONL/NDJSON; files, globs, hive-partitioned
  directories), the format taken from the extension or ``--format``. Role columns
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
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from calib_frames.binning import Binning
from calib_frames.exceptions import ArgumentError, ReadError

__all__ = [
    "add_binning_arguments",
    "add_input_arguments",
    "binning_from",
    "by_from",
    "check_output_type",
    "check_outputs",
    "collect",
    "expand_inputs",
    "scan_inputs",
]

FORMATS = {".parquet": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
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
        help="group keys, comma-separated and/or repeated: --by model,task",
    )
    parser.add_argument(
        "--format",
        choices=sorted(set(FORMATS.values())),
        default=None,
        help="input format (default: from the file extension)",
    )
    parser.add_argument(
        "--schema",
        action="append",
        default=[],
        metavar="COL=DTYPE",
        help=f"read COL as DTYPE ({', '.join(sorted(DTYPES))}); repeatable",
    )


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


def expand_inputs(inputs: Iterable[str]) -> list[Path]:
    """Files named by the arguments: files, globs, and directories.

    Directories are searched recursively for files of a known extension, as
    hive-partitioned datasets are laid out.

    Raises
    ------
    ArgumentError
        An argument matches no file.
    ReadError
        A directory holds no file of a known type.
    """
    paths: list[Path] = []
    for text in inputs:
        path = Path(text)
        if any(ch in text for ch in "*?["):
            anchor = Path(path.anchor or ".")
            pattern = str(path.relative_to(anchor)) if path.is_absolute() else text
            matched = sorted(p for p in anchor.glob(pattern) if p.is_file())
            if not matched:
                raise ArgumentError(f"{text}: no file matches")
            paths += matched
        elif path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix.lower() in FORMATS)
            if not found:
                raise ReadError(f"{text}: directory holds no .parquet/.csv/.jsonl file")
            paths += found
        elif path.is_file():
            paths.append(path)
        else:
            raise ArgumentError(f"{text}: no such file or directory")
    return paths


def _schema_overrides(specs: Sequence[str]) -> dict[str, pl.DataType]:
    overrides: dict[str, pl.DataType] = {}
    for spec in specs:
        column, _, dtype = spec.partition("=")
        if not column or dtype.lower() not in DTYPES:
            raise ArgumentError(
                f"--schema {spec!r}: expected COL=DTYPE with DTYPE one of {sorted(DTYPES)}"
            )
        overrides[column] = DTYPES[dtype.lower()]
    return overrides


def scan_inputs(
    inputs: Sequence[str],
    *,
    format: str | None,
    schema: Sequence[str],
    numeric: Sequence[str | None],
) -> tuple[pl.LazyFrame, list[Path]]:
    """One LazyFrame over every input file (same columns), and the files.

    Parameters
    ----------
    inputs
        Files, globs or directories.
    format
        ``"parquet"``, ``"csv"`` or ``"jsonl"``; ``None`` = from each file's extension.
    schema
        ``COL=DTYPE`` overrides.
    numeric
        Role columns read as Float64 from CSV whatever type inference guesses.

    Raises
    ------
    ReadError
        A file is missing, of unknown type, unreadable, or its columns differ from the
        first file's.
    ArgumentError
        A malformed ``--schema``.
    """
    overrides = _schema_overrides(schema)
    paths = expand_inputs(inputs)
    frames = []
    for path in paths:
        kind = format or FORMATS.get(path.suffix.lower())
        if kind is None:
            raise ArgumentError(
                f"{path}: unknown file type {path.suffix!r}; use one of {sorted(FORMATS)} "
                "or say --format"
            )
        frames.append(_scan(path, kind, overrides, [c for c in numeric if c]))
    first = frames[0].collect_schema()
    for path, frame in zip(paths[1:], frames[1:], strict=True):
        names = frame.collect_schema().names()
        if sorted(names) != sorted(first.names()):
            raise ReadError(f"{path}: columns {names} differ from {paths[0]}'s {first.names()}")
    lazy = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    return lazy, paths


def _scan(
    path: Path, kind: str, overrides: dict[str, pl.DataType], numeric: list[str]
) -> pl.LazyFrame:
    try:
        if kind == "parquet":
            frame = pl.scan_parquet(path, hive_partitioning=True)
        elif kind == "csv":
            header = pl.scan_csv(path, n_rows=0).collect_schema().names()
            csv_overrides: dict[str, pl.DataType] = {
                c: pl.Float64() for c in numeric if c in header
            }
            csv_overrides.update({c: d for c, d in overrides.items() if c in header})
            frame = pl.scan_csv(path, schema_overrides=csv_overrides, infer_schema_length=10_000)
        else:
            frame = pl.scan_ndjson(path, infer_schema_length=10_000)
        schema = frame.collect_schema()
    except (pl.exceptions.PolarsError, OSError) as error:
        raise ReadError(f"{path}: cannot be read as {kind}: {_first_line(error)}") from None
    casts = {c: d for c, d in overrides.items() if c in schema and schema[c] != d}
    return frame.with_columns(pl.col(c).cast(d) for c, d in casts.items()) if casts else frame


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def check_outputs(outputs: Sequence[Path | None], inputs: Sequence[Path]) -> None:
    """Refuse outputs before any work: a missing directory, or an output that is an input.

    Raises
    ------
    ArgumentError
        An output's directory does not exist, or the output is an input (same path,
        symlink or hard link: compared by device and inode).
    """
    for out in outputs:
        if out is None:
            continue
        parent = out.parent if str(out.parent) else Path(".")
        if not parent.is_dir():
            raise ArgumentError(f"output {out}: directory {parent} does not exist")
        if out.exists():
            for path in inputs:
                if os.path.samefile(out, path):
                    raise ArgumentError(
                        f"output {out} is the input {path}: it would be overwritten"
                    )


def collect(query: pl.LazyFrame, *, engine: str, files: Sequence[Path]) -> pl.DataFrame:
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
    """Write ``frame`` by the extension of ``path`` (.parquet, .csv, .json, .md), atomically."""
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
    """A GitHub-style markdown table of ``frame`` (floats to ``digits`` significant digits)."""

    def cell(value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, float):
            return f"{value:.{digits}g}"
        return str(value).replace("|", "\\|")

    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join(" --- " for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([header, rule, *rows]) + "\n"
