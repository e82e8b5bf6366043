"""OpenAI-style chat completions with logprobs: token frame, answer confidence, bad files.

Responses are built here in the shape the Chat Completions API documents (``choices[i]
.logprobs.content[j]`` with ``token``, ``logprob``, ``bytes``, ``top_logprobs``), plus the
Batch API's line wrapper; the real fixture in data/openai (when present) is read too.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import polars as pl
import pytest

import calib_frames as cf
from calib_frames.exceptions import ArgumentError, DataError, ReadError
from calib_frames.sources import (
    openai_answer_confidence,
    scan_openai_choices,
    scan_openai_tokens,
)
from calib_frames.sources.openai import RESPONSE_KEYS

ROOT = Path(__file__).resolve().parents[2]


def entry(token: str, logprob: float, top: list[tuple[str, float]]) -> dict:
    return {
        "token": token,
        "logprob": logprob,
        "bytes": list(token.encode("utf-8")),
        "top_logprobs": [
            {"token": t, "logprob": lp, "bytes": list(t.encode("utf-8"))} for t, lp in top
        ],
    }


def response(rid: str, tokens: list[dict] | None, n_choices: int = 1) -> dict:
    choice = lambda i: {  # noqa: E731
        "index": i,
        "message": {"role": "assistant", "content": "".join(t["token"] for t in tokens or [])},
        "logprobs": None if tokens is None else {"content": tokens, "refusal": None},
        "finish_reason": "stop",
    }
    return {
        "id": rid,
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": [choice(i) for i in range(n_choices)],
        "usage": {"prompt_tokens": 10, "completion_tokens": len(tokens or []), "total_tokens": 12},
    }


R1 = response("r1", [entry("B", -0.05, [("B", -0.05), ("A", -3.2), ("C", -4.0)])])
R2 = response(
    "r2",
    [
        entry("\n", -0.01, [("\n", -0.01)]),
        entry(" Paris", -0.4, [(" Paris", -0.4), (" Lyon", -1.5)]),
        entry(".", -0.2, [(".", -0.2)]),
    ],
    n_choices=2,
)


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    file = tmp_path / "responses.jsonl"
    file.write_text(json.dumps(R1) + "\n" + json.dumps(R2) + "\n", encoding="utf-8")
    return file


def test_token_frame(jsonl: Path) -> None:
    tokens = scan_openai_tokens(jsonl)
    assert isinstance(tokens, pl.LazyFrame)
    out = tokens.collect()
    assert out.columns == [
        "file", "line", "custom_id", "id", "model", "choice", "position",
        "token", "logprob", "nll", "bytes", "top_logprobs",
    ]  # fmt: skip
    assert out.height == 1 + 3 * 2
    assert out.filter(pl.col("id") == "r2", pl.col("choice") == 1)["position"].to_list() == [
        0,
        1,
        2,
    ]
    assert out["nll"].to_list() == [-x for x in out["logprob"].to_list()]
    assert out.filter(pl.col("token") == " Paris")["bytes"].to_list() == [6, 6]
    ppl = cf.perplexity(out, nll="nll", by="id")
    expected = math.exp((0.01 + 0.4 + 0.2) / 3)
    assert ppl.filter(pl.col("id") == "r2")["perplexity"].item() == pytest.approx(
        expected, rel=1e-14
    )


def test_answer_confidence(jsonl: Path) -> None:
    out = openai_answer_confidence(jsonl)
    assert isinstance(out, pl.LazyFrame)
    rows = out.collect().sort("id", "choice")
    first = rows.row(0, named=True)
    assert (first["answer"], first["position"]) == ("B", 0)
    assert first["confidence"] == pytest.approx(math.exp(-0.05), rel=1e-15)
    assert first["log_confidence"] == -0.05
    assert first["alternatives"] == ["B", "A", "C"]
    assert first["top_mass"] == pytest.approx(math.exp(-0.05) + math.exp(-3.2) + math.exp(-4.0))
    second = rows.row(1, named=True)  # the leading newline is skipped
    assert (second["answer"], second["position"], second["tokens"]) == ("Paris", 1, 3)
    assert second["alternatives"] == ["Paris", "Lyon"]
    assert second["perplexity"] == pytest.approx(math.exp(0.61 / 3), rel=1e-14)
    r2 = scan_openai_tokens(jsonl).collect().filter(pl.col("id") == "r2")
    pinned = openai_answer_confidence(r2, position=2)
    assert isinstance(pinned, pl.DataFrame)
    assert pinned["answer"].to_list() == [".", "."]


def test_answer_confidence_errors(jsonl: Path) -> None:
    with pytest.raises(DataError, match="without a token at position 5"):
        openai_answer_confidence(jsonl, position=5).collect()
    with pytest.raises(ArgumentError, match="position="):
        openai_answer_confidence(jsonl, position=-1)
    blank = jsonl.parent / "blank.jsonl"
    blank.write_text(json.dumps(response("r3", [entry(" ", -0.1, [])])) + "\n")
    with pytest.raises(DataError, match="no answer token"):
        openai_answer_confidence(blank).collect()
    positive = jsonl.parent / "positive.jsonl"
    positive.write_text(json.dumps(response("r4", [entry("A", 0.2, [])])) + "\n")
    with pytest.raises(DataError, match=r"'logprob': 1 of 1 token rows is null, NaN or > 0"):
        openai_answer_confidence(positive).collect()


def test_json_array_single_response_and_batch_lines(tmp_path: Path) -> None:
    (tmp_path / "array.json").write_text(json.dumps([R1, R2], indent=2))
    (tmp_path / "single.json").write_text(json.dumps(R1, indent=2))
    batch = {
        "id": "b1",
        "custom_id": "q-7",
        "response": {"status_code": 200, "body": R1},
        "error": None,
    }
    (tmp_path / "batch.jsonl").write_text(json.dumps(batch) + "\n")
    out = scan_openai_tokens(tmp_path).collect()
    assert out.group_by("file").len().sort("file").rows() == [
        ("array.json", 7),
        ("batch.jsonl", 1),
        ("single.json", 1),
    ]
    assert out.filter(pl.col("file") == "batch.jsonl")["custom_id"].to_list() == ["q-7"]


def test_choices_without_logprobs_have_no_token_rows(tmp_path: Path) -> None:
    file = tmp_path / "nolog.jsonl"
    file.write_text(json.dumps(response("r0", None)) + "\n" + json.dumps(R1) + "\n")
    assert scan_openai_tokens(file).collect()["id"].to_list() == ["r1"]
    choices = scan_openai_choices(file).collect()
    assert choices.select("id", "content", "tokens").rows() == [("r0", "", 0), ("r1", "B", 1)]


def test_choices_frame(jsonl: Path) -> None:
    out = scan_openai_choices(jsonl).collect()
    assert out.columns == [*RESPONSE_KEYS, "content", "finish_reason", "tokens"]
    assert out.select("id", "choice", "content", "tokens").rows() == [
        ("r1", 0, "B", 1),
        ("r2", 0, "\n Paris.", 3),
        ("r2", 1, "\n Paris.", 3),
    ]


def test_malformed_inputs(tmp_path: Path, jsonl: Path) -> None:
    lines = jsonl.read_text().splitlines()
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_text(lines[0] + "\n" + lines[1][:40] + "\n")
    with pytest.raises(ReadError, match=r"truncated\.jsonl, line 2: malformed record"):
        scan_openai_tokens(truncated).collect()
    wrong = tmp_path / "wrong.jsonl"
    bad = json.loads(lines[0])
    bad["choices"][0]["logprobs"]["content"][0]["logprob"] = "very"
    wrong.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ReadError, match=r"wrong\.jsonl, line 2"):
        scan_openai_tokens(wrong).collect()
    first_bad = tmp_path / "first.jsonl"
    first_bad.write_text("not json\n")
    with pytest.raises(ReadError, match=r"first\.jsonl, line 1: malformed record"):
        scan_openai_tokens(first_bad)
    scalar = tmp_path / "scalar.jsonl"
    scalar.write_text("[1, 2]\n")
    with pytest.raises(ReadError, match="must be a JSON object"):
        scan_openai_tokens(scalar)
    other = tmp_path / "gold.jsonl"
    other.write_text(json.dumps({"id": "r1", "gold": "B"}) + "\n")
    with pytest.raises(ReadError, match=r"gold\.jsonl: not chat completion responses"):
        scan_openai_tokens(other)
    empty = tmp_path / "none"
    empty.mkdir()
    with pytest.raises(ReadError, match="holds no data file"):
        scan_openai_tokens(empty)


FIXTURE = ROOT / "data" / "openai"
RESPONSES = FIXTURE / "responses.jsonl"
needs_fixture = pytest.mark.skipif(not RESPONSES.is_file(), reason="data/openai not present")


@needs_fixture
def test_real_fixture_tokens_match_the_json() -> None:
    records = [json.loads(line) for line in RESPONSES.read_text(encoding="utf-8").splitlines()]
    tokens = scan_openai_tokens(RESPONSES).collect()
    expected = [
        (r["id"], c["index"], i, t["token"], t["logprob"], [x["token"] for x in t["top_logprobs"]])
        for r in records
        for c in r["choices"]
        for i, t in enumerate(c["logprobs"]["content"])
    ]
    got = tokens.select(
        "id",
        "choice",
        "position",
        "token",
        "logprob",
        pl.col("top_logprobs").list.eval(pl.element().struct.field("token")),
    ).rows()
    assert got == expected
    assert (tokens["model"] == "calib/tiny-gpt2-chat").all()
    # bytes are null in these responses: the token's UTF-8 length is used instead.
    assert tokens["bytes"].to_list() == [len(t.encode("utf-8")) for t in tokens["token"]]
    per_response = tokens.group_by("id").len()
    usage = {r["id"]: r["usage"]["completion_tokens"] for r in records}
    assert all(usage[i] == n for i, n in per_response.iter_rows())
    choices = scan_openai_choices(RESPONSES).collect()
    joined = tokens.group_by("id", maintain_order=True).agg(pl.col("token").str.join(""))
    assert dict(joined.iter_rows()) == dict(choices.select("id", "content").iter_rows())


@needs_fixture
def test_real_fixture_answer_and_verbalised_confidence() -> None:
    from calib_frames.sources import with_verbalized_confidence

    gold = pl.read_ndjson(FIXTURE / "gold.jsonl").select("id", "kind", "gold")
    answers = openai_answer_confidence(RESPONSES).collect().join(gold, on="id")
    assert answers.height == 50
    letters = answers.filter(pl.col("kind") == "mc_letter")
    records = {
        r["id"]: r for r in map(json.loads, RESPONSES.read_text(encoding="utf-8").splitlines())
    }
    for row in letters.iter_rows(named=True):
        first = records[row["id"]]["choices"][0]["logprobs"]["content"][0]
        assert row["answer"] == first["token"].strip()
        assert row["confidence"] == math.exp(first["logprob"])
        assert row["alternatives"] == [t["token"].strip() for t in first["top_logprobs"]]
    assert set(letters["answer"]) <= {"A", "B", "C", "D"}
    verbal = scan_openai_choices(RESPONSES).collect().join(gold, on="id")
    verbal = verbal.filter(pl.col("kind") == "verbalized")
    parsed = with_verbalized_confidence(verbal, column="content", pattern=r"(?i)I am (.+?) sure")
    for content, value in parsed.select("content", "confidence").iter_rows():
        percent = re.search(r"I am (\d+)% sure", content)
        assert percent is not None and value == int(percent.group(1)) / 100
