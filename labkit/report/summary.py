"""What notebooks call to record their headline results and save their figures.

A notebook ends each result with one call per headline quantity::

    from labkit import report
    report.record("R1", "tail/head time per submission", published=755.0,
                  model=812.0, live=1.02, unit="x",
                  verdict="reproduced", reason="walk-2019 seek, F measured by read()")
    report.savefig(fig, "r1-cost-vs-offset")

Rows are JSON files, one per (result, quantity), under ``<out>/summary/``
where ``<out>`` is ``$LABKIT_OUT`` (set by ``labkit reproduce`` to its output
directory) or ``data/results`` otherwise.  Recording the same quantity again
replaces its row, so a rerun never duplicates.  :func:`summary_table` reads
them back as one DataFrame.  :func:`savefig` writes PNG and SVG into
``$LABKIT_OUT/figures`` when ``LABKIT_OUT`` is set, and does nothing otherwise
(so an interactive session leaves no files behind).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd

from labkit.config import data_dir, quick_mode
from labkit.measure.results import atomic_write

#: Columns of the summary table, in order.
COLUMNS = [
    "result",
    "quantity",
    "published",
    "model",
    "live",
    "unit",
    "verdict",
    "reason",
    "notebook",
    "quick",
    "recorded",
]

#: Verdicts notebooks use (others are accepted, but these sort and colour well).
VERDICTS = ("reproduced", "consistent", "differs (explained)", "not reproduced", "not measured")


def out_dir() -> Path:
    """The output root: ``$LABKIT_OUT`` if set, else ``data/results``."""
    env = os.environ.get("LABKIT_OUT")
    return Path(env) if env else data_dir() / "results"


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


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (no half files)."""
    atomic_write(path, lambda f: f.write(text))


def verdict(
    published: float,
    low: float,
    high: float,
    *,
    inside: str = "reproduced",
    outside: str = "differs (explained)",
) -> str:
    """The verdict of an interval ``[low, high]`` measured here against a published figure.

    ``inside`` when ``low <= published <= high``, else ``outside`` (whose reason the
    caller records).  A rule "within a factor k of ours" is the interval
    ``[ours / k, ours * k]``.

    Raises:
        ValueError: if a bound is NaN or ``low > high``.
    """
    values = [float(published), float(low), float(high)]
    if any(math.isnan(v) for v in values) or values[1] > values[2]:
        raise ValueError(f"verdict: need low <= high and no NaN, got {values[1:]} for {values[0]}")
    return inside if values[1] <= values[0] <= values[2] else outside


def record(
    result_id: str,
    quantity: str,
    *,
    published: Any = None,
    model: Any = None,
    live: Any = None,
    unit: str = "",
    verdict: str,
    reason: str,
    out: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Record one headline quantity of a result, beside its published figure.

    Args:
        result_id: "R1", "R2", "R3" (or another id, e.g. "tour").
        quantity: what was measured, in words ("tail/head ratio").
        published: the published figure (number or text; None if none).
        model: what labkit's model gives here (None if not measured).
        live: what the running kernel gives here (None if not measured).
        unit: unit of the three figures ("ns", "x", "%", ...).
        verdict: one word or phrase, preferably one of :data:`VERDICTS`.
        reason: why the verdict, in a sentence (what explains a difference).
        out: output root (default :func:`out_dir`).

    Returns:
        The row as written.

    Raises:
        ValueError: for an empty result id, quantity, verdict or reason.
        TypeError: for a figure that is not a number, a string or None.
    """
    for name, text in (
        ("result_id", result_id),
        ("quantity", quantity),
        ("verdict", verdict),
        ("reason", reason),
    ):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"record: {name} must be a non-empty string, got {text!r}")
    row = {
        "result": result_id.strip(),
        "quantity": quantity.strip(),
        "published": _value(published, "published"),
        "model": _value(model, "model"),
        "live": _value(live, "live"),
        "unit": str(unit),
        "verdict": verdict.strip(),
        "reason": reason.strip(),
        "notebook": os.environ.get("LABKIT_NOTEBOOK", ""),
        "quick": quick_mode(),
        "recorded": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    path = _summary_dir(out) / f"{_slug(row['result'])}--{_slug(row['quantity'])}.json"
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
    if len(df):
        df = df.sort_values(["result", "quantity"], kind="stable").reset_index(drop=True)
    df.attrs["skipped"] = skipped
    return df


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


def format_summary(df: pd.DataFrame, *, width: int = 48) -> str:
    """The summary as plain text: result, quantity, published, model, live, verdict, reason.

    Reasons are never cut: one longer than ``width`` continues on the next lines.
    """
    if df.empty:
        return "(no results recorded)"
    cols = ["result", "quantity", "published", "model", "live", "verdict", "reason"]
    table = []
    for _, r in df.iterrows():
        unit = f" {r['unit']}" if r.get("unit") else ""
        cells = [str(r["result"]), str(r["quantity"])]
        for c in ("published", "model", "live"):
            s = format_figure(r[c])
            cells.append(s + (unit if s != "-" and not isinstance(r[c], str) else ""))
        reason = textwrap.wrap(str(r["reason"]), width) or [""]
        table.append(cells + [str(r["verdict"]), reason[0]])
        table += [[""] * (len(cols) - 1) + [more] for more in reason[1:]]
    widths = [max(len(c), *(len(row[k]) for row in table)) for k, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in table]
    return "\n".join(line.rstrip() for line in out)


def figures_dir() -> Path | None:
    """``$LABKIT_OUT/figures`` when ``LABKIT_OUT`` is set, else None."""
    env = os.environ.get("LABKIT_OUT")
    return Path(env) / "figures" if env else None


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
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "svg"):
        path = folder / f"{name}.{ext}"
        tmp = folder / f".{name}.tmp.{ext}"
        try:
            fig.savefig(tmp, dpi=dpi, bbox_inches="tight", metadata=_metadata(ext))
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)  # a full disk leaves no half figure behind
            raise
        paths.append(path)
    from labkit.report.figures import describe

    record = json.dumps(describe(fig, caption), indent=1) + "\n"
    atomic_write_text(folder / f"{name}.json", record)
    return paths


def _metadata(ext: str) -> dict[str, Any]:
    # no creation dates: the same figure gives the same file
    if ext == "svg":
        return {"Date": None}
    return {"Software": None}
