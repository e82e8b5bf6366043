"""Paths → files: a file, a glob, a folder or a list of them, each file with its format.

* **Paths**: a file, a glob (``runs/**/*.parquet``), a folder (every data file below it,
  hidden files and ``_SUCCESS``-style markers skipped) or a list of those
  (:func:`expand_paths`). The folder a file was found under is its *base*: folder levels
  below it named ``key=value`` (hive partitioning) are :func:`hive_columns`.
* **Format**: from the suffix (:data:`FORMATS`: ``.parquet``/``.pq``, ``.csv``, ``.tsv``,
  ``.jsonl``/``.ndjson``, ``.json``, and gzip-compressed CSV, TSV and JSON Lines by their
  inner suffix), or one ``format=`` for all files (:func:`format_of`).
* **Object storage**: an ``s3://``, ``gs://`` or ``az://`` URL (also ``s3a``, ``gcs``,
  ``abfs``, ``abfss``, ``azure``) names an object, a "folder" (a prefix: every data object
  below it) or a glob, as a local path does (:func:`expand_locations`). polars lists and
  reads them with its own object-store client: credentials come from the standard
  environment variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
  ``AWS_ENDPOINT_URL``, ``AWS_REGION``; ``GOOGLE_APPLICATION_CREDENTIALS``;
  ``AZURE_STORAGE_ACCOUNT_NAME``, ``AZURE_STORAGE_ACCOUNT_KEY``, …) or from
  ``storage_options`` (polars' keys, e.g. ``{"aws_endpoint_url": …, "aws_region": …}``).
  A failure is one :class:`~calib_frames.exceptions.ReadError` naming the URL
  (:func:`storage_error`: no such bucket, no such object, access denied, unreachable).
  Listing a prefix or a glob uses polars' own path expansion (the one its scans use),
  which polars does not export publicly: it needs polars 2; on polars 1 name the
  objects one by one. Evaluation-log folders (lm-eval, inspect_ai, HELM, lighteval,
  OpenAI) are read from local disk only: their readers open archives and walk run
  folders file by file; copy such a folder down first (:func:`expand_paths` says so).

The readers of every source (tables and evaluation logs) find their files here.
"""

from __future__ import annotations

import glob as globbing
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal

from calib_frames.arguments import InstanceOf, MappingOf, Options
from calib_frames.exceptions import ArgumentError, ReadError

__all__ = [
    "FORMAT",
    "FORMATS",
    "FORMAT_NAMES",
    "STORAGE_OPTIONS",
    "URL_SCHEMES",
    "Format",
    "Location",
    "PathsLike",
    "StorageOptions",
    "expand_locations",
    "expand_paths",
    "files_under",
    "format_of",
    "hive_columns",
    "is_glob",
    "is_url",
    "name_of",
    "path_items",
    "storage_error",
    "storage_options_of",
]

Format = Literal["parquet", "csv", "tsv", "jsonl", "json"]
PathsLike = str | Path | Sequence[str | Path]
Location = Path | str
"""A local file (a Path) or an object-storage URL (a str)."""
StorageOptions = Mapping[str, str] | None
"""polars' ``storage_options``: object-store settings and credentials (None: from the
environment)."""

URL_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "azure")
"""The object-storage URL schemes read and written (through polars)."""
_URL = re.compile(rf"^({'|'.join(URL_SCHEMES)})://([^/]*)/?(.*)$", re.IGNORECASE)

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
FORMAT = Options(*FORMAT_NAMES)
"""``format=`` of a table: one of :data:`FORMAT_NAMES`."""

_TEXT = InstanceOf(str, "a string", "strings")
STORAGE_OPTIONS = MappingOf(InstanceOf(str, "an option name", "option names"), _TEXT) | None
"""``storage_options=``: option names mapped to string values, or None (the environment)."""

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


def is_url(path: object) -> bool:
    """Whether ``path`` is an object-storage URL (:data:`URL_SCHEMES`), not a local path.

    Examples
    --------
    >>> is_url("s3://bucket/preds/"), is_url("gs://b/x.parquet"), is_url("preds/x.parquet")
    (True, True, False)
    """
    return isinstance(path, str) and _URL.match(path) is not None


def name_of(location: Location) -> str:
    """The file name of a local path or of an object's URL (its key's last part)."""
    return location.name if isinstance(location, Path) else location.rstrip("/").rsplit("/", 1)[-1]


def storage_options_of(options: object) -> dict[str, str] | None:
    """``storage_options=`` checked (:data:`STORAGE_OPTIONS`), as a dict or None.

    Raises
    ------
    ArgumentError
        Anything else.
    """
    STORAGE_OPTIONS.check(options, "storage_options")
    return None if options is None else dict(options)  # type: ignore[call-overload]


def storage_error(error: BaseException, url: str) -> ReadError:
    """One line naming ``url`` for a failed object-store request (a polars error).

    No such bucket (or container), no such object, access denied (with where the
    credentials come from), the store unreachable; anything else with its first line.

    Examples
    --------
    >>> str(storage_error(FileNotFoundError("... <Code>NoSuchKey</Code> ..."), "s3://b/k"))
    's3://b/k: no such object'
    """
    text = str(error)
    match = _URL.match(url)
    bucket = match.group(2) if match else ""
    codes = re.findall(r"<Code>([^<]+)</Code>", text)
    code = codes[0] if codes else ""
    denied = ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "Forbidden",
              "AuthorizationFailure", "AuthenticationFailed", "InvalidClientTokenId")  # fmt: skip
    if code in ("NoSuchBucket", "ContainerNotFound") or "bucket does not exist" in text:
        return ReadError(f"{url}: no such bucket {bucket!r}")
    if code in denied or re.search(r"\b(403|401)\b|Forbidden|Unauthorized|PermissionDenied", text):
        return ReadError(
            f"{url}: access denied{f' ({code})' if code else ''}; check the credentials (the "
            "standard environment variables, or storage options: --storage-option KEY=VALUE)"
        )
    if code in ("NoSuchKey", "BlobNotFound") or isinstance(error, FileNotFoundError):
        return ReadError(f"{url}: no such object")
    if re.search(r"error sending request|[Cc]onnection refused|dns error|timed out", text):
        return ReadError(f"{url}: cannot reach the object store ({_first_line(text)})")
    return ReadError(f"{url}: {_first_line(text)}")


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else "failed"


def _list_objects(pattern: str, storage_options: StorageOptions) -> list[str]:
    """The object URLs a glob URL matches, listed by polars' own path expansion."""
    try:
        from polars.io._expand_paths import _expand_paths
    except ImportError:  # polars 1: no path expansion reachable from Python
        raise ArgumentError(
            f"{pattern}: listing objects (a prefix or a glob) needs polars 2; name the "
            "objects one by one"
        ) from None
    import polars as pl

    try:
        listed = _expand_paths(pattern, storage_options=dict(storage_options or {}) or None)
        urls = listed.collect().to_series().to_list()
    except (pl.exceptions.PolarsError, OSError) as error:
        raise storage_error(error, pattern) from None
    return sorted(str(url) for url in urls)


def _expand_url(
    url: str, known: tuple[str, ...], storage_options: StorageOptions
) -> list[tuple[str, str]]:
    """``(object, base)`` pairs of an object, a prefix (a "folder") or a glob URL."""
    if _GLOB.search(url):
        base = _GLOB.split(url, maxsplit=1)[0].rsplit("/", 1)[0]
        matches = _list_objects(url, storage_options)
        if not matches:
            raise ReadError(f"{url}: the pattern matches no object")
        return [(match, base) for match in matches]
    if url.lower().endswith(known) and not url.endswith("/"):
        return [(url, url.rsplit("/", 1)[0])]
    base = url.rstrip("/")
    found = [
        match
        for match in _list_objects(base + "/**/*", storage_options)
        if match.lower().endswith(known)
        and not any(part.startswith((".", "_")) for part in match[len(base) + 1 :].split("/"))
    ]
    if not found:
        raise ReadError(f"{url}: no data object under this prefix (looked for {', '.join(known)})")
    return [(match, base) for match in found]


def expand_locations(
    paths: PathsLike,
    *,
    suffixes: Sequence[str] | None = None,
    storage_options: StorageOptions = None,
) -> list[tuple[Location, Location]]:
    """:func:`expand_paths` for local paths and object-storage URLs alike.

    A URL gives ``(object URL, base URL)`` pairs (str), a local path ``(file, folder)``
    pairs (Path), sorted and deduplicated.

    Raises
    ------
    ReadError
        A path that does not exist, a folder, prefix or glob with no data file, or an
        object store that refuses the listing (:func:`storage_error`).
    """
    items = path_items(paths)
    if not items:
        raise ArgumentError("no input paths given")
    known = tuple(suffixes if suffixes is not None else FORMATS)
    found: dict[Location, Location] = {}
    local = [item for item in items if not is_url(item)]
    for item in items:
        if is_url(item):
            for url, base in _expand_url(str(item), known, storage_options):
                found.setdefault(url, base)
    if local:
        found.update({file: base for file, base in _expand_local(local, known)})
    return sorted(found.items(), key=lambda pair: str(pair[0]))


def expand_paths(
    paths: PathsLike, *, suffixes: Sequence[str] | None = None
) -> list[tuple[Path, Path]]:
    """Resolve files, globs and folders to ``(file, base)`` pairs, sorted and deduplicated.

    ``base`` is the folder the path was given as (where hive partition names start).
    Local paths only (the evaluation-log readers): an object-storage URL is refused.

    Raises
    ------
    ReadError
        A path that does not exist, or a folder or glob with no data file.
    ArgumentError
        An object-storage URL.
    """
    items = path_items(paths)
    urls = [str(item) for item in items if is_url(item)]
    if urls:
        raise ArgumentError(
            f"{urls[0]}: evaluation logs are read from local disk; copy the folder down "
            "first (tables and statistics files are read from object storage directly)"
        )
    if not items:
        raise ArgumentError("no input paths given")
    return _expand_local(items, tuple(suffixes if suffixes is not None else FORMATS))


def _expand_local(items: Sequence[str | Path], known: tuple[str, ...]) -> list[tuple[Path, Path]]:
    """``(file, base)`` pairs of local files, globs and folders."""
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


def format_of(file: Location, format: str | None) -> Format:
    """The format of ``file``: ``format`` when given (checked), else from its suffix."""
    if format is not None:
        FORMAT.check(format, "format")
        return format  # type: ignore[return-value]
    for suffix, fmt in FORMATS.items():
        if name_of(file).lower().endswith(suffix):
            return fmt
    raise ArgumentError(f"{file}: cannot tell the file format from its name; pass format=")


def hive_columns(file: Location, base: Location) -> dict[str, str]:
    """``{key: value}`` of the ``key=value`` folder levels between ``base`` and ``file``."""
    if isinstance(file, str) or isinstance(base, str):  # URLs: the key parts below base
        text, root = str(file), str(base).rstrip("/") + "/"
        parts: tuple[str, ...] = (
            tuple(text[len(root) :].split("/")[:-1]) if text.startswith(root) else ()
        )
    else:
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
