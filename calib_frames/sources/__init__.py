"""Sources: what evaluation tools write → the engine's frames, as polars transformations.

* :mod:`~calib_frames.sources.options`: multiple-choice option log-likelihoods →
  per-question predictions (raw and length-normalised), all-options probabilities,
  the multi-class Brier score.
* :mod:`~calib_frames.sources.text`: free-text answers → confidence from token
  log-probabilities, verbalised confidence, sampling consistency.
* :mod:`~calib_frames.sources.files`: generic parquet/CSV/JSONL readers (globs, folders,
  hive partitions, column mapping); the ``*_skipping`` readers leave bad records out
  and count them.
* :mod:`~calib_frames.sources.lm_eval`: lm-evaluation-harness ``--log_samples`` folders.
* :mod:`~calib_frames.sources.openai`: OpenAI-style chat completions with logprobs.
* :mod:`~calib_frames.sources.inspect_ai`: inspect_ai ``.eval``/``.json`` logs.
* :mod:`~calib_frames.sources.helm`: HELM run folders.
* :mod:`~calib_frames.sources.lighteval`: lighteval ``--save-details`` parquet files.
"""

from calib_frames._deprecated import moved
from calib_frames.sources.files import (
    ScanResult,
    scan_predictions,
    scan_predictions_skipping,
    scan_table,
    scan_table_skipping,
    scan_tokens,
    scan_tokens_skipping,
)
from calib_frames.sources.helm import read_helm_stats, scan_helm_instances
from calib_frames.sources.inspect_ai import (
    read_inspect_logs,
    scan_inspect_options,
    scan_inspect_samples,
)
from calib_frames.sources.lighteval import scan_lighteval_options
from calib_frames.sources.lm_eval import (
    read_lm_eval_reported,
    read_lm_eval_runs,
    scan_lm_eval_documents,
    scan_lm_eval_options,
)
from calib_frames.sources.openai import (
    openai_answer_confidence,
    scan_openai_choices,
    scan_openai_tokens,
)
from calib_frames.sources.options import choice_predictions, option_probabilities
from calib_frames.sources.text import (
    IPCC_WORDS,
    KENT_WORDS,
    VERBALIZED_PRESETS,
    Skipped,
    answer_confidence,
    sample_consistency,
    verbalized_confidence,
    with_verbalized_confidence,
    with_verbalized_confidence_skipping,
)

__all__ = [
    "IPCC_WORDS",
    "KENT_WORDS",
    "VERBALIZED_PRESETS",
    "ScanResult",
    "Skipped",
    "answer_confidence",
    "choice_predictions",
    "openai_answer_confidence",
    "option_probabilities",
    "read_helm_stats",
    "read_inspect_logs",
    "read_lm_eval_reported",
    "read_lm_eval_runs",
    "sample_consistency",
    "scan_helm_instances",
    "scan_inspect_options",
    "scan_inspect_samples",
    "scan_lighteval_options",
    "scan_lm_eval_documents",
    "scan_lm_eval_options",
    "scan_openai_choices",
    "scan_openai_tokens",
    "scan_predictions",
    "scan_predictions_skipping",
    "scan_table",
    "scan_table_skipping",
    "scan_tokens",
    "scan_tokens_skipping",
    "verbalized_confidence",
    "with_verbalized_confidence",
    "with_verbalized_confidence_skipping",
]

__getattr__ = moved(
    "calib_frames.sources",
    {
        "lm_eval_comparison": "calib_frames.comparison.lm_eval_comparison",
        "lm_eval_runs": "calib_frames.sources.read_lm_eval_runs",
        "lm_eval_reported": "calib_frames.sources.read_lm_eval_reported",
    },
)
