"""The README opens with the two commands a newcomer needs, and CI runs the same test command."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
SCRIPT = Path(sys.executable).with_name("calib-frames")


def bash_blocks() -> list[str]:
    """The contents of the README's ```bash fenced blocks, in order."""
    text = README.read_text(encoding="utf-8")
    return [block.strip() for block in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)]


def test_readme_opens_with_the_run_and_test_commands() -> None:
    blocks = bash_blocks()
    assert len(blocks) >= 2
    run_command, test_command = blocks[:2]
    for block in (run_command, test_command):
        assert "\n" not in block, "each command is one line"
        assert block.startswith("python3 -m venv .venv && .venv/bin/pip install")
    assert ".venv/bin/calib-frames report data/synthetic_predictions.parquet" in run_command
    assert "--token-file data/synthetic_tokens.parquet" in run_command
    assert run_command.split("&&")[-1].count(" --") <= 4, "the main job takes at most 4 flags"
    assert "'.[test]'" in test_command
    assert test_command.endswith(".venv/bin/python -m pytest")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_command = bash_blocks()[1]
    lines = CI.read_text(encoding="utf-8").splitlines()
    assert any(line.startswith(test_command) for line in lines), test_command


@pytest.mark.slow
def test_readme_run_command_works(tmp_path: Path) -> None:
    """The part of the first command after the install runs, prints the three models and
    writes its outputs (into a temporary folder here, not into the checkout)."""
    run_command = bash_blocks()[0]
    invocation = run_command.split("&&")[-1].strip()
    argv = shlex.split(invocation)
    assert argv[0] == ".venv/bin/calib-frames"
    assert argv[-2:] == ["--out", "report"]
    argv[-1] = str(tmp_path / "report")
    program = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "calib_frames.cli"]
    result = subprocess.run(
        [*program, *argv[1:]], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    for model in ("calibrated", "overconfident", "underconfident"):
        assert model in result.stdout
    for column in ("ece", "perplexity"):
        assert column in result.stdout
    assert (tmp_path / "report" / "comparison.parquet").is_file()
