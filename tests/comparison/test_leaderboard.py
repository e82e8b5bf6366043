"""The leaderboard (comparison/across_tasks.py) against its definitions."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from factories import DATA, ROOT
from polars.testing import assert_frame_equal

import calib_frames as cf
from calib_frames.cli import main
from calib_frames.comparison.across_tasks import LEADERBOARD_METRICS
from calib_frames.estimators import intervals_from_bin_statistics

sys.path.insert(0, str(ROOT))
from benchmarks.sim_leaderboard import run_case

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
    assert dict(board.select("model", "miscalibrated_tasks").iter_rows()) == {
        "calibrated": 0,
        "overconfident": 4,
        "underconfident": 4,
    }


def test_the_order_is_the_task_mean_brier_score(tables: tuple[pl.DataFrame, ...]) -> None:
    preds, _, _, board = tables
    # the Brier score of each model × task from the rows, then its mean over the tasks
    by_rows = (
        preds.group_by("model", "task")
        .agg(((pl.col("confidence") - pl.col("correct")) ** 2).mean().alias("brier"))
        .group_by("model")
        .agg(pl.col("brier").mean())
        .sort("brier")
    )
    assert board["model"].to_list() == by_rows["model"].to_list()
    assert board["rank"].to_list() == [1, 2, 3]
    assert board["brier_task_mean"].to_list() == pytest.approx(by_rows["brier"].to_list())
    # the models are far apart: each rank interval is its rank, only the best is marked
    assert board["rank_ci_low"].to_list() == board["rank_ci_high"].to_list() == [1, 2, 3]
    assert board["indistinguishable_from_best"].to_list() == [True, False, False]
    assert board["not_ranked"].null_count() == board.height


def test_pooling_cannot_cancel_gaps_into_the_first_place() -> None:
    """Two tasks' gaps of opposite sign cancel in the pooled bin (pooled ECE 0): by pooled
    ECE that model was first; by the task-mean Brier score the calibrated one is."""

    def rows(model: str, task: str, confidence: float, right: int) -> pl.DataFrame:
        return pl.DataFrame(
            {"model": model, "task": task, "confidence": confidence,
             "correct": [True] * right + [False] * (100 - right)}
        )  # fmt: skip

    preds = pl.concat(
        [
            rows("cancels", "a", 0.75, 65),  # overconfident by 0.10
            rows("cancels", "b", 0.75, 85),  # underconfident by 0.10
            rows("calibrated", "a", 0.66, 65),  # nearly calibrated, the same accuracies
            rows("calibrated", "b", 0.84, 85),
        ]
    )
    board = cf.leaderboard(cf.bin_statistics(preds, by=["model", "task"]), uncertainty=False)
    ece = dict(board.select("model", "ece").iter_rows())
    assert ece["cancels"] == pytest.approx(0.0, abs=1e-15)
    assert ece["calibrated"] == pytest.approx(0.01, rel=1e-9)
    assert board["model"].to_list() == ["calibrated", "cancels"]
    # Brier by hand: 0.1775 + 0.0001 (a gap of 0.01) against 0.1775 + 0.01 (a gap of 0.1)
    assert board["brier_task_mean"].to_list() == pytest.approx([0.1776, 0.1875], rel=1e-12)


def test_the_simulation_cases() -> None:
    """A few runs of four cases of benchmarks/sim_leaderboard.py (its module docstring
    and across_tasks.py quote 400 runs; the seeds are fixed, so the runs are too)."""
    runs = range(8)
    # the hedger is never above the sharper model; by pooled ECE (the order before) always
    assert [run_case("hedge", run) for run in runs] == [(False, True)] * 8
    # two equal models: the second is marked indistinguishable (about 95% of runs)
    assert sum(run_case("equal", run)[0] for run in runs) >= 7
    # expected Brier scores 0.028 apart: the worse is never marked
    assert [run_case("apart_0.02", run)[0] for run in runs] == [0.0] * 8
    # ten equal models: all ten marked (the mark holds for the whole table at once)
    assert [run_case("equal_ten", run)[1] for run in range(3)] == [1.0] * 3


def test_fewer_tasks_and_no_weight_are_not_ranked() -> None:
    preds = pl.read_parquet(PREDICTIONS).with_columns(w=pl.lit(1.0))
    calibrated = preds.filter(pl.col("model") == "calibrated")
    extra = pl.concat(
        [
            calibrated.with_columns(model=pl.lit("no weight"), w=pl.lit(0.0)),
            calibrated.filter(pl.col("task") != "code").with_columns(model=pl.lit("fewer")),
        ]
    )
    stats = cf.bin_statistics(pl.concat([preds, extra]), by=["model", "task"], weight="w")
    board = cf.leaderboard(stats, replicates=50)
    assert board["model"].to_list()[3:] == ["fewer", "no weight"]  # after the ranked ones
    assert board["rank"].to_list() == [1, 2, 3, None, None]
    fewer, nothing = board.tail(2).iter_rows(named=True)
    assert fewer["not_ranked"] == "on 3 of the 4 tasks" and fewer["tasks"] == 3
    assert fewer["rank_ci_low"] is None and fewer["indistinguishable_from_best"] is None
    # its mean is over its own three tasks (the calibrated model's rows on them)
    three = calibrated.filter(pl.col("task") != "code").group_by("task")
    brier = three.agg(((pl.col("confidence") - pl.col("correct")) ** 2).mean())["confidence"]
    assert fewer["brier_task_mean"] == pytest.approx(brier.mean(), rel=1e-12)
    assert nothing["not_ranked"] == "no weight"
    assert nothing["tasks"] == 0 and nothing["count"] == calibrated.height
    assert nothing["brier_task_mean"] is None and nothing["ece_task_mean"] is None
    # the ranked models are those of the table without the two
    alone = cf.leaderboard(cf.bin_statistics(preds, by=["model", "task"], weight="w"))
    assert board.head(3).select("model", "rank").equals(alone.select("model", "rank"))


def test_a_model_without_weight_reads_null_not_perfect() -> None:
    preds = pl.read_parquet(PREDICTIONS).with_columns(w=pl.lit(1.0))
    nothing = preds.filter(pl.col("model") == "calibrated").with_columns(
        model=pl.lit("no weight"), w=pl.lit(0.0)
    )
    stats = cf.bin_statistics(pl.concat([preds, nothing]), by=["model", "task"], weight="w")
    row = cf.leaderboard(stats, replicates=20).row(-1, named=True)
    assert row["model"] == "no weight"
    assert all(row[m] is None for m in LEADERBOARD_METRICS)


def test_a_sweep_takes_each_figure_with_its_own_interval() -> None:
    """One task per model: the pooled table is the per-task one, and each pooled figure
    comes with its own row's interval (one row once read 0.0167 with [0.101, 0.271])."""
    preds = pl.read_parquet(PREDICTIONS).filter(pl.col("task") == "code")
    stats = cf.bin_statistics(preds, by=["model", "task"])
    table = cf.comparison_from_bin_statistics(stats).sort("model")
    board = cf.leaderboard(stats).sort("model")
    columns = [
        f"{m}{end}" for m in ("accuracy", "ece", "brier") for end in ("", "_ci_low", "_ci_high")
    ]
    assert_frame_equal(board.select(columns), table.select(columns))
    # the task mean of one task: its figure with the normal interval of its bootstrap one
    half = (table["ece_ci_high"] - table["ece_ci_low"]) / 2
    assert board["ece_task_mean_ci_high"].to_list() == pytest.approx(
        (table["ece"] + half).to_list(), rel=1e-12
    )


def test_pooled_intervals_are_the_bootstrap_of_the_pooled_table() -> None:
    """One model of one task beside one of two: no sweep, every interval is that of the
    pooled table (never a per-task one)."""
    preds = pl.read_parquet(PREDICTIONS).filter(
        pl.col("task").is_in(["code", "reading"])
        & ((pl.col("model") != "calibrated") | (pl.col("task") == "code"))
    )
    stats = cf.bin_statistics(preds, by=["model", "task"])
    board = cf.leaderboard(stats, replicates=100, seed=3).sort("model")
    pooled = cf.merge_bin_statistics(stats, by="model")
    expected = intervals_from_bin_statistics(pooled, replicates=100, seed=3).sort("model")
    with_intervals = [m for m in LEADERBOARD_METRICS if m != "log_loss"]
    bounds = [f"{m}_ci_{e}" for m in with_intervals for e in ("low", "high")]
    assert_frame_equal(board.select(bounds), expected.select(bounds), rel_tol=1e-12)
    assert board["not_ranked"].to_list() == ["on 1 of the 2 tasks", None, None]


def test_the_level_changes_every_interval() -> None:
    stats = cf.bin_statistics(pl.read_parquet(PREDICTIONS), by=["model", "task"])
    wide, narrow = (cf.leaderboard(stats, replicates=100, level=level) for level in (0.95, 0.6))
    bounds = [c for c in wide.columns if c.endswith("_ci_low")]
    assert {"ece_task_mean_ci_low", "brier_ci_low", "rank_ci_low"} <= set(bounds)
    for low in bounds:
        high = low.replace("_low", "_high")
        width = [(w.get_column(high) - w.get_column(low)).to_numpy() for w in (wide, narrow)]
        assert (width[1] <= width[0]).all(), low
        if low != "rank_ci_low":  # the ranks here are certain: [r, r] at either level
            assert (width[1] < width[0]).all(), low


def test_leaderboard_pools_perplexity() -> None:
    preds, losses = pl.read_parquet(PREDICTIONS), pl.read_parquet(TOKENS)
    stats = cf.bin_statistics(preds, by=["model", "task"])
    sums = cf.nll_sums(losses, by=["model", "task"], tokens="tokens")
    got = cf.leaderboard(stats, sums).sort("model")
    per_model = losses.group_by("model").agg(pl.col("nll").sum(), pl.col("tokens").sum())
    expected = per_model.sort("model").select((pl.col("nll") / pl.col("tokens")).exp())
    assert got["perplexity"].to_list() == pytest.approx(expected.to_series().to_list(), rel=1e-12)
    assert "perplexity_task_mean" in got.columns
    lazy = cf.leaderboard(stats.lazy(), sums.lazy()).collect().sort("model")
    assert_frame_equal(got, lazy, rel_tol=1e-12, abs_tol=1e-15)


def test_a_task_of_token_rows_only_is_no_task() -> None:
    """A perplexity-only task counted in ``tasks`` while the task means skipped it."""
    preds, losses = pl.read_parquet(PREDICTIONS), pl.read_parquet(TOKENS)
    stats = cf.bin_statistics(preds.filter(pl.col("task") != "code"), by=["model", "task"])
    sums = cf.nll_sums(losses, by=["model", "task"], tokens="tokens")
    board = cf.leaderboard(stats, sums, uncertainty=False).sort("model")
    assert board["tasks"].to_list() == [3, 3, 3]
    assert board["count"].to_list() == [6000, 6000, 6000]
    # the perplexity's task mean is over the four tasks with token rows
    per_task = cf.perplexity_from_nll_sums(sums).group_by("model").agg(pl.col("perplexity").mean())
    assert board["perplexity_task_mean"].to_list() == pytest.approx(
        per_task.sort("model")["perplexity"].to_list(), rel=1e-12
    )


def test_a_key_that_is_not_a_task_is_never_pooled_as_one() -> None:
    """Three scorers of the same predictions: pooled as tasks they tripled every count."""
    preds = pl.read_parquet(PREDICTIONS)
    scored = pl.concat(
        [preds.with_columns(scorer=pl.lit(name)) for name in ("match", "exact", "graded")]
    )
    stats = cf.bin_statistics(scored, by=["model", "task", "scorer"])
    once = cf.bin_statistics(preds, by=["model", "task"])
    expected = cf.leaderboard(once, uncertainty=False)
    for named in ({"not_tasks": "scorer"}, {"tasks": ["task"]}):
        board = cf.leaderboard(stats, uncertainty=False, **named)  # type: ignore[arg-type]
        assert board["scorer"].to_list() == ["exact"] * 3  # the first, and said so
        assert_frame_equal(board.drop("scorer"), expected, rel_tol=1e-12)
    pooled_as_tasks = cf.leaderboard(stats, uncertainty=False)
    assert pooled_as_tasks["tasks"].to_list() == [12, 12, 12]


def test_task_keys_are_checked() -> None:
    stats = cf.bin_statistics(pl.read_parquet(PREDICTIONS), by=["model", "task"])
    with pytest.raises(cf.ArgumentError, match="not both"):
        cf.leaderboard(stats, tasks="task", not_tasks="task")
    with pytest.raises(cf.TableError, match=r"not_tasks=\['scorer'\]: \['scorer'\] not a key"):
        cf.leaderboard(stats, not_tasks="scorer")
    with pytest.raises(cf.TableError, match=r"tasks=\['model'\]"):
        cf.leaderboard(stats, tasks=["model"])


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
    assert "indistinguishable_from_best" not in board.columns
    assert board["rank"].to_list() == [1, 2, 3]  # the order needs no bootstrap
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


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("repeated", ["all", "some"])
def test_repeated_rows_are_refused(lazy: bool, repeated: str) -> None:
    """The same group × bin twice gave ``tasks=6`` and doubled counts (issue 29.6)."""
    stats = cf.bin_statistics(pl.read_parquet(PREDICTIONS), by=["model", "task"])
    twice = pl.concat([stats, stats if repeated == "all" else stats.tail(3)])
    count = 120 if repeated == "all" else 3
    message = (
        rf"bin-statistics column 'bin': {count} of {stats.height + count} rows are a repeat "
        r"of a group × bin .*; e\.g\. model='\w+', task='\w+': bin=\d"
    )
    with pytest.raises(cf.TableError, match=message):
        board = cf.leaderboard(twice.lazy() if lazy else twice, replicates=20)
        if isinstance(board, pl.LazyFrame):
            board.collect()


def test_the_report_pools_each_inspect_prediction_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """calib-sharp read 4 tasks, 106 predictions and accuracy 0.7925: each of its scorers
    was pooled as a task. Counting each prediction once, of its complete runs (the readers
    keep the 40-sample run of calib_colors_mc, 39 with logprobs, over a later 11-sample
    rerun): 2 tasks, 39 + 32 = 71 predictions, 27 + 26 right."""
    out = tmp_path / "report"
    args = ["report", str(DATA / "inspect_ai" / "logs"), "--out", str(out), "--no-charts"]
    assert main([*args, "--replicates", "50", "--quiet"]) == 0
    capsys.readouterr()
    board = pl.read_parquet(out / "leaderboard.parquet")
    row = board.row(by_predicate=pl.col("model") == "mockllm/calib-sharp", named=True)
    assert (row["tasks"], row["count"], row["scorer"]) == (2, 71, "choice, match")
    assert row["accuracy"] == pytest.approx(53 / 71, rel=1e-12)
