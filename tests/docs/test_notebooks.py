"""Every notebook in notebooks/ runs top to bottom in a real Jupyter kernel of this interpreter.

The kernel is started from a kernelspec written into a temporary folder whose ``argv`` names
``sys.executable``, so it runs in the same environment as pytest whatever kernelspecs the
machine has installed. Execution happens on an in-memory copy of each notebook: nothing is
written back to ``notebooks/``. The tests are parametrised over ``notebooks/*.ipynb``: every
notebook is committed without outputs, runs from the repository root and from ``notebooks/``,
prints its data folder, ends by printing ``All ... checks passed.`` and fails loudly when no
data folder is found. The notebooks assert their own facts (the quick start: overconfidence
signs that the data generator fixes, the Brier decomposition adding up, merged partial
tables equal to the full table; the lm-eval notebook: lm-eval's aggregates reproduced to
1e-12); :data:`EXPECTED` adds a few printed lines per notebook.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# Each test here starts a heavy component (Spark, a browser, a kernel or a benchmark process).
pytestmark = pytest.mark.slow

# Test-only reference libraries: a missing one skips this module, it does not break collection.
nbformat = pytest.importorskip("nbformat")
KernelSpecManager = pytest.importorskip("jupyter_client.kernelspec").KernelSpecManager
AsyncKernelManager = pytest.importorskip("jupyter_client.manager").AsyncKernelManager
NotebookClient = pytest.importorskip("nbclient").NotebookClient
CellExecutionError = pytest.importorskip("nbclient.exceptions").CellExecutionError
NotebookNode = pytest.importorskip("nbformat").NotebookNode

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL_NAME = "calib-frames-tests"
TIMEOUT_S = 300  # per cell; a guard against a hung kernel, not a timing assertion


@pytest.fixture
def kernel_manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncKernelManager:
    """A kernel manager for an ipykernel running on ``sys.executable``, isolated from the
    user's IPython profile and Jupyter runtime folder."""
    spec_dir = tmp_path / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "calib_frames tests",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    return AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)


def execute(notebook: NotebookNode, cwd: Path, km: AsyncKernelManager) -> NotebookNode:
    """Run every cell in ``cwd``; raises CellExecutionError on the first failing cell.

    ``cleanup_kc=True``: nbclient leaves a kernel it did not create running by default; shut it
    down and close its channels here (else unclosed zmq sockets surface as ResourceWarnings).
    """
    client = NotebookClient(
        notebook,
        km=km,
        timeout=TIMEOUT_S,
        startup_timeout=TIMEOUT_S,
        allow_errors=False,
        resources={"metadata": {"path": str(cwd)}},
    )
    return client.execute(cleanup_kc=True)


def printed_text(notebook: NotebookNode) -> str:
    """Everything the code cells printed (stream outputs), in order."""
    return "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "stream"
    )


EXPECTED: dict[str, list[str]] = {
    "quickstart.ipynb": [
        "merged halves reproduce the full-data metrics",
        "All quick-start checks passed.\n",
    ],
    "lm_eval_calibration.ipynb": [
        "largest relative difference to lm-eval's own numbers:",
        "All lm-eval calibration checks passed.\n",
    ],
    "compare_models.ipynb": ["All model-comparison checks passed.\n"],
    "recalibration.ipynb": ["fitted T = ", "All recalibration checks passed.\n"],
    "inspect_ai_leaderboard.ipynb": [
        "inspect's accuracy reproduced for 8 (model, task, scorer) groups",
        "All inspect_ai leaderboard checks passed.\n",
    ],
    "harness_calibration.ipynb": [
        "inspect reported ece",
        "All harness calibration checks passed.\n",
    ],
}


def check_quickstart(text: str) -> None:
    # The generator's truth (data/README.md): c**1.6 < c < c**0.6, so the signs are known.
    lines = text.splitlines()
    for model in ("calibrated", "overconfident", "underconfident"):
        verdicts = [line for line in lines if line.startswith(f"{model}: overconfidence ")]
        assert len(verdicts) == 1, lines
        assert verdicts[0].endswith(f"-> {model}")


SPECIFIC = {"quickstart.ipynb": check_quickstart}


def test_every_notebook_is_listed() -> None:
    names = {path.name for path in NOTEBOOKS}
    assert {"quickstart.ipynb", "lm_eval_calibration.ipynb", "compare_models.ipynb"} <= names
    assert names <= set(EXPECTED), f"add the new notebook's printed lines to EXPECTED: {names}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code_cells
    for cell in code_cells:
        assert cell.outputs == [], f"cell {cell.get('id')} has stored outputs"
        assert cell.execution_count is None, f"cell {cell.get('id')} has an execution count"
        assert "/work/" not in cell.source and "/home/" not in cell.source, "absolute path"
    markdown = [cell for cell in notebook.cells if cell.cell_type == "markdown"]
    assert len(markdown) >= 5, "one explanation per step"


@pytest.mark.parametrize("cwd", [ROOT, ROOT / "notebooks"], ids=["repo-root", "notebooks-dir"])
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(
    path: Path, cwd: Path, kernel_manager: AsyncKernelManager
) -> None:
    before = path.read_bytes()
    notebook = nbformat.read(path, as_version=4)
    probe = "import sys\nprint('kernel prefix:', sys.prefix)"
    notebook.cells.append(nbformat.v4.new_code_cell(probe))

    executed = execute(notebook, cwd, kernel_manager)

    errors = [
        output
        for cell in executed.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert errors == []
    code_cells = [cell for cell in executed.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code_cells)
    text = printed_text(executed)
    assert f"kernel prefix: {sys.prefix}\n" in text
    assert f"data folder: {ROOT / 'data'}\n" in text
    for line in EXPECTED[path.name]:
        assert line in text, (path.name, line)
    SPECIFIC.get(path.name, lambda _: None)(text)
    # Executed in memory only: the committed file is untouched.
    assert path.read_bytes() == before


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_fails_loudly_without_the_data(
    path: Path, tmp_path: Path, kernel_manager: AsyncKernelManager
) -> None:
    """Run from a folder with no data/ above it: the first code cell must raise, not guess."""
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    notebook = nbformat.read(path, as_version=4)
    with pytest.raises(CellExecutionError, match="FileNotFoundError"):
        execute(notebook, workdir, kernel_manager)
