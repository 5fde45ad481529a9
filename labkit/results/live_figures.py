"""Notebook 04's figures and tables: the running kernel's read family and io_uring today."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from labkit import live
from labkit.experiments import live_kernel
from labkit.measure import stats
from labkit.measure.stats import Estimate
from labkit.report.plots import (
    COLORS,
    errorbars,
    legend_above_data,
    ours_vs_published,
    saving_bars,
    skipped,
)
from labkit.results import kernel_vm
from labkit.results.claim import Drawing, Quoted, drawn
from labkit.results.r1 import claims as r1_claims
from labkit.results.r1 import seed as r1_seed
from labkit.results.r2 import claims as r2_claims
from labkit.results.r2 import seed as r2_seed
from labkit.results.r3 import claims as r3_claims

if TYPE_CHECKING:
    from labkit.claims.engine import Session

#: Notebook 04's figures by name.
FIGURES: dict[str, Drawing] = {}

#: How each read variant's path is labelled beside R2's published figures.
PATH_LABEL = {
    "read": "read",
    "readv1": "readv -> UBUF",
    "readv_empty": "readv -> IOVEC",
    "readv_split": "readv 2 x 2K",
    "preadv2": "preadv2 -> UBUF",
}
#: io_uring ops as the plots name them.
OP_LABEL = {
    "read": "READ",
    "readv1": "READV(1 x 4K)",
    "readv_empty": "READV(4K + empty)",
    "readv_split": "READV(2 x 2K)",
    "read_fixed": "READ_FIXED",
}
#: The ratios of notebook 04: (numerator, denominator, meaning), per experiment.
SYSCALL_RATIOS = [
    ("readv_empty", "readv1", "IOVEC over UBUF (R2 live A/B, overstated)"),
    ("readv1", "read", "one-segment readv over read"),
    ("readv_split", "readv1", "two real segments over one"),
    ("preadv2", "readv1", "preadv2 over readv"),
]
URING_RATIOS = [
    ("readv_empty", "readv1", "IOVEC over UBUF inside io_uring (overstated)"),
    ("readv1", "read", "READV(1) over READ (what R3's rewrite targeted)"),
    ("readv_split", "readv1", "two real segments over one"),
    ("read_fixed", "read", "registered buffer over plain READ"),
]
PEAK_RATIOS = [
    ("readv1", "read", "READV(1) over READ (R3: about 1.06)"),
    ("readv_empty", "readv1", "IOVEC over UBUF (overstated)"),
]
SHOW = ["variant", "n", "median", "ci_low", "ci_high", "n_runs"]


def syscalls(s: Session) -> pd.DataFrame:
    """Median ns per call (95% CI) per target and variant."""
    data = s.measure(r2_claims.LIVE_VARIANTS).data
    return stats.median_ci(data, by=["target", "variant"])[["target", *SHOW]]


def syscall_ratios(s: Session) -> pd.DataFrame:
    """The ratios of :data:`SYSCALL_RATIOS` per target."""
    return live_kernel.ratio_table(
        s.measure(r2_claims.LIVE_VARIANTS).data, SYSCALL_RATIOS, "target"
    )


@drawn(FIGURES, "live-syscalls")
def syscall_bars(s: Session) -> Figure:
    """ns per call of each variant, on /dev/zero beside R2's published, and on tmpfs."""
    table = syscalls(s)
    pub = r2_seed.table()
    kernel_label = pub["kernel"].map({"stock": "readv -> IOVEC", "patched": "readv -> UBUF"})
    label = pub["variant"].map({"read": "read", "readv1": None}).fillna(kernel_label)
    r2_pub = pd.DataFrame({"label": label, "value": pub["ns_per_call"]})
    fig = Figure(figsize=(12, 4.2))
    for ax, target in zip(fig.subplots(1, 2), live_kernel.TARGETS, strict=True):
        sel = table[table["target"] == target]
        order = sel["variant"].map(live.SYSCALL_VARIANTS.index)
        ours = sel.assign(label=sel["variant"].map(PATH_LABEL), order=order)
        ours_vs_published(
            ours.sort_values("order"),
            r2_pub if target == "zero" else None,
            ylabel="ns per call (4 KiB)",
            ours_name="live, this machine",
            published_name="R2 published (2023)",
            ax=ax,
            title="/dev/zero" if target == "zero" else "tmpfs file",
        )
        ax.set_xlabel("")
    fig.tight_layout()
    return fig


def qd1(s: Session) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The QD1 round trips per op (median, 95% CI) and their ratios; empty without io_uring."""
    m = s.measure(r3_claims.QD1_OPS)
    if m.why_not:
        return pd.DataFrame(), pd.DataFrame()
    data = m.data.assign(all="zero")
    table = stats.median_ci(data, by=["variant"])[SHOW]
    return table, live_kernel.ratio_table(data, URING_RATIOS, "all")


@drawn(FIGURES, "live-uring-qd1")
def qd1_bars(s: Session) -> Figure:
    """ns per io_uring round trip at queue depth 1, per op."""
    table, _ = qd1(s)
    if table.empty:
        return skipped(s.measure(r3_claims.QD1_OPS).why_not)
    order = {op: k for k, op in enumerate(live.URING_OPS)}
    ours = table.assign(label=table["variant"].map(OP_LABEL), order=table["variant"].map(order))
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    ours_vs_published(
        ours.sort_values("order"),
        None,
        ylabel="ns per round trip (4 KiB)",
        ours_name="live, this machine",
        title="io_uring QD1 round trip, /dev/zero",
        ax=ax,
    )
    ax.set_xlabel("io_uring operation")
    return fig


def tmpfs(s: Session) -> pd.DataFrame:
    """The tmpfs detour: median round trip per op (wall clock)."""
    m = s.measure(r3_claims.TMPFS)
    if m.why_not:
        return pd.DataFrame()
    return stats.median_ci(m.data, by=["target", "variant"]).iloc[:, :6]


def head_tail(s: Session) -> pd.DataFrame:
    """READ_FIXED at the head and the tail: median per variant (95% CI); empty without
    io_uring."""
    m = s.measure(r1_claims.LIVE_FIXED)
    return pd.DataFrame() if m.why_not else stats.median_ci(m.data, by=["variant"])[SHOW]


@drawn(FIGURES, "R1-live-head-tail")
def head_tail_points(s: Session) -> Figure:
    """Live READ_FIXED at the head and the tail, beside 2019's before and after the fix."""
    if s.measure(r1_claims.LIVE_FIXED).why_not:
        return skipped(s.measure(r1_claims.LIVE_FIXED).why_not)
    pub = r1_seed.published()
    live_est = head_tail(s).set_index("variant").loc[["head", "tail"]]
    fig = Figure(figsize=(7.5, 4.2))
    ax = fig.subplots()
    x = np.arange(2)
    for dx, key, marker in [(-0.15, "before", "v"), (0.0, "after", "D")]:
        vals = [pub[f"{key}_{where}_ns"] for where in ("head", "tail")]
        label = f"2019 {key} the fix (published)"
        ax.plot(x + dx, vals, marker, ms=8, ls="none", color=COLORS[key], label=label)
    ax.errorbar(
        x + 0.15,
        live_est["median"],
        yerr=errorbars(live_est),
        fmt="o",
        ms=7,
        capsize=6,
        color=COLORS["live"],
        label="live, this machine (median, 95% CI)",
    )
    ax.set_yscale("log")
    ax.set_xticks(x, ["head (offset 0)", "tail (last page)"])
    ax.set_xlim(-0.6, 1.6)
    ax.set_xlabel("where the 4 KiB READ_FIXED lands in the registered buffer")
    ax.set_ylabel("ns per READ_FIXED (log scale)")
    ax.set_title("R1: READ_FIXED at the head vs the tail of a registered buffer")
    ax.legend(loc="upper left", fontsize=8)
    return fig


def peak(s: Session) -> pd.DataFrame:
    """The peak loop per op and depth: CPU ns per IO (95% CI), thousand IOPS per core
    with their interval, and the IOs per io_uring_enter (empty without io_uring)."""
    if s.measure(r3_claims.PEAK_SWEEP).why_not:
        kiops = ["kiops_per_core", "kiops_low", "kiops_high", "ios_per_enter"]
        return pd.DataFrame(
            columns=["op", "depth", "median", "ci_low", "ci_high", "n_runs", *kiops]
        )
    data = s.measure(r3_claims.PEAK_SWEEP).data
    table = stats.median_ci(data, by=["op", "depth"])
    table["kiops_per_core"] = 1e6 / table["median"]
    table["kiops_low"] = 1e6 / table["ci_high"]
    table["kiops_high"] = 1e6 / table["ci_low"]
    per_enter = data.groupby(["op", "depth"])["ios_per_enter"].median().rename("ios_per_enter")
    return table.join(per_enter, on=["op", "depth"])


def peak_ratios(s: Session) -> pd.DataFrame:
    """At the deepest queue: READV(1) / READ and IOVEC / UBUF per IO (empty without io_uring)."""
    if s.measure(r3_claims.PEAK_SWEEP).why_not:
        return pd.DataFrame()
    data = s.measure(r3_claims.PEAK_SWEEP).data
    deepest = int(data["depth"].max())
    top = data[data["depth"] == deepest].copy()
    top["variant"], top["depth_group"] = top["op"], deepest
    return live_kernel.ratio_table(top, PEAK_RATIOS, "depth_group")


@drawn(FIGURES, "live-uring-peak")
def peak_lines(s: Session) -> Figure:
    """Thousand IOPS per core against the queue depth, per op."""
    if s.measure(r3_claims.PEAK_SWEEP).why_not:
        return skipped(s.measure(r3_claims.PEAK_SWEEP).why_not)
    table = peak(s)
    depths = sorted(table["depth"].unique())
    fig = Figure(figsize=(7.5, 4.2))
    ax = fig.subplots()
    for op, d in table.groupby("op"):
        err = [d["kiops_per_core"] - d["kiops_low"], d["kiops_high"] - d["kiops_per_core"]]
        ax.errorbar(
            d["depth"], d["kiops_per_core"], yerr=err, marker="o", capsize=3, label=OP_LABEL[op]
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(depths, [str(d) for d in depths])
    ax.set_xlabel("queue depth (requests in flight)")
    ax.set_ylabel("thousand IOPS per core (4 KiB)")
    ax.set_title("io_uring peak loop on /dev/zero")
    ax.legend()
    return fig


def fixed_cost_ns(s: Session) -> float:
    """F: the READ_FIXED round trip at the head (median), or, where io_uring is refused, a
    plain read() of 4 KiB timed in C (the same clock)."""
    if not s.measure(r1_claims.LIVE_FIXED).why_not:
        return float(head_tail(s).set_index("variant").loc["head", "median"])
    with live.clock(s.params(r1_claims.LIVE_FIXED).clock):
        return live.read_syscall_ns(iters=1_000)


def _ratio(data: pd.DataFrame, num: str, den: str) -> Estimate:
    return stats.ratio(data, num, den)


def in_one_table(s: Session) -> pd.Series:
    """The headline numbers of notebook 04's run, in words and figures."""
    data = s.measure(r2_claims.LIVE_VARIANTS).data
    out = {}
    for target, d in data.groupby("target"):
        raw = f"syscalls {target}: readv(4K+empty) / readv(1), raw"
        out[raw] = _ratio(d, "readv_empty", "readv1")
        out[f"syscalls {target}: readv(1) / read"] = _ratio(d, "readv1", "read")
    if not s.measure(r3_claims.QD1_OPS).why_not:
        d = s.measure(r3_claims.QD1_OPS).data
        out["io_uring QD1: READV(4K+empty) / READV(1)"] = _ratio(d, "readv_empty", "readv1")
        out["io_uring QD1: READV(1) / READ"] = _ratio(d, "readv1", "read")
    text = {k: v.brief("{:.3f}") for k, v in out.items()}
    if not s.measure(r1_claims.LIVE_FIXED).why_not:
        text["READ_FIXED tail / head"] = s.run("R1.live_tail_over_head").estimate.brief("{:.3f}")
    text["READ_FIXED QD1 head round trip, 4 KiB (ns)"] = f"{fixed_cost_ns(s):.0f}"
    if not s.measure(r3_claims.PEAK_SWEEP).why_not:
        table = peak(s)
        best = table.loc[table.groupby("op")["kiops_per_core"].idxmax()]
        for _, row in best.iterrows():
            text[f"peak {OP_LABEL[row['op']]} (depth {row['depth']})"] = (
                f"{row['kiops_per_core']:.0f}k IOPS/core"
            )
        ratios = peak_ratios(s).set_index("numerator")
        text["peak (deepest): READV(1) / READ"] = s.run("R3.cpu_ratio").estimate.brief("{:.3f}")
        row = ratios.loc["readv_empty"]
        text["peak (deepest): READV(4K+empty) / READV(1)"] = (
            f"{row['estimate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
        )
    return pd.Series(text, name="this run")


def meaning(s: Session) -> dict[str, object]:
    """The figures notebook 04's conclusions quote, from this run (Estimates, as % more
    where a ratio is read as a cost; "not measured" where io_uring was refused).  The proxy
    ratios ``zero_proxy`` and ``tmpfs_proxy`` are raw (not corrected for the proxy's extra
    iovec, as ``R2.live_ratio`` is)."""
    data = s.measure(r2_claims.LIVE_VARIANTS).data
    tmpfs_ = data[data["target"] == "tmpfs"]
    zero = data[data["target"] == "zero"]

    def more(d: pd.DataFrame, num: str, den: str) -> Estimate:
        return _ratio(d, num, den).affine(100.0, -100.0)

    values: dict[str, object] = {
        "zero_proxy": _ratio(zero, "readv_empty", "readv1"),  # raw, as tmpfs_proxy
        "tmpfs_proxy": _ratio(tmpfs_, "readv_empty", "readv1"),
        "readv_over_read_tmpfs": more(tmpfs_, "readv1", "read"),
        "readv_over_read_zero": more(zero, "readv1", "read"),
    }
    none = Quoted(None)
    values.update(qd1_more=none, qd1_proxy=none, peak_proxy=none, kiops_1=none, kiops_top=none)
    values.update(per_enter=none, top=none, tmpfs_us=none)
    if not s.measure(r3_claims.QD1_OPS).why_not:
        d = s.measure(r3_claims.QD1_OPS).data
        values["qd1_more"] = more(d, "readv1", "read")
        values["qd1_proxy"] = more(d, "readv_empty", "readv1")
    if not s.measure(r3_claims.PEAK_SWEEP).why_not:
        table = peak(s).set_index(["op", "depth"])
        top = int(s.measure(r3_claims.PEAK_SWEEP).data["depth"].max())
        d = s.measure(r3_claims.PEAK_SWEEP).data
        values["peak_proxy"] = more(d[d["depth"] == top], f"readv_empty@{top}", f"readv1@{top}")
        values["kiops_1"] = table.loc[
            ("read", min(s.params(r3_claims.PEAK_SWEEP).depths)), "kiops_per_core"
        ]
        values["kiops_top"] = table.loc[("read", top), "kiops_per_core"]
        values["per_enter"] = table.loc[("read", top), "ios_per_enter"]
        values["top"] = top
    if not s.measure(r3_claims.TMPFS).why_not:
        values["tmpfs_us"] = float(tmpfs(s)["median"].median()) / 1e3
    return values


__all__ = [
    "fixed_cost_ns",
    "head_tail",
    "in_one_table",
    "meaning",
    "peak",
    "peak_ratios",
    "qd1",
    "syscall_ratios",
    "syscalls",
    "tmpfs",
]


#: The live proxy's calls, as the kernel bench names them.
VM_CALLS = {
    "read": "read(4K)",
    "readv1": "readv(1)",
    "readv_4k_empty": "readv(4K+empty)",
    "readv_4k_empty_empty": "readv(4K+2 empty)",
}


@drawn(FIGURES, "live-vm-proxy")
def vm_proxy(s: Session) -> Figure:
    """The live A/B's calls in the booted kernels (the kernel bench's committed run, 4 KiB
    from /dev/zero, ``-cpu max``): guest instructions per call before and after the 6.4
    import, and the merged change by function on readv(1) and on the proxy readv(4K+empty)."""
    rows = kernel_vm.VM_MATRIX.measure(kernel_vm.VmMatrix.quick(), 1)
    fig = Figure(figsize=(13, 3.8))
    ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.3, 1, 1]})
    x = np.arange(len(VM_CALLS))
    for k, (era, color) in enumerate((("6.1", COLORS["before"]), ("6.1+merged", COLORS["after"]))):
        v = [kernel_vm.per_call(rows, era, case, 4096) for case in VM_CALLS]
        ax1.bar(x + (k - 0.5) * 0.4, v, 0.4, color=color, label=era)
    ax1.set_xticks(x, list(VM_CALLS.values()), rotation=15)
    ax1.set_ylim(bottom=min(kernel_vm.per_call(rows, "6.1", c, 4096) for c in VM_CALLS) * 0.95)
    ax1.set_ylabel("guest instructions per call")
    ax1.set_title("booted 6.1 before and after the 6.4 import", fontsize=10)
    legend_above_data(ax1)
    saving_bars(ax2, kernel_vm.attribution("R2 as merged", "readv1"), "6.4 import: readv(1)")
    saving_bars(
        ax3, kernel_vm.attribution("R2 as merged", "readv_4k_empty"), "6.4 import: readv(4K+empty)"
    )
    fig.tight_layout()
    return fig


def vm_bridge(s: Session) -> pd.DataFrame:
    """R2's pair bridge, step by step: the live A/B's readv(4K+empty) - readv(1) on this
    host against the same pair in the booted 6.1+merged, and the change's instructions
    saved turned into ns and a share (:mod:`labkit.measure.bridge`)."""
    out = s.run("R2.vm_share")
    rows = kernel_vm.VM_MATRIX.measure(kernel_vm.VmMatrix.quick(), 1)
    c = r2_claims.vm_pair(rows)
    d = out.data[out.data["target"] == "zero"]
    dt = stats.difference(d, r2_claims.IOVEC, r2_claims.UBUF, confidence=out.measured.confidence)
    ns_per = dt.estimate / c["max"]
    saved_ns = c["saved"] * ns_per
    return pd.Series(
        {
            "readv(4K+empty) - readv(1), live here (ns)": dt.estimate,
            "the same pair, booted 6.1+merged (instructions, -cpu max)": c["max"],
            "the same pair, booted 6.1+merged (instructions, no ERMS)": c["max-erms"],
            "ns per instruction of the import path here": ns_per,
            "instructions per ns it implies": 1 / ns_per if ns_per > 0 else np.nan,
            "instructions the change saves (booted 6.1 -> 6.1+merged)": c["saved"],
            "ns saved per call, bridged": saved_ns,
            "% of this host's readv(4K+empty) (R2.vm_share)": out.estimate.estimate,
            "% of the 2023 call (183.5 ns), shown only": 100
            * saved_ns
            / r2_seed.published()["readv_before_ns"],
        },
        name="pair bridge",
    ).to_frame()
