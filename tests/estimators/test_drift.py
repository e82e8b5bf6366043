"""Calibration over time: simulated nights with a known shift, per-batch figures, batch order."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from factories import assert_frames_close

import calib_frames as cf
from calib_frames.estimators import calibration_change, metrics_over_batches
from calib_frames.estimators.bootstrap import bootstrap_bin_statistics
from calib_frames.exceptions import ArgumentError, DataError, ReadError, TableError

BINNING = cf.Binning.uniform(10)


def simulate_nights(
    folder: Path,
    *,
    models: int,
    nights: int,
    shift_night: int,
    rows: int = 1200,
    shift: float = 0.12,
    seed: int = 0,
) -> list[Path]:
    """One statistics file per night; model ``m0`` turns overconfident from ``shift_night``.

    Every model has its own steady miscalibration (confidence = truth + an offset of
    its own); ``m0`` adds ``shift`` to its confidences from night ``shift_night`` (1-based)
    on. Nights are written out of order, their ids are digests, their times say the order.
    """
    rng = np.random.default_rng(seed)
    offsets = rng.uniform(-0.05, 0.05, models)
    offsets[0] = 0.0  # m0 is calibrated until its shift
    paths = []
    for night in rng.permutation(nights) + 1:
        truth = rng.uniform(0.5, 0.95, (models, rows))
        shown = truth + offsets[:, None]
        if night >= shift_night:
            shown[0] += shift
        frame = pl.DataFrame(
            {
                "model": np.repeat([f"m{i}" for i in range(models)], rows),
                "task": "qa",
                "confidence": np.clip(shown, 0.0, 1.0).ravel(),
                "correct": (rng.random((models, rows)) < truth).ravel(),
            }
        )
        path = folder / f"night{night:02d}.parquet"
        cf.write_statistics(
            cf.bin_statistics(frame, by=["model", "task"], bins=BINNING),
            path,
            batch_id=f"{rng.integers(1 << 40):010x}",
            batch_time=dt.datetime(2026, 10, 1, 2) + dt.timedelta(days=int(night)),
            binning=BINNING,
        )
        paths.append(path)
    return paths


def scan(stored: cf.storage.StoredStatistics, *, replicates: int, seed: int) -> pl.DataFrame:
    """Every night from the second against its earlier nights: one row per night × model."""
    nights = []
    for position, batch in enumerate(stored.batch_order[1:], start=2):
        change = calibration_change(stored, batch=batch, replicates=replicates, seed=seed)
        nights.append(change.with_columns(pl.lit(position).alias("night")))
    return pl.concat(nights)


def false_positives(
    tmp: Path, *, sims: int, models: int, nights: int, replicates: int
) -> dict[str, Any]:
    """Rates over the unchanged models of ``sims`` simulations, and where m0 is first found."""
    rows = []
    for sim in range(sims):
        folder = tmp / f"sim{sim}"
        folder.mkdir()
        stored = cf.read_statistics(
            *simulate_nights(folder, models=models, nights=nights, shift_night=7, seed=sim)
        )
        rows.append(scan(stored, replicates=replicates, seed=sim).with_columns(sim=pl.lit(sim)))
    table = pl.concat(rows)
    unchanged = table.filter(pl.col("model") != "m0")
    found = (
        table.filter(pl.col("model") == "m0", pl.col("changed"))
        .group_by("sim")
        .agg(pl.col("night").min())
    )
    per_night = unchanged.group_by("sim", "night").agg(pl.col("changed").any())
    return {
        **{
            m: float((unchanged[f"{m}_p_value"] <= 0.05).mean())
            for m in ("accuracy", "ece", "brier")
        },  # type: ignore[arg-type]
        "tests": float(unchanged.height),
        "holm_nights": float(per_night["changed"].mean()),  # type: ignore[arg-type]
        "nights": float(per_night.height),
        "found_at_7": float((found["night"] == 7).sum()),
        "found_nights": found["night"].sort().to_list(),
    }


def test_per_batch_figures_equal_each_nights_own_file(tmp_path: Path) -> None:
    paths = simulate_nights(tmp_path, models=3, nights=5, shift_night=3, rows=300)
    stored = cf.read_statistics(*paths)
    table = metrics_over_batches(stored, uncertainty=False)
    assert table["batch"].to_list() == sorted(table["batch"].to_list())
    times = table.select("batch_time").unique(maintain_order=True).to_series()
    assert times.is_sorted() and times.null_count() == 0
    for path in paths:
        own = cf.read_statistics(path)
        expected = cf.metrics_from_bin_statistics(own.table)
        got = table.filter(pl.col("batch_id") == own.batches[0]).drop("batch", "batch_time")
        assert_frames_close(got, expected, rel=1e-12, abs=1e-12)


def test_the_shift_is_found_at_its_night_and_not_elsewhere(tmp_path: Path) -> None:
    paths = simulate_nights(tmp_path, models=6, nights=8, shift_night=5)
    stored = cf.read_statistics(*paths)
    nights = scan(stored, replicates=600, seed=1)
    flagged = nights.filter(pl.col("changed"))
    assert flagged.filter(pl.col("model") == "m0")["night"].min() == 5
    first = flagged.filter(pl.col("model") == "m0", pl.col("night") == 5)["verdict"].item()
    assert first.startswith("ECE up 0.1"), first
    # with Holm across the six models an unchanged model is flagged on few nights
    assert flagged.filter(pl.col("model") != "m0").height <= 1
    before = nights.filter(pl.col("model") == "m0", pl.col("night") < 5)
    assert before["verdict"].to_list() == ["no change beyond noise"] * 3


def test_false_positive_rate_over_unchanged_models(tmp_path: Path) -> None:
    # 2 simulations × 8 unchanged models × 9 tested nights = 144 tests per metric; the
    # rate with 20 simulations and 2000 replicates is in calib_frames.estimators.drift
    rates = false_positives(tmp_path, sims=2, models=9, nights=10, replicates=200)
    assert rates["tests"] == 144
    for metric in ("accuracy", "ece", "brier"):
        assert rates[metric] <= 0.12, rates


@pytest.mark.slow
def test_false_positive_rate_measured(tmp_path: Path) -> None:
    rates = false_positives(tmp_path, sims=20, models=21, nights=10, replicates=2000)
    print(rates)
    assert rates["tests"] == 20 * 20 * 9
    for metric in ("accuracy", "ece", "brier"):
        assert 0.02 <= rates[metric] <= 0.08, rates
    assert rates["holm_nights"] <= 0.08
    assert rates["found_at_7"] >= 19


def test_rolling_window_and_named_batch(tmp_path: Path) -> None:
    stored = cf.read_statistics(*simulate_nights(tmp_path, models=2, nights=6, shift_night=9))
    window = metrics_over_batches(stored, last=3, uncertainty=False)
    assert window["batch_id"].unique(maintain_order=True).to_list() == stored.batch_order[-3:]
    change = calibration_change(stored, last=3, replicates=50)
    assert change["baseline_batches"].to_list() == [2, 2]
    named = calibration_change(stored, batch=stored.batch_order[2], replicates=50)
    assert named["batch_id"].to_list() == [stored.batch_order[2]] * 2
    assert named["baseline_batches"].to_list() == [2, 2]
    with pytest.raises(ArgumentError, match="first batch"):
        calibration_change(stored, batch=stored.batch_order[0])
    with pytest.raises(ArgumentError, match="not among the 6 batches"):
        calibration_change(stored, batch="nope")
    with pytest.raises(ArgumentError, match="last must be"):
        metrics_over_batches(stored, last=0)
    with pytest.raises(ArgumentError, match="read_statistics"):
        calibration_change(stored.table)  # type: ignore[arg-type]


def test_uncertainty_columns_per_batch(tmp_path: Path) -> None:
    stored = cf.read_statistics(*simulate_nights(tmp_path, models=2, nights=3, shift_night=9))
    table = metrics_over_batches(stored, replicates=100)
    assert table.height == 6
    low, high = pl.col("accuracy_ci_low"), pl.col("accuracy_ci_high")
    assert table.select(((low <= pl.col("accuracy")) & (pl.col("accuracy") <= high)).all()).item()
    assert table.select((pl.col("ece_ci_low") < pl.col("ece_ci_high")).all()).item()
    assert table.select((pl.col("ece_noise_floor") > 0).all()).item()


def test_groups_on_one_side_only_have_words_not_numbers(tmp_path: Path) -> None:
    rows = pl.DataFrame(
        {"model": ["a", "b"] * 50, "confidence": [0.7] * 100, "correct": [1, 0] * 50}
    )
    for night, keep in (("1", ["a", "b"]), ("2", ["a", "c"])):
        part = (
            rows.filter(pl.col("model").is_in(keep))
            if night == "1"
            else rows.with_columns(pl.col("model").replace("b", "c"))
        )
        cf.write_statistics(
            cf.bin_statistics(part, by="model"), tmp_path / f"{night}.parquet",
            batch_id=night, batch_time=f"2026-01-0{night}", binning=BINNING,
        )  # fmt: skip
    change = calibration_change(cf.read_statistics(*tmp_path.glob("*.parquet")), replicates=50)
    verdicts = dict(zip(change["model"], change["verdict"], strict=True))
    assert verdicts == {
        "a": "no change beyond noise",
        "b": "not in this batch",
        "c": "no earlier batch",
    }
    assert change.filter(pl.col("model") != "a")["ece_p_value"].null_count() == 2


def test_batch_order_follows_times_else_the_files(tmp_path: Path) -> None:
    rows = cf.bin_statistics(pl.DataFrame({"confidence": [0.8], "correct": [1]}))
    for name, time in (("z", "2026-01-01"), ("a", "2026-01-03"), ("m", "2026-01-02T00:00+05:00")):
        cf.write_statistics(rows, tmp_path / f"{name}.parquet", batch_id=name, batch_time=time,
                            binning=BINNING)  # fmt: skip
    files = [tmp_path / f"{n}.parquet" for n in ("a", "m", "z")]
    assert cf.read_statistics(*files).batch_order == ["z", "m", "a"]
    merged = tmp_path / "merged.parquet"
    cf.storage.merge_statistics_files(files, merged)
    assert cf.read_statistics(merged).batch_order == ["z", "m", "a"]
    untimed = tmp_path / "old.parquet"
    cf.write_statistics(rows, untimed, batch_id="b", binning=BINNING)
    mixed = cf.read_statistics(files[0], untimed, files[2])
    assert not mixed.timed
    assert mixed.batch_order == ["a", "b", "z"]  # the order read
    table = metrics_over_batches(mixed, uncertainty=False)
    assert table["batch_time"].null_count() == 1


def test_batch_times_are_checked(tmp_path: Path) -> None:
    rows = cf.bin_statistics(pl.DataFrame({"confidence": [0.8], "correct": [1]}))
    with pytest.raises(ArgumentError, match="not an ISO 8601"):
        cf.write_statistics(rows, tmp_path / "x.parquet", batch_id="x", batch_time="monday",
                            binning=BINNING)  # fmt: skip
    for day in ("01", "02"):
        cf.write_statistics(rows, tmp_path / f"{day}.parquet", batch_id="same",
                            batch_time=f"2026-01-{day}", binning=BINNING)  # fmt: skip
    with pytest.raises(TableError, match="two batch times"):
        cf.read_statistics(tmp_path / "01.parquet", tmp_path / "02.parquet")
    edited = tmp_path / "edited.parquet"
    meta = pl.read_parquet_metadata(tmp_path / "01.parquet")
    meta["calib_frames.batch_times"] = '{"same": "not a time"}'
    pl.read_parquet(tmp_path / "01.parquet").write_parquet(edited, metadata=meta)
    with pytest.raises(ReadError, match="recorded batch time is not a time"):
        cf.read_statistics(edited)


def test_bootstrap_rows_draws_that_many_rows() -> None:
    rng = np.random.default_rng(3)
    frame = pl.DataFrame(
        {
            "model": np.repeat(["a", "b"], 500),
            "confidence": rng.uniform(0.5, 1, 1000),
            "correct": rng.random(1000) < 0.7,
        }
    )
    stats = cf.bin_statistics(frame, by="model").with_columns(
        draw=pl.when(pl.col("model") == "a").then(50).otherwise(2000)
    )
    boot = bootstrap_bin_statistics(stats, rows="draw", replicates=200)
    sizes = boot.group_by("model", "replicate").agg(pl.col("count").sum())
    assert sizes.group_by("model").agg(pl.col("count").unique()).sort("model").rows() == [
        ("a", [50]),
        ("b", [2000]),
    ]
    metrics = cf.metrics_from_bin_statistics(boot).group_by("model").agg(pl.col("accuracy").std())
    spread = dict(metrics.rows())
    # the accuracy of 50 rows spreads about √(2000/50) = 6.3 times as much as of 2000
    assert 4.5 < spread["a"] / spread["b"] < 8.5
    with pytest.raises(DataError, match="1 of 2 group"):
        bad = pl.when(pl.col("model") == "a").then(2.5).otherwise(3.0)
        bootstrap_bin_statistics(stats.with_columns(draw=bad), rows="draw")


def test_perplexity_per_batch_from_the_nll_sums(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    for night in range(3):
        preds = pl.DataFrame(
            {
                "model": ["a", "b"] * 20,
                "confidence": rng.uniform(0.5, 1, 40),
                "correct": rng.random(40) < 0.7,
            }
        )
        docs = pl.DataFrame(
            {
                "model": ["a", "b"] * 5,
                "nll": rng.uniform(5, 20, 10),
                "tokens": rng.integers(5, 15, 10),
            }
        )
        batch = {"batch_id": str(night), "batch_time": f"2026-01-0{night + 1}"}
        stats = cf.bin_statistics(preds, by="model")
        cf.write_statistics(stats, tmp_path / f"s{night}.parquet", **batch, binning=BINNING)
        sums = cf.nll_sums(docs, by="model", tokens="tokens")
        cf.write_statistics(sums, tmp_path / f"n{night}.parquet", **batch)
    stored = cf.read_statistics(*tmp_path.glob("s*.parquet"))
    nll = cf.read_statistics(*tmp_path.glob("n*.parquet"))
    table = metrics_over_batches(stored, nll, uncertainty=False)
    expected = cf.perplexity_from_nll_sums(nll.table).sort("batch_id", "model")
    got = table.sort("batch_id", "model")
    assert got["perplexity"].to_list() == pytest.approx(expected["perplexity"].to_list(), rel=1e-12)
    assert got["nll_count"].to_list() == expected["count"].to_list()
    with pytest.raises(TableError, match="NLL sums"):
        metrics_over_batches(nll)
