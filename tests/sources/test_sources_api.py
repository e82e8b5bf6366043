"""The public API of calib_frames.sources: every function documents every parameter."""

from __future__ import annotations

import inspect

import polars as pl
import pytest

from calib_frames import multiclass, sources
from calib_frames.exceptions import ArgumentError


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


OPTIONS = pl.DataFrame({"m": "x", "question": [1, 1], "option": [0, 1], "loglik": [-0.5, -1.0],
                        "is_gold": [True, False]})  # fmt: skip


@pytest.mark.parametrize(
    "call",
    [
        lambda by: sources.choice_predictions(OPTIONS, by=by),
        lambda by: sources.option_probabilities(OPTIONS, by=by),
        lambda by: multiclass.brier_multiclass(OPTIONS, by=by),
        lambda by: sources.answer_confidence(OPTIONS.rename({"loglik": "logprob"}), by=by),
        lambda by: sources.sample_consistency(OPTIONS.rename({"option": "answer"}), by=by),
    ],
    ids=["choice_predictions", "option_probabilities", "brier_multiclass", "answer_confidence",
         "sample_consistency"],
)  # fmt: skip
@pytest.mark.parametrize("by", [5, ["m", 5]], ids=["int", "list-with-int"])
def test_a_malformed_by_is_an_argument_error(call: object, by: object) -> None:
    with pytest.raises(ArgumentError, match="by="):
        call(by)  # type: ignore[operator]
