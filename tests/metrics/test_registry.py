"""The metric registry agrees with the tables the package builds: every metric column has a
record, every record that says it has an interval has one in those tables, and back."""

from __future__ import annotations

import polars as pl
import pytest

import calib_frames as cf
from calib_frames.metrics.registry import (
    LEADERBOARD_SUMMARY_COLUMNS,
    REGISTRY,
    SUMMARY_COLUMNS,
    metric,
)
from calib_frames.schema import METRICS, PERPLEXITY
from tests.factories import prediction_rows


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    predictions = prediction_rows(4, 600, models=("a", "b")).with_columns(
        task=pl.when(pl.int_range(pl.len()) % 2 == 0).then(pl.lit("x")).otherwise(pl.lit("y"))
    )
    losses = pl.DataFrame(
        {
            "model": ["a", "a", "b", "b"] * 2,
            "task": ["x", "y"] * 4,
            "nll": [3.0, 4.0, 5.0, 2.0, 1.0, 6.0, 2.5, 3.5],
            "tokens": [4, 5, 6, 3, 2, 7, 4, 4],
            "bytes": [16, 20, 24, 12, 8, 28, 16, 16],
        }
    )
    comparison = cf.compare(
        predictions, losses, by=["model", "task"], tokens="tokens", bytes="bytes", replicates=20
    )
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    sums = cf.nll_sums(losses, by=["model", "task"], tokens="tokens", bytes="bytes")
    board = cf.comparison.report_tables(  # with the token rows: the perplexity intervals too
        stats, sums, losses, tokens="tokens", bytes="bytes", model="model", replicates=20
    ).leaderboard
    return {"comparison": comparison, "leaderboard": board}


def metric_columns(table: pl.DataFrame) -> list[str]:
    """The columns after the keys that are not an interval's bound."""
    return [
        c
        for c in table.columns
        if c not in ("model", "task") and not c.endswith(("_ci_low", "_ci_high"))
    ]


@pytest.mark.parametrize("name", ["comparison", "leaderboard"])
def test_every_metric_column_has_a_record(tables: dict[str, pl.DataFrame], name: str) -> None:
    missing = [c for c in metric_columns(tables[name]) if c not in REGISTRY]
    assert missing == []


def test_schema_columns_have_records() -> None:
    assert [c for c in (*METRICS.names, *PERPLEXITY.names) if c not in REGISTRY] == []


@pytest.mark.parametrize("name", ["comparison", "leaderboard"])
def test_interval_flag_matches_the_tables(tables: dict[str, pl.DataFrame], name: str) -> None:
    table = tables[name]
    for column in metric_columns(table):
        low, high = metric(column).bounds
        has = low in table.columns and high in table.columns
        if has:  # a table with the interval: the record says so
            assert REGISTRY[column].interval, column
    # and a record with an interval has it in one of the tables
    present = {c for t in tables.values() for c in t.columns}
    for column, record in REGISTRY.items():
        if record.interval and column in present:
            assert set(record.bounds) <= present, column


def test_summaries_name_registered_columns() -> None:
    for column in (*SUMMARY_COLUMNS, *LEADERBOARD_SUMMARY_COLUMNS):
        assert column in REGISTRY or metric(column).title.endswith(("low", "high")), column


def test_better_directions() -> None:
    lower = {"ece", "mce", "rmsce", "brier", "log_loss", "perplexity", "bits_per_byte"}
    assert {c for c in lower if REGISTRY[c].better == "lower"} == lower
    assert REGISTRY["accuracy"].better == "higher" and REGISTRY["accuracy"].descending
    assert REGISTRY["resolution"].better == "higher"  # a Brier term that is subtracted
    assert REGISTRY["overconfidence"].better == "zero"
    assert REGISTRY["count"].better == "none" and not REGISTRY["ece"].descending
    # a task mean ranks as its metric
    assert REGISTRY["ece_task_mean"].better == "lower"
    assert REGISTRY["accuracy_task_mean"].better == "higher"


def test_formats_read_the_same_in_python() -> None:
    # d3-format and Python agree on these specifiers; each must format a float
    written = {column: format(1234.56789, record.format) for column, record in REGISTRY.items()}
    assert written["ece"] == "1234.5679"
    assert written["overconfidence"] == "+1234.5679"
    assert written["perplexity"] == "1,234.568"
    assert written["count"] == "1,234.56789"
    assert written["verdict"] == "1234.56789"  # text columns: written as they are


def test_titles_and_labels() -> None:
    assert (REGISTRY["brier"].title, REGISTRY["brier"].label) == ("Brier score", "Brier")
    assert metric("brier_task_mean").label == "Brier, task mean"
    low = metric("ece_ci_low")
    assert (low.title, low.format, low.better, low.interval) == (
        "ECE interval, low",
        ".4f",
        "none",
        False,
    )
    plain = metric("acc_lm_eval")
    assert (plain.title, plain.label, plain.better) == ("acc_lm_eval", "acc_lm_eval", "none")
    assert metric("unknown_ci_low").title == "unknown_ci_low"  # a bound of no known metric
