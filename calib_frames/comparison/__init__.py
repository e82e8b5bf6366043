"""Tables that put groups side by side: metrics and perplexity per group, and lm-eval's own.

* :func:`comparison_table`: calibration metrics and perplexity joined on their shared keys.
* :func:`compare` / :func:`comparison_from_statistics`: the report's table (metrics,
  intervals, noise floor, perplexity) in one call, with the command line's defaults.
* :func:`leaderboard`: one row per model across its tasks, pooled and averaged.
* :func:`lm_eval_comparison`: lm-evaluation-harness' metrics recomputed from its samples,
  next to the values it reported.
"""

from calib_frames.comparison.board import leaderboard
from calib_frames.comparison.lm_eval import lm_eval_comparison
from calib_frames.comparison.report_table import compare, comparison_from_statistics
from calib_frames.comparison.table import comparison_table

__all__ = [
    "compare",
    "comparison_from_statistics",
    "comparison_table",
    "leaderboard",
    "lm_eval_comparison",
]
