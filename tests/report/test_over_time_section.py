"""The report's section over time: tonight first, shown from two batches on, names escaped."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import calib_frames as cf
from calib_frames.estimators import calibration_change, metrics_over_batches
from calib_frames.report import report_html

NAME = "<b>m</b>"


def stored(folder: Path, nights: int) -> cf.storage.StoredStatistics:
    rows = pl.DataFrame(
        {"model": [NAME, "plain"] * 60, "confidence": [0.9, 0.6] * 60, "correct": [1, 0, 0, 1] * 30}
    )
    for night in range(nights):
        cf.write_statistics(
            cf.bin_statistics(rows, by="model"), folder / f"{night}.parquet",
            batch_id=f"n{night}", batch_time=f"2026-03-0{night + 1}",
            binning=cf.Binning.uniform(10),
        )  # fmt: skip
    return cf.read_statistics(*folder.glob("*.parquet"))


def page(statistics: cf.storage.StoredStatistics, with_changes: bool) -> str:
    over = metrics_over_batches(statistics, uncertainty=False)
    changes = calibration_change(statistics, replicates=50) if with_changes else None
    merged = statistics.merged()
    return report_html(
        cf.metrics_from_bin_statistics(merged),
        bin_statistics=merged,
        over_batches=over,
        changes=changes,
    )


def test_two_batches_get_the_section_with_names_escaped(tmp_path: Path) -> None:
    text = page(stored(tmp_path, 2), with_changes=True)
    assert "<h2>ECE over batches</h2>" in text
    assert "<h2>Changed tonight</h2>" in text
    # tonight first: the change table opens the page, the trends come before the table
    headings = [text.index(f"<h2>{h}</h2>") for h in ("Changed tonight", "ECE over batches",
                                                       "Comparison")]  # fmt: skip
    assert headings == sorted(headings)
    assert f'<td class="key">{NAME}</td>' not in text
    assert '<td class="key">&lt;b&gt;m&lt;/b&gt;</td>' in text
    assert NAME not in text.split("<script")[0]


def test_one_batch_gets_no_section(tmp_path: Path) -> None:
    text = page(stored(tmp_path, 1), with_changes=False)
    assert "over batches" not in text
