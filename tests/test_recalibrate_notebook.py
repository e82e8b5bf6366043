"""The recalibration notebook runs top to bottom in a Jupyter kernel of this interpreter.

As for the quick-start notebook (tests/test_notebooks.py): the kernel is started from a
kernelspec in a temporary folder whose ``argv`` names ``sys.executable``; execution happens
on an in-memory copy, nothing is written back. The notebook asserts its own facts (the
over-confident model gets T > 1, accuracy is unchanged, ECE falls, cross-fitting scores
every row); this test checks that no cell errored and that the last check printed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "recalibration.ipynb"
KERNEL_NAME = "calib-frames-recalibrate-tests"
TIMEOUT_S = 300  # per cell; a guard against a hung kernel, not a timing assertion


@pytest.fixture
def kernel_manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncKernelManager:
    spec_dir = tmp_path / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "calib_frames recalibration tests",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    return AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)


def test_notebook_is_committed_without_outputs() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(cell.outputs == [] and cell.execution_count is None for cell in code)


def test_recalibration_notebook_runs(kernel_manager: AsyncKernelManager) -> None:
    before = NOTEBOOK.read_bytes()
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook,
        km=kernel_manager,
        timeout=TIMEOUT_S,
        startup_timeout=TIMEOUT_S,
        allow_errors=False,
        resources={"metadata": {"path": str(ROOT)}},
    )
    executed = client.execute(cleanup_kc=True)
    text = "".join(
        output.get("text", "")
        for cell in executed.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "stream"
    )
    assert "fitted T = " in text
    assert text.endswith("All recalibration checks passed.\n")
    assert NOTEBOOK.read_bytes() == before
