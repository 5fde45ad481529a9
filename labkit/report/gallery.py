"""The cross-host gallery: bundles side by side, per claim, and what differs between hosts.

The same kernel and code gave R2's time saved 2.9% (*reproduced*) on an Intel Xeon
guest and 1.3% (*differs*) on an AMD EPYC guest: a verdict is about a host in a
session, and one that changes with the host is a finding.  :func:`compare` takes
result bundles (:mod:`labkit.report.bundle`) and gives, per claim:

* each host's estimate, interval and verdict;
* a **pooled** interval over hosts (random effects,
  :func:`labkit.measure.sessions.random_effects`: its width includes the spread
  between hosts), how many hosts it pools and its verdict, only for a *timed*
  quantity measured on two or more hosts in one unit, none *not comparable*, every
  row measuring the same quantity (the same label up to :data:`RENAMED`);
* never a pooled interval for a **clock-free count** (callgrind instructions,
  :func:`is_count`): counts depend on labkit's code, not on the host; counts that
  differ between bundles are a finding naming the code versions;
* a **finding** wherever the hosts disagree (different decided verdicts, or
  intervals that do not overlap), naming what differs: the CPU, the kernel, the
  code version, then the rest of :func:`labkit.measure.host.differences`.

:func:`format_comparison` prints it, :func:`plot` draws it
(:mod:`labkit.report.gallery_plot`).  ``labkit compare BUNDLE...`` is the command;
with no bundle it compares the gallery, ``data/gallery/``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from labkit import published
from labkit.measure import host as _host
from labkit.measure import setups
from labkit.measure.resampling import Estimate
from labkit.measure.sessions import random_effects
from labkit.measure.verdicts import NOT_COMPARABLE, judge, verdict
from labkit.report import gallery_plot
from labkit.report.bundle import Bundle, one_per_host
from labkit.report.summary_format import number as _num

_KEY = ["key"]
#: Labels of earlier summaries (before claim ids) that today's bands cannot map, measuring
#: the same thing: label -> claim id.  Renamed since, or a claim with no band.
#: (R3's old instruction row, READV(IOVEC) against READ, is not R3's rewrite: not mapped.)
RENAMED = {
    "after the fix: tail / head": "R1.tail_over_head",
    "live: READ_FIXED tail / head on today's kernel": "R1.live_tail_over_head",
    "model: ns saved per request by READV -> READ, no deferral": "R3.model_ns_saved",
}
#: Verdicts that decide (a disagreement between two of them is a finding).
DECIDED = ("reproduced", "differs")


@dataclass
class Comparison:
    """What :func:`compare` returns: the table, the findings, the hosts compared (their
    labels, and the bundles in the same order)."""

    table: pd.DataFrame
    findings: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    bundles: list[Bundle] = field(default_factory=list)


def _fmt(v: float) -> str:
    """4 significant digits; large values whole, with thousands separators (1,173,186)."""
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"


def _figure(r: Any) -> str:
    est, lo, hi = _num(r.get("estimate")), _num(r.get("ci_low")), _num(r.get("ci_high"))
    if math.isnan(est):
        return "-"
    unit = r.get("unit")
    unit = "" if not isinstance(unit, str) else unit
    unit = unit if unit in ("%", "x") or not unit else f" {unit}"
    ci = f" [{_fmt(lo)}, {_fmt(hi)}]" if math.isfinite(lo) and math.isfinite(hi) else ""
    return f"{_fmt(est)}{ci}{unit}"


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


#: Units of clock-free counts (they depend on labkit's code, not on the host).
COUNT_UNITS = ("instructions",)
#: Host-record keys that name the CPU (listed first in a finding).
_CPU_KEYS = ("vendor", "family", "model", "stepping", "model_name", "microcode", "hypervisor")


def is_count(r: Any) -> bool:
    """Whether a summary row is a clock-free count (callgrind instructions): its unit is one
    of :data:`COUNT_UNITS` or its method says it is an instruction count."""
    unit = r.get("unit")
    method = r.get("method")
    return (isinstance(unit, str) and unit in COUNT_UNITS) or (
        isinstance(method, str) and "instruction count" in method
    )


def code_version(b: Bundle) -> str:
    """The code a bundle was measured with: the short commit, "+uncommitted" if dirty."""
    code = b.manifest.get("code") or {}
    commit = str(code.get("git_commit") or "")[:7] or "unknown commit"
    return commit + ("+uncommitted" if code.get("git_dirty") else "")


def _clip(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def what_differs(a: Bundle, b: Bundle, names: tuple[str, str] = ("a", "b")) -> list[str]:
    """What differs between the hosts of two bundles, as short phrases, in this order: the
    CPU identity (vendor, family, model, stepping, model name, microcode, hypervisor), the
    kernel, the code version, the clock source, cpuidle, SMT and command line
    (:func:`labkit.measure.host.differences`), the vulnerabilities whose mitigation state
    differs (named; the states are in the environment records), and the CPU fields one
    record lacks (``names`` name the two hosts in that phrase)."""
    ha, hb = a.host, b.host
    cpu: list[str] = []
    lacks: dict[str, list[str]] = {names[0]: [], names[1]: []}
    for key in _CPU_KEYS:
        va, vb = ha.get(key), hb.get(key)
        if va is None and vb is None:
            continue
        if va is None or vb is None:
            lacks[names[0] if va is None else names[1]].append(key)
        elif va != vb:
            cpu.append(f"{key}: {va} vs {vb}")
    ka, kb = a.environment.get("kernel_release"), b.environment.get("kernel_release")
    kernel = [] if ka == kb else [f"kernel: {ka or 'not recorded'} vs {kb or 'not recorded'}"]
    ca, cb = code_version(a), code_version(b)
    code = [] if ca == cb else [f"code: {ca} vs {cb}"]
    shown = ("clocksource", "cpuidle_driver", "cmdline", "SMT active", "cpufreq")
    other = [_clip(d) for d in _host.differences(ha, hb) if d.split(":", 1)[0] in shown]
    va, vb = ha.get("vulnerabilities") or {}, hb.get("vulnerabilities") or {}
    vulns = sorted(k for k in set(va) | set(vb) if va.get(k) != vb.get(k))
    mitig = [f"the mitigation state of {', '.join(vulns)}"] if vulns else []
    missing = [f"not recorded for {who}: {', '.join(keys)}" for who, keys in lacks.items() if keys]
    return cpu + kernel + code + other + mitig + missing


def _measures(seen: list[tuple[str, Any, Bundle]]) -> dict[str, list[str]]:
    """The quantities the hosts' rows of one key measure: label -> the hosts.

    A row's quantity is its recorded label (``measures``, :func:`normalised`), whether it
    is a count, and, where two or more rows name different ``definition`` s (a summary
    column saying how the claim was estimated, e.g. raw or corrected for a proxy's bias),
    that definition; a row that names none is then its own quantity too."""
    defs = {d for _, r, _ in seen if isinstance(d := r.get("definition"), str) and d}
    out: dict[str, list[str]] = {}
    for lab, r, _ in seen:
        kind = "count" if is_count(r) else "timed"
        key = f"{r.get('measures')} ({kind})"
        if len(defs) > 1:
            d = r.get("definition")
            key += f" [{d if isinstance(d, str) and d else 'definition not recorded'}]"
        out.setdefault(key, []).append(lab)
    return out


def _count_text(v: float) -> str:
    return f"{v:.6g}"


def _pooled(seen: list[tuple[str, Any, Bundle]]) -> tuple[dict[str, Any], str]:
    """The pooled columns for one claim, and why it was not pooled (or "").

    ``seen`` holds (host label, row, bundle) of the hosts that measured the claim."""
    measured = [(lab, r, b) for lab, r, b in seen if math.isfinite(_num(r.get("estimate")))]
    measured = list({b.fingerprint: (lab, r, b) for lab, r, b in measured}.values())  # 1/host
    rows = [r for _, r, _ in measured]
    if len(rows) < 2:
        return {}, "measured on fewer than two hosts"
    if len(_measures(measured)) > 1:
        return {}, "the hosts' rows measure different quantities under this id"
    if any(str(r.get("verdict")) == NOT_COMPARABLE for r in rows):
        return {}, "not comparable on some host"
    if len({str(r.get("unit") or "") for r in rows}) != 1:
        return {}, "units differ"
    if is_count(rows[0]):
        values = {_num(r.get("estimate")) for r in rows}
        if len(values) == 1:
            return {}, (
                f"a clock-free count, {_count_text(values.pop())} on every host: it depends "
                "on the code, not the host"
            )
        codes = sorted({code_version(b) for _, _, b in measured})
        return {}, (
            "a clock-free count that differs between code versions ("
            + ", ".join(codes)
            + "): a code change, not a host effect"
        )
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
        "pooled_hosts": len(rows),
        "between_hosts_sd": p.spread,
        "pooled_verdict": v.verdict,
        "pooled_method": p.method,
    }, ""


def _shown(diff: list[str], limit: int = 8) -> str:
    more = f"; and {len(diff) - limit} more" if len(diff) > limit else ""
    return "; ".join(diff[:limit]) + more or "nothing the records show"


def _finding(
    name: str, seen: list[tuple[str, Any, Bundle]], hosts: dict[str, str] | None = None
) -> str | None:
    """A sentence when the hosts disagree on the claim ``name``, naming what differs.

    Rows measuring different quantities: said, nothing compared.  Clock-free counts
    that differ: the code versions that gave each value.  Timed rows: every pair of
    hosts with different decided verdicts (else a pair with disjoint intervals), and
    what differs between the two (:func:`what_differs`).  ``hosts`` maps a bundle's
    label to the short name the finding uses ("host 2"; default: the label)."""
    hosts = hosts or {}

    def h(lab: str) -> str:
        return hosts.get(lab, lab)

    measured = [(lab, r, b) for lab, r, b in seen if math.isfinite(_num(r.get("estimate")))]
    quantities = _measures(measured)
    if len(quantities) > 1:
        which = "; ".join(
            f"'{q}' on {', '.join(h(x) for x in labs)}" for q, labs in quantities.items()
        )
        return (
            f"{name}: the hosts' rows measure different quantities under one id ({which}); "
            "not compared, not pooled."
        )
    if measured and is_count(measured[0][1]):
        values: dict[float, list[str]] = {}
        for lab, r, b in measured:
            values.setdefault(_num(r.get("estimate")), []).append(
                f"code {code_version(b)} on {h(lab)}"
            )
        if len(values) < 2:
            return None
        parts = "; ".join(f"{_count_text(v)} ({', '.join(w)})" for v, w in values.items())
        codes = {code_version(b) for _, _, b in measured}
        if len(codes) == 1:
            return (
                f"{name}: a clock-free count differs between hosts running the same code "
                f"({parts}): check the toolchain (compiler, valgrind) of each host."
            )
        return (
            f"{name}: a clock-free count changed with the code version ({parts}): "
            "the code changed between these versions; not a host finding, not pooled."
        )
    decided = [(lab, r, b) for lab, r, b in seen if str(r.get("verdict")) in DECIDED]
    pairs = [
        (a, b)
        for i, a in enumerate(decided)
        for b in decided[i + 1 :]
        if str(a[1].get("verdict")) != str(b[1].get("verdict"))
    ]
    what = "the verdict changes with the host"
    if not pairs:
        ivs = [
            (x, _num(x[1].get("ci_low")), _num(x[1].get("ci_high")))
            for x in seen
            if math.isfinite(_num(x[1].get("ci_low"))) and math.isfinite(_num(x[1].get("ci_high")))
        ]
        pairs = [
            (a, b)
            for i, (a, lo_a, hi_a) in enumerate(ivs)
            for b, lo_b, hi_b in ivs[i + 1 :]
            if hi_a < lo_b or hi_b < lo_a
        ][:1]
        what = "the same verdict, but intervals that do not overlap"
    if not pairs:
        return None
    parts = "; ".join(f"{r.get('verdict')} on {h(lab)}: {_figure(r)}" for lab, r, _ in seen)
    between = " ".join(
        f"{h(a[0]).capitalize()} ({a[1].get('verdict')}) and {h(b[0])} "
        f"({b[1].get('verdict')}) differ in {_shown(what_differs(a[2], b[2], (h(a[0]), h(b[0]))))}."
        for a, b in pairs
    )
    return f"{name}: {what} ({parts}). {between}"


def _estimate(r: Any) -> Any:
    est, lo, hi = _num(r.get("estimate")), _num(r.get("ci_low")), _num(r.get("ci_high"))
    if not math.isfinite(est):
        return None
    n = _num(r.get("n_runs"))
    noise = _num(r.get("noise"))
    return Estimate(
        str(r.get("quantity")), est, lo, hi, 0.95, str(r.get("method") or ""),
        int(n) if math.isfinite(n) else 1, 1, noise, noise,
    )  # fmt: skip


def normalised(summary: pd.DataFrame, bands: pd.DataFrame | None = None) -> pd.DataFrame:
    """A bundle's summary keyed by claim id and judged by today's bands and rule.

    Rows without a ``claim`` (summaries from before claim ids) get one from their label
    (today's bands, or :data:`RENAMED`); a row with a claim is judged again against
    today's band of that claim, not comparable where its setup says so
    (:func:`labkit.measure.verdicts.judge`), the verdict it was recorded with kept in
    ``recorded_verdict``.  ``key`` is the claim id, else ``"result: quantity"``;
    ``measures`` is the quantity the row measured, by the label it was recorded
    with (up to :data:`RENAMED`): rows of one key that measure different quantities
    are never pooled (nor rows whose summaries name different ``definition`` s).
    ``bands``: :func:`labkit.published.bands`, read once by a caller with many
    summaries (None: read here).
    """
    bands = published.bands() if bands is None else bands
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
        label = str(r["quantity"])
        r["measures"] = label
        band = published.claim_band(claim, bands) if claim else None
        if band is not None:
            quick = bool(r.get("quick")) if not pd.isna(r.get("quick", None)) else False
            v = judge(_estimate(r), band, setup=setups.mismatches(claim, quick))
            r["verdict"], r["quantity"] = v.verdict, band.quantity
            r["band_low"], r["band_high"] = band.low, band.high
            if label in RENAMED:  # renamed since, the same quantity
                r["measures"] = band.quantity
        r["key"] = claim or f"{r['result']}: {r['quantity']}"
        rows.append(r)
    return pd.DataFrame(rows)


def compare(bundles: Sequence[Bundle]) -> Comparison:
    """Bundles side by side, one row per claim (see the module).

    Every bundle's rows are keyed by claim id and judged by today's bands
    (:func:`normalised`).  Columns: ``claim``, ``result``, ``quantity``, ``unit``,
    ``kind`` ("timed" or "count", :func:`is_count`), ``band`` (and ``band_low``,
    ``band_high``); per host ``<label>: verdict``, ``<label>: figure``, ``<label>: code``
    and ``<label>: estimate`` / ``ci_low`` / ``ci_high``; ``pooled``, ``pooled_low``,
    ``pooled_high``, ``pooled_hosts``, ``between_hosts_sd``, ``pooled_verdict``,
    ``pooled_method`` (empty where not pooled, with ``not_pooled`` saying why).  Rows
    are sorted by result, timed before counts, then by claim.

    Raises:
        ValueError: with fewer than two bundles, or a summary without the ``result``,
            ``quantity`` and ``verdict`` columns.
    """
    if len(bundles) < 2:
        raise ValueError(f"compare needs at least two bundles, got {len(bundles)}")
    bundles = one_per_host(bundles)  # each bundle once; a HostsWarning says what was pooled
    labels = _labels(bundles)
    bands = published.bands()  # once for every bundle's rows
    tables = []
    keys: list[str] = []
    for b in bundles:
        missing = {"result", "quantity", "verdict"} - set(b.summary.columns)
        if missing:
            raise ValueError(f"{b.path}: the summary lacks {sorted(missing)}")
        t = normalised(b.summary, bands).drop_duplicates(_KEY, keep="last").set_index("key")
        tables.append(t)
        keys += [k for k in t.index if k not in keys]
    rows, findings = [], []
    short = {lab: f"host {k + 1}" for k, lab in enumerate(labels)}
    for key in sorted(keys):
        row: dict[str, Any] = {"claim": key, "kind": "timed"}
        seen = []
        for lab, t, b in zip(labels, tables, bundles, strict=True):
            if key in t.index:
                r = t.loc[key]
                row.setdefault("result", r.get("result"))
                row.setdefault("quantity", r.get("quantity"))
                row.setdefault("unit", r.get("unit"))
                if is_count(r):
                    row["kind"] = "count"
                lo, hi = _num(r.get("band_low")), _num(r.get("band_high"))
                if "band" not in row and math.isfinite(lo):
                    row["band"] = f"[{lo:.4g}, {hi:.4g}]"
                    row["band_low"], row["band_high"] = lo, hi
                row[f"{lab}: verdict"], row[f"{lab}: figure"] = str(r["verdict"]), _figure(r)
                row[f"{lab}: code"] = code_version(b)
                for col in ("estimate", "ci_low", "ci_high"):
                    row[f"{lab}: {col}"] = _num(r.get(col))
                seen.append((lab, r, b))
            else:
                row[f"{lab}: verdict"], row[f"{lab}: figure"] = "not measured", "-"
        pooled, why = _pooled(seen)
        row.update(pooled)
        row["not_pooled"] = why
        rows.append(row)
        f = _finding(_name(key, row), seen, short)
        if f:
            findings.append(f)
    findings.sort(key=lambda f: "the verdict changes" not in f)  # verdict changes first
    table = pd.DataFrame(rows)
    order = sorted(
        range(len(rows)), key=lambda i: (str(rows[i].get("result")), rows[i]["kind"] == "count")
    )
    return Comparison(table.iloc[order].reset_index(drop=True), findings, labels, list(bundles))


def _name(key: str, row: dict[str, Any]) -> str:
    """A claim as a finding names it: the id and its quantity (or the old row's label)."""
    return key if ":" in key else f"{key} ({row.get('quantity')})"


def _pooled_text(r: Any) -> str:
    if "pooled" in r and math.isfinite(_num(r.get("pooled"))):
        n = int(_num(r.get("pooled_hosts"))) if math.isfinite(_num(r.get("pooled_hosts"))) else 0
        return (
            f"{_fmt(r['pooled'])} [{_fmt(r['pooled_low'])}, {_fmt(r['pooled_high'])}] "
            f"over {n} hosts "
            f"(random effects; {r['pooled_verdict']}; between-host SD {r['between_hosts_sd']:.3g})"
        )
    return f"not pooled: {r['not_pooled']}"


def _cell(r: Any, lab: str) -> str:
    cell = f"{r[f'{lab}: verdict']}: {r[f'{lab}: figure']}"
    code = r.get(f"{lab}: code")
    if r.get("kind") == "count" and isinstance(code, str):
        cell += f" (code {code})"
    return cell


def _host_line(b: Bundle) -> str:
    kernel = b.environment.get("kernel_release") or "kernel not recorded"
    return f"{b.fingerprint}; kernel {kernel}; code {code_version(b)}"


def format_comparison(c: Comparison, *, markdown: bool = False) -> str:
    """The comparison for a reader: the hosts (their CPU, kernel and code), per claim each
    host's verdict and figure (count rows with their code version), the pooled interval
    or why none, then every finding."""
    lines = []
    head = [f"hosts compared: {len(c.labels)}"]
    for k, lab in enumerate(c.labels):
        what = f" ({_host_line(c.bundles[k])})" if k < len(c.bundles) else ""
        head.append(f"  - host {k + 1}: {lab}{what}")
    if markdown:
        hosts = " | ".join(f"host {k + 1}" for k in range(len(c.labels)))
        lines.append(f"| claim | quantity | band | {hosts} | pooled over hosts |")
        lines.append("|" + "---|" * (len(c.labels) + 4))
    for _, r in c.table.iterrows():
        cells = [_cell(r, lab) for lab in c.labels]
        band = r.get("band")
        band = band if isinstance(band, str) else "-"
        if markdown:
            lines.append(
                f"| {r['claim']} | {r['quantity']} | {band} | "
                + " | ".join(cells)
                + f" | {_pooled_text(r)} |"
            )
            continue
        lines.append(f"{r['claim']}  {r['quantity']}   band {band}")
        for k, cell in enumerate(cells):
            lines.append(f"    host {k + 1}: {cell}")
        lines.append(f"    pooled over hosts: {_pooled_text(r)}")
    tail = ["", f"findings ({len(c.findings)}): where the hosts disagree"]
    tail += [f"  * {f}" for f in c.findings] or ["  none"]
    return "\n".join(head + [""] + lines + tail)


def plot(c: Comparison, *, columns: int = 3) -> Any:
    """The gallery figure (:func:`labkit.report.gallery_plot.plot`): one panel per claim."""
    return gallery_plot.plot(c, columns=columns)


__all__ = [
    "compare",
    "format_comparison",
    "plot",
]
