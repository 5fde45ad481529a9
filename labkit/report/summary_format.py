"""The summary table as a reader sees it: plain text, an HTML page, a notebook's table.

:func:`format_summary` (text: one block per row, the reason wrapped, never cut),
:func:`summary_html` (an HTML table: ``layout="wide"`` for the report's page, ``"notebook"``
for a notebook's width) and :class:`SummaryView` (a notebook shows it as the HTML table, a
terminal or nbval as the text) render the rows of :func:`labkit.report.summary.summary_table`
or of a ``summary.csv`` read back with pandas.  A missing figure is shown as "-" and a
missing text as nothing: no "nan" ever reaches a reader.  :func:`format_figure` and
:func:`format_interval` are the one way labkit writes a figure.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
from collections.abc import Callable
from typing import Any

import pandas as pd

from labkit.measure.verdicts import multiplicity


def _css(text: str) -> str:
    """A verdict as a CSS class suffix ("not measured" -> "not-measured")."""
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"


def number(v: Any) -> float:
    """A summary cell as a float: NaN for an empty cell, None or text that is not a number."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def format_figure(v: Any) -> str:
    """A figure for a table: whole or large numbers in full (1,039,879), others to 4
    significant digits; None or NaN as "-"; text as it is."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, str):
        return v
    f = float(v)
    if f.is_integer() and abs(f) < 1e15:
        return f"{int(f):,}"
    if abs(f) >= 1e3:
        return f"{f:,.0f}"
    return f"{f:.4g}"


def format_interval(r: Any) -> str:
    """A row's ``estimate [ci_low, ci_high]`` as :func:`format_figure` writes figures; the
    estimate alone without an interval, "-" without an estimate."""
    est, lo, hi = r.get("estimate"), r.get("ci_low"), r.get("ci_high")
    if est is None or (isinstance(est, float) and math.isnan(est)):
        return "-"
    if lo is None or hi is None or any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
        return format_figure(est)
    return f"{format_figure(est)} [{format_figure(lo)}, {format_figure(hi)}]"


def _band(r: Any) -> str:
    lo, hi = r.get("band_low"), r.get("band_high")
    if lo is None or hi is None or any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
        return "-"
    if math.isinf(float(hi)):
        return f">= {format_figure(lo)}"
    if math.isinf(float(lo)):
        return f"<= {format_figure(hi)}"
    return f"[{format_figure(lo)}, {format_figure(hi)}]"


def _runs(r: Any) -> str:
    n = r.get("n_runs")
    return "-" if n is None or pd.isna(n) else str(int(n))


def _missing(v: Any) -> bool:
    """True for None, NaN and pandas' NA (what ``pd.read_csv`` gives for an empty field)."""
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # a list or an array: not a missing scalar
        return False


def _text(v: Any) -> str:
    """A text field for display: empty when missing (never "nan")."""
    return "" if _missing(v) else str(v)


def row_cells(r: Any) -> dict[str, str]:
    """One summary row as display strings (figures with their unit); a missing figure is
    "-", a missing text is empty: a row read back from ``summary.csv`` shows no "nan"."""
    unit = f" {_text(r.get('unit'))}" if _text(r.get("unit")) else ""

    def fig(v: Any) -> str:
        s = format_figure(None if _missing(v) else v)
        return s + (unit if s != "-" and not isinstance(v, str) else "")

    interval = format_interval({k: None if _missing(r.get(k)) else r.get(k) for k in _CI})
    band = _band({k: None if _missing(r.get(k)) else r.get(k) for k in _BAND})
    return {
        "result": _text(r.get("result")),
        "quantity": _text(r.get("quantity")),
        "published": fig(r.get("published")),
        "model": fig(r.get("model")),
        "live": fig(r.get("live")),
        "measured [95% CI]": interval + (unit if interval != "-" else ""),
        "band": band + (unit if band != "-" else ""),
        "runs": _runs(r),
        "noise": fig(r.get("noise")),
        "verdict": _text(r.get("verdict")),
        "explained": _text(r.get("explained")),
        "method": _text(r.get("method")),
        "reason": _text(r.get("reason")),
        "original": _text(r.get("original")),
        "estimand": _text(r.get("estimand")),
        "evidence": _text(r.get("evidence")),
        "amended": _text(r.get("amended")),
    }


_CI = ("estimate", "ci_low", "ci_high")
_BAND = ("band_low", "band_high")


#: The columns of :func:`format_summary`; the last, the reason, is wrapped, never cut.
TEXT_COLUMNS = [
    "result",
    "quantity",
    "published",
    "model",
    "live",
    "measured [95% CI]",
    "band",
    "runs",
    "noise",
]


def format_summary(df: pd.DataFrame, *, width: int = 72) -> str:
    """The summary as plain text: one block per row, the reason wrapped at ``width``.

    Columns: result, quantity, published, model, live, measured [95% CI], band,
    runs, noise, verdict; then the reason (and the measured cause where there is one) on
    the following lines, wrapped, never cut.
    """
    if df.empty:
        return "(no results recorded)"
    cols = [*TEXT_COLUMNS, "verdict"]
    rows = [row_cells(r) for _, r in df.iterrows()]
    widths = {c: max(len(c), *(len(row[c]) for row in rows)) for c in cols}
    out = ["  ".join(c.ljust(widths[c]) for c in cols).rstrip()]
    out.append("  ".join("-" * widths[c] for c in cols))
    scopes = sorted({str(v) for v in df.get("scope", pd.Series(dtype=str)).dropna() if v})
    out[:0] = [f"where these verdicts hold: {'; '.join(scopes)}", ""] if scopes else []
    out[:0] = [f"what 95% means here: {multiplicity(r for _, r in df.iterrows())}", ""]
    for row in rows:
        out.append("  ".join(row[c].ljust(widths[c]) for c in cols).rstrip())
        notes = [(k, row[k]) for k in ("estimand", "evidence") if row.get(k)]
        notes.append(("reason", row["reason"]))
        if row.get("amended"):
            notes.append(("amended", row["amended"]))
        if row["explained"]:
            notes.append(("explained", row["explained"]))
        if row.get("original"):  # the original measurement's own interval (issue 23)
            notes.append(("original", row["original"]))
        for label, text in notes:
            lines = textwrap.wrap(text, width=width) or [""]
            prefix = f"    {label}: "
            out.append(prefix + lines[0])
            out += [" " * len(prefix) + line for line in lines[1:]]
    return "\n".join(out)


#: The columns of :func:`summary_html`, in order.
HTML_COLUMNS = [*TEXT_COLUMNS, "verdict", "estimand", "evidence", "explained", "method"]
HTML_COLUMNS += ["reason", "amended"]

#: CSS for :func:`summary_html` (verdict colours), to put in the page's ``<style>``.
SUMMARY_CSS = """
table.summary td.verdict-reproduced { background: #e3f4e1; }
table.summary td.verdict-differs { background: #fbe3e0; }
table.summary td.verdict-inconclusive { background: #fdf3d7; }
table.summary td.verdict-not-measured { color: #777; }
table.summary td.verdict-not-comparable { color: #555; font-style: italic; }
table.summary td.verdict-consistent-in-magnitude { background: #eef6ec; }
table.summary td.verdict-not-consistent { background: #fcefed; }
table.summary td.verdict-factors-cancel { background: #fdf3d7; }
table.summary td.verdict-check-passed, table.summary td.verdict-check-failed,
table.summary td.verdict-check-inconclusive { color: #555; }
table.summary td { vertical-align: top; }
table.summary td.reason { min-width: 24em; }
"""


def summary_html(df: pd.DataFrame, *, layout: str = "wide") -> str:
    """The summary as an HTML ``<table class="summary">``, every cell escaped, nothing cut.

    Args:
        df: the summary (:func:`summary_table`, or ``summary.csv`` read back).
        layout: "wide" (one column each of :data:`HTML_COLUMNS`: the report's page) or
            "notebook" (the figures and the verdict in one row per quantity, its reason and
            measured cause in a full-width row under it, so the table fits a notebook's
            width; the verdict cell coloured inline, which JupyterLab keeps in untrusted
            notebooks too).

    Each verdict cell has the class ``verdict-<verdict>`` (see :data:`SUMMARY_CSS`).  A
    missing figure is "-" and a missing text empty: nothing shows "nan".
    """
    if layout not in ("wide", "notebook"):
        raise ValueError(f"layout must be 'wide' or 'notebook', not {layout!r}")
    if df.empty:
        return "<p>(no results recorded)</p>"
    if layout == "notebook":
        return _notebook_html(df)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in HTML_COLUMNS)
    body = [_row(row_cells(r), HTML_COLUMNS, _wide_attrs) for _, r in df.iterrows()]
    return _table(head, body)


def _wide_attrs(column: str, value: str) -> str:
    if column == "verdict":
        return f" class='verdict-{_css(value)}'"
    return " class='reason'" if column == "reason" else ""


def _row(cells: dict[str, str], columns: list[str], attrs: Callable[[str, str], str]) -> str:
    """One ``<tr>`` of ``cells``, each ``<td>`` with the attributes ``attrs(column, value)``."""
    tds = (f"<td{attrs(c, cells[c])}>{html.escape(cells[c])}</td>" for c in columns)
    return "<tr>" + "".join(tds) + "</tr>"


def _table(head: str, rows: list[str], attrs: str = "") -> str:
    """A summary ``<table>``: its header cells, its body rows, attributes after the class."""
    return (
        f"<table class='summary'{attrs}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>"
    )


#: The columns of the notebook layout of :func:`summary_html` (the reason goes under them).
NOTEBOOK_COLUMNS = ["result", "quantity", "published", "measured [95% CI]", "band", "verdict"]

#: Background of each verdict in the notebook layout (the colours of :data:`SUMMARY_CSS`).
VERDICT_COLOURS = {
    "reproduced": "#e3f4e1",
    "differs": "#fbe3e0",
    "inconclusive": "#fdf3d7",
    "consistent in magnitude": "#eef6ec",
    "not consistent": "#fcefed",
    "factors cancel": "#fdf3d7",
}


def _notebook_html(df: pd.DataFrame) -> str:
    esc = html.escape
    left = "text-align:left; vertical-align:top"
    head = "".join(f"<th style='{left}'>{esc(c)}</th>" for c in NOTEBOOK_COLUMNS)

    def attrs(column: str, value: str) -> str:
        style = left
        if column == "verdict" and value in VERDICT_COLOURS:
            style += f"; background-color:{VERDICT_COLOURS[value]}"
        if column == "quantity":
            style += "; min-width:14em"
        cls = f" class='verdict-{_css(value)}'" if column == "verdict" else ""
        return f"{cls} style='{style}'"

    body = []
    for _, r in df.iterrows():
        cells = row_cells(r)
        body.append(_row(cells, NOTEBOOK_COLUMNS, attrs))
        notes = [f"<em>{k}:</em> {esc(cells[k])}" for k in ("estimand", "evidence") if cells[k]]
        notes.append(f"<em>reason:</em> {esc(cells['reason'])}")
        if cells["amended"]:
            notes.append(f"<em>amended:</em> {esc(cells['amended'])}")
        if cells["explained"]:
            notes.append(f"<em>explained:</em> {esc(cells['explained'])}")
        style = f"{left}; font-size:90%; color:#444; padding-left:2em"
        body.append(
            f"<tr><td colspan='{len(NOTEBOOK_COLUMNS)}' class='reason' style='{style}'>"
            + "<br>".join(notes)
            + "</td></tr>"
        )
    return _table(head, body, " style='width:100%; table-layout:auto'")


class SummaryView:
    """The summary for a notebook: JupyterLab shows it as the notebook layout of
    :func:`summary_html`, a terminal (and nbval's text comparison) as :func:`format_summary`."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df

    def _repr_html_(self) -> str:
        return summary_html(self.df, layout="notebook")

    def __repr__(self) -> str:
        return format_summary(self.df)


__all__: list[str] = []  # internal: formatting of labkit.report.summary (number: gallery, pooled)
