"""Shared test data and comparisons, imported by the layer folders (``pythonpath = tests``).

Fixtures over these live in ``tests/conftest.py``; plain functions stay here so that a
test module can call them with its own parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
"""The repository root."""
DATA = ROOT / "data"
"""The shipped data folder."""
NIAMEY = DATA / "precip_niamey_2016.csv"
NIAMEY_FORECASTERS = ("Logistic", "EMOS", "ENS", "EPC")
"""The four probability-of-precipitation forecasters of the Niamey 2016 data."""


def niamey_wide() -> pl.DataFrame:
    """The Niamey forecasts as shipped: ``date``, ``obs`` and one column per forecaster."""
    return pl.read_csv(NIAMEY)


def niamey_long() -> pl.DataFrame:
    """The Niamey forecasts long: ``date``, ``obs``, ``forecast`` (the forecaster), ``p``."""
    return niamey_wide().unpivot(
        index=["date", "obs"],
        on=list(NIAMEY_FORECASTERS),
        variable_name="forecast",
        value_name="p",
    )


def prediction_rows(
    seed: int,
    n: int,
    *,
    low: float = 0.0,
    high: float = 1.0,
    accuracy: float = 0.6,
    models: Sequence[str] = ("a", "b"),
    items: int | None = None,
    split_every: int | None = None,
) -> pl.DataFrame:
    """Random predictions: uniform confidences in [low, high), correct with ``accuracy``.

    ``model`` drawn from ``models``; ``item`` = row number modulo ``items`` (a shared item id
    across models); ``split`` = ``"test"`` on every ``split_every``-th row, else ``"fit"``.
    """
    rng = np.random.default_rng(seed)
    columns: dict[str, Any] = {
        "confidence": rng.uniform(low, high, n),
        "correct": rng.uniform(0, 1, n) < accuracy,
        "model": rng.choice(list(models), n),
    }
    if items is not None:
        columns["item"] = np.arange(n) % items
    if split_every is not None:
        columns["split"] = np.where(np.arange(n) % split_every == 0, "test", "fit")
    return pl.DataFrame(columns)


def exact_bin_index(p: np.ndarray, n_bins: int, closed: str = "left") -> np.ndarray:
    """Bin index with exact edges k/M by comparison (the reference for the engine's bins).

    Left-closed ``[k/M, (k+1)/M)`` with the last bin closed at 1.0, or right-closed
    ``(k/M, (k+1)/M]`` with the first closed at 0.0.
    """
    edges = np.array([k / n_bins for k in range(n_bins + 1)])
    side: Any = "right" if closed == "left" else "left"
    return np.clip(np.searchsorted(edges, p, side=side) - 1, 0, n_bins - 1)


def assert_frames_close(
    left: pl.DataFrame,
    right: pl.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    rel: float = 1e-12,
    abs: float = 1e-15,
) -> None:
    """Equal shapes; floats within ``rel``/``abs`` (NaN equal to NaN, null to null), everything
    else equal.

    ``columns`` restricts the comparison (default: every column, and equal column names).
    """
    if columns is None:
        assert left.columns == right.columns
        columns = left.columns
    assert left.height == right.height
    for name in columns:
        if left[name].dtype.is_float() or right[name].dtype.is_float():
            nulls = left[name].is_null()
            assert nulls.to_list() == right[name].is_null().to_list(), name
            assert left[name].filter(~nulls).to_list() == pytest.approx(
                right[name].filter(~nulls).to_list(), rel=rel, abs=abs, nan_ok=True
            ), name
        else:
            assert left[name].to_list() == right[name].to_list(), name
