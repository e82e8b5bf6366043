"""Careless-user inputs to calib_frames.recalibrate (regression tests)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from factories import prediction_rows

import calib_frames as cf
import calib_frames.recalibrate as R
from calib_frames.exceptions import ArgumentError, DataError, TableError

METHODS = ["temperature", "platt", "histogram", "isotonic"]


@pytest.fixture(scope="module")
def preds() -> pl.DataFrame:
    return prediction_rows(1, 240, low=0.05, high=0.95, items=120, split_every=3)


@pytest.mark.parametrize("method", METHODS)
def test_fit_value_that_matches_no_row(preds: pl.DataFrame, method: str) -> None:
    # a typo in fit_value= used to fit no map at all: every applied row got a null
    fit = getattr(R, f"fit_{method}")
    with pytest.raises(DataError, match=r"'split': 0 of 240 rows have split='train'") as info:
        fit(preds, split="split", fit_value="train")
    assert "'eval', 'fit'" in str(info.value)


@pytest.mark.parametrize("method", METHODS)
def test_all_null_split_column(preds: pl.DataFrame, method: str) -> None:
    frame = preds.with_columns(split=pl.lit(None, pl.String))
    with pytest.raises(DataError, match="0 of 240 rows have split='fit'"):
        getattr(R, f"fit_{method}")(frame, split="split")


@pytest.mark.parametrize("method", METHODS)
def test_empty_frame_with_a_split_fits_nothing_quietly(preds: pl.DataFrame, method: str) -> None:
    params = getattr(R, f"fit_{method}")(preds.head(0), split="split", by="model")
    assert params.height == 0


@pytest.mark.parametrize("method", METHODS)
def test_split_fit_still_works_lazily(preds: pl.DataFrame, method: str) -> None:
    params = getattr(R, f"fit_{method}")(preds.lazy(), split="split")
    out = getattr(R, f"apply_{method}")(preds.lazy(), params, split="split")
    assert isinstance(out, pl.LazyFrame)
    collected = out.collect()
    assert collected["recalibrated"].null_count() == 0
    assert collected.filter(pl.col("split") == "fit")["in_sample"].all()


@pytest.mark.parametrize("method", METHODS)
def test_by_the_confidence_column(preds: pl.DataFrame, method: str) -> None:
    # used to fit one map per distinct confidence value
    with pytest.raises(TableError, match="also input columns: confidence='confidence'"):
        getattr(R, f"fit_{method}")(preds, by="confidence")


def test_scoring_rows_that_were_all_fitted_on(preds: pl.DataFrame) -> None:
    # recalibrate(in_sample=True) then recalibration_metrics() used to return an empty
    # table: every row is in-sample, and the default scores only out-of-sample rows
    out = R.recalibrate(preds, by="model", in_sample=True)
    for score in (R.recalibration_metrics, R.recalibration_reliability):
        with pytest.raises(DataError, match=r"240 of 240 rows are in-sample.*in_sample=True"):
            score(out, by="model")
    table = R.recalibration_metrics(out, by="model", in_sample=True)
    assert table.height == 2
    assert table["in_sample"].all()


def test_scoring_an_empty_recalibrated_frame_is_empty(preds: pl.DataFrame) -> None:
    out = R.recalibrate(preds, split="split").head(0)
    assert R.recalibration_metrics(out).height == 0


@pytest.mark.parametrize(
    ("method", "other"),
    [("temperature", "platt"), ("platt", "histogram"), ("histogram", "isotonic")],
)
def test_params_of_another_method(preds: pl.DataFrame, method: str, other: str) -> None:
    params = getattr(R, f"fit_{other}")(preds)
    with pytest.raises(TableError, match=r"parameters table|binning table|recalibration table"):
        getattr(R, f"apply_{method}")(preds, params)


def test_metrics_table_as_params(preds: pl.DataFrame) -> None:
    with pytest.raises(TableError, match="not a temperature-parameters table"):
        R.apply_temperature(preds, cf.calibration_metrics(preds))


@pytest.mark.parametrize("bounds", [(10.0, 0.1), (0.0, 2.0), (1.0, 1.0), (1.0,)])
def test_temperature_bounds(preds: pl.DataFrame, bounds: tuple[float, ...]) -> None:
    with pytest.raises(ArgumentError, match="bounds= takes"):
        R.fit_temperature(preds, bounds=bounds)  # type: ignore[arg-type]


@pytest.mark.parametrize("folds", [1, 0, 2.5])
def test_assign_folds_out_of_range(preds: pl.DataFrame, folds: float) -> None:
    with pytest.raises(ArgumentError, match="folds= takes an integer >= 2"):
        R.assign_folds(preds, item="item", folds=folds)  # type: ignore[arg-type]


def test_assign_folds_negative_seed(preds: pl.DataFrame) -> None:
    with pytest.raises(ArgumentError, match="seed="):
        R.assign_folds(preds, item="item", seed=-1)


@pytest.mark.parametrize("method", ["temperature", "platt"])
def test_group_with_all_weights_zero(preds: pl.DataFrame, method: str) -> None:
    # fit_temperature used to return temperature 1.0 with NaN log-losses for it
    frame = preds.with_columns(w=pl.when(pl.col("model") == "a").then(0.0).otherwise(1.0))
    n_a = frame.filter(pl.col("model") == "a").height
    with pytest.raises(DataError, match=rf"'w': {n_a} of 240 rows .* weights sum to 0") as info:
        getattr(R, f"fit_{method}")(frame, weight="w", by="model")
    assert "model='a'" in str(info.value)
    some_zero = preds.with_columns(w=pl.when(pl.int_range(pl.len()) < 5).then(0.0).otherwise(1.0))
    params = getattr(R, f"fit_{method}")(some_zero, weight="w")
    assert params.height == 1


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("by", [None, "model"])
def test_params_of_two_fits_concatenated(preds: pl.DataFrame, method: str, by: str | None) -> None:
    # apply_temperature used to return every row twice (a join on repeated keys)
    params = getattr(R, f"fit_{method}")(preds, by=by)
    with pytest.raises(TableError, match="the parameters table repeats groups"):
        getattr(R, f"apply_{method}")(preds, pl.concat([params, params]))


@pytest.mark.parametrize(
    ("method", "column"),
    [
        ("temperature", "temperature"),
        ("platt", "slope"),
        ("histogram", "value"),
        ("isotonic", "value"),
    ],
)
def test_params_with_a_nan(preds: pl.DataFrame, method: str, column: str) -> None:
    # a NaN temperature used to give a NaN for every recalibrated confidence
    params = getattr(R, f"fit_{method}")(preds).with_columns(pl.lit(float("nan")).alias(column))
    with pytest.raises(DataError, match=rf"params column '{column}': \d+ of \d+ rows"):
        getattr(R, f"apply_{method}")(preds, params)


def test_negative_temperature(preds: pl.DataFrame) -> None:
    params = R.fit_temperature(preds).with_columns(temperature=pl.lit(-1.0))
    with pytest.raises(DataError, match=r"not a finite temperature > 0; e\.g\. temperature=-1\.0"):
        R.apply_temperature(preds, params)


@pytest.mark.parametrize("method", METHODS)
def test_invalid_rows_are_named_by_the_users_columns(preds: pl.DataFrame, method: str) -> None:
    # fit_isotonic used to accept a confidence of 1.5 and to name an outcome of 2 by its
    # working column ('__calib_y'); every fit now checks its rows the same way
    fit = getattr(R, f"fit_{method}")
    bad_p = preds.with_columns(confidence=pl.when(pl.int_range(pl.len()) == 3).then(1.5))
    with pytest.raises(DataError, match=r"column 'confidence': 1 of 240 rows is not a prob"):
        fit(bad_p.with_columns(pl.col("confidence").fill_null(0.5)), by="model")
    bad_y = preds.with_columns(correct=pl.when(pl.int_range(pl.len()) == 3).then(2).otherwise(1))
    with pytest.raises(DataError, match=r"column 'correct': 1 of 240 rows is not boolean or 0/1"):
        fit(bad_y, by="model")


@pytest.mark.parametrize("method", METHODS)
def test_two_call_route_on_the_fit_rows_is_in_sample(preds: pl.DataFrame, method: str) -> None:
    # fit_*(df) then apply_*(df) used to label the fit rows in_sample=False, and
    # recalibration_metrics scored them as held-out (after-ECE 0.1167, in-sample)
    fit, apply = getattr(R, f"fit_{method}"), getattr(R, f"apply_{method}")
    params = fit(preds, by="model")
    assert params["fit_fingerprint"].null_count() == 0
    assert apply(preds, params)["in_sample"].all()
    shuffled = apply(preds.sample(fraction=1.0, shuffle=True, seed=3).lazy(), params).collect()
    assert shuffled["in_sample"].all()  # the same rows in another order
    with pytest.raises(DataError, match="240 of 240 rows are in-sample"):
        R.recalibration_metrics(apply(preds, params), by="model")
    scored = R.recalibration_metrics(apply(preds, params), by="model", in_sample=True)
    assert scored["in_sample"].all()
    # other rows of one group: that group is held out, the other still in-sample
    moved = pl.when(pl.col("model") == "a").then(pl.col("confidence") * 0.999)
    mixed = apply(preds.with_columns(moved.otherwise(pl.col("confidence"))), params)
    assert mixed.group_by("model").agg(pl.col("in_sample").all()).sort("model").rows() == [
        ("a", False),
        ("b", True),
    ]
    assert R.recalibration_metrics(mixed, by="model")["model"].to_list() == ["a"]


@pytest.mark.parametrize("method", METHODS)
def test_fit_on_one_frame_applied_to_another_is_held_out(preds: pl.DataFrame, method: str) -> None:
    fit, apply = getattr(R, f"fit_{method}"), getattr(R, f"apply_{method}")
    train, test = preds.filter(pl.col("split") == "fit"), preds.filter(pl.col("split") == "eval")
    params = fit(train)
    assert not apply(test, params)["in_sample"].any()
    assert R.recalibration_metrics(apply(test, params))["count"].item() == test.height
    # the other schemes label their own fit rows, so they carry no fingerprint
    assert (
        fit(preds, split="split")["fit_fingerprint"].null_count()
        == fit(preds, split="split").height
    )


def test_two_call_route_on_the_fit_options_is_in_sample() -> None:
    options = pl.DataFrame(
        {
            "question": [1, 1, 2, 2, 3, 3],
            "loglik": [-0.1, -2.0, -1.0, -0.5, -0.3, -0.2],
            "is_gold": [True, False, True, False, False, True],
        }
    )
    params = R.fit_temperature(options, kind="options")
    assert R.apply_temperature(options, params, kind="options")["in_sample"].all()
    other = options.with_columns(pl.col("loglik") - 1.0)
    assert not R.apply_temperature(other, params, kind="options")["in_sample"].any()


@pytest.mark.parametrize(
    ("confidence", "correct"),
    [
        ([0.2, 0.3, 0.7, 0.8], [0, 0, 1, 1]),  # complete separation: slope 59, NLL 7e-29
        ([0.2, 0.5, 0.5, 0.8], [0, 0, 1, 1]),  # quasi-complete: the classes touch at 0.5
        ([0.2, 0.3, 0.7, 0.8], [1, 1, 0, 0]),  # separated the other way round
    ],
)
def test_platt_on_separable_classes_is_not_converged(
    confidence: list[float], correct: list[int]
) -> None:
    """fit_platt reported converged=True where no maximum-likelihood fit exists."""
    frame = pl.DataFrame({"confidence": confidence, "correct": correct, "model": "s"})
    mixed = pl.DataFrame(
        {"confidence": [0.2, 0.3, 0.7, 0.8, 0.75], "correct": [0, 0, 1, 1, 0], "model": "m"}
    )
    params = R.fit_platt(pl.concat([frame, mixed]), by="model").sort("model")
    assert params.select("model", "converged").rows() == [("m", True), ("s", False)]
    # a wrong row of weight 0 does not undo the separation; Platt's targets do
    weighted = frame.vstack(pl.DataFrame({"confidence": [0.9], "correct": [0], "model": "s"}))
    weights = weighted.with_columns(w=pl.Series([1.0] * len(confidence) + [0.0]))
    assert R.fit_platt(weights, weight="w")["converged"].to_list() == [False]
    assert R.fit_platt(frame, smoothing=True)["converged"].to_list() == [True]


@pytest.mark.parametrize("method", METHODS)
def test_fingerprint_of_a_saved_or_edited_table(
    preds: pl.DataFrame, method: str, tmp_path: Path
) -> None:
    """A fit_fingerprint of text (an edited table) was polars' ComputeError at collection."""
    fit, apply = getattr(R, f"fit_{method}"), getattr(R, f"apply_{method}")
    params = fit(preds, by="model")
    params.write_csv(tmp_path / "p.csv")
    back = pl.read_csv(tmp_path / "p.csv")  # the UInt64 comes back as Int128
    assert apply(preds, back)["in_sample"].all()
    text = params.with_columns(pl.col("fit_fingerprint").cast(pl.String))
    with pytest.raises(TableError, match=r"'fit_fingerprint' .* must hold integers"):
        apply(preds, text)
    # without the column (a table written by hand) nothing is recognised
    assert not apply(preds, params.drop("fit_fingerprint"))["in_sample"].any()
