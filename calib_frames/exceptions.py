"""The error types of calib_frames: one base class and a subclass per kind of trouble.

Every public entry point raises only these (never a bare ``ValueError`` or a polars
error from deep inside a query). Each class carries the command line's exit code:

==================  =====================================================  =========
class               raised when                                            exit code
==================  =====================================================  =========
``DataError``       rows break the contract (out-of-range confidence,      1
                    negative NLL, ...): names the column, the count of
                    offending rows and one example with its group keys
``TableError``      columns are missing or of the wrong dtype, or tables   1
                    do not fit together (merging other bins or keys,
                    joining a table that is not what its role needs)
``ReadError``       a file cannot be read as what it claims to be          1
                    (corrupt parquet, malformed JSONL line, bad CSV type)
``ArgumentError``   an argument is invalid whatever the data               2
                    (``bins=0``, ``by=`` naming a column twice, ...)
==================  =====================================================  =========

``CalibrationInputError``, the name of the first release, stays importable as an alias
of the base class, so ``except CalibrationInputError`` still catches everything. Every
class is a ``ValueError``; ``ArgumentError`` is also a ``TypeError``.

Examples
--------
>>> import polars as pl
>>> import calib_frames as cf
>>> try:
...     cf.calibration_metrics(pl.DataFrame({"confidence": [1.5], "correct": [True]}))
... except cf.DataError as error:
...     print(error.exit_code)
1
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "CalibFramesError",
    "CalibrationInputError",
    "DataError",
    "ReadError",
    "TableError",
]


class CalibFramesError(ValueError):
    """Base class of every error calib_frames raises on purpose (a ``ValueError``)."""

    exit_code: int = 1


class DataError(CalibFramesError):
    """Rows of the input break the contract; the message names column, count and example."""


class TableError(CalibFramesError):
    """Columns are missing or mistyped, or tables do not fit together (merge, join)."""


class ReadError(CalibFramesError):
    """A file cannot be read as what it claims to be; the message names the file."""


class ArgumentError(CalibFramesError, TypeError):
    """An argument is invalid whatever the data (a usage error: exit code 2)."""

    exit_code = 2


CalibrationInputError = CalibFramesError
