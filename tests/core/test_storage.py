"""Persisted statistics (storage.py): what a file holds, reading files back batch by batch,
batch order and times, atomic writes, and every way a file or a set of files is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from factories import assert_frames_close, loss_rows, prediction_rows

import calib_frames as cf
from calib_frames.exceptions import ArgumentError, ReadError, TableError
from calib_frames.schema import FORMAT_VERSION
from calib_frames.storage import (
    atomic_write,
    batch_time_of,
    merge_statistics_files,
    read_statistics,
    write_statistics,
)

BINNING = cf.Binning.uniform(10)


def night(seed: int) -> pl.DataFrame:
    """One night's bin statistics by model × task."""
    rows = prediction_rows(seed, 300, power=1.3, tasks=("x", "y"))
    return cf.bin_statistics(rows, by=["model", "task"])


def write(path: Path, seed: int, batch: str, time: str | None = None) -> Path:
    write_statistics(night(seed), path, batch_id=batch, batch_time=time, binning=BINNING)
    return path


def test_a_file_holds_the_table_with_its_batch_and_the_metadata(tmp_path: Path) -> None:
    table = night(1)  # written as it is: two row passes may differ in a sum's last bit
    path = tmp_path / "a.parquet"
    write_statistics(table, path, batch_id="mon", batch_time="2026-12-01", binning=BINNING)
    stored = pl.read_parquet(path)
    assert stored.columns == ["batch_id", *table.columns]
    assert stored["batch_id"].unique().to_list() == ["mon"]
    assert stored.drop("batch_id").equals(table)
    meta = {
        key.removeprefix("calib_frames."): value
        for key, value in pl.read_parquet_metadata(path).items()
        if key.startswith("calib_frames.")
    }
    assert meta["format"] == str(FORMAT_VERSION)
    assert meta["table"] == "bin_statistics"
    assert json.loads(meta["keys"]) == ["model", "task"]
    assert cf.Binning.from_dict(json.loads(meta["binning"])) == BINNING
    assert json.loads(meta["batches"]) == ["mon"]
    assert json.loads(meta["batch_times"]) == {"mon": "2026-12-01T00:00:00+00:00"}
    assert meta["version"] == cf.__version__


def test_read_back_merged_is_the_table_written(tmp_path: Path) -> None:
    stored = read_statistics(write(tmp_path / "a.parquet", 2, "mon"))
    assert (stored.kind, stored.keys, stored.binning, stored.batches) == (
        "bin_statistics",
        ["model", "task"],
        BINNING,
        ["mon"],
    )
    assert_frames_close(stored.merged(), night(2))


def test_nll_sums_round_trip_without_binning(tmp_path: Path) -> None:
    sums = cf.nll_sums(loss_rows(3, 50), by="model", tokens="tokens")
    write_statistics(sums, tmp_path / "s.parquet", batch_id="mon")
    stored = read_statistics(tmp_path / "s.parquet")
    assert (stored.kind, stored.keys, stored.binning) == ("nll_sums", ["model"], None)
    assert stored.merged().equals(sums)


def test_batches_add_up_and_a_batch_read_twice_counts_once(tmp_path: Path) -> None:
    mon = write(tmp_path / "mon.parquet", 1, "mon")
    tue = write(tmp_path / "tue.parquet", 2, "tue")
    stored = read_statistics(mon, tue, tue, mon)
    assert stored.batches == ["mon", "tue"]
    assert_frames_close(stored.merged(), cf.merge_bin_statistics(night(1), night(2)))


def test_merging_files_is_idempotent_and_order_free(tmp_path: Path) -> None:
    mon = write(tmp_path / "mon.parquet", 1, "mon")
    tue = write(tmp_path / "tue.parquet", 2, "tue")
    both = merge_statistics_files([mon, tue], tmp_path / "both.parquet")
    again = merge_statistics_files(
        [tue, tmp_path / "both.parquet", mon], tmp_path / "again.parquet"
    )
    assert both.batches == again.batches == ["mon", "tue"]
    assert read_statistics(tmp_path / "again.parquet").table.equals(both.table)


def test_one_batch_with_two_different_tables_or_times_is_refused(tmp_path: Path) -> None:
    one = write(tmp_path / "one.parquet", 1, "mon")
    other = write(tmp_path / "other.parquet", 2, "mon")
    with pytest.raises(TableError, match="'mon' appears in two files with different"):
        read_statistics(one, other)
    early = write(tmp_path / "early.parquet", 1, "mon", "2026-12-01")
    late = write(tmp_path / "late.parquet", 1, "mon", "2026-12-02")
    with pytest.raises(TableError, match="'mon' has two batch times"):
        read_statistics(early, late)


def test_files_of_other_bins_keys_or_kinds_are_refused(tmp_path: Path) -> None:
    base = write(tmp_path / "base.parquet", 1, "mon")
    rows = prediction_rows(2, 100, tasks=("x",))
    five = cf.Binning.uniform(5)
    write_statistics(
        cf.bin_statistics(rows, by=["model", "task"], bins=five),
        tmp_path / "bins.parquet", batch_id="tue", binning=five,
    )  # fmt: skip
    write_statistics(
        cf.bin_statistics(rows, by="model"), tmp_path / "keys.parquet", batch_id="tue",
        binning=BINNING,
    )  # fmt: skip
    sums = cf.nll_sums(loss_rows(2, 20, tasks=("x",)), by=["model", "task"], tokens="tokens")
    write_statistics(sums, tmp_path / "kind.parquet", batch_id="tue")
    for name, what in (("bins", "binning"), ("keys", "keys"), ("kind", "kind")):
        with pytest.raises(TableError, match=f"different {what}"):
            read_statistics(base, tmp_path / f"{name}.parquet")


def test_batch_order_follows_times_or_else_the_files(tmp_path: Path) -> None:
    paths = [
        write(tmp_path / "c.parquet", 1, "c", "2026-12-03"),
        write(tmp_path / "a.parquet", 2, "a", "2026-12-03"),  # a tie: by id
        write(tmp_path / "b.parquet", 3, "b", "2026-11-30T23:00:00-02:00"),  # Dec 1, 01:00 UTC
    ]
    stored = read_statistics(*paths)
    assert stored.timed
    assert stored.batch_order == ["b", "a", "c"]
    assert stored.latest(2).batch_order == ["a", "c"]
    assert stored.latest(2).batches == ["a", "c"]
    assert set(stored.latest(2).table["batch_id"]) == {"a", "c"}
    assert stored.latest(10).batch_order == stored.batch_order
    untimed = write(tmp_path / "d.parquet", 4, "d")
    mixed = read_statistics(untimed, *paths)
    assert not mixed.timed
    assert mixed.batch_order == ["d", "c", "a", "b"]  # as the files were given


@pytest.mark.parametrize("last", [0, -1, True, 1.5])
def test_latest_takes_a_whole_number_of_batches(tmp_path: Path, last: object) -> None:
    stored = read_statistics(write(tmp_path / "a.parquet", 1, "a"))
    with pytest.raises(ArgumentError, match="last"):
        stored.latest(last)  # type: ignore[arg-type]


def test_batch_times_are_stored_in_utc() -> None:
    import datetime as dt

    assert batch_time_of(dt.date(2026, 12, 1)) == "2026-12-01T00:00:00+00:00"
    assert batch_time_of(dt.datetime(2026, 12, 1, 5)) == "2026-12-01T05:00:00+00:00"
    assert batch_time_of(" 2026-12-01T03:30:00+02:00 ") == "2026-12-01T01:30:00+00:00"
    with pytest.raises(ArgumentError, match="not an ISO 8601"):
        batch_time_of("last tuesday")
    with pytest.raises(ArgumentError, match=r"batch_time= takes a datetime.*got 20261201"):
        batch_time_of(20261201)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("table", "kwargs", "error", "match"),
    [
        ("stats", {"batch_id": ""}, ArgumentError, "batch_id"),
        ("stats", {"batch_id": "x", "binning": None}, ArgumentError, "binning="),
        ("stats", {"batch_id": "x", "batch_time": "soon"}, ArgumentError, "ISO 8601"),
        ("with_batch", {"batch_id": "x"}, TableError, "already has a batch_id"),
        ("rows", {"batch_id": "x"}, TableError, "not a bin-statistics or NLL-sums"),
    ],
    ids=["empty-id", "no-binning", "bad-time", "batch-column", "not-a-table"],
)
def test_write_refuses_what_it_cannot_store(
    tmp_path: Path, table: str, kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    rows = prediction_rows(1, 50)
    tables = {
        "stats": cf.bin_statistics(rows),
        "with_batch": cf.bin_statistics(rows.with_columns(batch_id=pl.lit("n")), by="batch_id"),
        "rows": rows,
    }
    arguments = {"binning": BINNING, **kwargs}
    with pytest.raises(error, match=match):
        write_statistics(tables[table], tmp_path / "out.parquet", **arguments)  # type: ignore[arg-type]
    assert not (tmp_path / "out.parquet").exists()


def rewrite_metadata(source: Path, target: Path, **changes: str) -> Path:
    """A copy of a statistics file with some of its metadata fields changed."""
    meta = dict(pl.read_parquet_metadata(source))
    meta |= {f"calib_frames.{key}": value for key, value in changes.items()}
    pl.read_parquet(source).write_parquet(target, metadata=meta)
    return target


def test_read_refuses_files_that_are_not_statistics(tmp_path: Path) -> None:
    good = write(tmp_path / "good.parquet", 1, "mon")
    with pytest.raises(ArgumentError, match="at least one"):
        read_statistics()
    with pytest.raises(ReadError, match="no such file"):
        read_statistics(tmp_path / "missing.parquet")
    (tmp_path / "text.parquet").write_text("not parquet")
    with pytest.raises(ReadError, match="not a readable parquet file"):
        read_statistics(tmp_path / "text.parquet")
    pl.read_parquet(good).write_parquet(tmp_path / "plain.parquet")
    with pytest.raises(ReadError, match="no calib_frames metadata"):
        read_statistics(tmp_path / "plain.parquet")
    cases = {
        "format": ({"format": "0"}, TableError, "format version 0"),
        "keys": ({"keys": '["model"]'}, ReadError, "recorded keys"),
        "kind": ({"table": "nll_sums"}, ReadError, "the metadata says"),
        "json": ({"keys": "[model"}, ReadError, "not valid JSON"),
        "binning": ({"binning": json.dumps(cf.Binning.uniform(5).to_dict())}, ReadError,
                    "does not hold the table's bins"),
        "times": ({"batch_times": '{"tue": "2026-12-01"}'}, ReadError, "batch times"),
    }  # fmt: skip
    for name, (changes, error, match) in cases.items():
        edited = rewrite_metadata(good, tmp_path / f"{name}.parquet", **changes)
        with pytest.raises(error, match=match):
            read_statistics(edited)


def test_an_interrupted_write_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"

    def fail(path: Path) -> None:
        path.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, fail)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ArgumentError, match="does not exist"):
        atomic_write(tmp_path / "no" / "out.parquet", fail)


def test_a_written_file_has_the_umasks_permissions(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        path = atomic_write(tmp_path / "out.txt", lambda tmp: tmp.write_text("done"))
    finally:
        os.umask(old)
    assert path.read_text() == "done"
    assert path.stat().st_mode & 0o777 == 0o640
