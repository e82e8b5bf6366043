"""The command line fed the way a careless user would: every case exits 1 or 2 with one
line on stderr naming the file, column or line, or gives the right table; never a traceback.

In-process (``calib_frames.cli.main``), so the file stays fast.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl
import pytest

import calib_frames as cf
from calib_frames.cli import main

ROOT = Path(__file__).resolve().parents[2]
LM_EVAL = ROOT / "data" / "lm_eval"


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def error_of(capsys: pytest.CaptureFixture[str], code: int, *args: str | Path) -> str:
    status, _, err = run(capsys, *args)
    assert status == code, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("calib-frames: error: "), err
    return lines[0]


def lm_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(LM_EVAL / "calib__tiny-gpt2-m", folder)
    return folder


def test_compare_reads_lm_eval_folders(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An lm-eval folder was read as a JSON table (results_*.json): 'column not found'."""
    out = tmp_path / "t.csv"
    status, _, err = run(capsys, "compare", LM_EVAL, "--output", out)
    assert status == 0, err
    table = pl.read_csv(out)
    assert table.columns[:2] == ["model", "task"]
    # the same numbers as the Python pipeline on the latest run of each model × task
    options = cf.sources.scan_lm_eval_options(LM_EVAL)
    latest = options.filter(pl.col("run") == pl.col("run").max().over("model", "task"))
    predictions = cf.sources.choice_predictions(latest, by=["model", "task"])
    expected = cf.calibration_metrics(predictions, by=["model", "task"]).collect()
    joined = table.join(expected, on=["model", "task"], suffix="_py")
    assert joined.height == expected.height == 4
    for column in ("count", "accuracy", "ece", "brier"):
        assert (joined[column] - joined[f"{column}_py"]).abs().max() < 1e-12  # type: ignore[operator]


def test_format_lm_eval_is_honoured(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--format lm-eval was offered by --help and then refused by the reader (exit 2)."""
    status, out, err = run(capsys, "compare", LM_EVAL, "--format", "lm-eval", "--by", "model")
    assert status == 0, err
    assert "calib/tiny-gpt2-m" in out
    status, _, err = run(capsys, "stats", LM_EVAL, "--out", tmp_path / "s.parquet")
    assert status == 0, err
    assert cf.read_statistics(tmp_path / "s.parquet").merged()["count"].sum() == 500


def test_format_lm_eval_on_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    csv = tmp_path / "p.csv"
    csv.write_text("confidence,correct\n0.5,true\n")
    assert "output folder is needed" in error_of(capsys, 2, "compare", csv, "--format", "lm-eval")


@pytest.mark.parametrize("content", [None, "readme"])
def test_folder_without_lm_eval_results(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None
) -> None:
    folder = tmp_path / "nolm"
    folder.mkdir()
    if content:
        (folder / "readme.txt").write_text(content)
    line = error_of(capsys, 1, "compare", folder, "--format", "lm-eval")
    assert "nolm" in line and "results_<date>.json" in line


def test_truncated_samples_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = lm_copy(tmp_path)
    samples = next(folder.glob("samples_calib_colors_*.jsonl"))
    data = samples.read_bytes()
    samples.write_bytes(data[: len(data) // 2])
    line = error_of(capsys, 1, "compare", folder)
    assert samples.name in line and ", line " in line


def test_empty_samples_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An empty samples file gave an empty table and exit 0."""
    folder = lm_copy(tmp_path)
    samples = next(folder.glob("samples_calib_colors_*.jsonl"))
    samples.write_text("")
    line = error_of(capsys, 1, "compare", folder)
    assert samples.name in line and "empty samples file" in line


@pytest.mark.parametrize("text", ["{not json", "", "[1, 2]"])
def test_results_json_that_is_not_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str
) -> None:
    folder = lm_copy(tmp_path)
    results = next(folder.glob("results_*.json"))
    results.write_text(text)
    assert results.name in error_of(capsys, 1, "compare", folder)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("confidence,correct\nabc,true\n0.5,false\n", "line 2"),  # a word in a number column
        ("confidence,correct\n0.5,yes\n0.7,no\n", "line 2"),  # a word in the outcome
        ("confidence,correct\n,true\n,false\n", "2 of 2 rows"),  # every confidence empty
        ("confidence,correct\n0.3,\n0.2,\n", "2 of 2 rows"),  # every outcome empty
        ("confidence,correct\nNaN,true\n0.5,false\n", "1 of 2 rows"),
        ("confidence,correct\ninf,true\n0.5,false\n", "1 of 2 rows"),
    ],
)
def test_csv_values_are_named_by_line_or_row_count(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    """Text in a number column was 'must be numeric, got dtype String' (no row, no line)."""
    csv = tmp_path / "p.csv"
    csv.write_text(content)
    line = error_of(capsys, 1, "compare", csv, "--pooled")
    assert expected in line
    assert "got dtype String" not in line
    assert ":;" not in line


def test_renamed_role_column_is_retyped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    csv = tmp_path / "p.csv"
    csv.write_text("p,correct\nabc,true\n")
    line = error_of(
        capsys, 1, "compare", csv, "--pooled", "--columns", "p=prob", "--confidence", "prob"
    )
    assert "p.csv, line 2" in line


@pytest.mark.parametrize("command", ["compare", "report"])
@pytest.mark.parametrize("kind", ["header-only csv", "zero-row parquet"])
def test_inputs_without_rows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, kind: str
) -> None:
    """A header-only CSV was a dtype error; a zero-row parquet printed ece = 0 (exit 0)."""
    if kind == "header-only csv":
        path = tmp_path / "p.csv"
        path.write_text("confidence,correct\n")
    else:
        path = tmp_path / "p.parquet"
        pl.DataFrame(schema={"confidence": pl.Float64, "correct": pl.Boolean}).write_parquet(path)
    extra = ["--out", str(tmp_path / "out")] if command == "report" else []
    line = error_of(capsys, 1, command, path, "--pooled", *extra)
    assert "no prediction rows" in line and path.name in line


def test_csv_named_parquet(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    fake = tmp_path / "p.parquet"
    fake.write_text("confidence,correct\n0.5,true\n")
    assert "p.parquet" in error_of(capsys, 1, "compare", fake)
    assert "p.parquet" in error_of(capsys, 1, "merge", fake, "--out", tmp_path / "m.parquet")


@pytest.mark.parametrize("name", ["count", "bin"])
def test_key_named_like_an_output_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    csv = tmp_path / "p.csv"
    csv.write_text(f"{name},confidence,correct\n1,0.5,true\n2,0.6,false\n")
    assert repr(name) in error_of(capsys, 1, "compare", csv, "--by", name)


def test_hostile_key_names(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    pl.DataFrame(
        {"confidence": [0.5, 0.6], "correct": [True, False], "model name ü": ["a b", "ü"]}
    ).write_parquet(path)
    out = tmp_path / "t.csv"
    status, _, err = run(capsys, "compare", path, "--by", "model name ü", "--output", out)
    assert status == 0, err
    table = pl.read_csv(out).sort("model name ü")
    assert table["model name ü"].to_list() == ["a b", "ü"]
    assert table["accuracy"].to_list() == [1.0, 0.0]


@pytest.mark.parametrize(
    "args",
    [
        ["compare", "does-not-exist.csv"],
        ["compare", "{csv}", "--bins", "0"],
        ["compare", "{csv}", "--output", "/does/not/exist/t.csv"],
        ["merge", "does-not-exist.parquet"],
    ],
)
def test_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str]) -> None:
    csv = tmp_path / "p.csv"
    csv.write_text("confidence,correct\n0.5,true\n")
    error_of(capsys, 2, *(a.format(csv=csv) for a in args))


@pytest.mark.parametrize("command", ["compare", "report"])
def test_token_file_without_rows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    """A header-only token file printed perplexity NaN with exit 0."""
    predictions = tmp_path / "p.csv"
    predictions.write_text("confidence,correct\n0.5,true\n")
    tokens = tmp_path / "t.csv"
    tokens.write_text("model,nll,tokens\n")
    extra = ["--out", str(tmp_path / "out")] if command == "report" else []
    line = error_of(
        capsys,
        1,
        command,
        predictions,
        "--pooled",
        "--token-file",
        tokens,
        "--tokens",
        "tokens",
        *extra,
    )
    assert "no token rows" in line and "t.csv" in line


def test_token_file_stray_word(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    predictions = tmp_path / "p.csv"
    predictions.write_text("confidence,correct\n0.5,true\n")
    tokens = tmp_path / "t.csv"
    tokens.write_text("model,nll,tokens\na,2.5,abc\n")
    line = error_of(
        capsys, 1, "compare", predictions, "--pooled", "--token-file", tokens, "--tokens", "tokens"
    )
    assert "t.csv, line 2" in line


@pytest.mark.parametrize("flag", ["--out", "--nll-out"])
def test_stats_outputs_must_be_parquet(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str
) -> None:
    """stats --out x.csv wrote parquet bytes into a file named .csv."""
    predictions = tmp_path / "p.csv"
    predictions.write_text("confidence,correct\n0.5,true\n")
    outs = {"--out": tmp_path / "s.parquet", "--nll-out": tmp_path / "n.parquet"}
    outs[flag] = tmp_path / "x.csv"
    args = ["stats", predictions, "--out", outs["--out"]]
    if flag == "--nll-out":
        tokens = tmp_path / "t.csv"
        tokens.write_text("nll\n1.0\n")
        args += ["--token-file", tokens, "--token-level", "--nll-out", outs["--nll-out"]]
    assert "x.csv" in error_of(capsys, 2, *args)
    assert not (tmp_path / "x.csv").exists()


def test_lm_eval_folders_with_spark(capsys: pytest.CaptureFixture[str]) -> None:
    """Spark was handed the raw samples/results JSON: 'reads inputs of one format at a time'."""
    line = error_of(capsys, 2, "compare", LM_EVAL, "--engine", "spark")
    assert "lm-eval logs are read by polars" in line


@pytest.mark.parametrize(
    "flag", [["--tokens-by", "model"], ["--tokens", "tokens"], ["--bytes", "b"]]
)
def test_token_flags_without_token_files_are_a_usage_error(
    flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from calib_frames.cli import main as cli_main

    predictions = Path(__file__).resolve().parents[2] / "data" / "synthetic_predictions.parquet"
    assert cli_main(["compare", str(predictions), *flag]) == 2
    assert "--token-file" in capsys.readouterr().err


# --- statistics files whose metadata lies; writes the system refuses ----------------------


def _stats_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    """A model × task statistics file written by `calib-frames stats`."""
    rows = tmp_path / "p.csv"
    rows.write_text(
        "model,task,confidence,correct\n"
        + "".join(f"{m},{t},0.{k + 1},{k % 2}\n" for m in "ab" for t in "xyz" for k in range(8))
    )
    out = tmp_path / "s.parquet"
    status, _, err = run(capsys, "stats", rows, "--by", "model,task", "--out", out)
    assert status == 0, err
    return out


def _edit_metadata(path: Path, field: str, value: str) -> None:
    metadata = pl.read_parquet_metadata(path)
    metadata[f"calib_frames.{field}"] = value
    pl.read_parquet(path).write_parquet(path, metadata=metadata)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("keys", '["model"]', r"recorded keys \['model'\] do not match the columns"),
        ("keys", "{not json", "calib_frames.keys is not valid JSON"),
        ("binning", '{"kind": "uniform", "n_bins": 5}', "does not hold the table's bins"),
        ("binning", "[1]", "is not a binning description"),
        ("table", "nll_sums", "the metadata says a 'nll_sums' table"),
    ],
)
def test_statistics_metadata_that_does_not_describe_the_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, field: str, value: str, problem: str
) -> None:
    """A hand-edited keys=["model"] on a model × task table rolled up to 2 rows, silently;
    metadata that is not JSON was a json.JSONDecodeError traceback (merge)."""
    stats = _stats_file(capsys, tmp_path)
    assert cf.read_statistics(stats).keys == ["model", "task"]
    _edit_metadata(stats, field, value)
    for command in (
        ["report", "--from-stats", stats, "--out", tmp_path / "rep"],
        ["merge", stats, "--out", tmp_path / "m.parquet"],
    ):
        line = error_of(capsys, 1, *command)
        assert re.search(problem, line), line
    assert not (tmp_path / "m.parquet").exists()


def test_output_where_no_file_can_be_created(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An output folder the system refuses gave an OSError traceback (compare --output)."""
    rows = tmp_path / "p.csv"
    rows.write_text("confidence,correct\n0.5,true\n")
    line = error_of(capsys, 1, "compare", rows, "--pooled", "--output", "/proc/c.csv")
    assert line.endswith("/proc/c.csv: No such file or directory")


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mount small tmpfs folders (root only, else the test is skipped): options → folder."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    folders: list[Path] = []

    def mount(options: str) -> Path:
        folder = tmp_path / f"mnt{len(folders)}"
        folder.mkdir()
        command = ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)]
        done = subprocess.run(command, check=False)
        if done.returncode:
            pytest.skip("cannot mount a tmpfs here")
        folders.append(folder)
        return folder

    yield mount
    for folder in folders:
        subprocess.run(["umount", str(folder)], check=False)


def test_disk_full_and_read_only_outputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, mounted: Callable[[str], Path]
) -> None:
    """Disk full (OSError 28 in polars) and read-only folders were tracebacks.

    Root only: a 64 KiB tmpfs almost filled, and a read-only tmpfs (skipped otherwise).
    """
    rows = tmp_path / "p.csv"
    rows.write_text("confidence,correct\n" + "0.5,true\n0.7,false\n" * 50)
    full = mounted("size=64k")
    (full / "filler").write_bytes(b"\0" * 60_000)
    read_only = mounted("ro,size=64k")
    for folder, reason in ((full, "No space left on device"), (read_only, "Read-only file system")):
        for command in (
            ["stats", rows, "--pooled", "--out", folder / "s.parquet"],
            ["report", rows, "--pooled", "--out", folder / "rep"],
            ["compare", rows, "--pooled", "--output", folder / "c.parquet"],
        ):
            assert error_of(capsys, 1, *command).endswith(reason)
    # no temporary file or half-built report folder left (report builds in a sibling)
    assert sorted(p.name for p in full.iterdir()) == ["filler"]


def test_compressed_inputs_need_no_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """.csv.gz and .jsonl.gz needed --format (the inner format is in the name)."""
    plain = "model,confidence,correct\na,0.9,true\na,0.6,false\nb,0.8,true\n"
    csv = tmp_path / "p.csv.gz"
    csv.write_bytes(gzip.compress(plain.encode()))
    records = [{"model": m, "confidence": c, "correct": y} for m, c, y in
               [("a", 0.9, True), ("a", 0.6, False), ("b", 0.8, True)]]  # fmt: skip
    jsonl = tmp_path / "p.jsonl.gz"
    jsonl.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    outputs = []
    for source in (csv, jsonl):
        out = tmp_path / f"{source.name}.parquet"
        status, _, err = run(capsys, "compare", source, "--by", "model", "--output", out)
        assert status == 0, err
        outputs.append(pl.read_parquet(out))
    assert outputs[0].equals(outputs[1])
    assert outputs[0]["count"].to_list() == [2, 1]


def test_markdown_cells_with_line_breaks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A model name holding a newline broke its row in comparison.md."""
    rows = tmp_path / "p.jsonl"
    names = ["line\nbreak", "pipe|name", "=HYPERLINK(1)"]
    rows.write_text(
        "".join(json.dumps({"model": m, "confidence": 0.7, "correct": True}) + "\n" for m in names)
    )
    md = tmp_path / "c.md"
    status, _, err = run(capsys, "compare", rows, "--by", "model", "--output", md)
    assert status == 0, err
    lines = md.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 + len(names)  # header, rule, one line per model
    assert any(line.startswith("| line<br>break |") for line in lines)
    assert any(line.startswith("| pipe\\|name |") for line in lines)
    # CSV keeps names verbatim (documented): a formula-like name round-trips
    csv = tmp_path / "c.csv"
    status, _, err = run(capsys, "compare", rows, "--by", "model", "--output", csv)
    assert status == 0, err
    assert sorted(pl.read_csv(csv)["model"].to_list()) == sorted(names)


# --- issue 32: the third careless trial (items 10, 13, 14, 15, 18) ---

PREDICTIONS = ROOT / "data" / "synthetic_predictions.parquet"


def test_table_inputs_need_by_or_pooled(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A table without --by was silently pooled into one row (keys are never guessed)."""
    for extra in (["compare"], ["stats", "--out", "s.parquet"], ["report", "--out", "rep"]):
        line = error_of(capsys, 2, extra[0], PREDICTIONS, *extra[1:])
        assert "--by" in line and "--pooled" in line
    table = tmp_path / "pooled.csv"
    status, _, err = run(
        capsys, "compare", PREDICTIONS, "--pooled", "--no-uncertainty", "--output", table
    )
    assert status == 0, err
    pooled = pl.read_csv(table)
    assert pooled.height == 1 and pooled["count"].item() == pl.read_parquet(PREDICTIONS).height
    line = error_of(capsys, 2, "compare", PREDICTIONS, "--pooled", "--by", "model")
    assert "not both" in line


def test_spark_without_pyspark_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec

    def without_pyspark(name: str, *args: object) -> object:
        return None if name == "pyspark" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", without_pyspark)
    for command in ("compare", "stats", "report"):
        extra = {"compare": [], "stats": ["--out", "s.parquet"], "report": ["--out", "rep"]}
        extra = extra[command]
        line = error_of(capsys, 2, command, PREDICTIONS, "--by", "model", "--engine", "spark",
                        *extra)  # fmt: skip
        assert "pip install 'calib-frames[spark]'" in line


def test_a_closed_pipe_ends_the_printing_quietly(tmp_path: Path) -> None:
    """``compare … | head`` ended with "error: Broken pipe" and exit 1."""
    out = tmp_path / "table.csv"
    argv = ["compare", str(PREDICTIONS), "--by", "model,task", "--output", str(out),
            "--no-uncertainty", "--all-columns", "--quiet"]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "calib_frames", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.close()  # the reader goes away before the table is printed
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert err == b""
    assert pl.read_csv(out).height == 12  # the rest of the run went on


def test_markdown_outputs_escape_names(tmp_path: Path) -> None:
    """``<img onerror=…>`` stood verbatim in leaderboard.md and comparison.md."""
    hostile = "<img src=x onerror=alert(1)>"
    rows = pl.read_parquet(PREDICTIONS).with_columns(
        pl.when(pl.col("model") == "calibrated").then(pl.lit(hostile)).otherwise("model")
        .alias("model")
    )  # fmt: skip
    path = tmp_path / "p.parquet"
    rows.write_parquet(path)
    out = tmp_path / "rep"
    argv = ["report", str(path), "--by", "model,task", "--out", str(out), "--quiet",
            "--no-uncertainty", "--no-charts"]  # fmt: skip
    assert main(argv) == 0
    for name in ("comparison.md", "leaderboard.md"):
        text = (out / name).read_text(encoding="utf-8")
        assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text


def test_no_runtime_warning_reaches_stderr(tmp_path: Path) -> None:
    """Confidences of exactly 0 and 1 (a wrong answer at 1: log loss inf) warned from numpy."""
    path = tmp_path / "edge.parquet"
    pl.DataFrame(
        {
            "model": ["a"] * 8 + ["b"] * 8,
            "confidence": [1.0, 1.0, 0.0, 0.0] * 4,
            "correct": [True, False, False, True] * 4,
        }
    ).write_parquet(path)
    result = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "calib_frames",
         "report", str(path), "--by", "model", "--out", str(tmp_path / "rep"), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
