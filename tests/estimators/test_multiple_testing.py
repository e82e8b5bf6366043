"""adjust_p_values against statsmodels' multipletests (Holm, Benjamini–Hochberg)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calib_frames.estimators.multiple_testing import adjust_p_values
from calib_frames.exceptions import ArgumentError, DataError, TableError

# Test-only reference libraries: a missing one skips this module, it does not break collection.
multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests

SM = {"holm": "holm", "bh": "fdr_bh"}


def reference(p: np.ndarray, method: str) -> np.ndarray:
    return multipletests(p, method=SM[method])[1]


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_matches_statsmodels_per_family(method: str) -> None:
    rng = np.random.default_rng(1)
    n = 300
    task = rng.integers(0, 7, n)
    # a mixture of small and uniform p-values, with ties (rounded)
    p = np.where(rng.random(n) < 0.3, rng.random(n) * 0.01, rng.random(n)).round(3)
    frame = pl.DataFrame({"task": task, "p_value": p})
    out = adjust_p_values(frame, method=method, by="task")  # type: ignore[arg-type]
    assert out.columns == ["task", "p_value", "p_value_adjusted"]
    assert out["p_value"].to_list() == p.tolist()  # row order kept
    expected = np.empty(n)
    for t in np.unique(task):
        expected[task == t] = reference(p[task == t], method)
    np.testing.assert_allclose(out["p_value_adjusted"].to_numpy(), expected, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40),
    st.sampled_from(["holm", "bh"]),
)
@pytest.mark.slow
def test_property_whole_table(p: list[float], method: str) -> None:
    out = adjust_p_values(pl.DataFrame({"p_value": p}), method=method)  # type: ignore[arg-type]
    got = out["p_value_adjusted"].to_numpy()
    np.testing.assert_allclose(got, reference(np.array(p), method), rtol=1e-12, atol=1e-300)
    assert (got >= np.array(p) - 1e-15).all() and (got <= 1.0).all()


def test_nulls_are_not_tested() -> None:
    frame = pl.DataFrame({"p_value": [0.01, None, 0.02, 0.5]})
    got = adjust_p_values(frame, method="holm")["p_value_adjusted"].to_list()
    expected = reference(np.array([0.01, 0.02, 0.5]), "holm").tolist()
    assert got[1] is None
    np.testing.assert_allclose([got[0], got[2], got[3]], expected)


def test_multiple_keys_and_empty() -> None:
    frame = pl.DataFrame(
        {"a": [1, 1, 2, 2], "b": ["x", "x", "x", "y"], "p": [0.01, 0.02, 0.03, 0.04]}
    )
    out = adjust_p_values(frame, p_value="p", by=["a", "b"], method="bh", output="q")
    np.testing.assert_allclose(out["q"].to_numpy(), [0.02, 0.02, 0.03, 0.04])
    empty = adjust_p_values(frame.clear(), p_value="p", by="a")
    assert empty.height == 0 and empty.schema["p_value_adjusted"] == pl.Float64


def test_bad_inputs() -> None:
    frame = pl.DataFrame({"g": ["a", "b"], "p_value": [0.1, 1.5]})
    with pytest.raises(DataError, match=r"1 of 2 rows.*g='b'"):
        adjust_p_values(frame, by="g")
    with pytest.raises(DataError):
        adjust_p_values(pl.DataFrame({"p_value": [float("nan")]}))
    with pytest.raises(ArgumentError):
        adjust_p_values(frame, method="bonferroni")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError):
        adjust_p_values(frame, by=["g", "g"])
    with pytest.raises(TableError, match="not found"):
        adjust_p_values(frame, p_value="pv")
    with pytest.raises(TableError):
        adjust_p_values(pl.DataFrame({"p_value": ["0.1"]}))
