r"""Save charts with no network: self-contained HTML (Vega inlined), PNG and SVG.

* **HTML**: one file holding the Vega, Vega-Lite and vega-embed JavaScript (the bundle that
  vl-convert ships, so nothing is fetched from a CDN), the chart's spec as JSON inside a
  ``<script type="application/json">`` element, and a few lines that draw it. The JSON is
  escaped for that context (``<``, ``>``, ``&``, U+2028 and U+2029 as ``\uXXXX``, as
  Django's ``json_script`` does), so a group named ``</script><script>alert(1)</script>``
  stays data. A Content-Security-Policy allows no network request.
* **PNG / SVG**: rendered by vl-convert (an embedded JavaScript engine, no browser); text
  XML cannot hold (a NUL in a name) is drawn as U+FFFD (:func:`xml_safe`), which would
  otherwise abort the process.

Files are written atomically: to a temporary file in the target folder, then
``os.replace``.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from calib_frames.arguments import InstanceOf, Number, Options, check_arguments
from calib_frames.exceptions import ArgumentError

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "CSP",
    "as_path",
    "chart_html",
    "chart_spec",
    "embed_json",
    "page_html",
    "save_chart",
    "vega_bundle",
    "write_atomic",
    "xml_safe",
]

Format = Literal["html", "png", "svg"]

CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data: blob:; font-src data:"
)
"""Content-Security-Policy of every page written: inline code only, no network at all.
(Vega compiles its expressions with ``Function``, hence ``'unsafe-eval'``.)"""

_JSON_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)
"""Characters escaped in embedded JSON, each with its escape (one ``str.replace`` each,
faster than ``str.translate``'s per-character lookups: BENCHMARKS.md)."""

EMBED_SCRIPT = """\
(function () {
  "use strict";
  var options = { actions: false, renderer: "svg" };
  var targets = document.querySelectorAll("[data-vega-spec]");
  Array.prototype.forEach.call(targets, function (target) {
    var source = document.getElementById(target.getAttribute("data-vega-spec"));
    var spec = JSON.parse(source.textContent);
    vegaEmbed(target, spec, options).then(function (result) {
      target.vegaSpec = spec;
      target.vegaView = result.view;
      target.setAttribute("data-rendered", "true");
      target.dispatchEvent(new CustomEvent("vegaready", { bubbles: true }));
    }).catch(function (error) {
      target.setAttribute("data-rendered", "error");
      target.textContent = "This chart could not be drawn: " + error;
      console.error(error);
    });
  });
})();
"""


def embed_json(value: object) -> str:
    r"""JSON text safe to place inside an HTML ``<script>`` element.

    ``<``, ``>`` and ``&`` (and the JavaScript line separators U+2028/U+2029) become
    ``\u003c``-style escapes, which JSON parsers read back unchanged, so no value can
    close the element or open a comment. NaN and infinities are refused (not JSON).

    Parameters
    ----------
    value
        Anything :func:`json.dumps` takes.

    Returns
    -------
    str
        The JSON text, with those characters escaped.

    Raises
    ------
    ArgumentError
        If the value holds NaN or an infinity.

    Examples
    --------
    >>> from calib_frames.plot import embed_json
    >>> embed_json({"model": "</script><script>"})
    '{"model": "\\u003c/script\\u003e\\u003cscript\\u003e"}'
    """
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except ValueError as error:
        raise ArgumentError(f"cannot embed a value as JSON: {error}") from None
    for character, escape in _JSON_ESCAPES:
        text = text.replace(character, escape)
    return text


def chart_spec(chart: alt.TopLevelMixin, *, validate: bool = True) -> dict[str, Any]:
    """The chart's Vega-Lite spec as a dict (validated by altair unless ``validate=False``).

    Validation against the Vega-Lite JSON schema costs most of the time of a large
    chart; the report skips it for the charts of
    :func:`calib_frames.report.report_charts`, whose specs the tests validate.
    """
    try:
        spec = chart.to_dict(validate=validate)
    except Exception as error:  # altair's schema validation: report it as ours
        raise ArgumentError(f"not a valid chart: {error}") from None
    return spec


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
"""Characters XML 1.0 cannot hold: vl-convert writes text as SVG and aborts on one."""


def xml_safe(value: Any) -> Any:
    r"""``value`` (a spec: dicts, lists, strings) with every character XML cannot hold as U+FFFD.

    vl-convert renders a chart's text through SVG, and a NUL (or another control
    character) in any of it aborts the whole process (a Rust panic that Python cannot
    catch); a name holding one is drawn with U+FFFD instead. Only PNG and SVG go through
    this; the HTML page keeps the names as they are.

    Examples
    --------
    >>> from calib_frames.plot.export import xml_safe
    >>> print(ascii(xml_safe({"title": "a\x00b", "data": [{"m": "c\x01"}, 1.5]})))
    {'title': 'a\ufffdb', 'data': [{'m': 'c\ufffd'}, 1.5]}
    """
    if isinstance(value, str):
        return _NOT_XML.sub("\ufffd", value)
    if isinstance(value, dict):
        return {xml_safe(key): xml_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [xml_safe(item) for item in value]
    return value


def _vl_version() -> str | None:
    import altair as alt
    import vl_convert as vlc

    version = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return version if version in vlc.get_vegalite_versions() else None


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    r"""The Vega + Vega-Lite + vega-embed JavaScript bundle, for an inline ``<script>``.

    From vl-convert (offline); it defines ``vegaEmbed``, ``vegaLite`` and ``vega`` on
    ``window``. Building it takes vl-convert seconds (BENCHMARKS.md), so it is kept in
    ``$XDG_CACHE_HOME/calib_frames/`` (default ``~/.cache``), named by the vl-convert and
    Vega-Lite versions (built anew when either changes, or when the folder is not
    writable). Any ``</script`` inside it is written ``<\/script`` (same meaning in
    JavaScript, cannot close the element).
    """
    import vl_convert as vlc

    vl_version = _vl_version()
    cached = _cache_dir() / f"vega-bundle-{metadata.version('vl-convert-python')}-{vl_version}.js"
    try:
        return cached.read_text(encoding="utf-8")
    except OSError:
        pass
    bundle: str = vlc.javascript_bundle(vl_version=vl_version)  # type: ignore[call-arg]
    bundle = bundle.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
    try:  # building it takes seconds: keep it for the next report (same versions only)
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cached, bundle)
    except OSError:
        pass
    return bundle


def _cache_dir() -> Path:
    """Where the Vega bundle is kept: ``$XDG_CACHE_HOME/calib_frames`` (``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "calib_frames"


def page_html(title: str, body: str, *, specs: dict[str, dict[str, Any]], style: str = "") -> str:
    """Build a self-contained page.

    It holds ``body`` (already escaped markup), the specs as JSON script elements, the
    inlined Vega bundle and the code that draws every element carrying
    ``data-vega-spec``.
    """
    # the "$schema" URL is only a label (nothing fetches it); leave URLs out of the page
    spec_elements = "\n".join(
        f'<script type="application/json" id="{html.escape(name)}">'
        f"{embed_json({k: v for k, v in spec.items() if k != '$schema'})}</script>"
        for name, spec in specs.items()
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>\n{style}\n</style>\n</head>\n<body>\n{body}\n{spec_elements}\n"
        f"<script>\n{vega_bundle()}\n</script>\n<script>\n{EMBED_SCRIPT}</script>\n"
        "</body>\n</html>\n"
    )


@check_arguments(title=InstanceOf(str, "a title"))
def chart_html(chart: alt.TopLevelMixin, *, title: str = "calib_frames chart") -> str:
    """One chart as a self-contained HTML page (no network needed to view it).

    Parameters
    ----------
    chart
        Any altair chart.
    title
        The page's title (HTML-escaped).

    Returns
    -------
    str
        The page: the Vega bundle inlined, the spec as escaped JSON.

    See Also
    --------
    save_chart : write it (or a PNG / SVG) to a file.

    Examples
    --------
    >>> import polars as pl
    >>> from calib_frames.plot import chart_html, ece_bins_chart
    >>> chart = ece_bins_chart(pl.DataFrame({"bins": [5, 10], "ece": [0.02, 0.03]}))
    >>> page = chart_html(chart)
    >>> "vegaEmbed" in page, "https://cdn" in page
    (True, False)
    """
    spec = chart_spec(chart)
    body = '<div class="chart" data-vega-spec="chart-spec"></div>'
    return page_html(title, body, specs={"chart-spec": spec})


def as_path(path: object) -> Path:
    """``path`` as a :class:`~pathlib.Path`, or :class:`ArgumentError` for a non-path."""
    if not isinstance(path, str | os.PathLike):
        raise ArgumentError(
            f"expected a file path (str or pathlib.Path), got {type(path).__name__}"
        )
    return Path(path)


def write_atomic(path: str | os.PathLike[str], content: str | bytes) -> Path:
    """Write ``content`` to ``path`` atomically (:func:`calib_frames.storage.atomic_write`).

    Raises :class:`ArgumentError` for a path that is a folder (or a missing folder).
    """
    from calib_frames.storage import atomic_write

    target = as_path(path)
    if target.is_dir():
        raise ArgumentError(f"cannot write {target}: it is a folder; give a file path inside it")
    data = content.encode("utf-8") if isinstance(content, str) else content
    return atomic_write(target, lambda tmp: tmp.write_bytes(data))


@check_arguments(
    format=Options.of(Format) | None, scale=Number(greater_than=0), title=InstanceOf(str, "a title")
)
def save_chart(
    chart: alt.TopLevelMixin,
    path: str | os.PathLike[str],
    *,
    format: Format | None = None,
    scale: float = 2.0,
    title: str = "calib_frames chart",
) -> Path:
    """Save a chart as self-contained HTML, PNG or SVG, with no network access.

    Parameters
    ----------
    chart
        Any altair chart (from this package or composed from its charts).
    path
        Target file; written atomically.
    format
        ``"html"``, ``"png"`` or ``"svg"``; default: from the file's suffix.
    scale
        PNG pixel scale (2 = twice the chart's CSS size).
    title
        The HTML page's title.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ArgumentError
        Unknown format, missing folder, a path that is a folder or not a path, or a
        chart that is not valid Vega-Lite.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> from calib_frames.plot import ece_bins_chart, save_chart
    >>> chart = ece_bins_chart(pl.DataFrame({"bins": [5, 10], "ece": [0.02, 0.03]}))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     written = save_chart(chart, pathlib.Path(folder) / "ece.svg")
    ...     written.read_text().startswith("<svg")
    True
    """
    target = as_path(path)
    kind = format if format is not None else target.suffix.lower().lstrip(".")
    if kind == "htm":
        kind = "html"
    if kind not in ("html", "png", "svg"):
        raise ArgumentError(
            f"cannot save a chart as {kind!r}: use a .html, .png or .svg path or format="
        )
    if kind == "html":
        return write_atomic(target, chart_html(chart, title=title))
    import vl_convert as vlc

    spec = xml_safe(chart_spec(chart))
    try:
        if kind == "png":
            content: str | bytes = vlc.vegalite_to_png(spec, vl_version=_vl_version(), scale=scale)
        else:
            content = vlc.vegalite_to_svg(spec, vl_version=_vl_version())
    except Exception as error:  # vl-convert reports Vega errors as plain exceptions
        raise ArgumentError(f"vl-convert could not render the chart: {error}") from None
    return write_atomic(target, content)
