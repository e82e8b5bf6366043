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
``calib_frames.version``       the calib_frames version that wrote it
=============================  ===============================================

Keeping batches apart makes merging idempotent and order-free: :func:`read_statistics`
of several files keeps each batch once (a batch met twice must be identical, or the
read refuses), and the per-batch rows are only summed when metrics are computed
(``merge_bin_statistics(table, by=keys)``). Writes are atomic: a temporary file in the
target directory, then a rename.
"""

from __future__ import annotations

import errno
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl

from calib_frames._version import __version__
from calib_frames.binning import Binning
from calib_frames.exceptions import ArgumentError, ReadError, TableError
from calib_frames.schema import BIN_STATISTICS, FORMAT_VERSION, NLL_SUMS
from calib_frames.validation import as_lazy

__all__ = [
    "StoredStatistics",
    "atomic_write",
    "merge_statistics_files",
    "read_statistics",
    "write_statistics",
]

Kind = Literal["bin_statistics", "nll_sums"]
_PREFIX = "calib_frames."


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
    """

    table: pl.DataFrame
    kind: Kind
    keys: list[str]
    binning: Binning | None
    batches: list[str]

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


def write_statistics(
    table: pl.DataFrame | pl.LazyFrame,
    path: str | Path,
    *,
    batch_id: str,
    binning: Binning | None = None,
) -> None:
    """Write a bin-statistics or NLL-sums table as one batch of a statistics file.

    Parameters
    ----------
    table
        The table (:func:`~calib_frames.bin_statistics` or :func:`~calib_frames.nll_sums`).
    path
        The parquet file to write (atomically).
    batch_id
        Names this batch; reading files that share a batch keeps it once.
    binning
        The binning of a bin-statistics table (recorded for merging).

    Raises
    ------
    TableError
        ``table`` is neither kind of table, or has a ``batch_id`` column.
    ArgumentError
        ``batch_id`` is empty, or a bin-statistics table comes without ``binning``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> import calib_frames as cf
    >>> rows = pl.DataFrame({"model": ["a", "b"], "confidence": [0.9, 0.3], "correct": [1, 0]})
    >>> stats = cf.bin_statistics(rows, by="model")
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "night1.parquet"
    >>> cf.write_statistics(stats, path, batch_id="2026-12-01", binning=cf.Binning.uniform(10))
    >>> stored = cf.read_statistics(path)
    >>> stored.keys, stored.batches, stored.merged().height
    (['model'], ['2026-12-01'], 20)
    """
    if not isinstance(batch_id, str) or not batch_id:
        raise ArgumentError(f"batch_id must be a non-empty string, got {batch_id!r}")
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
        "version": __version__,
    }
    out = frame.select(pl.lit(batch_id).alias("batch_id"), pl.all())
    _write(out, path, metadata)


def _write(frame: pl.DataFrame, path: str | Path, metadata: dict[str, str]) -> None:
    atomic_write(
        path,
        lambda tmp: frame.write_parquet(
            tmp, metadata={_PREFIX + key: value for key, value in metadata.items()}
        ),
    )


def _kind_and_keys(schema: pl.Schema) -> tuple[Kind, list[str]]:
    if "bin" in schema:
        return "bin_statistics", BIN_STATISTICS.keys(schema)
    if "nll_sum" in schema:
        return "nll_sums", NLL_SUMS.keys(schema)
    raise TableError(
        "not a bin-statistics or NLL-sums table: build one with calib_frames.bin_statistics "
        "or calib_frames.nll_sums"
    )


def read_statistics(*paths: str | Path) -> StoredStatistics:
    """Read statistics files and fold them into one, each batch kept once.

    Parameters
    ----------
    *paths
        Files written by :func:`write_statistics` (or by ``calib-frames stats/merge``).

    Returns
    -------
    StoredStatistics
        The batches of all files; :meth:`StoredStatistics.merged` sums them.

    Raises
    ------
    ReadError
        A file is missing, not parquet, or not a calib_frames statistics file.
    TableError
        The files differ in format version, kind of table, keys or binning, or one batch
        id holds different numbers in two files.
    ArgumentError
        No path was given.

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
    parts = [_read_one(Path(path)) for path in paths]
    first = parts[0]
    for part in parts[1:]:
        for field in ("kind", "keys", "binning"):
            if getattr(part, field) != getattr(first, field):
                raise TableError(
                    f"cannot merge statistics with different {field}: "
                    f"{getattr(first, field)!r} vs {getattr(part, field)!r}"
                )
    tables: dict[str, pl.DataFrame] = {}
    for part in parts:
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
    columns = first.table.columns
    table = (
        pl.concat([tables[name].select(columns) for name in batches], how="vertical_relaxed")
        if batches
        else first.table
    )
    return StoredStatistics(table, first.kind, first.keys, first.binning, batches)


def _read_one(path: Path) -> StoredStatistics:
    if not path.is_file():
        raise ReadError(f"{path}: no such file")
    try:
        metadata = pl.read_parquet_metadata(path)
        table = pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as error:
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
    return StoredStatistics(table, kind, keys, binning, batches)


def _metadata_json(path: Path, meta: dict[str, str], field: str, default: object) -> Any:
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


def merge_statistics_files(paths: Sequence[str | Path], out: str | Path) -> StoredStatistics:
    """Fold statistics files into one file (idempotent, order-free).

    Parameters
    ----------
    paths
        Input statistics files.
    out
        The output file (written atomically).

    Returns
    -------
    StoredStatistics
        What was written.
    """
    stored = read_statistics(*paths)
    metadata = {
        "format": str(FORMAT_VERSION),
        "table": stored.kind,
        "keys": json.dumps(stored.keys),
        "binning": json.dumps(None if stored.binning is None else stored.binning.to_dict()),
        "batches": json.dumps(stored.batches),
        "version": __version__,
    }
    _write(stored.table, out, metadata)
    return stored
