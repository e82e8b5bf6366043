"""inspect_ai readers, pinned against the real inspect_ai 0.3.285 logs (data/inspect_ai).

The references are independent of the reader: inspect's own figures from the log headers
(``results.scores[].metrics``), decoded here with ``zipfile`` and ``zstandard`` directly,
and per-sample values recomputed with ``json`` and plain Python from the ``.json`` logs.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import statistics
import warnings
import zipfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from factories import DATA

import calib_frames as cf
from calib_frames.cli import main
from calib_frames.exceptions import ReadError
from calib_frames.sources import read_inspect_logs, scan_inspect_options, scan_inspect_samples

LOGS = DATA / "inspect_ai" / "logs"
EVAL_LOGS = sorted(LOGS.glob("*.eval"))
JSON_LOGS = sorted(LOGS.glob("*.json"))

pytestmark = pytest.mark.skipif(not LOGS.is_dir(), reason="data/inspect_ai fixtures not present")


def members(file: Path) -> dict[str, Any]:
    """Every JSON member of an ``.eval`` archive (a reference decoder: zstd frames)."""
    zstandard = pytest.importorskip("zstandard")
    out = {}
    raw = file.read_bytes()
    with zipfile.ZipFile(file) as archive:
        for info in archive.infolist():
            offset = info.header_offset
            start = offset + 30 + int.from_bytes(raw[offset + 26 : offset + 28], "little")
            start += int.from_bytes(raw[offset + 28 : offset + 30], "little")
            data = raw[start : start + info.compress_size]
            out[info.filename] = json.loads(
                zstandard.ZstdDecompressor().decompressobj().decompress(data)
            )
    return out


def header_of(file: Path) -> dict[str, Any]:
    if file.suffix == ".eval":
        return members(file)["header.json"]
    return json.loads(file.read_text())


def samples_of(file: Path) -> list[dict[str, Any]]:
    if file.suffix == ".eval":
        return [v for k, v in members(file).items() if k.startswith("samples/")]
    return json.loads(file.read_text())["samples"]


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    return scan_inspect_samples(LOGS).collect()


@pytest.mark.parametrize("file", EVAL_LOGS + JSON_LOGS, ids=lambda f: f.name[-27:])
def test_inspects_own_metrics_are_reproduced(rows: pl.DataFrame, file: Path) -> None:
    """accuracy / mean = mean over samples of the epoch mean of score; stderr with n - 1."""
    header = header_of(file)
    ours = rows.filter(pl.col("log") == file.name)
    assert set(ours["model"]) == {header["eval"]["model"]}
    assert set(ours["task"]) == {header["eval"]["task"]}
    for score in header["results"]["scores"]:
        per_sample = (
            ours.filter(pl.col("scorer") == score["name"])
            .group_by("sample")
            .agg(pl.col("score").mean())["score"]
            .to_list()
        )
        assert len(per_sample) == score["scored_samples"]
        metrics = score["metrics"]
        value = metrics.get("accuracy", metrics.get("mean"))["value"]
        assert statistics.fmean(per_sample) == pytest.approx(value, abs=1e-15)
        stderr = statistics.stdev(per_sample) / math.sqrt(len(per_sample))
        assert stderr == pytest.approx(metrics["stderr"]["value"], rel=1e-12)


def test_the_readme_figures() -> None:
    """data/README.md: inspect's accuracies of the four .eval logs, worked by hand."""
    rows = scan_inspect_samples(EVAL_LOGS).collect()
    accuracy = (
        rows.group_by("model", "task", "scorer", "sample")
        .agg(pl.col("score").mean())
        .group_by("model", "task", "scorer")
        .agg(pl.col("score").mean())
    )
    got = {tuple(r[:3]): r[3] for r in accuracy.iter_rows()}
    assert got[("mockllm/calib-sharp", "calib_colors_mc", "choice")] == 0.675
    assert got[("mockllm/calib-hedged", "calib_colors_mc", "choice")] == 0.725
    assert got[("mockllm/calib-hedged", "calib_sums_free", "match")] == 0.25
    assert got[("mockllm/calib-hedged", "calib_sums_free", "model_graded_qa")] == 0.34375


def reference_confidence(sample: dict[str, Any]) -> dict[str, Any]:
    """The module docstring's rules, in plain Python."""
    logprobs = (sample["output"]["choices"][0].get("logprobs") or {}).get("content") or []
    none = {"confidence": None, "letter_confidence": None, "letters_missing": None}
    if not logprobs:
        return none
    letters = [chr(65 + i) for i in range(len(sample.get("choices") or []))]
    if not letters:
        return {**none, "confidence": math.exp(sum(t["logprob"] for t in logprobs))}
    answer = [t for t in logprobs if t["token"].strip() in letters]
    if not answer:
        return none
    token = answer[-1]
    mass: dict[str, float] = {}
    for alt in token["top_logprobs"]:
        if alt["token"].strip() in letters:
            key = alt["token"].strip()
            mass[key] = mass.get(key, 0.0) + math.exp(alt["logprob"])
    return {
        "confidence": math.exp(token["logprob"]),
        "letter_confidence": mass.get(token["token"].strip(), 0.0) / sum(mass.values()),
        "letters_missing": len(letters) - len(mass),
    }


@pytest.mark.parametrize("file", [EVAL_LOGS[0], *JSON_LOGS], ids=lambda f: f.name[-27:])
def test_confidences_against_plain_python(rows: pl.DataFrame, file: Path) -> None:
    ours = rows.filter(pl.col("log") == file.name)
    for sample in samples_of(file):
        expected = reference_confidence(sample)
        mine = ours.filter(pl.col("sample") == sample["id"], pl.col("epoch") == sample["epoch"])
        assert mine.height == len(sample["scores"])
        for column, value in expected.items():
            got = mine[column].unique().to_list()
            assert len(got) == 1
            if value is None:
                assert got == [None], (sample["id"], column)
            else:
                assert got[0] == pytest.approx(value, rel=1e-12), (sample["id"], column)
        for scorer, score in sample["scores"].items():
            row = mine.filter(pl.col("scorer") == scorer).row(0, named=True)
            value = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}.get(score["value"], score["value"])
            assert row["score"] == float(value)
            assert row["correct"] is (float(value) == 1.0)  # partial credit is not correct
            assert row["answer"] == score.get("answer")


def test_samples_without_logprobs_have_null_confidence(rows: pl.DataFrame) -> None:
    """data/README.md: 39 of the sharp and 38 of the hedged MC answers have a confidence;
    6 of the 32 hedged sum sample-epochs have no logprobs; the empty answer is scored N."""
    eval_rows = rows.filter(pl.col("log").str.ends_with(".eval"))
    counted = eval_rows.group_by("model", "task", "scorer").agg(
        pl.col("confidence").is_not_null().sum().alias("with"), pl.len()
    )
    got = {tuple(r[:3]): (r[3], r[4]) for r in counted.iter_rows()}
    assert got[("mockllm/calib-sharp", "calib_colors_mc", "choice")] == (39, 40)
    assert got[("mockllm/calib-hedged", "calib_colors_mc", "choice")] == (38, 40)
    assert got[("mockllm/calib-hedged", "calib_sums_free", "match")] == (26, 32)
    cup = eval_rows.filter(pl.col("sample") == "colors-cup", pl.col("model").str.ends_with("sharp"))
    assert cup["value"].to_list() == ["N"] and cup["confidence"].to_list() == [None]
    missing = eval_rows.filter(pl.col("letters_missing") > 0).group_by("model").len()
    assert dict(missing.iter_rows()) == {"mockllm/calib-sharp": 5, "mockllm/calib-hedged": 1}
    sharp = eval_rows.filter(pl.col("task") == "calib_colors_mc").drop_nulls("confidence")
    means = sharp.group_by("model").agg(pl.col("confidence").mean()).sort("model")
    assert means["confidence"].round(4).to_list() == [0.637, 0.7871]  # hedged, sharp


def test_json_and_eval_logs_agree(rows: pl.DataFrame) -> None:
    """The .json runs gave the same answers as the .eval runs for the same samples."""
    columns = ["model", "task", "scorer", "sample", "epoch", "value", "confidence"]
    json_rows = rows.filter(pl.col("log").str.ends_with(".json")).select(columns)
    eval_rows = rows.filter(pl.col("log").str.ends_with(".eval")).select(columns)
    joined = json_rows.join(eval_rows, on=columns[:5], how="left", suffix="_eval")
    assert joined.height == json_rows.height > 0
    assert (joined["value"] == joined["value_eval"]).all()
    both = joined.drop_nulls("confidence")
    assert ((both["confidence"] - both["confidence_eval"]).abs() < 1e-15).all()


def test_read_inspect_logs_lists_every_log() -> None:
    logs = read_inspect_logs(LOGS)
    assert logs.height == 6
    sums = logs.filter(pl.col("task") == "calib_sums_free")
    assert sums["scorers"].to_list()[0] == ["match", "model_graded_qa", "near_miss"]


def copy_eval(tmp_path: Path) -> Path:
    target = tmp_path / EVAL_LOGS[0].name
    shutil.copy(EVAL_LOGS[0], target)
    return target


def rewrite(source: Path, target: Path, change: dict[str, bytes | None]) -> None:
    """A stored (uncompressed) copy of ``source`` with members replaced or removed."""
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as out:
        for name, document in members(source).items():
            data = change.get(name, json.dumps(document).encode())
            if data is not None:
                out.writestr(name, data)


def test_a_stored_archive_reads_as_the_zstd_one(tmp_path: Path) -> None:
    target = tmp_path / "stored.eval"
    rewrite(EVAL_LOGS[0], target, {})
    mine = scan_inspect_samples(target).collect().drop("log")
    theirs = scan_inspect_samples(EVAL_LOGS[0]).collect().drop("log")
    assert mine.equals(theirs)


def test_a_truncated_archive_names_the_file(tmp_path: Path) -> None:
    target = copy_eval(tmp_path)
    target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    with pytest.raises(ReadError, match=rf"{target.name}: not a zip archive"):
        scan_inspect_samples(target)


def test_a_missing_header_names_the_member(tmp_path: Path) -> None:
    target = tmp_path / "live.eval"
    rewrite(EVAL_LOGS[0], target, {"header.json": None})
    with pytest.raises(ReadError, match=r"live\.eval, member header\.json: missing"):
        scan_inspect_samples(target)


def test_a_malformed_sample_names_the_member(tmp_path: Path) -> None:
    target = tmp_path / "bad.eval"
    name = next(n for n in members(EVAL_LOGS[0]) if n.startswith("samples/"))
    rewrite(EVAL_LOGS[0], target, {name: b'{"id": "x", "epoch": 1, '})
    with pytest.raises(ReadError, match=rf"bad\.eval, member {name}: malformed JSON"):
        scan_inspect_samples(target).collect()


def test_a_corrupt_zstd_member_names_the_member(tmp_path: Path) -> None:
    target = copy_eval(tmp_path)
    with zipfile.ZipFile(target) as archive:
        info = archive.getinfo("header.json")
    data = bytearray(target.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start : start + 8] = b"\0" * 8  # the zstd magic number and frame header gone
    target.write_bytes(bytes(data))
    with pytest.raises(ReadError, match=r"member header\.json: cannot decompress"):
        scan_inspect_samples(target)


def test_a_malformed_json_log_names_the_line(tmp_path: Path) -> None:
    target = tmp_path / "log.json"
    lines = JSON_LOGS[0].read_text().splitlines()
    lines[40] = lines[40] + ' "oops'
    target.write_text("\n".join(lines))
    with pytest.raises(ReadError, match=r"log\.json, line 4\d: malformed JSON"):
        scan_inspect_samples(target)


def test_a_json_file_that_is_not_a_log(tmp_path: Path) -> None:
    target = tmp_path / "other.json"
    target.write_text('{"a": 1}')
    with pytest.raises(ReadError, match="not an inspect log"):
        scan_inspect_samples(target)


def test_cli_compare_detects_inspect_logs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "t.csv"
    assert main(["compare", *map(str, EVAL_LOGS), "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "left out 21 inspect sample rows without logprobs" in err
    table = pl.read_csv(out)
    assert table.columns[:3] == ["model", "task", "scorer"]
    rows = scan_inspect_samples(EVAL_LOGS).drop_nulls("confidence")
    keys = ["model", "task", "scorer"]
    expected = cf.calibration_metrics(rows, by=keys, log_confidence="log_confidence").collect()
    joined = table.join(expected, on=keys, suffix="_py")
    assert joined.height == expected.height == 8
    for column in ("count", "accuracy", "ece", "brier", "log_loss"):
        assert (joined[column] - joined[f"{column}_py"]).abs().max() < 1e-12  # type: ignore[operator]
    assert main(["compare", str(LOGS), "--format", "inspect", "--by", "model"]) == 0
    assert "calib-sharp" in capsys.readouterr().out


def test_cli_bad_log_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = copy_eval(tmp_path)
    target.write_bytes(target.read_bytes()[:100])
    assert main(["compare", str(target)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("calib-frames: error: ") and target.name in err[0]


def test_options_are_the_letter_distribution(rows: pl.DataFrame) -> None:
    """scan_inspect_options against plain Python, and its softmax against letter_confidence."""
    options = scan_inspect_options(JSON_LOGS[0]).collect()
    for sample in samples_of(JSON_LOGS[0]):
        mine = options.filter(pl.col("sample") == sample["id"])
        tokens = (sample["output"]["choices"][0].get("logprobs") or {}).get("content") or []
        letters = [chr(65 + i) for i in range(len(sample["choices"]))]
        answer = [t for t in tokens if t["token"].strip() in letters]
        if not answer:
            assert mine.height == 0, sample["id"]
            continue
        expected = dict.fromkeys(letters, 0.0)
        for alt in answer[-1]["top_logprobs"]:
            if alt["token"].strip() in letters:
                expected[alt["token"].strip()] += math.exp(alt["logprob"])
        assert mine["letter"].to_list() == letters
        assert mine["text"].to_list() == sample["choices"]
        assert mine["probability"].to_list() == pytest.approx(list(expected.values()), rel=1e-12)
        assert mine.filter("is_gold")["letter"].to_list() == [sample["target"]]
        assert mine.filter("is_answer")["letter"].to_list() == [answer[-1]["token"].strip()]
    keys = ["model", "task", "run", "log", "epoch"]
    predicted = cf.sources.choice_predictions(options, question="sample", by=keys)
    # where the most likely letter is the generated one, the softmax is letter_confidence
    same = predicted.join(
        options.filter("is_answer").select(*keys, "sample", pl.col("option").alias("generated")),
        on=[*keys, "sample"],
    ).filter(pl.col("prediction") == pl.col("generated"))
    check = same.join(rows.select(*keys, "sample", "letter_confidence"), on=[*keys, "sample"])
    assert check.height >= 8
    assert (check["confidence"] - check["letter_confidence"]).abs().max() < 1e-12  # type: ignore[operator]


def test_integer_sample_ids_read_as_text(tmp_path: Path) -> None:
    """inspect allows int ids: they come out as their digits (one dtype for every log)."""
    document = json.loads(JSON_LOGS[0].read_text())
    for number, sample in enumerate(document["samples"]):
        sample["id"] = number
    target = tmp_path / "ints.json"
    target.write_text(json.dumps(document))
    ids = scan_inspect_samples(target).collect()["sample"]
    assert ids.dtype == pl.String and set(ids) == {str(i) for i in range(11)}


def test_cli_detects_a_single_json_log(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(JSON_LOGS[0])]) == 0
    out = capsys.readouterr().out
    assert "calib_colors_mc" in out and "choice" in out


def test_answer_tokens_are_cleaned_as_the_openai_reader_cleans_them(tmp_path: Path) -> None:
    """ "B\u200b" was option B to the OpenAI reader and no letter to this one (it stripped
    whitespace only): both now read a token through ``text.clean_text``, then strip it."""
    from calib_frames.sources import openai_answer_confidence

    log = json.loads(JSON_LOGS[0].read_text())
    sample = log["samples"][0]
    assert sample["id"] == "colors-banana" and sample["target"] == "B"
    answer = sample["output"]["choices"][0]["logprobs"]["content"][-1]
    assert answer["token"] == " B"
    tokens = [" B\u200b", "\x00A", " \uff23", "D\ufeff", " b"]  # zero-width, NUL, fullwidth, BOM
    answer["token"] = tokens[0]
    for alternative, token in zip(answer["top_logprobs"], tokens, strict=True):
        alternative["token"] = token
    target = tmp_path / JSON_LOGS[0].name
    target.write_text(json.dumps(log))
    row = scan_inspect_samples(target).filter(pl.col("sample") == "colors-banana").collect()
    assert row["confidence"][0] == pytest.approx(math.exp(answer["logprob"]), rel=1e-15)
    letters = [math.exp(a["logprob"]) for a in answer["top_logprobs"][:4]]  # not " b"
    assert row["letter_mass"][0] == pytest.approx(sum(letters), rel=1e-12)
    assert row["letters_missing"][0] == 0
    # the OpenAI reader reads the same tokens as the same letters
    top = [{"token": t, "logprob": a["logprob"], "bytes": None}
           for t, a in zip(tokens, answer["top_logprobs"], strict=True)]  # fmt: skip
    frame = pl.DataFrame({"file": "f", "line": 1, "custom_id": None, "id": "r", "model": "m",
                          "choice": 0, "position": [0], "token": [tokens[0]],
                          "logprob": [answer["logprob"]], "nll": [-answer["logprob"]],
                          "bytes": [3], "top_logprobs": [top]})  # fmt: skip
    read = openai_answer_confidence(frame).row(0, named=True)
    assert (read["answer"], read["alternatives"]) == ("B", ["B", "A", "C", "D", "b"])


# --- hostile archives and logs (issues 29.5, 32.3, 32.8, 32.12, 32.16) -----------------


def raw_members(file: Path) -> list[tuple[str, bytes, int]]:
    """Every member of an ``.eval`` archive: name, raw (zstd) bytes, the size it lists."""
    raw = file.read_bytes()
    out = []
    with zipfile.ZipFile(file) as archive:
        for info in archive.infolist():
            at = info.header_offset
            start = at + 30 + len(info.filename.encode())
            start += int.from_bytes(raw[at + 28 : at + 30], "little")
            out.append((info.filename, raw[start : start + info.compress_size], info.file_size))
    return out


def write_zstd(target: Path, entries: list[tuple[str, bytes, int]]) -> None:
    """An archive of zstd members (name, zstd bytes, listed size), as inspect writes them:
    stored by ``zipfile``, then method 93 and the listed size set in the central directory."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a name stored twice, on purpose
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as out:
            for name, data, _ in entries:
                out.writestr(name, data)
    data = bytearray(target.read_bytes())
    end = data.rindex(b"PK\x05\x06")
    at = int.from_bytes(data[end + 16 : end + 20], "little")
    for _, _, size in entries:
        assert data[at : at + 4] == b"PK\x01\x02"
        data[at + 10 : at + 12] = (93).to_bytes(2, "little")
        data[at + 24 : at + 28] = size.to_bytes(4, "little")
        lengths = [int.from_bytes(data[at + o : at + o + 2], "little") for o in (28, 30, 32)]
        at += 46 + sum(lengths)
    target.write_bytes(bytes(data))


def first_sample(file: Path) -> str:
    return next(name for name, _, _ in raw_members(file) if name.startswith("samples/"))


def test_a_rebuilt_zstd_archive_reads_as_the_original(tmp_path: Path) -> None:
    """The helper above writes what inspect writes (the hostile archives below are its)."""
    write_zstd(tmp_path / "same.eval", raw_members(EVAL_LOGS[0]))
    mine = scan_inspect_samples(tmp_path / "same.eval").collect().drop("log")
    assert mine.equals(scan_inspect_samples(EVAL_LOGS[0]).collect().drop("log"))


@pytest.mark.parametrize("keep", [12, 1000])
def test_a_sample_whose_zstd_frame_is_cut_short(tmp_path: Path, keep: int) -> None:
    """A sample member cut to its frame header decompressed to nothing and was dropped
    without a word (40 rows read as 39): a ReadError naming archive and member."""
    name = first_sample(EVAL_LOGS[0])
    entries = [(n, d[:keep] if n == name else d, s) for n, d, s in raw_members(EVAL_LOGS[0])]
    write_zstd(tmp_path / "cut.eval", entries)
    match = rf"cut\.eval, member {name}: its zstd frame decompresses to [\d,]+ bytes, the archive"
    with pytest.raises(ReadError, match=match):
        scan_inspect_samples(tmp_path / "cut.eval")


def zstd_spaces(mebibytes: int) -> bytes:
    """A zstd frame of a sample whose text is ``mebibytes`` MiB of spaces (a few KB)."""
    zstandard = pytest.importorskip("zstandard")
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    chunk = b" " * (1 << 20)
    parts = [compressor.compress(b'{"id": "x", "epoch": 1, "input": "')]
    parts += [compressor.compress(chunk) for _ in range(mebibytes)]
    return b"".join([*parts, compressor.compress(b'"}'), compressor.flush()])


def test_a_member_expanding_past_the_bound_is_refused(tmp_path: Path) -> None:
    """A 146 KB .eval reached 2.15 GB in memory: the members of an archive may expand to
    1,000 times its size in all; beyond it, one line (before decompressing it)."""
    entries = raw_members(EVAL_LOGS[0])
    bomb = zstd_spaces(200)
    write_zstd(tmp_path / "bomb.eval", [*entries, ("samples/x_epoch_1.json", bomb, 200 << 20)])
    size = (tmp_path / "bomb.eval").stat().st_size
    assert size < 200_000
    with pytest.raises(
        ReadError, match=r"bomb\.eval, member samples/x_epoch_1\.json: the "
    ) as error:
        scan_inspect_samples(tmp_path / "bomb.eval")
    assert f"expand past {1000 * size:,} bytes, 1,000 times its size" in str(error.value)
    # listed as small: decompressed 1 MiB at a time, and refused past what it lists
    write_zstd(tmp_path / "liar.eval", [*entries, ("samples/x_epoch_1.json", bomb, 100)])
    with pytest.raises(ReadError, match=r"decompresses to more than 100 bytes, the archive lists"):
        scan_inspect_samples(tmp_path / "liar.eval")


def test_inspects_own_files_beside_the_logs_are_left_out(tmp_path: Path) -> None:
    """inspect's eval-set.json and logs.json made the whole folder unreadable; named on
    their own they are still no log."""
    for file in LOGS.iterdir():
        shutil.copy(file, tmp_path / file.name)
    headers = {
        f.name: {k: v for k, v in header_of(f).items() if k != "samples"} for f in LOGS.iterdir()
    }
    (tmp_path / "logs.json").write_text(json.dumps(headers, indent=2))
    tasks = [{"name": "calib_colors_mc", "task_id": "x", "model": "mockllm/calib-sharp"}]
    (tmp_path / "eval-set.json").write_text(json.dumps({"eval_set_id": "s", "tasks": tasks}))
    assert scan_inspect_samples(tmp_path).collect().equals(scan_inspect_samples(LOGS).collect())
    assert read_inspect_logs(tmp_path).height == 6
    with pytest.raises(ReadError, match=r"logs\.json: not an inspect log"):
        scan_inspect_samples(tmp_path / "logs.json")
    (tmp_path / "only").mkdir()
    shutil.move(tmp_path / "eval-set.json", tmp_path / "only")
    with pytest.raises(ReadError, match=r"only: no inspect log \(an \.eval archive"):
        scan_inspect_samples(tmp_path / "only")


@pytest.mark.parametrize("value", [{"accuracy": 1, "f1": 0.5}, [1, 0], "maybe"])
def test_a_score_value_that_is_no_outcome_names_file_member_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: Any
) -> None:
    """A dict or list score value was a problem 'with column correct' (which the user never
    had), or 'samples not readable (error deserializing …)'."""
    name = first_sample(EVAL_LOGS[0])
    sample = members(EVAL_LOGS[0])[name]
    sample["scores"]["choice"]["value"] = value
    rewrite(EVAL_LOGS[0], tmp_path / "x.eval", {name: json.dumps(sample).encode()})
    shown = re.escape(json.dumps(value) if not isinstance(value, str) else value)
    expected = rf"scores\.choice\.value is {shown}; expected one outcome: C, P, I, N"
    with pytest.raises(ReadError, match=rf"x\.eval, member {name}: {expected}"):
        scan_inspect_samples(tmp_path / "x.eval")
    log = json.loads(JSON_LOGS[0].read_text())
    log["samples"][3]["scores"]["choice"]["value"] = value
    (tmp_path / "y.json").write_text(json.dumps(log))
    with pytest.raises(ReadError, match=rf"y\.json, samples\[3\]: {expected}"):
        scan_inspect_samples(tmp_path / "y.json")
    assert main(["compare", str(tmp_path / "y.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "scores.choice.value" in err[0] and "'correct'" not in err[0]


def test_a_sample_stored_twice_in_one_archive(tmp_path: Path) -> None:
    """The same sample and epoch twice in one archive (under its name twice, or another
    name) was counted twice: refused, naming both members."""
    entries = raw_members(EVAL_LOGS[0])
    name = first_sample(EVAL_LOGS[0])
    again = next(entry for entry in entries if entry[0] == name)
    write_zstd(tmp_path / "twice.eval", [*entries, again])
    place = rf"twice\.eval, member {name}"
    with pytest.raises(ReadError, match=rf"{place} and .*{place} hold the same inspect sample"):
        scan_inspect_samples(tmp_path / "twice.eval")
    write_zstd(tmp_path / "renamed.eval", [*entries, ("samples/copy.json", *again[1:])])
    with pytest.raises(
        ReadError, match=rf"member {name} and .*member samples/copy\.json hold the same"
    ):
        scan_inspect_samples(tmp_path / "renamed.eval")
    log = json.loads(JSON_LOGS[0].read_text())
    log["samples"].append(log["samples"][0])
    (tmp_path / "twice.json").write_text(json.dumps(log))
    with pytest.raises(ReadError, match=r"samples\[0\] and .*samples\[11\] hold the same"):
        scan_inspect_samples(tmp_path / "twice.json")
