"""Do the verdicts of several reproductions agree?  One table, one row per headline quantity.

The verdict rule (:mod:`labkit.measure.verdicts`) promises that noise can move a verdict
only to or from *inconclusive*: an interval inside the band and another wholly outside it
cannot both cover the truth.  :func:`compare` checks that promise over the ``summary.csv``
of several reproductions (``benchmarks/verdict_stability.py`` runs them), and
:func:`format_comparison` prints the result for a reader::

    from labkit.report import stability
    tab = stability.compare([pd.read_csv(p) for p in paths], names=["run 1", "run 2"])
    print(stability.format_comparison(tab))

Each quantity gets one of three outcomes: ``same`` (one verdict in every reproduction),
``moved`` (it moved to or from *inconclusive*: allowed, the interval met an edge of the
band) or ``flipped`` (*reproduced* in one, *differs* in another, or a stand-in's
*consistent in magnitude* against *not consistent*: the intervals do not cover the
run-to-run spread, which the rule must never allow).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from labkit.report.summary import format_interval

__all__ = [
    "by_host",
    "compare",
    "counts",
    "format_comparison",
]

#: What happened to one quantity's verdict over the reproductions compared.
OUTCOMES = ("same", "moved", "flipped")
#: Verdicts that contradict each other: inside the band and wholly outside it (a stand-in
#: says the same as consistent or not, :func:`labkit.measure.verdicts.restate`).
_OPPOSITES = (
    {"reproduced", "differs"},
    {"consistent in magnitude", "not consistent"},
    {"check passed", "check failed"},
)
_KEY = ["result", "quantity"]


def compare(summaries: Sequence[pd.DataFrame], names: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per (result, quantity) found in any of ``summaries`` (``summary.csv`` tables).

    Columns: ``result``, ``quantity``, then for each reproduction ``<name>: verdict`` and
    ``<name>: measured`` (the estimate and its interval, with ``n_runs`` in brackets after), then
    ``outcome`` (one of :data:`OUTCOMES`; a quantity missing from a reproduction counts as
    *not measured* there).

    Raises:
        ValueError: fewer than two summaries, names of the wrong length, or a table
            without the ``result``, ``quantity`` and ``verdict`` columns.
    """
    if len(summaries) < 2:
        raise ValueError(f"compare needs at least two summaries, got {len(summaries)}")
    names = [f"run {i + 1}" for i in range(len(summaries))] if names is None else list(names)
    if len(names) != len(summaries) or len(set(names)) != len(names):
        raise ValueError("names must be distinct, one per summary")
    keys: list[tuple[str, str]] = []
    tables = []
    for t in summaries:
        missing = {*_KEY, "verdict"} - set(t.columns)
        if missing:
            raise ValueError(f"a summary lacks the columns {sorted(missing)}")
        t = t.drop_duplicates(_KEY, keep="last").set_index(_KEY)
        tables.append(t)
        keys += [k for k in t.index if k not in keys]
    rows = []
    for key in sorted(keys):
        row: dict[str, object] = dict(zip(_KEY, key, strict=True))
        seen = []
        for name, t in zip(names, tables, strict=True):
            if key in t.index:
                r = t.loc[key]
                v = str(r["verdict"])
                n = r.get("n_runs")
                shown = format_interval(r)
                if shown != "-" and n is not None and not pd.isna(n):
                    shown += f" ({int(n)} runs)"
            else:
                v, shown = "not measured", "-"
            row[f"{name}: verdict"] = v
            row[f"{name}: measured"] = shown
            seen.append(v)
        if len(set(seen)) == 1:
            row["outcome"] = "same"
        elif any(pair <= set(seen) for pair in _OPPOSITES):
            row["outcome"] = "flipped"
        else:
            row["outcome"] = "moved"
        rows.append(row)
    return pd.DataFrame(rows)


def counts(table: pd.DataFrame) -> dict[str, int]:
    """How many quantities of a :func:`compare` table had each outcome (every outcome keyed)."""
    got = table["outcome"].value_counts()
    return {k: int(got.get(k, 0)) for k in OUTCOMES}


def format_comparison(table: pd.DataFrame, *, markdown: bool = False) -> str:
    """A :func:`compare` table for a reader: one block per quantity, its verdict and figure in
    each reproduction, the outcome marked, and a last line with the counts.  With
    ``markdown``, one Markdown table instead (verdicts only, figures beside them)."""
    names = [c[: -len(": verdict")] for c in table.columns if c.endswith(": verdict")]
    c = counts(table)
    total = (
        f"{c['same']}/{len(table)} verdicts the same in all {len(names)}; "
        f"{c['moved']} moved to or from inconclusive; {c['flipped']} flipped between "
        "reproduced and differs"
    )
    if markdown:
        head = "| result | quantity | " + " | ".join(names) + " | outcome |"
        rule = "|" + "---|" * (len(names) + 3)
        lines = [head, rule]
        for _, r in table.iterrows():
            cells = [f"{r[f'{n}: verdict']}: {r[f'{n}: measured']}" for n in names]
            lines.append(
                f"| {r['result']} | {r['quantity']} | " + " | ".join(cells) + f" | {r['outcome']} |"
            )
        return "\n".join(lines + ["", total])
    mark = {"same": "  ", "moved": "~ ", "flipped": "X "}
    width = max(len(n) for n in names)
    lines = []
    for _, r in table.iterrows():
        lines.append(f"{mark[r['outcome']]}{r['result']}  {r['quantity']}  [{r['outcome']}]")
        for n in names:
            lines.append(f"      {n:<{width}}  {r[f'{n}: verdict']:<13}  {r[f'{n}: measured']}")
    return "\n".join(lines + ["", total])


def by_host(bundles: Sequence[Any]) -> dict[str, pd.DataFrame | None]:
    """Result bundles (:mod:`labkit.report.bundle`) grouped by host fingerprint, each host's
    sessions compared (:func:`compare`; None for a host with a single bundle).

    Within a host the rule promises no flip between *reproduced* and *differs* across
    sessions; across hosts a verdict may change, which :func:`labkit.report.gallery.compare`
    states as a finding.
    """
    groups: dict[str, list[Any]] = {}
    for b in bundles:
        groups.setdefault(b.fingerprint, []).append(b)
    out: dict[str, pd.DataFrame | None] = {}
    for fp, bs in groups.items():
        names = [f"{b.manifest.get('measured') or b.path.name}" for b in bs]
        names = [
            n if names.count(n) == 1 else f"{n} ({b.path.name})"
            for n, b in zip(names, bs, strict=True)
        ]
        out[fp] = compare([b.summary for b in bs], names) if len(bs) >= 2 else None
    return out
