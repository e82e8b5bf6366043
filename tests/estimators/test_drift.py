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
from calib_frames.estimators.drift import baseline_window
from calib_frames.estimators.intervals import accuracy_interval
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


def simulate_season(
    folder: Path,
    *,
    groups: int = 12,
    nights: int = 30,
    shift_night: int = 20,
    shift: float = 0.12,
    seed: int = 0,
) -> list[Path]:
    """A season of nights: group g0 (m0 · t0) turns overconfident from ``shift_night``.

    Groups are model × task (3 tasks); each has a steady miscalibration of its own and
    800 to 1200 predictions a night; a quarter of the groups (g0 among them) are absent
    on about one night in five (never on the last). Batch ids are digests, their times
    say the order.
    """
    rng = np.random.default_rng(seed)
    offsets = rng.uniform(-0.05, 0.05, groups)
    offsets[0] = 0.0
    paths = []
    for night in range(1, nights + 1):
        sizes = rng.integers(800, 1201, groups)
        gone = rng.random(groups) < 0.2
        present = [i for i in range(groups) if not (i % 4 == 0 and gone[i] and night < nights)]
        frames = []
        for i in present:
            truth = rng.uniform(0.5, 0.95, sizes[i])
            shown = truth + offsets[i] + (shift if i == 0 and night >= shift_night else 0.0)
            frames.append(
                pl.DataFrame({
                    "model": f"m{i // 3}", "task": f"t{i % 3}",
                    "confidence": np.clip(shown, 0.0, 1.0),
                    "correct": rng.random(sizes[i]) < truth,
                })
            )  # fmt: skip
        path = folder / f"night{night:02d}.parquet"
        cf.write_statistics(
            cf.bin_statistics(pl.concat(frames), by=["model", "task"], bins=BINNING), path,
            batch_id=f"{rng.integers(1 << 40):010x}",
            batch_time=dt.datetime(2026, 10, 1, 2) + dt.timedelta(days=night),
            binning=BINNING,
        )  # fmt: skip
        paths.append(path)
    return paths


def season_runs(tmp: Path, *, sims: int, runs: tuple[int, ...]) -> dict[str, Any]:
    """Runs "tonight" on the given nights of ``sims`` seasons (baseline nights 1–7).

    The drift's onset is night 20, or the first night after it on which g0 is present.
    """
    alarms, runs_done, onsets, missed = 0, 0, [], 0
    for sim in range(sims):
        folder = tmp / f"sim{sim}"
        folder.mkdir()
        stored = cf.read_statistics(*simulate_season(folder, seed=sim))
        g0 = (pl.col("model") == "m0") & (pl.col("task") == "t0")
        present = stored.table.filter(g0)["batch_id"].unique().to_list()
        onset = next(b for b in stored.batch_order[19:] if b in present)  # night 20 or after
        for night in runs:
            change = calibration_change(
                stored, baseline=(stored.batch_order[0], stored.batch_order[6]),
                batch=stored.batch_order[night - 1], replicates=20, seed=sim,
            )  # fmt: skip
            alarms += int(change.filter(~g0)["changed"].any())
            runs_done += 1
            drifted = change.filter(g0).row(0, named=True)
            if night >= 20 and drifted["count"] > 0:
                if drifted["changed"]:
                    onsets.append(drifted["onset"] == onset)
                else:
                    missed += 1
    return {
        "runs": runs_done,
        "false_alarm_runs": alarms,
        "false_alarm_rate": alarms / runs_done,
        "found": len(onsets),
        "onset_right": sum(onsets),
        "missed": missed,
    }


def test_the_drift_is_found_with_its_onset_and_nothing_else(tmp_path: Path) -> None:
    stored = cf.read_statistics(*simulate_season(tmp_path, seed=3))
    window = (stored.batch_order[0], stored.batch_order[6])
    for baseline, tested in ((window, 23), (None, 29)):  # 7 nights, or the first alone
        change = calibration_change(stored, baseline=baseline, replicates=100)
        assert change["tested_batches"].unique().to_list() == [tested]
        changed = change.filter(pl.col("changed"))
        assert changed.select("model", "task").rows() == [("m0", "t0")]
        row = changed.row(0, named=True)
        if baseline is None:  # a one-night reference is noisier: the onset may be early
            assert 18 <= stored.batch_order.index(row["onset"]) + 1 <= 20
            continue
        assert row["onset"] == stored.batch_order[19]  # night 20
        assert row["onset_time"] == dt.datetime(2026, 10, 21, 2, tzinfo=dt.UTC)
        assert row["verdict"].startswith("ECE up 0.1"), row["verdict"]
        assert row["ece_difference_ci_low"] < row["ece_difference"] < row["ece_difference_ci_high"]
        assert row["ece_p_value"] <= row["ece_p_adjusted"] <= 0.05


def test_a_season_false_alarm_rate_over_stable_groups(tmp_path: Path) -> None:
    # 3 seasons × 2 runs; the measured rate (40 seasons) is in the drift module's docs
    rates = season_runs(tmp_path, sims=3, runs=(25, 30))
    assert rates["runs"] == 6
    assert rates["false_alarm_runs"] <= 1, rates
    assert rates["missed"] == 0 and rates["onset_right"] >= rates["found"] - 1, rates


@pytest.mark.slow
def test_season_false_alarms_measured(tmp_path: Path) -> None:
    rates = season_runs(tmp_path, sims=40, runs=(10, 20, 25, 30))
    print(rates)
    assert rates["runs"] == 160
    assert rates["false_alarm_rate"] <= 0.08, rates
    assert rates["missed"] == 0 and rates["onset_right"] >= 0.9 * rates["found"], rates


def two_nights(weights: bool = False) -> list[pl.DataFrame]:
    """Two nights of rows (the second overconfident by 0.03), or their counted rows."""
    rng = np.random.default_rng(11)
    parts = []
    for night in (0, 1):
        truth = np.round(rng.uniform(0.5, 0.95, 3000), 2)
        frame = pl.DataFrame(
            {"model": "m", "confidence": np.minimum(truth + 0.03 * night, 1.0),
             "correct": rng.random(3000) < truth}
        )  # fmt: skip
        if weights:  # identical rows merged, their number as a weight
            frame = frame.group_by(pl.all()).len("w").with_columns(pl.col("w").cast(pl.Float64))
        parts.append(frame)
    return parts


def write_nights(frames: list[pl.DataFrame], folder: Path, weight: str | None = None) -> None:
    for i, frame in enumerate(frames):
        cf.write_statistics(
            cf.bin_statistics(frame, by="model", weight=weight), folder / f"{i}.parquet",
            batch_id=f"n{i}", batch_time=f"2026-01-0{i + 1}", binning=BINNING,
        )  # fmt: skip


def test_the_closed_forms_against_references_from_the_rows(tmp_path: Path) -> None:
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    from scipy import stats

    base, night = two_nights()
    write_nights([base, night], tmp_path)
    row = calibration_change(cf.read_statistics(tmp_path), replicates=50).row(0, named=True)
    # accuracy: the pooled two-proportion z-test
    counts = [int(night["correct"].sum()), int(base["correct"].sum())]
    _, p = proportion.proportions_ztest(counts, [3000, 3000])
    assert row["accuracy_p_value"] == pytest.approx(p, rel=1e-9)
    # Brier: Welch's z from the rows' squared errors (the table's 4th moments are
    # approximated within cells a bin wide)
    errors = [
        ((f["confidence"] - f["correct"].cast(pl.Float64)) ** 2).to_numpy() for f in (night, base)
    ]
    se = np.sqrt(sum(e.var() / e.size for e in errors))
    z = (errors[0].mean() - errors[1].mean()) / se
    assert row["brier_p_value"] == pytest.approx(2 * stats.norm.sf(abs(z)), rel=0.02)
    # ECE: the reliability test from the rows, per bin (confidences on a 0.01 grid)
    chi, bins = 0.0, 0
    for b in range(10):
        gaps = [
            f.filter((pl.col("confidence") * 10).floor().clip(0, 9) == b)
            .select(pl.col("correct").cast(pl.Float64) - pl.col("confidence"))
            .to_series()
            .to_numpy()
            for f in (night, base)
        ]
        if min(g.size for g in gaps) < 20:
            continue
        pooled = np.concatenate(gaps).var()
        chi += (gaps[0].mean() - gaps[1].mean()) ** 2 / (pooled * sum(1 / g.size for g in gaps))
        bins += 1
    assert row["ece_p_value"] == pytest.approx(stats.chi2.sf(chi, bins), rel=1e-6)


def test_a_weight_is_that_many_identical_rows(tmp_path: Path) -> None:
    tables = []
    for weights in (False, True):
        folder = tmp_path / str(weights)
        folder.mkdir()
        write_nights(two_nights(weights), folder, weight="w" if weights else None)
        tables.append(calibration_change(cf.read_statistics(folder), replicates=50))
    columns = [f"{m}_{s}" for m in ("accuracy", "ece", "brier")
               for s in ("difference", "p_value", "p_adjusted")]  # fmt: skip
    columns += ["accuracy_difference_ci_low", "brier_difference_ci_high"]
    assert_frames_close(tables[1].select(columns), tables[0].select(columns), rel=1e-9, abs=1e-12)


def test_absent_groups_say_so(tmp_path: Path) -> None:
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
        "c": "not in the baseline",
    }
    assert change.filter(pl.col("model") != "a")["ece_p_value"].null_count() == 2
    assert change["changed"].to_list() == [False, False, False]


def test_onset_skips_the_nights_a_group_is_absent(tmp_path: Path) -> None:
    stored = cf.read_statistics(*simulate_season(tmp_path, nights=24, shift_night=18, seed=5))
    g0 = pl.col("model").eq("m0") & pl.col("task").eq("t0")
    present = [
        b for b in stored.batch_order
        if not stored.table.filter(pl.col("batch_id") == b, g0).is_empty()
    ]  # fmt: skip
    assert len(present) < 24  # absent on some nights after the shift
    change = calibration_change(
        stored, baseline=(stored.batch_order[0], stored.batch_order[6]), batch=present[-1]
    )
    row = change.filter(g0).row(0, named=True)
    first_after = next(b for b in stored.batch_order[17:] if b in present)
    assert row["changed"] and row["onset"] == first_after


def test_the_baseline_window(tmp_path: Path) -> None:
    stored = cf.read_statistics(*simulate_nights(tmp_path, models=2, nights=6, shift_night=9))
    order = stored.batch_order
    assert baseline_window(stored) == order[:1]
    assert baseline_window(stored, f"{order[1]}..{order[3]}") == order[1:4]
    assert baseline_window(stored, (order[2], order[2])) == [order[2]]
    assert baseline_window(stored, "2026-10-02..2026-10-03") == order[:2]  # whole days
    assert baseline_window(stored, (dt.date(2026, 10, 4), "2026-10-04T23:00")) == [order[2]]
    with pytest.raises(ArgumentError, match="comes after"):
        baseline_window(stored, f"{order[3]}..{order[1]}")
    with pytest.raises(ArgumentError, match="neither a batch id nor an ISO 8601"):
        baseline_window(stored, "monday..tuesday")
    with pytest.raises(ArgumentError, match="no batch has its time in it"):
        baseline_window(stored, "2025-01-01..2025-01-02")
    with pytest.raises(ArgumentError, match="no batch follows the baseline"):
        calibration_change(stored, baseline=f"{order[0]}..{order[-1]}")


def test_rolling_window_and_named_batch(tmp_path: Path) -> None:
    stored = cf.read_statistics(*simulate_nights(tmp_path, models=2, nights=6, shift_night=9))
    window = metrics_over_batches(stored, last=3, uncertainty=False)
    assert window["batch_id"].unique(maintain_order=True).to_list() == stored.batch_order[-3:]
    change = calibration_change(stored, last=3, replicates=50)
    assert change["baseline_batches"].to_list() == [1, 1]
    assert change["tested_batches"].to_list() == [2, 2]
    named = calibration_change(stored, batch=stored.batch_order[2], replicates=50)
    assert named["batch_id"].to_list() == [stored.batch_order[2]] * 2
    assert named["tested_batches"].to_list() == [2, 2]
    with pytest.raises(ArgumentError, match="no batch follows"):
        calibration_change(stored, batch=stored.batch_order[0])
    with pytest.raises(ArgumentError, match="not among the 6 batches"):
        calibration_change(stored, batch="nope")
    with pytest.raises(ArgumentError, match=r"last= takes an integer >= 1"):
        metrics_over_batches(stored, last=0)
    with pytest.raises(
        ArgumentError, match="correction= takes 'bh', 'holm' or 'none', got 'sidak'"
    ):
        calibration_change(stored, correction="sidak")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="read_statistics"):
        calibration_change(stored.table)  # type: ignore[arg-type]


def test_uncertainty_columns_per_batch(tmp_path: Path) -> None:
    stored = cf.read_statistics(*simulate_nights(tmp_path, models=2, nights=3, shift_night=9))
    table = metrics_over_batches(stored, level=0.9)
    assert table.height == 6
    low, high = accuracy_interval("count", pl.col("accuracy") * pl.col("count"), level=0.9)
    expected = table.select(low.alias("low"), high.alias("high"))
    assert table["accuracy_ci_low"].to_list() == pytest.approx(expected["low"].to_list())
    assert table["accuracy_ci_high"].to_list() == pytest.approx(expected["high"].to_list())
    brier = pl.col("brier")
    inside = (pl.col("brier_ci_low") < brier) & (brier < pl.col("brier_ci_high"))
    assert table.select(inside.all()).item()


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
