"""Ranking metrics per group, TREC readers and paired significance tests.

Ranking metrics (hit, precision, recall, F1, MRR, MAP, NDCG, R-precision) per group,
TREC run/qrels readers, per-query metrics as polars expressions, and paired significance
tests between models, over polars frames.

==========================================  ===============================================
``ranking_metrics(run, qrels, by=...)``     one row per group: means over the queries
``ranking_metrics_per_query(run, qrels)``   one row per group × query
``paired_significance(per_query, ...)``     permutation / bootstrap tests, Holm and BH
``scan_trec_run``, ``scan_trec_qrels``      lazy readers of TREC files
:mod:`calib_frames.ranking.expr`            reciprocal rank, DCG, ... as ``pl.Expr``
==========================================  ===============================================

See :mod:`calib_frames.ranking.metrics` for the definitions and the tie / query policies.
The chart of a ranking-metrics table is :func:`calib_frames.plot.metric_at_k_chart`.
"""

from calib_frames.ranking import expr
from calib_frames.ranking.metrics import metric_columns, ranking_metrics, ranking_metrics_per_query
from calib_frames.ranking.significance import paired_significance
from calib_frames.ranking.trec import scan_trec_qrels, scan_trec_run

__all__ = [
    "expr",
    "metric_columns",
    "paired_significance",
    "ranking_metrics",
    "ranking_metrics_per_query",
    "scan_trec_qrels",
    "scan_trec_run",
]
