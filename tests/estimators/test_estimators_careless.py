"""Careless-user inputs to calib_frames.estimators.

Each test is a regression test for a defect found by feeding the entry points wrong
dtypes, hostile key names and degenerate groups: every such call must give a correct
result or raise the package's own error with a clear message.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
from factories import prediction_rows

import calib_frames as cf
import calib_frames.estimators as E
from calib_frames.exceptions import ArgumentError, DataError, TableError


@pytest.fixture(scope="module")
def preds() -> pl.DataFrame:
    return prediction_rows(0, 200, items=100)


def _ci_columns(frame: pl.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.endswith(("_ci_low", "_ci_high"))]


def test_row_bootstrap_of_a_one_row_group_has_no_nan_bounds(preds: pl.DataFrame) -> None:
    # A group of one prediction: many Poisson replicates draw it zero times; those
    # replicates have no metrics and used to give NaN upper bounds (NaN sorts last)
    # and 0.0 ECE lower bounds.
    solo = preds.with_columns(
        model=pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("solo")).otherwise("model")
    )
    out = E.calibration_intervals(solo, by="model", replicates=60, resample="rows")
    for name in _ci_columns(out):
        assert not out[name].is_nan().any(), name
    row = out.filter(pl.col("model") == "solo").row(0, named=True)
    first = preds.row(0, named=True)
    p, y = first["confidence"], float(first["correct"])
    # every non-empty replicate of one row has the same metrics as the row itself
    assert row["accuracy_ci_low"] == pytest.approx(y)
    assert row["accuracy_ci_high"] == pytest.approx(y)
    # the ECE's interval is a test's (issue 29.9): one prediction cannot reject calibration
    assert row["ece_ci_low"] == 0.0 and abs(p - y) <= row["ece_ci_high"] <= 1.0


def test_row_bootstrap_of_a_big_group_unchanged_by_the_empty_replicate_rule(
    preds: pl.DataFrame,
) -> None:
    out = E.calibration_intervals(preds, replicates=40, resample="rows", seed=3)
    assert out.null_count().sum_horizontal().item() == 0
    low, high = out.select("accuracy_ci_low", "accuracy_ci_high").row(0)
    accuracy = preds["correct"].mean()
    assert isinstance(accuracy, float)
    assert low < accuracy < high


def test_row_bootstrap_refuses_a_boolean_weight(preds: pl.DataFrame) -> None:
    frame = preds.with_columns(w=pl.lit(True))
    with pytest.raises(TableError, match=r"'w' \(weight\) is Boolean"):
        E.calibration_intervals(frame, weight="w", resample="rows", replicates=5)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda d: E.ece_by_bin_count(d, bin_counts=[2, 5]), id="ece_by_bin_count"),
        pytest.param(E.smooth_ece, id="smooth_ece"),
        pytest.param(E.corp_decomposition, id="corp_decomposition"),
        pytest.param(E.adaptive_ece, id="adaptive_ece"),
        pytest.param(lambda d: E.calibration_intervals(d, replicates=5), id="intervals"),
        pytest.param(E.calibration_noise_floor, id="calibration_noise_floor"),
        pytest.param(lambda d: E.paired_comparison(d, replicates=5), id="paired_comparison"),
    ],
)
def test_boolean_confidence_is_refused_everywhere(preds: pl.DataFrame, call: object) -> None:
    # ece_by_bin_count and paired_comparison used to take True/False as 1.0/0.0
    frame = preds.with_columns(pl.col("confidence") > 0.5)
    with pytest.raises(TableError, match=r"'confidence' \(confidence\) is Boolean"):
        call(frame)  # type: ignore[operator]


def test_ece_by_bin_count_with_a_bare_int(preds: pl.DataFrame) -> None:
    with pytest.raises(
        ArgumentError,
        match=r"bin_counts= takes a non-empty list of integers >= 1, each once, got 5",
    ):
        E.ece_by_bin_count(preds, bin_counts=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("output", ["g", "p_value"])
def test_adjust_p_values_does_not_overwrite_a_column(output: str) -> None:
    table = pl.DataFrame({"p_value": [0.01, 0.2, 0.5], "g": ["a", "a", "b"]})
    with pytest.raises(TableError, match=rf"output column '{output}' exists already"):
        E.adjust_p_values(table, by="g", output=output)


def test_paired_comparison_model_equal_to_item(preds: pl.DataFrame) -> None:
    with pytest.raises(ArgumentError, match="model= and item= name the same column 'item'"):
        E.paired_comparison(preds, model="item", item="item", replicates=5)


def test_perplexity_intervals_cluster_equal_to_a_key() -> None:
    rows = pl.DataFrame({"nll": [1.0, 2.0, 3.0, 0.5], "model": ["a", "a", "b", "b"]})
    with pytest.raises(TableError, match=r"group key.*cluster='model'"):
        E.perplexity_intervals(rows, tokens=1, by="model", cluster="model", replicates=5)


def test_by_naming_an_input_column_is_refused(preds: pl.DataFrame) -> None:
    # used to fit one block per distinct confidence (one group per row), silently
    with pytest.raises(TableError, match="also input columns: x='confidence'"):
        E.isotonic_blocks(preds, x="confidence", y="correct", by="confidence")
    with pytest.raises(TableError, match="also input columns: confidence='confidence'"):
        E.smooth_ece(preds, by="confidence")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"level": 1.5}, "level= takes a number strictly between 0 and 1, got 1.5"),
        ({"correction": "fdr"}, "correction= takes 'bh', 'holm' or 'none', got 'fdr'"),
        ({"bins": 0}, "bins= takes an integer >= 1"),
        ({"min_count": -1}, "min_count= takes an integer >= 0, got -1"),
        ({"alpha": math.nan}, "alpha= takes a number strictly between 0 and 1"),
    ],
)
def test_noise_floor_arguments_out_of_range(
    preds: pl.DataFrame, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ArgumentError, match=message):
        E.calibration_noise_floor(preds, **kwargs)  # type: ignore[arg-type]


def test_metrics_table_where_bin_statistics_are_expected(preds: pl.DataFrame) -> None:
    import calib_frames as cf

    metrics = cf.calibration_metrics(preds, by="model")
    with pytest.raises(TableError, match="not a bin-statistics table"):
        E.intervals_from_bin_statistics(metrics)
    with pytest.raises(TableError, match="not a bin-statistics table"):
        E.uncertainty_from_bin_statistics(metrics)


@pytest.mark.parametrize("resample", ["bins", "rows"])
def test_key_named_like_an_interval_column(preds: pl.DataFrame, resample: str) -> None:
    # used to fail deep inside polars with a DuplicateError
    frame = preds.rename({"model": "ece_ci_low"})
    with pytest.raises(TableError, match=r"\['ece_ci_low'\] clash with output columns"):
        E.calibration_intervals(frame, by="ece_ci_low", replicates=5, resample=resample)  # type: ignore[arg-type]


# --- smooth ECE with weights ------------------------------------------------------------


def test_smooth_ece_unit_weights_change_nothing(preds: pl.DataFrame) -> None:
    """smooth_ece(..., weight=) was a TypeError (smooth ECE took no weights)."""
    from calib_frames.estimators.smooth import smooth_ece, smooth_reliability_curve

    ones = preds.with_columns(w=pl.lit(1.0))
    assert smooth_ece(ones, by="model", weight="w").equals(smooth_ece(preds, by="model"))
    curve = smooth_reliability_curve(ones, by="model", weight="w")
    assert curve.equals(smooth_reliability_curve(preds, by="model"))
    relplot = pytest.importorskip("relplot")
    one = preds.filter(pl.col("model") == "a")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = relplot.smECE(
            one["confidence"].to_numpy(), one["correct"].cast(pl.Float64).to_numpy()
        )
    got = smooth_ece(ones.filter(pl.col("model") == "a"), weight="w")["smooth_ece"].item()
    assert got == pytest.approx(float(want), rel=1e-12)


def test_smooth_ece_weight_two_is_a_repeated_row(preds: pl.DataFrame) -> None:
    from calib_frames.estimators.smooth import smooth_ece, smooth_reliability_curve

    times = pl.Series("w", [1 + i % 3 for i in range(preds.height)])
    weighted = preds.with_columns(times.cast(pl.Float64))
    repeated = weighted.select(pl.all().repeat_by("w").explode()).drop("w")
    for function in (smooth_ece, smooth_reliability_curve):
        got = function(weighted, by="model", weight="w")
        want = function(repeated, by="model")
        value = "smooth_ece" if function is smooth_ece else "y"
        assert got[value].to_numpy() == pytest.approx(want[value].to_numpy(), rel=1e-12)
    # the weighted fit is not the unweighted one: the weights matter
    plain = smooth_ece(preds, by="model")["smooth_ece"].to_numpy()
    assert not np.allclose(smooth_ece(weighted, by="model", weight="w")["smooth_ece"], plain)
    with pytest.raises(DataError, match="'w'"):
        smooth_ece(weighted.with_columns(w=pl.lit(0.0)), weight="w")


@pytest.mark.parametrize("resample", ["bins", "rows"])
def test_bootstrap_that_would_not_fit_in_memory(preds: pl.DataFrame, resample: str) -> None:
    """replicates=10**7 on 500 rows was killed for memory (29.8 GiB for the bin draws)."""
    with pytest.raises(ArgumentError, match=r"about [\d.,]+ GiB .* over the 8 GiB limit"):
        E.calibration_intervals(preds, replicates=10**7, resample=resample)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="10,000,000 replicates"):
        E.calibration_intervals(preds.lazy(), replicates=10**7, resample=resample).collect()  # type: ignore[arg-type]
    table = cf.bin_statistics(preds, by="model")
    with pytest.raises(ArgumentError, match=r"2 groups × 10 bins × 10,000,000 replicates"):
        E.intervals_from_bin_statistics(table, replicates=10**7)


def test_perplexity_bootstrap_that_would_not_fit_in_memory() -> None:
    """replicates=10**8 for perplexity allocated (groups, replicates, 2) arrays: MemoryError."""
    losses = pl.DataFrame({"model": ["a", "b"] * 50, "nll": 1.5, "tokens": 10})
    with pytest.raises(ArgumentError, match=r"2 groups × 100,000,000 replicates"):
        E.perplexity_intervals(losses, tokens="tokens", by="model", replicates=10**8)


def test_intervals_that_would_not_fit_in_memory(preds: pl.DataFrame) -> None:
    """replicates=10**8 for the bootstrap is refused before any draw (the noise floor
    draws nothing: its null distribution is exact, its memory bounded by blocks)."""
    with pytest.raises(ArgumentError, match=r"2 groups × 10 bins × 100,000,000 replicates"):
        E.uncertainty_from_bin_statistics(cf.bin_statistics(preds, by="model"), replicates=10**8)


def test_paired_comparison_that_would_not_fit_in_memory() -> None:
    """replicates=10**9 was a MemoryError (663 GiB for one pair's multinomial draws)."""
    frame = prediction_rows(0, 200, items=100).with_columns(
        item=pl.int_range(pl.len()).over("model")
    )
    with pytest.raises(ArgumentError, match=r"model pairs of one group × 1,000,000,000 replicates"):
        E.paired_comparison(frame, model="model", item="item", replicates=10**9)
