"""Binning conventions of calib_frames.binning.Binning.

Expected bins come from an independent reference: the edges are Python doubles and the
rule is a pair of exact comparisons (``bisect`` on the edge list), never the code under
test. Left-closed: the last edge ``e_k <= p``; right-closed: the first edge ``p <= e_{k+1}``;
both clipped to the M bins so that the outermost edges are closed.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Literal

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calib_frames as cf
from calib_frames import Binning, CalibrationInputError

Closed = Literal["left", "right"]
BIN_COUNTS = (10, 15, 22, 49, 100)
CLOSED: tuple[Closed, ...] = ("left", "right")
DETERMINISTIC = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# -- reference --------------------------------------------------------------------------


def exact_edges(m: int) -> list[float]:
    """The doubles nearest to k/m, computed from exact rationals."""
    return [float(Fraction(k, m)) for k in range(m + 1)]


def reference_bin(p: float, edges: Sequence[float], closed: Closed) -> int:
    """Bin of ``p`` by exact comparison with ``edges`` (outer edges closed)."""
    m = len(edges) - 1
    if closed == "left":
        index = bisect.bisect_right(edges, p) - 1  # last edge <= p
    else:
        index = bisect.bisect_left(edges, p) - 1  # first upper edge >= p
    return min(max(index, 0), m - 1)


def assigned(values: Sequence[float], binning: Binning) -> list[int]:
    """Bins that the code under test assigns to ``values``."""
    frame = pl.DataFrame({"p": list(values)}, schema={"p": pl.Float64})
    return frame.select(binning.assign(pl.col("p")))["p"].to_list()


def edge_and_neighbours(edges: Sequence[float]) -> list[float]:
    """Every edge and the doubles just below and above it, inside [edges[0], edges[-1]]."""
    values: list[float] = []
    for edge in edges:
        values += [
            float(np.nextafter(edge, -np.inf)),
            edge,
            float(np.nextafter(edge, np.inf)),
        ]
    return [v for v in values if edges[0] <= v <= edges[-1]]


def predictions(values: Sequence[float], correct: Sequence[bool] | None = None) -> pl.DataFrame:
    if correct is None:
        correct = [i % 2 == 0 for i in range(len(values))]
    return pl.DataFrame(
        {"confidence": list(values), "correct": list(correct)},
        schema={"confidence": pl.Float64, "correct": pl.Boolean},
    )


# -- the reference itself ---------------------------------------------------------------


def test_reference_agrees_with_fraction_comparisons() -> None:
    # The bisect rule is the same as comparing exact rationals of p and the edges.
    for m in BIN_COUNTS:
        edges = exact_edges(m)
        fraction_edges = [Fraction(e) for e in edges]
        for p in edge_and_neighbours(edges):
            exact_p = Fraction(p)
            left = max(k for k in range(m) if fraction_edges[k] <= exact_p)
            right = min(k for k in range(m) if exact_p <= fraction_edges[k + 1])
            assert reference_bin(p, edges, "left") == left
            assert reference_bin(p, edges, "right") == right


def test_naive_binning_misplaces_edge_values() -> None:
    # np.linspace edges and floor(p*M) disagree with the exact rule somewhere, so the
    # edge tests below can tell a naive implementation from a correct one.
    linspace_wrong: dict[int, list[int]] = {}
    floor_wrong: dict[int, list[int]] = {}
    for m in BIN_COUNTS:
        edges = exact_edges(m)
        linspace = np.linspace(0.0, 1.0, m + 1)
        for k in range(m + 1):
            p = k / m
            want = reference_bin(p, edges, "left")
            by_linspace = min(int(np.searchsorted(linspace, p, side="right")) - 1, m - 1)
            by_floor = min(math.floor(p * m), m - 1)
            if by_linspace != want:
                linspace_wrong.setdefault(m, []).append(k)
            if by_floor != want:
                floor_wrong.setdefault(m, []).append(k)
    assert 3 in linspace_wrong[10]  # 3/10 = 0.3 < 0.30000000000000004
    assert 1 in floor_wrong[49]  # 49 * (1/49) = 0.9999999999999999
    assert sum(map(len, linspace_wrong.values())) > 5
    assert sum(map(len, floor_wrong.values())) > 5
    # division by the bin width misplaces 0.3 as well
    assert math.floor(0.3 / 0.1) == 2


# -- equal-width bins -------------------------------------------------------------------


@pytest.mark.parametrize("m", BIN_COUNTS)
def test_uniform_edge_values_left_closed(m: int) -> None:
    values = [k / m for k in range(m + 1)]
    assert assigned(values, Binning.uniform(m)) == [min(k, m - 1) for k in range(m + 1)]


@pytest.mark.parametrize("m", BIN_COUNTS)
def test_uniform_edge_values_right_closed(m: int) -> None:
    values = [k / m for k in range(m + 1)]
    got = assigned(values, Binning.uniform(m, closed="right"))
    assert got == [max(k - 1, 0) for k in range(m + 1)]


@pytest.mark.parametrize("m", BIN_COUNTS)
@pytest.mark.parametrize("closed", CLOSED)
def test_uniform_neighbours_of_edges(m: int, closed: Closed) -> None:
    edges = exact_edges(m)
    values = edge_and_neighbours(edges)
    want = [reference_bin(p, edges, closed) for p in values]
    assert assigned(values, Binning.uniform(m, closed=closed)) == want
    # the neighbours really sit on either side of the rule
    below = [float(np.nextafter(k / m, -np.inf)) for k in range(1, m)]
    above = [float(np.nextafter(k / m, np.inf)) for k in range(1, m)]
    assert assigned(below, Binning.uniform(m, closed=closed)) == list(range(m - 1))
    assert assigned(above, Binning.uniform(m, closed=closed)) == list(range(1, m))


@pytest.mark.parametrize("m", BIN_COUNTS)
def test_default_bins_argument_is_uniform_left_closed(m: int) -> None:
    # bin_statistics(bins=m) counts the edge values exactly where the rule says
    values = [k / m for k in range(m + 1)]
    stats = cf.bin_statistics(predictions(values), bins=m)
    want = Counter(reference_bin(p, exact_edges(m), "left") for p in values)
    assert stats["count"].to_list() == [want.get(b, 0) for b in range(m)]
    assert stats["bin_lower"].to_list() == exact_edges(m)[:-1]
    assert stats["bin_upper"].to_list() == exact_edges(m)[1:]


@DETERMINISTIC
@given(
    m=st.integers(1, 200),
    closed=st.sampled_from(CLOSED),
    data=st.data(),
)
def test_uniform_matches_reference_on_random_values(
    m: int, closed: Closed, data: st.DataObject
) -> None:
    edges = exact_edges(m)
    near_edges = st.sampled_from(edge_and_neighbours(edges))
    anywhere = st.floats(0.0, 1.0, allow_nan=False)
    values = data.draw(st.lists(st.one_of(near_edges, anywhere), min_size=1, max_size=60))
    want = [reference_bin(p, edges, closed) for p in values]
    assert assigned(values, Binning.uniform(m, closed=closed)) == want


@pytest.mark.parametrize("m", (1, 2, 3, *BIN_COUNTS))
@pytest.mark.parametrize("closed", CLOSED)
def test_zero_and_one_land_in_first_and_last_bin(m: int, closed: Closed) -> None:
    assert assigned([0.0, 1.0], Binning.uniform(m, closed=closed)) == [0, m - 1]
    edges = [0.0, 0.05, 0.5, 0.95, 1.0]
    assert assigned([0.0, 1.0], Binning.edges(edges, closed=closed)) == [0, 3]
    stats = cf.bin_statistics(predictions([0.0, 1.0]), bins=Binning.uniform(m, closed=closed))
    counts = stats["count"].to_list()
    assert len(counts) == m
    assert sum(counts) == 2
    assert counts[0] >= 1
    assert counts[-1] >= 1


# -- custom edges -----------------------------------------------------------------------

CUSTOM_EDGES = (
    [0.0, 0.1, 0.25, 0.3, 0.7, 1.0],
    [0.0, 0.4, 0.6, 1.0],
    [0.0, 1 / 3, 2 / 3, 1.0],
    [0.2, 0.35, 0.5, 0.8],  # not covering [0, 1]
)


@pytest.mark.parametrize("edges", CUSTOM_EDGES)
@pytest.mark.parametrize("closed", CLOSED)
def test_custom_edges_on_and_next_to_edges(edges: list[float], closed: Closed) -> None:
    values = edge_and_neighbours(edges)
    want = [reference_bin(p, edges, closed) for p in values]
    binning = Binning.edges(edges, closed=closed)
    assert assigned(values, binning) == want
    stats = cf.bin_statistics(predictions(values), bins=binning)
    counts = Counter(want)
    assert stats["count"].to_list() == [counts.get(b, 0) for b in range(len(edges) - 1)]
    assert stats["bin_lower"].to_list() == edges[:-1]
    assert stats["bin_upper"].to_list() == edges[1:]


@pytest.mark.parametrize("edges", CUSTOM_EDGES)
def test_bins_as_a_list_means_left_closed_edges(edges: list[float]) -> None:
    values = edge_and_neighbours(edges)
    stats = cf.bin_statistics(predictions(values), bins=edges)
    counts = Counter(reference_bin(p, edges, "left") for p in values)
    assert stats["count"].to_list() == [counts.get(b, 0) for b in range(len(edges) - 1)]
    # the same through a numpy array
    from_array = cf.bin_statistics(predictions(values), bins=np.asarray(edges))  # type: ignore[arg-type]
    assert from_array["count"].to_list() == stats["count"].to_list()


@DETERMINISTIC
@given(
    raw=st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2, max_size=12, unique=True),
    closed=st.sampled_from(CLOSED),
    data=st.data(),
)
def test_custom_edges_match_reference(
    raw: list[float], closed: Closed, data: st.DataObject
) -> None:
    edges = sorted(raw)
    near_edges = st.sampled_from(edge_and_neighbours(edges))
    inside = st.floats(edges[0], edges[-1], allow_nan=False)
    values = data.draw(st.lists(st.one_of(near_edges, inside), min_size=1, max_size=40))
    want = [reference_bin(p, edges, closed) for p in values]
    assert assigned(values, Binning.edges(edges, closed=closed)) == want


def test_values_outside_custom_edges_are_rejected() -> None:
    with pytest.raises(CalibrationInputError, match="confidence"):
        cf.bin_statistics(predictions([0.5, 0.1]), bins=[0.2, 0.5, 0.8])
    with pytest.raises(CalibrationInputError, match="confidence"):
        cf.bin_statistics(predictions([0.5, 0.9]), bins=[0.2, 0.5, 0.8])


# -- equal-mass bins --------------------------------------------------------------------


def reference_quantile_bins(values: Sequence[float], m: int) -> list[int]:
    """floor(r * m / n) with r = number of strictly smaller values, in integers."""
    ordered = sorted(values)
    n = len(values)
    return [bisect.bisect_left(ordered, p) * m // n for p in values]


def quantile_frame(seed: int, groups: dict[str, int], *, ties: bool) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for offset, (name, n) in enumerate(groups.items()):
        if ties:
            values = rng.choice([0.1, 0.25, 0.5, 0.5001, 0.9], size=n)
        else:
            # groups live in different ranges, so ranking over the whole frame would differ
            values = offset / len(groups) + rng.random(n) / len(groups)
        parts.append(
            pl.DataFrame(
                {
                    "g": [name] * n,
                    "confidence": values,
                    "correct": rng.random(n) < values,
                }
            )
        )
    return pl.concat(parts)


@pytest.mark.parametrize("m", (1, 4, 10, 15))
def test_quantile_sizes_without_ties(m: int) -> None:
    groups = {"a": 97, "b": 250, "c": 31}
    frame = quantile_frame(1, groups, ties=False)
    stats = cf.bin_statistics(frame, by="g", bins=Binning.quantile(m))
    for name, n in groups.items():
        group = stats.filter(pl.col("g") == name).sort("bin")
        counts = group["count"].to_list()
        assert len(counts) == m
        assert sum(counts) == n
        assert all(n // m <= c <= -(-n // m) for c in counts), counts
        # bounds are the smallest and largest confidence seen in each bin
        values = sorted(frame.filter(pl.col("g") == name)["confidence"].to_list())
        starts = np.cumsum([0, *counts[:-1]])
        lowers = [values[s] if c else None for s, c in zip(starts, counts, strict=True)]
        uppers = [values[s + c - 1] if c else None for s, c in zip(starts, counts, strict=True)]
        assert group["bin_lower"].to_list() == lowers
        assert group["bin_upper"].to_list() == uppers


@pytest.mark.parametrize("m", (2, 3, 5, 10))
def test_quantile_ties_never_split(m: int) -> None:
    groups = {"a": 40, "b": 7, "c": 123}
    frame = quantile_frame(2, groups, ties=True)
    rows = frame.with_columns(bin=Binning.quantile(m).assign(pl.col("confidence"), keys=["g"]))
    for name in groups:
        group = rows.filter(pl.col("g") == name)
        values = group["confidence"].to_list()
        bins = group["bin"].to_list()
        assert bins == reference_quantile_bins(values, m)
        bins_per_value: dict[float, set[int]] = {}
        for value, b in zip(values, bins, strict=True):
            bins_per_value.setdefault(value, set()).add(b)
        assert all(len(s) == 1 for s in bins_per_value.values())
        # larger confidences never go to a lower bin
        pairs = sorted(zip(values, bins, strict=True))
        assert [b for _, b in pairs] == sorted(b for _, b in pairs)
    stats = cf.bin_statistics(frame, by="g", bins=Binning.quantile(m))
    for name in groups:
        values = rows.filter(pl.col("g") == name)["confidence"].to_list()
        want = Counter(reference_quantile_bins(values, m))
        got = stats.filter(pl.col("g") == name).sort("bin")["count"].to_list()
        assert got == [want.get(b, 0) for b in range(m)]


def test_quantile_ranks_within_each_group() -> None:
    m = 5
    groups = {"low": 50, "high": 50}
    frame = quantile_frame(3, groups, ties=False)
    grouped = cf.bin_statistics(frame, by="g", bins=Binning.quantile(m))
    # per group: every bin holds 10 rows
    assert grouped["count"].to_list() == [10] * (2 * m)
    # over the whole frame the low group fills the lower half of the bins
    whole = frame.with_columns(bin=Binning.quantile(m).assign(pl.col("confidence")))
    assert whole.filter(pl.col("g") == "low")["bin"].max() == 2
    assert whole.filter(pl.col("g") == "high")["bin"].min() == 2
    # and the per-group assignment matches the reference computed group by group
    per_group = frame.with_columns(bin=Binning.quantile(m).assign(pl.col("confidence"), keys=["g"]))
    for name in groups:
        group = per_group.filter(pl.col("g") == name)
        assert group["bin"].to_list() == reference_quantile_bins(group["confidence"].to_list(), m)


@DETERMINISTIC
@given(
    values=st.lists(
        st.one_of(st.sampled_from([0.0, 0.3, 0.5, 1.0]), st.floats(0.0, 1.0, allow_nan=False)),
        min_size=1,
        max_size=80,
    ),
    m=st.integers(1, 12),
)
def test_quantile_matches_rank_reference(values: list[float], m: int) -> None:
    assert assigned(values, Binning.quantile(m)) == reference_quantile_bins(values, m)


# -- invalid construction ---------------------------------------------------------------


@pytest.mark.parametrize(
    "edges",
    ([0.0, 0.5, 0.5, 1.0], [0.0, 0.6, 0.4, 1.0], [1.0, 0.0], [0.5], [], [0.0, float("nan"), 1.0]),
)
def test_invalid_edges_raise(edges: list[float]) -> None:
    with pytest.raises(ValueError, match="edges"):
        Binning.edges(edges)
    with pytest.raises(ValueError, match="edges"):
        cf.bin_statistics(predictions([0.5]), bins=edges)


@pytest.mark.parametrize("make", (Binning.uniform, Binning.quantile))
def test_zero_bins_raise(make: Callable[[int], Binning]) -> None:
    with pytest.raises(ValueError, match="n_bins"):
        make(0)
    with pytest.raises(ValueError, match="n_bins"):
        make(-3)


def test_bad_bin_arguments_raise() -> None:
    with pytest.raises(ValueError, match="closed"):
        Binning.uniform(10, closed="middle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="closed"):
        Binning.edges([0.0, 1.0], closed="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"bins= takes an integer >= 1"):
        cf.bin_statistics(predictions([0.5]), bins=0)
    with pytest.raises(TypeError, match="n_bins"):
        Binning.uniform(2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        cf.bin_statistics(predictions([0.5]), bins=True)


# -- worked example ---------------------------------------------------------------------


def test_worked_example_three_predictions() -> None:
    # A (0.80, correct), B (0.50, correct), C (0.55, wrong); bins (0, .4], (.4, .6], (.6, 1].
    # Bin (.4, .6]: B and C, mean confidence 0.525, accuracy 0.5, gap 0.025, weight 2/3.
    # Bin (.6, 1]:  A, confidence 0.8, accuracy 1.0, gap 0.2, weight 1/3.
    # ECE = 2/3 * 0.025 + 1/3 * 0.2 = 1/60 + 1/15 = 1/12; MCE = 0.2.
    frame = predictions([0.80, 0.50, 0.55], [True, True, False])
    binning = Binning.edges([0, 0.4, 0.6, 1.0], closed="right")
    metrics = cf.calibration_metrics(frame, bins=binning)
    assert metrics["ece"].item() == pytest.approx(1 / 12, rel=1e-12)
    assert metrics["mce"].item() == pytest.approx(0.2, rel=1e-12)  # the textbook MCE (32.20)
    assert metrics["mce_guarded"].item() is None  # no bin of 10 predictions
    seeds = cf.CalibrationReport.from_predictions([0.80, 0.50, 0.55], [1, 1, 0], binning)
    assert seeds.mce == pytest.approx(0.2, rel=1e-12)
    assert metrics["populated_bins"].item() == 2
    table = cf.reliability_table(frame, bins=binning)
    assert table["count"].to_list() == [0, 2, 1]
    assert table["mean_confidence"].to_list()[0] is None  # empty bin: null, not 0.0
    assert table["mean_confidence"].to_list()[1:] == pytest.approx([0.525, 0.8], rel=1e-12)
    assert table["accuracy"].to_list() == [None, 0.5, 1.0]


# -- contains: bin membership from the exact edges ----------------------------------------


@pytest.mark.parametrize(
    "binning",
    [
        *(Binning.uniform(m, closed=c) for m in (1, 10, 49) for c in CLOSED),
        *(Binning.edges([0.0, 0.3, 0.5, 0.9, 1.0], closed=c) for c in CLOSED),
        Binning.edges([0.2, 0.7]),
    ],
    ids=repr,
)
def test_contains_is_the_reference_bin_on_and_next_to_every_edge(binning: Binning) -> None:
    edges = binning.edge_values()
    assert edges is not None
    rng = np.random.default_rng(binning.n_bins)
    values = [*edge_and_neighbours(edges), *rng.uniform(edges[0], edges[-1], 200).tolist()]
    frame = pl.DataFrame({"p": values})
    for k in range(binning.n_bins):
        inside = binning.contains(pl.col("p"), k)
        got = [True] * len(values) if inside is None else frame.select(inside).to_series()
        expected = [reference_bin(v, edges, binning.closed) == k for v in values]
        assert list(got) == expected, k


def test_contains_of_equal_mass_bins_ranks_in_the_context() -> None:
    frame = pl.DataFrame({"p": [0.9, 0.1, 0.5, 0.7]})
    binning = Binning.quantile(2)
    inside = binning.contains(pl.col("p"), 1)
    assert inside is not None
    assert frame.select(inside).to_series().to_list() == [True, False, False, True]
