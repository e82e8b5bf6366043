"""The report pipeline (comparison/pipeline.py): one build of the report's tables, shared by
``cf.compare``, ``cf.leaderboard``, ``calib-frames compare`` and ``calib-frames report``."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from factories import DATA
from polars.testing import assert_frame_equal

import calib_frames as cf
from calib_frames.cli import main
from calib_frames.comparison import report_tables

PREDICTIONS = DATA / "synthetic_predictions.parquet"
TOKENS = DATA / "synthetic_tokens.parquet"
BY = ["model", "task"]


def assert_same(ours: pl.DataFrame, theirs: pl.DataFrame) -> None:
    """The same draws and verdicts; floats to rounding (polars sums a group's floats on
    several threads, in an order that may change between runs, of the CLI too)."""
    assert_frame_equal(ours, theirs, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    exact = [c for c, dtype in theirs.schema.items() if not dtype.is_float()]
    assert_frame_equal(ours.select(exact), theirs.select(exact))


@pytest.fixture(scope="module")
def rows() -> tuple[pl.DataFrame, pl.DataFrame]:
    return pl.read_parquet(PREDICTIONS), pl.read_parquet(TOKENS)


def test_the_cli_compare_writes_what_cf_compare_returns(
    rows: tuple[pl.DataFrame, pl.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "table.parquet"
    status = main(["compare", str(PREDICTIONS), "--token-file", str(TOKENS), "--by", "model,task",
                   "--output", str(out), "--replicates", "50", "--seed", "3"])  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    assert "verdict" in printed and "ece_ci_low" in printed  # the summary shows them
    ours = cf.compare(
        *rows, tokens="tokens", bytes="bytes", words="words", by=BY, replicates=50, seed=3
    )
    assert_same(ours, pl.read_parquet(out))
    assert {"perplexity_ci_low", "ece_p_value", "verdict"} <= set(ours.columns)


def test_the_cli_report_writes_what_the_pipeline_builds(
    rows: tuple[pl.DataFrame, pl.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    status = main(["report", str(PREDICTIONS), "--token-file", str(TOKENS), "--by", "model,task",
                   "--out", str(out), "--no-charts", "--replicates", "50", "--quiet"])  # fmt: skip
    assert status == 0
    capsys.readouterr()
    predictions, losses = rows
    stats = cf.bin_statistics(predictions, by=BY)
    sums = cf.nll_sums(losses, by=BY, tokens="tokens", bytes="bytes", words="words")
    tables = report_tables(
        stats, sums, losses, tokens="tokens", bytes="bytes", model="model", replicates=50
    )
    assert isinstance(tables.leaderboard, pl.DataFrame)
    assert_same(tables.comparison, pl.read_parquet(out / "comparison.parquet"))
    assert_same(tables.leaderboard, pl.read_parquet(out / "leaderboard.parquet"))
    # cf.compare is the same comparison; the leaderboard has the task means' intervals
    # of perplexity because the per-task perplexities have theirs (the token rows)
    compared = cf.compare(
        *rows, tokens="tokens", bytes="bytes", words="words", by=BY, replicates=50
    )
    assert_same(compared, tables.comparison)
    assert "perplexity_task_mean_ci_low" in tables.leaderboard.columns


def test_compare_without_uncertainty_is_metrics_beside_perplexity(
    rows: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    predictions, losses = rows
    table = cf.compare(predictions, losses, tokens="tokens", by=BY, uncertainty=False)
    expected = cf.comparison_table(
        cf.calibration_metrics(predictions, by=BY), cf.perplexity(losses, tokens="tokens", by=BY)
    )
    assert_same(table, expected)
    assert not [c for c in table.columns if "_ci_" in c or "noise" in c or c == "verdict"]


def test_figures_beside_and_keys(rows: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    predictions, losses = rows
    stats = cf.bin_statistics(predictions, by=BY)
    beside = pl.DataFrame(
        {"model": ["calibrated", "other"], "task": ["code", "wiki"], "reported": [0.5, 0.7]}
    )
    table = report_tables(stats, beside=beside, uncertainty=False).comparison
    assert table.height == 13  # a group only the figures have gets a row
    assert table.filter(pl.col("reported").is_not_null()).select("model", "count").rows() == [
        ("calibrated", 2000),
        ("other", None),
    ]
    with pytest.raises(cf.TableError, match=r"beside= lacks the keys \['task'\]"):
        report_tables(stats, beside=beside.drop("task"), uncertainty=False)
    with pytest.raises(cf.TableError, match='model="COL"'):
        report_tables(stats, model="run", uncertainty=False)
    # NLL sums without the model key: the report keeps its leaderboard, without perplexity
    sums = cf.nll_sums(losses, by="task", tokens="tokens")
    board = report_tables(stats, sums, model="model", uncertainty=False).leaderboard
    assert board is not None and "perplexity" not in board.columns
    assert "perplexity_task_mean" in board.columns


def test_correction_across_the_table_and_the_cli_flag(
    rows: tuple[pl.DataFrame, pl.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The noise floor's p-values are corrected across every model × task of the table;
    ``--correction`` is ``correction=``; raw and adjusted p-values are both kept."""
    stats = cf.bin_statistics(rows[0], by=BY)
    tables = {
        c: cf.comparison_from_bin_statistics(stats, correction=c, replicates=5)
        for c in ("bh", "holm", "none")
    }
    raw = tables["none"]["ece_p_value"]
    assert tables["none"]["ece_p_adjusted"].to_list() == raw.to_list()
    for method in ("bh", "holm"):
        table = tables[method]
        assert table["ece_p_value"].to_list() == raw.to_list()
        expected = cf.estimators.adjust_p_values(table.select("ece_p_value"),
                                                 p_value="ece_p_value", method=method)  # fmt: skip
        assert table["ece_p_adjusted"].to_list() == expected["p_value_adjusted"].to_list()
        assert (table["ece_beyond_noise"] == (table["ece_p_adjusted"] <= 0.05)).all()
        assert table["verdict"].str.contains("adjusted p = |p < 1e-12").all()
    assert tables["none"]["verdict"].str.contains("adjusted").sum() == 0
    out = tmp_path / "holm.parquet"
    status = main(["compare", str(PREDICTIONS), "--by", "model,task", "--output", str(out),
                   "--replicates", "5", "--correction", "holm"])  # fmt: skip
    assert status == 0
    capsys.readouterr()
    written = pl.read_parquet(out)
    assert written["ece_p_adjusted"].to_list() == pytest.approx(
        tables["holm"]["ece_p_adjusted"].to_list(), rel=1e-9
    )
    status = main(["compare", str(PREDICTIONS), "--by", "model", "--correction", "bonferroni"])
    assert status == 2  # usage
    assert "bonferroni" in capsys.readouterr().err


def test_level_reaches_every_interval_of_the_leaderboard(
    rows: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    """leaderboard(level=) narrows the task-mean intervals with the others (issue 29.7)."""
    stats = cf.bin_statistics(rows[0], by=BY)
    wide = cf.leaderboard(stats, replicates=100)
    narrow = cf.leaderboard(stats, replicates=100, level=0.8)
    for metric in ("ece", "ece_task_mean", "accuracy_task_mean", "brier_task_mean"):
        for side, closer in (("low", "__gt__"), ("high", "__lt__")):
            bound = f"{metric}_ci_{side}"
            kept = (narrow[bound] == 0.0) & (wide[bound] == 0.0)  # an ECE bound at 0 stays
            moved = getattr(narrow[bound], closer)(wide[bound])
            assert (moved | kept).all(), (metric, side)


def test_a_model_without_weight_is_not_best(rows: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    """All weights 0: null metrics and intervals, ranked last, no miscalibrated task and
    the verdict "no weight" (it was ECE 0.0, interval [0, 0], rank 1)."""
    predictions = rows[0].with_columns(w=pl.lit(1.0))
    absent = predictions.filter(model="calibrated").with_columns(model=pl.lit("absent"),
                                                                 w=pl.lit(0.0))  # fmt: skip
    stats = cf.bin_statistics(pl.concat([predictions, absent]), by=BY, weight="w")
    tables = report_tables(stats, model="model", replicates=20)
    board = tables.leaderboard
    assert board is not None
    assert board["model"].to_list()[-1] == "absent"
    last = board.row(-1, named=True)
    for name in ("accuracy", "ece", "ece_ci_low", "ece_ci_high", "brier", "ece_task_mean",
                 "mce_guarded"):  # fmt: skip
        assert last[name] is None, name
    table = tables.comparison.filter(model="absent")
    assert (table["verdict"] == "no weight").all()
    assert table["ece"].null_count() == table.height == 4
    assert not table["ece_beyond_noise"].any()


def test_report_level_is_the_level_every_interval_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report --level 0.8`` wrote "95% interval" 74 times (issue 29.7)."""
    out = tmp_path / "report"
    status = main(["report", str(PREDICTIONS), "--token-file", str(TOKENS), "--by",
                   "model,task", "--out", str(out), "--replicates", "20", "--level", "0.8",
                   "--quiet"])  # fmt: skip
    assert status == 0
    capsys.readouterr()
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "95%" not in html and "95 %" not in html
    assert html.count("80% interval") > 70
    assert "bars: 80% intervals" in html  # the perplexity chart's note
