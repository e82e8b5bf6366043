"""Generic readers: formats, globs, folders, hive partitions, mapping, and every bad-input path."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from calib_frames.exceptions import ArgumentError, ReadError, TableError
from calib_frames.sources import ScanResult, scan_table, scan_table_skipping


def write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def hive(tmp_path: Path) -> Path:
    for model, values in (("a", [0.9, 0.8]), ("b", [0.7])):
        folder = tmp_path / f"model={model}" / "task=t1"
        folder.mkdir(parents=True)
        pl.DataFrame({"confidence": values, "correct": [True] * len(values)}).write_parquet(
            folder / "part-0.parquet"
        )
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".hidden.parquet").write_text("not read")
    return tmp_path


def test_hive_partitioned_folder(hive: Path) -> None:
    frame = scan_table(hive)
    assert isinstance(frame, pl.LazyFrame)
    out = frame.collect().sort("confidence")
    assert out.columns == ["confidence", "correct", "model", "task"]
    assert out["model"].to_list() == ["b", "a", "a"]
    assert out["task"].to_list() == ["t1"] * 3
    plain = scan_table(hive, hive_partitioning=False).collect()
    assert plain.columns == ["confidence", "correct"]


def test_glob_and_projection_and_predicate_pushdown(hive: Path) -> None:
    frame = scan_table(str(hive / "model=a" / "**" / "*.parquet"))
    assert frame.filter(pl.col("confidence") > 0.85).select(
        "confidence"
    ).collect().to_series().to_list() == [0.9]
    assert frame.head(1).collect().height == 1


def test_column_mapping(tmp_path: Path) -> None:
    file = tmp_path / "p.csv"
    file.write_text("model,p,ok\na,0.9,1\nb,0.4,0\n")
    out = scan_table(file, columns={"p": "confidence", "ok": "correct"}).collect()
    assert out.columns == ["model", "confidence", "correct"]
    with pytest.raises(TableError, match=r"columns= names \['prob'\]"):
        scan_table(file, columns={"prob": "confidence"})
    with pytest.raises(TableError, match="duplicate column names"):
        scan_table(file, columns={"p": "model"})


def test_csv_schema_inferred_from_all_rows(tmp_path: Path) -> None:
    file = tmp_path / "late_float.csv"
    file.write_text("confidence,correct,tokens\n" + "0.5,1,3\n" * 3000 + "0.25,0,2.5\n")
    out = scan_table(file).collect()
    assert out.schema["tokens"] == pl.Float64
    assert out["tokens"][-1] == 2.5
    forced = scan_table(file, schema_overrides={"correct": pl.Int8}).collect()
    assert forced.schema["correct"] == pl.Int8
    # An override the data break is a bad record, reported with its line.
    with pytest.raises(ReadError, match=r"late_float\.csv, line 3002: malformed record"):
        scan_table(file, schema_overrides={"tokens": pl.Int64}).collect()


def test_tsv_json_array_and_json_columns(tmp_path: Path) -> None:
    (tmp_path / "a.tsv").write_text("confidence\tcorrect\n0.6\t1\n")
    (tmp_path / "b.json").write_text(json.dumps([{"confidence": 0.7, "correct": 0}]))
    (tmp_path / "c.json").write_text(json.dumps({"confidence": [0.8], "correct": [1]}))
    out = scan_table(tmp_path).collect().sort("confidence")
    assert out["confidence"].to_list() == [0.6, 0.7, 0.8]


def test_files_with_different_columns_stack_by_name(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "1.jsonl", [{"confidence": 0.1, "correct": False}])
    write_jsonl(tmp_path / "2.jsonl", [{"confidence": 0.2, "correct": True, "model": "x"}])
    out = scan_table(tmp_path).collect().sort("confidence")
    assert out["model"].to_list() == [None, "x"]


def test_truncated_jsonl_line_names_file_and_line(tmp_path: Path) -> None:
    file = tmp_path / "preds.jsonl"
    good = json.dumps({"confidence": 0.5, "correct": True})
    file.write_text(f"{good}\n{good}\n" + '{"confidence": 0.6, "corr\n' + f"{good}\n")
    with pytest.raises(ReadError, match=r"preds\.jsonl, line 3: malformed record"):
        scan_table(file).collect()
    result = scan_table_skipping(file)
    assert isinstance(result, ScanResult)
    assert (result.skipped_records, result.skipped_files) == (1, 0)
    assert result.problems["line"].to_list() == [3]
    assert result.frame.collect().height == 3


def test_wrong_json_type_under_an_override_is_a_bad_record(tmp_path: Path) -> None:
    records = [{"confidence": 0.5, "correct": True}] * 5 + [
        {"confidence": "high", "correct": False}
    ]
    file = write_jsonl(tmp_path / "types.jsonl", records)
    frame = scan_table(file, schema_overrides={"confidence": pl.Float64})
    with pytest.raises(ReadError, match=r"types\.jsonl, line 6: malformed record"):
        frame.collect()
    skipped = scan_table_skipping(file, schema_overrides={"confidence": pl.Float64})
    assert skipped.skipped_records == 1
    assert skipped.frame.collect()["confidence"].to_list() == [0.5] * 5
    # Without an override the column is read as what the data hold (String), not guessed.
    assert scan_table(file).collect_schema()["confidence"] == pl.String


def test_ragged_csv_row(tmp_path: Path) -> None:
    file = tmp_path / "r.csv"
    file.write_text("confidence,correct\n0.5,1\n0.2,0,7\n0.3,1\n0.4,0,1\n")
    with pytest.raises(ReadError, match=r"r\.csv, line 3: malformed record"):
        scan_table(file).collect()
    result = scan_table_skipping(file)
    assert result.skipped_records == 2
    assert result.problems["line"].to_list() == [3, 5]
    assert result.frame.collect()["confidence"].to_list() == [0.5, 0.3]


def test_file_named_parquet_that_is_not_parquet(tmp_path: Path) -> None:
    good = tmp_path / "good.parquet"
    pl.DataFrame({"confidence": [0.5], "correct": [True]}).write_parquet(good)
    (tmp_path / "fake.parquet").write_text("confidence,correct\n0.5,1\n")
    with pytest.raises(ReadError, match=r"fake\.parquet: cannot read it as parquet"):
        scan_table(tmp_path)
    result = scan_table_skipping(tmp_path)
    assert (result.skipped_records, result.skipped_files) == (0, 1)
    assert result.problems["file"].str.ends_with("fake.parquet").all()
    assert result.frame.collect().height == 1


def test_empty_inputs(tmp_path: Path) -> None:
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    with pytest.raises(ReadError, match="holds no data file"):
        scan_table(empty_dir)
    with pytest.raises(ReadError, match="no such file or folder"):
        scan_table(tmp_path / "missing.parquet")
    with pytest.raises(ReadError, match="matches no file"):
        scan_table(str(tmp_path / "*.csv"))
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(ReadError, match=r"e\.csv: empty file"):
        scan_table(tmp_path / "e.csv")
    skipped = scan_table_skipping(tmp_path / "e.csv")
    assert skipped.skipped_files == 1
    assert skipped.frame.collect().height == 0
    with pytest.raises(ArgumentError, match="no input paths"):
        scan_table([])


def test_malformed_json_document_names_the_line(tmp_path: Path) -> None:
    file = tmp_path / "bad.json"
    file.write_text('[\n  {"confidence": 0.5},\n  {"confidence": \n]\n')
    with pytest.raises(ReadError, match=r"bad\.json, line 4: not valid JSON"):
        scan_table(file)


def test_unknown_suffix_and_arguments(tmp_path: Path) -> None:
    file = tmp_path / "data.txt"
    file.write_text("confidence,correct\n0.5,1\n")
    with pytest.raises(ArgumentError, match="pass format="):
        scan_table(file)
    assert scan_table(file, format="csv").collect().height == 1
    with pytest.raises(ArgumentError, match="format="):
        scan_table(file, format="xlsx")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="polars dtypes"):
        scan_table(file, format="csv", schema_overrides={"confidence": "float"})  # type: ignore[dict-item]


def test_files_that_do_not_stack(tmp_path: Path) -> None:
    pl.DataFrame({"x": [1]}).write_parquet(tmp_path / "a.parquet")
    pl.DataFrame({"x": [[1, 2]]}).write_parquet(tmp_path / "b.parquet")
    with pytest.raises(TableError, match="do not stack"):
        scan_table(tmp_path)


def test_truncated_parquet_and_projection_through_the_guard(tmp_path: Path) -> None:
    file = tmp_path / "t.parquet"
    pl.DataFrame({"confidence": [0.1] * 1000, "correct": [True] * 1000}).write_parquet(file)
    data = file.read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReadError, match=r"cut\.parquet: cannot read it as parquet"):
        scan_table(cut)
    plan = scan_table(file).select("correct").explain()
    assert "PYTHON" in plan  # the guarded scan is a polars IO source ...
    assert scan_table(file).select("correct").collect().columns == ["correct"]  # ... projected


def test_skip_mode_counts_an_unreadable_json_file(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"confidence": [0.5,')
    write_jsonl(tmp_path / "ok.jsonl", [{"confidence": 0.5, "correct": True}])
    result = scan_table_skipping(tmp_path)
    assert (result.skipped_records, result.skipped_files) == (0, 1)
    assert result.problems["reason"].str.contains("not valid JSON").all()
    assert result.frame.collect().height == 1


def test_streaming_and_in_memory_engines_agree(hive: Path) -> None:
    frame = scan_table(hive).sort("confidence")
    assert frame.collect(engine="streaming").equals(frame.collect(engine="in-memory"))
