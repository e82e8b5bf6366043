"""The ``calib-frames`` console script, run as a real subprocess on the shipped data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
PREDICTIONS = DATA / "synthetic_predictions.parquet"
TOKENS = DATA / "synthetic_tokens.parquet"
MODELS = ("calibrated", "overconfident", "underconfident")
SCRIPT = Path(sys.executable).with_name("calib-frames")


def command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m``."""
    if SCRIPT.exists():
        return [str(SCRIPT)]
    return [sys.executable, "-m", "calib_frames.cli"]


def run(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command(), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        check=False,
    )


def assert_clean_error(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """Exit ``code`` (2 usage, 1 bad data), a one-line error on stderr, no traceback."""
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("calib-frames: error:"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def test_console_script_is_installed() -> None:
    assert SCRIPT.exists(), f"no console script at {SCRIPT}"


def test_compare_prints_the_table() -> None:
    result = run(
        "compare",
        PREDICTIONS,
        "--token-file",
        TOKENS,
        "--tokens",
        "tokens",
        "--by",
        "model",
        "--by",
        "task",
        "--quiet",  # a stage's time line (over 1 s on a loaded machine) is no warning
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    for model in MODELS:
        assert model in result.stdout
    for column in ("ece", "brier", "perplexity"):
        assert column in result.stdout


def test_module_entry_point() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "calib_frames.cli", "compare", str(PREDICTIONS), "--by", "model"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for model in MODELS:
        assert model in result.stdout


@pytest.mark.parametrize(("by", "rows"), [(["model"], 3), (["model", "task"], 12)])
def test_output_csv(tmp_path: Path, by: list[str], rows: int) -> None:
    out = tmp_path / "table.csv"
    by_args = [arg for key in by for arg in ("--by", key)]
    result = run(
        "compare",
        PREDICTIONS,
        "--token-file",
        TOKENS,
        "--tokens",
        "tokens",
        *by_args,
        "--output",
        out,
    )
    assert result.returncode == 0, result.stderr
    table = pl.read_csv(out)
    assert table.height == rows
    assert sorted(set(table["model"].to_list())) == list(MODELS)
    assert {"ece", "accuracy", "perplexity"} <= set(table.columns)
    assert table["count"].sum() == 24_000


def test_output_parquet(tmp_path: Path) -> None:
    out = tmp_path / "table.parquet"
    result = run("compare", PREDICTIONS, "--by", "model", "--output", out)
    assert result.returncode == 0, result.stderr
    assert pl.read_parquet(out)["model"].to_list() == list(MODELS)


@pytest.mark.parametrize("which", ["predictions", "tokens"])
def test_output_onto_an_input_file_is_refused(tmp_path: Path, which: str) -> None:
    predictions = tmp_path / "predictions.csv"
    tokens = tmp_path / "tokens.csv"
    pl.read_parquet(PREDICTIONS).head(100).write_csv(predictions)
    pl.read_parquet(TOKENS).head(100).write_csv(tokens)
    target = predictions if which == "predictions" else tokens
    before = target.read_bytes()
    # the same file under another spelling of its path
    alias = tmp_path / "." / target.name
    result = run(
        "compare", predictions, "--token-file", tokens, "--tokens", "tokens",
        "--by", "model", "--output", alias,
    )  # fmt: skip
    stderr = assert_clean_error(result)
    assert "would be overwritten" in stderr
    assert target.read_bytes() == before


def test_bad_input_file_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("model,confidence,correct\na,0.5,1\nb,1.5,0\nb,0.25,0\n")
    result = run("compare", bad, "--by", "model")
    stderr = assert_clean_error(result, code=1)
    assert result.stdout == ""
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert "'confidence'" in stderr
    assert "1.5" in stderr
    assert "model='b'" in stderr


def test_bad_token_file_is_an_error(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("model,nll\ncalibrated,-1.5\noverconfident,2.0\n")
    result = run("compare", PREDICTIONS, "--token-file", tokens, "--by", "model")
    stderr = assert_clean_error(result, code=1)
    assert "'nll'" in stderr
    assert "log_probs" in stderr


def test_missing_column_is_an_error(tmp_path: Path) -> None:
    result = run("compare", PREDICTIONS, "--by", "model", "--confidence", "prob")
    stderr = assert_clean_error(result, code=1)
    assert "--confidence prob" in stderr  # the flag, not the API keyword


@pytest.mark.parametrize("name", ["predictions.txt", "predictions.xlsx"])
def test_unknown_input_extension(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("confidence,correct\n0.5,1\n")
    stderr = assert_clean_error(run("compare", path))
    assert name in stderr


def test_unknown_output_extension(tmp_path: Path) -> None:
    out = tmp_path / "table.xlsx"
    stderr = assert_clean_error(run("compare", PREDICTIONS, "--output", out))
    assert ".xlsx" in stderr or "table.xlsx" in stderr
    assert not out.exists()


def test_missing_input_file(tmp_path: Path) -> None:
    stderr = assert_clean_error(run("compare", tmp_path / "nope.parquet"))
    assert "nope.parquet" in stderr


def test_report_prints_at_most_its_row_limit(tmp_path: Path) -> None:
    from calib_frames.cli.report import PRINTED_ROWS
    from tests.factories import prediction_rows

    models = [f"m{k:02d}" for k in range(PRINTED_ROWS // 2 + 5)]  # 2 tasks each
    predictions = prediction_rows(5, len(models) * 2 * 60, models=models).with_columns(
        task=pl.when(pl.int_range(pl.len()) % 2 == 0).then(pl.lit("a")).otherwise(pl.lit("b"))
    )
    path = tmp_path / "preds.parquet"
    predictions.write_parquet(path)
    result = run(
        "report",
        path,
        "--by",
        "model,task",
        "--out",
        tmp_path / "r",
        "--no-charts",
        "--replicates",
        "20",
    )
    assert result.returncode == 0, result.stderr
    groups = len(models) * 2
    assert f"{groups:,} rows, {PRINTED_ROWS} of them shown; all of them in comparison.csv" in (
        result.stdout
    )
    assert "leaderboard.csv" not in result.stdout.split("rows, ")[0]  # models fit the limit
    assert pl.read_csv(tmp_path / "r" / "comparison.csv").height == groups
