"""Names that moved in the 0.2 redesign still work from their old homes, with a warning."""

from __future__ import annotations

import importlib

import pytest

import calib_frames as cf
from calib_frames.exceptions import TableError
from calib_frames.stats import spark_bin_statistics

MOVED = [
    ("calib_frames", "SchemaError", TableError),
    ("calib_frames.exceptions", "SchemaError", TableError),
    ("calib_frames.engine.spark", "spark_bin_statistics", spark_bin_statistics),
]


@pytest.mark.parametrize(("module", "name", "new"), MOVED)
def test_old_name_warns_and_is_the_new_object(module: str, name: str, new: object) -> None:
    old_home = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{name} has moved to"):
        assert getattr(old_home, name) is new


def test_unknown_names_are_still_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = cf.sources.no_such_name  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = cf.no_such_name  # type: ignore[attr-defined]


def test_old_error_name_still_catches_the_new_error() -> None:
    with pytest.warns(DeprecationWarning):
        old = cf.SchemaError  # type: ignore[attr-defined]
    with pytest.raises(old):
        raise TableError("x")


def test_no_module_is_shadowed_by_a_function() -> None:
    """``import calib_frames.<module>`` gives a module, never a function of that name."""
    import pkgutil
    import types

    for info in pkgutil.walk_packages(cf.__path__, "calib_frames."):
        if info.name.endswith("__main__"):  # running it is the command line
            continue
        module = importlib.import_module(info.name)
        parent, _, leaf = info.name.rpartition(".")
        attribute = getattr(importlib.import_module(parent), leaf)
        assert isinstance(attribute, types.ModuleType), info.name
        assert attribute is module
