"""What notebooks call to record their headline results, and the rule that gives verdicts.

A notebook ends each result with one call per headline quantity::

    from labkit import report
    from labkit.measure import stats
    gain = stats.gain(df, "readv_empty", "readv1", kind="time").affine(100)  # percent
    report.record("R2", "readv(1) as UBUF: time saved per call", live=gain.estimate,
                  measured=gain, reason="live A/B: readv(4K+empty) vs readv(1)")
    report.savefig(fig, "R2-live-ab")

The verdict is not written by the notebook: :func:`record` looks up the
quantity's declared tolerance band (``data/published/bands.csv``, see
:func:`labkit.published.band`) and applies :func:`verdict`, an equivalence
rule with three outcomes:

* **reproduced**: the whole 95% interval lies inside the band;
* **differs**: the whole interval lies outside the band;
* **inconclusive**: anything else; the reason says which edge is crossed and by
  how much the interval must shrink, or that it is wider than the band.  A
  wider (noisier) interval can therefore never give *reproduced*.

Before that, a **noise guard**: when the machine's noise measured in the same
run (the between-run spread of the figure, see
:attr:`labkit.measure.stats.Estimate.noise`) is larger than the effect being
tested (the published figure's distance from "no effect"), the verdict is
*inconclusive* and the reason starts with "machine too noisy".  A quantity
with no band or no measurement is *not measured*.  Whether a difference is
*explained* is a separate column, filled only where the notebook passes the
measured cause (``explained=``).

Rows are JSON files, one per (result, quantity), under ``<out>/summary/``
where ``<out>`` is ``$LABKIT_OUT`` (set by ``labkit reproduce`` to its output
directory) or ``data/results`` otherwise.  Recording the same quantity again
replaces its row, so a rerun never duplicates.  :func:`summary_table` reads
them back as one DataFrame; :func:`format_summary` and :func:`summary_html`
(from :mod:`labkit.report.summary_format`) render it as text and as an HTML
table, never cutting the reason.
:func:`savefig` writes PNG and SVG into ``$LABKIT_OUT/figures`` when
``LABKIT_OUT`` is set, and does nothing otherwise (so an interactive session
leaves no files behind).
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd

from labkit import _files
from labkit.config import data_dir, notebook_name, out_setting, quick_mode
from labkit.report.figures import describe
from labkit.report.summary_format import (
    format_interval,
    format_summary,
)

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
    out: str | os.PathLike[str] | None = None,
    quick: bool | None = None,
    factors: Any = None,
) -> dict[str, Any]:
    """Record one headline quantity of a result, beside its published figure, with its verdict.

    Args:
        result_id: "R1", "R2", "R3" (or another id, e.g. "tour").
        quantity: what was measured, in words; with ``result_id`` it names the
            declared band (:func:`labkit.published.band`).
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
        claim: the claim's id (:mod:`labkit.claims`, e.g. "R2.saved_share"): its
            band is looked up by id, and the row is keyed by it.  None: the
            band of (``result_id``, ``quantity``), whose claim id keys the row
            if it has one.
        out: output root (default :func:`out_dir`).
        quick: the mode the figure was measured in (default: the process's,
            :func:`labkit.config.quick_mode`); a claim not comparable in it
            (``data/published/setups.csv``) is *not comparable*.
        factors: a product claim's factors (:class:`labkit.measure.evidence.Factor`),
            each judged on its own; the product's verdict says when they cancel.

    Returns:
        The row as written.

    Raises:
        ValueError: for an empty result id, quantity or reason, or a ``verdict``
            given for a quantity that has a band.
        TypeError: for a figure that is not a number, a string or None.
    """
    from labkit import published as _published  # data/published; imported late (no cycle)

    for name, text in (("result_id", result_id), ("quantity", quantity), ("reason", reason)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"record: {name} must be a non-empty string, got {text!r}")
    if claim is not None:
        band = _published.claim_band(claim)
        if band is not None and band.result != result_id.strip():
            raise ValueError(f"record: claim {claim!r} is of {band.result}, not {result_id!r}")
    else:
        band = _published.band(result_id.strip(), quantity.strip())
        claim = band.claim if band is not None else ""
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
    from labkit.report.scope import judge_row  # not comparable, scope, original (issue 23)

    v, where = judge_row(claim or None, m, band, noise=noise, quick=quick, factors=factors)
    if band is not None or v.verdict == "not comparable":
        text = v.verdict
        why = f"not measured: {reason.strip()}" if m is None else f"{v.reason}; {reason.strip()}"
        method = m.method if m is not None else ""
    elif verdict is not None:
        text, why, method = verdict.strip(), reason.strip(), "verdict given by the notebook"
    else:
        text, why = "not measured", f"no declared band to compare with; {reason.strip()}"
        method = m.method if m is not None else ""
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


__all__ = [
    "format_interval",
    "format_summary",
    "record",
    "savefig",
    "summary_table",
]
