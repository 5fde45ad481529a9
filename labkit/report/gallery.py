"""The cross-host gallery: bundles side by side, per claim, and what differs between hosts.

The same kernel and code gave R2's time saved 2.9% (*reproduced*) on two Intel
Xeon guests and 1.3% (*differs*) on an AMD EPYC guest, and R1's ns per page the
other way round.  A verdict is about a host in a session; a verdict that
changes with the host is a finding.  :func:`compare` takes result bundles
(:mod:`labkit.report.bundle`) and gives, per claim:

* each host's estimate, interval and verdict;
* a **pooled** interval over hosts (random effects,
  :func:`labkit.measure.sessions.random_effects`: it describes the population
  of hosts, and its width includes the spread between them) and its verdict
  against the claim's band, where pooling makes sense: two or more hosts with
  an interval in the same unit, none of them *not comparable*;
* a **finding** wherever the hosts disagree (different decided verdicts, or
  intervals that do not overlap), naming what differs between the hosts
  (:func:`labkit.measure.host.differences`).

:func:`format_comparison` prints it, :func:`plot` draws it (one panel per claim:
each host's interval, the band, the pooled interval).  ``labkit compare
BUNDLE...`` is the command; ``labkit compare`` with no bundle compares the
gallery, ``data/gallery/``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from labkit.measure import host as _host
from labkit.measure.sessions import random_effects
from labkit.measure.verdicts import NOT_COMPARABLE, verdict
from labkit.report.bundle import Bundle

_KEY = ["key"]
#: Labels of earlier summaries renamed since, measuring the same thing: label -> claim id.
#: (R3's old instruction row, READV(IOVEC) against READ, is not R3's rewrite: not mapped.)
RENAMED = {
    "after the fix: tail / head": "R1.tail_over_head",
    "live: READ_FIXED tail / head on today's kernel": "R1.live_tail_over_head",
}
#: One colour per host (matplotlib's tab10, as the other figures).
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
#: Verdicts that decide (a disagreement between two of them is a finding).
DECIDED = ("reproduced", "differs")


@dataclass
class Comparison:
    """What :func:`compare` returns: the table, the findings, the hosts compared."""

    table: pd.DataFrame
    findings: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _figure(r: Any) -> str:
    est, lo, hi = _num(r.get("estimate")), _num(r.get("ci_low")), _num(r.get("ci_high"))
    if math.isnan(est):
        return "-"
    unit = r.get("unit")
    unit = "" if not isinstance(unit, str) else unit
    unit = unit if unit in ("%", "x") or not unit else f" {unit}"
    ci = f" [{lo:.4g}, {hi:.4g}]" if math.isfinite(lo) and math.isfinite(hi) else ""
    return f"{est:.4g}{ci}{unit}"


def _labels(bundles: Sequence[Bundle]) -> list[str]:
    labels: list[str] = []
    for b in bundles:
        name = b.label
        k = 2
        while name in labels:
            name = f"{b.label} ({k})"
            k += 1
        labels.append(name)
    return labels


def _pooled(rows: list[Any]) -> tuple[dict[str, Any], str]:
    """The pooled columns for one claim, and why it was not pooled (or "")."""
    if len(rows) < 2:
        return {}, "measured on fewer than two hosts"
    if any(str(r.get("verdict")) == NOT_COMPARABLE for r in rows):
        return {}, "not comparable on some host"
    if len({str(r.get("unit") or "") for r in rows}) != 1:
        return {}, "units differ"
    ests = [_num(r.get("estimate")) for r in rows]
    lows, highs = [_num(r.get("ci_low")) for r in rows], [_num(r.get("ci_high")) for r in rows]
    if not all(math.isfinite(v) for v in [*ests, *lows, *highs]):
        return {}, "a host has no interval"
    ses = [(h - lo) / (2 * 1.959964) for lo, h in zip(lows, highs, strict=True)]
    p = random_effects(ests, ses, what="hosts")  # with 2 hosts: t with 1 df, wide by design
    band_lo, band_hi = _num(rows[0].get("band_low")), _num(rows[0].get("band_high"))
    v = verdict(p.estimate, p.ci_low, p.ci_high, band_lo, band_hi)
    return {
        "pooled": p.estimate,
        "pooled_low": p.ci_low,
        "pooled_high": p.ci_high,
        "between_hosts_sd": p.spread,
        "pooled_verdict": v.verdict,
        "pooled_method": p.method,
    }, ""


def _finding(key: tuple[str, str], seen: list[tuple[str, Any, Bundle]]) -> str | None:
    """A sentence when the hosts disagree on ``key`` ((result, quantity)), naming what differs."""
    decided = [(lab, r, b) for lab, r, b in seen if str(r.get("verdict")) in DECIDED]
    kinds = {str(r.get("verdict")) for _, r, _ in decided}
    disjoint = None
    ivs = [
        (lab, _num(r.get("ci_low")), _num(r.get("ci_high")), b)
        for lab, r, b in seen
        if math.isfinite(_num(r.get("ci_low"))) and math.isfinite(_num(r.get("ci_high")))
    ]
    for i, (la, lo_a, hi_a, ba) in enumerate(ivs):
        for lb, lo_b, hi_b, bb in ivs[i + 1 :]:
            if hi_a < lo_b or hi_b < lo_a:
                disjoint = (la, ba, lb, bb)
                break
        if disjoint:
            break
    if len(kinds) < 2 and disjoint is None:
        return None
    parts = "; ".join(f"{r.get('verdict')} on {lab}: {_figure(r)}" for lab, r, _ in seen)
    if len(kinds) >= 2:
        a = next(x for x in decided if str(x[1].get("verdict")) == "reproduced")
        b = next(x for x in decided if str(x[1].get("verdict")) == "differs")
        what = "the verdict changes with the host"
        pair = (a[0], a[2], b[0], b[2])
    else:
        what = "the same verdict, but intervals that do not overlap"
        pair = disjoint
    diff = _host.differences(pair[1].host, pair[3].host)
    code_a = str((pair[1].manifest.get("code") or {}).get("git_commit") or "?")[:7]
    code_b = str((pair[3].manifest.get("code") or {}).get("git_commit") or "?")[:7]
    if code_a != code_b:  # a different estimator may differ as much as a different CPU
        diff.insert(0, f"code: {code_a} vs {code_b}")
    shown = "; ".join(diff[:8]) + (f"; and {len(diff) - 8} more" if len(diff) > 8 else "")
    hosts = f"between {pair[0]} and {pair[2]}: {shown or 'nothing the records show'}"
    return f"{key[0]} {key[1]}: {what} ({parts}). What differs {hosts}."


def _estimate(r: Any) -> Any:
    from labkit.measure.resampling import Estimate

    est, lo, hi = _num(r.get("estimate")), _num(r.get("ci_low")), _num(r.get("ci_high"))
    if not math.isfinite(est):
        return None
    n = _num(r.get("n_runs"))
    noise = _num(r.get("noise"))
    return Estimate(
        str(r.get("quantity")), est, lo, hi, 0.95, str(r.get("method") or ""),
        int(n) if math.isfinite(n) else 1, 1, noise, noise,
    )  # fmt: skip


def normalised(summary: pd.DataFrame) -> pd.DataFrame:
    """A bundle's summary keyed by claim id and judged by today's bands and rule.

    Rows without a ``claim`` (summaries from before claim ids) get one from their label
    (today's bands, or :data:`RENAMED`); a row with a claim is judged again against
    today's band of that claim, not comparable where its setup says so
    (:func:`labkit.measure.verdicts.judge`), the verdict it was recorded with kept in
    ``recorded_verdict``.  ``key`` is the claim id, else ``"result: quantity"``.
    """
    from labkit import published
    from labkit.measure import setups
    from labkit.measure.verdicts import judge

    bands = published.bands()
    by_label = dict(zip(bands["quantity"], bands["claim"], strict=True))
    out = summary.copy()
    if "claim" not in out.columns:
        out["claim"] = None
    rows = []
    for _, r in out.iterrows():
        r = r.copy()
        claim = r.get("claim")
        if not isinstance(claim, str) or not claim:
            claim = by_label.get(str(r["quantity"])) or RENAMED.get(str(r["quantity"]))
        r["claim"] = claim
        r["recorded_verdict"] = r.get("verdict")
        band = published.claim_band(claim) if claim else None
        if band is not None:
            quick = bool(r.get("quick")) if not pd.isna(r.get("quick", None)) else False
            v = judge(_estimate(r), band, setup=setups.mismatches(claim, quick))
            r["verdict"], r["quantity"] = v.verdict, band.quantity
            r["band_low"], r["band_high"] = band.low, band.high
        r["key"] = claim or f"{r['result']}: {r['quantity']}"
        rows.append(r)
    return pd.DataFrame(rows)


def compare(bundles: Sequence[Bundle]) -> Comparison:
    """Bundles side by side, one row per claim (see the module).

    Every bundle's rows are keyed by claim id and judged by today's bands
    (:func:`normalised`).  Columns: ``claim``, ``result``, ``quantity``, ``unit``,
    ``band``; per host ``<label>: verdict``,
    ``<label>: figure`` and ``<label>: estimate`` / ``ci_low`` / ``ci_high``; ``pooled``,
    ``pooled_low``, ``pooled_high``, ``between_hosts_sd``, ``pooled_verdict``,
    ``pooled_method`` (empty where not pooled, with ``not_pooled`` saying why).

    Raises:
        ValueError: with fewer than two bundles, or a summary without the ``result``,
            ``quantity`` and ``verdict`` columns.
    """
    if len(bundles) < 2:
        raise ValueError(f"compare needs at least two bundles, got {len(bundles)}")
    labels = _labels(bundles)
    tables = []
    keys: list[str] = []
    for b in bundles:
        missing = {"result", "quantity", "verdict"} - set(b.summary.columns)
        if missing:
            raise ValueError(f"{b.path}: the summary lacks {sorted(missing)}")
        t = normalised(b.summary).drop_duplicates(_KEY, keep="last").set_index("key")
        tables.append(t)
        keys += [k for k in t.index if k not in keys]
    rows, findings = [], []
    for key in sorted(keys):
        row: dict[str, Any] = {"claim": key}
        seen = []
        for lab, t, b in zip(labels, tables, bundles, strict=True):
            if key in t.index:
                r = t.loc[key]
                row.setdefault("result", r.get("result"))
                row.setdefault("quantity", r.get("quantity"))
                row.setdefault("unit", r.get("unit"))
                lo, hi = _num(r.get("band_low")), _num(r.get("band_high"))
                if "band" not in row and math.isfinite(lo):
                    row["band"] = f"[{lo:.4g}, {hi:.4g}]"
                row[f"{lab}: verdict"], row[f"{lab}: figure"] = str(r["verdict"]), _figure(r)
                for col in ("estimate", "ci_low", "ci_high"):
                    row[f"{lab}: {col}"] = _num(r.get(col))
                seen.append((lab, r, b))
            else:
                row[f"{lab}: verdict"], row[f"{lab}: figure"] = "not measured", "-"
        measured = [r for _, r, _ in seen if math.isfinite(_num(r.get("estimate")))]
        pooled, why = _pooled(measured)
        row.update(pooled)
        row["not_pooled"] = why
        rows.append(row)
        f = _finding((row["result"], row["quantity"]), seen)
        if f:
            findings.append(f)
    findings.sort(key=lambda f: "the verdict changes" not in f)  # verdict changes first
    return Comparison(pd.DataFrame(rows), findings, labels)


def format_comparison(c: Comparison, *, markdown: bool = False) -> str:
    """The comparison for a reader: per claim each host's verdict and figure, the pooled
    interval, then every finding."""
    lines = []
    head = [f"hosts compared: {len(c.labels)}"] + [f"  - {lab}" for lab in c.labels]
    if markdown:
        lines.append("| result | quantity | " + " | ".join(c.labels) + " | pooled over hosts |")
        lines.append("|" + "---|" * (len(c.labels) + 3))
    for _, r in c.table.iterrows():
        pooled = (
            f"{r['pooled']:.4g} [{r['pooled_low']:.4g}, {r['pooled_high']:.4g}] "
            f"({r['pooled_verdict']}; between-host SD {r['between_hosts_sd']:.3g})"
            if "pooled" in r and math.isfinite(_num(r.get("pooled")))
            else f"not pooled: {r['not_pooled']}"
        )
        cells = [f"{r[f'{lab}: verdict']}: {r[f'{lab}: figure']}" for lab in c.labels]
        if markdown:
            lines.append(
                f"| {r['result']} | {r['quantity']} | " + " | ".join(cells) + f" | {pooled} |"
            )
            continue
        band = r.get("band")
        lines.append(
            f"{r['result']}  {r['quantity']}   band {band if isinstance(band, str) else '-'}"
        )
        for lab, cell in zip(c.labels, cells, strict=True):
            lines.append(f"    {cell}   <- {lab}")
        lines.append(f"    pooled over hosts: {pooled}")
    tail = ["", f"findings ({len(c.findings)}): where the hosts disagree"]
    tail += [f"  * {f}" for f in c.findings] or ["  none"]
    return "\n".join(head + [""] + lines + tail)


def plot(c: Comparison, *, columns: int = 3) -> Any:
    """One panel per claim: each host's estimate and interval (host k on row k, named in
    the legend), the band shaded, the pooled interval (a black diamond) where pooled.  The
    x range is that of the hosts' intervals and the band (a pooled interval wider than
    that, as with two hosts, runs off the panel).  Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt

    t = c.table
    n = len(t)
    rows_n = max(1, math.ceil(n / columns))
    height = 0.35 * (len(c.labels) + 1) + 1.0
    fig, axes = plt.subplots(
        rows_n, columns, figsize=(4.2 * columns, height * rows_n + 0.6), squeeze=False
    )
    handles = []
    for ax, (_, r) in zip(axes.flat, t.iterrows(), strict=False):
        xs: list[float] = []
        for k, lab in enumerate(c.labels):
            est, lo, hi = (
                _num(r.get(f"{lab}: {col}")) for col in ("estimate", "ci_low", "ci_high")
            )
            if not math.isfinite(est):
                continue
            ok = math.isfinite(lo) and math.isfinite(hi)
            err = [[est - lo], [hi - est]] if ok else None
            h = ax.errorbar(est, k, xerr=err, fmt="o", color=_PALETTE[k % 7], capsize=3)
            if len(handles) <= k:
                handles.append(h)
            xs += [lo, hi] if ok else [est]
        band = r.get("band")
        if isinstance(band, str) and band.startswith("["):
            lo_b, hi_b = (float(x) for x in band.strip("[]").split(","))
            if math.isfinite(lo_b) and math.isfinite(hi_b):
                ax.axvspan(lo_b, hi_b, color="0.85", zorder=0)
                xs += [lo_b, hi_b]
        if math.isfinite(_num(r.get("pooled"))):
            p, lo_p, hi_p = r["pooled"], r["pooled_low"], r["pooled_high"]
            ax.errorbar(p, len(c.labels), xerr=[[p - lo_p], [hi_p - p]], fmt="D", color="black")
        if xs and max(xs) > min(xs):
            pad = 0.15 * (max(xs) - min(xs))
            ax.set_xlim(min(xs) - pad, max(xs) + pad)
        ax.set_yticks(
            range(len(c.labels) + 1),
            [*(f"host {k + 1}" for k in range(len(c.labels))), "pooled"],
            fontsize=7,
        )
        ax.set_ylim(-0.6, len(c.labels) + 0.6)
        ax.set_title(f"{r['result']} {r['quantity']}"[:60], fontsize=7)
        ax.tick_params(axis="x", labelsize=7)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.legend(
        handles,
        [f"host {k + 1}: {lab}" for k, lab in enumerate(c.labels)],
        loc="lower center",
        fontsize=7,
        ncol=1,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.03 + 0.02 * len(c.labels), 1, 1))
    return fig


__all__ = [
    "compare",
    "format_comparison",
    "plot",
]
