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
    beta: tuple[float, float] | None = None,
    on_edges: tuple[float, int | Sequence[int]] | None = None,
    accuracy: float = 0.6,
    power: float | None = None,
    shift: float | None = None,
    models: Sequence[object] = ("a", "b"),
    tasks: Sequence[object] | None = None,
    weight: tuple[float, float] | None = None,
    items: int | None = None,
    split_every: int | None = None,
) -> pl.DataFrame:
    """Random predictions, the one generator of the tests: ``confidence``, ``correct``, ``model``.

    Drawn in this order from ``default_rng(seed)`` (an option left out draws nothing):

    - ``confidence``: uniform in [low, high), or Beta(a, b) with ``beta=(a, b)``;
      ``on_edges=(fraction, M)`` moves that fraction of the rows onto the exact bin edges
      k/M (0.0 and 1.0 among them; a sequence of M: each row's M drawn from it);
    - ``correct``: true with probability ``accuracy``, or ``confidence ** power`` with
      ``power=`` (power > 1: overconfident, < 1: underconfident, 1: calibrated), or
      ``confidence + shift`` clipped to [0, 1] with ``shift=`` (< 0: overconfident);
    - ``model`` drawn from ``models``; ``task`` from ``tasks``; a weight ``w`` uniform in
      ``weight=(low, high)``;
    - ``item`` = row number modulo ``items`` (an item id shared across models);
      ``split`` = ``"eval"`` on every ``split_every``-th row, else ``"fit"``.
    """
    rng = np.random.default_rng(seed)
    p = rng.beta(*beta, n) if beta is not None else rng.uniform(low, high, n)
    if on_edges is not None:
        fraction, bins = on_edges
        moved = rng.uniform(0, 1, n) < fraction
        m = rng.choice(np.asarray(bins), n) if isinstance(bins, Sequence) else bins
        p = np.where(moved, rng.integers(0, m + 1, n) / m, p)
    if power is not None:
        truth: Any = p**power
    elif shift is not None:
        truth = np.clip(p + shift, 0, 1)
    else:
        truth = accuracy
    columns: dict[str, Any] = {"confidence": p, "correct": rng.uniform(0, 1, n) < truth}
    columns["model"] = rng.choice(np.asarray(models), n)
    if tasks is not None:
        columns["task"] = rng.choice(np.asarray(tasks), n)
    if weight is not None:
        columns["w"] = rng.uniform(*weight, n)
    if items is not None:
        columns["item"] = np.arange(n) % items
    if split_every is not None:
        columns["split"] = np.where(np.arange(n) % split_every == 0, "eval", "fit")
    return pl.DataFrame(columns)


def paired_rows(tasks: int, n: int, seed: int, power_b: float = 1.0) -> pl.DataFrame:
    """Models ``a`` and ``b`` on the same ``n`` items per task: ``task``, ``model``, ``item``, …

    Each item has a difficulty ~ Beta(2, 2) shared by both models; a model's confidence is
    it plus N(0, 0.1²) noise (clipped to [0.01, 0.99]), and its outcome ~ Bernoulli(p) for
    ``a``, Bernoulli(p ** power_b) for ``b`` (``power_b`` = 1: equally good models).
    """
    rng = np.random.default_rng(seed)
    frames = []
    for task in range(tasks):
        difficulty = rng.beta(2, 2, n)
        for name, power in (("a", 1.0), ("b", power_b)):
            p = np.clip(difficulty + rng.normal(0, 0.1, n), 0.01, 0.99)
            frames.append(
                pl.DataFrame(
                    {
                        "task": task,
                        "model": name,
                        "item": np.arange(n),
                        "confidence": p,
                        "correct": rng.random(n) < p**power,
                    }
                )
            )
    return pl.concat(frames)


def option_rows(
    seed: int, *, questions: int = 200, options: int = 4, models: int = 2, temperature: float = 2.0
) -> pl.DataFrame:
    """Random option log-likelihoods: ``model``, ``question``, ``option``, ``loglik``, ``is_gold``.

    Each model answers the same ``questions`` with ``options`` options each; the options'
    scores are N(0, 2²), ``loglik`` their log-softmax within the question (≤ 0), and the
    gold option is drawn from softmax(score / temperature), so a model is overconfident
    for ``temperature`` > 1 (a temperature fit finds it).
    """
    rng = np.random.default_rng(seed)
    n = questions * options * models
    scores = (rng.normal(size=n) * 2.0).reshape(-1, options)
    probs = np.exp(scores / temperature)
    probs /= probs.sum(axis=1, keepdims=True)
    gold = (rng.uniform(size=(questions * models, 1)) > probs.cumsum(axis=1)).sum(axis=1)
    top = scores.max(axis=1, keepdims=True)
    loglik = (scores - top - np.log(np.exp(scores - top).sum(axis=1, keepdims=True))).ravel()
    option = np.tile(np.arange(options), questions * models)
    return pl.DataFrame(
        {
            "model": np.repeat([f"m{i}" for i in range(models)], questions * options),
            "question": np.tile(np.repeat(np.arange(questions), options), models),
            "option": option,
            "loglik": loglik,
            "is_gold": option == np.repeat(gold, options),
        }
    )


def loss_rows(
    seed: int,
    n: int,
    *,
    models: Sequence[object] = ("a", "b"),
    tasks: Sequence[object] | None = None,
    tokens: tuple[int, int] = (5, 400),
) -> pl.DataFrame:
    """Random document losses: ``model``, ``nll``, ``tokens``, ``bytes``, ``words``[, ``task``].

    ``tokens`` uniform in [low, high) per document, ``nll`` = tokens · Gamma(4, 0.6) nats,
    ``bytes`` a whole 3–5 per token, ``words`` a whole 0.6–0.9 per token; ``model`` and
    ``task`` drawn from ``models`` and ``tasks``.
    """
    rng = np.random.default_rng(seed)
    count = rng.integers(*tokens, n)
    columns: dict[str, Any] = {
        "model": rng.choice(np.asarray(models), n),
        "nll": count * rng.gamma(4, 0.6, n),
        "tokens": count,
        "bytes": np.floor(count * rng.uniform(3, 5, n)).astype(np.int64),
        "words": np.floor(count * rng.uniform(0.6, 0.9, n)).astype(np.int64),
    }
    if tasks is not None:
        columns["task"] = rng.choice(np.asarray(tasks), n)
    return pl.DataFrame(columns)


def class_probabilities(
    seed: int, n: int, classes: int, *, temperature: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """Random multi-class predictions: an (n, classes) probability array and the labels.

    Probabilities are softmax(logits) with logits ~ N(0, 2²); labels are drawn from
    softmax(logits / temperature), so the model is overconfident for ``temperature`` > 1.
    """
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, (n, classes))
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    tempered = np.exp(logits / temperature)
    tempered /= tempered.sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(classes, p=row) for row in tempered])
    return probs, labels


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
    """Equal shapes; floats within ``rel``/``abs`` (NaN equal to NaN, null to null),
    everything else equal.

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
