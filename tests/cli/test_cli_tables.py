"""What ``compare`` and ``report`` print and write: the uncertainty flags, the model key of
the leaderboard, lm-eval's own figures beside ours (in-process: ``calib_frames.cli.main``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import calib_frames as cf
from calib_frames.cli import main

ROOT = Path(__file__).resolve().parents[2]
PREDICTIONS = ROOT / "data" / "synthetic_predictions.parquet"
LM_EVAL = ROOT / "data" / "lm_eval"


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def test_compare_without_uncertainty_is_the_metrics_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "t.parquet"
    status, printed, _ = run(
        capsys, "compare", PREDICTIONS, "--by", "model", "--no-uncertainty", "--output", out
    )
    assert status == 0 and "verdict" not in printed
    expected = cf.calibration_metrics(pl.read_parquet(PREDICTIONS), by="model")
    assert pl.read_parquet(out).columns == expected.columns


@pytest.mark.parametrize(("flag", "value"), [("--replicates", "0"), ("--level", "1.5")])
def test_compare_refuses_bad_uncertainty_flags(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    status, _, err = run(capsys, "compare", PREDICTIONS, "--by", "model", flag, value)
    assert status == 2
    assert err.strip() == "calib-frames: error: --replicates must be >= 1 and --level in (0, 1)"


@pytest.fixture(scope="module")
def run_names(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic predictions with the model key named ``run_name``."""
    path = tmp_path_factory.mktemp("runs") / "runs.parquet"
    pl.read_parquet(PREDICTIONS).rename({"model": "run_name"}).write_parquet(path)
    return path


CASES = [  # --by, flags, the model key of the leaderboard (None: none), what stderr says
    ("model,task", [], "model", ""),
    ("run_name,task", [], "run_name", "names models by the first key, 'run_name'"),
    ("run_name,task", ["--model-key", "task"], "task", ""),
    ("run_name", ["--model-key", "run_name"], None, "no leaderboard: the table has one key"),
    ("run_name", [], None, ""),
]


@pytest.mark.parametrize("case", CASES)
def test_the_leaderboard_is_never_silently_missing(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    run_names: Path,
    case: tuple[str, list[str], str | None, str],
) -> None:
    """A key not named ``model`` dropped the leaderboard without a word (issue 31.7)."""
    by, flags, key, said = case
    source = PREDICTIONS if by.startswith("model") else run_names
    out = tmp_path / "report"
    status, printed, err = run(
        capsys, "report", source, "--by", by, "--out", out, "--no-charts", "--no-uncertainty",
        "--quiet", *flags,
    )  # fmt: skip
    assert status == 0, err
    assert (said in err) if said else err == ""
    board = out / "leaderboard.parquet"
    if key is None:
        assert not board.exists()
        return
    table = pl.read_parquet(board)
    assert table.columns[0] == key and {"rank", "tasks", "count"} <= set(table.columns)
    assert printed.index(key) < printed.index("shape: (12")  # the leaderboard comes first


def test_a_model_key_that_is_no_key(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run(
        capsys, "report", PREDICTIONS, "--by", "model,task", "--out", tmp_path / "r",
        "--no-charts", "--model-key", "checkpoint",
    )  # fmt: skip
    assert status == 2
    assert "--model-key checkpoint: not a key of the table (keys: ['model', 'task'])" in err
    assert not (tmp_path / "r").exists()


def test_lm_eval_report_puts_lm_evals_figures_beside_ours(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, _, err = run(
        capsys, "report", LM_EVAL, "--out", tmp_path / "r", "--no-charts", "--quiet"
    )
    assert status == 0, err
    table = pl.read_parquet(tmp_path / "r" / "comparison.parquet")
    assert {"accuracy_lm_eval", "bits_per_byte", "run"} <= set(table.columns)
    assert table.height == 6  # 2 models × (2 multiple-choice tasks + the perplexity task)
    assert table.filter(pl.col("ece").is_null())["task"].unique().to_list() == ["calib_ppl"]
    board = pl.read_parquet(tmp_path / "r" / "leaderboard.parquet")
    assert board["tasks"].to_list() == [2, 2]  # the perplexity task has no predictions
    # other keys than lm-eval's model × task: its figures are left out, said once
    status, _, err = run(
        capsys, "report", LM_EVAL, "--by", "model", "--out", tmp_path / "m", "--no-charts",
        "--quiet",
    )  # fmt: skip
    assert status == 0
    assert "lm-eval's own figures are per model × task; left out" in err
    assert "accuracy_lm_eval" not in pl.read_parquet(tmp_path / "m" / "comparison.parquet").columns
