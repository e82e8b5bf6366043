r"""A self-contained HTML report: what was evaluated, the comparison table, the charts.

:func:`write_report` writes one file that opens in a browser with no network: the Vega
JavaScript is inlined (:mod:`calib_frames.plot.export`), the table is sorted in the page
by a few lines of inline script, and a Content-Security-Policy forbids every request.

Names are data. Every model, task or column name written as markup is HTML-escaped, and
every chart spec is JSON escaped for a ``<script>`` element (``<``, ``>``, ``&`` as
``\u003c``...), so a model named ``</script><script>alert(1)</script>`` is shown as
text and runs nothing.

=======================================  ================================================
module                                   holds
=======================================  ================================================
:mod:`~calib_frames.report.page`         :func:`write_report`, :func:`report_html`: the
                                         page
:mod:`~calib_frames.report.table_html`   the sortable comparison table
                                         (:data:`REPORT_COLUMNS`; ``table_layout``
                                         decides its columns and best values, in polars)
:mod:`~calib_frames.report.charts`       :func:`report_charts`: which charts, and how
                                         (``report_layout`` decides which groups each
                                         draws, in polars)
:mod:`~calib_frames.report.summary`      ``summary_lines``: what the page and stdout
                                         say first (best and worst model, groups
                                         beyond noise)
``assets/``                              the page's style sheet and sort script
=======================================  ================================================

Headers, number formats and which value is best come from
:mod:`calib_frames.metrics.registry`.
"""

from calib_frames.report.charts import MODEL_LIMIT, report_charts
from calib_frames.report.page import report_html, write_report
from calib_frames.report.table_html import REPORT_COLUMNS

__all__ = ["MODEL_LIMIT", "REPORT_COLUMNS", "report_charts", "report_html", "write_report"]
