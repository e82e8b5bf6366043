"""Tables that put groups side by side: metrics and perplexity per group, and lm-eval's own.

* :func:`comparison_table`: calibration metrics and perplexity joined on their shared keys.
* :func:`lm_eval_comparison`: lm-evaluation-harness' metrics recomputed from its samples,
  next to the values it reported.
"""

from calib_frames.comparison.lm_eval import lm_eval_comparison
from calib_frames.comparison.table import comparison_table

__all__ = ["comparison_table", "lm_eval_comparison"]
