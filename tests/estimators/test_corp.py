"""CORP against reliabilitydiag's published Niamey values, model-diagnostics and sklearn."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from factories import NIAMEY_FORECASTERS, niamey_wide
from hypothesis import given, settings
from hypothesis import strategies as st

import calib_frames as cf
from calib_frames.estimators.corp import (
    corp_decomposition,
    corp_reliability,
)
from calib_frames.schema import CORP_DECOMPOSITION, CORP_RELIABILITY

scoring = pytest.importorskip("model_diagnostics.scoring")


# R reliabilitydiag 0.1.4, summary(reliabilitydiag(precip_Niamey_2016[c("Logistic", "EMOS",
# "ENS", "EPC")], y = precip_Niamey_2016$obs, region.level = NA)): the 'brier' score
# decomposition printed in the package's reference page "Decomposing scores into
# miscalibration, discrimination and uncertainty" (summary.reliabilitydiag.html, pkgdown
# site of github.com/aijordan/reliabilitydiag, commit 05165f7), to the 3 significant digits
# that the tibble prints: forecast -> (mean_score, miscalibration, discrimination, uncertainty).
PUBLISHED_BRIER = {
    "Logistic": (0.206, 0.0171, 0.0555, 0.244),
    "EMOS": (0.232, 0.0183, 0.0305, 0.244),
    "ENS": (0.266, 0.0661, 0.0441, 0.244),
    "EPC": (0.234, 0.0223, 0.0323, 0.244),
}
TERMS = ["mean_score", "miscalibration", "discrimination", "uncertainty"]


def significant(value: float, digits: int = 3) -> float:
    return float(f"{value:.{digits}g}")


def test_niamey_matches_published_reliabilitydiag(niamey: pl.DataFrame) -> None:
    out = corp_decomposition(niamey, confidence="p", correct="obs", by="forecast")
    assert out.columns == ["forecast", *CORP_DECOMPOSITION.names]
    for row in out.iter_rows(named=True):
        got = tuple(significant(row[t]) for t in TERMS)
        assert got == PUBLISHED_BRIER[row["forecast"]]


@pytest.mark.parametrize("score", ["brier", "log"])
def test_niamey_matches_model_diagnostics(niamey: pl.DataFrame, score: str) -> None:
    wide = niamey_wide()
    function = scoring.SquaredError() if score == "brier" else scoring.LogLoss()
    out = corp_decomposition(niamey, confidence="p", correct="obs", by="forecast", score=score)
    for name in NIAMEY_FORECASTERS:
        want = scoring.decompose(
            wide["obs"].to_numpy().astype(float), wide[name].to_numpy(), scoring_function=function
        ).row(0, named=True)
        got = out.filter(pl.col("forecast") == name).row(0, named=True)
        if score == "log" and name == "ENS":
            # ENS says 1.0 on days without rain: infinite log score, finite recalibration
            assert got["mean_score"] == np.inf and got["miscalibration"] == np.inf
            assert got["discrimination"] == pytest.approx(want["discrimination"], abs=1e-12)
            continue
        for ours, theirs in zip(TERMS, ["score", *TERMS[1:]], strict=True):
            assert got[ours] == pytest.approx(want[theirs], abs=1e-12), (name, ours)


@pytest.mark.parametrize("score", ["brier", "log"])
def test_random_groups_match_model_diagnostics_with_weights(score: str) -> None:
    rng = np.random.default_rng(4)
    n = 4000
    g = rng.integers(0, 5, n)
    p = np.round(rng.beta(2, 2, n), 2)  # many ties
    y = (rng.random(n) < p**1.3).astype(float)
    w = rng.uniform(0.5, 2.0, n)
    frame = pl.DataFrame({"g": g, "p": p, "y": y, "w": w})
    out = corp_decomposition(frame, confidence="p", correct="y", by="g", weight="w", score=score)
    function = scoring.SquaredError() if score == "brier" else scoring.LogLoss()
    for k in range(5):
        rows = g == k
        want = scoring.decompose(y[rows], p[rows], w[rows], scoring_function=function)
        got = out.filter(pl.col("g") == k).row(0, named=True)
        assert got["weight"] == pytest.approx(w[rows].sum())
        for ours, theirs in zip(TERMS, ["score", *TERMS[1:]], strict=True):
            assert got[ours] == pytest.approx(want[theirs][0], abs=1e-12)


def test_reliability_blocks(niamey: pl.DataFrame) -> None:
    curve = corp_reliability(niamey, confidence="p", correct="obs", by="forecast")
    assert curve.columns == ["forecast", *CORP_RELIABILITY.names]
    for name in NIAMEY_FORECASTERS:
        rows = niamey.filter(pl.col("forecast") == name)
        blocks = curve.filter(pl.col("forecast") == name)
        assert blocks["count"].sum() == rows.height
        assert blocks["block"].to_list() == list(range(blocks.height))
        assert (blocks["recalibrated"].diff().drop_nulls() > 0).all()


def test_ens_ties_pooled(niamey: pl.DataFrame) -> None:
    """ENS is a fraction of 52 members: the 24 forecasts of exactly 1.0 form one block."""
    curve = corp_reliability(
        niamey.filter(pl.col("forecast") == "ENS"), confidence="p", correct="obs"
    )
    last = curve.row(-1, named=True)
    assert (last["confidence_lower"], last["confidence_upper"], last["count"]) == (1.0, 1.0, 24)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 10), st.booleans()), min_size=1, max_size=50
    ),
    st.sampled_from(["brier", "log"]),
)
def test_decomposition_properties(rows: list[tuple[int, int, bool]], score: str) -> None:
    frame = pl.DataFrame(rows, schema=["g", "k", "y"], orient="row").with_columns(
        p=pl.col("k") / 10
    )
    out = corp_decomposition(frame, confidence="p", correct="y", by="g", score=score)
    assert out.height == frame["g"].n_unique()
    for row in out.iter_rows(named=True):
        assert row["miscalibration"] >= 0 and row["discrimination"] >= 0
        assert row["uncertainty"] >= row["discrimination"] - 1e-15
        if np.isfinite(row["mean_score"]):
            total = row["miscalibration"] - row["discrimination"] + row["uncertainty"]
            assert total == pytest.approx(row["mean_score"], abs=1e-12)


def test_calibrated_constant_forecast_has_no_miscalibration() -> None:
    frame = pl.DataFrame({"p": [0.25] * 8, "y": [1, 0, 0, 0, 1, 0, 0, 0]})
    row = corp_decomposition(frame, confidence="p", correct="y").row(0, named=True)
    assert row["miscalibration"] == 0.0 and row["discrimination"] == 0.0
    assert row["mean_score"] == pytest.approx(0.1875) and row["uncertainty"] == 0.1875


def test_degenerate_inputs() -> None:
    one = corp_decomposition(pl.DataFrame({"p": [0.7], "y": [1]}), confidence="p", correct="y")
    assert one.row(0) == (1, 1.0, pytest.approx(0.09), pytest.approx(0.09), 0.0, 0.0)
    single_class = pl.DataFrame({"p": [0.2, 0.6, 0.9], "y": [0, 0, 0]})
    row = corp_decomposition(single_class, confidence="p", correct="y", score="log").row(0)
    assert row[4:] == (0.0, 0.0)  # no discrimination, no uncertainty
    empty = pl.DataFrame(schema={"g": pl.String, "p": pl.Float64, "y": pl.Boolean})
    assert corp_decomposition(empty, confidence="p", correct="y", by="g").height == 0
    assert corp_decomposition(empty, confidence="p", correct="y").rows() == [
        (0, 0.0, None, None, None, None)
    ]
    assert corp_reliability(empty, confidence="p", correct="y", by="g").height == 0


def test_bad_input() -> None:
    frame = pl.DataFrame({"m": ["a", "b", "b"], "p": [0.5, 0.2, 1.2], "y": [1, 0, 1]})
    with pytest.raises(cf.DataError, match=r"'p': 1 of 3 rows.*m='b'"):
        corp_decomposition(frame, confidence="p", correct="y", by="m")
    frame = pl.DataFrame({"p": [0.5, 0.2], "y": [1, 3]})
    with pytest.raises(cf.DataError, match=r"'y'.*0/1"):
        corp_reliability(frame, confidence="p", correct="y")
    frame = pl.DataFrame({"p": [0.5, 0.2], "y": [1, 0], "w": [1.0, -1.0]})
    with pytest.raises(cf.DataError, match="'w'"):
        corp_decomposition(frame, confidence="p", correct="y", weight="w")
    with pytest.raises(cf.ArgumentError, match="score"):
        corp_decomposition(frame, confidence="p", correct="y", score="crps")  # type: ignore[arg-type]
    with pytest.raises(cf.TableError, match="column not found"):
        corp_decomposition(frame, confidence="q", correct="y")


def test_boolean_confidence_is_refused() -> None:
    frame = pl.DataFrame({"p": [True, False], "y": [1, 0]})
    with pytest.raises(cf.TableError, match="Boolean"):
        corp_decomposition(frame, confidence="p", correct="y")
