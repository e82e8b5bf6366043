"""Regenerate the lighteval fixtures in ``data/lighteval/`` with the real tool, two versions.

lighteval writes per-sample "details" parquet files whose layout changed in 0.11.0: up to
0.10.0 a details row is flat (``example``, ``full_prompt``, ``predictions``, ``choices``,
``gold_index``, ``pred_logits``, ``metrics``, ...); from 0.11.0 it has three struct columns
(``doc``, ``model_response``, ``metric``). This script runs both: **lighteval 0.13.0**
(current layout, into ``data/lighteval/current/``) and **lighteval 0.10.0** (the last release
with the flat layout, into ``data/lighteval/v0_10/``), each in its own venv, with
``lighteval accelerate`` on CPU, ``--save-details``.

Nothing is downloaded (``HF_HUB_OFFLINE=1``, ``HF_DATASETS_OFFLINE=1``): the models are the
two tiny GPT-2 models of ``make_lm_eval_fixtures.py`` (``calib/tiny-gpt2-s``,
``calib/tiny-gpt2-m``, trained by its ``train`` step), the task is a custom lighteval task
(``--custom-tasks``, a module written by this script into the scratch directory, one per
version since the task API changed) over a local JSON-lines data set, ``data/lighteval/
calib_colors/test.jsonl`` (50 colour questions, the template-0 rows of
``data/lm_eval_tasks/calib_colors.jsonl``). Not run in CI.

Run from the repository root (any Python; the two lighteval CLIs are called from their venvs)::

    python data/make_lighteval_fixtures.py all     # or: data | current | old

with ``LIGHTEVAL_NEW`` / ``LIGHTEVAL_OLD`` naming the two ``lighteval`` executables (defaults
``/work/venvs/lighteval/bin/lighteval`` and ``/work/venvs/lighteval010/bin/lighteval``) and
the models under ``CALIB_FIXTURE_MODELS`` (default ``/work/venvs/models``; made by
``make_lm_eval_fixtures.py train``). The two venvs used::

    python3 -m venv /work/venvs/lighteval
    /work/venvs/lighteval/bin/pip install torch==2.13.0 lighteval==0.13.0 \
        "huggingface_hub<1" "transformers<5" "datasets>=4,<5" "xxhash<4"
    python3 -m venv /work/venvs/lighteval010
    /work/venvs/lighteval010/bin/pip install torch==2.13.0 lighteval==0.10.0 \
        transformers==4.52.4 datasets==3.6.0 pyarrow==20.0.0 "xxhash<4"

(giving transformers 4.57.6, huggingface_hub 0.36.2, datasets 4.8.5 for 0.13.0 and
transformers 4.52.4, datasets 3.6.0, numpy 1.26.4 for 0.10.0). Why the pins: with
huggingface_hub 1.x/2.x lighteval 0.13 cannot even build its task registry (its mt_bench task
calls ``HfApi().list_models(model_name=...)`` at import, a keyword those versions removed);
transformers 5 needs huggingface_hub >= 1; xxhash 4 refuses ``str`` input ("Strings must be
encoded before hashing"), which both versions pass when hashing the details; lighteval 0.10
pins numpy < 2 and the newest pyarrow needs numpy >= 2.

Task ``calib_colors`` (0-shot): query ``"Question: what color is the <object>?\\nAnswer:"``,
choices ``" red"``, ``" blue"``, ... (with the leading space; shuffled per question as in the
lm-eval file), gold = ``label``; metrics: accuracy by summed log-likelihood (``acc``) and
accuracy by log-likelihood divided by the choice's length in characters (``acc_norm`` in
0.10.0; ``acc_with_logprob_normalization=LogProbCharNorm`` in 0.13.0).

Commands (cwd = scratch directory holding copies of the saved models as ``calib/<name>``)::

    lighteval accelerate \\
        "model_name=calib/<name>,dtype=float32,device=cpu,batch_size=4,cache_dir=<scratch>" \\
        "calib_colors|0" --custom-tasks calib_tasks_0_13.py --output-dir <out> --save-details
    lighteval accelerate "model_name=calib/<name>,dtype=float32,device=cpu,batch_size=4" \\
        "community|calib_colors|0|0" --custom-tasks calib_tasks_0_10.py --output-dir <out> \\
        --save-details
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
OUT_DIR = DATA_DIR / "lighteval"
TASK_DATA = OUT_DIR / "calib_colors" / "test.jsonl"
MODEL_ROOT = Path(os.environ.get("CALIB_FIXTURE_MODELS", "/work/venvs/models"))
SCRATCH = Path(os.environ.get("CALIB_FIXTURE_SCRATCH", "/tmp/calib_lighteval_run"))
LIGHTEVAL_NEW = os.environ.get("LIGHTEVAL_NEW", "/work/venvs/lighteval/bin/lighteval")
LIGHTEVAL_OLD = os.environ.get("LIGHTEVAL_OLD", "/work/venvs/lighteval010/bin/lighteval")
MODELS = ["tiny-gpt2-s", "tiny-gpt2-m"]

TASKS_0_13 = '''\
"""calib_colors for lighteval 0.13 (written by make_lighteval_fixtures.py)."""

from lighteval.metrics.metrics import Metrics
from lighteval.metrics.normalizations import LogProbCharNorm
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc


def calib_prompt(line, task_name=None):
    return Doc(
        task_name=task_name,
        id=line["id"],
        query=line["question"],
        choices=[" " + c for c in line["choices"]],
        gold_index=line["label"],
        specific={{"qid": line["id"], "kind": line["kind"], "seen_times": line["seen_times"]}},
    )


calib_colors = LightevalTaskConfig(
    name="calib_colors",
    prompt_function=calib_prompt,
    hf_repo={data!r},
    hf_subset="default",
    hf_avail_splits=["test"],
    evaluation_splits=["test"],
    few_shots_split=None,
    few_shots_select=None,
    generation_size=1,
    metrics=[
        Metrics.loglikelihood_acc,
        Metrics.loglikelihood_acc(sample_params={{"logprob_normalization": LogProbCharNorm()}}),
    ],
    version=0,
)

TASKS_TABLE = [calib_colors]
'''

TASKS_0_10 = '''\
"""calib_colors for lighteval 0.10 (written by make_lighteval_fixtures.py)."""

from lighteval.metrics.metrics import Metrics
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc


def calib_prompt(line, task_name=None):
    return Doc(
        task_name=task_name,
        query=line["question"],
        choices=[" " + c for c in line["choices"]],
        gold_index=line["label"],
        specific={{"qid": line["id"], "kind": line["kind"], "seen_times": line["seen_times"]}},
    )


calib_colors = LightevalTaskConfig(
    name="calib_colors",
    prompt_function=calib_prompt,
    suite=["community"],
    hf_repo={data!r},
    hf_subset="default",
    hf_avail_splits=["test"],
    evaluation_splits=["test"],
    few_shots_split=None,
    few_shots_select=None,
    generation_size=1,
    metric=[Metrics.loglikelihood_acc, Metrics.loglikelihood_acc_norm],
    version=0,
)

TASKS_TABLE = [calib_colors]
'''


def write_data() -> None:
    """The 50 template-0 rows of the lm-eval colour task, as a local JSON-lines data set."""
    src = DATA_DIR / "lm_eval_tasks" / "calib_colors.jsonl"
    rows = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if r["id"].endswith("-0")]
    TASK_DATA.parent.mkdir(parents=True, exist_ok=True)
    with TASK_DATA.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    print(f"wrote {len(rows)} rows to {TASK_DATA}")


def _scratch() -> dict[str, str]:
    # the models are copied, not linked: transformers 5 (which trained them) writes
    # ``"tokenizer_class": "TokenizersBackend"``, a class that the transformers 4.x releases
    # these lighteval versions run with do not have; ``PreTrainedTokenizerFast`` loads the same
    # ``tokenizer.json`` in both
    for name in MODELS:
        dest = SCRATCH / "calib" / name
        if dest.is_symlink() or dest.is_file():
            dest.unlink()
        elif dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(MODEL_ROOT / "calib" / name, dest)
        tok_cfg = dest / "tokenizer_config.json"
        cfg = json.loads(tok_cfg.read_text(encoding="utf-8"))
        cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
        tok_cfg.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    # the data set is copied to the scratch directory, so that the datasets cache and the
    # lock files it writes next to a local data folder stay out of the repository
    data = SCRATCH / "calib_colors"
    if data.exists():
        shutil.rmtree(data)
    shutil.copytree(TASK_DATA.parent, data)
    (SCRATCH / "calib_tasks_0_13.py").write_text(TASKS_0_13.format(data=str(data)), "utf-8")
    (SCRATCH / "calib_tasks_0_10.py").write_text(TASKS_0_10.format(data=str(data)), "utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["OMP_NUM_THREADS"] = "1"
    env["HF_HOME"] = str(SCRATCH / "hf_home")
    return env


def _tiny_benchmarks_placeholder(lighteval: str) -> None:
    """Let lighteval 0.13 load its task registry offline.

    lighteval 0.13 imports every built-in task module to build its registry, and
    ``tasks/tasks/tiny_benchmarks.py`` downloads ``tinyBenchmarks.pkl`` (from a code host) at
    import time unless that file is already next to it; offline, that raises
    ``ConnectionError`` and no task can run. The file is only read by the tinyBenchmarks
    metrics, which this task does not use, so an empty placeholder is put there (in the
    lighteval venv, not in this repository).
    """
    python = Path(lighteval).with_name("python")
    code = "import lighteval, os; print(os.path.dirname(lighteval.__file__))"
    pkg = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True)
    placeholder = Path(pkg.stdout.strip()) / "tasks" / "tasks" / "tinyBenchmarks.pkl"
    if placeholder.parent.is_dir() and not placeholder.exists():
        placeholder.write_bytes(b"")
        print(f"wrote empty placeholder {placeholder}")


def _run(lighteval: str, task: str, tasks_file: str, out: Path, extra_args: str = "") -> None:
    env = _scratch()
    _tiny_benchmarks_placeholder(lighteval)
    if out.exists():
        shutil.rmtree(out)
    for name in MODELS:
        cmd = [
            lighteval,
            "accelerate",
            f"model_name=calib/{name},dtype=float32,device=cpu,batch_size=4{extra_args}",
            task,
            "--custom-tasks",
            tasks_file,
            "--output-dir",
            str(out),
            "--save-details",
        ]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=SCRATCH, env=env)
    for p in sorted(out.rglob("*")):
        if p.is_file():
            print(f"{p.relative_to(OUT_DIR)}  {p.stat().st_size} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["data", "current", "old", "all"])
    step = parser.parse_args().step
    if step in ("data", "all"):
        write_data()
    if step in ("current", "all"):
        # 0.13 caches model responses (by default under ~/.cache/huggingface/lighteval) and
        # would answer a rerun from there: the cache goes to a fresh scratch folder instead
        cache = SCRATCH / "lighteval_cache"
        if cache.exists():
            shutil.rmtree(cache)
        args = f",cache_dir={cache}"
        _run(LIGHTEVAL_NEW, "calib_colors|0", "calib_tasks_0_13.py", OUT_DIR / "current", args)
    if step in ("old", "all"):
        _run(LIGHTEVAL_OLD, "community|calib_colors|0|0", "calib_tasks_0_10.py", OUT_DIR / "v0_10")


if __name__ == "__main__":
    main()
