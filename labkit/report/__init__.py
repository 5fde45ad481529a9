"""Reporting: headline figures and their verdicts, plots, saved figures, ``labkit reproduce``.

The summary API (:mod:`labkit.report.summary` and its formatting,
:mod:`labkit.report.summary`, with the verdict rule of
:mod:`labkit.measure.verdicts`) is re-exported here, so a notebook writes
``from labkit import report; report.record(...)``.
"""

from labkit.measure.verdicts import TOO_NOISY, judge, verdict
from labkit.report.summary import (
    COLUMNS,
    SummaryView,
    format_figure,
    format_summary,
    out_dir,
    record,
    savefig,
    summary_html,
    summary_table,
)

__all__ = [
    "COLUMNS",
    "TOO_NOISY",
    "SummaryView",
    "format_figure",
    "format_summary",
    "judge",
    "out_dir",
    "record",
    "savefig",
    "summary_html",
    "summary_table",
    "verdict",
]
