"""Persisted statistics: additive tables in parquet, with what is needed to merge them.

A statistics file holds a bin-statistics table or an NLL-sums table with a ``batch_id``
column as its first key (one batch = one night's run, one file, one Spark job), and in
the parquet key-value metadata:

=============================  ===============================================
key                            value
=============================  ===============================================
``calib_frames.format``        :data:`calib_frames.schema.FORMAT_VERSION`
``calib_frames.table``         ``"bin_statistics"`` or ``"nll_sums"``
``calib_frames.keys``          JSON list of the group keys (without batch_id)
``calib_frames.binning``       JSON of :meth:`Binning.to_dict` (bin statistics)
``calib_frames.batches``       JSON list of the batch ids in the file
``calib_frames.batch_times``   JSON object: batch id → its time (ISO 8601, UTC)
``calib_frames.version``       the calib_frames version that wrote it
=============================  ===============================================

Keeping batches apart makes merging idempotent and order-free: :func:`read_statistics`
of several files keeps each batch once (a batch met twice must be identical, or the
read refuses), and the per-batch rows are only summed when metrics are computed
(``merge_bin_statistics(table, by=keys)``). Writes are atomic: a temporary file in the
target directory, then a rename; an object in object storage appears whole or not at
all (:func:`write_object`).

Object storage. Every path may be an ``s3://``, ``gs://`` or ``az://`` URL, and
:func:`read_statistics` takes prefixes and globs there and locally
(:mod:`calib_frames.sources.paths`: credentials from the standard environment variables
or ``storage_options=``; a missing bucket or object, or denied access, is one error
naming the URL).

Batch order. A batch may carry a time (``batch_time=``, ``calib-frames stats
--batch-time``; the command's default is the inputs' newest modification time), kept
beside its id so that ids can stay digests. :attr:`StoredStatistics.batch_order` sorts
the batches by it (ties by id). Files written before batch times existed, or batches
written without one: when any batch lacks a time, the order is that of first appearance
(the files in the order given, each file's batches in its row order), and
:attr:`StoredStatistics.timed` is False; the order is never guessed from ids.
:func:`merge_statistics_files` writes the batches in batch order and keeps every
batch's time, so a merged file reads back in the same order. A batch time more than a
day after now (:data:`FUTURE_SLACK`: a typo such as 2062 would stay the "last batch"
for ever) is refused on writing and reading unless ``allow_future=True``.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import polars as pl

from calib_frames._version import __version__
from calib_frames.arguments import FLAG, InstanceOf, Integer, Rule, check_arguments
from calib_frames.binning import Binning
from calib_frames.exceptions import ArgumentError, ReadError, TableError
from calib_frames.schema import BIN_STATISTICS, FORMAT_VERSION, NLL_SUMS
from calib_frames.sources.paths import (
    STORAGE_OPTIONS,
    Location,
    StorageOptions,
    expand_locations,
    is_url,
    storage_error,
    storage_options_of,
)
from calib_frames.validation import as_lazy

__all__ = [
    "FUTURE_SLACK",
    "StoredStatistics",
    "atomic_write",
    "batch_time_of",
    "check_batch_times",
    "merge_statistics_files",
    "read_statistics",
    "write_object",
    "write_statistics",
]

Kind = Literal["bin_statistics", "nll_sums"]
_PREFIX = "calib_frames."

FUTURE_SLACK = dt.timedelta(days=1)
"""How far after now a batch time may lie without ``allow_future`` (clocks and zones)."""


@dataclass(frozen=True)
class StoredStatistics:
    """Statistics read back from files.

    Attributes
    ----------
    table
        The table with ``batch_id`` as first key (one row set per batch).
    kind
        ``"bin_statistics"`` or ``"nll_sums"``.
    keys
        The group keys, without ``batch_id``.
    binning
        The binning (bin statistics only).
    batches
        The batch ids, sorted.
    batch_times
        Batch id → its time (ISO 8601, UTC) for the batches written with one.
    batch_order
        The batch ids in batch order (module docstring): by time when every batch has
        one, else in order of first appearance.
    """

    table: pl.DataFrame
    kind: Kind
    keys: list[str]
    binning: Binning | None
    batches: list[str]
    batch_times: dict[str, str] = field(default_factory=dict)
    batch_order: list[str] = field(default_factory=list)

    @property
    def timed(self) -> bool:
        """Whether every batch has a time (else :attr:`batch_order` is the file order)."""
        return all(batch in self.batch_times for batch in self.batches)

    @check_arguments(last=Integer(1))
    def latest(self, last: int) -> StoredStatistics:
        """The last ``last`` batches in batch order (all of them when there are fewer).

        Raises
        ------
        ArgumentError
            ``last`` is not an integer ≥ 1.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> import polars as pl
        >>> import calib_frames as cf
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> rows = pl.DataFrame({"confidence": [0.8, 0.6], "correct": [1, 0]})
        >>> for day in ("2026-12-01", "2026-11-30", "2026-12-02"):
        ...     cf.write_statistics(cf.bin_statistics(rows), folder / f"{day}.parquet",
        ...         batch_id=day[-2:], batch_time=day, binning=cf.Binning.uniform(10))
        >>> stored = cf.read_statistics(*sorted(folder.glob("*.parquet")))
        >>> stored.batch_order, stored.latest(2).batch_order
        (['30', '01', '02'], ['01', '02'])
        """
        kept = self.batch_order[-last:]
        return replace(
            self,
            table=self.table.filter(pl.col("batch_id").is_in(kept)),
            batches=sorted(kept),
            batch_times={b: t for b, t in self.batch_times.items() if b in kept},
            batch_order=kept,
        )

    def merged(self) -> pl.DataFrame:
        """The batches summed: one table grouped by :attr:`keys` (no ``batch_id``)."""
        from calib_frames.nll import merge_nll_sums
        from calib_frames.stats import merge_bin_statistics

        merge = merge_bin_statistics if self.kind == "bin_statistics" else merge_nll_sums
        return merge(self.table, by=self.keys)


def atomic_write(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then rename it.

    An interrupted write leaves no half-written ``path`` (the temporary file is removed);
    the file gets the usual permissions (the umask's), not the temporary file's 0600.
    (An object in object storage needs no temporary copy: :func:`write_object`.)

    Parameters
    ----------
    path
        The final file; its folder must exist.
    write
        A callable that writes the temporary path.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ArgumentError
        The folder does not exist.
    OSError
        The write failed (disk full, read-only folder, no permission), also when
        polars wrote the file; the temporary file is removed.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ArgumentError(f"cannot write {target}: folder {folder} does not exist")
    try:
        handle, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as error:  # a read-only or unwritable folder
        raise _os_error(error, target) from error
    os.close(handle)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except (OSError, pl.exceptions.PolarsError) as error:
        full = os.statvfs(folder).f_bavail == 0  # before the temporary file frees space
        Path(tmp).unlink(missing_ok=True)
        raise _os_error(error, target, full=full) from error
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_object(
    frame: pl.DataFrame,
    url: str,
    *,
    metadata: dict[str, str] | None = None,
    storage_options: StorageOptions = None,
) -> str:
    """Write an in-memory table as a parquet object, naming ``url`` in any failure.

    The object appears whole or not at all: polars uploads it in parts and the store
    publishes it only when the last part is in, so a transfer cut short (a network
    error, the process killed) leaves no object and an existing object as it was. It
    takes a computed DataFrame, never a query: polars' streaming sink, when its input
    query fails midway, publishes the rows it had (seen on a real S3 server), so
    nothing here streams a query into an object.

    Parameters
    ----------
    frame
        The table.
    url
        The object (``s3://``, ``gs://``, ``az://``).
    metadata
        Parquet key-value metadata.
    storage_options
        Object-store settings and credentials (default: the standard environment
        variables).

    Returns
    -------
    str
        The URL written.

    Raises
    ------
    OSError
        The write failed: no such bucket, access denied, the store unreachable (the
        message names the URL).
    """
    try:
        frame.write_parquet(
            url, metadata=metadata, storage_options=storage_options_of(storage_options)
        )
    except (OSError, pl.exceptions.PolarsError) as error:
        reason = str(storage_error(error, url)).removeprefix(f"{url}: ")
        raise OSError(errno.EIO, reason, url) from None
    return url


BATCH_TIME = InstanceOf((dt.datetime, dt.date, str), "a datetime, a date or an ISO 8601 string")
"""``batch_time=``: when a batch's data was made (parsed by :func:`batch_time_of`)."""


def batch_time_of(value: dt.datetime | dt.date | str) -> str:
    """A batch time as stored: ISO 8601 in UTC, to the second or finer.

    A date is its midnight; a time without a zone is taken as UTC.

    Raises
    ------
    ArgumentError
        ``value`` is not a datetime, a date or an ISO 8601 string.

    Examples
    --------
    >>> batch_time_of("2026-12-01")
    '2026-12-01T00:00:00+00:00'
    >>> batch_time_of("2026-12-01T03:30:00+02:00")
    '2026-12-01T01:30:00+00:00'
    """
    BATCH_TIME.check(value, "batch_time")
    moment = value
    if isinstance(moment, str):
        if not moment.strip():
            raise ArgumentError(
                "the batch time is empty; give an ISO 8601 date or time (e.g. 2026-12-01), "
                "or leave it out"
            )
        try:
            moment = dt.datetime.fromisoformat(moment.strip())
        except ValueError:
            raise ArgumentError(
                f"batch time {value!r} is not an ISO 8601 date or time (e.g. 2026-12-01 or "
                "2026-12-01T02:00:00+00:00)"
            ) from None
    if not isinstance(moment, dt.datetime):  # a date: its midnight
        moment = dt.datetime(moment.year, moment.month, moment.day)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        return moment.astimezone(dt.UTC).isoformat()
    except OverflowError:  # 9999-12-31T23:59:59-01:00 or year 1 with a positive offset
        raise ArgumentError(f"batch time {value!s} lies outside the years 1–9999 in UTC") from None


def check_batch_times(
    times: dict[str, str], *, allow_future: bool = False, where: str = ""
) -> None:
    """Refuse a batch time more than :data:`FUTURE_SLACK` after now (unless ``allow_future``).

    Parameters
    ----------
    times
        Batch id → its stored time (:func:`batch_time_of`).
    allow_future
        Accept times in the future (a backfill with planned dates, a test).
    where
        The file the times come from, for the message.

    Raises
    ------
    ArgumentError
        A time lies in the future.

    Examples
    --------
    >>> check_batch_times({"n1": "2026-01-01T00:00:00+00:00"})
    >>> check_batch_times({"typo": "2062-01-01T00:00:00+00:00"})
    Traceback (most recent call last):
    ...
    calib_frames.exceptions.ArgumentError: batch 'typo' has the time 2062-01-01T00:00:00+00:00, ...
    """
    if allow_future:
        return
    limit = dt.datetime.now(dt.UTC) + FUTURE_SLACK
    for batch, time in times.items():
        if dt.datetime.fromisoformat(time) > limit:
            raise ArgumentError(
                f"{where}batch {batch!r} has the time {time}, more than a day in the future; "
                "fix it, or accept it with allow_future=True (--allow-future)"
            )


def _os_error(
    error: OSError | pl.exceptions.PolarsError, target: Path, *, full: bool = False
) -> Exception:
    """The failed write as an OSError naming ``target`` (not the temporary file).

    polars reports a failed write (disk full, quota) as a ComputeError or an OSError
    that quotes the operating system's error number ("... (os error 28)"), or, when the
    disk filled up while its parquet writer flushed, only as "Invalid thrift: transport
    error"; the caller gets the OSError Python's own writes raise (ENOSPC when the
    folder's file system had no space left, ``full``). Other polars errors are returned
    as they are.
    """
    number = error.errno if isinstance(error, OSError) else None
    if number is None:
        found = re.search(r"\(os error (\d+)\)", str(error))
        if found is None and not full:
            return error
        number = errno.ENOSPC if found is None else int(found.group(1))
    return OSError(number, os.strerror(number), str(target))


@check_arguments(
    batch_id=Rule(
        "a non-empty string", lambda value: isinstance(value, str) and value != "", refused=("", 1)
    ),
    batch_time=BATCH_TIME | None,
    binning=InstanceOf(Binning, "a Binning") | None,
    allow_future=FLAG,
    storage_options=STORAGE_OPTIONS,
)
def write_statistics(
    table: pl.DataFrame | pl.LazyFrame,
    path: str | Path,
    *,
    batch_id: str,
    batch_time: dt.datetime | dt.date | str | None = None,
    binning: Binning | None = None,
    allow_future: bool = False,
    storage_options: StorageOptions = None,
) -> None:
    """Write a bin-statistics or NLL-sums table as one batch of a statistics file.

    Parameters
    ----------
    table
        The table (:func:`~calib_frames.bin_statistics` or :func:`~calib_frames.nll_sums`).
    path
        The parquet file to write (atomically), or an object's URL (``s3://…``).
    batch_id
        Names this batch; reading files that share a batch keeps it once.
    batch_time
        When the batch ran (a datetime, a date or an ISO 8601 string; stored in UTC by
        :func:`batch_time_of`): the batch order of :attr:`StoredStatistics.batch_order`.
        ``None`` stores none (batches are then ordered as the files are read).
    binning
        The binning of a bin-statistics table (recorded for merging).
    allow_future
        Accept a ``batch_time`` more than a day after now (:func:`check_batch_times`).
    storage_options
        Object-store settings and credentials for a URL ``path`` (default: the standard
        environment variables).

    Raises
    ------
    TableError
        ``table`` is neither kind of table, or has a ``batch_id`` column.
    ArgumentError
        ``batch_id`` is empty, ``batch_time`` is not a time or lies in the future, or a
        bin-statistics table comes without ``binning``.
    OSError
        The write failed (naming the file or URL).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> rows = pl.DataFrame({"model": ["a", "b"], "confidence": [0.9, 0.3], "correct": [1, 0]})
    >>> stats = cf.bin_statistics(rows, by="model")
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "night1.parquet"
    >>> cf.write_statistics(stats, path, batch_id="2026-12-01", batch_time="2026-12-01",
    ...                     binning=cf.Binning.uniform(10))
    >>> stored = cf.read_statistics(path)
    >>> stored.keys, stored.batches, stored.merged().height
    (['model'], ['2026-12-01'], 20)
    >>> stored.batch_times
    {'2026-12-01': '2026-12-01T00:00:00+00:00'}
    """
    times = {} if batch_time is None else {batch_id: batch_time_of(batch_time)}
    check_batch_times(times, allow_future=allow_future)
    frame = as_lazy(table).collect()
    kind, keys = _kind_and_keys(frame.schema)
    if "batch_id" in keys:
        raise TableError("the table already has a batch_id column; write tables of one batch")
    if kind == "bin_statistics" and binning is None:
        raise ArgumentError("write_statistics needs binning= for a bin-statistics table")
    metadata = {
        "format": str(FORMAT_VERSION),
        "table": kind,
        "keys": json.dumps(keys),
        "binning": json.dumps(None if binning is None else binning.to_dict()),
        "batches": json.dumps([batch_id]),
        "batch_times": json.dumps(times),
        "version": __version__,
    }
    out = frame.select(pl.lit(batch_id).alias("batch_id"), pl.all())
    _write(out, path, metadata, storage_options_of(storage_options))


def _write(
    frame: pl.DataFrame, path: str | Path, metadata: dict[str, str], options: dict[str, str] | None
) -> None:
    stored = {_PREFIX + key: value for key, value in metadata.items()}
    if isinstance(path, str) and is_url(path):
        write_object(frame, path, metadata=stored, storage_options=options)
    else:
        atomic_write(path, lambda tmp: frame.write_parquet(tmp, metadata=stored))


def _kind_and_keys(schema: pl.Schema) -> tuple[Kind, list[str]]:
    if "bin" in schema:
        return "bin_statistics", BIN_STATISTICS.keys(schema)
    if "nll_sum" in schema:
        return "nll_sums", NLL_SUMS.keys(schema)
    raise TableError(
        "not a bin-statistics or NLL-sums table: build one with calib_frames.bin_statistics "
        "or calib_frames.nll_sums"
    )


@check_arguments(storage_options=STORAGE_OPTIONS, allow_future=FLAG)
def read_statistics(
    *paths: str | Path, storage_options: StorageOptions = None, allow_future: bool = False
) -> StoredStatistics:
    """Read statistics files and fold them into one, each batch kept once.

    Parameters
    ----------
    *paths
        Files written by :func:`write_statistics` (or by ``calib-frames stats/merge``),
        folders or globs of them, local or in object storage (``s3://bucket/nightly/``);
        files are read in the order given (a folder's or glob's in name order).
    storage_options
        Object-store settings and credentials for URLs (default: the standard
        environment variables).
    allow_future
        Accept batch times more than a day after now (:func:`check_batch_times`).

    Returns
    -------
    StoredStatistics
        The batches of all files; :meth:`StoredStatistics.merged` sums them.

    Raises
    ------
    ReadError
        A file is missing, not parquet, or not a calib_frames statistics file; a bucket
        or object is missing or access is denied (naming the URL).
    TableError
        The files differ in format version, kind of table, keys or binning, or one batch
        id holds different numbers in two files.
    ArgumentError
        No path was given, or a batch time lies in the future.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for night in ("mon", "tue"):
    ...     rows = pl.DataFrame({"confidence": [0.8, 0.6], "correct": [1, 0]})
    ...     cf.write_statistics(
    ...         cf.bin_statistics(rows), folder / f"{night}.parquet",
    ...         batch_id=night, binning=cf.Binning.uniform(10),
    ...     )
    >>> paths = [folder / "mon.parquet", folder / "tue.parquet", folder / "tue.parquet"]
    >>> stored = cf.read_statistics(*paths)  # tue is counted once
    >>> stored.batches, int(stored.merged()["count"].sum())
    (['mon', 'tue'], 4)
    """
    if not paths:
        raise ArgumentError("read_statistics needs at least one file")
    options = storage_options_of(storage_options)
    files: dict[Location, None] = {}  # in the order given, each once
    for path in paths:
        located = expand_locations(path, suffixes=(".parquet",), storage_options=options)
        files.update(dict.fromkeys(file for file, _ in located))
    parts = [_read_one(file, options) for file in files]
    for file, part in zip(files, parts, strict=True):
        check_batch_times(part.batch_times, allow_future=allow_future, where=f"{file}: ")
    first = parts[0]
    for part in parts[1:]:
        for name in ("kind", "keys", "binning"):
            if getattr(part, name) != getattr(first, name):
                raise TableError(
                    f"cannot merge statistics with different {name}: "
                    f"{getattr(first, name)!r} vs {getattr(part, name)!r}"
                )
    tables: dict[str, pl.DataFrame] = {}  # in order of first appearance
    times: dict[str, str] = {}
    for part in parts:
        for timed, time in part.batch_times.items():
            if times.setdefault(timed, time) != time:
                raise TableError(
                    f"batch {timed!r} has two batch times, {times[timed]} and {time}; a batch "
                    "id must name one run"
                )
        for batch, batch_rows in part.table.partition_by("batch_id", as_dict=True).items():
            name = str(batch[0])
            rows = batch_rows.sort(pl.all())
            if name in tables and not tables[name].equals(rows):
                raise TableError(
                    f"batch {name!r} appears in two files with different statistics; a batch "
                    "id must name one run (give each run its own --batch-id)"
                )
            tables[name] = rows
    batches = sorted(tables)
    order = list(tables)
    if all(batch in times for batch in order):
        order.sort(key=lambda batch: (dt.datetime.fromisoformat(times[batch]), batch))
    columns = first.table.columns
    table = (
        pl.concat([tables[name].select(columns) for name in batches], how="vertical_relaxed")
        if batches
        else first.table
    )
    return StoredStatistics(table, first.kind, first.keys, first.binning, batches, times, order)


def _read_one(path: Location, options: dict[str, str] | None) -> StoredStatistics:
    remote = options if isinstance(path, str) else None
    try:
        metadata = pl.read_parquet_metadata(path, storage_options=remote)
        table = pl.read_parquet(path, storage_options=remote)
    except (pl.exceptions.PolarsError, OSError) as error:
        if isinstance(path, str) and (isinstance(error, OSError) or "object-store" in str(error)):
            raise storage_error(error, path) from None
        raise ReadError(f"{path}: not a readable parquet file ({error})") from None
    meta = {k[len(_PREFIX) :]: v for k, v in metadata.items() if k.startswith(_PREFIX)}
    if "format" not in meta:
        raise ReadError(
            f"{path}: not a calib_frames statistics file (no calib_frames metadata); write "
            "one with calib-frames stats or calib_frames.write_statistics"
        )
    if meta["format"] != str(FORMAT_VERSION):
        raise TableError(
            f"{path}: statistics format version {meta['format']}, this calib_frames reads "
            f"version {FORMAT_VERSION}"
        )
    if "batch_id" not in table.columns:
        raise ReadError(f"{path}: a statistics file has a batch_id column; this one has none")
    try:
        kind, keys = _kind_and_keys(table.drop("batch_id").schema)
    except TableError as error:
        raise ReadError(f"{path}: {error}") from None
    # the metadata must describe the table (a hand-edited keys= would silently roll up)
    recorded_kind = _metadata_json(path, meta, "table", kind)
    if recorded_kind != kind:
        raise ReadError(
            f"{path}: the metadata says a {recorded_kind!r} table, the columns {kind!r}"
        )
    recorded = _metadata_json(path, meta, "keys", [])
    if recorded != keys or table.columns[0] != "batch_id":
        raise ReadError(
            f"{path}: the recorded keys {recorded} do not match the columns (batch_id, then "
            f"the keys {keys}); was the metadata edited?"
        )
    binning_json = _metadata_json(path, meta, "binning", None)
    try:
        binning = None if binning_json is None else Binning.from_dict(binning_json)
    except (ArgumentError, TypeError, ValueError, AttributeError):
        raise ReadError(
            f"{path}: the recorded binning {binning_json!r} is not a binning description"
        ) from None
    if kind == "bin_statistics":
        top = table.select(pl.col("bin").cast(pl.Int64).max()).item()
        if binning is None or (top is not None and top >= binning.n_bins):
            raise ReadError(
                f"{path}: the recorded binning ({binning_json!r}) does not hold the table's "
                f"bins (up to bin {top})"
            )
    batches = sorted(str(b) for b in table["batch_id"].unique().to_list())
    times = _batch_times(path, meta, batches)
    order = [str(b) for b in table["batch_id"].unique(maintain_order=True).to_list()]
    return StoredStatistics(table, kind, keys, binning, batches, times, order)


def _batch_times(path: Location, meta: dict[str, str], batches: list[str]) -> dict[str, str]:
    """The recorded batch times (none in files written before they existed), checked."""
    times = _metadata_json(path, meta, "batch_times", {})
    if not isinstance(times, dict) or not set(times) <= set(batches):
        raise ReadError(f"{path}: the recorded batch times do not match the batches")
    try:
        return {str(batch): batch_time_of(str(time)) for batch, time in times.items()}
    except ArgumentError as error:
        raise ReadError(f"{path}: a recorded batch time is not a time ({error})") from None


def _metadata_json(path: Location, meta: dict[str, str], field: str, default: object) -> Any:
    """The JSON value of one metadata field (``default`` when absent); ReadError if not JSON."""
    if field not in meta:
        return default
    if field == "table":
        return meta[field]  # a plain string
    try:
        return json.loads(meta[field])
    except (json.JSONDecodeError, TypeError) as error:
        raise ReadError(
            f"{path}: the metadata field {_PREFIX}{field} is not valid JSON ({error})"
        ) from None


@check_arguments(storage_options=STORAGE_OPTIONS, allow_future=FLAG)
def merge_statistics_files(
    paths: Sequence[str | Path],
    out: str | Path,
    *,
    storage_options: StorageOptions = None,
    allow_future: bool = False,
) -> StoredStatistics:
    """Fold statistics files into one file (idempotent, order-free).

    The batches are written in batch order with their times, so that the merged file
    reads back in the same order (batches without a time in their order of first
    appearance: never sorted by id).

    Parameters
    ----------
    paths
        Input statistics files (folders, globs, URLs as :func:`read_statistics` takes).
    out
        The output parquet file (written atomically) or object URL.
    storage_options
        Object-store settings and credentials for URLs.
    allow_future
        Accept batch times more than a day after now.

    Returns
    -------
    StoredStatistics
        What was written.

    Raises
    ------
    ArgumentError
        ``out`` is not a ``.parquet`` file, or as :func:`read_statistics`.
    ReadError, TableError
        As :func:`read_statistics`.
    """
    if not str(out).lower().endswith(".parquet"):
        raise ArgumentError(f"{out}: statistics files are parquet (.parquet)")
    stored = read_statistics(*paths, storage_options=storage_options, allow_future=allow_future)
    metadata = {
        "format": str(FORMAT_VERSION),
        "table": stored.kind,
        "keys": json.dumps(stored.keys),
        "binning": json.dumps(None if stored.binning is None else stored.binning.to_dict()),
        "batches": json.dumps(stored.batches),
        "batch_times": json.dumps(stored.batch_times),
        "version": __version__,
    }
    position = {batch: place for place, batch in enumerate(stored.batch_order)}
    in_order = stored.table.sort(
        pl.col("batch_id").replace_strict(position, return_dtype=pl.UInt32), maintain_order=True
    )
    _write(in_order, out, metadata, storage_options_of(storage_options))
    return replace(stored, table=in_order)
