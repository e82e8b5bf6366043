"""The batch commands (stats, merge, report) end to end, their errors and atomic writes."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import calib_frames as cf
from calib_frames.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
PREDICTIONS = DATA / "synthetic_predictions.parquet"
TOKENS = DATA / "synthetic_tokens.parquet"


# numpy warnings reached the command line's stderr (issue 32.18): they fail a test here
WARNINGS_ARE_ERRORS = {**os.environ, "PYTHONWARNINGS": "error::RuntimeWarning"}


def cli(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "calib_frames", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        check=False,
        env=WARNINGS_ARE_ERRORS,
    )


def one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("calib-frames: error:")
    return lines[0]


@pytest.fixture(scope="module")
def nightly(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The shipped predictions split into three nights (CSV, JSONL and parquet)."""
    folder = tmp_path_factory.mktemp("nights")
    rows = pl.read_parquet(PREDICTIONS).with_row_index("i")
    paths = []
    for night, suffix in enumerate((".csv", ".jsonl", ".parquet")):
        part = rows.filter(pl.col("i") % 3 == night).drop("i")
        path = folder / f"night{night}{suffix}"
        {".csv": part.write_csv, ".jsonl": part.write_ndjson, ".parquet": part.write_parquet}[
            suffix
        ](path)
        paths.append(path)
    return paths


def stats_files(nights: list[Path], folder: Path) -> list[Path]:
    outs = []
    for path in nights:
        out = folder / f"{path.stem}.stats.parquet"
        assert main(["stats", str(path), "--by", "model,task", "--out", str(out)]) == 0
        outs.append(out)
    return outs


@pytest.mark.slow
def test_report_end_to_end_reloads_with_the_same_numbers(tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = cli(
        "report", PREDICTIONS, "--token-file", TOKENS, "--tokens", "tokens", "--bytes", "bytes",
        "--by", "model,task", "--out", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "overconfident" in result.stdout
    expected = cf.calibration_metrics(pl.read_parquet(PREDICTIONS), by=["model", "task"])
    table = pl.read_parquet(out / "comparison.parquet")
    assert_frame_equal(table.select(expected.columns), expected, rel_tol=1e-12, abs_tol=1e-15)
    assert pl.read_csv(out / "comparison.csv").height == 12
    assert pl.read_json(out / "comparison.json").height == 12
    assert (out / "comparison.md").read_text().startswith("| model | task |")
    stats = pl.read_parquet(out / "bin_statistics.parquet")
    direct = cf.bin_statistics(pl.read_parquet(PREDICTIONS), by=["model", "task"])
    assert_frame_equal(stats, direct, rel_tol=1e-12, abs_tol=1e-15)
    assert table["bits_per_byte"].null_count() == 0


@pytest.mark.slow
def test_stats_then_merge_then_report_equals_one_pass(tmp_path: Path, nightly: list[Path]) -> None:
    parts = stats_files(nightly, tmp_path)
    merged = tmp_path / "running.parquet"
    assert main(["merge", *map(str, parts), "--out", str(merged)]) == 0
    stored = cf.read_statistics(merged)
    assert stored.keys == ["model", "task"]
    assert len(stored.batches) == 3
    assert stored.binning == cf.Binning.uniform(10)
    out = tmp_path / "report"
    assert main(["report", "--from-stats", str(merged), "--out", str(out)]) == 0
    got = pl.read_parquet(out / "comparison.parquet")
    expected = cf.calibration_metrics(pl.read_parquet(PREDICTIONS), by=["model", "task"])
    assert got["count"].to_list() == expected["count"].to_list()
    for name in ("ece", "brier", "within_bin_variance", "log_loss"):
        assert got[name].to_list() == pytest.approx(expected[name].to_list(), rel=1e-12), name


def test_same_input_gives_the_same_batch_id(tmp_path: Path, nightly: list[Path]) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    for out in (a, b):
        assert main(["stats", str(nightly[0]), "--by", "model", "--out", str(out)]) == 0
    assert cf.read_statistics(a).batches == cf.read_statistics(b).batches
    named = tmp_path / "named.parquet"
    args = ["stats", str(nightly[0]), "--by", "model", "--out", str(named), "--batch-id", "n1"]
    assert main(args) == 0
    assert cf.read_statistics(named).batches == ["n1"]


@pytest.fixture(scope="module")
def partials(tmp_path_factory: pytest.TempPathFactory, nightly: list[Path]) -> list[Path]:
    return stats_files(nightly, tmp_path_factory.mktemp("partials"))


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_merging_is_idempotent_and_order_free(partials: list[Path], data: st.DataObject) -> None:
    chosen = data.draw(st.lists(st.sampled_from(partials), min_size=1, max_size=6))
    order = data.draw(st.permutations(chosen))
    once = cf.read_statistics(*sorted(set(chosen))).merged()
    again = cf.read_statistics(*order).merged()
    # counts exactly; sums to rounding (float sums in another order differ in the last bit)
    assert again.select("model", "task", "bin", "count").equals(
        once.select("model", "task", "bin", "count")
    )
    assert_frame_equal(again, once, rel_tol=1e-13, abs_tol=1e-15)


def test_merge_of_merged_files_does_not_double_count(tmp_path: Path, partials: list[Path]) -> None:
    first = tmp_path / "first.parquet"
    both = tmp_path / "both.parquet"
    assert main(["merge", str(partials[0]), str(partials[1]), "--out", str(first)]) == 0
    assert main(["merge", str(first), str(partials[1]), "--out", str(both)]) == 0
    direct = cf.read_statistics(partials[0], partials[1]).merged()
    assert_frame_equal(cf.read_statistics(both).merged(), direct, rel_tol=1e-13, abs_tol=1e-15)


def test_merge_refuses_other_bins_and_other_keys(tmp_path: Path, nightly: list[Path]) -> None:
    other = tmp_path / "bins5.parquet"
    base = tmp_path / "bins10.parquet"
    assert main(["stats", str(nightly[0]), "--by", "model", "--out", str(base)]) == 0
    args = ["stats", str(nightly[1]), "--by", "model", "--bins", "5", "--out", str(other)]
    assert main(args) == 0
    line = one_line_error(cli("merge", base, other, "--out", tmp_path / "m.parquet"), 1)
    assert "binning" in line
    keys = tmp_path / "keys.parquet"
    assert main(["stats", str(nightly[1]), "--by", "task", "--out", str(keys)]) == 0
    assert "keys" in one_line_error(cli("merge", base, keys, "--out", tmp_path / "k.parquet"), 1)
    plain = tmp_path / "plain.parquet"
    pl.read_parquet(base).write_parquet(plain)  # loses the metadata
    assert "not a calib_frames statistics file" in one_line_error(
        cli("merge", base, plain, "--out", tmp_path / "p.parquet"), 1
    )


def test_merge_output_onto_an_input_is_refused(tmp_path: Path, partials: list[Path]) -> None:
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(partials[0].read_bytes())
    link = tmp_path / "link.parquet"
    os.link(copy, link)
    before = copy.read_bytes()
    line = one_line_error(cli("merge", copy, partials[1], "--out", link), 2)
    assert "would be overwritten" in line
    assert copy.read_bytes() == before


BAD_INPUTS = {
    "missing file": (lambda d: d / "nope.parquet", 2, "no such file"),
    "unreadable parquet": (lambda d: _write(d / "bad.parquet", b"not parquet"), 1, "bad.parquet"),
    "malformed jsonl": (
        lambda d: _write(d / "bad.jsonl", b'{"confidence": 0.5, "correct": 1}\n{"confidence": \n'),
        1,
        "bad.jsonl",
    ),
    "out-of-range confidence": (
        lambda d: _write(d / "p.csv", b"model,confidence,correct\na,0.5,1\nb,1.5,0\n"),
        1,
        "model='b'",
    ),
    "integer-looking csv": (
        lambda d: _write(
            d / "ints.csv",
            ("model,confidence,correct\n" + "a,1,1\n" * 3000 + "b,0.5,0\n").encode(),
        ),
        0,
        "",
    ),
}


def _write(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
@pytest.mark.parametrize("command", ["report", "stats"])
def test_bad_inputs_give_one_line_and_the_right_exit_code(
    tmp_path: Path, case: str, command: str
) -> None:
    make, code, needle = BAD_INPUTS[case]
    path = make(tmp_path)
    out = tmp_path / ("out" if command == "report" else "out.parquet")
    result = cli(command, path, "--by", "model", "--out", out)
    if code == 0:
        assert result.returncode == 0, result.stderr
        return
    assert needle in one_line_error(result, code)


def test_missing_column_names_the_column(tmp_path: Path) -> None:
    result = cli("report", PREDICTIONS, "--pooled", "--confidence", "prob", "--out", tmp_path / "o")
    assert "--confidence prob" in one_line_error(result, 1)


@pytest.mark.parametrize(
    "args",
    [["--bins", "0"], ["--by", "model", "--by", "model"], ["--by", "model,,task"],
     ["--binning", "quantile", "--closed", "right"], ["--schema", "x=complex"]],
    ids=["bins-0", "by-twice", "empty-key", "quantile-closed", "bad-schema"],
)  # fmt: skip
def test_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    one_line_error(cli("report", PREDICTIONS, *args, "--out", tmp_path / "o"), 2)


def test_usage_errors_are_found_before_any_computing(tmp_path: Path) -> None:
    result = cli("stats", PREDICTIONS, "--pooled", "--out", tmp_path / "missing" / "s.parquet")
    assert "does not exist" in one_line_error(result, 2)
    result = cli(
        "stats", PREDICTIONS, "--pooled", "--binning", "quantile", "--out", tmp_path / "q.parquet"
    )
    assert "not mergeable" in one_line_error(result, 2)


def test_token_columns_named_like_their_roles_need_no_flag() -> None:
    bare = cli("compare", PREDICTIONS, "--token-file", TOKENS, "--by", "model", "--all-columns")
    flags = ("--tokens", "tokens", "--bytes", "bytes", "--words", "words")
    stated = cli(
        "compare", PREDICTIONS, "--token-file", TOKENS, "--by", "model", "--all-columns", *flags
    )
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout == stated.stdout
    assert "word_perplexity" in bare.stdout and "bits_per_byte" in bare.stdout
    # --token-level overrides the column: each row is one token, another perplexity
    rows = cli("compare", PREDICTIONS, "--token-file", TOKENS, "--by", "model", "--token-level")
    assert rows.returncode == 0, rows.stderr
    assert rows.stdout != bare.stdout


def test_gpu_engine_falls_back_with_one_message() -> None:
    result = cli("compare", PREDICTIONS, "--by", "model", "--engine", "gpu", "--quiet")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "streaming engine" in lines[0]
    assert "overconfident" in result.stdout


def test_interrupted_write_leaves_no_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "stats.parquet"
    original = pl.DataFrame.write_parquet

    def half_written(self: pl.DataFrame, file: object, **kwargs: object) -> None:
        Path(str(file)).write_bytes(b"PAR1 half")
        raise KeyboardInterrupt

    monkeypatch.setattr(pl.DataFrame, "write_parquet", half_written)
    assert main(["stats", str(PREDICTIONS), "--by", "model", "--out", str(out)]) == 130
    monkeypatch.setattr(pl.DataFrame, "write_parquet", original)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_python_m_entry_points() -> None:
    for module in ("calib_frames", "calib_frames.cli"):
        result = subprocess.run(
            [sys.executable, "-m", module, "--help"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert all(cmd in result.stdout for cmd in ("compare", "report", "stats", "merge"))


def test_combinations_of_partials_cover_all_rows(partials: list[Path]) -> None:
    total = pl.read_parquet(PREDICTIONS).height
    for r in range(1, 4):
        for combo in itertools.combinations(partials, r):
            merged = cf.read_statistics(*combo).merged()
            assert merged["count"].sum() <= total
    assert cf.read_statistics(*partials).merged()["count"].sum() == total


def test_report_writes_intervals_html_and_charts(tmp_path: Path) -> None:
    out = tmp_path / "report"
    argv = ["report", str(PREDICTIONS), "--by", "model,task", "--out", str(out), "--png"]
    assert main(argv) == 0
    table = pl.read_parquet(out / "comparison.parquet")
    for name in ("brier", "accuracy"):
        low, high = table[f"{name}_ci_low"], table[f"{name}_ci_high"]
        assert ((low <= table[name]) & (table[name] <= high)).all(), name
    # the ECE's interval is for the population ECE: at or below the upward-biased plug-in
    assert (table["ece_ci_low"] <= table["ece"]).all()
    assert (table["ece_ci_low"] <= table["ece_ci_high"]).all()
    assert {"ece_noise_floor", "ece_p_value", "ece_beyond_noise"} <= set(table.columns)
    # the overconfident model's ECE is far above its noise floor on every task
    over = table.filter(pl.col("model") == "overconfident")
    assert over["ece_beyond_noise"].all()
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<svg" in html or "vegaEmbed" in html or "vega" in html
    assert "https://" not in html.split("Content-Security-Policy", 1)[0]
    # the verdict in words, in the page's table; the leaderboard first
    assert "within noise, adjusted p = " in html and "overconfident, p &lt; 1e-12" in html
    assert html.index("<h2>Leaderboard</h2>") < html.index("<h2>Comparison</h2>")
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "reliability_diagrams.png" in pngs
    assert "risk_coverage_curves.png" in pngs
    assert "reliability_diagram_of_one_group.png" not in pngs  # its dropdowns need the page
    assert "Risk–coverage curves" in html
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_rerun_replaces_the_report_folder_whole(tmp_path: Path) -> None:
    out = tmp_path / "report"
    first = ["report", str(PREDICTIONS), "--by", "model,task", "--out", str(out), "--quiet"]
    assert main([*first, "--no-uncertainty"]) == 0
    (out / "report.html").write_text("the first run's page")
    assert main([*first, "--no-uncertainty", "--no-charts"]) == 0
    assert not (out / "report.html").exists()  # not left beside the new tables
    listed = set(json.loads((out / ".calib-frames-report").read_text())["files"])
    assert {p.name for p in out.iterdir()} == listed | {".calib-frames-report"}
    assert not [p for p in tmp_path.iterdir() if p.name != "report"]  # no staging left
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    # a failed run (bad data) leaves the previous report whole, and no folder beside it
    bad = tmp_path / "bad.csv"
    bad.write_text("model,task,confidence,correct\na,t,1.5,1\n")
    assert main(["report", str(bad), "--by", "model,task", "--out", str(out)]) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "report"]


def test_report_refuses_a_folder_of_other_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    result = cli("report", PREDICTIONS, "--by", "model", "--out", tmp_path, "--no-charts")
    assert "holds files no calib-frames report wrote" in one_line_error(result, 2)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_progress_lines_per_stage_whatever_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from calib_frames.cli import common

    monkeypatch.setattr(common, "PROGRESS_SECONDS", -1.0)  # every stage "takes long"
    argv = ["report", str(PREDICTIONS), "--by", "model,task", "--out", str(tmp_path / "r")]
    assert main([*argv, "--no-charts"]) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3, lines  # read, metrics, tables; stderr is not a terminal here
    assert all(re.fullmatch(r"calib-frames: .+ in \d+\.\d s.*", line) for line in lines)
    assert lines[0].startswith("calib-frames: read 1 file(s)")
    assert main([*argv, "--no-charts", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_report_without_uncertainty_or_charts(tmp_path: Path) -> None:
    out = tmp_path / "plain"
    args = ["report", str(PREDICTIONS), "--by", "model", "--out", str(out)]
    assert main([*args, "--no-uncertainty", "--no-charts"]) == 0
    table = pl.read_parquet(out / "comparison.parquet")
    assert not any(c.endswith("_ci_low") for c in table.columns)
    assert not (out / "report.html").exists()


def test_report_reads_lm_eval_folders_and_reproduces_lm_eval(tmp_path: Path) -> None:
    out = tmp_path / "lm"
    assert main(["report", str(DATA / "lm_eval"), "--out", str(out), "--no-charts"]) == 0
    table = pl.read_parquet(out / "comparison.parquet")
    assert table.columns[:2] == ["model", "task"]
    assert set(table["model"]) == {"calib/tiny-gpt2-m", "calib/tiny-gpt2-s"}
    for ours in ("accuracy", "acc_norm", "brier_multiclass", "bits_per_byte"):
        theirs = table[f"{ours}_lm_eval"]
        present = theirs.is_not_null()
        assert present.any(), ours
        assert table[ours].filter(present).to_list() == pytest.approx(
            theirs.filter(present).to_list(), rel=1e-12
        ), ours


def test_messages_name_the_fix_in_the_interface_in_use() -> None:
    result = cli("compare", PREDICTIONS, "--by", "model", "--confidence", "prob")
    line = one_line_error(result, 1)
    assert "--confidence prob" in line and "--confidence COL" in line and "=" not in line
    frame = pl.read_parquet(PREDICTIONS)
    with pytest.raises(cf.TableError, match=r"confidence='prob'.*confidence=\"COL\""):
        cf.calibration_metrics(frame, confidence="prob")
    with pytest.raises(cf.ArgumentError, match=r"pass a list: by=\['model', 'task'\]"):
        cf.calibration_metrics(frame, by="model,task")


@pytest.mark.parametrize("command", ["compare", "report", "stats", "merge"])
def test_help_shows_the_defaults_and_an_example(command: str) -> None:
    result = cli(command, "--help")
    assert result.returncode == 0, result.stderr
    assert f"example:\n  calib-frames {command} " in result.stdout
    if command != "merge":
        assert "number of bins (default 10)" in result.stdout
        assert "(default: streaming)" in result.stdout  # --engine
    if command == "report":
        assert "(default: 200)" in result.stdout and "(default: 0.95)" in result.stdout
