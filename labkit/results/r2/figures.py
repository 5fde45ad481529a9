"""Notebook 03's figures (R2, R3): the published runs, the model, the live A/Bs."""

from __future__ import annotations

import platform
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats as scipy_stats

from labkit.experiments import callgrind
from labkit.measure import results, stats
from labkit.models import ubuf
from labkit.report.plots import COLORS, errorbars, saving_bars
from labkit.results import kernel_vm
from labkit.results.claim import Drawing, drawn
from labkit.results.r2 import claims, experiments, seed
from labkit.results.r3 import claims as r3_claims
from labkit.results.r3 import seed as r3_seed

if TYPE_CHECKING:
    from labkit.claims.engine import Session

#: The live gains of notebook 03: label -> (experiment, fast, slow, kind); the two judged
#: by a claim are drawn at the confidence their runs were decided on.
LIVE_GAINS = {
    "readv(1) vs readv(4K+empty)": ("R2.saved_share", None),
    "io_uring QD1: READV(1) vs READV(4K+empty)": (None, "readv1"),
    "io_uring QD1: READ vs READV(4K+empty)": (None, "read"),
    "io_uring peak@32: READV(1) vs READV(4K+empty)": ("R3.ubuf_gain", None),
    "io_uring peak@32: READ vs READV(4K+empty)": ("R3.read_gain", None),
}

#: Notebook 03's figures by name: R2's, and R3's model of the deferral.
FIGURES: dict[str, Drawing] = {}


@drawn(FIGURES, "R2-R3-published")
def published_runs(s: Session) -> Figure:
    """R2's published time per call and R3's 8 + 8 IOPS samples."""
    fig = Figure(figsize=(12, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    el = seed.table().query("quantity == 'elapsed'")
    labels = np.where(
        el["variant"] == "read",
        "read()",
        np.where(el["kernel"] == "stock", "readv(1) before", "readv(1) after"),
    )
    for k, lab in enumerate(["read()", "readv(1) before", "readv(1) after"]):
        v = el.loc[labels == lab, "ns_per_call"].to_numpy()
        first = k == 0
        color = COLORS["published"]
        ax1.bar(k, v.mean(), 0.6, color=color, alpha=0.6, label="published (mean)" * first)
        ax1.plot(np.full(v.size, k), v, "o", color="black", ms=4, label="published runs" * first)
    ax1.set_xticks(range(3), ["read()", "readv(1) before", "readv(1) after"])
    ax1.set_ylabel("time per call (ns)\n= elapsed s / 10M reads of 4 KiB")
    ax1.set_title("R2: read-zero on one pinned CPU (2023)")
    ax1.legend(loc="upper left")
    r3_pub = r3_seed.table()
    for k, side in enumerate(["before", "after"]):
        v = r3_pub.loc[r3_pub["variant"] == side, "value"].to_numpy() / 1e6
        jitter = np.linspace(-0.12, 0.12, v.size)
        ax2.plot(k + jitter, v, "o", color=COLORS[side], label=f"{side} ({v.size} runs)")
        ax2.hlines(v.mean(), k - 0.25, k + 0.25, color="black", lw=1)
    ax2.set_xticks([0, 1], ["READV (stock)", "READV -> READ (patched)"])
    ax2.set_xlim(-0.6, 1.6)
    ax2.set_ylabel("IOPS (millions), 24 drives\n(axis does not start at 0)")
    ax2.set_title("R3: io_uring READV peak test (2023)")
    ax2.legend(loc="center left")
    fig.tight_layout()
    return fig


def model_savings(s: Session) -> dict[str, object]:
    """The model's ns saved per call, 6.3 -> 6.4: (a) mechanics, (b) read-zero, and what
    the live proxy readv(4K + empty) costs over readv(1) on 6.3."""
    rz = s.measure(claims.MODEL_READ_ZERO).data
    mech = s.measure(claims.MODEL_MECHANICS).data
    return {
        "mechanics": stats.difference(mech, "6.3 (IOVEC)", "6.4 (UBUF)"),
        "read-zero": claims.model_saved_ns(rz, 0.95),
        "share of the published call (%)": claims.model_saved_share(rz, 0.95),
        "share of the model's call (%)": stats.gain(rz, "readv 6.3", "readv 6.4").affine(100),
        "proxy over readv(1) on 6.3": stats.difference(rz, "readv 6.4 (4K+empty)", "readv 6.3"),
    }


def model_savings_table(s: Session) -> object:
    """:func:`model_savings` as a table, each row with its unit (ns per call, or % of a call)."""
    saved = model_savings(s)
    key = "6.3 -> 6.4 in the model"
    table = stats.to_frame(saved, key=key).set_index(key)
    table["unit"] = ["% of the call" if "(%)" in k else "ns per call" for k in table.index]
    return table[["estimate", "ci_low", "ci_high", "unit", "n_runs"]]


@drawn(FIGURES, "R2-model-read-zero")
def model_read_zero(s: Session) -> Figure:
    """The model's read-zero call per variant, and the ns saved beside the published."""
    rz = s.measure(claims.MODEL_READ_ZERO).data
    saved, band = model_savings(s), claims.claim("R2.saved_ns").band()
    fig = Figure(figsize=(12, 4.4))
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    order = ["read", "readv 6.3", "readv 6.4", "readv 6.4 (4K+empty)"]
    t = stats.median_ci(rz, by="variant").set_index("variant").loc[order]
    ax1.bar(range(len(t)), t["median"], 0.6, color=COLORS["model"])
    ax1.errorbar(range(len(t)), t["median"], yerr=errorbars(t), fmt="none", ecolor="black")
    ax1.set_xticks(range(len(t)), t.index, rotation=15)
    ax1.set_ylabel("model time per call (ns): median, 95% CI")
    ax1.set_title("Read-zero in the model: import + zero 4 KiB, per call")
    mech, zero = saved["mechanics"], saved["read-zero"]
    vals = [mech.estimate, zero.estimate, band.published]
    lo = [mech.estimate - mech.ci_low, zero.estimate - zero.ci_low, band.published - band.low]
    hi = [mech.ci_high - mech.estimate, zero.ci_high - zero.estimate, band.high - band.published]
    colors = [COLORS["model"], COLORS["model"], COLORS["published"]]
    ax2.bar(range(3), vals, 0.6, color=colors)
    ax2.errorbar(range(3), vals, yerr=[lo, hi], fmt="none", ecolor="black", capsize=5)
    labels = ["model (a)\nmechanics", "model (b)\nread-zero", "published\nR2 (2023)"]
    ax2.set_xticks(range(3), labels)
    ax2.set_ylabel("time saved per readv(1) call, 6.3 -> 6.4 (ns)")
    ax2.set_title("ns saved per call (model: 95% CI; published: its band)")
    fig.tight_layout()
    return fig


def deferral_savings(s: Session) -> object:
    """The model's ns saved per request by READV -> READ, per share of requests deferred
    (a negative saving is a cost), with its unit."""
    ur = s.measure(r3_claims.MODEL_URING).data
    diffs = {
        rate: stats.difference(d, "READV as IOVEC (6.3)", "READV rewritten to READ (R3)")
        for rate, d in ur.groupby("defer_rate")
    }
    table = stats.to_frame(diffs, key="share of requests deferred").set_index(
        "share of requests deferred"
    )
    table["unit"] = "ns saved per request"
    return table[["estimate", "ci_low", "ci_high", "unit", "n_runs"]]


@drawn(FIGURES, "R3-model-deferral")
def model_deferral(s: Session) -> Figure:
    """(c) the io_uring request model: time per request against the share deferred."""
    ut = stats.median_ci(s.measure(r3_claims.MODEL_URING).data, by=["defer_rate", "variant"])
    fig = Figure(figsize=(8, 4.4))
    ax = fig.subplots()
    for name in ubuf.URING_LABELS.values():
        d = ut[ut["variant"] == name].sort_values("defer_rate")
        ax.errorbar(
            d["defer_rate"].clip(lower=0.003),
            d["median"],
            yerr=errorbars(d),
            marker="o",
            label=name,
        )
    ax.set_xscale("log")
    ax.set_xlabel("share of requests deferred (0 drawn at 0.003; log scale)")
    ax.set_ylabel("model time per request (ns)")
    ax.set_title("(c) io_uring request model: what the READV -> READ rewrite changes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the lines
    return fig


def live_gains(s: Session) -> dict[str, object]:
    """The live gains of UBUF (or READ) over IOVEC, in %: time saved per readv call,
    request rate for io_uring.  Empty for io_uring where it is unavailable."""
    gains = {}
    qd1 = s.measure(r3_claims.QD1_AB)
    for label, (claim_id, fast) in LIVE_GAINS.items():
        if claim_id is not None:
            out = s.run(claim_id, record=False)
            if out.estimate is not None:
                gains[label] = out.estimate
        elif not qd1.why_not:
            gains[label] = r3_claims.qd1_gain(fast, qd1.data)
    return gains


@drawn(FIGURES, "R2-R3-live-ab")
def live_ab(s: Session) -> Figure:
    """Every live gain with its interval, beside the published figure and its band."""
    gains = live_gains(s)
    panels = [
        ("readv: time saved per call (%)", "R2.saved_share"),
        ("io_uring: request-rate gain (%)", "R3.ubuf_gain"),
    ]
    rows = [[k for k in gains if k.startswith("io_uring") == (i == 1)] for i in range(2)]
    panels = [(p, names) for p, names in zip(panels, rows, strict=True) if names]
    fig = Figure(figsize=(11.5, 1.6 + 0.55 * len(gains) + 0.6 * len(panels)))
    axes = fig.subplots(
        len(panels), 1, squeeze=False, gridspec_kw={"height_ratios": [len(n) for _, n in panels]}
    )
    for ax, ((xlabel, claim_id), names) in zip(axes[:, 0], panels, strict=True):
        of_result = claims if claim_id.startswith("R2.") else r3_claims
        band = of_result.claim(claim_id).band()
        color = COLORS["published"]
        ax.axvspan(
            band.low,
            band.high,
            color=color,
            alpha=0.25,
            lw=0,
            label=f"declared band ({band.result})",
        )
        ax.axvline(
            band.published,
            color=color,
            lw=1.5,
            label=f"published {band.result}: {band.published:.1f}%",
        )
        for k, name in enumerate(names):
            g = gains[name]
            err = [[g.estimate - g.ci_low], [g.ci_high - g.estimate]]
            label = "live, 95% interval (unless marked)" if k == 0 else None
            ax.errorbar(
                g.estimate, k, xerr=err, fmt="o", capsize=4, color=COLORS["live"], label=label
            )
        ax.axvline(0, color="black", lw=0.8)
        marks = [
            f" [{100 * gains[n].confidence:g}%]" * (gains[n].confidence != 0.95) for n in names
        ]
        ax.set_yticks(range(len(names)), [n + m for n, m in zip(names, marks, strict=True)])
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_xlabel(xlabel)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    kernel = platform.release()
    axes[0, 0].set_title(f"Live A/B on {kernel}: the UBUF side over the IOVEC side")
    fig.tight_layout()
    return fig


def by_run(s: Session) -> object:
    """R2's live A/B run by run: each run's time saved and its readv(4K + empty) call."""
    data = s.measure(claims.LIVE_AB).data
    return experiments.live_gain_by_run(data, "readv(1) vs readv(4K+empty)", kind="time")


@drawn(FIGURES, "R2-live-by-run")
def live_by_run(s: Session) -> Figure:
    """Each run's saving against the machine's speed in that run, with the band."""
    runs, band = by_run(s), claims.claim("R2.saved_share").band()
    share = s.run("R2.saved_share", record=False).estimate
    raw = runs["gain"].mean()  # the runs' points are raw (no proxy correction); so is this
    fig = Figure(figsize=(8.5, 4.4))
    ax = fig.subplots()
    label = f"declared band ({band.low:g}-{band.high:g}%)"
    ax.axhspan(band.low, band.high, color=COLORS["published"], alpha=0.25, lw=0, label=label)
    ax.errorbar(
        runs["iovec_ns"],
        runs["gain"],
        yerr=errorbars(runs, "gain"),
        fmt="o",
        ms=4,
        capsize=2,
        color=COLORS["live"],
        label="one run: median over its rounds, 95% CI",
    )
    ax.axhline(
        raw, color="black", lw=1, ls="--", label=f"mean of the runs, raw as the points: {raw:.2f}%"
    )
    ax.axhline(
        share.estimate,
        color="black",
        lw=1,
        label=f"this reproduction, proxy-corrected: {share.estimate:.2f}%",
    )
    ax.set_xlabel("readv(4K+empty) per call in the run (ns, median of its rounds)")
    ax.set_ylabel("time saved by UBUF in the run (%)")
    ax.set_title("R2 live, run by run: the saving against the machine's speed in that run")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside: the band
    return fig


def by_run_text(s: Session) -> str:
    """How far apart the runs' call times were, and how the saving followed them."""
    runs = by_run(s)
    lo, hi = runs["iovec_ns"].min(), runs["iovec_ns"].max()
    text = f"{len(runs)} runs; the call took {lo:.0f}-{hi:.0f} ns (x{hi / lo:.2f} between runs)"
    if len(runs) < 6 or runs["gain"].nunique() < 2:
        return text + "; too few runs for a rank correlation"
    rho = scipy_stats.spearmanr(runs["iovec_ns"], runs["gain"])
    return (
        f"{text}; rank correlation between a run's call time and its saving: "
        f"{rho.statistic:.2f} (p = {rho.pvalue:.2g})"
    )


def live_medians(s: Session) -> pd.DataFrame:
    """The medians (95% CI) of every live variant behind notebook 03's gains."""
    show = ["variant", "n", "median", "ci_low", "ci_high", "n_runs"]
    frames = {"readv": s.measure(claims.LIVE_AB), "io_uring QD1": s.measure(r3_claims.QD1_AB)}
    frames["io_uring peak"] = s.measure(r3_claims.PEAK)
    tables = [
        stats.median_ci(m.data, by="variant")[show].assign(experiment=name)
        for name, m in frames.items()
        if not m.why_not
    ]
    return pd.concat(tables, ignore_index=True).set_index(["experiment", "variant"])


def instructions_text(s: Session) -> str:
    """Instructions per modelled call under callgrind: measured now (full mode, valgrind
    installed), else the last stored run, else why not."""
    m = s.measure(claims.CALLGRIND_UBUF)
    if not m.why_not:
        cg, head = m.data, "measured now under callgrind"
    elif results.runs("ubuf-callgrind"):
        cg, _ = results.load_run(results.runs("ubuf-callgrind")[-1])
        head = f"not measured now ({m.why_not}); the last stored run:"
    else:
        return f"not measured ({m.why_not}) and no stored run"
    tab = experiments.instructions_table(cg)
    saved = callgrind.evidence(cg)
    lines = [
        head,
        "instructions per modelled call (callgrind; a 4 KiB zero counts ~4,100: "
        "valgrind counts each rep-stosb iteration)",
        tab.round(1).astype(object).where(tab.notna(), "").to_string(),
        "",
        f"R2 read-zero, readv 6.3 -> 6.4: {saved['r2_saved']:.0f} instructions saved per call; "
        "mechanics alone: "
        f"{tab.loc['6.3 (IOVEC)', 'mechanics'] - tab.loc['6.4 (UBUF)', 'mechanics']:.0f}",
        "the live proxy readv(4K + empty) costs "
        f"{tab.loc['readv 6.4 (4K+empty)', 'read-zero'] - tab.loc['readv 6.3', 'read-zero']:+.0f} "
        "instructions against readv(1) on 6.3",
    ]
    for k in ("0", "4"):
        e = f"uring defer_every={k}"
        rewrite = tab.loc["readv-iovec", e] - tab.loc["readv-rewrite", e]
        read = tab.loc["readv-iovec", e] - tab.loc["read", e]
        lines.append(
            f"io_uring, defer every {k or 'never'}: READV as IOVEC -> rewritten: "
            f"{rewrite:+.1f} instructions/request; -> READ: {read:+.1f}"
        )
    return "\n".join(lines)


def reconciliation(s: Session) -> pd.DataFrame:
    """Published, model and live side by side, with what explains each difference."""
    p2, p3 = seed.published(), r3_seed.published()
    model = model_savings(s)
    share, ns = s.run("R2.saved_share", record=False), s.run("R2.saved_ns", record=False)
    proxy = model["proxy over readv(1) on 6.3"].brief("{:+.1f}")
    of_published = model["share of the published call (%)"]
    of_model = model["share of the model's call (%)"]
    rows = [
        {
            "quantity": "readv(1): ns saved per call",
            "published": f"{p2['saved_ns']:.1f} "
            f"({p2['readv_before_ns']:.1f} -> {p2['readv_after_ns']:.1f})",
            "model": model["read-zero"].brief("{:.1f}"),
            "live": ns.estimate.brief("{:.1f}"),
            "what explains the difference": "model: user-space memset and no syscall entry, "
            "same iterator work; live: the proxy copies one more iovec "
            f"(model: {proxy} ns), and a newer CPU and kernel",
        },
        {
            "quantity": "readv(1): share of the call",
            "published": f"{100 * p2['saved_share']:.1f}%",
            "model": f"{of_published.brief('{:.1f}')}% of {p2['readv_before_ns']:.1f} ns; "
            f"{of_model.brief('{:.1f}')}% of the model's call",
            "live": share.estimate.brief("{:.1f}") + "%",
            "what explains the difference": "the share depends on the rest of the call: the "
            "model's call is short (no syscall), so the same ns are a larger share",
        },
    ]
    gains = live_gains(s)
    qd1 = gains.get("io_uring QD1: READV(1) vs READV(4K+empty)")
    peak = gains.get("io_uring peak@32: READV(1) vs READV(4K+empty)")
    if qd1 is not None and peak is not None:
        u0 = s.run("R3.model_ns_saved", record=False).estimate
        rows.append(
            {
                "quantity": "io_uring READV(1): request-rate gain",
                "published": f"+{100 * p3['gain']:.1f}% (24 drives, peak)",
                "model": f"{u0.brief('{:.1f}')} ns/request saved, no deferral; "
                f"{u0.estimate / p3['time_saved_share']:.0f} ns per IO would make that "
                f"{100 * p3['gain']:.1f}%",
                "live": f"QD1 {qd1.brief('{:+.1f}')}%; peak@32 {peak.brief('{:+.1f}')}%",
                "what explains the difference": "R3 also removed READV's async state on "
                "deferral; today's kernel has its own io_uring rw path; /dev/zero never "
                "defers and costs far more per IO than a polled NVMe read",
            }
        )
    return pd.DataFrame(rows).set_index("quantity")


__all__ = [
    "by_run_text",
    "deferral_savings",
    "instructions_text",
    "live_medians",
    "model_savings",
    "model_savings_table",
    "reconciliation",
]


@drawn(FIGURES, "R2-R3-vm-attribution")
def vm_attribution(s: Session) -> Figure:
    """The changes in a booted 6.1 kernel, by kernel function (the kernel bench's committed
    run, ``-cpu max``): R2 as mailed (v1) and as merged on readv(1) of 4 KiB, and R3's
    rewrite on io_uring READV(1) of 4 KiB, each against stock 6.1."""
    fig = Figure(figsize=(13, 3.6))
    axes = fig.subplots(1, 3)
    for ax, (pair, case, title) in zip(
        axes,
        (
            ("R2 as mailed (v1)", "readv1", "R2 as mailed (v1): readv(1)"),
            ("R2 as merged", "readv1", "R2 as merged (6.4): readv(1)"),
            ("R3", "uring_readv1", "R3's rewrite: io_uring READV(1)"),
        ),
        strict=True,
    ):
        saving_bars(ax, kernel_vm.attribution(pair, case), title)
    fig.tight_layout()
    return fig


@drawn(FIGURES, "R2-oracle-vs-booted")
def oracle_vs_booted(s: Session) -> Figure:
    """The seed mail's change (v1) per readv(1), by function: the user-space oracle (UML's
    build of lib/iov_iter.c, -O2) beside the booted x86-64 kernel."""
    from labkit.kernelsrc.counts import kernel_counts  # the committed oracle counts, on use

    table = kernel_vm.oracle_reconciliation(kernel_counts(functions=True))
    tot = table.iloc[-1]
    t = table[table["function"] != "total"].fillna({"booted_saved": 0.0})
    fig = Figure(figsize=(8, 3.6))
    ax = fig.subplots()
    y = np.arange(len(t))
    ax.barh(y - 0.2, t["oracle_saved"], 0.4, color=COLORS["model"], label="user-space oracle (UML)")
    ax.barh(y + 0.2, t["booted_saved"], 0.4, color=COLORS["live"], label="booted x86-64 kernel")
    ax.set_yticks(y, t["function"])
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("instructions saved per readv(1) call, 6.1 -> 6.1 + the seed mail (v1)")
    ax.set_title(
        f"the same change: net {tot['oracle_saved']:+.0f} in the oracle, "
        f"{tot['booted_saved']:+.0f} booted (x86-64 inlines copy_iovec_from_user and "
        "import_ubuf)",
        fontsize=10,
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # beside the bars
    return fig


#: The bench's cases notebook 03 shows: label -> (case, bytes, config, CPU model).
VM_CASES = {
    "readv(1) 4 KiB /dev/zero": ("readv1", 4096, "base", "max"),
    "readv(1) 4 KiB, -cpu max,-erms,-fsrm": ("readv1", 4096, "base", "max-erms"),
    "readv(1) 64 B": ("readv1", 64, "base", "max"),
    "readv(1) 4 KiB, mitigations": ("readv1", 4096, "mitigations", "max"),
    "readv(4K+empty) 4 KiB": ("readv_4k_empty", 4096, "base", "max"),
    "io_uring READV(1) 4 KiB": ("uring_readv1", 4096, "base", "max"),
    "readv(1) O_DIRECT /dev/nullb0 4 KiB": ("nullb_readv1", 4096, "base", "max"),
    "read(4K)": ("read", 4096, "base", "max"),
}


def vm_table() -> pd.DataFrame:
    """R2 and R3 in the booted kernels (the bench's committed run): guest instructions per
    call in stock 6.1 and the instructions each era saves against it (before - after);
    "not booted" where the era was not booted with the case's CPU model."""
    rows = kernel_vm.VM_MATRIX.measure(kernel_vm.VmMatrix.quick(), 1)
    out = []
    for label, (case, n, cfg, cpu) in VM_CASES.items():
        r = {"case": label, "6.1": kernel_vm.per_call(rows, "6.1", case, n, cfg, cpu)}
        for era in ("6.1+v1", "6.1+merged", "6.1+r3"):
            try:
                r[f"saved by {era}"] = kernel_vm.saved(rows, "6.1", era, case, n, cfg, cpu)
            except KeyError:  # the era was not booted with this CPU model: said, not NaN
                r[f"saved by {era}"] = "not booted"
        out.append(r)
    return pd.DataFrame(out).set_index("case")


def oracle_table() -> pd.DataFrame:
    """The seed mail's change per readv(1), function by function: the user-space oracle
    (UML, -O2) beside the booted x86-64 kernel
    (:func:`labkit.results.kernel_vm.oracle_reconciliation`)."""
    from labkit.kernelsrc.counts import kernel_counts  # the committed oracle counts, on use

    return kernel_vm.oracle_reconciliation(kernel_counts(functions=True)).set_index("function")
