"""Groups side by side: the per-group comparison table, the leaderboard, lm-eval's own.

* :func:`comparison_table` (:mod:`~calib_frames.comparison.side_by_side`): calibration
  metrics and perplexity joined on their shared keys.
* :func:`report_tables` (:mod:`~calib_frames.comparison.pipeline`): the report's tables
  from the additive tables in one pipeline: the comparison (metrics, intervals, noise
  floor, verdict, perplexity) and the leaderboard. :func:`compare` (from prediction and
  token rows), :func:`comparison_from_bin_statistics` and :func:`leaderboard` (from the
  additive tables) are its entry points, with the command line's defaults.
* :mod:`~calib_frames.comparison.across_tasks`: how the leaderboard pools and averages a
  model's tasks.
* :func:`lm_eval_comparison` (:mod:`~calib_frames.comparison.beside_lm_eval`):
  lm-evaluation-harness' metrics recomputed from its samples, next to the values it
  reported.
"""

from calib_frames.comparison.beside_lm_eval import lm_eval_comparison
from calib_frames.comparison.pipeline import (
    ReportTables,
    compare,
    comparison_from_bin_statistics,
    leaderboard,
    report_tables,
)
from calib_frames.comparison.side_by_side import comparison_table

__all__ = [
    "ReportTables",
    "compare",
    "comparison_from_bin_statistics",
    "comparison_table",
    "leaderboard",
    "lm_eval_comparison",
    "report_tables",
]
