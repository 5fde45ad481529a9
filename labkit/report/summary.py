"""The summary: one row per claim, recorded with its verdict, read back and rendered.

The engine (:mod:`labkit.claims`) records each claim's row; a direct call looks like::

    from labkit import report
    from labkit.measure import stats
    gain = stats.gain(df, "readv_empty", "readv1", kind="time").affine(100)  # percent
    report.record("R2", "readv(1) as UBUF: time saved per call", live=gain.estimate,
                  measured=gain, reason="live A/B: readv(4K+empty) vs readv(1)",
                  claim="R2.saved_share", band=claims.get("R2.saved_share").band())
    report.savefig(fig, "R2-live-ab")

The verdict is not written by the caller: :func:`record` asks :func:`judge_row`, which gives
*not comparable* when the claim's declared setup differs from labkit's in this mode
(:func:`labkit.measure.ledgers.mismatches`), else the rule of :mod:`labkit.measure.verdicts`
(the noise guard, then reproduced, differs or inconclusive) applied to the measured interval
and the claim's declared band, stated as the claim's evidence may state it
(:func:`labkit.measure.verdicts.restate`: only the change itself in a booted kernel says
*reproduced* or *differs*; a product is judged with its factors). A quantity with no band or
no measurement is *not measured*. Whether a difference is *explained* is a separate column,
filled only where the caller passes the measured cause (``explained=``).

Beside the verdict, :func:`judge_row` fills the columns :data:`JUDGED_COLUMNS`:

* ``scope``: the host fingerprint and the sessions behind the interval
  (``"on AMD EPYC fam 25 model 1 stepping 1, KVM, ucode 0x1000065, one session
  (the interval covers runs, not sessions)"``);
* ``original``: whether the figure is consistent with the original measurement's own
  interval (``original``, which the claim declares from its result's seed data), beside
  the verdict against the rounded headline's band ("" where the original data allow no
  interval);
* ``estimand`` and ``evidence``: what the claim is about and what the row's figure
  compares, with what and where;
* ``amended``: the row's verdict under each earlier declaration of its band or setup made
  after results existed (:func:`labkit.measure.ledgers.amended_bands`, ``after_results`` in
  setups.csv), "" where there is none.

Rows are JSON files, one per (result, quantity), under ``<out>/summary/``
where ``<out>`` is ``$LABKIT_OUT`` (set by ``labkit reproduce`` to its output
directory) or ``data/results`` otherwise.  Recording the same quantity again
replaces its row, so a rerun never duplicates.  :func:`summary_table` reads
them back as one DataFrame; :func:`format_summary` and :func:`summary_html`
render it as text and as an HTML
table, never cutting the reason.
:func:`savefig` writes PNG and SVG into ``$LABKIT_OUT/figures`` when
``LABKIT_OUT`` is set, and does nothing otherwise (so an interactive session
leaves no files behind).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import html
import io
import json
import math
import os
import re
import textwrap
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from labkit import _files
from labkit.config import data_dir, notebook_name, out_setting, quick_mode
from labkit.measure import host, ledgers
from labkit.measure.verdicts import Verdict, judge, judge_product, multiplicity, restate
from labkit.report.figures import describe

if TYPE_CHECKING:
    from labkit.measure.ledgers import Band
    from labkit.measure.stats import Estimate

#: Columns of the summary table, in order.
COLUMNS = [
    "claim",
    "result",
    "quantity",
    "published",
    "model",
    "live",
    "unit",
    "estimate",
    "ci_low",
    "ci_high",
    "n_runs",
    "band_low",
    "band_high",
    "noise",
    "verdict",
    "explained",
    "method",
    "reason",
    "notebook",
    "quick",
    "recorded",
    "scope",
    "original",
    "estimand",
    "evidence",
    "amended",
]


def out_dir() -> Path:
    """The output root: ``$LABKIT_OUT`` if set, else ``data/results``."""
    return out_setting() or data_dir() / "results"


def _summary_dir(out: str | os.PathLike[str] | None = None) -> Path:
    root = Path(out) if out is not None else out_dir()
    if root.name == "summary" and not (root / "summary").is_dir():
        return root
    return root / "summary"


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return slug[:80] or "x"


def _value(v: Any, name: str) -> float | str | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a number, a string or None, not {type(v).__name__}"
        ) from None
    if math.isnan(f):
        return None
    return f


def atomic_write_text(path: Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (no half files).

    Under ``$LABKIT_OUT`` no link below it is followed (:mod:`labkit._files`).
    """
    root = out_setting()
    inside = root and _files.under(Path(path).parent, root)
    _files.atomic_write(path, text, root=root if inside else None)


# ---- the verdict of a row: the rule, as its evidence may state it, and where it holds ----


def scope_text(
    n_sessions: int = 1, fingerprint: str | None = None, between_session: float = math.nan
) -> str:
    """Where a verdict holds: ``"on <host>, one session"`` or ``"on <host>, over 3 sessions
    (between-session SD 0.4)"`` (an estimate's ``n_sessions`` and ``between_session``)."""
    n = int(n_sessions or 1)
    host = f"on {fingerprint}, " if fingerprint else ""
    if n <= 1:
        return f"{host}one session (the interval covers runs, not sessions)"
    spread = (
        f" (between-session SD {between_session:.3g})" if math.isfinite(between_session) else ""
    )
    return f"{host}over {n} sessions{spread}"


#: The columns :func:`judge_row` adds to a summary row.
JUDGED_COLUMNS = ("scope", "original", "estimand", "evidence", "amended")


@cache
def fingerprint() -> str:
    """This host's one line (:func:`labkit.measure.host.fingerprint`), read once."""
    return host.fingerprint(host.host_record())


def consistency(measured: Any, original: Any) -> str:
    """Whether labkit's interval is consistent with the original measurement's.

    "consistent with the original measurement" when the two 95% intervals overlap
    (a lenient test: two intervals can overlap while their difference is
    significant, never the reverse), "outside the original measurement's
    interval" when they are disjoint; empty when either is missing.
    """
    if measured is None or original is None:
        return ""
    o = f"[{original.ci_low:.3g}, {original.ci_high:.3g}]"
    if measured.ci_high < original.ci_low or measured.ci_low > original.ci_high:
        return f"outside the original measurement's own 95% interval {o}"
    return f"consistent with the original measurement's own 95% interval {o}"


def judge_row(
    claim: str | None,
    measured: Any,
    band: Any,
    *,
    noise: float | None = None,
    quick: bool | None = None,
    original: Any = None,
    factors: Any = None,
) -> tuple[Verdict, dict[str, str]]:
    """(the verdict, the columns of :data:`JUDGED_COLUMNS`) of a claim's row.

    ``claim`` None (a row without a claim id) is judged by the rule alone.  ``factors``:
    the :class:`labkit.measure.verdicts.Factor` list of a product claim.
    """
    found = ledgers.mismatches(claim, quick) if claim else []
    ev = ledgers.evidence_of(claim)
    v = _stated(judge(measured, band, noise=noise, setup=found), ev, factors)
    n = int(getattr(measured, "n_sessions", 1) or 1) if measured is not None else 1
    # one scope for every row of a run (the summary's header line); each row's own spread
    # between sessions is its noise column (Estimate.noise is the between-session SD then)
    where = scope_text(n, fingerprint())
    where += " (noise: the SD between sessions)" if n > 1 else ""
    extra = {"scope": where, "original": "", "estimand": "", "evidence": "", "amended": ""}
    if ev is not None:
        role = "" if ev.role == "claim" else f" [{ev.role}]"
        extra.update(estimand=ev.estimand, evidence=ev.sentence() + role)
    if claim and measured is not None:
        extra["original"] = consistency(measured, original)
        extra["amended"] = _amended(claim, measured, band, noise, found, ev, factors)
    return v, extra


def _stated(rule: Verdict, ev: Any, factors: Any) -> Verdict:
    """The rule's verdict as the evidence may state it, a product with its factors."""
    return judge_product(restate(rule, ev), factors or [], ev)


def _amended(
    claim: str, measured: Any, band: Any, noise: Any, found: list[Any], ev: Any, factors: Any
) -> str:
    """The row's verdict under each declaration its band or setup amended after results
    (an amended band keeps the published figure of ``band``, the band in force)."""
    said = []
    for old in ledgers.amended_bands(claim):
        then = dataclasses.replace(band, low=old.low, high=old.high) if band else old
        v = _stated(judge(measured, then, noise=noise, setup=found), ev, factors)
        said.append(
            f"against the band declared on {old.declared} ({old.declared_in}), "
            f"[{old.low:g}, {old.high:g}], {old.amendment}: {v.verdict}"
        )
    late = [m for m in found if m.after_results]
    if late:
        v = _stated(judge(measured, band, noise=noise), ev, factors)
        when = ", ".join(sorted({f"{m.declared} ({m.declared_in})" for m in late}))
        said.append(
            f"setups declared on {when}, after results ({late[0].after_results}); "
            f"against its band alone: {v.verdict}"
        )
    return "; ".join(said)


def record(
    result_id: str,
    quantity: str,
    *,
    published: Any = None,
    model: Any = None,
    live: Any = None,
    unit: str = "",
    measured: Any = None,
    reason: str,
    explained: str = "",
    noise: float | None = None,
    verdict: str | None = None,
    claim: str | None = None,
    band: Band | None = None,
    original: Estimate | None = None,
    out: str | os.PathLike[str] | None = None,
    quick: bool | None = None,
    factors: Any = None,
) -> dict[str, Any]:
    """Record one headline quantity of a result, beside its published figure, with its verdict.

    Args:
        result_id: "R1", "R2", "R3" (or another id, e.g. "tour").
        quantity: what was measured, in words (a claim's label).
        published: the published figure (default: the band's).
        model: what labkit's model gives here (None if not measured).
        live: what the running kernel gives here (None if not measured).
        unit: unit of the figures ("ns", "x", "%", ...; default: the band's).
        measured: the :class:`labkit.measure.stats.Estimate` the verdict is
            decided on (in ``unit``), or None when nothing could be measured.
        reason: the notebook's sentence: what was compared, what may explain a
            difference.  The rule's own reason is put before it.
        explained: the measured cause of a difference, only where the notebook
            shows it (else left empty; dropped when the verdict is *reproduced*:
            there is no difference to explain).
        noise: the machine's noise for this figure (default: ``measured.noise``).
        verdict: only for quantities without a declared band (a test, the tour);
            a quantity with a band always gets the rule's verdict.
        claim: the claim's id (:mod:`labkit.claims`, e.g. "R2.saved_share"): the row is
            keyed by it.
        band: the claim's declared band around its published figure
            (:meth:`labkit.results.claim.Claim.band`); None: no band, so no verdict by
            the rule (a row without a claim never has one).
        original: the original measurement's own interval of the figure, where its
            data give one: the ``original`` column says whether ``measured`` is
            consistent with it.
        out: output root (default :func:`out_dir`).
        quick: the mode the figure was measured in (default: the process's,
            :func:`labkit.config.quick_mode`); a claim not comparable in it
            (its result's ``setups.csv``) is *not comparable*.
        factors: a product claim's factors (:class:`labkit.measure.verdicts.Factor`),
            each judged on its own; the product's verdict says when they cancel.

    Returns:
        The row as written.

    Raises:
        ValueError: for an empty result id, quantity or reason, or a ``verdict``
            given for a quantity that has a band.
        TypeError: for a figure that is not a number, a string or None.
    """
    for name, text in (("result_id", result_id), ("quantity", quantity), ("reason", reason)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"record: {name} must be a non-empty string, got {text!r}")
    if claim is None:
        claim, band = "", None
    elif band is not None and band.result != result_id.strip():
        raise ValueError(f"record: claim {claim!r} is of {band.result}, not {result_id!r}")
    if band is not None and verdict is not None:
        raise ValueError(
            f"record: {quantity!r} has a declared band: its verdict comes from the rule"
        )
    if verdict is not None and (not isinstance(verdict, str) or not verdict.strip()):
        raise ValueError(f"record: verdict must be a non-empty string, got {verdict!r}")
    unit = str(unit) or (band.unit if band else "")
    if published is None and band is not None:
        published = band.published
    m = measured
    est = lo = hi = None
    if m is not None:
        est, lo, hi = m.estimate, m.ci_low, m.ci_high
        noise = m.noise if noise is None else noise
    v, where = judge_row(
        claim or None, m, band, noise=noise, quick=quick, original=original, factors=factors
    )
    if m is None and verdict is None:  # the label says what the reason says: nothing measured
        text, why, method = "not measured", f"not measured: {reason.strip()}", ""
        if v.verdict == "not comparable":
            why += f" (and {v.reason})"
    elif band is not None or v.verdict == "not comparable":
        text, why, method = v.verdict, f"{v.reason}; {reason.strip()}", m.method if m else ""
    elif verdict is not None:
        text, why, method = verdict.strip(), reason.strip(), "verdict given by the notebook"
    else:  # a figure with nothing declared to judge it against: shown, not judged
        text = "not comparable"
        why = f"shown, not judged: no declared band to compare with; {reason.strip()}"
        method = m.method
    row = {
        "claim": claim,
        "result": result_id.strip(),
        "quantity": quantity.strip(),
        "published": _value(published, "published"),
        "model": _value(model, "model"),
        "live": _value(live, "live"),
        "unit": unit,
        "estimate": _value(est, "estimate"),
        "ci_low": _value(lo, "ci_low"),
        "ci_high": _value(hi, "ci_high"),
        "n_runs": int(m.n_runs) if m is not None else None,
        "band_low": band.low if band else None,
        "band_high": band.high if band else None,
        "noise": _value(noise, "noise"),
        "verdict": text,
        "explained": ""
        if text in ("reproduced", "consistent in magnitude") and not factors
        else str(explained or "").strip(),
        "method": method,
        "reason": why,
        "notebook": notebook_name(),
        "quick": quick_mode(quick),
        "recorded": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **where,
    }
    key = row["claim"] or f"{row['result']}--{row['quantity']}"
    path = _summary_dir(out) / f"{_slug(key)}.json"
    atomic_write_text(path, json.dumps(row, indent=1) + "\n")
    return row


def summary_table(out_dir: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """Every recorded row under ``out_dir`` (its ``summary/`` folder) as a DataFrame.

    Sorted by result then quantity; empty (with the columns) when nothing was
    recorded.  Unreadable files are skipped with their name in
    ``DataFrame.attrs["skipped"]``.
    """
    folder = _summary_dir(out_dir)
    rows, skipped = [], []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(row, dict) or "result" not in row:
                raise ValueError("not a summary row")
        except (OSError, ValueError):
            skipped.append(path.name)
            continue
        rows.append({c: row.get(c) for c in COLUMNS})
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["n_runs"] = pd.array(df["n_runs"], dtype="Int64")  # whole runs, even beside missing ones
    if len(df):
        df = df.sort_values(["result", "quantity"], kind="stable").reset_index(drop=True)
    df.attrs["skipped"] = skipped
    return df


def figures_dir() -> Path | None:
    """``$LABKIT_OUT/figures`` when ``LABKIT_OUT`` is set, else None."""
    env = out_setting()
    return env / "figures" if env else None


def savefig(fig: Any, name: str, *, dpi: int = 120, caption: str | None = None) -> list[Path]:
    """Save ``fig`` as ``<name>.png`` and ``<name>.svg`` in :func:`figures_dir`.

    Does nothing (returns []) when ``LABKIT_OUT`` is not set.  ``name`` may
    contain letters, digits, ``-`` and ``_`` only.  ``<name>.json`` beside them
    records ``caption`` (what the figure shows, published vs ours: the
    reproduction's index prints it under the figure) and the figure's titles,
    axis labels and legend entries (:func:`labkit.report.figures.describe`).

    Returns:
        The paths written.
    """
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name or ""):
        raise ValueError(f"savefig: name must be letters, digits, '-' or '_', got {name!r}")
    folder = figures_dir()
    if folder is None:
        return []
    paths = []
    for ext in ("png", "svg"):
        path = folder / f"{name}.{ext}"
        drawn = io.BytesIO()  # drawn in memory, then written as every file is (_files)
        fig.savefig(drawn, format=ext, dpi=dpi, bbox_inches="tight", metadata=_metadata(ext))
        atomic_write_text(path, drawn.getvalue())
        paths.append(path)

    record = json.dumps(describe(fig, caption), indent=1) + "\n"
    atomic_write_text(folder / f"{name}.json", record)
    return paths


def _metadata(ext: str) -> dict[str, Any]:
    # no creation dates: the same figure gives the same file
    if ext == "svg":
        return {"Date": None}
    return {"Software": None}


def _css(text: str) -> str:
    """A verdict as a CSS class suffix ("not measured" -> "not-measured")."""
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"


def number(v: Any) -> float:
    """A summary cell as a float: NaN for an empty cell, None or text that is not a number."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def format_number(v: Any) -> str:
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
    """A row's ``estimate [ci_low, ci_high]`` as :func:`format_number` writes numbers; the
    estimate alone without an interval, "-" without an estimate."""
    est, lo, hi = r.get("estimate"), r.get("ci_low"), r.get("ci_high")
    if est is None or (isinstance(est, float) and math.isnan(est)):
        return "-"
    if lo is None or hi is None or any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
        return format_number(est)
    return f"{format_number(est)} [{format_number(lo)}, {format_number(hi)}]"


def _band(r: Any) -> str:
    lo, hi = r.get("band_low"), r.get("band_high")
    if lo is None or hi is None or any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
        return "-"
    if math.isinf(float(hi)):
        return f">= {format_number(lo)}"
    if math.isinf(float(lo)):
        return f"<= {format_number(hi)}"
    return f"[{format_number(lo)}, {format_number(hi)}]"


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
        s = format_number(None if _missing(v) else v)
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
        if row.get("original"):  # the original measurement's own interval
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
        layout: "headline" (the report's page: one row per claim with its published and
            measured figures, the interval's confidence beside it, the verdict and its
            evidence; the reason, method and the rest behind a ``<details>`` in the row,
            so the table fits a 1,280 px screen), "wide" (one column each of
            :data:`HTML_COLUMNS`) or
            "notebook" (the figures and the verdict in one row per quantity, its reason and
            measured cause in a full-width row under it, so the table fits a notebook's
            width; the verdict cell coloured inline, which JupyterLab keeps in untrusted
            notebooks too).

    Each verdict cell has the class ``verdict-<verdict>`` (see :data:`SUMMARY_CSS`).  A
    missing figure is "-" and a missing text empty: nothing shows "nan".
    """
    if layout not in ("wide", "notebook", "headline"):
        raise ValueError(f"layout must be 'wide', 'notebook' or 'headline', not {layout!r}")
    if df.empty:
        return "<p>(no results recorded)</p>"
    if layout == "notebook":
        return _notebook_html(df)
    if layout == "headline":
        return _headline_html(df)
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


def label_problems(r: Any) -> list[str]:
    """Where a summary row's verdict label and its reason or figure disagree (empty: none).

    A row labelled *not measured* has no estimate and says "not measured"; a row with an
    estimate is not labelled *not measured*; a reason that opens with "not measured" is
    labelled so; a reproduced/differs/inconclusive row's reason states its interval.
    """
    verdict, reason = _text(r.get("verdict")), _text(r.get("reason"))
    has_value = not _missing(r.get("estimate"))
    out = []
    if verdict == "not measured" and has_value:
        out.append("labelled not measured but carries a measured figure")
    if verdict == "not measured" and "not measured" not in reason:
        out.append("labelled not measured but its reason does not say so")
    if reason.startswith("not measured") and verdict != "not measured":
        out.append(f"its reason says not measured but it is labelled {verdict!r}")
    if verdict in ("reproduced", "differs", "inconclusive") and "interval" not in reason:
        out.append(f"labelled {verdict!r} but its reason states no interval")
    return out


#: The columns of the headline layout of :func:`summary_html` (the rest is in a ``<details>``).
HEADLINE_COLUMNS = ["claim", "published", "measured", "verdict", "evidence"]

#: What the headline layout puts behind each row's ``<details>``, in order.
DETAIL_FIELDS = [
    "reason",
    "method",
    "estimand",
    "band",
    "runs",
    "noise",
    "model",
    "live",
    "explained",
    "amended",
    "original",
]

#: CSS of the headline layout: a fixed layout that wraps inside the page's width.
HEADLINE_CSS = """
table.headline { width: 100%; table-layout: fixed; }
table.headline td, table.headline th { overflow-wrap: anywhere; }
table.headline col.claim { width: 28%; }
table.headline col.published { width: 10%; }
table.headline col.measured { width: 19%; }
table.headline col.verdict { width: 11%; }
table.headline col.evidence { width: 32%; }
table.headline td:last-child { font-size: 0.9em; }
table.headline details { font-size: 0.9em; color: #333; margin-top: 0.3em; }
table.headline details summary { cursor: pointer; color: #555; }
table.headline details dl { margin: 0.3em 0; }
table.headline details dt { font-style: italic; }
table.headline details dd { margin: 0 0 0.3em 1em; }
"""


def confidence_label(r: Any) -> str:
    """The confidence of a row's interval as its reason states it ("95% CI", "97.5% CI"),
    "count" for an instruction count (exact, no interval), "" where the row states none."""
    from labkit.report.estimators import of_row  # the one reader of a row's estimator

    est = of_row(r)
    if est.pooling == "count":
        return "count"
    return "" if est.confidence is None else f"{100 * est.confidence:g}% CI"


def _headline_html(df: pd.DataFrame) -> str:
    esc = html.escape

    def fig(v: Any) -> str:
        unit = _text(r.get("unit"))
        return format_number(None if _missing(v) else v) + (f" {unit}" if unit else "")

    cols = "".join(f"<col class='{c}'>" for c in HEADLINE_COLUMNS)
    head = "".join(f"<th>{esc(c)}</th>" for c in HEADLINE_COLUMNS)
    body = []
    for _, r in df.iterrows():
        cells = row_cells(r)
        measured = cells["measured [95% CI]"]
        conf = confidence_label(r) if measured != "-" else ""
        if conf == "count":  # exact: the interval of a count is the count itself
            measured = fig(r.get("estimate"))
        if conf:
            measured += f" ({conf})"
        details = "".join(
            f"<dt>{esc(k)}</dt><dd>{esc(cells[k])}</dd>"
            for k in DETAIL_FIELDS
            if cells[k] and cells[k] != "-"
        )
        claim = f"<strong>{esc(cells['result'])}</strong> {esc(cells['quantity'])}"
        if details:
            claim += f"<details><summary>reason and method</summary><dl>{details}</dl></details>"
        verdict = cells["verdict"]
        body.append(
            f"<tr><td class='claim'>{claim}</td><td class='num'>{esc(cells['published'])}</td>"
            f"<td class='num measured'>{esc(measured)}</td>"
            f"<td class='verdict-{_css(verdict)}'>{esc(verdict)}</td>"
            f"<td>{esc(cells['evidence'])}</td></tr>"
        )
    return (
        f"<table class='summary headline'><colgroup>{cols}</colgroup>\n"
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"
    )


class SummaryView:
    """The summary for a notebook: JupyterLab shows it as the notebook layout of
    :func:`summary_html`, a terminal (and nbval's text comparison) as :func:`format_summary`."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df

    def _repr_html_(self) -> str:
        return summary_html(self.df, layout="notebook")

    def __repr__(self) -> str:
        return format_summary(self.df)


__all__ = [
    "format_interval",
    "format_summary",
    "record",
    "savefig",
    "summary_table",
]
