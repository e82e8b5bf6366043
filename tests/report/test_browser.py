"""End to end: the HTML report and a saved chart open in real headless Chromium, offline.

The page is loaded from a file with the browser context offline and every non-file
request aborted and recorded. Checked: every chart drew (an SVG with marks), no console
error or uncaught exception, no request left the page, and the hostile model names show
as text without running anything (no dialog was opened, no element they spell exists).
At leaderboard size (12 and 50 models, in 1366×768 and 1920×1080 windows): the page never
scrolls sideways, the filter finds every model, the column toggles and the sort work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import calib_frames as cf
from calib_frames.plot import reliability_diagram, save_chart
from calib_frames.report import write_report

# Each test here starts a heavy component (Spark, a browser, a kernel or a benchmark process).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = {
    "calibrated": "<script>alert(1)</script>",
    "overconfident": '"><img src=x onerror=alert(2)>',
    "underconfident": "</script><script>alert(3)</script>",
}
RENDER_TIMEOUT_MS = 120_000  # a guard against a hung page, not a timing assertion


@pytest.fixture(scope="module")
def hostile_tables() -> dict[str, pl.DataFrame]:
    predictions = pl.read_parquet(ROOT / "data" / "synthetic_predictions.parquet")
    tokens = pl.read_parquet(ROOT / "data" / "synthetic_tokens.parquet")
    predictions = predictions.with_columns(pl.col("model").replace(HOSTILE))
    tokens = tokens.with_columns(pl.col("model").replace(HOSTILE))
    stats = cf.bin_statistics(predictions, by=["model", "task"])
    metrics = cf.metrics_from_bin_statistics(stats)
    ppl = cf.perplexity(tokens, by=["model", "task"], tokens="tokens", bytes="bytes")
    return {"stats": stats, "comparison": cf.comparison_table(metrics, ppl), "ppl": ppl}


class PageLog:
    """What a page did: console errors, uncaught errors, dialogs, outside requests."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("dialog", self._dialog)
        page.route("**/*", self._route)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        else:
            self.requests.append(url)
            route.abort()


def open_offline(browser: Any, path: Path) -> tuple[Any, Any, PageLog]:
    context = browser.new_context(offline=True, viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    log = PageLog(page)
    page.goto(path.resolve().as_uri())
    page.wait_for_function(
        "document.querySelectorAll('[data-vega-spec]').length > 0 && "
        "document.querySelectorAll('[data-vega-spec]').length === "
        "document.querySelectorAll('[data-rendered]').length",
        timeout=RENDER_TIMEOUT_MS,
    )
    return context, page, log


def chart_states(page: Any) -> list[tuple[str, int]]:
    return [
        (state, marks)
        for state, marks in page.eval_on_selector_all(
            "[data-vega-spec]",
            "els => els.map(e => [e.getAttribute('data-rendered'),"
            " e.querySelectorAll('svg path, svg line, svg rect, svg text').length])",
        )
    ]


def test_report_renders_offline_and_hostile_names_stay_text(
    browser: Any, hostile_tables: dict[str, pl.DataFrame], tmp_path: Path
) -> None:
    path = write_report(
        tmp_path / "report.html",
        comparison=hostile_tables["comparison"],
        bin_statistics=hostile_tables["stats"],
        perplexity=hostile_tables["ppl"],
        title='Report <b>"&"</b>',
        inputs={"<i>preds</i>.parquet": 24_000},
    )
    context, page, log = open_offline(browser, path)
    try:
        states = chart_states(page)
        # heatmap, picked diagram, reliability, histogram, scatter, Brier, perplexity
        assert len(states) == 7
        assert all(state == "true" for state, _ in states), states
        assert all(marks > 20 for _, marks in states), states
        assert log.errors == []
        assert log.dialogs == []
        assert log.requests == []
        # the names are text in the table, in the SVG legends and headers
        cells = page.locator("#comparison td.key").all_inner_texts()
        for name in HOSTILE.values():
            assert cells.count(name) == 4  # one row per task
        svg_text = page.eval_on_selector_all(
            "svg text", "els => els.map(e => e.textContent).join('\\n')"
        )
        assert "<script>alert(1)</script>" in svg_text
        assert page.title() == 'Report <b>"&"</b>'
        assert page.locator("h1").inner_text() == 'Report <b>"&"</b>'
        assert "<i>preds</i>.parquet (24,000 rows)" in page.locator("dl.meta").inner_text()
        # nothing the names spell became an element
        assert page.locator("img").count() == 0
        assert page.locator("h1 b, dl.meta i").count() == 0
        scripts = page.eval_on_selector_all("script", "els => els.map(e => e.type || 'js')")
        assert scripts.count("application/json") == 7
        assert len(scripts) == 7 + 3  # specs, the Vega bundle, the sort and embed code
        # tooltips (vega-tooltip builds HTML) show the names as text too
        seen = set()
        points = page.locator("#chart-2 svg g.mark-symbol path")  # the reliability panels
        tooltip = page.locator("#vg-tooltip-element")
        for index in range(0, points.count(), 3):
            points.nth(index).hover(force=True)
            if tooltip.count() and tooltip.is_visible():
                text = tooltip.inner_text()
                seen |= {name for name in HOSTILE.values() if name in text}
            if len(seen) == len(HOSTILE):
                break
        assert seen == set(HOSTILE.values())
        assert page.locator("#vg-tooltip-element img, #vg-tooltip-element script").count() == 0
        assert log.dialogs == [] and log.errors == []
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        assert (tmp_path / "report.png").stat().st_size > 10_000
    finally:
        context.close()


OUTLINED = """() => {
  const svg = document.querySelector("#chart-0 svg");
  const lines = svg.querySelectorAll('g.mark-rect.role-mark[aria-hidden="true"] path');
  if (lines.length !== 1) { return null; }
  const box = lines[0].getBoundingClientRect();
  const x = box.x + box.width / 2, y = box.y + box.height / 2;
  for (const cell of svg.querySelectorAll("g.mark-rect.role-mark path[aria-label]")) {
    const at = cell.getBoundingClientRect();
    if (Math.abs(at.x + at.width / 2 - x) < 2 && Math.abs(at.y + at.height / 2 - y) < 2) {
      return cell.getAttribute("aria-label");
    }
  }
  return null;
}"""
"""The aria label of the heatmap cell under its outline (null: no outline, or not on one)."""


def outline_on(page: Any, *parts: str) -> str:
    """Wait until one heatmap cell is outlined, with ``parts`` in its label; the label."""
    page.wait_for_function(
        f"parts => {{ const label = ({OUTLINED})(); "
        "return label !== null && parts.every(part => label.includes(part)); }",
        arg=list(parts),
    )
    return str(page.evaluate(OUTLINED))


def twelve_models() -> tuple[list[str], pl.DataFrame]:
    """12 models (long names; the fourth named hostilely) × 2 tasks, 200 predictions each."""
    rng = np.random.default_rng(5)
    n = 12 * 2 * 200
    models = [f"model-{k:02d}-{'x' * 30}" for k in range(12)]
    model = np.repeat(models, 400)
    bias = np.repeat(np.linspace(-0.2, 0.2, 12), 400)
    p = rng.uniform(0.3, 1.0, n)
    preds = pl.DataFrame(
        {
            "model": np.where(model == models[3], HOSTILE["calibrated"], model),
            "task": np.tile(["a", "b"], n // 2),
            "confidence": p,
            "correct": rng.random(n) < np.clip(p - bias, 0, 1),
        }
    )
    return models, preds


def test_picking_a_model_changes_the_diagram(browser: Any, tmp_path: Path) -> None:
    """12 models × 2 tasks: the dropdowns redraw the one diagram, and so does a click on a
    heatmap cell (its group picked in the dropdowns); the heatmap draws all, and outlines
    the cell of the group the diagram draws."""
    models, preds = twelve_models()
    stats = cf.bin_statistics(preds, by=["model", "task"])
    comparison = cf.comparison_from_bin_statistics(stats, replicates=20)
    path = write_report(tmp_path / "report.html", comparison=comparison, bin_statistics=stats)
    context, page, log = open_offline(browser, path)
    try:
        states = chart_states(page)
        assert all(state == "true" for state, _ in states), states
        assert all(marks > 20 for _, marks in states), states
        heatmap, picked = page.locator("#chart-0"), page.locator("#chart-1")
        cells = heatmap.locator("svg g.mark-rect.role-mark path[aria-label]")
        assert cells.count() == 24  # every cell

        selects = picked.locator("select")
        assert selects.count() == 2  # model, task
        options = selects.nth(0).locator("option").all_inner_texts()
        assert sorted(options) == sorted(set(preds["model"]))

        def drawn() -> str:
            return str(page.eval_on_selector("#chart-1 svg", "e => e.innerHTML"))

        def choose(select: int, label: str) -> str:
            page.evaluate("window.drawnBefore = document.querySelector('#chart-1 svg').innerHTML")
            selects.nth(select).select_option(label=label)
            page.wait_for_function(
                "document.querySelector('#chart-1 svg').innerHTML !== window.drawnBefore"
            )
            return drawn()

        first = drawn()
        assert selects.nth(0).input_value() == options[0]  # the first model, preselected
        outline_on(page, f"model: {options[0]}", "task: a")  # the group drawn is outlined
        # the hostile name sorts first: pick another model, then it, then the other task
        seen = [first, choose(0, models[7])]
        outline_on(page, f"model: {models[7]}", "task: a")  # the outline follows the dropdowns
        seen += [choose(0, HOSTILE["calibrated"]), choose(1, "b")]
        assert len(set(seen)) == 3 and seen[0] == seen[2]  # back to the first model: same
        # a click on a heatmap cell picks its group in the dropdowns and redraws the diagram
        cell = heatmap.locator(f'svg g.mark-rect.role-mark path[aria-label*="{models[7]}"]')
        label = str(cell.first.get_attribute("aria-label"))
        page.evaluate("window.drawnBefore = document.querySelector('#chart-1 svg').innerHTML")
        cell.first.click(position={"x": 7, "y": 7})  # off centre: a noise dot may sit mid-cell
        page.wait_for_function(
            "document.querySelector('#chart-1 svg').innerHTML !== window.drawnBefore"
        )
        picked_model, picked_task = (selects.nth(k).input_value() for k in (0, 1))
        assert picked_model == models[7]
        assert f"model: {picked_model}" in label and f"task: {picked_task}" in label
        assert outline_on(page, f"model: {picked_model}", f"task: {picked_task}") == label
        if picked_task == "a":  # model 7 on task a was drawn before, by the dropdown
            assert drawn() == seen[1]
        assert log.errors == [] and log.dialogs == [] and log.requests == []
        assert page.locator("img").count() == 0
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= page.viewport_size["width"]
    finally:
        context.close()


def test_report_table_sorts_in_the_browser(
    browser: Any, hostile_tables: dict[str, pl.DataFrame], tmp_path: Path
) -> None:
    path = write_report(
        tmp_path / "report.html",
        comparison=hostile_tables["comparison"],
        bin_statistics=hostile_tables["stats"],
    )
    context, page, log = open_offline(browser, path)
    try:
        headers = page.locator("#comparison thead tr:last-child th").all_inner_texts()
        column = headers.index("ECE")
        header = page.locator("#comparison thead tr:last-child th").nth(column)
        header.click()
        assert header.get_attribute("aria-sort") == "ascending"

        def values() -> list[float]:
            return [
                float(v)
                for v in page.eval_on_selector_all(
                    f"#comparison tbody tr td:nth-child({column + 1})",
                    "els => els.map(e => e.getAttribute('data-value'))",
                )
            ]

        ascending = values()
        assert ascending == sorted(ascending)
        expected = sorted(hostile_tables["comparison"].get_column("ece").to_list())
        assert ascending == pytest.approx(expected, rel=1e-12)
        header.click()
        assert header.get_attribute("aria-sort") == "descending"
        assert values() == sorted(ascending, reverse=True)
        assert log.errors == []
    finally:
        context.close()


def test_saved_chart_html_renders_offline(
    browser: Any, hostile_tables: dict[str, pl.DataFrame], tmp_path: Path
) -> None:
    stats = hostile_tables["stats"]
    chart = reliability_diagram(stats, metrics=hostile_tables["comparison"], facet="task")
    path = save_chart(chart, tmp_path / "diagram.html")
    context, page, log = open_offline(browser, path)
    try:
        [(state, marks)] = chart_states(page)
        assert state == "true"
        assert marks > 100
        assert log.errors == [] and log.dialogs == [] and log.requests == []
        assert page.locator("img").count() == 0
    finally:
        context.close()


def test_without_json_escaping_the_hostile_name_would_run(
    browser: Any,
    hostile_tables: dict[str, pl.DataFrame],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The harness sees an attack: with the JSON escaping switched off, the name
    ``</script><script>alert(3)</script>`` closes the spec element and opens a dialog."""
    from calib_frames.plot import export

    monkeypatch.setattr(export, "_JSON_ESCAPES", {})
    path = save_chart(reliability_diagram(hostile_tables["stats"]), tmp_path / "unescaped.html")
    context = browser.new_context(offline=True)
    page = context.new_page()
    log = PageLog(page)
    try:
        page.goto(path.resolve().as_uri(), wait_until="load")
        assert "alert: 3" in log.dialogs
    finally:
        context.close()


def test_missing_chromium_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a browser (and without root to install one) the fixture fails, never skips."""
    import conftest

    monkeypatch.setattr(conftest, "CHROMIUM_CANDIDATES", ("/nonexistent/chromium",))
    monkeypatch.setattr(conftest.shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match="need Chromium"):
        conftest.locate_chromium()


MANY = {3: (4, 150), 12: (4, 150), 50: (4, 150), 2000: (2, 30)}
"""Models → (tasks, predictions per model × task) of the reports looked at in a browser."""
WINDOWS = ({"width": 1366, "height": 768}, {"width": 1920, "height": 1080})


def many_models(count: int) -> dict[str, pl.DataFrame]:
    """``count`` models (long names, three hostile) on their tasks, and a perplexity task."""
    tasks_count, per_group = MANY[count]
    rng = np.random.default_rng(count)
    models = [f"llama-3-{k}b-instruct-checkpoint-{k:04d}" for k in range(count)]
    models[:3] = list(HOSTILE.values())
    tasks = ["arc_challenge", "hellaswag_long_task_name", "mmlu", "truthfulqa_mc2"][:tasks_count]
    n = count * len(tasks) * per_group
    model = np.repeat(np.arange(count), len(tasks) * per_group)
    confidence = rng.uniform(0.3, 1.0, n)
    skew = rng.uniform(-0.15, 0.15, count)[model]
    predictions = pl.DataFrame(
        {
            "model": np.array(models)[model],
            "task": np.tile(np.repeat(tasks, per_group), count),
            "confidence": confidence,
            "correct": rng.uniform(0, 1, n) < np.clip(confidence + skew, 0, 1),
        }
    )
    documents = 20
    losses = pl.DataFrame(
        {
            "model": np.repeat(models, documents),
            "task": "wikitext",
            "nll": rng.gamma(30, 2, count * documents),
            "tokens": rng.integers(20, 40, count * documents),
            "bytes": rng.integers(80, 160, count * documents),
        }
    )
    by = ["model", "task"]
    stats = cf.bin_statistics(predictions, by=by)
    sums = cf.nll_sums(losses, by=by, tokens="tokens", bytes="bytes")
    tables = cf.comparison.report_tables(
        stats, sums, losses, tokens="tokens", bytes="bytes", model="model", replicates=20
    )
    return {"stats": stats, "comparison": tables.comparison, "leaderboard": tables.leaderboard}


@pytest.fixture(scope="module")
def many_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, list[str]]]:
    """The report of 3, 12, 50 and 2,000 models (built once), with the model names."""
    reports = {}
    for count in MANY:
        tables = many_models(count)
        folder = tmp_path_factory.mktemp(f"models{count}")
        path = write_report(
            folder / "report.html",
            comparison=tables["comparison"],
            bin_statistics=tables["stats"],
            leaderboard=tables["leaderboard"],
        )
        reports[count] = (path, tables["leaderboard"].get_column("model").to_list())
    return reports


def visible_keys(page: Any, table: str) -> list[str]:
    return page.eval_on_selector_all(
        f"#{table} tbody tr:not([hidden]) td.key:first-child",
        "els => els.map(e => e.textContent)",
    )


@pytest.mark.parametrize("window", WINDOWS, ids=lambda w: f"{w['width']}x{w['height']}")
@pytest.mark.parametrize("count", list(MANY))
def test_page_fits_the_window_and_the_filter_finds_every_model(
    browser: Any, many_reports: dict[int, tuple[Path, list[str]]], count: int, window: Any
) -> None:
    """At 3, 12, 50 and 2,000 models, in 1366 × 768 and 1920 × 1080 windows: every chart
    drawn, none wider than its box (legends whole, nothing to scroll sideways), the
    sections in order, every model findable in the filter (issue 31.5)."""
    path, models = many_reports[count]
    tasks = MANY[count][0]
    context = browser.new_context(offline=True, viewport=window)
    page = context.new_page()
    log = PageLog(page)
    try:
        page.goto(path.resolve().as_uri())
        page.wait_for_function(
            "document.querySelectorAll('[data-vega-spec]').length === "
            "document.querySelectorAll('[data-rendered]').length",
            timeout=RENDER_TIMEOUT_MS,
        )
        states = chart_states(page)
        # what a reader looks at first: summary, leaderboard, heatmap; the full table last
        sections = page.locator("h2").all_inner_texts()
        assert sections[:3] == ["Summary", "Leaderboard", "Calibration gap by model and task"]
        assert sections[-1] == "Comparison" and len(sections) == 3 + 6 + 1
        # heatmap, picked diagram, reliability, histogram, scatter, Brier, perplexity
        assert len(states) == 7 and all(s == "true" and m > 20 for s, m in states), states
        # no sideways scroll of the page; each chart whole in its box (legends too)
        scroll, inner = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        assert scroll <= inner
        boxes = page.eval_on_selector_all(
            ".chart, .scroll", "els => els.map(e => e.getBoundingClientRect().right)"
        )
        assert max(boxes) <= inner
        cut = page.eval_on_selector_all(
            ".chart",
            "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.id)",
        )
        assert cut == []
        # the summary opens the page: the best and the worst model of the leaderboard
        summary = page.locator("dl.summary").inner_text()
        assert f"best\n{models[0]}" in summary and f"worst\n{models[-1]}" in summary
        # every model findable: typed in the filter, its rows alone stay (of the 2,000:
        # every 100th and the last)
        filter_box = page.locator('.toolbar[data-table="comparison"] input.filter')
        rows = len(visible_keys(page, "comparison"))
        for model in models if count <= 50 else [*models[::100], models[-1]]:
            filter_box.fill(model)
            shown = visible_keys(page, "comparison")
            assert shown and set(shown) == {model}, model
            assert len(shown) == tasks + 1  # its tasks and the perplexity task
        filter_box.fill("wikitext")
        assert len(visible_keys(page, "comparison")) == count
        filter_box.fill("")
        assert len(visible_keys(page, "comparison")) == rows
        board_filter = page.locator('.toolbar[data-table="leaderboard"] input.filter')
        board_filter.fill(models[-1])
        assert visible_keys(page, "leaderboard") == [models[-1]]
        # the hostile names are text: in the table, typed into the filter, and nothing ran
        board_filter.fill("</script><script>")
        assert visible_keys(page, "leaderboard") == [HOSTILE["underconfident"]]
        assert page.locator("img").count() == 0
        assert log.dialogs == [] and log.errors == [] and log.requests == []
    finally:
        context.close()


def test_column_toggles_and_intervals_on_demand(
    browser: Any, many_reports: dict[int, tuple[Path, list[str]]]
) -> None:
    path, _ = many_reports[12]
    context, page, log = open_offline(browser, path)
    try:
        head = "#comparison thead tr:last-child th"

        def shown_headers() -> list[str]:
            return page.eval_on_selector_all(
                head,
                "els => els.filter(e => getComputedStyle(e).display !== 'none')"
                ".map(e => e.textContent)",
            )

        def group_spans() -> dict[str, int]:
            return dict(
                page.eval_on_selector_all(
                    "#comparison thead tr.groups th.group",
                    "els => els.filter(e => getComputedStyle(e).display !== 'none')"
                    ".map(e => [e.textContent, e.colSpan])",
                )
            )

        def span_total() -> int:
            return int(
                page.eval_on_selector_all(
                    "#comparison thead tr.groups th",
                    "els => els.filter(e => getComputedStyle(e).display !== 'none')"
                    ".reduce((n, e) => n + e.colSpan, 0)",
                )
            )

        before = shown_headers()
        assert "ECE" in before and "RMSCE" not in before

        def shown_cells() -> int:  # of the first row: hidden with their headers
            return int(
                page.eval_on_selector_all(
                    "#comparison tbody tr:first-child td",
                    "els => els.filter(e => getComputedStyle(e).display !== 'none').length",
                )
            )

        assert span_total() == len(before) == shown_cells()
        toolbar = '.toolbar[data-table="comparison"]'
        page.locator(f'{toolbar} input[data-toggle="detail"]').check()
        assert "RMSCE" in shown_headers() and span_total() == len(shown_headers())
        assert shown_cells() == len(shown_headers())
        page.locator(f'{toolbar} input[data-toggle="g-calibration"]').uncheck()
        assert "ECE" not in shown_headers() and "calibration" not in group_spans()
        assert span_total() == len(shown_headers()) == shown_cells()
        # intervals: in the title on hover; in the cell once ticked
        accuracy = 1 + page.eval_on_selector_all(
            head, "els => els.findIndex(e => e.textContent === 'accuracy')"
        )
        cell = page.locator(f"#comparison tbody tr:first-child td:nth-child({accuracy})")
        title = cell.get_attribute("title")
        assert title.startswith("95% interval [")
        assert cell.locator(".ci").count() == 0
        page.locator(f'{toolbar} input[data-toggle="ci"]').check()
        assert cell.locator(".ci").is_visible()
        assert cell.locator(".ci").text_content() == " " + title.removeprefix("95% interval ")
        page.locator(f'{toolbar} input[data-toggle="ci"]').uncheck()
        assert not cell.locator(".ci").is_visible()
        # the sort still works, on the rows the filter left
        page.locator(f"{toolbar} input.filter").fill("mmlu")
        page.locator(head).nth(accuracy - 1).click()
        values = [
            float(v)
            for v in page.eval_on_selector_all(
                f"#comparison tbody tr:not([hidden]) td:nth-child({accuracy})",
                "els => els.map(e => e.getAttribute('data-value'))",
            )
        ]
        assert len(values) == 12 and values == sorted(values)
        assert log.errors == []
    finally:
        context.close()
