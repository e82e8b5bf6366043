"""The row pass: the only stage that touches every input row.

It turns rows into small additive sums and counts the rows that break the contract in
the same pass; everything after it (bin statistics, metrics, perplexity) works on its
output. :mod:`calib_frames.engine.local` runs it on polars (streaming engine by default);
:mod:`calib_frames.engine.spark` runs the same pass on Apache Spark (optional extra) and
returns the same cell table, so the reduction and the math stay in one place.

=========================  ==========================================================
function                   output (see :mod:`calib_frames.schema`)
=========================  ==========================================================
``prediction_cells``       ``CELLS``: one row per (keys…, bin, outcome) with the sums
``token_sums``             ``NLL_SUMS`` plus invalid-row counts, one row per group
=========================  ==========================================================
"""

from calib_frames.engine.local import PredictionPass, TokenPass, prediction_cells, token_sums

__all__ = ["PredictionPass", "TokenPass", "prediction_cells", "token_sums"]
