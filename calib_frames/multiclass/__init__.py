"""Multi-class and multi-label calibration, reduced to the binary engine.

Every multi-class notion of calibration is a binary calibration problem over a
*row transform* of the class probabilities, so each one is
:func:`~calib_frames.calibration_metrics` (or :func:`~calib_frames.bin_statistics`)
on a derived (confidence, correct) frame, sometimes with the class as an extra key:

=========================  ==========================================================
notion                     binary problem
=========================  ==========================================================
top-label                  per item: confidence = the largest class probability,
                           correct = whether that class is the label
class-wise                 per (item, class): confidence = p_k, correct = [label = k],
                           grouped by class; then averaged over classes: ``macro``
                           (plain mean) and ``weighted`` (by class frequency among
                           the labels)
all probabilities pooled   per (item, class) as above, *not* grouped by class: every
                           probability of every item in one reliability diagram (the
                           GPT-4 technical report's Figure 8, "calibration of all
                           probabilities")
multi-label                class-wise and pooled as above, with any number of labels
                           per item and probabilities that need not sum to one
=========================  ==========================================================

Input layouts
-------------
``probabilities`` names either

* **one list/array column** (``List``/``Array`` of floats, class k at position k),
  with ``label`` an integer column of class indices; the class key is ``UInt32``;
* **several columns** (``["p_cat", "p_dog"]``, one per class), with ``label`` holding
  either the class's column name or its 0-based position; the class key is the column
  name; for multi-label data ``label`` is a parallel list of boolean columns;
* **one numeric column of a long frame** (one row per item and class, like an options
  frame), with ``item`` naming the item column, ``class_column`` the class column and
  ``label`` a boolean column that is true on the label's row(s).

:func:`class_probability_rows` turns each layout into the canonical long table
(keys…, ``item``, ``class``, ``probability``, ``is_label``) that every function here
reduces.

Conventions
-----------
* **Ties for the top label** go to the first class in class order: the lowest
  position (list and wide layouts, like ``numpy.argmax`` and ``torch.argmax``) or the
  smallest class value (long layout).
* **Probabilities must sum to one** per item within ``tolerance`` (default 1e-4,
  absolute) and every item needs exactly one label; otherwise a :class:`DataError`
  names the item count and shows one item with its keys and sum. With
  ``renormalize=True`` every item's probabilities are divided by their sum first (a
  zero sum stays an error). Multi-label data (``multilabel=True``) skip both checks.
* **Brier score** (multi-class): ``mean over items of Σ_k (p_k − [label = k])²``, the
  sum over classes, as lm-evaluation-harness' ``brier_score`` and scikit-learn's
  ``brier_score_loss(..., scale_by_half=False)`` (scikit-learn's default halves it
  for two classes, where it equals the binary Brier score). Range [0, 2].
* **Log loss**: mean of −ln p_label (nats), as scikit-learn's ``log_loss``.

The top-label and sum checks group the rows by item (all rows of a group in memory);
the class-wise and pooled statistics are the additive bin statistics.

Modules
-------
* :mod:`~calib_frames.multiclass.inputs`: the layouts → the long rows, with the checks;
* :mod:`~calib_frames.multiclass.reductions`: the one reducer, long rows → the binary
  prediction rows of each notion, and the per-notion metrics tables;
* :mod:`~calib_frames.multiclass.scores`: the multi-class Brier score (its one home, also
  :func:`brier_multiclass` of multiple-choice options) and log loss;
* :mod:`~calib_frames.multiclass.summary`: :func:`multiclass_calibration`.

The first argument of every function is ``predictions``: rows of predictions, in the
layouts above (one row per item with its probability vector, or one row per item and
class), the same name as the binary predictions they are reduced to; that of
:func:`brier_multiclass` is ``options``, an options frame of multiple-choice
log-likelihoods (:mod:`calib_frames.sources.options`).
"""

from calib_frames.multiclass.inputs import class_probability_rows
from calib_frames.multiclass.reductions import classwise_metrics, pooled_metrics, top_label_metrics
from calib_frames.multiclass.scores import brier_multiclass
from calib_frames.multiclass.summary import multiclass_calibration

__all__ = [
    "brier_multiclass",
    "class_probability_rows",
    "classwise_metrics",
    "multiclass_calibration",
    "pooled_metrics",
    "top_label_metrics",
]
