"""The names calib_frames.sources renamed in 0.2 still work for one release, with a warning."""

from __future__ import annotations

import importlib
from pathlib import Path

import polars as pl
import pytest

from calib_frames import schema, sources
from calib_frames.exceptions import ArgumentError
from calib_frames.sources import files, lm_eval

DATA = Path(__file__).resolve().parents[2] / "data" / "lm_eval"

MOVED = [
    ("calib_frames.sources", "lm_eval_runs", sources.read_lm_eval_runs),
    ("calib_frames.sources", "lm_eval_reported", sources.read_lm_eval_reported),
    ("calib_frames.sources.lm_eval", "lm_eval_runs", lm_eval.read_lm_eval_runs),
    ("calib_frames.sources.lm_eval", "lm_eval_reported", lm_eval.read_lm_eval_reported),
    ("calib_frames.sources.files", "scan_with_roles", files.scan_table),
    ("calib_frames.sources.tables", "CHOICE_PREDICTIONS", schema.CHOICE_PREDICTIONS),
    ("calib_frames.sources.tables", "OPTION_PROBABILITIES", schema.OPTION_PROBABILITIES),
    ("calib_frames.sources.tables", "BRIER_MULTICLASS", schema.BRIER_MULTICLASS),
    ("calib_frames.sources.tables", "LM_EVAL_COMPARISON", schema.LM_EVAL_COMPARISON),
]


@pytest.mark.parametrize(("module", "name", "new"), MOVED)
def test_old_name_warns_and_is_the_new_object(module: str, name: str, new: object) -> None:
    with pytest.warns(DeprecationWarning, match=f"{name} has moved to"):
        assert getattr(importlib.import_module(module), name) is new


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    file = tmp_path / "p.csv"
    file.write_text("confidence,correct,nll\n0.9,1,0.5\n0.6,0,0.7,extra\n0.4,1,0.2\n")
    return file


@pytest.mark.parametrize(
    ("old", "raising", "skipping"),
    [
        (files.scan_table, files.scan_table, files.scan_table_skipping),
        (files.scan_predictions, files.scan_predictions, files.scan_predictions_skipping),
        (files.scan_tokens, files.scan_tokens, files.scan_tokens_skipping),
    ],
    ids=["scan_table", "scan_predictions", "scan_tokens"],
)
def test_on_bad_record_chooses_the_function(old, raising, skipping, broken: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.warns(DeprecationWarning, match=r"on_bad_record='skip'\) is deprecated"):
        result = old(broken, on_bad_record="skip")
    assert isinstance(result, files.ScanResult)
    assert result.skipped_records == skipping(broken).skipped_records == 1
    assert result.frame.collect().equals(skipping(broken).frame.collect())
    with pytest.warns(DeprecationWarning, match=r"on_bad_record='raise'\)"):
        lazy = old(broken, on_bad_record="raise")
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect_schema() == raising(broken).collect_schema()
    with pytest.raises(ArgumentError, match="on_bad_record= takes 'raise' or 'skip', got 'x'"):
        old(broken, on_bad_record="x")


def test_scan_with_roles_keeps_its_old_behaviour(broken: Path) -> None:
    with pytest.warns(DeprecationWarning):
        scan_with_roles = files.scan_with_roles  # type: ignore[attr-defined]
    roles = {"confidence": pl.Float64()}
    assert (
        scan_with_roles(broken, roles=roles).collect_schema()
        == files.scan_table(broken, roles=roles).collect_schema()
    )
    with pytest.warns(DeprecationWarning):
        skipped = scan_with_roles(broken, roles=roles, on_bad_record="skip")
    assert skipped.skipped_records == 1


def test_on_unparsable_and_data_of_with_verbalized_confidence() -> None:
    df = pl.DataFrame({"response": ["80%", "no idea", "0.3"]})
    with pytest.warns(DeprecationWarning, match=r"on_unparsable='skip'\) is deprecated"):
        old = sources.with_verbalized_confidence(df, on_unparsable="skip")  # type: ignore[call-arg]
    new = sources.with_verbalized_confidence_skipping(df)
    assert (old.skipped, old.frame.rows()) == (new.skipped, new.frame.rows())
    assert new.skipped == 1
    with pytest.raises(ArgumentError, match="on_unparsable= takes 'raise' or 'skip'"):
        sources.with_verbalized_confidence(df, on_unparsable="guess")  # type: ignore[call-arg]
    with pytest.warns(DeprecationWarning, match=r"with_verbalized_confidence\(data=\.\.\.\)"):
        renamed = sources.with_verbalized_confidence(data=df.head(1))  # type: ignore[call-arg]
    assert renamed.equals(sources.with_verbalized_confidence(df.head(1)))
    with pytest.warns(DeprecationWarning):  # both at once: the old name, the old switch
        both = sources.with_verbalized_confidence(data=df, on_unparsable="skip")  # type: ignore[call-arg]
    assert both.skipped == 1


def test_read_lm_eval_runs_is_eager_and_named_read() -> None:
    runs = sources.read_lm_eval_runs(DATA)
    assert isinstance(runs, pl.DataFrame) and runs.height > 0
    assert isinstance(sources.read_lm_eval_reported(runs), pl.DataFrame)
