"""Reporting: headline figures and their verdicts, plots, saved figures, ``labkit reproduce``.

The summary API (:mod:`labkit.report.summary`, with the verdict rule of
:mod:`labkit.measure.verdicts`) is re-exported here, so a notebook writes
``from labkit import report; report.record(...)``.
"""

from labkit.report.summary import (
    COLUMNS,
    SUMMARY_CSS,
    TOO_NOISY,
    VERDICTS,
    Verdict,
    format_figure,
    format_summary,
    judge,
    out_dir,
    record,
    savefig,
    summary_html,
    summary_table,
    verdict,
)

__all__ = [
    "COLUMNS",
    "SUMMARY_CSS",
    "TOO_NOISY",
    "VERDICTS",
    "Verdict",
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
