"""Regression tests for the silent-number traps, the error hierarchy, keys and merges."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
from factories import prediction_rows

import calib_frames as cf
from calib_frames import exceptions

TOKENS = pl.DataFrame({"model": ["a", "a", "b"], "nll": [6.0, 4.0, 3.0], "tokens": [3, 2, 3]})


# -- 1. silent wrong numbers -------------------------------------------------------------


def test_tokens_column_must_be_named_or_refused() -> None:
    with pytest.raises(cf.ArgumentError, match=r"tokens='tokens'.*tokens=1"):
        cf.perplexity(TOKENS, by="model")
    sequence = cf.perplexity(TOKENS, by="model", tokens="tokens")
    assert sequence["perplexity"].to_list() == pytest.approx([math.exp(2.0), math.exp(1.0)])
    token_level = cf.perplexity(TOKENS, by="model", tokens=1)
    assert token_level["tokens"].to_list() == [2, 1]


def test_tokens_argument_takes_only_a_column_or_one() -> None:
    for bad in (2, 0, True):
        with pytest.raises(cf.ArgumentError, match="tokens="):
            cf.perplexity(TOKENS, tokens=bad)


@pytest.mark.parametrize(
    "values",
    [pl.Series([2**64 - 1, 1], dtype=pl.UInt64), pl.Series([1e19, 1.0]), pl.Series([2.0**60, 1])],
    ids=["uint64-max", "float-1e19", "beyond-2^53"],
)
def test_counts_beyond_the_exact_range_raise(values: pl.Series) -> None:
    frame = pl.DataFrame({"nll": [1.0, 2.0], "tokens": values})
    with pytest.raises(cf.DataError, match=r"'tokens': 1 of 2 rows is not a whole number"):
        cf.perplexity(frame, tokens="tokens")


def test_count_sum_overflowing_int64_raises() -> None:
    frame = pl.DataFrame({"nll": [1.0] * 2000, "bytes": [2**53] * 2000})
    with pytest.raises(cf.DataError, match="bytes sum past the Int64 range"):
        cf.nll_sums(frame, bytes="bytes")


def test_weights_summing_past_float64_raise_only_for_their_group() -> None:
    frame = pl.DataFrame(
        {
            "m": ["a", "a", "a", "b"],
            "confidence": [0.9, 0.5, 0.7, 0.2],
            "correct": [True, False, True, False],
            "w": [1e308, 1e308, 1e308, 1.0],
        }
    )
    with pytest.raises(cf.DataError, match="3 of 4 rows are in a group whose weights sum past"):
        cf.calibration_metrics(frame, weight="w", by="m")


def test_huge_but_finite_weights_give_the_unweighted_numbers() -> None:
    frame = pl.DataFrame(
        {"confidence": [0.9, 0.5, 0.7, 0.65], "correct": [True, False, True, False]}
    )
    plain = cf.calibration_metrics(frame).drop("weight")
    huge = cf.calibration_metrics(frame.with_columns(w=pl.lit(4e307)), weight="w").drop("weight")
    # weights are frequencies: four rows of weight 4e307 are that many predictions, so
    # every bin is well filled and the debiasing term vanishes (four plain rows: neither)
    assert plain["mce_guarded"].item() is None
    assert huge["mce_guarded"].item() == pytest.approx(huge["mce"].item(), rel=1e-12)
    assert huge["rmsce_debiased"].item() == pytest.approx(huge["rmsce"].item(), rel=1e-12)
    for name in plain.drop("mce_guarded", "rmsce_debiased").columns:
        assert huge[name].item() == pytest.approx(plain[name].item(), rel=1e-12, abs=1e-15), name


def test_subnormal_weights_are_refused() -> None:
    frame = pl.DataFrame({"confidence": [0.9, 0.6], "correct": [True, False], "w": [5e-324] * 2})
    with pytest.raises(cf.DataError, match="subnormal"):
        cf.calibration_metrics(frame, weight="w")


def test_tiny_normal_weights_keep_the_numbers() -> None:
    frame = pl.DataFrame({"confidence": [0.9, 0.6, 0.3], "correct": [True, False, True]})
    plain = cf.calibration_metrics(frame)["ece"].item()
    tiny = cf.calibration_metrics(frame.with_columns(w=pl.lit(1e-300)), weight="w")
    assert tiny["ece"].item() == pytest.approx(plain, rel=1e-12)


def test_empty_bins_have_null_means_in_frames_and_zeros_in_arrays() -> None:
    frame = pl.DataFrame({"confidence": [0.05, 0.95], "correct": [False, True]})
    table = cf.reliability_table(frame)
    empty = table.filter(pl.col("count") == 0)
    assert empty.height == 8
    assert empty["mean_confidence"].null_count() == 8
    assert empty["accuracy"].null_count() == 8
    report = cf.CalibrationReport.from_predictions([0.05, 0.95], [0, 1])
    assert report.reliability[0][1:9].tolist() == [0.0] * 8


def test_boolean_confidence_is_refused_as_a_swapped_column() -> None:
    frame = pl.DataFrame({"confidence": [True, False], "correct": [0.9, 0.2]})
    with pytest.raises(cf.TableError, match=r"Boolean.*swapped"):
        cf.calibration_metrics(frame)


def test_log_confidence_gives_the_true_log_loss_where_confidence_rounds_to_one() -> None:
    ell = -1e-20  # p = exp(ell) rounds to 1.0 in float64
    frame = pl.DataFrame(
        {"confidence": [math.exp(ell), 0.5], "log_confidence": [ell, math.log(0.5)],
         "correct": [False, True]}
    )  # fmt: skip
    assert math.isinf(cf.calibration_metrics(frame)["log_loss"].item())
    got = cf.calibration_metrics(frame, log_confidence="log_confidence")["log_loss"].item()
    expected = (-math.log(-math.expm1(ell)) - math.log(0.5)) / 2
    assert got == pytest.approx(expected, rel=1e-14)


def test_log_confidence_that_disagrees_is_reported() -> None:
    frame = pl.DataFrame(
        {"confidence": [0.9, 0.5], "log_confidence": [math.log(0.9), 0.1], "correct": [1, 0]}
    )
    with pytest.raises(cf.DataError, match=r"'log_confidence': 1 of 2 rows"):
        cf.calibration_metrics(frame, log_confidence="log_confidence")


# -- 2. one error hierarchy --------------------------------------------------------------


def test_error_classes_and_exit_codes() -> None:
    assert cf.CalibrationInputError is cf.CalibFramesError
    for cls in (cf.DataError, cf.TableError, cf.ReadError, cf.ArgumentError):
        assert issubclass(cls, cf.CalibFramesError)
        assert issubclass(cls, ValueError)
    assert cf.ArgumentError.exit_code == 2
    assert {cf.DataError.exit_code, cf.TableError.exit_code, cf.ReadError.exit_code} == {1}
    assert set(exceptions.__all__) <= set(cf.__all__)


PREDICTIONS = pl.DataFrame(
    {"model": ["a", "b"], "task": ["x", "x"], "confidence": [0.7, 0.2], "correct": [1, 0]}
)


@pytest.mark.parametrize(
    "kwargs",
    [{"bins": 0}, {"bins": -3}, {"bins": "ten"}, {"bins": [0.5]}, {"bins": [0.0, 0.5, 0.5]},
     {"by": ["model", "model"]}, {"by": pl.col("model")}, {"by": [pl.col("model")]}],
    ids=["bins=0", "bins=-3", "bins=str", "one-edge", "repeated-edge", "by-twice", "by-expr",
         "by-expr-list"],
)  # fmt: skip
def test_bad_arguments_raise_argument_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(cf.ArgumentError):
        cf.calibration_metrics(PREDICTIONS, **kwargs)


def test_non_frames_and_empty_merges_raise_argument_error() -> None:
    with pytest.raises(cf.ArgumentError):
        cf.calibration_metrics({"confidence": [0.5]})  # type: ignore[type-var]
    with pytest.raises(cf.ArgumentError):
        cf.merge_bin_statistics()
    with pytest.raises(cf.ArgumentError):
        cf.merge_nll_sums()


# -- 3. keys recorded, merges, roll-ups, comparison ---------------------------------------


def test_a_derived_column_never_becomes_a_key() -> None:
    metrics = cf.calibration_metrics(PREDICTIONS, by=["model", "task"])
    derived = metrics.with_columns(ece_pct=pl.col("ece") * 100)
    ppl = cf.perplexity(TOKENS, by="model", tokens="tokens").with_columns(ppl_log=pl.lit(1.0))
    table = cf.comparison_table(derived, ppl)
    assert table.columns[:2] == ["model", "task"]
    assert table.height == 2
    assert "ece_pct" in table.columns
    stats = cf.bin_statistics(PREDICTIONS, by="model").with_columns(extra=pl.lit(1))
    assert cf.metrics_from_bin_statistics(stats)["model"].to_list() == ["a", "b"]


def test_merge_accepts_keys_in_any_order_and_unifiable_dtypes() -> None:
    a = cf.bin_statistics(PREDICTIONS, by=["model", "task"])
    b = cf.bin_statistics(
        PREDICTIONS.with_columns(pl.col("model").cast(pl.Categorical)), by=["task", "model"]
    )
    merged = cf.merge_bin_statistics(a, b)
    assert merged.columns[:2] == ["model", "task"]
    assert merged["count"].sum() == 4
    assert merged.filter(pl.col("count") > 0)["count"].to_list() == [2, 2]


def test_merge_refuses_other_keys_and_other_bins() -> None:
    a = cf.bin_statistics(PREDICTIONS, by="model")
    with pytest.raises(cf.TableError, match="different keys"):
        cf.merge_bin_statistics(a, cf.bin_statistics(PREDICTIONS, by="task"))
    with pytest.raises(cf.TableError, match="differs between tables"):
        cf.merge_bin_statistics(a, cf.bin_statistics(PREDICTIONS, by="model", bins=5))
    right = cf.bin_statistics(PREDICTIONS, by="model", bins=cf.Binning.uniform(10, closed="right"))
    with pytest.raises(cf.TableError, match="closed"):
        cf.merge_bin_statistics(a, right)
    with pytest.raises(cf.TableError, match="not a bin-statistics table"):
        cf.merge_bin_statistics(a, PREDICTIONS)


def test_roll_up_pools_the_bins_and_differs_from_averaging_metrics() -> None:
    frame = prediction_rows(3, 4000, power=2.0, models=("m1", "m2"), tasks=("t1", "t2", "t3"))
    by_task = cf.bin_statistics(frame, by=["model", "task"])
    rolled = cf.merge_bin_statistics(by_task, by="model")
    direct = cf.bin_statistics(frame, by="model")
    assert rolled.columns == direct.columns
    assert rolled["count"].to_list() == direct["count"].to_list()
    for name in ("weight_correct", "sum_residual_wrong", "sum_log_loss"):
        assert rolled[name].to_list() == pytest.approx(direct[name].to_list(), rel=1e-12)
    pooled = cf.metrics_from_bin_statistics(rolled)
    averaged = (
        cf.calibration_metrics(frame, by=["model", "task"])
        .group_by("model")
        .agg(pl.col("ece").mean())
    )
    assert not np.allclose(pooled.sort("model")["ece"], averaged.sort("model")["ece"])
    with pytest.raises(cf.TableError, match="not keys"):
        cf.merge_bin_statistics(by_task, by="seed")


def test_nll_sums_merge_and_roll_up() -> None:
    tokens = TOKENS.with_columns(task=pl.Series(["x", "y", "x"]))
    by_task = cf.nll_sums(tokens, by=["task", "model"], tokens="tokens")
    rolled = cf.merge_nll_sums(by_task, by="model")
    assert rolled.rows() == cf.nll_sums(tokens, by="model", tokens="tokens").rows()


def test_comparison_table_refuses_raw_swapped_and_wrong_tables() -> None:
    metrics = cf.calibration_metrics(PREDICTIONS, by="model")
    ppl = cf.perplexity(TOKENS, by="model", tokens="tokens")
    with pytest.raises(cf.TableError, match="swapped"):
        cf.comparison_table(ppl, metrics)
    with pytest.raises(cf.TableError, match="not a calibration-metrics table"):
        cf.comparison_table(PREDICTIONS, ppl)
    with pytest.raises(cf.TableError, match="not a perplexity table"):
        cf.comparison_table(metrics, cf.bin_statistics(PREDICTIONS, by="model"))
    table = cf.comparison_table(metrics, ppl)
    assert {"count", "nll_count"} <= set(table.columns)


def test_version() -> None:
    assert isinstance(cf.__version__, str)
    assert cf.__version__[0].isdigit()
