"""What a reader sees: summary rows and their verdicts, saved figures, bundles, the gallery.

The summary API (:mod:`labkit.report.summary`, with the verdict rule of
:mod:`labkit.measure.verdicts`) is re-exported here; the engine (:mod:`labkit.claims`)
records every claim's row through :func:`record`, and notebook 00 reads them back.
"""

from labkit.measure.verdicts import TOO_NOISY, judge, verdict
from labkit.report.summary import (
    COLUMNS,
    SummaryView,
    format_number,
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
    "format_number",
    "format_summary",
    "judge",
    "out_dir",
    "record",
    "savefig",
    "summary_html",
    "summary_table",
    "verdict",
]
