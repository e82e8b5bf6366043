"""Moved: the table specs of :mod:`calib_frames.sources` live in :mod:`calib_frames.schema`.

The old names still work for one release, with a DeprecationWarning.
"""

from calib_frames._deprecated import moved

__getattr__ = moved(
    "calib_frames.sources.tables",
    {
        name: f"calib_frames.schema.{name}"
        for name in (
            "BRIER_MULTICLASS",
            "CHOICE_PREDICTIONS",
            "LM_EVAL_COMPARISON",
            "OPTION_PROBABILITIES",
        )
    },
)
