"""Binning: which bin a confidence falls in, as a polars expression.

Conventions
-----------
* Default: 10 equal-width bins on [0, 1], **left-closed** ``[k/M, (k+1)/M)`` with the
  last bin closed at 1.0. ``closed="right"`` gives ``(k/M, (k+1)/M]`` with the first bin
  closed at 0.0. 0.0 and 1.0 always land in the first and last bin, never in an extra one.
* The edges of M equal-width bins are the doubles nearest to k/M (Python's ``k / M``).
  A confidence equal to such an edge lands where the closedness says, for every M.
  Neither ``np.linspace(0, 1, M + 1)`` (which gives 0.30000000000000004 for 3/10),
  division by the bin width (``0.3 / 0.1 == 2.9999999999999996``) nor a bare
  ``floor(p * M)`` (``49 * (1 / 49) < 1``) gets every edge right; here ``floor(p * M)``
  is only a first guess that is corrected by comparing ``p`` with the exact edges.
* Custom edges: any strictly increasing sequence; values outside ``[edges[0], edges[-1]]``
  are invalid input. The closedness rule is the same as above.
* Equal-mass bins (:meth:`Binning.quantile`) are computed per group from ranks:
  a row whose confidence has ``r`` strictly smaller confidences in its group of ``n``
  rows goes to bin ``floor(r * M / n)``. Identical confidences therefore never split
  across bins (a bin may be empty when many rows tie). They need every row of a group
  in memory (a window over the group), are not additive across partial tables, and
  their bounds are the smallest and largest confidence seen in the bin. (scikit-learn's
  ``strategy="quantile"`` instead puts edges at ``np.percentile`` values and bins
  right-closed; reproduce it with ``Binning.edges(np.percentile(p, np.linspace(0, 100,
  M + 1)), closed="right")`` when the percentiles are distinct.)

How other libraries bin (and how to reproduce their numbers)
------------------------------------------------------------
All three treat a binary probability p as the confidence and y as the "accuracy"
(a reliability diagram of P(y = 1)), as calib_frames does; they differ in edges and
closedness:

* scikit-learn ``calibration_curve(strategy="uniform")``: edges
  ``np.linspace(0, 1, M + 1)``, ``np.searchsorted(edges[1:-1], p)`` (side left): bins are
  right-closed with the first closed at 0, and empty bins are dropped from the returned
  arrays. Reproduce with :meth:`Binning.like_sklearn`.
* netcal ``ECE(bins=M)`` / ``MCE``: edges ``np.linspace(0, 1, M + 1)``, counted with
  ``np.histogramdd``: left-closed with the last bin closed at 1. It first clips p to
  ``[eps, 1 - eps]``, which moves 0 up by 2.2e-16 and 1 down by two ulps. Reproduce with
  :meth:`Binning.like_netcal`.
* torchmetrics ``binary_calibration_error``: edges ``torch.linspace(0, 1, M + 1)`` in the
  confidence's dtype, ``torch.bucketize(p, edges, right=True) - 1``: left-closed, but
  p = 1.0 goes to a hidden extra bin M that still counts in the ECE and MCE. Reproduce
  float64 confidences with ``Binning.edges([*torch.linspace(0, 1, M + 1,
  dtype=torch.float64).tolist(), np.nextafter(1, 2)])`` (float32 edges for float32
  confidences): the extra last bin ``[1, 1 + ulp]`` holds exactly the ones. Note that
  torch's float64 edges differ from ``np.linspace``'s (exactly 0.6 and 0.7 for M = 10).

Note that ``np.linspace`` edges are not the exact k/M (for M = 10, 0.30000000000000004,
0.6000000000000001 and 0.7000000000000001), so a confidence written as 0.3 lands in a
different bin in scikit-learn and netcal than with calib_frames' exact edges.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Literal

import polars as pl

from calib_frames.arguments import InstanceOf, Integer, Options, Rule, check_arguments
from calib_frames.exceptions import ArgumentError
from calib_frames.validation import divide

__all__ = ["BINS", "CLOSED", "EDGES", "FIXED_BINS", "Binning", "BinsLike", "as_binning"]

Closed = Literal["left", "right"]
Kind = Literal["uniform", "edges", "quantile"]


def _edges(value: object) -> bool:
    """Whether ``value`` is at least two strictly increasing finite numbers."""
    if isinstance(value, str | bytes) or not isinstance(value, Collection):
        return False
    edges = list(value)
    return (
        len(edges) >= 2
        and all(isinstance(e, Real) and not isinstance(e, bool) and math.isfinite(e) for e in edges)
        and all(a < b for a, b in itertools.pairwise(edges))
    )


_N_BINS = Integer(1)
CLOSED = Options.of(Closed)
"""``closed=``: ``'left'`` or ``'right'``."""
EDGES = Rule(
    "bin edges (two or more finite numbers, strictly increasing)",
    _edges,
    refused=([0.5], [0.0, 0.5, 0.5], [0.0, math.inf], "0,1"),
)
"""Custom bin edges."""


@dataclass(frozen=True)
class Binning:
    """How confidences are assigned to bins.

    Build one with :meth:`uniform`, :meth:`edges` or :meth:`quantile`; every function
    that takes ``bins=`` also accepts an ``int`` (uniform) or a sequence of edges.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"p": [0.0, 0.1, 0.3, 0.95, 1.0]})
    >>> df.select(Binning.uniform(10).assign(pl.col("p")))["p"].to_list()
    [0, 1, 3, 9, 9]
    >>> df.select(Binning.uniform(10, closed="right").assign(pl.col("p")))["p"].to_list()
    [0, 0, 2, 9, 9]
    """

    kind: Kind
    n_bins: int
    closed: Closed = "left"
    bin_edges: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        """Check the fields: ``n_bins`` an integer >= 1, ``closed`` 'left' or 'right'."""
        _N_BINS.check(self.n_bins, "n_bins")
        CLOSED.check(self.closed, "closed")

    # -- constructors -------------------------------------------------------------------

    @classmethod
    def uniform(cls, n_bins: int = 10, *, closed: Closed = "left") -> Binning:
        """``n_bins`` equal-width bins on [0, 1] with exact edges ``k / n_bins``."""
        return cls("uniform", n_bins, closed)

    @classmethod
    @check_arguments(edges=EDGES)
    def edges(cls, edges: Sequence[float], *, closed: Closed = "left") -> Binning:
        """Bins between the given strictly increasing edges (at least two)."""
        values = tuple(float(e) for e in edges)
        return cls("edges", len(values) - 1, closed, values)

    @classmethod
    def quantile(cls, n_bins: int = 10) -> Binning:
        """``n_bins`` equal-mass bins per group (ties kept together; not additive)."""
        return cls("quantile", n_bins)

    @classmethod
    def like_sklearn(cls, n_bins: int = 5) -> Binning:
        """The binning of scikit-learn's ``calibration_curve(..., strategy="uniform")``.

        ``np.linspace`` edges, right-closed (first bin closed at 0).
        """
        import numpy as np  # only here: numpy is not imported with calib_frames

        return cls.edges(np.linspace(0.0, 1.0, n_bins + 1).tolist(), closed="right")

    @classmethod
    def like_netcal(cls, n_bins: int = 10) -> Binning:
        """The binning of netcal's ``ECE(bins=n_bins)`` on binary confidences."""
        import numpy as np  # only here: numpy is not imported with calib_frames

        return cls.edges(np.linspace(0.0, 1.0, n_bins + 1).tolist(), closed="left")

    # -- properties ---------------------------------------------------------------------

    @property
    def additive(self) -> bool:
        """Whether bin statistics of partial data can be merged (fixed edges)."""
        return self.kind != "quantile"

    @property
    def range(self) -> tuple[float, float]:
        """The interval a confidence must lie in: [0, 1], narrowed by custom edges."""
        if self.bin_edges is None:
            return (0.0, 1.0)
        return (max(0.0, self.bin_edges[0]), min(1.0, self.bin_edges[-1]))

    def edge_values(self) -> list[float] | None:
        """The M + 1 edges (exact ``k / M`` for uniform bins), ``None`` for equal-mass bins."""
        if self.kind == "uniform":
            return [k / self.n_bins for k in range(self.n_bins + 1)]
        if self.bin_edges is not None:
            return list(self.bin_edges)
        return None

    def bounds(self) -> pl.DataFrame:
        """One row per bin: ``bin``, ``closed`` and, for fixed edges, the bounds.

        ``closed`` is "left"/"right" (null for equal-mass bins); ``bin_lower`` and
        ``bin_upper`` exist for fixed edges only.
        """
        index = pl.Series("bin", range(self.n_bins), dtype=pl.UInt32)
        closed = pl.Series("closed", [self.closed if self.additive else None] * self.n_bins)
        edges = self.edge_values()
        if edges is None:
            return pl.DataFrame([index, closed.cast(pl.String)])
        lower, upper = pl.Series("bin_lower", edges[:-1]), pl.Series("bin_upper", edges[1:])
        return pl.DataFrame([index, lower, upper, closed])

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready description (stored with persisted statistics).

        Examples
        --------
        >>> Binning.from_dict(Binning.uniform(15, closed="right").to_dict())
        Binning(kind='uniform', n_bins=15, closed='right', bin_edges=None)
        """
        return {
            "kind": self.kind,
            "n_bins": self.n_bins,
            "closed": self.closed,
            "edges": None if self.bin_edges is None else list(self.bin_edges),
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Binning:
        """The inverse of :meth:`to_dict`.

        Raises
        ------
        ArgumentError
            ``data`` does not describe a binning.
        """
        kind, closed, edges = data.get("kind"), data.get("closed", "left"), data.get("edges")
        if closed not in ("left", "right"):
            raise ArgumentError(f"not a binning description: {data!r}")
        if kind == "uniform" and isinstance(data.get("n_bins"), int):
            return cls.uniform(int(data["n_bins"]), closed=closed)  # type: ignore[call-overload]
        if kind == "edges" and isinstance(edges, list):
            return cls.edges(edges, closed=closed)
        if kind == "quantile" and isinstance(data.get("n_bins"), int):
            return cls.quantile(int(data["n_bins"]))  # type: ignore[call-overload]
        raise ArgumentError(f"not a binning description: {data!r}")

    # -- the expression -----------------------------------------------------------------

    def assign(self, confidence: pl.Expr, *, keys: Sequence[str] = ()) -> pl.Expr:
        """Bin index (UInt32) of each confidence.

        Only valid for confidences in :attr:`range` (others are caught by the checks).

        ``keys`` matters only for equal-mass bins, which rank within each group.
        """
        p = confidence.cast(pl.Float64)
        m = self.n_bins
        if self.kind == "quantile":
            smaller = p.rank(method="min").cast(pl.UInt64) - 1
            rows = p.count().cast(pl.UInt64)
            if keys:
                smaller, rows = smaller.over(keys), rows.over(keys)
            return (smaller * m // rows).cast(pl.UInt32, strict=False)
        if self.kind == "edges":
            assert self.bin_edges is not None
            # the number of inner edges at or below p (left-closed) or below p (right);
            # comparisons only, so it streams and translates to the GPU engine
            index = (p * 0.0).cast(pl.UInt32)
            for edge in self.bin_edges[1:-1]:
                above = (p > edge) if self.closed == "right" else (p >= edge)
                index = index + above.cast(pl.UInt32)
            return index
        # Equal width: p*M, nudged by 4 ulps towards the side that cannot overshoot, gives
        # the bin or its neighbour before it (left-closed: floor(p*M(1 - 4eps)) is k* or
        # k* - 1; right-closed: ceil(p*M(1 + 4eps)) - 1 is k* or k* + 1), so one comparison
        # with an exact edge k/M (correctly rounded division) settles it.
        nudge = 4 * sys.float_info.epsilon
        if self.closed == "left":
            guess = (p * (m * (1 - nudge))).floor()
            index = guess + (p >= divide(guess + 1.0, m)).cast(pl.Float64)
        else:
            guess = (p * (m * (1 + nudge))).ceil() - 1.0
            index = guess - (p <= divide(guess, m)).cast(pl.Float64)
        return index.clip(0.0, float(m - 1)).cast(pl.UInt32, strict=False)

    def contains(self, confidence: pl.Expr, k: int) -> pl.Expr | None:
        """Whether each confidence falls in bin ``k``: ``assign(confidence) == k``.

        For fixed edges it is written as at most two comparisons with the exact edges
        (left-closed: ``e_k <= p < e_{k+1}``, the last bin also holds its upper edge;
        right-closed: ``e_k < p <= e_{k+1}``, the first bin also holds its lower edge),
        which gives the bin of :meth:`assign` for every confidence in :attr:`range` at
        a fraction of its cost. ``None`` when every such confidence is in bin ``k``
        (one bin). Equal-mass bins compare :meth:`assign` (ranks in the context).

        Examples
        --------
        >>> import polars as pl
        >>> df = pl.DataFrame({"p": [0.0, 0.1, 0.3, 0.95, 1.0]})
        >>> df.select(Binning.uniform(10).contains(pl.col("p"), 9))["p"].to_list()
        [False, False, False, True, True]
        """
        p = confidence.cast(pl.Float64)
        edges = self.edge_values()
        if edges is None:
            return self.assign(p) == k
        lower, upper = edges[k], edges[k + 1]
        tests = []
        if k > 0:
            tests.append(p > lower if self.closed == "right" else p >= lower)
        if k < self.n_bins - 1:
            tests.append(p <= upper if self.closed == "right" else p < upper)
        return pl.all_horizontal(tests) if tests else None


BinsLike = int | Sequence[float] | Binning

BINS = Integer(1) | EDGES | InstanceOf(Binning, "a Binning")
"""``bins=``: a number of equal-width bins, bin edges or a :class:`Binning`."""
FIXED_BINS = (
    Integer(1)
    | EDGES
    | Rule(
        "a Binning of fixed edges (equal-mass bins differ per group)",
        lambda value: isinstance(value, Binning) and value.additive,
        refused=(Binning.quantile(10),),
    )
)
"""``bins=`` where the bins must be the same for every group: :data:`BINS` but equal-mass."""


def as_binning(bins: BinsLike) -> Binning:
    """Turn the ``bins=`` argument into a :class:`Binning` (checked against :data:`BINS`).

    ``int`` → :meth:`Binning.uniform`; a sequence of floats → :meth:`Binning.edges` (each
    checks its own argument; the public functions check ``bins=`` before they call this).
    """
    if isinstance(bins, Binning):
        return bins
    if isinstance(bins, Integral) and not isinstance(bins, bool):
        return Binning.uniform(int(bins))
    if isinstance(bins, Iterable) and not isinstance(bins, str | bytes):
        return Binning.edges(list(bins))
    raise ArgumentError(BINS.message(bins, "bins"))
