"""Calibration inside the evaluation harnesses: the harness runs, calib_frames computes.

Each module plugs calib_frames' engine into one harness through that harness' own
extension points, so the ECE, MCE, Brier score and log loss the harness prints are the
numbers :func:`~calib_frames.calibration_metrics` gives on the same predictions (its
exact bin edges, one formula), and the harness' logs read back with
:mod:`calib_frames.sources` give them again:

* :mod:`calib_frames.integrations.inspect_ai`: a multiple-choice scorer that records the
  answer's confidence, scalar metrics ``ece``, ``mce``, ``brier``, ``log_loss`` and
  ``missing_confidence``, registered as ``calib_frames/<name>`` through the
  ``inspect_ai`` entry point, and a hook that writes each run's bin statistics
  (``pip install 'calib-frames[inspect]'``);
* :mod:`calib_frames.integrations.lm_eval`: a ``process_results`` for task YAMLs that
  keeps lm-evaluation-harness' own metrics and adds the items that the aggregations
  ``ece``, ``mce``, ``brier``, ``log_loss``, ``word_perplexity``, ``byte_perplexity`` and
  ``bits_per_byte`` of the same module reduce (``pip install 'calib-frames[lm-eval]'``).
* :mod:`calib_frames.integrations.lighteval`: ``calibration()``, a corpus-level metric for
  a custom task's ``metrics`` that reports ``ece``, ``mce``, ``brier`` and ``log_loss``
  (``pip install 'calib-frames[lighteval]'``).

Importing :mod:`calib_frames` (or this package) imports no harness; each module imports
its harness when it is imported itself.
"""
