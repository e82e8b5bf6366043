"""Bad input gives a clear CalibrationInputError, never a wrong number or a polars traceback.

Every row-level message must name the column, say how many rows are bad out of how many
("3 of 1,000 rows") and show one offending example with its group keys ("model='b'").
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.io.plugins import register_io_source
from polars.testing import assert_frame_equal

import calib_frames as cf
from calib_frames import CalibrationInputError
from calib_frames import arguments as A
from calib_frames.validation import Keys

N = 1_000
BAD_ROWS = (600, 750, 999)  # all in group model='b' (rows 500..999)
NAN, INF = float("nan"), float("inf")

AnyFrame = pl.DataFrame | pl.LazyFrame
PredictionFn = Callable[..., AnyFrame]

PREDICTION_FUNCTIONS: dict[str, PredictionFn] = {
    "bin_statistics": cf.bin_statistics,
    "reliability_table": cf.reliability_table,
    "calibration_metrics": cf.calibration_metrics,
    "namespace.metrics": lambda frame, **kw: frame.calib.calibration_metrics(**kw),
}
TOKEN_FUNCTIONS: dict[str, PredictionFn] = {
    "nll_sums": cf.nll_sums,
    "perplexity": cf.perplexity,
    "namespace.perplexity": lambda frame, **kw: frame.calib.perplexity(**kw),
}


# -- helpers ------------------------------------------------------------------------------


def predictions(n: int = N) -> pl.DataFrame:
    """Valid predictions: model 'a' on the first half, 'b' on the second."""
    i = np.arange(n)
    return pl.DataFrame(
        {
            "model": np.where(i < n // 2, "a", "b"),
            "confidence": (i % 97 + 1) / 99.0,
            "correct": i % 3 == 0,
            "w": 1.0 + (i % 4) / 4.0,
        }
    )


def tokens_frame(n: int = N) -> pl.DataFrame:
    """Valid sequence-level rows: model 'a' on the first half, 'b' on the second."""
    i = np.arange(n)
    return pl.DataFrame(
        {
            "model": np.where(i < n // 2, "a", "b"),
            "nll": (i % 13 + 1) / 4.0,
            "tokens": (i % 5 + 1).astype(np.int64),
            "bytes": (4 * (i % 5) + 3).astype(np.int64),
            "words": (i % 4).astype(np.int64),
        }
    )


def with_values(
    frame: pl.DataFrame,
    column: str,
    values: list[object],
    rows: tuple[int, ...] = BAD_ROWS,
    dtype: pl.DataType | None = None,
) -> pl.DataFrame:
    """``frame`` with ``column[rows[k]] = values[k]`` (cycled), cast to ``dtype``."""
    data = frame[column].to_list()
    for k, row in enumerate(rows):
        data[row] = values[k % len(values)]
    series = pl.Series(column, data, dtype=dtype or frame.schema[column], strict=False)
    return frame.with_columns(series)


def problem_line(error: pytest.ExceptionInfo[CalibrationInputError], column: str) -> str:
    """The one line of the message that is about ``column``."""
    message = str(error.value)
    assert "Traceback" not in message
    assert "Resolved plan" not in message  # not a polars error dressed up
    lines = [line for line in message.splitlines() if f"'{column}'" in line]
    assert len(lines) == 1, message
    return lines[0]


def assert_reported(
    error: pytest.ExceptionInfo[CalibrationInputError],
    column: str,
    count: int,
    total: int = N,
    group: str = "model='b'",
) -> str:
    """The message names ``column``, the count of bad rows and an example in ``group``."""
    assert type(error.value) is cf.DataError  # never a wrapped polars error
    assert isinstance(error.value, ValueError)
    line = problem_line(error, column)
    assert f"{count:,} of {total:,} rows" in line, line
    assert group in line, line
    assert f"{column}=" in line, line  # the example's offending value is shown
    return line


# -- confidence ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, NAN, INF, -INF, -0.1, 1.5], ids=repr)
@pytest.mark.parametrize("function", PREDICTION_FUNCTIONS.values(), ids=PREDICTION_FUNCTIONS)
def test_bad_confidence_is_reported(bad: float | None, function: PredictionFn) -> None:
    frame = with_values(predictions(), "confidence", [bad])
    with pytest.raises(CalibrationInputError) as error:
        function(frame, by="model")
    line = assert_reported(error, "confidence", 3)
    assert f"confidence={bad!r}" in line


def test_mixed_bad_confidences_are_counted_together() -> None:
    rows = (520, 640, 700, 810, 990)
    frame = with_values(predictions(), "confidence", [None, NAN, INF, -0.1, 1.5], rows)
    with pytest.raises(CalibrationInputError) as error:
        cf.calibration_metrics(frame, by="model")
    assert_reported(error, "confidence", 5)


def test_bad_confidence_example_shows_every_group_key() -> None:
    frame = with_values(predictions(), "confidence", [1.5]).with_columns(task=pl.lit("qa"))
    with pytest.raises(CalibrationInputError) as error:
        cf.calibration_metrics(frame, by=["model", "task"])
    line = assert_reported(error, "confidence", 3)
    assert "task='qa'" in line


def test_null_group_key_is_shown_in_example() -> None:
    frame = pl.DataFrame(
        {"m": [None, None, "a"], "confidence": [1.5, 2.0, 0.5], "correct": [1, 0, 1]}
    )
    with pytest.raises(CalibrationInputError) as error:
        cf.calibration_metrics(frame, by="m")
    assert_reported(error, "confidence", 2, total=3, group="m=None")


def test_confidence_outside_custom_edges_is_reported_with_the_range() -> None:
    frame = pl.DataFrame({"confidence": [0.1, 0.5, 0.15, 0.9], "correct": [1, 0, 1, 0]})
    with pytest.raises(CalibrationInputError) as error:
        cf.calibration_metrics(frame, bins=[0.2, 0.5, 1.0])
    line = problem_line(error, "confidence")
    assert "2 of 4 rows" in line
    assert "[0.2, 1]" in line


def test_single_bad_row_message_reads_as_rows_of_total() -> None:
    frame = pl.DataFrame({"confidence": [0.2, 1.5, 0.7], "correct": [1, 0, 1]})
    with pytest.raises(CalibrationInputError) as error:
        cf.calibration_metrics(frame)
    line = problem_line(error, "confidence")
    # "1 of 3 rows", like "3 of 1,000 rows"; not "1 of 3 row are ..."
    assert "1 of 3 rows" in line, line


# -- correct ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "bad"),
    [
        (pl.Int64, 2),
        (pl.Int64, -1),
        (pl.Int64, None),
        (pl.Int8, 3),
        (pl.UInt8, 2),
        (pl.Float64, 2.0),
        (pl.Float64, 0.5),
        (pl.Float64, None),
        (pl.Float64, NAN),
        (pl.Float32, 0.5),
        (pl.Boolean, None),
    ],
    ids=repr,
)
def test_bad_correct_is_reported(dtype: pl.DataType, bad: object) -> None:
    base = predictions().with_columns(pl.col("correct").cast(dtype))
    frame = with_values(base, "correct", [bad], dtype=dtype)
    assert frame.schema["correct"] == dtype
    with pytest.raises(CalibrationInputError) as error:
        cf.calibration_metrics(frame, by="model")
    assert_reported(error, "correct", 3)


@pytest.mark.parametrize("dtype", [pl.Int64, pl.UInt8, pl.Float64, pl.Boolean], ids=str)
def test_valid_correct_dtypes_are_accepted(dtype: pl.DataType) -> None:
    frame = predictions().with_columns(pl.col("correct").cast(dtype))
    result = cf.calibration_metrics(frame, by="model")
    assert result["count"].to_list() == [N // 2, N // 2]


# -- weight -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [-1.0, -1e-300, NAN, None, INF], ids=repr)
def test_bad_weight_is_reported(bad: float | None) -> None:
    frame = with_values(predictions(), "w", [bad])
    with pytest.raises(CalibrationInputError) as error:
        cf.calibration_metrics(frame, by="model", weight="w")
    assert_reported(error, "w", 3)


def test_zero_weight_is_valid() -> None:
    frame = with_values(predictions(), "w", [0.0])
    result = cf.calibration_metrics(frame, by="model", weight="w")
    assert result["count"].to_list() == [N // 2, N // 2]


# -- schema problems (raised when the query is built) -------------------------------------


@pytest.mark.parametrize(
    ("column", "kwargs"),
    [("confidence", {}), ("correct", {}), ("w", {"weight": "w"})],
)
@pytest.mark.parametrize("function", PREDICTION_FUNCTIONS.values(), ids=PREDICTION_FUNCTIONS)
def test_string_column_raises_at_build_time(
    column: str, kwargs: dict[str, str], function: PredictionFn
) -> None:
    lazy = predictions().lazy().with_columns(pl.col(column).cast(pl.String))
    with pytest.raises(CalibrationInputError) as error:
        function(lazy, by="model", **kwargs)  # no collect: raised while building
    message = str(error.value)
    assert repr(column) in message
    assert "String" in message


def test_missing_columns_are_listed_with_the_available_ones() -> None:
    frame = pl.DataFrame({"model": ["a"], "prob": [0.5], "hit": [True]}).lazy()
    with pytest.raises(CalibrationInputError) as error:
        cf.calibration_metrics(frame, weight="w")
    message = str(error.value)
    for missing in ("'confidence'", "'correct'", "'w'"):
        assert missing in message
    assert "available columns: 'model', 'prob', 'hit'" in message


def test_by_naming_a_missing_column() -> None:
    with pytest.raises(CalibrationInputError) as error:
        cf.calibration_metrics(predictions().lazy(), by=["model", "task"])
    message = str(error.value)
    assert "by='task'" in message
    assert "'model'" in message  # the available columns are listed
    assert "'confidence'" in message


def test_by_naming_a_missing_column_for_perplexity() -> None:
    with pytest.raises(CalibrationInputError, match="by='run'"):
        cf.perplexity(tokens_frame().lazy(), tokens="tokens", by="run")


@pytest.mark.parametrize("key", ["bin", "bin_lower", "count", "weight", "accuracy"])
@pytest.mark.parametrize("function", PREDICTION_FUNCTIONS.values(), ids=PREDICTION_FUNCTIONS)
def test_group_key_named_like_a_bin_statistics_column(key: str, function: PredictionFn) -> None:
    lazy = predictions().lazy().rename({"model": key})
    with pytest.raises(CalibrationInputError, match=f"'{key}'.*clash"):
        function(lazy, by=key)


@pytest.mark.parametrize("key", ["count", "ece", "brier", "populated_bins"])
def test_group_key_named_like_a_metric_column(key: str) -> None:
    """calibration_metrics outputs these columns, so a key of that name must be refused at
    build time (not a polars DuplicateError at collect)."""
    lazy = predictions().lazy().rename({"model": key})
    with pytest.raises(CalibrationInputError, match=f"'{key}'"):
        cf.calibration_metrics(lazy, by=key)


@pytest.mark.parametrize("key", ["count", "nll_sum", "tokens"])
@pytest.mark.parametrize("function", TOKEN_FUNCTIONS.values(), ids=TOKEN_FUNCTIONS)
def test_group_key_named_like_an_nll_sums_column(key: str, function: PredictionFn) -> None:
    lazy = tokens_frame().lazy().drop("tokens").rename({"model": key})
    with pytest.raises(CalibrationInputError, match=f"'{key}'.*clash"):
        function(lazy, by=key)


@pytest.mark.parametrize("key", ["mean_nll", "perplexity", "bits_per_token"])
def test_group_key_named_like_a_perplexity_column(key: str) -> None:
    """perplexity() outputs these columns; a key of that name must be refused, not
    silently overwritten by the computed measure."""
    lazy = tokens_frame().lazy().rename({"model": key})
    with pytest.raises(CalibrationInputError, match=f"'{key}'"):
        cf.perplexity(lazy, tokens="tokens", by=key)


# -- lazy vs eager ------------------------------------------------------------------------


@pytest.mark.parametrize("function", PREDICTION_FUNCTIONS.values(), ids=PREDICTION_FUNCTIONS)
def test_lazy_input_raises_on_collect_not_at_build(function: PredictionFn) -> None:
    frame = with_values(predictions(), "confidence", [NAN])
    query = function(frame.lazy(), by="model")  # must not raise yet
    assert isinstance(query, pl.LazyFrame)
    with pytest.raises(CalibrationInputError) as error:
        query.collect()
    assert_reported(error, "confidence", 3)


@pytest.mark.parametrize("function", TOKEN_FUNCTIONS.values(), ids=TOKEN_FUNCTIONS)
def test_lazy_token_input_raises_on_collect_not_at_build(function: PredictionFn) -> None:
    frame = with_values(tokens_frame(), "nll", [-0.5])
    query = function(frame.lazy(), by="model", tokens="tokens")
    assert isinstance(query, pl.LazyFrame)
    with pytest.raises(CalibrationInputError) as error:
        query.collect()
    assert_reported(error, "nll", 3)


def test_eager_input_raises_immediately() -> None:
    frame = with_values(predictions(), "correct", [None])
    with pytest.raises(CalibrationInputError):
        cf.bin_statistics(frame, by="model")  # the DataFrame result is built here


# -- several problems at once -------------------------------------------------------------


def test_every_problem_is_reported_at_once() -> None:
    frame = with_values(predictions(), "confidence", [1.5], rows=(510, 520))
    frame = with_values(frame, "correct", [2], rows=(600, 601, 602), dtype=pl.Int64)
    frame = with_values(frame, "w", [-1.0], rows=(700, 701, 702, 703))
    with pytest.raises(CalibrationInputError) as error:
        cf.calibration_metrics(frame, by="model", weight="w")
    assert_reported(error, "confidence", 2)
    assert_reported(error, "correct", 3)
    assert_reported(error, "w", 4)


def test_every_token_problem_is_reported_at_once() -> None:
    frame = with_values(tokens_frame(), "nll", [-1.0], rows=(510, 520))
    frame = with_values(frame, "tokens", [0], rows=(600, 601, 602))
    frame = with_values(frame, "bytes", [-4], rows=(700, 701, 702, 703))
    frame = with_values(frame, "words", [1.5], rows=(800, 801, 802, 803, 804), dtype=pl.Float64)
    with pytest.raises(CalibrationInputError) as error:
        cf.perplexity(frame, by="model", tokens="tokens", bytes="bytes", words="words")
    assert_reported(error, "nll", 2)
    assert_reported(error, "tokens", 3)
    assert_reported(error, "bytes", 4)
    assert_reported(error, "words", 5)


# -- perplexity inputs --------------------------------------------------------------------


def test_negative_nll_hints_at_log_probabilities() -> None:
    frame = with_values(tokens_frame(), "nll", [-0.25, -3.0])
    with pytest.raises(CalibrationInputError) as error:
        cf.perplexity(frame, by="model", tokens="tokens")
    line = assert_reported(error, "nll", 3)
    assert "log p instead of -log p" in line
    assert "log_probs=True" in line


@pytest.mark.parametrize("bad", [NAN, INF, -INF, None], ids=repr)
def test_non_finite_nll_is_reported(bad: float | None) -> None:
    frame = with_values(tokens_frame(), "nll", [bad])
    with pytest.raises(CalibrationInputError) as error:
        cf.nll_sums(frame, by="model", tokens="tokens")
    line = assert_reported(error, "nll", 3)
    assert f"nll={bad!r}" in line


def test_positive_value_with_log_probs_is_reported() -> None:
    frame = tokens_frame().with_columns(-pl.col("nll"))
    frame = with_values(frame, "nll", [0.5, 1e-9])
    with pytest.raises(CalibrationInputError) as error:
        cf.perplexity(frame, by="model", tokens="tokens", log_probs=True)
    line = assert_reported(error, "nll", 3)
    assert "log_probs=True" in line


@pytest.mark.parametrize("bad", [0, -1, 2.5, None], ids=repr)
def test_bad_token_count_is_reported(bad: float | None) -> None:
    frame = with_values(tokens_frame(), "tokens", [bad], dtype=pl.Float64)
    with pytest.raises(CalibrationInputError) as error:
        cf.perplexity(frame, by="model", tokens="tokens")
    assert_reported(error, "tokens", 3)


@pytest.mark.parametrize("column", ["bytes", "words"])
@pytest.mark.parametrize("bad", [-1, 0.5, 2.25, None], ids=repr)
def test_bad_byte_or_word_count_is_reported(column: str, bad: float | None) -> None:
    frame = with_values(tokens_frame(), column, [bad], dtype=pl.Float64)
    with pytest.raises(CalibrationInputError) as error:
        cf.perplexity(frame, by="model", tokens="tokens", **{column: column})
    assert_reported(error, column, 3)


def test_zero_bytes_and_words_are_valid() -> None:
    frame = tokens_frame().with_columns(bytes=pl.lit(0), words=pl.lit(0))
    result = cf.perplexity(frame, tokens="tokens", bytes="bytes", words="words")
    assert math.isnan(result["byte_perplexity"].item())
    assert math.isnan(result["word_perplexity"].item())


def test_string_nll_raises_at_build_time() -> None:
    lazy = tokens_frame().lazy().with_columns(pl.col("nll").cast(pl.String))
    with pytest.raises(CalibrationInputError, match=r"'nll'.*String"):
        cf.perplexity(lazy, tokens="tokens")


# -- the array API ------------------------------------------------------------------------


def test_mismatched_lengths_name_both_lengths() -> None:
    with pytest.raises(CalibrationInputError) as error:
        cf.CalibrationReport.from_predictions([0.1, 0.2], [1])
    message = str(error.value)
    assert "confidence has 2" in message
    assert "correct has 1" in message


def test_mismatched_weight_length() -> None:
    with pytest.raises(CalibrationInputError, match="weight has 3"):
        cf.CalibrationReport.from_predictions([0.1, 0.2], [1, 0], weights=[1.0, 1.0, 1.0])


def test_mismatched_token_count_length() -> None:
    with pytest.raises(CalibrationInputError) as error:
        cf.PerplexityResult.from_token_nll([1.0, 2.0, 3.0], [4, 5])
    assert "has 3" in str(error.value)
    assert "has 2" in str(error.value)


@pytest.mark.parametrize("shape", [(2, 2), (4, 1), ()], ids=str)
def test_arrays_that_are_not_one_dimensional_are_rejected(shape: tuple[int, ...]) -> None:
    confidences = np.full(shape, 0.5)
    correct = np.ones(shape, dtype=bool)
    with pytest.raises(CalibrationInputError, match="one-dimensional"):
        cf.CalibrationReport.from_predictions(confidences, correct)
    with pytest.raises(CalibrationInputError, match="one-dimensional"):
        cf.PerplexityResult.from_token_nll(confidences)


def test_array_api_reports_bad_values() -> None:
    with pytest.raises(CalibrationInputError) as error:
        cf.CalibrationReport.from_predictions([0.1, 1.2, 0.4, -1.0], [1, 0, 1, 0])
    assert "2 of 4 rows" in problem_line(error, "confidence")
    with pytest.raises(CalibrationInputError, match="log p instead of -log p"):
        cf.PerplexityResult.from_token_nll([1.0, -2.0, -3.0])


def test_non_frame_input_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="DataFrame or LazyFrame"):
        cf.calibration_metrics({"confidence": [0.5], "correct": [1]})  # type: ignore[type-var]


# -- validation rides along the aggregation pass ------------------------------------------


def counting_scan(tmp_path: Path, frame: pl.DataFrame) -> tuple[pl.LazyFrame, list[int]]:
    """A parquet scan that records every batch the engine reads from it."""
    path = tmp_path / "source.parquet"
    frame.write_parquet(path)
    batches: list[int] = []

    def count(batch: pl.DataFrame) -> pl.DataFrame:
        batches.append(batch.height)
        return batch

    return pl.scan_parquet(path).map_batches(count, schema=frame.schema), batches


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("bin_statistics", lambda lf: cf.bin_statistics(lf, by="model")),
        ("reliability_table", lambda lf: cf.reliability_table(lf, by="model")),
        ("calibration_metrics", lambda lf: cf.calibration_metrics(lf, by="model")),
        ("calibration_metrics, no keys", cf.calibration_metrics),
        ("weighted", lambda lf: cf.calibration_metrics(lf, by="model", weight="w")),
    ],
)
def test_valid_predictions_are_read_once(
    tmp_path: Path, name: str, build: Callable[[pl.LazyFrame], pl.LazyFrame]
) -> None:
    lazy, batches = counting_scan(tmp_path, predictions())
    query = build(lazy)
    assert batches == []  # building reads nothing
    query.collect()
    assert sum(batches) == N, f"{name}: source rows read {batches}"


def test_valid_tokens_are_read_once(tmp_path: Path) -> None:
    lazy, batches = counting_scan(tmp_path, tokens_frame())
    cf.perplexity(lazy, by="model", tokens="tokens", bytes="bytes", words="words").collect()
    assert sum(batches) == N


def test_checks_are_part_of_the_single_scan_plan(tmp_path: Path) -> None:
    """The optimised plan scans the parquet file once: the row checks are aggregates of
    the same pass, not a second query over the source."""
    path = tmp_path / "source.parquet"
    predictions().write_parquet(path)
    plan = cf.calibration_metrics(pl.scan_parquet(path), by="model").explain()
    assert plan.count("Parquet SCAN") == 1, plan
    tokens_path = tmp_path / "tokens.parquet"
    tokens_frame().write_parquet(tokens_path)
    plan = cf.perplexity(pl.scan_parquet(tokens_path), by="model", tokens="tokens").explain()
    assert plan.count("Parquet SCAN") == 1, plan


def test_python_source_is_read_once() -> None:
    """A source polars cannot cache (an IO plugin, e.g. scan_pyarrow_dataset) must also be
    read once for valid input: the validation may not cost a second full scan."""
    frame = predictions()
    calls: list[int] = []

    def source(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        calls.append(1)
        out = frame if with_columns is None else frame.select(with_columns)
        if predicate is not None:
            out = out.filter(predicate)
        yield out if n_rows is None else out.head(n_rows)

    cf.nll_sums(
        register_io_source(source, schema=frame.schema).with_columns(nll=pl.col("confidence"))
    ).collect()
    assert len(calls) == 1
    calls.clear()
    cf.calibration_metrics(register_io_source(source, schema=frame.schema), by="model").collect()
    assert len(calls) == 1, f"the source was read {len(calls)} times"


# -- user data is not modified ------------------------------------------------------------


def test_input_frames_are_not_modified() -> None:
    frame = predictions()
    before = frame.clone()
    cf.bin_statistics(frame, by="model", weight="w")
    cf.calibration_metrics(frame, by="model", bins=cf.Binning.quantile(5))
    frame.calib.reliability_table(by="model")
    bad = with_values(frame, "confidence", [1.5])
    bad_before = bad.clone()
    with pytest.raises(CalibrationInputError):
        cf.calibration_metrics(bad, by="model")
    assert_frame_equal(frame, before)
    assert_frame_equal(bad, bad_before)

    tokens = tokens_frame()
    tokens_before = tokens.clone()
    cf.perplexity(tokens, by="model", tokens="tokens", bytes="bytes", words="words")
    cf.nll_sums(tokens.with_columns(-pl.col("nll")), tokens="tokens", log_probs=True)
    assert_frame_equal(tokens, tokens_before)


def test_input_arrays_are_not_modified() -> None:
    confidences = np.linspace(0.0, 1.0, 101)
    correct = (np.arange(101) % 2).astype(np.int64)
    weights = np.full(101, 2.0)
    copies = [confidences.copy(), correct.copy(), weights.copy()]
    cf.CalibrationReport.from_predictions(confidences, correct, 7, weights=weights)
    for array, copy in zip([confidences, correct, weights], copies, strict=True):
        np.testing.assert_array_equal(array, copy)
    nll = np.array([0.5, 1.5, 2.0])
    counts = np.array([1, 2, 3])
    cf.PerplexityResult.from_token_nll(nll, counts)
    np.testing.assert_array_equal(nll, [0.5, 1.5, 2.0])
    np.testing.assert_array_equal(counts, [1, 2, 3])


# --- the kernel's own contracts ------------------------------------------------------


def test_require_columns_names_the_table_of_a_call_with_several() -> None:
    from calib_frames.validation import require_columns

    schema = pl.Schema({"query": pl.String, "item": pl.String})
    with pytest.raises(cf.TableError, match=r"^qrels: column not found: relevance='grade'"):
        require_columns(schema, {"relevance": "grade"}, table="qrels")
    with pytest.raises(cf.TableError, match=r"^run: column 'item' \(score\) must be numeric"):
        require_columns(schema, {"score": "item"}, numeric=["score"], table="run")


def test_boolean_number_hints_at_swapped_columns_only_next_to_an_outcome() -> None:
    from calib_frames.validation import require_columns

    schema = pl.Schema({"p": pl.Boolean, "y": pl.Float64})
    with pytest.raises(cf.TableError, match=r"is Boolean but must hold numbers \(were the"):
        require_columns(schema, {"confidence": "p", "correct": "y"}, numbers=["confidence"])
    with pytest.raises(cf.TableError, match=r"\(loglik\) is Boolean but must hold numbers$"):
        require_columns(schema, {"loglik": "p"}, numbers=["loglik"])


def test_an_example_reads_its_value_column_only_when_it_is_shown() -> None:
    """A check on an aggregated frame may name a column it does not hold (show_value=False)."""
    from calib_frames.validation import RowCheck, check_rows

    frame = pl.DataFrame({"question": [1, 2], "flag": [False, True]})
    check = RowCheck("option", "without options", pl.col("flag"), show_value=False)
    with pytest.raises(cf.DataError, match=r"column 'option': 1 of 2 rows is without options; "
                       r"e.g. question=2$"):  # fmt: skip
        check_rows(frame, [check], keys=["question"])


def test_as_expr_takes_a_name_or_an_expression() -> None:
    from calib_frames.validation import as_expr

    frame = pl.DataFrame({"x": [1, 2]})
    assert frame.select(as_expr("x")).equals(frame.select(as_expr(pl.col("x"))))


# --- the resampling arguments: one home, one wording ----------------------------------


RESAMPLING_CALLS: dict[str, Callable[..., object]] = {
    "calibration_intervals": lambda **kw: cf.calibration_intervals(_PREDS, **kw),
    "perplexity_intervals": lambda **kw: cf.perplexity_intervals(
        _PREDS.rename({"confidence": "nll"}), tokens=1, **kw
    ),
    "selective_intervals": lambda **kw: cf.selective_intervals(_PREDS, **kw),
    "paired_comparison": lambda **kw: cf.paired_comparison(_PREDS, **kw),
    "paired_significance": lambda **kw: cf.paired_significance(
        _PER_QUERY, metric="ndcg", **({"replicates": 10} | kw)
    ),
}
_PREDS = pl.DataFrame(
    {
        "model": ["a", "b"] * 20,
        "item": np.repeat(np.arange(20), 2),
        "confidence": np.linspace(0.5, 0.99, 40),
        "correct": [True, False, True, True] * 10,
    }
)
_PER_QUERY = pl.DataFrame(
    {"model": ["a", "b"] * 4, "query": np.repeat(np.arange(4), 2), "ndcg": np.linspace(0, 1, 8)}
)


@pytest.mark.parametrize("call", list(RESAMPLING_CALLS))
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"replicates": 0}, "replicates= takes an integer >= 1, got 0"),
        ({"replicates": True}, "replicates= takes an integer >= 1, got True"),
        ({"seed": -1}, "seed= takes an integer >= 0, got -1"),
        ({"seed": 1.5}, "seed= takes an integer >= 0, got 1.5"),
    ],
)
def test_resampling_arguments_have_one_wording(
    call: str, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(cf.exceptions.ArgumentError, match=message):
        RESAMPLING_CALLS[call](**kwargs)


@pytest.mark.parametrize("call", [c for c in RESAMPLING_CALLS if c != "paired_significance"])
@pytest.mark.parametrize("level", [0.0, 1.0, math.nan, True, "0.9"])
def test_levels_have_one_wording(call: str, level: object) -> None:
    message = f"level= takes a number strictly between 0 and 1, got {level!r}"
    with pytest.raises(cf.exceptions.ArgumentError, match=message.replace("(", r"\(")):
        RESAMPLING_CALLS[call](level=level)


def test_assign_folds_uses_the_same_checks() -> None:
    from calib_frames.recalibrate import assign_folds

    frame = pl.DataFrame({"question": ["q1", "q2"]})
    with pytest.raises(cf.exceptions.ArgumentError, match="seed= takes an integer >= 0, got -1"):
        assign_folds(frame, item="question", seed=-1)
    with pytest.raises(cf.exceptions.ArgumentError, match="folds= takes an integer >= 2, got 1"):
        assign_folds(frame, item="question", folds=1)


def test_check_memory_refuses_a_plan_over_the_limit() -> None:
    from calib_frames.validation import MEMORY_LIMIT, check_memory

    check_memory(MEMORY_LIMIT, 1, "bytes")  # at the limit: fine
    with pytest.raises(cf.exceptions.ArgumentError, match=r"about 8\.0 GiB \(bytes = "):
        check_memory(MEMORY_LIMIT + 1, 1, "bytes")
    with pytest.raises(cf.exceptions.ArgumentError, match="MEMORY_LIMIT"):
        cf.calibration_intervals(_PREDS, replicates=10**9)


# -- argument constraints (calib_frames.arguments) ------------------------------------------

ArgumentError = cf.exceptions.ArgumentError


@pytest.mark.parametrize(
    ("constraint", "description", "accepted", "refused"),
    [
        (A.Integer(1), "an integer >= 1", [1, 7, np.int64(3)], [0, True, 1.5, "1", None]),
        (A.Integer(2, 4), "an integer in [2, 4]", [2, 4], [1, 5, np.bool_(True)]),
        (A.Integer(maximum=0), "an integer <= 0", [-3, 0], [1, False]),
        (A.Integer(), "an integer", [-(10**30), 0], [0.0, "0"]),
        (
            A.Number(greater_than=0, less_than=1),
            "a number strictly between 0 and 1",
            [0.5, np.float32(0.25), 1e-300],
            [0, 1, -0.1, math.nan, True, "0.5", None],
        ),
        (A.Number(greater_than=0, at_most=1), "a number in (0, 1]", [1, 0.1], [0, 1.01]),
        (A.Number(at_least=0, at_most=1), "a number in [0, 1]", [0, 1, 0.5], [-1e-9, INF]),
        (A.Number(at_least=0, less_than=0.5), "a number in [0, 0.5)", [0], [0.5]),
        (A.Number(greater_than=0), "a number > 0", [1e300], [0, INF, NAN]),
        (A.Number(at_least=-1), "a number >= -1", [-1], [-1.5]),
        (A.Number(less_than=2), "a number < 2", [1.9], [2]),
        (A.Number(), "a finite number", [-5, 0.0], [INF, -INF, NAN, False]),
        (A.Options("bh", "holm"), "'bh' or 'holm'", ["bh", "holm"], ["BH", None, ["bh"], 1]),
        (A.Options("wilson"), "'wilson'", ["wilson"], ["normal"]),
        (A.FLAG, "True or False", [True, False], [1, 0, None, np.True_, "True"]),
        (A.COLUMN, "a column name", ["x", ""], [1, None, b"x", pl.col("x")]),
        (A.Integer(2) | None, "an integer >= 2 or None", [None, 2], [1, "None"]),
        (
            A.COLUMN | A.ListOf(A.COLUMN),
            "a column name or a non-empty list of column names",
            ["a", ["a", "b"], ("a",), pl.Series(["a"])],
            [[], [1], 1, {"a": "b"}],
        ),
        (
            A.ListOf(A.Integer(1), distinct=True),
            "a non-empty list of integers >= 1, each once",
            [[5], range(5, 31), np.arange(1, 4)],
            [[5, 5], [], 5, "5", [0], (i for i in [5])],
        ),
        (A.ListOf(A.Number(), at_least=0), "a list of finite numbers", [[]], [[NAN]]),
        (A.ListOf(A.COLUMN, at_least=2), "2 or more column names", [["a", "b"]], [["a"]]),
        (
            A.MappingOf(A.COLUMN, A.Number(at_least=0)),
            "a mapping of column names to numbers >= 0",
            [{}, {"a": 1}],
            [{"a": -1}, {1: 1}, [("a", 1)]],
        ),
        (
            A.InstanceOf((pl.DataFrame, pl.LazyFrame), "a table"),
            "a table",
            [pl.DataFrame(), pl.LazyFrame()],
            [{"a": [1]}, "t.csv"],
        ),
        (
            A.Rule("an even integer", lambda v: isinstance(v, int) and v % 2 == 0, refused=(1,)),
            "an even integer",
            [0, 2],
            [1, "2"],
        ),
        (A.TOKENS, "a column name, 1 or None", ["tokens", 1, None], [2, 0, True, 1.0]),
        (Keys(), "a column name or a list of them", [None, "a", ["a", "b"]], ["a,b", ["a", "a"]]),
        (Keys(required=True), "one or more column names", ["a"], [None, [], 1]),
    ],
)
def test_constraint_takes_what_its_words_say(
    constraint: A.Constraint, description: str, accepted: list[object], refused: list[object]
) -> None:
    assert constraint.description == description
    for value in accepted:
        assert constraint.accepts(value), value
        constraint.check(value, "x")
    for value in [*refused, *constraint.refused]:
        assert not constraint.accepts(value), value
        with pytest.raises(ArgumentError, match=r"^x="):
            constraint.check(value, "x")


def test_the_one_wording_of_an_argument_error() -> None:
    with pytest.raises(ArgumentError) as caught:
        A.Integer(1).check(True, "replicates")
    assert str(caught.value) == "replicates= takes an integer >= 1, got True"
    assert isinstance(caught.value, TypeError)  # ArgumentError is both
    with pytest.raises(ArgumentError) as caught:
        A.LEVEL.check(pl.DataFrame({"a": range(100)}), "level")
    assert str(caught.value) == "level= takes a number strictly between 0 and 1, got a DataFrame"
    with pytest.raises(
        ArgumentError,
        match=r"^folds='a,b' names one column; for several keys pass a list: folds=\[",
    ):
        Keys().check("a,b", "folds")  # group_keys' own message, under the argument's name


def test_or_joins_and_flattens() -> None:
    joined = A.Integer(1) | A.COLUMN | None
    assert isinstance(joined, A.AnyOf)
    assert [type(option) for option in joined.options] == [A.Integer, A.Column, A.NoneOnly]
    assert joined.accepts(None) and not A.Integer(1).accepts(None)  # None only where declared
    assert all(not joined.accepts(value) for value in joined.refused)


def test_options_of_a_literal() -> None:
    from typing import Literal

    assert A.Options.of(Literal["a", "b"]).values == ("a", "b")


@A.check_arguments(replicates=A.REPLICATES, level=A.LEVEL, method=A.Options("a", "b"))
def _checked(
    table: object = None, replicates: int = 1000, *, level: float = 0.95, method: str = "a"
) -> tuple[object, int, float, str]:
    """Summary.

    Parameters
    ----------
    table, replicates, level, method
        Things.

    Examples
    --------
    >>> _checked()[1]
    1000
    """
    return table, replicates, level, method


def test_check_arguments_checks_keywords_and_positionals_before_the_call() -> None:
    assert _checked(1, 5, level=0.5, method="b") == (1, 5, 0.5, "b")
    with pytest.raises(ArgumentError) as caught:
        _checked(None, True)  # a positional argument is checked too
    assert str(caught.value) == "_checked(): replicates= takes an integer >= 1, got True"
    with pytest.raises(ArgumentError, match=r"^_checked\(\): level= takes a number strictly"):
        _checked(level=1)
    with pytest.raises(ArgumentError, match=r"^_checked\(\): method= takes 'a' or 'b', got 'c'"):
        _checked(method="c")


def test_check_arguments_keeps_the_function_and_shows_its_constraints() -> None:
    assert inspect.signature(_checked) == inspect.signature(_checked.__wrapped__)  # type: ignore[attr-defined]
    assert dict(_checked.constraints) == {  # type: ignore[attr-defined]
        "replicates": A.REPLICATES,
        "level": A.LEVEL,
        "method": _checked.constraints["method"],  # type: ignore[attr-defined]
    }
    doc = inspect.getdoc(_checked) or ""
    raises = doc.split("Raises\n------\n", 1)[1]
    assert raises.startswith(
        "ArgumentError\n    Checked before the call:\n    ``replicates=`` an integer >= 1;\n"
    )
    assert doc.index("Raises") < doc.index("Examples")


def test_check_arguments_adds_to_the_raises_section() -> None:
    def documented(*, k: int = 1) -> None:
        """Summary.

        Raises
        ------
        TableError, ArgumentError
            Something.
        DataError
            Rows.
        """

    def without_entry(*, k: int = 1) -> None:
        """Summary.

        Raises
        ------
        DataError
            Rows.
        """

    def bare(*, k: int = 1) -> None:
        """Summary only."""

    def text(function: Callable[..., None]) -> str:
        return inspect.getdoc(A.check_arguments(k=A.Integer(1))(function)) or ""

    line = "    Checked before the call:\n    ``k=`` an integer >= 1."
    assert f"TableError, ArgumentError\n    Something.\n{line}\nDataError" in text(documented)
    assert f"DataError\n    Rows.\nArgumentError\n{line}" in text(without_entry)
    assert text(bare) == f"Summary only.\n\nRaises\n------\nArgumentError\n{line}"


def test_check_arguments_refuses_a_wrong_declaration() -> None:
    with pytest.raises(TypeError, match="has no parameter 'level'"):
        A.check_arguments(level=A.LEVEL)(lambda *, alpha=0.05: alpha)
    with pytest.raises(TypeError, match="the default alpha=2 breaks"):
        A.check_arguments(alpha=A.LEVEL)(lambda *, alpha=2: alpha)


# -- every public function declares its arguments ------------------------------------------

_SUBPACKAGES = (
    "comparison",
    "engine",
    "estimators",
    "metrics",
    "multiclass",
    "plot",
    "ranking",
    "ranking.expr",
    "recalibrate",
    "report",
    "sources",
)


def _public_functions() -> dict[str, Callable[..., object]]:
    import importlib

    found: dict[str, Callable[..., object]] = {}
    for module in [cf, *(importlib.import_module(f"calib_frames.{n}") for n in _SUBPACKAGES)]:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def _numeric_or_option(function: Callable[..., object]) -> list[str]:
    """The parameters whose type or default is a number, a flag or a Literal of options."""
    import sys
    import typing

    module = vars(sys.modules[function.__module__])
    named: list[str] = []
    for parameter in inspect.signature(function).parameters.values():
        words = re.findall(r"[A-Za-z_]+", str(parameter.annotation))
        aliases = [module.get(word) for word in words]
        literal = "Literal" in words or any(
            typing.get_origin(alias) is typing.Literal for alias in aliases
        )
        number = {"int", "float", "bool", "BinsLike"} & set(words)
        default = parameter.default
        if literal or number or type(default) in (bool, int, float):
            named.append(parameter.name)
    return named


PUBLIC_FUNCTIONS = _public_functions()


def test_every_public_function_with_a_number_flag_or_option_declares_it() -> None:
    missing = {
        name: [
            p for p in _numeric_or_option(function) if p not in getattr(function, "constraints", {})
        ]
        for name, function in PUBLIC_FUNCTIONS.items()
    }
    assert {name: params for name, params in missing.items() if params} == {}
    assert len(PUBLIC_FUNCTIONS) > 100  # the walk found the package


DECLARED = [
    (name, parameter, value)
    for name, function in PUBLIC_FUNCTIONS.items()
    for parameter, constraint in getattr(function, "constraints", {}).items()
    for value in constraint.refused[:2]
]


@pytest.mark.parametrize(("name", "parameter", "value"), DECLARED, ids=repr)
def test_a_refused_value_is_refused_before_the_call(
    name: str, parameter: str, value: object
) -> None:
    function = PUBLIC_FUNCTIONS[name]
    function_name = function.__qualname__
    with pytest.raises(ArgumentError, match=rf"^{re.escape(function_name)}\(\): {parameter}="):
        function(**{parameter: value})  # no table given: the check comes first
    assert f"``{parameter}=``" in (function.__doc__ or "")
