"""Every public function checked one way, as scikit-learn's ``metrics/tests/test_common.py``.

The public functions are the callables of ``calib_frames.__all__`` (the package's one list
of names) and of each subpackage's ``__all__``, each once. For every one of them:

- its docstring is complete: a summary, Parameters naming every parameter, Returns, and a
  runnable Examples section (the doctests run it);
- a function that takes a table (its first parameter is a ``Frame``) is in ``CALLS``
  below, returns a LazyFrame for a LazyFrame and a DataFrame for a DataFrame, with the
  same rows either way, and names its errors in a Raises section;
- careless inputs get the package's own error: not a frame, an empty frame, a missing
  column, a malformed or unknown ``by=``.

And the surface itself: ``__all__`` is the one list, a name exported twice is one object,
the ``calib`` namespace is the additive core's frame functions.
"""

from __future__ import annotations

import ast
import doctest
import functools
import importlib
import inspect
import pkgutil
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pytest
from factories import (
    DATA,
    ROOT,
    class_probabilities,
    loss_rows,
    option_rows,
    prediction_rows,
)
from polars.testing import assert_frame_equal

import calib_frames as cf
from calib_frames.exceptions import ArgumentError, CalibFramesError, TableError
from calib_frames.namespace import CalibNamespace

SUBPACKAGES = (
    "comparison",
    "estimators",
    "metrics",
    "multiclass",
    "plot",
    "ranking",
    "recalibrate",
    "report",
    "sources",
)


def public_functions() -> dict[str, Callable[..., Any]]:
    """Every public function once, under the shortest name that exports it."""
    found: dict[str, Callable[..., Any]] = {}
    seen: set[int] = set()
    for package in ("calib_frames", *(f"calib_frames.{name}" for name in SUBPACKAGES)):
        module = importlib.import_module(package)
        prefix = package.removeprefix("calib_frames").removeprefix(".")
        for name in module.__all__:
            value = getattr(module, name)
            if not inspect.isfunction(value) or id(value) in seen:
                continue
            seen.add(id(value))
            found[f"{prefix}.{name}" if prefix else name] = value
    return found


FUNCTIONS = public_functions()


def takes_a_table(function: Callable[..., Any]) -> bool:
    """A function whose first parameter is a table (``Frame``: lazy in, lazy out)."""
    first = next(iter(inspect.signature(function).parameters.values()), None)
    return first is not None and first.annotation == "Frame"


# What a function does not do yet (a careless input it leaves to polars, a docstring
# section it lacks): each case fails while it stands (strict), so mending the function
# means deleting its line here.
NOT_YET: dict[tuple[str, str], str] = {}


def cases(test: str, names: Iterable[str]) -> list[Any]:
    """The names as parameters, a known failure of ``test`` marked as one."""
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=NOT_YET[test, name]))
        if (test, name) in NOT_YET
        else name
        for name in names
    ]


# -- docstrings ---------------------------------------------------------------------------


def section(doc: str, title: str) -> str | None:
    """The body of a numpydoc section, or None when the docstring has none."""
    marker = f"\n{title}\n{'-' * len(title)}\n"
    if marker not in doc:
        return None
    body = doc.split(marker, 1)[1]
    ends = [body.index(f"\n{t}\n") for t in SECTIONS if f"\n{t}\n" in body]
    return body[: min(ends)] if ends else body


SECTIONS = ("Parameters", "Returns", "Raises", "See Also", "Notes", "References", "Examples")


@pytest.mark.parametrize("name", cases("docstring", FUNCTIONS))
def test_docstring_is_complete(name: str) -> None:
    function = FUNCTIONS[name]
    doc = inspect.getdoc(function) or ""
    assert doc.split("\n", 1)[0].strip(), f"{name}: no summary line"
    signature = inspect.signature(function)
    if signature.parameters:
        parameters = section(doc, "Parameters")
        assert parameters, f"{name}: no Parameters section"
        listed = " ".join(
            line.split(":")[0] for line in parameters.splitlines() if line[:1].strip()
        )
        for parameter in signature.parameters:
            assert parameter in listed, f"{name}: parameter {parameter!r} undocumented"
    if signature.return_annotation not in ("None", None):
        assert section(doc, "Returns"), f"{name}: no Returns section"
    if takes_a_table(function):
        assert section(doc, "Raises"), f"{name}: takes a table but has no Raises section"
    assert section(doc, "Examples"), f"{name}: no Examples section"
    (test,) = doctest.DocTestFinder(recurse=False).find(function, name)
    assert test.examples, f"{name}: the Examples section has nothing to run"


# -- the tables the calls take ------------------------------------------------------------


@functools.cache
def tables() -> dict[str, pl.DataFrame]:
    """One small instance of every kind of table a public function takes (eager)."""
    # items 0..199 answered once by each model (the paired tests need that)
    predictions = prediction_rows(
        0, 400, power=1.3, tasks=("x", "y"), weight=(0.5, 2.0), items=200, split_every=3
    ).with_columns(
        model=pl.when(pl.int_range(pl.len()) < 200).then(pl.lit("a")).otherwise(pl.lit("b"))
    )
    losses = loss_rows(0, 60, tasks=("x", "y"))
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    sums = cf.nll_sums(losses, by=["model", "task"], tokens="tokens")
    options = option_rows(0, questions=30, options=4)
    probs, labels = class_probabilities(0, 200, 3)
    run = pl.DataFrame(
        {
            "model": ["a"] * 6 + ["b"] * 6,
            "query": [1, 1, 1, 2, 2, 2] * 2,
            "item": ["d1", "d2", "d3", "d1", "d4", "d5"] * 2,
            "score": [0.9, 0.5, 0.1, 0.8, 0.7, 0.2, 0.2, 0.9, 0.4, 0.3, 0.6, 0.9],
        }
    )
    qrels = pl.DataFrame({"query": [1, 1, 2], "item": ["d1", "d3", "d5"], "relevance": [1, 2, 1]})
    return {
        "predictions": predictions,
        "losses": losses,
        "options": options,
        "stats": stats,
        "sums": sums,
        "metrics": cf.calibration_metrics(predictions, by=["model", "task"]),
        "perplexity": cf.perplexity(losses, by="model", tokens="tokens"),
        "reliability": cf.reliability_table(predictions, by="model"),
        "p_values": cf.calibration_noise_floor(predictions, by=["model", "task"]).select(
            "model", "task", p_value="ece_p_value"
        ),
        **{
            f"{method}_params": getattr(cf.recalibrate, f"fit_{method}")(
                predictions, by="model", split="split"
            )
            for method in ("temperature", "platt", "histogram", "isotonic")
        },
        "options_temperature_params": cf.recalibrate.fit_temperature(
            options, by="model", kind="options"
        ),
        "applied_options": cf.recalibrate.apply_temperature(
            options,
            cf.recalibrate.fit_temperature(options, by="model", kind="options"),
            by="model",
            kind="options",
        ),
        "recalibrated": cf.recalibrate.recalibrate(
            predictions, method="platt", by="model", split="split"
        ),
        "multiclass": pl.DataFrame(
            {"model": prediction_rows(1, 200)["model"], "probs": probs, "label": labels}
        ),
        "run": run,
        "qrels": qrels,
        "per_query": cf.ranking_metrics_per_query(run, qrels, by="model", k=[1, 3]),
        "token_logprobs": pl.DataFrame({"q": [1, 1, 2, 3], "logprob": [-0.1, -0.3, -2.0, -0.5]}),
        "samples": pl.DataFrame(
            {"q": [1, 1, 1, 2, 2], "answer": ["Paris", "paris ", "Lyon", "4", "5"]}
        ),
        "runs": pl.DataFrame(
            {"model": "m", "task": ["t", "t", "u"], "run": ["2026-01", "2026-02", "2026-01"]}
        ),
        "responses": pl.DataFrame({"response": ["80%", "0.3", "9/10"]}),
        "openai_tokens": cf.sources.scan_openai_tokens(DATA / "openai" / "responses.jsonl")
        .head(400)
        .collect(),
    }


@dataclass(frozen=True)
class Call:
    """How to call one public function: its tables (by kind) and its other arguments.

    ``column`` is a column of the first table the function needs (dropped for the
    missing-column check); ``result`` picks the frame out of a result that wraps one.
    """

    tables: tuple[str, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    column: str = "confidence"
    result: Callable[[Any], Any] = lambda result: result


FEW = {"replicates": 20}
PREDICTIONS = ("predictions",)
BY_MODEL = {"by": "model"}

CALLS: dict[str, Call] = {
    # the additive core
    "bin_statistics": Call(PREDICTIONS, BY_MODEL),
    "reliability_table": Call(PREDICTIONS, BY_MODEL),
    "calibration_metrics": Call(PREDICTIONS, BY_MODEL),
    "merge_bin_statistics": Call(("stats", "stats"), column="weight_correct"),
    "metrics_from_bin_statistics": Call(("stats",), column="weight_correct"),
    "nll_sums": Call(("losses",), {"by": "model", "tokens": "tokens"}, column="nll"),
    "perplexity": Call(("losses",), {"by": "model", "tokens": "tokens"}, column="nll"),
    "merge_nll_sums": Call(("sums", "sums"), column="nll_sum"),
    "perplexity_from_nll_sums": Call(("sums",), column="nll_sum"),
    "comparison_table": Call(("metrics", "perplexity"), column="ece"),
    # the report's tables
    "compare": Call(
        ("predictions", "losses"), {"by": ["model", "task"], "tokens": "tokens", **FEW}
    ),
    "comparison_from_bin_statistics": Call(("stats", "sums"), FEW, column="weight_correct"),
    "leaderboard": Call(("stats", "sums"), FEW, column="weight_correct"),
    "comparison.report_tables": Call(
        ("stats", "sums"),
        {"model": "model", **FEW},
        column="weight_correct",
        result=lambda tables: tables.comparison,
    ),
    # estimators
    "calibration_intervals": Call(PREDICTIONS, {**BY_MODEL, **FEW}),
    "calibration_noise_floor": Call(PREDICTIONS, BY_MODEL),
    "estimators.intervals_from_bin_statistics": Call(("stats",), FEW, column="weight_correct"),
    "estimators.uncertainty_from_bin_statistics": Call(("stats",), FEW, column="weight_correct"),
    "perplexity_intervals": Call(
        ("losses",), {"by": "model", "tokens": "tokens", **FEW}, column="nll"
    ),
    "paired_comparison": Call(PREDICTIONS, {"by": "task", **FEW}),
    "adjust_p_values": Call(("p_values",), {"by": "model"}, column="p_value"),
    "with_accuracy_intervals": Call(("reliability",), column="accuracy"),
    "smooth_ece": Call(PREDICTIONS, BY_MODEL),
    "smooth_reliability_curve": Call(PREDICTIONS, BY_MODEL),
    "corp_decomposition": Call(PREDICTIONS, BY_MODEL),
    "corp_reliability": Call(PREDICTIONS, BY_MODEL),
    "estimators.isotonic_blocks": Call(
        PREDICTIONS, {"x": "confidence", "y": "correct", "by": "model"}
    ),
    "adaptive_ece": Call(PREDICTIONS, BY_MODEL),
    "ece_by_bin_count": Call(PREDICTIONS, BY_MODEL),
    "selective_metrics": Call(PREDICTIONS, BY_MODEL),
    "selective_curve": Call(PREDICTIONS, BY_MODEL),
    "selective_intervals": Call(PREDICTIONS, {**BY_MODEL, **FEW}),
    "helm_calibration": Call(PREDICTIONS, BY_MODEL),
    # multi-class
    "multiclass_calibration": Call(
        ("multiclass",), {"probabilities": "probs", "label": "label", "by": "model"}, "probs"
    ),
    "multiclass.top_label_metrics": Call(
        ("multiclass",), {"probabilities": "probs", "label": "label", "by": "model"}, "probs"
    ),
    "multiclass.classwise_metrics": Call(
        ("multiclass",), {"probabilities": "probs", "label": "label", "by": "model"}, "probs"
    ),
    "multiclass.pooled_metrics": Call(
        ("multiclass",), {"probabilities": "probs", "label": "label", "by": "model"}, "probs"
    ),
    "multiclass.class_probability_rows": Call(
        ("multiclass",), {"probabilities": "probs", "label": "label", "by": "model"}, "probs"
    ),
    "multiclass.brier_multiclass": Call(("options",), BY_MODEL, column="loglik"),
    # recalibration
    "recalibrate.fit_temperature": Call(PREDICTIONS, {"by": "model", "split": "split"}),
    "recalibrate.fit_platt": Call(PREDICTIONS, {"by": "model", "split": "split"}),
    "recalibrate.fit_histogram": Call(PREDICTIONS, {"by": "model", "split": "split"}),
    "recalibrate.fit_isotonic": Call(PREDICTIONS, {"by": "model", "split": "split"}),
    "recalibrate.apply_temperature": Call(
        ("options", "options_temperature_params"),
        {"by": "model", "kind": "options"},
        column="loglik",
    ),
    "recalibrate.apply_platt": Call(("predictions", "platt_params")),
    "recalibrate.apply_histogram": Call(("predictions", "histogram_params")),
    "recalibrate.apply_isotonic": Call(("predictions", "isotonic_params")),
    "recalibrate.recalibrate": Call(
        PREDICTIONS, {"method": "platt", "by": "model", "split": "split"}
    ),
    "recalibrate.corp_recalibrate": Call(PREDICTIONS, BY_MODEL),
    "recalibrate.recalibration_metrics": Call(("recalibrated",), BY_MODEL),
    "recalibrate.recalibration_reliability": Call(("recalibrated",), BY_MODEL),
    "recalibrate.assign_folds": Call(PREDICTIONS, {"item": "item", "folds": 3}, column="item"),
    "recalibrate.top_option": Call(("applied_options",), BY_MODEL, column="loglik"),
    # ranking
    "ranking_metrics": Call(("run", "qrels"), {"by": "model", "k": [1, 3]}, column="score"),
    "ranking_metrics_per_query": Call(
        ("run", "qrels"), {"by": "model", "k": [1, 3]}, column="score"
    ),
    "paired_significance": Call(("per_query",), {"metric": "ndcg@3", **FEW}, column="ndcg@3"),
    # sources
    "sources.choice_predictions": Call(("options",), BY_MODEL, column="loglik"),
    "sources.option_probabilities": Call(("options",), BY_MODEL, column="loglik"),
    "sources.answer_confidence": Call(("token_logprobs",), {"by": "q"}, column="logprob"),
    "sources.sample_consistency": Call(("samples",), {"by": "q"}, column="answer"),
    "sources.latest_runs": Call(("runs",), column="run"),
    "sources.with_verbalized_confidence": Call(("responses",), column="response"),
    "sources.with_verbalized_confidence_skipping": Call(
        ("responses",), column="response", result=lambda skipped: skipped.frame
    ),
}


def arguments(name: str, lazy: bool) -> tuple[list[Any], dict[str, Any]]:
    call = CALLS[name]
    frames = [tables()[kind] for kind in call.tables]
    return [frame.lazy() if lazy else frame for frame in frames], dict(call.kwargs)


def run(name: str, *frames: Any, **kwargs: Any) -> Any:
    return CALLS[name].result(FUNCTIONS[name](*frames, **kwargs))


def test_every_function_that_takes_a_table_has_a_call() -> None:
    takes = {name for name, function in FUNCTIONS.items() if takes_a_table(function)}
    assert takes == set(CALLS)


@pytest.mark.parametrize("name", CALLS)
def test_lazy_in_lazy_out_eager_in_eager_out(name: str) -> None:
    frames, kwargs = arguments(name, lazy=False)
    eager = run(name, *frames, **kwargs)
    frames, kwargs = arguments(name, lazy=True)
    lazy = run(name, *frames, **kwargs)
    assert isinstance(eager, pl.DataFrame), type(eager)
    assert isinstance(lazy, pl.LazyFrame), type(lazy)
    assert lazy.collect_schema() == eager.schema  # the plan says what it gives
    assert_frame_equal(lazy.collect(), eager, rel_tol=1e-12, abs_tol=1e-15)


# -- careless inputs ----------------------------------------------------------------------


@pytest.mark.parametrize("name", cases("not_a_frame", CALLS))
def test_not_a_frame_is_an_argument_error(name: str) -> None:
    (first, *rest), kwargs = arguments(name, lazy=False)
    with pytest.raises(ArgumentError, match="DataFrame"):
        run(name, first.to_dict(as_series=False), *rest, **kwargs)


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_an_empty_table_gives_a_table_or_the_packages_error(name: str, lazy: bool) -> None:
    (first, *rest), kwargs = arguments(name, lazy=lazy)
    try:
        result = run(name, first.clear(), *rest, **kwargs)
        if lazy:
            result = result.collect()
    except CalibFramesError:
        return
    assert isinstance(result, pl.DataFrame)


@pytest.mark.parametrize("name", cases("missing_column", CALLS))
def test_a_missing_column_is_a_table_error(name: str) -> None:
    (first, *rest), kwargs = arguments(name, lazy=False)
    column = CALLS[name].column
    assert column in first.columns
    with pytest.raises(TableError):
        run(name, first.drop(column), *rest, **kwargs)


TAKE_BY = [name for name in CALLS if "by" in inspect.signature(FUNCTIONS[name]).parameters]


@pytest.mark.parametrize("name", cases("malformed_by", TAKE_BY))
@pytest.mark.parametrize("by", [5, [5], ["model", "model"]], ids=["int", "list-of-int", "twice"])
def test_a_malformed_by_is_an_argument_error(name: str, by: object) -> None:
    frames, kwargs = arguments(name, lazy=False)
    with pytest.raises(ArgumentError, match="by="):
        run(name, *frames, **{**kwargs, "by": by})


@pytest.mark.parametrize("name", cases("unknown_by", TAKE_BY))
def test_by_an_unknown_column_is_a_table_error(name: str) -> None:
    frames, kwargs = arguments(name, lazy=False)
    with pytest.raises(TableError, match="no_such_column"):
        run(name, *frames, **{**kwargs, "by": "no_such_column"})


# -- the surface ---------------------------------------------------------------------------


def test_all_is_the_one_list() -> None:
    assert len(cf.__all__) == len(set(cf.__all__))
    for name in cf.__all__:
        assert getattr(cf, name) is not None, name
    assert set(SUBPACKAGES) <= set(cf.__all__)
    assert set(cf.exceptions.__all__) <= set(cf.__all__)
    assert set(dir(cf)) >= set(cf.__all__)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = cf.no_such_name  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = cf.sources.no_such_name  # type: ignore[attr-defined]


def test_a_name_exported_twice_is_one_object() -> None:
    """A top-level convenience export is its subpackage's function, not a copy."""
    for package in SUBPACKAGES:
        module = importlib.import_module(f"calib_frames.{package}")
        for name in (set(module.__all__) & set(cf.__all__)) - set(SUBPACKAGES):
            assert getattr(module, name) is getattr(cf, name), (package, name)


def test_no_module_is_shadowed_by_a_function() -> None:
    """``import calib_frames.<module>`` gives a module, never a function of that name."""
    for info in pkgutil.walk_packages(cf.__path__, "calib_frames."):
        if info.name.endswith("__main__"):  # running it is the command line
            continue
        module = importlib.import_module(info.name)
        parent, _, leaf = info.name.rpartition(".")
        attribute = getattr(importlib.import_module(parent), leaf)
        assert isinstance(attribute, types.ModuleType), info.name
        assert attribute is module


CORE = ("stats", "nll", "metrics.calibration", "metrics.tokens", "comparison.side_by_side")


def test_the_namespace_is_the_additive_cores_frame_functions() -> None:
    core = {
        getattr(module, name)
        for module in (importlib.import_module(f"calib_frames.{m}") for m in CORE)
        for name in module.__all__
        if inspect.isfunction(getattr(module, name)) and takes_a_table(getattr(module, name))
    }
    methods = {
        name: value.function
        for name, value in vars(CalibNamespace).items()
        if not name.startswith("_") and hasattr(value, "function")
    }
    assert set(methods.values()) == core
    for name, function in methods.items():
        assert function.__name__ == name
        assert f"``{name}" in (cf.namespace.__doc__ or ""), name


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_a_namespace_method_is_its_function_with_the_frame_first(lazy: bool) -> None:
    stats = tables()["stats"].lazy() if lazy else tables()["stats"]
    method = stats.calib.merge_bin_statistics
    function_parameters = list(inspect.signature(cf.merge_bin_statistics).parameters.values())
    assert list(inspect.signature(method).parameters.values()) == function_parameters
    assert method.__doc__ == cf.merge_bin_statistics.__doc__
    for name in ("calibration_metrics", "perplexity_from_nll_sums", "comparison_table"):
        method = getattr(stats.calib, name)
        parameters = list(inspect.signature(FUNCTIONS[name]).parameters.values())
        assert list(inspect.signature(method).parameters.values()) == parameters[1:], name
    predictions = tables()["predictions"]
    source = predictions.lazy() if lazy else predictions
    got = source.calib.calibration_metrics(by=["model", "task"], bins=15, weight="w")
    assert isinstance(got, pl.LazyFrame if lazy else pl.DataFrame)
    expected = cf.calibration_metrics(predictions, by=["model", "task"], bins=15, weight="w")
    assert_frame_equal(got.collect() if lazy else got, expected)


# -- the tests' own rules -------------------------------------------------------------------

PEERS = {
    "calibration", "duckdb", "model_diagnostics", "mpmath", "netcal", "polarbearings",
    "pytrec_eval", "ranx", "relplot", "sklearn", "statsmodels", "torch", "torchmetrics",
}  # fmt: skip
"""The libraries the tests use only as references (CONTRIBUTING: Tests)."""


def test_every_peer_library_is_imported_with_importorskip() -> None:
    """A missing reference library skips its tests; it never breaks the collection."""
    bare = []
    for path in sorted(ROOT.glob("tests/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            )  # fmt: skip
            bare += [
                f"{path.relative_to(ROOT)}:{node.lineno} {name}"
                for name in names
                if name.split(".")[0] in PEERS
            ]
    assert bare == []
