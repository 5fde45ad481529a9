"""R1's figures and the tables notebook 02 shows, drawn from what a session measured.

A figure is named (``FIGURES``); ``claims.figure(name)`` draws it from the current session,
saves it and returns it.  Figures are built on :class:`matplotlib.figure.Figure` (not pyplot),
so nothing is shown twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from labkit.core.fixed import SEEKS
from labkit.measure import stats
from labkit.report.plots import COLORS, errorbars, fit_power_law, saving_bars
from labkit.results import kernel_vm
from labkit.results.claim import Drawing, drawn
from labkit.results.r1 import claims, experiments, seed

if TYPE_CHECKING:
    from labkit.claims.engine import Session

MiB = 1 << 20

#: R1's figures by name (notebook 02): ``claims.figure("R1-seek-cost-vs-offset")``.
FIGURES: dict[str, Drawing] = {}


# ---- R1 -------------------------------------------------------------------------------


def seek_table(s: Session) -> object:
    """Median seek cost (95% CI) per seek and offset, from the seek runs."""
    data = s.measure(claims.SEEK).data
    return stats.median_ci(data, by=["variant", "offset", "pages_skipped"])


@drawn(FIGURES, "R1-seek-cost-vs-offset")
def seek_cost(s: Session) -> Figure:
    """The four seeks' cost against the pages skipped, with the published seek."""
    data, pub = s.measure(claims.SEEK).data, seed.published()
    tab = seek_table(s)
    slope = {v: stats.slope(data, variant=v, min_x=16) for v in ("walk-2019", "walk")}
    fig = Figure(figsize=(10.5, 4.5), layout="constrained")
    ax = fig.subplots()
    for seek in SEEKS:
        d = tab[tab.variant == seek].sort_values("offset")
        label = seek + (f" ({slope[seek].estimate:.2f} ns/page)" if seek in slope else "")
        x = d["pages_skipped"].clip(lower=0.5)
        ax.errorbar(x, d["median"], yerr=errorbars(d), fmt="o-", ms=4, label=label)
    real = s.measure(claims.KERNEL_SEEK)
    slope_of = claims.slopes(real)
    if slope_of:  # the real iov_iter_advance over a 1 GiB table: its head apart, unjoined
        tab_k = stats.median_ci(real.data, by=["era", "opt", "pages_skipped"])
        for (era, opt), est in sorted(slope_of.items(), reverse=True):
            d = tab_k[(tab_k.era == era) & (tab_k.opt == opt)].sort_values("pages_skipped")
            level = claims.LEVELS[opt].split(" ")[0]
            label = f"real {era} iov_iter_advance, {level}, 1 GiB ({est.estimate:.2f} ns/page)"
            far, head = d[d["pages_skipped"] > 0], d[d["pages_skipped"] == 0]
            bars = ax.errorbar(far["pages_skipped"], far["median"], yerr=errorbars(far),
                               fmt="s--", ms=3, lw=1, label=label)  # fmt: skip
            ax.errorbar([0.5] * len(head), head["median"], yerr=errorbars(head), fmt="s", ms=3,
                        color=bars.lines[0].get_color())  # fmt: skip
    # the published figures are whole submissions; their seek alone is before - after tail
    seek_only = pub["before_tail_ns"] - pub["after_tail_ns"]
    label = "published, seek only: before tail - after tail (1 GiB assumed)"
    ax.plot([seed.GIB_PAGES], [seek_only], "k*", ms=12, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("pages skipped to reach the offset (offset / 4 KiB; 0 drawn at 0.5)")
    ax.set_ylabel("ns per seek (io_import_fixed, or the real advance)")
    ax.set_title(f"Seek cost across a {s.params(claims.SEEK).buffer // MiB} MiB registered buffer")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside: 9 entries
    return fig


def kernel_seek_table(s: Session) -> object:
    """The real ``iov_iter_advance()`` beside the model's two walks: ns per skipped page
    (measured here) and instructions per page (committed counts, or this session's count of
    the model's walk-2019; "not counted" where none was counted)
    (:func:`labkit.results.r1.claims.comparison`); empty when neither was measured."""
    table = claims.comparison(s.measure(claims.KERNEL_SEEK), s.measure(claims.SEEK))
    walk = table["code"] == "model walk-2019"
    if walk.any() and table.loc[walk, "instructions_per_page"].isna().all():
        counted = s.run("R1.instr_per_page_walk", record=False).estimate
        if counted is not None:
            table.loc[walk, "instructions_per_page"] = counted.estimate
    n = table["instructions_per_page"].astype(object)
    table["instructions_per_page"] = n.where(n.notna(), "not counted")
    return table


@drawn(FIGURES, "R1-head-vs-tail")
def head_vs_tail(s: Session) -> Figure:
    """The four submissions, F + seek + copy, beside the published ones."""
    data, pub = s.measure(claims.SUBMIT).data, seed.published()
    costs = experiments.submission_costs(data)
    labels = list(costs)
    x = np.arange(len(labels))
    est = np.array([costs[k].estimate for k in labels])
    low = np.array([costs[k].ci_low for k in labels])
    high = np.array([costs[k].ci_high for k in labels])
    fig = Figure(figsize=(7.5, 5.0))
    ax = fig.subplots()
    size = s.params(claims.SUBMIT).buffer // MiB
    ax.errorbar(
        x - 0.08,
        est,
        yerr=[est - low, high - est],
        fmt="o",
        ms=7,
        capsize=8,
        color=COLORS["model"],
        label=f"model seek + copy + measured F ({size} MiB), 95% CI",
    )
    pubs = [pub[experiments.SUBMISSIONS[k][1]] for k in labels]
    label = "published (2019, one measurement each)"
    ax.plot(x + 0.08, pubs, "D", ms=7, color=COLORS["published"], label=label)
    ax.set_yscale("log")
    ax.set_xticks(x, labels)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_xlabel("submission: before or after the fix, at the head or the tail of the buffer")
    ax.set_ylabel("ns per 4 KiB READ_FIXED submission (log scale)")
    ax.set_title("One 4 KiB READ_FIXED: head vs tail, before vs after the fix")
    # under the axes: inside, it covered the published before-the-fix tail point
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=8, frameon=False)
    fig.subplots_adjust(bottom=0.3)
    return fig


def submissions(s: Session) -> object:
    """The submission runs' medians (95% CI) per variant, F among them."""
    data = s.measure(claims.SUBMIT).data
    return stats.median_ci(data, by=["variant"])[["variant", "n", "median", "ci_low", "ci_high"]]


def fixed_cost(s: Session) -> object:
    """F, the fixed cost of one submission, measured in the submission runs (Estimate)."""
    return stats.median(s.measure(claims.SUBMIT).data, "F")


def head_tail_ratios(s: Session) -> object:
    """The three head/tail ratios of R1, (F + seek + copy) over (F + seek + copy), beside the
    published ones."""
    pub = seed.published()
    ratios = experiments.head_tail_ratios(s.measure(claims.SUBMIT).data)
    table = stats.to_frame(ratios, key="ratio").set_index("ratio")
    table["published"] = [pub[key] for *_, key in experiments.RATIOS.values()]
    return table[["estimate", "ci_low", "ci_high", "published", "n_runs"]]


def by_size(s: Session) -> object:
    """The tail speed-up and the walk-2019 tail/head ratio per buffer size."""
    data = s.measure(claims.SIZES).data
    sub = s.measure(claims.SUBMIT).data
    frames = {int(size): d for size, d in data.groupby("buffer")}
    return experiments.ratios_by_size(frames, fixed=sub[sub.variant == "F"])


@drawn(FIGURES, "R1-ratio-vs-buffer-size")
def ratio_vs_size(s: Session) -> Figure:
    """How the tail penalty grows with the buffer (power laws fitted)."""
    table = by_size(s)
    fig = Figure(figsize=(7.5, 4.4))
    ax = fig.subplots()
    # the two ratios nearly coincide (a walk-2019 head costs what a shifted tail costs):
    # the second is drawn with open squares, 8% to the right, so that both stay visible
    styles = [("o", 1.0, None), ("s", 1.08, "none")]
    for (label, d), (marker, dx, face) in zip(
        table.groupby("ratio", sort=False), styles, strict=True
    ):
        fit = fit_power_law(d["buffer_MiB"], d["estimate"])
        shifted = ", drawn 8% right" if dx != 1.0 else ""
        ax.errorbar(
            d["buffer_MiB"] * dx,
            d["estimate"],
            yerr=errorbars(d, "estimate"),
            marker=marker,
            mfc=face,
            ls="-" if dx == 1.0 else "--",
            capsize=4,
            label=f"{label} (slope {fit.slope:.2f}){shifted}",
        )
    speedup = seed.published()["tail_speedup"]
    ax.plot([1024], [speedup], "k*", ms=12, label="published 755x (1 GiB assumed)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("registered buffer size (MiB)")
    ax.set_ylabel("ratio of (F + seek + copy) times, x")
    ax.set_title("How the tail penalty grows with the buffer")
    ax.legend(fontsize=8, loc="upper left")
    return fig


def folio_table(s: Session) -> object:
    """Median seek to the head and the tail per seek, with 4 KiB pages and 2 MiB folios."""
    data = s.measure(claims.FOLIO).data
    fs = stats.median_ci(data, by=["folio_shift", "variant", "offset"])
    fs["where"] = np.where(fs["offset"] == 0, "head", "tail")
    table = fs.pivot(index="variant", columns=["folio_shift", "where"], values="median")
    return table.loc[list(SEEKS)]


@drawn(FIGURES, "R1-folio-tail-seek")
def folio_tail(s: Session) -> Figure:
    """The tail seek with 4 KiB bvecs and with 2 MiB folios, per seek."""
    table = folio_table(s)
    fig = Figure(figsize=(7, 3.8))
    ax = fig.subplots()
    xs = np.arange(len(SEEKS))
    for k, bits in enumerate((12, 21)):
        label = f"{1 << bits >> 10} KiB bvecs (folio_shift {bits})"
        ax.bar(xs + (k - 0.5) * 0.38, table[(bits, "tail")], 0.38, label=label)
    ax.set_xticks(xs, list(SEEKS))
    ax.set_yscale("log")
    ax.set_ylabel("ns per seek to the last page")
    ax.set_xlabel("seek")
    buffer = s.params(claims.FOLIO).buffer // MiB
    ax.set_title(f"Tail seek of a {buffer} MiB buffer: 4 KiB pages vs 2 MiB folios")
    ax.legend()
    return fig


__all__ = [
    "by_size",
    "fixed_cost",
    "folio_table",
    "head_tail_ratios",
    "seek_table",
    "submissions",
]


@drawn(FIGURES, "R1-vm-attribution")
def vm_attribution(s: Session) -> Figure:
    """The 2019 fix in a booted 6.1 kernel: READ_FIXED into the tail page of 1 GiB with the
    fix undone against stock 6.1, by kernel function (the kernel bench's committed run)."""
    fig = Figure(figsize=(8, 2.8))
    ax = fig.subplots()
    saving_bars(
        ax,
        kernel_vm.attribution("R1", "uring_read_fixed_tail"),
        "R1 in a booted 6.1: io_uring READ_FIXED, tail page of 1 GiB, fix undone -> fix in",
        log=True,
    )
    return fig


def vm_table() -> pd.DataFrame:
    """R1 in the booted kernels (the bench's committed run, ``-cpu max``): guest
    instructions per READ_FIXED of 4 KiB at the head and the tail of 1 GiB, fix in and
    undone, with tail / head."""
    rows = kernel_vm.VM_MATRIX.measure(kernel_vm.VmMatrix.quick(), 1)
    out = []
    for label, era in (("6.1 (the 2019 fix in)", "6.1"), ("6.1, the fix undone", "6.1-r1fix")):
        head = kernel_vm.per_call(rows, era, "uring_read_fixed_head", 4096)
        tail = kernel_vm.per_call(rows, era, "uring_read_fixed_tail", 4096)
        out.append({"kernel": label, "head": head, "tail": tail, "tail / head": tail / head})
    return pd.DataFrame(out).set_index("kernel")
