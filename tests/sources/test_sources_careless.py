"""calib_frames.sources fed the way a careless user would: each call gives the right
result or one of the package's errors naming column, rows or file — never a polars or
Python error from deep inside, never a silently wrong (or silently empty) table.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from calib_frames import comparison, multiclass, sources
from calib_frames.exceptions import ArgumentError, DataError, ReadError, TableError

ROOT = Path(__file__).resolve().parents[2]
PREDICTION_ROLES = {"confidence": pl.Float64(), "correct": pl.Boolean()}
TOKEN_ROLES = {"nll": pl.Float64(), "tokens": pl.Int64()}
LM_EVAL = ROOT / "data" / "lm_eval"
RESPONSES = ROOT / "data" / "openai" / "responses.jsonl"

OPTIONS = pl.DataFrame(
    {
        "question": [1, 1, 2, 2],
        "option": [0, 1, 0, 1],
        "loglik": [-0.5, -2.0, -3.0, -1.0],
        "is_gold": [1, 0, 1, 0],
    }
)


# --- options: an integer is_gold is a 0/1 flag ------------------------------------------


@pytest.mark.parametrize(
    "entry", [sources.choice_predictions, sources.option_probabilities, multiclass.brier_multiclass]
)
@pytest.mark.parametrize("lazy", [False, True])
def test_is_gold_outside_0_1_is_a_data_error(entry: object, lazy: bool) -> None:
    """is_gold=2 was cast to True (a second gold option), silently."""
    frame = OPTIONS.with_columns(is_gold=pl.Series([0, 2, 1, 0]))
    with pytest.raises(DataError, match=r"column 'is_gold': 1 of 4 option rows .*0 nor 1"):
        result = entry(frame.lazy() if lazy else frame)  # type: ignore[operator]
        if isinstance(result, pl.LazyFrame):
            result.collect()


def test_is_gold_0_1_integers_match_booleans() -> None:
    as_int = sources.choice_predictions(OPTIONS)
    as_bool = sources.choice_predictions(OPTIONS.with_columns(pl.col("is_gold").cast(pl.Boolean)))
    assert as_int.equals(as_bool)
    assert as_int["correct"].to_list() == [True, False]


# --- text -------------------------------------------------------------------------------


TOKENS = pl.DataFrame({"answer": [1, 1, 2], "logprob": [-0.1, -0.2, -0.3]})


@pytest.mark.parametrize("key", ["tokens", "confidence", "log_confidence"])
def test_answer_confidence_key_named_like_an_output(key: str) -> None:
    """by='tokens' gave a polars DuplicateError."""
    with pytest.raises(TableError, match=rf"\['{key}'\] clash"):
        sources.answer_confidence(TOKENS.rename({"answer": key}), by=key)


SAMPLES = pl.DataFrame({"question": [1, 1, 1, 2], "answer": ["a", "A ", "b", None]})


@pytest.mark.parametrize("key", ["consistency", "samples"])
def test_sample_consistency_key_named_like_an_output(key: str) -> None:
    """by='consistency' gave a polars DuplicateError at collection."""
    with pytest.raises(TableError, match=rf"\['{key}'\] clash"):
        sources.sample_consistency(SAMPLES.rename({"question": key}), by=key)


def test_sample_consistency_gold_of_another_type() -> None:
    """An integer gold against String answers was a polars ComputeError at collection."""
    with pytest.raises(TableError, match=r"'gold'.*Int64.*'answer'.*String"):
        sources.sample_consistency(
            SAMPLES.with_columns(gold=pl.lit(1, pl.Int64)), by="question", gold="gold"
        )
    # Categorical answers are normalised like String ones ("A " was a third answer)
    out = sources.sample_consistency(
        SAMPLES.with_columns(pl.col("answer").cast(pl.Categorical), gold=pl.lit("a")),
        by="question",
        gold="gold",
    )
    assert out["correct"].to_list() == [True, False]


@pytest.mark.parametrize("scale", ["10", None, True, float("nan"), 0])
def test_verbalized_confidence_bad_scale(scale: object) -> None:
    """scale='10' was a bare TypeError."""
    with pytest.raises(ArgumentError, match="scale="):
        sources.verbalized_confidence(pl.col("t"), scale=scale)  # type: ignore[arg-type]


def test_verbalized_confidence_bad_pattern() -> None:
    """An unbalanced regex was a polars ComputeError at collection."""
    with pytest.raises(ArgumentError, match="pattern= is not a valid regular expression"):
        sources.verbalized_confidence(pl.col("t"), pattern="I am (.+? sure")
    # Rust-regex syntax that Python's re rejects still passes (polars' engine checks it)
    frame = pl.DataFrame({"t": ["Ça: 80%"]})
    assert frame.select(sources.verbalized_confidence(pl.col("t"), pattern=r"\p{L}+: (.+)"))[
        "t"
    ].to_list() == [0.8]


def test_verbalized_confidence_column_name_and_numbers() -> None:
    """A column name was an AttributeError; a number column a polars error at collection."""
    frame = pl.DataFrame({"t": ["90%", "0.7"], "n": [90, 200]})
    assert frame.select(sources.verbalized_confidence("t"))["t"].to_list() == [0.9, 0.7]
    assert frame.select(sources.verbalized_confidence("n", scale=100))["n"].to_list() == [0.9, None]
    with pytest.raises(ArgumentError, match="text="):
        sources.verbalized_confidence(3)  # type: ignore[arg-type]


# --- openai -----------------------------------------------------------------------------


@pytest.mark.parametrize("position", ["0", 1.0, True])
def test_openai_position_must_be_an_integer(position: object) -> None:
    """position='0' was a bare TypeError; position=True was read as 1."""
    with pytest.raises(ArgumentError, match="position="):
        sources.openai_answer_confidence(RESPONSES, position=position)  # type: ignore[arg-type]


def test_openai_answer_confidence_of_a_foreign_frame() -> None:
    """A frame that is not scan_openai_tokens' was a polars ColumnNotFoundError."""
    with pytest.raises(TableError, match="scan_openai_tokens"):
        sources.openai_answer_confidence(pl.DataFrame({"a": [1]}))


def test_openai_choices_logged_without_logprobs(tmp_path: Path) -> None:
    """Responses requested without logprobs gave an empty table, silently."""
    lines = RESPONSES.read_text().splitlines()[:3]
    records = [json.loads(line) for line in lines]
    records[1]["choices"][0]["logprobs"] = None
    file = tmp_path / "r.jsonl"
    file.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with pytest.raises(DataError, match=r"'logprobs': 1 of 3 choices .*line=2"):
        sources.openai_answer_confidence(file).collect()
    # the intact responses keep their numbers
    good = tmp_path / "g.jsonl"
    good.write_text("\n".join(lines) + "\n")
    whole = sources.openai_answer_confidence(RESPONSES).collect().head(3)
    part = sources.openai_answer_confidence(good).collect()
    assert part["confidence"].equals(whole["confidence"])


@pytest.mark.parametrize("choices", [[], None, "missing"])
def test_openai_response_without_choices(tmp_path: Path, choices: object) -> None:
    """A response with "choices": [] was dropped silently (49 of 50 answers, no count)."""
    records = [json.loads(line) for line in RESPONSES.read_text().splitlines()]
    if choices == "missing":
        del records[3]["choices"]
    else:
        records[3]["choices"] = choices
    file = tmp_path / "r.jsonl"
    file.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    for read in (
        sources.scan_openai_choices,
        sources.scan_openai_tokens,
        sources.openai_answer_confidence,
    ):
        with pytest.raises(ReadError, match=r"r.jsonl, line 4: a response without choices"):
            read(file).collect()  # type: ignore[operator]


_TOP = pl.List(pl.Struct({"token": pl.String, "logprob": pl.Float64, "bytes": pl.List(pl.Int64)}))


def _tokens(tokens: list[str], top: list[list[dict[str, object]]]) -> pl.DataFrame:
    n = len(tokens)
    return pl.DataFrame(
        {
            "file": "f",
            "line": 1,
            "custom_id": None,
            "id": "r",
            "model": "m",
            "choice": 0,
            "position": list(range(n)),
            "token": tokens,
            "logprob": [-0.2] * n,
            "nll": [0.2] * n,
            "bytes": [1] * n,
            "top_logprobs": top,
        },
        schema_overrides={"custom_id": pl.String, "top_logprobs": _TOP},
    )


def test_openai_answer_logged_without_alternatives() -> None:
    """top_logprobs: [] gave top_mass = -0.0 (a probability mass of nothing), not null."""
    out = sources.openai_answer_confidence(_tokens(["B"], [[]]))
    assert out["alternatives"].to_list() == [[]]
    assert out["top_mass"].to_list() == [None]


@pytest.mark.parametrize("token", ["B\u200b", "\x00B", "\ufeffB", " Ｂ", "B\u2060\n"])
def test_openai_answer_with_invisible_characters(token: str) -> None:
    """Zero-width characters or NUL were kept: "B\u200b" != "B" when graded."""
    top = [{"token": token, "logprob": -0.2, "bytes": None}]
    out = sources.openai_answer_confidence(_tokens(["\u200b", token], [[], top]))
    assert out.select("answer", "position", "alternatives").rows() == [("B", 1, ["B"])]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("٩٠%", 0.9),  # Arabic-Indic digits
        ("۹۰٪", 0.9),  # Eastern Arabic-Indic digits, Arabic percent sign
        ("٠٫٧٥", 0.75),  # Arabic decimal separator
        ("９０%", 0.9),  # fullwidth digits (NFKC)
        ("９０％", 0.9),
        ("9\u200b0%", 0.9),  # a zero-width space
        ("९०%", None),  # Devanagari digits: unparsable, null as other text
        ("²/₃", 2 / 3),  # NFKC folds super- and subscripts
    ],
)
def test_verbalized_confidence_in_other_digits(text: str, value: float | None) -> None:
    """Arabic-Indic or fullwidth digits raised polars' InvalidOperationError."""
    frame = pl.DataFrame({"t": [text]})
    assert frame.select(sources.verbalized_confidence("t"))["t"].to_list() == [value]


# --- lm-eval ----------------------------------------------------------------------------


def test_lm_eval_empty_samples_file(tmp_path: Path) -> None:
    """An empty samples file gave an empty options frame, silently."""
    folder = tmp_path / "run"
    shutil.copytree(LM_EVAL / "calib__tiny-gpt2-m", folder)
    samples = next(folder.glob("samples_calib_colors_*.jsonl"))
    samples.write_text("\n")
    with pytest.raises(ReadError, match=rf"{samples.name}: empty samples file"):
        sources.scan_lm_eval_options(folder).collect()
    ppl = next(folder.glob("samples_calib_ppl_*.jsonl"))
    ppl.write_text("")
    with pytest.raises(ReadError, match=rf"{ppl.name}: empty samples file"):
        sources.scan_lm_eval_documents(folder).collect()


# --- files: role columns that CSV/JSON inference left as text -------------------------


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("confidence,correct\n", None),  # header only: no row to infer a type from
        ("confidence,correct\n,\n,\n", "2 of 2 rows"),  # every value empty
        ("confidence,correct\nabc,true\n0.5,false\n", "p.csv, line 2"),  # a stray word
        ("confidence,correct\n0.5,yes\n", "p.csv, line 2"),
    ],
)
def test_scan_table_types_role_columns(tmp_path: Path, content: str, problem: str | None) -> None:
    """These came out as String columns: calibration_metrics then said 'must be numeric,
    got dtype String' with no row or line."""
    import calib_frames as cf

    file = tmp_path / "p.csv"
    file.write_text(content)
    if problem is not None and "line" in problem:
        with pytest.raises(ReadError, match=problem):
            sources.scan_table(file, roles=PREDICTION_ROLES).collect()
        return
    frame = sources.scan_table(file, roles=PREDICTION_ROLES)
    assert frame.collect_schema() == pl.Schema({"confidence": pl.Float64, "correct": pl.Boolean})
    if problem is None:
        assert frame.collect().height == 0
    else:
        with pytest.raises(DataError, match=problem):
            cf.calibration_metrics(frame).collect()


def test_scan_table_types_token_role_columns(tmp_path: Path) -> None:
    file = tmp_path / "t.csv"
    file.write_text("doc,nll,tokens\n1,2.5,x\n")
    with pytest.raises(ReadError, match=r"t\.csv, line 2"):
        sources.scan_table(file, roles=TOKEN_ROLES).collect()
    file.write_text("doc,nll,tokens\n")
    assert sources.scan_table(file, roles=TOKEN_ROLES).collect_schema()["tokens"] == pl.Int64


def test_schema_overrides_win_and_parquet_keeps_its_types(tmp_path: Path) -> None:
    file = tmp_path / "p.csv"
    file.write_text("confidence,correct\n0.5,yes\n")
    frame = sources.scan_table(
        file, roles=PREDICTION_ROLES, schema_overrides={"correct": pl.String}
    )
    assert frame.collect()["correct"].to_list() == ["yes"]
    parquet = tmp_path / "p.parquet"
    pl.DataFrame({"confidence": ["0.5"], "correct": [True]}).write_parquet(parquet)
    assert (
        sources.scan_table(parquet, roles=PREDICTION_ROLES).collect_schema()["confidence"]
        == pl.String
    )


def test_lm_eval_samples_cut_at_a_line_boundary(tmp_path: Path) -> None:
    """A samples file that lost whole lines gave fewer questions, silently."""
    folder = tmp_path / "run"
    shutil.copytree(LM_EVAL / "calib__tiny-gpt2-m", folder)
    samples = next(folder.glob("samples_calib_colors_*.jsonl"))
    samples.write_text("".join(samples.read_text().splitlines(keepends=True)[:100]))
    with pytest.raises(ReadError, match=r"100 samples, .* evaluated 150 documents"):
        sources.scan_lm_eval_options(folder).collect()
    ppl = next(folder.glob("samples_calib_ppl_*.jsonl"))
    ppl.write_text("".join(ppl.read_text().splitlines(keepends=True)[:7]))
    with pytest.raises(ReadError, match=r"7 samples, .* evaluated 50 documents"):
        sources.scan_lm_eval_documents(folder).collect()


def test_lm_eval_complete_folders_still_read() -> None:
    options = sources.scan_lm_eval_options(LM_EVAL).collect()
    assert options.group_by("model", "task", "run").agg(pl.col("question").n_unique()).sort(
        "model", "task", "run"
    )["question"].to_list() == [150, 100, 150, 150, 100, 100]


def test_csv_header_naming_a_column_twice(tmp_path: Path) -> None:
    """polars read it as confidence and confidence_duplicated_0: the first won, silently."""
    file = tmp_path / "p.csv"
    file.write_text("confidence,confidence,correct\n0.5,0.6,true\n")
    with pytest.raises(ReadError, match=r"p\.csv, line 1: .*'confidence' more than once"):
        sources.scan_table(file)
    with pytest.raises(ReadError, match="more than once"):
        sources.scan_table(file, roles=PREDICTION_ROLES)


@pytest.mark.parametrize("paths", [3, None, b"p.csv", [Path("p.csv"), 3]])
def test_paths_of_the_wrong_type(paths: object) -> None:
    """paths=3 was a bare TypeError ('int' object is not iterable)."""
    with pytest.raises(ArgumentError, match="paths="):
        sources.scan_table(paths)  # type: ignore[arg-type]


def test_columns_that_is_not_a_mapping(tmp_path: Path) -> None:
    """columns=['confidence'] was an AttributeError deep in the renaming."""
    file = tmp_path / "p.csv"
    file.write_text("confidence,correct\n0.5,true\n")
    with pytest.raises(
        ArgumentError, match="columns= takes a mapping of column names to column names"
    ):
        sources.scan_table(file, columns=["confidence"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "entry",
    [
        sources.scan_lm_eval_options,
        sources.scan_lm_eval_documents,
        sources.read_lm_eval_reported,
        comparison.lm_eval_comparison,
    ],
)
def test_lm_eval_given_a_foreign_frame(entry: object) -> None:
    """A frame that is not read_lm_eval_runs' was a polars ColumnNotFoundError."""
    with pytest.raises(TableError, match="read_lm_eval_runs"):
        entry(pl.DataFrame({"a": [1]}))  # type: ignore[operator]


@pytest.mark.parametrize("name", ["nope", None])
def test_lm_eval_comparison_unknown_filter(name: object) -> None:
    """filter='nope' gave every *_lm_eval column null, silently."""
    with pytest.raises(ArgumentError, match=r"filter= .*\['none'\]"):
        comparison.lm_eval_comparison(LM_EVAL, filter=name)  # type: ignore[arg-type]


def _edited_sample(tmp_path: Path, pattern: str, edit: object, line: int = 4) -> Path:
    """A copy of the tiny-gpt2-m run whose ``pattern`` samples file has one record edited."""
    folder = tmp_path / "run"
    shutil.copytree(LM_EVAL / "calib__tiny-gpt2-m", folder)
    samples = next(folder.glob(pattern))
    lines = samples.read_text().splitlines()
    record = json.loads(lines[line])
    edit(record)  # type: ignore[operator]
    lines[line] = json.dumps(record)
    samples.write_text("\n".join(lines) + "\n")
    return folder


def test_lm_eval_sample_with_fewer_responses_than_options(tmp_path: Path) -> None:
    """Three responses for four choices were read as a 3-option question (acc 0.7133 → 0.7067)."""

    def drop_one(record: dict[str, object]) -> None:
        for field in ("resps", "filtered_resps"):
            record[field] = record[field][:3]  # type: ignore[index]

    folder = _edited_sample(tmp_path, "samples_calib_colors_*.jsonl", drop_one)
    with pytest.raises(
        ReadError,
        match=r"colors_.*\.jsonl, line 5: filtered_resps does not hold one response "
        r"per request .*\(3 responses for 4 requests\)",
    ):
        sources.scan_lm_eval_options(folder).collect()


@pytest.mark.parametrize("how", ["missing", "null", "both missing"])
def test_lm_eval_sample_without_filtered_resps(tmp_path: Path, how: str) -> None:
    """No filtered_resps gave polars' ShapeError (exploded columns ... matching counts)."""

    def edit(record: dict[str, object]) -> None:
        if how == "null":
            record["filtered_resps"] = None
        else:
            del record["filtered_resps"]
            if how == "both missing":
                del record["resps"]

    folder = _edited_sample(tmp_path, "samples_calib_colors_*.jsonl", edit)
    with pytest.raises(ReadError, match=r"colors_.*\.jsonl, line 5: no filtered_resps"):
        sources.scan_lm_eval_options(folder).collect()
    folder = _edited_sample(tmp_path / "ppl", "samples_calib_ppl_*.jsonl", edit)
    with pytest.raises(ReadError, match=r"ppl_.*\.jsonl, line 5: no filtered_resps"):
        sources.scan_lm_eval_documents(folder).collect()


def test_lm_eval_samples_file_with_a_bom(tmp_path: Path) -> None:
    """A byte-order mark showed polars' InternalError(TapeError) in the message."""
    folder = tmp_path / "run"
    shutil.copytree(LM_EVAL / "calib__tiny-gpt2-m", folder)
    samples = next(folder.glob("samples_calib_colors_*.jsonl"))
    samples.write_bytes(b"\xef\xbb\xbf" + samples.read_bytes())
    with pytest.raises(
        ReadError, match=r"line 1: the file starts with a UTF-8 byte-order mark"
    ) as info:
        sources.scan_lm_eval_options(folder).collect()
    assert "TapeError" not in str(info.value)
    plain = tmp_path / "p.jsonl"
    plain.write_bytes(b'\xef\xbb\xbf{"confidence": 0.5, "correct": true}\n')
    with pytest.raises(ReadError, match=r"p.jsonl, line 1: the file starts with a UTF-8 byte"):
        sources.scan_table(plain).collect()


def test_sample_consistency_answers_with_invisible_characters() -> None:
    """ "Paris\\u200b" and "ｐａｒｉｓ" were other answers than "Paris" (raw comparison)."""
    samples = pl.DataFrame(
        {"question": 1, "answer": ["Paris", "Paris\u200b", "ｐａｒｉｓ", "\x00paris ", "Rome"]}
    )
    out = sources.sample_consistency(samples, by="question")
    assert out["consistency"].to_list() == [0.8]
    raw = sources.sample_consistency(samples, by="question", normalize=False)
    assert raw["consistency"].to_list() == [0.2]


def test_openai_batch_request_that_failed(tmp_path: Path) -> None:
    """A failed Batch API request (response null) was dropped with no count."""
    body = json.loads(RESPONSES.read_text().splitlines()[0])
    records = [
        {"custom_id": "a", "response": {"status_code": 200, "body": body}},
        {"custom_id": "b", "response": None, "error": {"code": "x", "message": "failed"}},
    ]
    file = tmp_path / "batch.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(
        ReadError, match=r"batch.jsonl, line 2: a response without choices .*\(a Batch API request"
    ):
        sources.openai_answer_confidence(file).collect()  # type: ignore[union-attr]


def test_lm_eval_document_logged_twice(tmp_path: Path) -> None:
    """A samples line repeated (the same doc_id and filter) was counted twice (perplexity)
    or refused as 'repeated option ids' naming no file: now its two lines are named."""
    folder = tmp_path / "run"
    shutil.copytree(LM_EVAL / "calib__tiny-gpt2-m", folder)
    for task in ("colors", "ppl"):
        samples = next(folder.glob(f"samples_calib_{task}_*.jsonl"))
        lines = samples.read_text().splitlines(keepends=True)
        samples.write_text("".join([*lines, lines[4]]))
        place = re.escape(str(samples))
        match = rf"{place}, line 5 and {place}, line {len(lines) + 1} hold the same lm-eval doc"
        with pytest.raises(ReadError, match=match):
            sources.scan_lm_eval_options(folder).collect()
            sources.scan_lm_eval_documents(folder).collect()
        samples.write_text("".join(lines))


def test_lm_eval_run_found_twice(tmp_path: Path) -> None:
    """A copy of a model's output folder: the same model, task and run stamp twice."""
    shutil.copytree(LM_EVAL / "calib__tiny-gpt2-m", tmp_path / "a")
    shutil.copytree(LM_EVAL / "calib__tiny-gpt2-m", tmp_path / "b")
    with pytest.raises(ReadError, match=r"a/samples_calib_\w+_.* and .*b/samples_.* hold the same"):
        sources.read_lm_eval_runs(tmp_path)
