"""A plain-Python reference of the ranking metrics (loops over ranked lists), for tests.

Deliberately written from the textbook definitions, independently of the polars query:
one query at a time, an explicit ranked list, explicit tie groups. ``average`` ties are
computed by brute force: every ordering of every tie group, equally weighted.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence


def strict_metrics(
    ranked: Sequence[float], judged: Sequence[float], threshold: float, cutoffs: Sequence[int]
) -> dict[str, float]:
    """Metrics of one query: ``ranked`` = relevance of the retrieved items in rank order,
    ``judged`` = relevance of every judged item of the query."""
    big_r = sum(1 for r in judged if r >= threshold)
    binary = [1.0 if r >= threshold else 0.0 for r in ranked]
    ideal = sorted((r for r in judged if r > 0), reverse=True)

    def dcg(gains: Sequence[float], k: int | None, exp: bool) -> float:
        top = gains if k is None else gains[:k]
        return sum(
            ((2.0**g - 1.0) if exp else g) / math.log2(i + 2) for i, g in enumerate(top) if g > 0
        )

    def ndcg(k: int | None, exp: bool) -> float:
        best = dcg(ideal, k, exp)
        return dcg(list(ranked), k, exp) / best if best > 0 else 0.0

    def ap(k: int | None) -> float:
        if big_r == 0:
            return 0.0
        found, total = 0, 0.0
        for i, b in enumerate(binary if k is None else binary[:k]):
            if b:
                found += 1
                total += found / (i + 1)
        return total / big_r

    first = next((i + 1 for i, b in enumerate(binary) if b), None)
    out = {
        "mrr": 1.0 / first if first else 0.0,
        "map": ap(None),
        "ndcg": ndcg(None, exp=False),
        "ndcg_exp": ndcg(None, exp=True),
        "r_precision": sum(binary[:big_r]) / big_r if big_r else 0.0,
    }
    for k in cutoffs:
        found = sum(binary[:k])
        p = found / k
        rec = found / big_r if big_r else 0.0
        out[f"hit@{k}"] = 1.0 if first is not None and first <= k else 0.0
        out[f"precision@{k}"] = p
        out[f"recall@{k}"] = rec
        out[f"f1@{k}"] = 2 * p * rec / (p + rec) if p + rec > 0 else 0.0
        out[f"mrr@{k}"] = 1.0 / first if first is not None and first <= k else 0.0
        out[f"map@{k}"] = ap(k)
        out[f"ndcg@{k}"] = ndcg(k, exp=False)
        out[f"ndcg_exp@{k}"] = ndcg(k, exp=True)
    return out


def query_metrics(
    retrieved: Sequence[tuple[str, float]],
    qrels: dict[str, float],
    *,
    threshold: float,
    cutoffs: Sequence[int],
    ties: str,
) -> dict[str, float]:
    """Metrics of one query from (item, score) pairs in input order."""
    judged = list(qrels.values())
    if ties == "item_desc":
        order = sorted(retrieved, key=lambda pair: (pair[1], pair[0]), reverse=True)
        return strict_metrics([qrels.get(i, 0.0) for i, _ in order], judged, threshold, cutoffs)
    if ties == "input":
        order = sorted(retrieved, key=lambda pair: -pair[1])  # stable: input order in ties
        return strict_metrics([qrels.get(i, 0.0) for i, _ in order], judged, threshold, cutoffs)
    # average: every ordering of every tie group
    scores = sorted({s for _, s in retrieved}, reverse=True)
    groups = [[qrels.get(i, 0.0) for i, s in retrieved if s == value] for value in scores]
    totals: dict[str, float] = {}
    count = 0
    for choice in itertools.product(*(set(itertools.permutations(g)) for g in groups)):
        ranked = [r for group in choice for r in group]
        for name, value in strict_metrics(ranked, judged, threshold, cutoffs).items():
            totals[name] = totals.get(name, 0.0) + value
        count += 1
    # distinct permutations of equal relevances are equally likely orderings of the items
    return {name: value / count for name, value in totals.items()}
