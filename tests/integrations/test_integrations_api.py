"""The integrations' packaging: no harness is imported with calib_frames, the extras and the
entry point are declared, and each module imports its harness only when imported itself."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import tomllib

import pytest
from harness_runs import ROOT

HARNESSES = ("inspect_ai", "lm_eval", "lighteval")


def imported_harnesses(code: str) -> list[str]:
    """The harness modules in ``sys.modules`` after ``code`` ran in a fresh interpreter."""
    probe = (
        f"{code}\nimport sys\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HARNESSES!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))


def test_importing_calib_frames_imports_no_harness() -> None:
    code = (
        "import polars as pl\nimport calib_frames as cf\nimport calib_frames.integrations\n"
        "import calib_frames.sources\n"
        "cf.calibration_metrics(pl.DataFrame({'confidence': [0.7], 'correct': [True]}))"
    )
    assert imported_harnesses(code) == []


@pytest.mark.slow
def test_each_integration_imports_its_own_harness() -> None:
    assert imported_harnesses("import calib_frames.integrations.inspect_ai") == ["inspect_ai"]
    assert imported_harnesses("import calib_frames.integrations.lm_eval") == ["lm_eval"]


def test_extras_and_entry_point_are_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert extras["inspect"] == ["inspect-ai>=0.3.285"]
    assert extras["lm-eval"] == ["lm-eval>=0.4.13,<0.5"]
    assert extras["lighteval"] == ["lighteval>=0.13,<0.14", "huggingface_hub<1", "xxhash<4"]
    pins = {"inspect-ai==0.3.285", "lm-eval==0.4.13", "lighteval==0.13.0"}
    assert pins | {"huggingface_hub<1", "xxhash<4"} <= set(extras["test"])
    (target,) = project["entry-points"]["inspect_ai"].values()
    module = importlib.import_module(target)
    assert module.__name__ == "calib_frames.integrations.inspect_ai"
