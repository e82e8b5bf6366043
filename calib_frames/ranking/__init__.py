"""Ranking metrics (hit, precision, recall, F1, MRR, MAP, NDCG) per group, TREC readers and
paired significance tests between models, over polars frames.

See :mod:`calib_frames.ranking.metrics` for the definitions and policies.
"""

from calib_frames.ranking.metrics import (
    RANKING_METRICS,
    RANKING_PER_QUERY,
    metric_columns,
    ranking_metrics,
    ranking_metrics_per_query,
)

__all__ = [
    "RANKING_METRICS",
    "RANKING_PER_QUERY",
    "metric_columns",
    "ranking_metrics",
    "ranking_metrics_per_query",
]
