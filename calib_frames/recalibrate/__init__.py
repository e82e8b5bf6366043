"""Recalibration per group: fit → a small parameters table; apply → a lazy transformation.

Four maps, each with the same shape — ``fit_<map>(predictions, *, by=..., <scheme>)``
returns one row (or one row per bin/block) of parameters per group, and
``apply_<map>(predictions, params)`` joins them on their keys and adds a recalibrated
confidence column plus an ``in_sample`` label:

==================  ===========================================  ======================
map                 recalibrated confidence                      parameters per group
==================  ===========================================  ======================
temperature         σ(logit(p)/T), or softmax(ℓ/T) over options  ``temperature``
Platt               σ(a·logit(p) + b)                            ``slope``, ``intercept``
histogram binning   fit-split accuracy of p's bin                one row per bin
isotonic (PAV)      isotonic fit of y on p, step or linear       one row per block
==================  ===========================================  ======================

The fitting scheme (fit split, cross-fitting folds, or an explicit ``in_sample=True``)
is described in :mod:`calib_frames.recalibrate.splits`; the before/after comparison
tables in :mod:`calib_frames.recalibrate.before_after`; HELM's calibration suite
(in-sample Platt scaling among its figures) in :mod:`calib_frames.recalibrate.helm_suite`.
The columns of every parameters table are in :mod:`calib_frames.schema` (``TEMPERATURE``,
``PLATT``, ``HISTOGRAM``, ``ISOTONIC``, ``HELM_CALIBRATION``).
:func:`corp_recalibrate` is the in-sample isotonic map of CORP in one call (fit and
apply on the same rows).

Every ``fit_*`` shares one preamble (``_core.fit_rows``: keys, column roles, the
scheme's fit rows) and every ``apply_*`` another (``_apply.apply_input``); their
checks go through :mod:`calib_frames.validation`.
"""

from calib_frames.recalibrate.before_after import (
    COMPARED_METRICS,
    recalibrate,
    recalibration_metrics,
    recalibration_reliability,
    top_option,
)
from calib_frames.recalibrate.helm_suite import helm_calibration
from calib_frames.recalibrate.histogram import apply_histogram, fit_histogram
from calib_frames.recalibrate.isotonic import apply_isotonic, corp_recalibrate, fit_isotonic
from calib_frames.recalibrate.platt import apply_platt, fit_platt
from calib_frames.recalibrate.splits import FitScheme, assign_folds, fit_scheme
from calib_frames.recalibrate.temperature import apply_temperature, fit_temperature

__all__ = [
    "COMPARED_METRICS",
    "FitScheme",
    "apply_histogram",
    "apply_isotonic",
    "apply_platt",
    "apply_temperature",
    "assign_folds",
    "corp_recalibrate",
    "fit_histogram",
    "fit_isotonic",
    "fit_platt",
    "fit_scheme",
    "fit_temperature",
    "helm_calibration",
    "recalibrate",
    "recalibration_metrics",
    "recalibration_reliability",
    "top_option",
]
