"""Paths → files: a file, a glob, a folder or a list of them, each file with its format.

* **Paths**: a file, a glob (``runs/**/*.parquet``), a folder (every data file below it,
  hidden files and ``_SUCCESS``-style markers skipped) or a list of those
  (:func:`expand_paths`). The folder a file was found under is its *base*: folder levels
  below it named ``key=value`` (hive partitioning) are :func:`hive_columns`.
* **Format**: from the suffix (:data:`FORMATS`: ``.parquet``/``.pq``, ``.csv``, ``.tsv``,
  ``.jsonl``/``.ndjson``, ``.json``, and gzip-compressed CSV, TSV and JSON Lines by their
  inner suffix), or one ``format=`` for all files (:func:`format_of`).

The readers of every source (tables and evaluation logs) find their files here.
"""

from __future__ import annotations

import glob as globbing
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal

from calib_frames.exceptions import ArgumentError, ReadError

__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "Format",
    "PathsLike",
    "expand_paths",
    "files_under",
    "format_of",
    "hive_columns",
    "is_glob",
    "path_items",
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

FORMAT_NAMES: tuple[Format, ...] = tuple(dict.fromkeys(FORMATS.values()))
"""The table formats ``format=`` names: parquet, csv, tsv, jsonl, json."""

_GLOB = re.compile(r"[*?\[]")
_HIVE = re.compile(r"^([^=/\\]+)=([^/\\]*)$")


def is_glob(path: str | Path) -> bool:
    """Whether ``path`` is a glob pattern (holds ``*``, ``?`` or ``[``)."""
    return _GLOB.search(str(path)) is not None


def path_items(paths: object) -> list[str | Path]:
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
    items = path_items(paths)
    if not items:
        raise ArgumentError("no input paths given")
    known = tuple(suffixes if suffixes is not None else FORMATS)
    found: dict[Path, Path] = {}
    for item in items:
        text = str(item)
        if is_glob(text):
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
            files = sorted(p for p in files_under(path) if p.name.lower().endswith(known))
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


def files_under(folder: Path, pattern: str = "*") -> Iterator[Path]:
    """The files below ``folder`` named like ``pattern`` that a folder read takes.

    Hidden and ``_``-prefixed files and folders (``.git``, ``_SUCCESS``) are left out;
    links to folders are not followed (a link loop is no endless read); a folder that
    cannot be listed is a ReadError, never a part left out.
    """

    def refuse(error: OSError) -> None:
        raise ReadError(f"{error.filename}: cannot list the folder ({error.strerror})")

    for root, folders, names in os.walk(folder, onerror=refuse):
        folders[:] = [name for name in folders if not name.startswith((".", "_"))]
        for name in names:
            file = Path(root) / name
            if not name.startswith((".", "_")) and fnmatchcase(name, pattern) and file.is_file():
                yield file


def format_of(file: Path, format: str | None) -> Format:
    """The format of ``file``: ``format`` when given (checked), else from its suffix."""
    if format is not None:
        if format not in FORMAT_NAMES:
            raise ArgumentError(
                f"format= takes 'parquet', 'csv', 'tsv', 'jsonl' or 'json', got {format!r}"
            )
        return format
    for suffix, fmt in FORMATS.items():
        if file.name.lower().endswith(suffix):
            return fmt
    raise ArgumentError(f"{file}: cannot tell the file format from its name; pass format=")


def hive_columns(file: Path, base: Path) -> dict[str, str]:
    """``{key: value}`` of the ``key=value`` folder levels between ``base`` and ``file``."""
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
