"""The gallery figure: one panel per claim, each host's interval, the band, the pooled one.

:func:`plot` draws a :class:`labkit.report.gallery.Comparison`.  What a reader needs
to read a panel is in the panel:

* the title is the claim id and a short form of its quantity (:func:`short_title`),
  wrapped, never cut mid-word;
* the x axis says the unit (:data:`UNIT_LABELS`), on a log scale where the values
  span more than :data:`LOG_SPAN` (:func:`use_log`);
* the published band is shaded (a one-sided band, "at least 1", runs to the edge
  and says so);
* timed rows show each host's 95% interval; the pooled interval over hosts (a black
  diamond) is clipped to the axis, and a pooled interval wider than the axis is drawn
  to the edge with an arrow and a note instead of a line across the panel;
* clock-free counts (callgrind instructions) are squares without an interval, on a
  tinted panel, each labelled with its code version: they depend on labkit's code,
  not on the host, and are never pooled;
* where nothing is pooled, the pooled row says why, in a few words.

The legend (hosts, pooled, band, count) is at the top of the figure.
"""

from __future__ import annotations

import math
import re
import textwrap
from typing import Any

from labkit.report.summary_format import number as _num

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


def plot(c: Any, *, columns: int = 3) -> Any:
    """The gallery figure of a comparison (see the module).  Returns the matplotlib Figure."""
    # matplotlib on use: `labkit compare` without --figure need not load it
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D  # (as above)
    from matplotlib.patches import Patch  # (as above)

    t = c.table
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
    fig.tight_layout(rect=(0, 0, 1, 1 - legend_h / height), h_pad=1.2, w_pad=1.5)
    return fig


__all__: list[str] = []  # used by labkit.report.gallery.plot only
