"""The metric columns: one record each with its title, better direction, interval and format.

Every table of the package names a metric by the same column (``ece``, ``brier``,
``perplexity``, ``ece_task_mean``, …); this registry says once how each is written and
read, for the charts (:mod:`calib_frames.plot`), the report (:mod:`calib_frames.report`),
the command line's summaries and the drift verdicts:

==============  ===========================================================================
field           meaning
==============  ===========================================================================
``column``      the column's name in every table that has it
``title``       the metric in words: chart axes, legends and tooltips ("Brier score")
``label``       the short name: a table's column header and a verdict's clause ("Brier")
``better``      ``"lower"``, ``"higher"``, ``"zero"`` (closest to 0 is best: the signed gap
                ``overconfidence``) or ``"none"`` (not a score: counts, noise floor, p-values)
``interval``    whether the package's tables carry ``<column>_ci_low`` / ``<column>_ci_high``
                (:func:`~calib_frames.compare`, :func:`~calib_frames.leaderboard`)
``format``      the number format, a d3-format specifier that Python's :func:`format` reads
                the same way (``".4f"``, ``"+.4f"``, ``",.3f"``, ``","``; ``""``: text)
==============  ===========================================================================

A column the registry does not know reads as itself (title and label are its name, no
better direction, ``".4f"``); an interval bound ``<column>_ci_low`` / ``_ci_high`` of a known
column reads as "<title> interval, low" / "high", in its metric's format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Literal

__all__ = [
    "LEADERBOARD_SUMMARY_COLUMNS",
    "REGISTRY",
    "SUMMARY_COLUMNS",
    "Better",
    "Metric",
    "metric",
]

Better = Literal["lower", "higher", "zero", "none"]
"""Which values of a metric are better: lower, higher, closest to zero, or none."""

BOUNDS = ("_ci_low", "_ci_high")
"""The suffixes of an interval's bound columns."""


@dataclass(frozen=True)
class Metric:
    """How one metric column is named, ranked and written (see the module's table).

    Examples
    --------
    >>> from calib_frames.metrics.registry import metric
    >>> brier = metric("brier")
    >>> brier.title, brier.label, brier.better, brier.bounds
    ('Brier score', 'Brier', 'lower', ('brier_ci_low', 'brier_ci_high'))
    >>> format(0.123456, brier.format), format(-0.01, metric("overconfidence").format)
    ('0.1235', '-0.0100')
    """

    column: str
    title: str
    label: str
    better: Better = "none"
    interval: bool = False
    format: str = ".4f"

    @property
    def bounds(self) -> tuple[str, str]:
        """The interval's columns, ``<column>_ci_low`` and ``<column>_ci_high``."""
        low, high = BOUNDS
        return f"{self.column}{low}", f"{self.column}{high}"

    @property
    def descending(self) -> bool:
        """Whether best-first order sorts this column descending (higher is better)."""
        return self.better == "higher"


def _records() -> dict[str, Metric]:
    """The registered metrics, in the comparison table's order."""
    rows: list[tuple[str, str, str, Better, bool, str]] = [
        # column, title, label, better, interval, format
        ("tasks", "tasks", "tasks", "none", False, ","),
        ("count", "predictions", "predictions", "none", False, ","),
        ("weight", "weight", "weight", "none", False, ","),
        ("accuracy", "accuracy", "accuracy", "higher", True, ".4f"),
        ("acc_norm", "acc_norm", "acc_norm", "higher", False, ".4f"),
        ("mean_confidence", "mean confidence", "mean conf.", "none", True, ".4f"),
        ("overconfidence", "confidence − accuracy", "overconf.", "zero", True, "+.4f"),
        ("ece", "ECE", "ECE", "lower", True, ".4f"),
        ("rmsce", "RMSCE", "RMSCE", "lower", True, ".4f"),
        ("rmsce_debiased", "RMSCE (debiased)", "RMSCE (debiased)", "lower", False, ".4f"),
        ("mce", "MCE", "MCE", "lower", True, ".4f"),
        ("mce_guarded", "MCE of the well-filled bins", "MCE (guarded)", "lower", True, ".4f"),
        ("populated_bins", "populated bins", "populated bins", "none", False, ","),
        ("brier", "Brier score", "Brier", "lower", True, ".4f"),
        ("reliability", "reliability", "reliability", "lower", True, ".4f"),
        ("resolution", "resolution", "resolution", "higher", True, ".4f"),
        ("uncertainty", "uncertainty", "uncertainty", "none", True, ".4f"),
        ("within_bin_variance", "within-bin variance", "within-bin var.", "none", True, ".4f"),
        ("within_bin_covariance", "within-bin covariance", "within-bin cov.", "none", True, ".4f"),
        ("log_loss", "log loss", "log loss", "lower", False, ".4f"),
        (
            "brier_multiclass",
            "Brier score (all options)",
            "Brier (all options)",
            "lower",
            False,
            ".4f",
        ),
        ("ece_null_mean", "ECE of a calibrated model, mean", "ECE null mean", "none", False, ".4f"),
        ("ece_noise_floor", "ECE noise floor", "ECE noise floor", "none", False, ".4f"),
        ("ece_direction", "direction of the ECE's gaps", "direction", "none", False, ""),
        ("ece_p_value", "ECE p-value", "ECE p-value", "none", False, ".2g"),
        ("ece_p_adjusted", "ECE p-value, adjusted", "ECE p (adjusted)", "none", False, ".2g"),
        ("ece_beyond_noise", "ECE beyond noise", "ECE beyond noise", "none", False, ""),
        ("verdict", "verdict", "calibration vs noise", "none", False, ""),
        ("nll_count", "NLL rows", "NLL rows", "none", False, ","),
        ("nll_sum", "NLL sum (nats)", "NLL sum", "none", False, ".4f"),
        ("tokens", "tokens", "tokens", "none", False, ","),
        ("bytes", "bytes", "bytes", "none", False, ","),
        ("words", "words", "words", "none", False, ","),
        ("mean_nll", "mean NLL (nats)", "mean NLL", "lower", True, ".4f"),
        ("perplexity", "perplexity (per token)", "perplexity", "lower", True, ",.3f"),
        ("bits_per_token", "bits per token", "bits/token", "lower", True, ".4f"),
        ("byte_perplexity", "byte perplexity", "byte ppl", "lower", False, ",.3f"),
        ("bits_per_byte", "bits per byte", "bits/byte", "lower", True, ".4f"),
        ("word_perplexity", "word perplexity", "word ppl", "lower", False, ",.3f"),
        ("miscalibrated_tasks", "miscalibrated tasks", "miscalibrated tasks", "lower", False, ","),
        # the leaderboard's order (comparison/across_tasks.py)
        ("rank", "rank (task-mean Brier)", "rank", "lower", True, ","),
        (
            "indistinguishable_from_best",
            "indistinguishable from the best",
            "≈ best",
            "none",
            False,
            "",
        ),
        ("not_ranked", "not ranked because", "not ranked", "none", False, ""),
    ]
    records = {row[0]: Metric(*row) for row in rows}
    # the leaderboard's means over tasks: the metric's direction and format
    for name, interval in (
        ("accuracy", True),
        ("ece", True),
        ("mce_guarded", True),
        ("brier", True),
        ("log_loss", False),
        ("perplexity", True),
    ):
        base = records[name]
        column = f"{name}_task_mean"
        records[column] = replace(
            base,
            column=column,
            title=f"{base.title}, task mean",
            label=f"{base.label}, task mean",
            interval=interval,
        )
    return records


REGISTRY: Mapping[str, Metric] = MappingProxyType(_records())
"""Every registered metric column → its :class:`Metric`."""

SUMMARY_COLUMNS = (
    "count",
    "accuracy",
    "overconfidence",
    "ece",
    "ece_ci_low",
    "ece_ci_high",
    "ece_noise_floor",
    "verdict",
    "mce",
    "brier",
    "log_loss",
    "perplexity",
    "bits_per_byte",
)
"""The columns of a comparison table that ``calib-frames compare`` prints (those present)."""

LEADERBOARD_SUMMARY_COLUMNS = (
    "tasks",
    "accuracy",
    "ece",
    "ece_task_mean",
    "brier",
    "log_loss",
    "perplexity",
    "miscalibrated_tasks",
)
"""The columns of a leaderboard that ``calib-frames report`` prints (those present)."""


def metric(column: str) -> Metric:
    """The record of ``column``: registered, the bound of a registered one's interval, or plain.

    Parameters
    ----------
    column
        A column name of a metrics, comparison, perplexity or leaderboard table.

    Returns
    -------
    Metric
        The registered record; for ``<metric>_ci_low`` / ``_ci_high`` of a registered
        metric, its title and label with "interval, low" / "high" and its format (no
        better direction, no interval of its own); for any other column, a record whose
        title and label are the name itself, no better direction and format ``".4f"``.

    Examples
    --------
    >>> from calib_frames.metrics.registry import metric
    >>> metric("ece_task_mean").label, metric("ece_task_mean").better
    ('ECE, task mean', 'lower')
    >>> metric("ece_ci_low").title, metric("perplexity_ci_high").format
    ('ECE interval, low', ',.3f')
    >>> plain = metric("acc_lm_eval")
    >>> plain.title, plain.label, plain.better, plain.format
    ('acc_lm_eval', 'acc_lm_eval', 'none', '.4f')
    """
    if column in REGISTRY:
        return REGISTRY[column]
    for suffix, side in zip(BOUNDS, ("low", "high"), strict=True):
        base = REGISTRY.get(column.removesuffix(suffix)) if column.endswith(suffix) else None
        if base is not None:
            return Metric(
                column,
                f"{base.title} interval, {side}",
                f"{base.label} interval, {side}",
                format=base.format,
            )
    return Metric(column, column, column)
