"""Reporting: the summary of headline figures, plots, saved figures and ``labkit reproduce``.

The summary API (:mod:`labkit.report.summary`) is re-exported here, so a
notebook writes ``from labkit import report; report.record(...)``.
"""

from labkit.report.summary import (
    COLUMNS,
    VERDICTS,
    format_figure,
    format_summary,
    out_dir,
    record,
    savefig,
    summary_table,
    verdict,
)

__all__ = [
    "COLUMNS",
    "VERDICTS",
    "format_figure",
    "format_summary",
    "out_dir",
    "record",
    "savefig",
    "summary_table",
    "verdict",
]
