"""Object storage end to end against a real S3-compatible server (moto's, on 127.0.0.1).

Tables, token files and statistics files are read from and written to ``s3://`` URLs
(objects, prefixes, globs, hive partitions), with credentials from ``storage_options``,
``--storage-option`` or the standard environment variables; failures are one line naming
the URL; a failed write leaves no half object.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import S3Server
from factories import assert_frames_close

import calib_frames as cf
from calib_frames.cli import main
from calib_frames.exceptions import ArgumentError, ReadError
from calib_frames.sources.paths import expand_locations, expand_paths
from calib_frames.storage import write_object

ROOT = Path(__file__).resolve().parents[2]
ROWS = pl.DataFrame(
    {
        "model": ["a", "a", "b", "b", "a", "b"] * 50,
        "confidence": [0.9, 0.7, 0.6, 0.8, 0.55, 0.95] * 50,
        "correct": [True, False, True, True, False, True] * 50,
    }
)


def cli(server: S3Server, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line in a fresh process, its credentials from the environment only."""
    return subprocess.run(
        [sys.executable, "-m", "calib_frames", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=server.env(),
        timeout=300,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def preds(s3_server: S3Server) -> str:
    """A hive-partitioned prefix: day=1 as parquet, day=2 as CSV, and a _SUCCESS marker."""
    prefix = f"s3://{s3_server.bucket}/preds"
    options = s3_server.options
    ROWS.head(150).write_parquet(f"{prefix}/day=1/part.parquet", storage_options=options)
    ROWS.tail(150).write_csv(f"{prefix}/day=2/part.csv", storage_options=options)
    pl.DataFrame({"x": [1]}).write_csv(f"{prefix}/_SUCCESS", storage_options=options)
    return prefix


def test_a_prefix_a_glob_and_hive_partitions_read_as_locally(
    s3_server: S3Server, preds: str, tmp_path: Path
) -> None:
    local = tmp_path / "preds"
    (local / "day=1").mkdir(parents=True)
    (local / "day=2").mkdir()
    ROWS.head(150).write_parquet(local / "day=1" / "part.parquet")
    ROWS.tail(150).write_csv(local / "day=2" / "part.csv")
    expected = cf.sources.scan_table(local).collect().sort(pl.all())
    options = s3_server.options
    got = cf.sources.scan_table(preds + "/", storage_options=options).collect().sort(pl.all())
    assert got.equals(expected) and got["day"].unique().sort().to_list() == ["1", "2"]
    glob = cf.sources.scan_table(f"{preds}/day=*/*.parquet", storage_options=options).collect()
    assert glob.height == 150 and glob["day"].unique().to_list() == ["1"]
    listed = [str(url) for url, _ in expand_locations(preds, storage_options=options)]
    assert listed == [f"{preds}/day=1/part.parquet", f"{preds}/day=2/part.csv"]  # no _SUCCESS


def test_statistics_round_trip_through_object_storage(s3_server: S3Server) -> None:
    options = s3_server.options
    folder = f"s3://{s3_server.bucket}/nightly"
    binning = cf.Binning.uniform(10)
    for night in (1, 2, 3):
        cf.write_statistics(
            cf.bin_statistics(ROWS.sample(fraction=1.0, seed=night), by="model"),
            f"{folder}/n{night}.parquet", batch_id=f"n{night}",
            batch_time=f"2026-12-0{4 - night}",  # written in reverse time order
            binning=binning, storage_options=options,
        )  # fmt: skip
    stored = cf.read_statistics(folder, storage_options=options)
    assert stored.batch_order == ["n3", "n2", "n1"]  # by time, not by name
    merged = f"s3://{s3_server.bucket}/merged/all.parquet"
    cf.storage.merge_statistics_files([f"{folder}/*.parquet"], merged, storage_options=options)
    again = cf.read_statistics(merged, storage_options=options)
    assert again.batch_order == stored.batch_order
    # the same sums added in another order: equal to the last bits
    assert_frames_close(again.merged(), stored.merged(), rel=1e-13, abs=1e-13)


def test_the_command_line_reads_and_writes_objects_with_environment_credentials(
    s3_server: S3Server, preds: str, tmp_path: Path
) -> None:
    out = f"s3://{s3_server.bucket}/cli/night.parquet"
    line = one_line(cli(s3_server, "stats", preds + "/", "--by", "model", "--out", out), 2)
    assert "give --batch-id and --batch-time" in line
    stats = cli(s3_server, "stats", preds + "/", "--by", "model", "--out", out,
                "--batch-id", "n1", "--batch-time", "2026-12-01")  # fmt: skip
    assert stats.returncode == 0, stats.stderr
    merged = f"s3://{s3_server.bucket}/cli/all.parquet"
    assert cli(s3_server, "merge", f"s3://{s3_server.bucket}/cli/", "--out", merged).returncode == 0
    report = cli(s3_server, "report", "--from-stats", merged, "--no-charts", "--no-uncertainty",
                 "--out", str(tmp_path / "r"))  # fmt: skip
    assert report.returncode == 0, report.stderr
    table = pl.read_parquet(tmp_path / "r" / "comparison.parquet")
    expected = cf.calibration_metrics(ROWS, by="model")
    assert table["count"].to_list() == expected["count"].to_list()
    assert table["ece"].to_list() == pytest.approx(expected["ece"].to_list(), rel=1e-12)
    compare = cli(s3_server, "compare", f"{preds}/day=*/*", "--by", "model", "--no-uncertainty")
    assert compare.returncode == 0, compare.stderr
    assert "│ a" in compare.stdout and "│ b" in compare.stdout


def test_storage_option_flags_give_the_credentials(
    s3_server: S3Server, preds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = [arg for key, value in s3_server.options.items()
             for arg in ("--storage-option", f"{key}={value}")]  # fmt: skip
    assert main(["compare", preds + "/", "--by", "model", "--no-uncertainty", *flags]) == 0
    assert "│ a" in capsys.readouterr().out
    assert main(["compare", preds + "/", "--storage-option", "nokey", "--by", "model"]) == 2
    assert "expected NAME=VALUE" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("s3://no-such-bucket/x.parquet", "no such bucket 'no-such-bucket'"),
        ("s3://calib/missing/x.parquet", "no such object"),
        ("s3://calib/missing/", "no data object under this prefix"),
    ],
)
def test_missing_buckets_and_objects_are_one_line_naming_the_url(
    s3_server: S3Server, where: str, message: str
) -> None:
    line = one_line(cli(s3_server, "compare", where, "--by", "model"), 1)
    assert where in line and message in line, line
    with pytest.raises(ReadError, match=message):
        cf.read_statistics(where, storage_options=s3_server.options)


def test_denied_access_is_one_line_naming_the_url(
    s3_server: S3Server, preds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"{preds}/day=1/part.parquet"
    with pytest.raises(ReadError, match="access denied"):
        cf.sources.scan_table(target, storage_options=s3_server.denied).collect()
    flags = [arg for key, value in s3_server.denied.items()
             for arg in ("--storage-option", f"{key}={value}")]  # fmt: skip
    assert main(["compare", target, "--by", "model", *flags]) == 1
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and target in line and "access denied (AccessDenied)" in line
    out = f"s3://{s3_server.bucket}/denied.parquet"  # a write refused
    args = ["stats", target, "--by", "model", "--out", out, "--batch-id", "x",
            "--batch-time", "2026-12-01", *flags]  # fmt: skip
    assert main(args) == 1
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "access denied" in line


def test_a_write_cut_short_leaves_no_half_object(s3_server: S3Server) -> None:
    """A writer killed while its parts are uploading: no object, and the old one whole."""
    import boto3

    options = s3_server.options
    client = boto3.client(
        "s3", endpoint_url=s3_server.endpoint, region_name="us-east-1",
        aws_access_key_id=options["aws_access_key_id"],
        aws_secret_access_key=options["aws_secret_access_key"],
    )  # fmt: skip
    for before in (None, ROWS):
        url = f"s3://{s3_server.bucket}/cut/{'over' if before is not None else 'new'}.parquet"
        if before is not None:
            write_object(before, url, storage_options=options)
        code = (
            "import numpy as np, polars as pl\n"
            "from calib_frames.storage import write_object\n"
            "frame = pl.DataFrame({'x': np.random.default_rng(0).random(12_000_000)})\n"
            "print('ready', flush=True)\n"
            f"write_object(frame, {url!r}, storage_options={options!r})\n"
        )
        with subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT
        ) as writer:
            assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
            key = url.split("/", 3)[3]
            while not [
                upload
                for upload in client.list_multipart_uploads(Bucket=s3_server.bucket).get(
                    "Uploads", []
                )
                if upload["Key"] == key
            ]:
                assert writer.poll() is None, "the upload finished before it was cut short"
            writer.kill()
        if before is None:
            with pytest.raises(ReadError, match="no such object"):
                cf.sources.scan_table(url, storage_options=options).collect()
        else:
            assert pl.read_parquet(url, storage_options=options).equals(before)


def test_a_refused_write_is_one_line_naming_the_url(s3_server: S3Server) -> None:
    url = "s3://no-such-bucket/x.parquet"
    with pytest.raises(OSError, match="no such bucket") as error:
        write_object(ROWS, url, storage_options=s3_server.options)
    assert error.value.filename == url and "\n" not in str(error.value)


def test_eval_log_folders_in_object_storage_are_refused_in_one_line() -> None:
    with pytest.raises(ArgumentError, match="read from local disk; copy the folder down"):
        expand_paths("s3://calib/inspect-logs/")
