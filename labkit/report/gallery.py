"""The cross-host gallery: bundles side by side, per claim, and what differs between hosts.

The same kernel and code gave R2's time saved 2.9% (*reproduced*) on an Intel Xeon
guest and 1.3% (*differs*) on an AMD EPYC guest: a verdict is about a host in a
session, and one that changes with the host is a finding.  :func:`compare` takes
result bundles (:mod:`labkit.report.bundle`) and gives, per claim:

* each host's estimate, interval and verdict;
* a **pooled** interval over hosts (random effects,
  :func:`labkit.measure.stats.random_effects`: its width includes the spread
  between hosts), how many hosts it pools and its verdict, only for a *timed*
  quantity measured on two or more hosts in one unit, none *not comparable*, every
  row measuring the same quantity (the same label up to :data:`RENAMED`);
* never a pooled interval for a **clock-free count** (callgrind instructions,
  :func:`is_count`): counts depend on labkit's code, not on the host; counts that
  differ between bundles are a finding naming the code versions;
* a **finding** wherever the hosts disagree (different decided verdicts, or
  intervals that do not overlap), naming what differs: the CPU, the kernel, the
  code version, then the rest of :func:`labkit.measure.host.differences`;
* **one estimator** per pooled row (:mod:`labkit.report.estimators`): rows of any
  other are shown apart (``apart``), labelled; a row keeps its recorded confidence, its
  verdict stated as its evidence allows (:func:`labkit.measure.verdicts.restate`).

:func:`format_comparison` prints it, :func:`plot` draws it
(:func:`plot`).  ``labkit compare BUNDLE...`` is the command;
with no bundle it compares the gallery, ``data/gallery/``.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from labkit.measure import host as _host
from labkit.measure import ledgers
from labkit.measure.stats import random_effects, se_of_interval
from labkit.measure.verdicts import DECIDED, NOT_COMPARABLE, restate, verdict
from labkit.report import estimators
from labkit.report.bundle import Bundle, one_per_host
from labkit.report.gallery_rows import normalised
from labkit.report.summary import number as _num

_KEY = ["key"]


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


def _measured(r: Any) -> str:
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

    ``seen`` holds (host label, row, bundle) of the hosts that measured the claim; only
    the rows of its main estimator (:func:`labkit.report.estimators.one_estimator`) are
    pooled, one row per host."""
    measured, _ = estimators.one_estimator(
        [(lab, r, b) for lab, r, b in seen if math.isfinite(_num(r.get("estimate")))]
    )
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
    kinds = [estimators.of_row(r) for r in rows]
    conf = kinds[0].confidence or 0.95
    ses = [se_of_interval(lo, h, e.df, conf) for lo, h, e in zip(lows, highs, kinds, strict=True)]
    # with 2 hosts: t with 1 df, wide by design
    p = random_effects(ests, ses, confidence=conf, what="hosts")
    band_lo, band_hi = _num(rows[0].get("band_low")), _num(rows[0].get("band_high"))
    v = restate(
        verdict(p.estimate, p.ci_low, p.ci_high, band_lo, band_hi, confidence=conf),
        ledgers.evidence_of(str(rows[0].get("claim") or "")),
    )
    return {
        "pooled": p.estimate,
        "pooled_low": p.ci_low,
        "pooled_high": p.ci_high,
        "pooled_hosts": len(rows),
        "between_hosts_sd": p.spread,
        "pooled_verdict": v.verdict,
        "pooled_method": p.method,
        "pooled_estimator": estimators.of_row(rows[0]).id,
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

    measured, _ = estimators.one_estimator(
        [(lab, r, b) for lab, r, b in seen if math.isfinite(_num(r.get("estimate")))]
    )
    seen = [x for x in seen if not math.isfinite(_num(x[1].get("estimate")))] + measured
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
    parts = "; ".join(f"{r.get('verdict')} on {h(lab)}: {_measured(r)}" for lab, r, _ in seen)
    between = " ".join(
        f"{h(a[0]).capitalize()} ({a[1].get('verdict')}) and {h(b[0])} "
        f"({b[1].get('verdict')}) differ in {_shown(what_differs(a[2], b[2], (h(a[0]), h(b[0]))))}."
        for a, b in pairs
    )
    return f"{name}: {what} ({parts}). {between}"


def compare(bundles: Sequence[Bundle]) -> Comparison:
    """Bundles side by side, one row per claim (see the module).

    Every bundle's rows are keyed by claim id and judged by today's bands
    (:func:`normalised`).  Columns: ``claim``, ``result``, ``quantity``, ``unit``,
    ``kind`` ("timed" or "count", :func:`is_count`), ``band`` (and ``band_low``,
    ``band_high``); per host ``<label>: verdict``, ``<label>: measured`` (the estimate
    and its interval as text), ``<label>: code`` and ``<label>: estimate`` / ``ci_low`` /
    ``ci_high``; ``pooled``, ``pooled_low``,
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
    bands = ledgers.bands()  # once for every bundle's rows
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
                row[f"{lab}: verdict"], row[f"{lab}: measured"] = str(r["verdict"]), _measured(r)
                row[f"{lab}: code"] = code_version(b)
                row[f"{lab}: estimator"] = str(r.get("estimator") or "")
                for col in ("estimate", "ci_low", "ci_high"):
                    row[f"{lab}: {col}"] = _num(r.get(col))
                seen.append((lab, r, b))
            else:
                row[f"{lab}: verdict"], row[f"{lab}: measured"] = "not measured", "-"
        pooled, why = _pooled(seen)
        row.update(pooled)
        row["not_pooled"] = why
        row["apart"] = estimators.apart(seen, short, _measured)
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
            f"(random effects; estimator {r.get('pooled_estimator')}; {r['pooled_verdict']}; "
            f"between-host SD {r['between_hosts_sd']:.3g})"
        ) + _apart_text(r)
    return f"not pooled: {r['not_pooled']}" + _apart_text(r)


def _apart_text(r: Any) -> str:
    a = r.get("apart")
    return f"; shown apart, another estimator: {a}" if isinstance(a, str) and a else ""


def _cell(r: Any, lab: str) -> str:
    cell = f"{r[f'{lab}: verdict']}: {r[f'{lab}: measured']}"
    est = r.get(f"{lab}: estimator")
    if isinstance(est, str) and est and r.get("kind") != "count":
        cell += f" (estimator {est})"
    code = r.get(f"{lab}: code")
    if r.get("kind") == "count" and isinstance(code, str):
        cell += f" (code {code})"
    return cell


def _host_line(b: Bundle) -> str:
    kernel = b.environment.get("kernel_release") or "kernel not recorded"
    return f"{b.fingerprint}; kernel {kernel}; code {code_version(b)}"


#: An estimator's name (``runs@98.75%``): code in Markdown, which a renderer would otherwise
#: turn into an e-mail link.
ESTIMATOR_NAME = re.compile(r"(?<![`\w/-])([\w/-]+@[\d.]+%)")


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
            row = f"| {r['claim']} | {r['quantity']} | {band} | " + " | ".join(cells)
            lines.append(ESTIMATOR_NAME.sub(r"`\1`", f"{row} | {_pooled_text(r)} |"))
            continue
        lines.append(f"{r['claim']}  {r['quantity']}   band {band}")
        for k, cell in enumerate(cells):
            lines.append(f"    host {k + 1}: {cell}")
        lines.append(f"    pooled over hosts: {_pooled_text(r)}")
    tail = ["", f"findings ({len(c.findings)}): where the hosts disagree"]
    tail += [f"  * {f}" for f in c.findings] or ["  none"]
    return "\n".join(head + [""] + lines + tail)


#: One colour per host (matplotlib's tab10, as the other figures).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
#: The x-axis label of each unit.
UNIT_LABELS = {
    "%": "per cent (%)",
    "ns": "ns",
    "x": "ratio (x)",
    "instructions": "instructions (callgrind count)",
}
#: A panel whose positive values span more than this factor gets a log x axis.
LOG_SPAN = 30.0
#: Characters per title line, and lines of quantity under the claim id.
TITLE_WIDTH, TITLE_LINES = 44, 2
_COUNT_FACE = "#f6f3e8"
_BAND = "0.86"


def short_title(claim: str, quantity: str, *, width: int = TITLE_WIDTH) -> str:
    """A panel title: the claim id, then its quantity shortened and wrapped at word breaks.

    "(callgrind)" and a leading "model: " / "live: " / "real code: " stay out of the
    quantity (the axis and the panel say them); a quantity longer than
    :data:`TITLE_LINES` lines ends with an ellipsis after a whole word.
    """
    q = re.sub(r"\s*\(callgrind\)", "", str(quantity))
    kind = ""
    m = re.match(r"(model|live|real code): ", q)
    if m:
        kind, q = f" [{m.group(1)}]", q[m.end() :]
    head = (
        f"{claim}{kind}"
        if "." in claim and ":" not in claim
        else f"{claim.split(':')[0]} (an old row, no claim id)"
    )
    lines = textwrap.wrap(q, width)
    if len(lines) > TITLE_LINES:
        lines = lines[:TITLE_LINES]
        lines[-1] = lines[-1].rstrip(" ,;:") + " ..."
    return "\n".join([head, *lines])


def use_log(values: list[float]) -> bool:
    """Whether values (the ends of the intervals and bands of a panel) want a log axis:
    all positive and spanning more than :data:`LOG_SPAN`."""
    vals = [v for v in values if math.isfinite(v)]
    return bool(vals) and min(vals) > 0 and max(vals) / min(vals) > LOG_SPAN


def _why_short(reason: str) -> str:
    """The not-pooled reason in a few words for the panel."""
    for key, short in (
        ("fewer than two", "not pooled: one host"),
        ("different quantities", "not pooled: different quantities"),
        ("not comparable", "not pooled: not comparable"),
        ("differs between code", "count: code changed, not pooled"),
        ("clock-free count", "count: same on every host"),
        ("units differ", "not pooled: units differ"),
        ("no interval", "not pooled: no interval"),
    ):
        if key in reason:
            return short
    return "not pooled"


def _host_values(c: Any, r: Any) -> list[tuple[int, float, float, float]]:
    out = []
    for k, lab in enumerate(c.labels):
        est, lo, hi = (_num(r.get(f"{lab}: {col}")) for col in ("estimate", "ci_low", "ci_high"))
        if math.isfinite(est):
            out.append((k, est, lo, hi))
    return out


def _limits(xs: list[float], log: bool) -> tuple[float, float]:
    lo, hi = min(xs), max(xs)
    if log:
        return lo / 1.6, hi * 1.6
    if hi == lo:
        pad = abs(lo) * 0.1 or 1.0
    else:
        pad = 0.12 * (hi - lo)
    return lo - pad, hi + pad


def _panel(ax: Any, c: Any, r: Any) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator  # matplotlib on use, as below

    n = len(c.labels)
    count = r.get("kind") == "count"
    hosts = _host_values(c, r)
    band_lo, band_hi = _num(r.get("band_low")), _num(r.get("band_high"))
    xs = [v for _, est, lo, hi in hosts for v in (est, lo, hi) if math.isfinite(v)]
    band_ends: list[float] = []
    if math.isfinite(band_hi):
        band_ends = [v for v in (band_lo, band_hi) if math.isfinite(v)]
    elif math.isfinite(band_lo) and (not xs or min(xs) < band_lo):
        band_ends = [band_lo]  # a one-sided band: its end only if a value falls short of it
    xs += band_ends
    if not xs:
        xs = [0.0, 1.0]
    # log only where the estimates and the band span decades, and every end is positive
    log = use_log([est for _, est, _, _ in hosts] + band_ends) and min(xs) > 0
    x0, x1 = _limits(xs, log)
    if count:  # room for the labels right of the squares
        x1 = x1 * 3 if log else x1 + 0.6 * (x1 - x0)
    if log:
        ax.set_xscale("log")
    else:
        ax.xaxis.set_major_locator(MaxNLocator(5, steps=[1, 2, 2.5, 5, 10]))
        if max(abs(x0), abs(x1)) >= 1e4:  # 1,200,000 ns, not 1.2 with "1e6" in a corner
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlim(x0, x1)
    # the band: shaded; a one-sided band runs to the edge and says so
    if math.isfinite(band_lo):
        right = band_hi if math.isfinite(band_hi) else x1
        whole = not math.isfinite(band_hi) and band_lo <= x0
        if not whole:  # a band over the whole axis is said, not shaded
            ax.axvspan(max(band_lo, x0), min(right, x1), color=_BAND, zorder=0, lw=0)
        if not math.isfinite(band_hi):
            note = f"band: at least {band_lo:.4g}" + (" (the whole axis)" if whole else "")
            ax.text(0.99, n + 0.4, note, transform=ax.get_yaxis_transform(), ha="right",
                    va="center", fontsize=6.5, color="0.35")  # fmt: skip
    # the hosts: host 1 on top
    for k, est, lo, hi in hosts:
        y = n - k
        colour = PALETTE[k % len(PALETTE)]
        if count:
            ax.plot(est, y, "s", color=colour, ms=6)
            code = r.get(f"{c.labels[k]}: code")
            ax.annotate(f"{est:.6g}  (code {code})", (est, y), xytext=(6, 0),
                        textcoords="offset points", va="center", fontsize=6.5)  # fmt: skip
            continue
        ok = math.isfinite(lo) and math.isfinite(hi)
        err = [[est - lo], [hi - est]] if ok else None
        ax.errorbar(est, y, xerr=err, fmt="o", color=colour, capsize=3, ms=4, lw=1.4)
    for k in sorted(set(range(n)) - {k for k, *_ in hosts}):
        ax.text(0.5, n - k, "not measured", transform=ax.get_yaxis_transform(), ha="center",
                va="center", fontsize=6.5, color="0.55", style="italic")  # fmt: skip
    # the pooled row (y = 0)
    pooled = _num(r.get("pooled"))
    if math.isfinite(pooled):
        _pooled_mark(ax, r, x0, x1)
    else:
        why = _why_short(str(r.get("not_pooled") or ""))
        ax.text(0.5, 0, why, transform=ax.get_yaxis_transform(), ha="center", va="center",
                fontsize=6.5, color="0.35", style="italic")  # fmt: skip
    ax.axhline(0.5, color="0.7", lw=0.6)
    ax.set_yticks(
        range(n + 1), ["pooled", *(f"host {k + 1}" for k in reversed(range(n)))], fontsize=7
    )
    ax.set_ylim(-0.6, n + 0.7)
    unit = r.get("unit")
    unit_text = (
        UNIT_LABELS.get(unit, unit) if isinstance(unit, str) and unit else "no unit recorded"
    )
    ax.set_xlabel(unit_text + (", log scale" if log else ""), fontsize=7)
    ax.set_title(short_title(str(r["claim"]), str(r.get("quantity"))), fontsize=7.5, loc="left")
    ax.tick_params(axis="x", labelsize=6.5)
    if count:
        ax.set_facecolor(_COUNT_FACE)


def _pooled_mark(ax: Any, r: Any, x0: float, x1: float) -> None:
    """The pooled estimate and its interval, clipped to the axis; an arrow and a note
    where the interval runs past an edge."""
    p, lo, hi = _num(r.get("pooled")), _num(r.get("pooled_low")), _num(r.get("pooled_high"))
    n = int(_num(r.get("pooled_hosts"))) if math.isfinite(_num(r.get("pooled_hosts"))) else 0
    a, b = max(lo, x0), min(hi, x1)
    ax.plot([a, b], [0, 0], color="black", lw=1.4, solid_capstyle="butt")
    if lo >= x0:
        ax.plot([lo, lo], [-0.18, 0.18], color="black", lw=1.2)
    else:
        ax.plot(x0, 0, marker="<", color="black", ms=6, clip_on=False)
    if hi <= x1:
        ax.plot([hi, hi], [-0.18, 0.18], color="black", lw=1.2)
    else:
        ax.plot(x1, 0, marker=">", color="black", ms=6, clip_on=False)
    if x0 <= p <= x1:
        ax.plot(p, 0, "D", color="black", ms=5)
    note = f"{n} hosts"
    if lo < x0 or hi > x1:
        note = f"{n} hosts; pooled interval wider than the axis: [{lo:.3g}, {hi:.3g}]"
    ax.text(0.99, -0.42, note, transform=ax.get_yaxis_transform(), ha="right", va="center",
            fontsize=6, color="0.25")  # fmt: skip


def plotted(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The rows of a comparison that get a panel, and the others in words: a row without
    a claim id (an old row) among rows with one is left out, and a row without a unit
    takes its claim's
    declared unit (its result's ``bands.csv``), else is left out too."""
    units = ledgers.bands().set_index("claim")["unit"].to_dict()

    def old(claim: str) -> bool:
        return "." not in claim or ":" in claim

    ids = any(not old(str(c or "")) for c in table.get("claim", []))
    keep, apart = [], []
    for i, r in table.iterrows():
        claim = str(r.get("claim") or "")
        if ids and old(claim):  # beside rows with claim ids: a row of an older summary
            apart.append(f"{claim.split(':')[0]} '{r.get('quantity')}' (an old row, no claim id)")
            continue
        unit = r.get("unit")
        if not (isinstance(unit, str) and unit):
            unit = units.get(claim)
            if not (isinstance(unit, str) and unit):
                apart.append(f"{claim} (no unit recorded or declared)")
                continue
            table.at[i, "unit"] = unit
        keep.append(i)
    return table.loc[keep].reset_index(drop=True), apart


def plot(c: Any, *, columns: int = 3) -> Any:
    """The gallery figure of a comparison (see the module).  Returns the matplotlib Figure."""
    # matplotlib on use: `labkit compare` without --figure need not load it
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D  # (as above)
    from matplotlib.patches import Patch  # (as above)

    t, apart = plotted(c.table)
    n_panels = len(t)
    rows_n = max(1, math.ceil(n_panels / columns))
    panel_h = 0.3 * (len(c.labels) + 1) + 1.25
    legend_h = 0.2 * math.ceil((len(c.labels) + 3) / 2) + 0.25
    height = panel_h * rows_n + legend_h
    fig, axes = plt.subplots(rows_n, columns, figsize=(4.3 * columns, height), squeeze=False)
    for ax, (_, r) in zip(axes.flat, t.iterrows(), strict=False):
        _panel(ax, c, r)
    for ax in list(axes.flat)[n_panels:]:
        ax.set_visible(False)
    handles: list[Any] = [
        Line2D([], [], marker="o", color=PALETTE[k % len(PALETTE)], lw=1.4, ms=4)
        for k in range(len(c.labels))
    ]
    names = [f"host {k + 1}: {lab}" for k, lab in enumerate(c.labels)]
    handles += [
        Line2D([], [], marker="D", color="black", lw=1.4, ms=5),
        Patch(color=_BAND),
        Line2D([], [], marker="s", color="0.4", lw=0, ms=6),
    ]
    names += [
        "pooled over hosts (random effects, 95%), timed quantities only",
        "published band (the claim's tolerance)",
        "clock-free count (tinted panel): no interval, depends on the code, never pooled",
    ]
    fig.legend(handles, names, loc="upper left", bbox_to_anchor=(0.01, 1.0), fontsize=7.5,
               ncol=2, frameon=False)  # fmt: skip
    if apart:  # rows with no panel, said under the panels
        note = "Not drawn: " + "; ".join(apart)
        fig.text(0.01, 0.0, "\n".join(textwrap.wrap(note, 180)), fontsize=7, va="bottom")
    bottom = 0.35 / height if apart else 0
    fig.tight_layout(rect=(0, bottom, 1, 1 - legend_h / height), h_pad=1.2, w_pad=1.5)
    return fig


__all__ = [
    "compare",
    "format_comparison",
    "plot",
]
