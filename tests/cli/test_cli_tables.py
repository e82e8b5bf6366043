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
    # the summary, then the leaderboard, then the comparison table
    assert printed.index("best:") < printed.index(f"Leaderboard: one row per {key}")
    assert printed.index(f"Leaderboard: one row per {key}") < printed.index("Comparison:")


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


def test_the_first_screen_answers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """stdout opens with labelled lines (best, worst, beyond noise, where the report is),
    then titled tables without polars' shape and type lines (issue 31.2)."""
    out = tmp_path / "r"
    status, printed, err = run(
        capsys, "report", PREDICTIONS, "--by", "model,task", "--out", out, "--replicates", "20",
        "--quiet",
    )  # fmt: skip
    assert status == 0, err
    lines = printed.splitlines()
    labels = [line.split(":")[0] for line in lines[:6]]
    assert labels == [
        "groups", "best", "worst", "indistinguishable from the best", "beyond noise", "report"
    ]  # fmt: skip
    assert lines[0].endswith("3 models × 4 tasks: 12 groups, 24,000 predictions")
    # ranked by the mean Brier score: the underconfident model is the sharpest
    assert lines[1].split()[1] == "underconfident" and lines[2].split()[1] == "overconfident"
    assert lines[3].endswith(": underconfident")
    assert "8 of 12 groups (67%)" in lines[4] and "4 overconfident, 4 underconfident" in lines[4]
    assert lines[5].split() == [
        "report:",
        str(out / "report.html"),
        "(open",
        "it",
        "in",
        "a",
        "browser)",
    ]
    assert (
        "Leaderboard: one row per model, by rank: the mean Brier score over tasks, lower "
        "first (3 rows)"
    ) in printed
    assert "Comparison: one row per model × task (12 rows)" in printed
    assert "shape:" not in printed and "│ str " not in printed
    # compare: the same lines (no leaderboard: the groups of lowest and highest ECE)
    status, printed, _ = run(
        capsys, "compare", PREDICTIONS, "--by", "model,task", "--replicates", "20"
    )
    assert status == 0
    assert [line.split(":")[0] for line in printed.splitlines()[:4]] == [
        "groups", "lowest ECE", "highest ECE", "beyond noise"
    ]  # fmt: skip
    assert printed.splitlines()[1].split()[2] == "calibrated"


def test_printed_names_keep_what_tells_them_apart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Checkpoint names past 48 characters that differ in the middle and at the end print
    apart (stdout cut them at 32 characters: issue 31.1); the files keep them whole."""
    names = {
        "calibrated": "acme-research-instruct-7b-long-context-checkpoint-012000",
        "overconfident": "acme-research-instruct-70b-long-context-checkpoint-012000",
        "underconfident": "acme-research-instruct-70b-long-context-checkpoint-096000",
    }
    path = tmp_path / "sweep.parquet"
    pl.read_parquet(PREDICTIONS).with_columns(pl.col("model").replace(names)).write_parquet(path)
    out = tmp_path / "t.csv"
    status, printed, _ = run(
        capsys, "compare", path, "--by", "model,task", "--no-uncertainty", "--output", out
    )
    assert status == 0
    for short in ("…7b…012000", "…70b…012000", "…70b…096000"):
        assert printed.count(f"│ {short} ") == 4  # one row per task
    assert set(pl.read_csv(out).get_column("model")) == set(names.values())
