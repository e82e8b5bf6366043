"""Regenerate ``data/inspect_ai/harness/``: one real inspect_ai run scored by calib_frames.

The run is ``tests/integrations/inspect_runs.py epochs`` (inspect's ``mockllm`` answering 40
multiple-choice questions with log-probabilities, 2 epochs, scorer
``calib_frames.integrations.inspect_ai.choice_with_confidence``), written as an ``.eval``
log; the doctests of :mod:`calib_frames.integrations.inspect_ai` read it. Nothing is
downloaded. Needs inspect-ai (the ``test`` extra). Run from the repository root::

    python data/make_harness_fixtures.py

It deletes and rewrites the folder (the file name carries the run time and a random id).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "inspect_ai" / "harness"


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "INSPECT_LOG_DIR": str(OUT)}
    script = ROOT / "tests" / "integrations" / "inspect_runs.py"
    subprocess.run([sys.executable, str(script), str(OUT), "epochs"], env=env, check=True)


if __name__ == "__main__":
    main()
