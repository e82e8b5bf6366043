"""isotonic_blocks against scikit-learn's IsotonicRegression, properties and bad input."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_frames as cf
from calib_frames.estimators.pav import isotonic_blocks
from calib_frames.schema import ISOTONIC_BLOCKS

# Test-only reference libraries: a missing one skips this module, it does not break collection.
IsotonicRegression = pytest.importorskip("sklearn.isotonic").IsotonicRegression


def fitted_per_row(frame: pl.DataFrame, blocks: pl.DataFrame, keys: list[str]) -> np.ndarray:
    """The block value of every row of ``frame`` (joined on keys and x range)."""
    joined = (
        frame.with_row_index("row").join_where(
            blocks,
            *[pl.col(k) == pl.col(f"{k}_right") for k in keys],
            pl.col("x") >= pl.col("x_lower"),
            pl.col("x") <= pl.col("x_upper"),
        )
        if keys
        else frame.with_row_index("row").join_where(
            blocks, pl.col("x") >= pl.col("x_lower"), pl.col("x") <= pl.col("x_upper")
        )
    )
    joined = joined.sort("row")
    assert joined.height == frame.height
    return joined["value"].to_numpy()


def sklearn_fit(x: np.ndarray, y: np.ndarray, w: np.ndarray | None, increasing: bool) -> np.ndarray:
    model = IsotonicRegression(increasing=increasing).fit(x, y, sample_weight=w)
    return np.asarray(model.predict(x))


@pytest.mark.parametrize("increasing", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_matches_sklearn_per_group(increasing: bool, weighted: bool, ties: bool) -> None:
    rng = np.random.default_rng(7 + 2 * weighted + ties)
    n = 3000
    group = rng.integers(0, 6, n)
    x = rng.integers(0, 40, n) / 40 if ties else rng.random(n)
    y = (rng.random(n) < x).astype(float) + rng.normal(0, 0.3, n)
    w = rng.uniform(0.1, 3.0, n) if weighted else None
    frame = pl.DataFrame({"g": group, "x": x, "y": y, **({"w": w} if weighted else {})})
    blocks = isotonic_blocks(
        frame, x="x", y="y", by="g", weight="w" if weighted else None, increasing=increasing
    )
    got = fitted_per_row(frame, blocks.rename({"g": "g_right"}), ["g"])
    for g in range(6):
        rows = group == g
        want = sklearn_fit(x[rows], y[rows], None if w is None else w[rows], increasing)
        np.testing.assert_allclose(got[rows], want, rtol=1e-12, atol=1e-14)


def test_one_group_matches_sklearn_exactly_on_binary_outcomes() -> None:
    rng = np.random.default_rng(3)
    x = rng.random(20000)
    y = (rng.random(20000) < x**2).astype(float)
    blocks = isotonic_blocks(pl.DataFrame({"x": x, "y": y}), x="x", y="y")
    got = fitted_per_row(pl.DataFrame({"x": x, "y": y}), blocks, [])
    np.testing.assert_allclose(got, sklearn_fit(x, y, None, True), rtol=1e-13, atol=1e-15)


def test_table_shape_and_conventions() -> None:
    frame = pl.DataFrame(
        {"m": ["b", "b", "b", "a", "a"], "x": [0.2, 0.2, 0.5, 0.1, 0.9], "y": [1, 0, 0, 1, 0]}
    )
    blocks = isotonic_blocks(frame, x="x", y="y", by="m")
    assert blocks.columns == ["m", *ISOTONIC_BLOCKS.names]
    assert blocks.schema["block"] == pl.UInt32 and blocks.schema["count"] == pl.UInt64
    # group a: 1 then 0 → pooled to 0.5; group b: ties at 0.2 pooled (0.5), then 0 → 1/3
    assert blocks.rows() == [
        ("a", 0, 0.1, 0.9, 2, 2.0, 0.5),
        ("b", 0, 0.2, 0.5, 3, 3.0, 1 / 3),
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2),
            st.integers(0, 8),
            st.floats(-5, 5, allow_nan=False),
            st.floats(0.1, 4),
        ),
        min_size=1,
        max_size=60,
    ),
    st.booleans(),
)
def test_properties(rows: list[tuple[int, int, float, float]], increasing: bool) -> None:
    frame = pl.DataFrame(rows, schema=["g", "x", "y", "w"], orient="row")
    blocks = isotonic_blocks(frame, x="x", y="y", weight="w", by="g", increasing=increasing)
    per_group = blocks.group_by("g").agg(
        pl.col("value").diff().drop_nulls().alias("steps"),
        pl.col("count").sum(),
        pl.col("weight").sum(),
        pl.col("block"),
        (pl.col("value") * pl.col("weight")).sum().alias("wv"),
    )
    truth = frame.group_by("g").agg(
        pl.len().alias("n"),
        pl.col("w").sum().alias("sw"),
        (pl.col("w") * pl.col("y")).sum().alias("swy"),
    )
    checked = per_group.join(truth, on="g")
    assert checked.height == frame["g"].n_unique()
    for row in checked.iter_rows(named=True):
        steps = np.asarray(row["steps"])
        # monotone, strictly between blocks (adjacent equal values would be one block)
        assert np.all(steps > -1e-9) if increasing else np.all(steps < 1e-9)
        assert row["count"] == row["n"]
        assert row["block"] == list(range(len(row["block"])))
        # the fit preserves the weighted mean of y (PAV pools, never moves mass)
        assert row["wv"] == pytest.approx(row["swy"], abs=1e-9)
    # blocks cover disjoint, ordered x ranges
    ordered = blocks.with_columns(pl.col("x_lower").shift(-1).over("g").alias("next"))
    assert (
        ordered.filter(pl.col("next").is_not_null() & (pl.col("next") <= pl.col("x_upper"))).height
        == 0
    )


def test_one_row_and_all_equal_x() -> None:
    one = isotonic_blocks(pl.DataFrame({"x": [0.3], "y": [1.0]}), x="x", y="y")
    assert one.rows() == [(0, 0.3, 0.3, 1, 1.0, 1.0)]
    same = isotonic_blocks(pl.DataFrame({"x": [0.3] * 4, "y": [1, 0, 0, 0]}), x="x", y="y")
    assert same.rows() == [(0, 0.3, 0.3, 4, 4.0, 0.25)]


def test_empty_frame() -> None:
    empty = pl.DataFrame(
        {"g": [], "x": [], "y": []}, schema={"g": pl.String, "x": pl.Float64, "y": pl.Float64}
    )
    out = isotonic_blocks(empty, x="x", y="y", by="g")
    assert out.height == 0 and out.columns == ["g", *ISOTONIC_BLOCKS.names]


def test_bad_rows_raise_data_error_with_example() -> None:
    frame = pl.DataFrame({"g": ["a", "b"], "x": [0.1, float("nan")], "y": [1.0, 0.0]})
    with pytest.raises(cf.DataError, match=r"'x'.*1 of 2 rows.*g='b'"):
        isotonic_blocks(frame, x="x", y="y", by="g")
    frame = pl.DataFrame({"x": [0.1, 0.2], "y": [1.0, None]})
    with pytest.raises(cf.DataError, match="'y'"):
        isotonic_blocks(frame, x="x", y="y")
    frame = pl.DataFrame({"x": [0.1, 0.2], "y": [1.0, 0.0], "w": [1.0, 0.0]})
    with pytest.raises(cf.DataError, match=r"'w'.*positive"):
        isotonic_blocks(frame, x="x", y="y", weight="w")


def test_bad_arguments() -> None:
    frame = pl.DataFrame({"x": [0.1], "y": [1.0], "s": ["a"]})
    with pytest.raises(cf.TableError, match="column not found"):
        isotonic_blocks(frame, x="nope", y="y")
    with pytest.raises(cf.TableError, match="numeric"):
        isotonic_blocks(frame, x="s", y="y")
    with pytest.raises(cf.ArgumentError):
        isotonic_blocks(frame, x="x", y="y", by=["s", "s"])
    with pytest.raises(cf.ArgumentError):
        isotonic_blocks(frame, x="x", y="y", increasing="yes")  # type: ignore[arg-type]
    with pytest.raises(cf.TableError, match="clash"):
        isotonic_blocks(frame.rename({"s": "value"}), x="x", y="y", by="value")


def test_many_groups_match_sklearn() -> None:
    """The group shift grows with the group count: 3000 groups still fit exactly."""
    rng = np.random.default_rng(12)
    n_groups, size = 3000, 12
    group = np.repeat(np.arange(n_groups), size)
    x = rng.integers(0, 6, group.size) / 5
    y = rng.normal(0, 1, group.size) + x
    frame = pl.DataFrame({"g": group, "x": x, "y": y})
    blocks = isotonic_blocks(frame, x="x", y="y", by="g")
    got = fitted_per_row(frame, blocks.rename({"g": "g_right"}), ["g"])
    want = np.concatenate(
        [sklearn_fit(x[group == g], y[group == g], None, True) for g in range(n_groups)]
    )
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
