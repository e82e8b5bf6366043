"""Sources: what evaluation tools write → the engine's frames, as polars transformations.

* :mod:`~calib_frames.sources.options`: multiple-choice option log-likelihoods →
  per-question predictions (raw and length-normalised), all-options probabilities,
  the multi-class Brier score.
* :mod:`~calib_frames.sources.text`: free-text answers → confidence from token
  log-probabilities, verbalised confidence, sampling consistency; :func:`~calib_frames.
  sources.text.clean_text`, the one rule by which every reader compares answer text.
* :mod:`~calib_frames.sources.paths`: paths, globs and folders → files and their formats;
  :mod:`~calib_frames.sources.read_errors`: read failures → errors naming file and line.
* :mod:`~calib_frames.sources.files`: generic parquet/CSV/JSONL readers (column mapping,
  hive partitions); :func:`scan_table_skipping` leaves bad records out and counts them.
* :mod:`~calib_frames.sources.logs`: the evaluation-log registry: one record per tool
  (how it is found, its keys, its reader, its latest-run policy);
  :func:`scan_eval_logs` reads any of them as the command line does.
* :mod:`~calib_frames.sources.lm_eval`: lm-evaluation-harness ``--log_samples`` folders.
* :mod:`~calib_frames.sources.inspect_ai`: inspect_ai ``.eval``/``.json`` logs.
* :mod:`~calib_frames.sources.helm`: HELM run folders.
* :mod:`~calib_frames.sources.lighteval`: lighteval ``--save-details`` parquet files.
* :mod:`~calib_frames.sources.openai`: OpenAI-style chat completions with logprobs.
"""

from calib_frames.sources.files import ScanResult, scan_table, scan_table_skipping
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
from calib_frames.sources.logs import (
    LOG_FORMATS,
    EvalLogs,
    LogFormat,
    detect_log_format,
    latest_runs,
    log_formats_in,
    scan_eval_logs,
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
    "LOG_FORMATS",
    "VERBALIZED_PRESETS",
    "EvalLogs",
    "LogFormat",
    "ScanResult",
    "Skipped",
    "answer_confidence",
    "choice_predictions",
    "detect_log_format",
    "latest_runs",
    "log_formats_in",
    "openai_answer_confidence",
    "option_probabilities",
    "read_helm_stats",
    "read_inspect_logs",
    "read_lm_eval_reported",
    "read_lm_eval_runs",
    "sample_consistency",
    "scan_eval_logs",
    "scan_helm_instances",
    "scan_inspect_options",
    "scan_inspect_samples",
    "scan_lighteval_options",
    "scan_lm_eval_documents",
    "scan_lm_eval_options",
    "scan_openai_choices",
    "scan_openai_tokens",
    "scan_table",
    "scan_table_skipping",
    "verbalized_confidence",
    "with_verbalized_confidence",
    "with_verbalized_confidence_skipping",
]
