"""The public API of calib_frames.sources: every function documents every parameter."""

from __future__ import annotations

import inspect

import pytest

from calib_frames import sources


def public_functions() -> list[str]:
    return sorted(
        name
        for name in sources.__all__
        if callable(getattr(sources, name)) and not isinstance(getattr(sources, name), type)
    )


def test_exports_resolve() -> None:
    for name in sources.__all__:
        assert hasattr(sources, name), name


@pytest.mark.parametrize("name", public_functions())
def test_every_public_function_documents_each_parameter(name: str) -> None:
    function = getattr(sources, name)
    doc = inspect.getdoc(function) or ""
    sections = ["Parameters\n----------", "Returns\n-------", "Examples\n--------"]
    for section in sections:
        assert section in doc, f"{name}: no {section.splitlines()[0]} section"
    listed = " ".join(
        line.split(":")[0] for line in doc.splitlines() if line and not line.startswith(" ")
    )
    for parameter in inspect.signature(function).parameters:
        assert parameter.lstrip("*") in listed, f"{name}: parameter {parameter!r} undocumented"
