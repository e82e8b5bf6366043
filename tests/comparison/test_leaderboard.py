"""The leaderboard (comparison/across_tasks.py) against its definitions."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import calib_frames as cf
from tests.factories import DATA

PREDICTIONS = DATA / "synthetic_predictions.parquet"
TOKENS = DATA / "synthetic_tokens.parquet"


@pytest.fixture(scope="module")
def tables() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    preds = pl.read_parquet(PREDICTIONS)
    stats = cf.bin_statistics(preds, by=["model", "task"])
    table = cf.comparison_from_bin_statistics(stats)
    return preds, stats, table, cf.leaderboard(stats)


def test_pooled_metrics_are_those_of_all_the_models_rows(tables: tuple[pl.DataFrame, ...]) -> None:
    preds, _, _, board = tables
    for model, rows in preds.group_by("model"):
        row = board.row(by_predicate=pl.col("model") == model[0], named=True)
        p = rows["confidence"].to_numpy()
        y = rows["correct"].to_numpy().astype(float)
        assert row["count"] == rows.height
        assert row["accuracy"] == pytest.approx(y.mean(), rel=1e-12)
        assert row["brier"] == pytest.approx(np.mean((p - y) ** 2), rel=1e-12)
        q = np.where(y == 1, p, 1 - p)
        assert row["log_loss"] == pytest.approx(-np.mean(np.log(q)), rel=1e-12)
        # the ECE of the pooled bins: ten equal-width bins over all four tasks' rows
        idx = np.minimum((p * 10).astype(int), 9)
        gaps = [abs(p[idx == b].mean() - y[idx == b].mean()) * (idx == b).sum() for b in set(idx)]
        assert row["ece"] == pytest.approx(sum(gaps) / len(p), rel=1e-9)


def test_task_means_are_unweighted_means_of_the_per_task_metrics(
    tables: tuple[pl.DataFrame, ...],
) -> None:
    _, _, table, board = tables
    for row in board.iter_rows(named=True):
        tasks = table.filter(pl.col("model") == row["model"])
        assert row["tasks"] == tasks.height == 4
        for metric in ("accuracy", "ece", "brier", "log_loss"):
            assert row[f"{metric}_task_mean"] == pytest.approx(tasks[metric].mean(), rel=1e-12)
        for metric in ("accuracy", "ece", "brier"):  # the bootstrap has no log-loss interval
            low, high = row[f"{metric}_task_mean_ci_low"], row[f"{metric}_task_mean_ci_high"]
            assert low < row[f"{metric}_task_mean"] < high
        assert row["miscalibrated_tasks"] == tasks["ece_beyond_noise"].sum()
    # the calibrated model is best and within noise everywhere; the others never are
    assert board["model"].to_list()[0] == "calibrated"
    assert dict(board.select("model", "miscalibrated_tasks").iter_rows()) == {
        "calibrated": 0,
        "overconfident": 4,
        "underconfident": 4,
    }


def test_one_task_mean_interval_is_the_normal_one_of_its_task() -> None:
    preds = pl.read_parquet(PREDICTIONS).filter(pl.col("task") == "code")
    stats = cf.bin_statistics(preds, by=["model", "task"])
    table = cf.comparison_from_bin_statistics(stats)
    board = cf.leaderboard(stats).sort("model")
    half = (table["ece_ci_high"] - table["ece_ci_low"]) / 2
    assert board["ece_task_mean_ci_high"].to_list() == pytest.approx(
        (table["ece"] + half).to_list(), rel=1e-12
    )
    # one task: pooled = the task's own metrics
    assert board["ece"].to_list() == pytest.approx(table["ece"].to_list(), rel=1e-12)


def test_leaderboard_is_lazy_in_lazy_out_and_pools_perplexity() -> None:
    preds, losses = pl.read_parquet(PREDICTIONS), pl.read_parquet(TOKENS)
    stats = cf.bin_statistics(preds.lazy(), by=["model", "task"])
    sums = cf.nll_sums(losses, by=["model", "task"], tokens="tokens")
    board = cf.leaderboard(stats, sums)
    assert isinstance(board, pl.LazyFrame)
    got = board.collect().sort("model")
    per_model = losses.group_by("model").agg(pl.col("nll").sum(), pl.col("tokens").sum())
    expected = per_model.sort("model").select((pl.col("nll") / pl.col("tokens")).exp())
    assert got["perplexity"].to_list() == pytest.approx(expected.to_series().to_list(), rel=1e-12)
    assert "perplexity_task_mean" in got.columns


def test_leaderboard_names_the_model_key() -> None:
    stats = cf.bin_statistics(pl.read_parquet(PREDICTIONS), by=["model", "task"])
    with pytest.raises(cf.TableError, match='model="COL"'):
        cf.leaderboard(stats, model="checkpoint")
    sums = cf.nll_sums(pl.read_parquet(TOKENS), by="task", tokens="tokens")
    with pytest.raises(cf.TableError, match="not a key of the NLL sums"):
        cf.leaderboard(stats, sums)
    board = cf.leaderboard(stats, uncertainty=False)
    assert not [c for c in board.columns if "_ci_" in c]
    # a level out of (0, 1) is refused without uncertainty too (was StatisticsError: 32.11)
    with pytest.raises(cf.ArgumentError, match="level= takes a number strictly between"):
        cf.leaderboard(stats, level=1.5, uncertainty=False)
    assert "miscalibrated_tasks" not in board.columns  # no noise floor without uncertainty
    # another key names the models: its rows are pooled over the models' tasks
    by_task = cf.leaderboard(stats, model="task", uncertainty=False)
    assert by_task.columns[0] == "task" and by_task["tasks"].to_list() == [3, 3, 3, 3]


def test_one_input_cannot_mismatch() -> None:
    """The per-task table is derived from the statistics: a comparison of 2 of 3 tasks or
    of other bins cannot be mixed in (issue 29.6); it is the comparison of the same call."""
    stats = cf.bin_statistics(pl.read_parquet(PREDICTIONS), by=["model", "task"])
    tables = cf.comparison.report_tables(stats, model="model", replicates=50)
    table, board = tables.comparison, tables.leaderboard
    assert board is not None
    assert_frame_equal(board, cf.leaderboard(stats, replicates=50), rel_tol=1e-12, abs_tol=1e-15)
    for row in board.iter_rows(named=True):
        tasks = table.filter(pl.col("model") == row["model"])
        assert row["ece_task_mean"] == pytest.approx(tasks["ece"].mean(), rel=1e-12)
        assert row["count"] == tasks["count"].sum()
