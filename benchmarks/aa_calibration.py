#!/usr/bin/env python3
"""A/A calibration of R2's live loop: how often A/A intervals cover 0, and the resolving
power in ns per call (not part of CI).

R2's one loop (read, readv(1), readv(4K + empty), readv(1)'s A/A twin, readv(4K + 2
empty)) is measured ``--blocks`` times, each block ``--runs`` independent worker runs of
``--repeats`` interleaved rounds of ``--iters`` calls per batch.  Every block gives one
A/A interval (readv1_aa - readv1, :func:`labkit.measure.calibration.aa`), whose
half-width is the resolving power of that block, and R2's saving raw and corrected for
the proxy's extra iovec (:func:`labkit.results.r2.claims.proxy_corrected`).  Printed:
one line per block, then the coverage of 0 over all blocks (expected about 95%) and the
median resolving power, with the seconds of measuring per block (the goal: at most 1 ns
per call in at most 60 s).

Usage: ``python benchmarks/aa_calibration.py [--blocks 20] [--runs 6] [--repeats 60]
[--iters 1000] [--csv OUT]``, or ``--bundle DIR`` to tally the A/A of every run of a
reproduction's bundle (R2's loop, R1's head/tail, R3's io_uring peak loop) without
measuring, or ``--reproduction OUT`` for the rows a ``labkit reproduce`` measuring phase
stored (quick mode too).  A run is a (session, run) pair; the interval "over all runs"
is :func:`labkit.measure.calibration.aa`, the definition the summary rows use (several
sessions pooled with the session on top).  With the
defaults a block measures about 7-10 s on a 2-core VM, so 20 blocks take 3-4 minutes.
"""

from __future__ import annotations

import argparse
import sys
import time

import pandas as pd

from labkit.experiments.live_kernel import run_syscalls
from labkit.live import aa_twin
from labkit.measure import calibration
from labkit.results.r2.claims import proxy_corrected

NAMES = ("read", "readv1", "readv_empty", aa_twin("readv1"), "readv_empty2")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=60)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--csv", help="write one row per block")
    ap.add_argument(
        "--bundle",
        help="measure nothing: tally the A/A of every run in a result bundle's samples "
        "(R2's loop, ubuf-live-syscalls; R1's head/tail, live-fixed-head-tail)",
    )
    ap.add_argument(
        "--reproduction",
        help="measure nothing: tally the A/A of every run a reproduction's measuring phase "
        "stored (<out>/measured; R2's loop, R1's head/tail, R3's peak loop)",
    )
    cfg = ap.parse_args()
    if cfg.bundle:
        return from_bundle(cfg.bundle)
    if cfg.reproduction:
        return from_reproduction(cfg.reproduction)
    rows, found = [], []
    for k in range(1, cfg.blocks + 1):
        t0 = time.monotonic()
        df = run_syscalls(
            names=NAMES,
            iters=cfg.iters,
            repeats=cfg.repeats,
            warmup=2,
            runs=cfg.runs,
            clock_name="cpu",
        )
        secs = time.monotonic() - t0
        a = calibration.aa(df, "readv1")
        r2 = proxy_corrected(df)
        found.append(a)
        rows.append(
            {
                "block": k,
                "seconds": round(secs, 1),
                "aa_ns": a.estimate.estimate,
                "aa_low": a.estimate.ci_low,
                "aa_high": a.estimate.ci_high,
                "covers_zero": a.covers_zero,
                "resolving_power_ns": a.resolving_power,
                **{f"{key}": e.brief("{:.3g}") for key, e in r2.items()},
            }
        )
        print(
            f"block {k}: {secs:.1f} s; {a.sentence()}; saved {r2['saved_ns'].brief('{:.2f}')} "
            f"ns (raw {r2['saved_ns_raw'].brief('{:.2f}')}, bias {r2['bias_ns'].brief('{:.2f}')})",
            flush=True,
        )
    t = calibration.tally(found)
    table = pd.DataFrame(rows)
    if cfg.csv:
        table.to_csv(cfg.csv, index=False)
    print(
        f"\nA/A intervals covering 0: {t['covered']} of {t['total']} ({100 * t['share']:.0f}%); "
        f"median resolving power {t['resolving_power']['readv1']:.3g} ns per call; "
        f"median {table['seconds'].median():.1f} s of measuring per block "
        f"({cfg.runs} runs x {cfg.repeats} rounds x {len(NAMES)} variants x {cfg.iters} calls)"
    )
    return 0


#: The A/A twins of the live experiments: (bundle samples, stored experiment id, variant, twin).
TWINS = (
    ("ubuf-live-syscalls", "R2.live_ab", "readv1", aa_twin("readv1")),
    ("live-fixed-head-tail", "R1.live_fixed", "head", aa_twin("head")),
    ("ubuf-live-uring-peak", "R3.live_peak", "readv1@32", aa_twin("readv1") + "@32"),
)


def tally_rows(name: str, df: pd.DataFrame, variant: str, twin: str) -> list:
    """Print and return the A/A intervals of every run of ``df`` (a run is a (session,
    run) pair); the line also gives the one interval over all of them
    (:func:`labkit.measure.calibration.aa`: sessions pooled, the summary's definition)."""
    if "target" in df.columns:
        df = df[df["target"] == "zero"]
    if twin not in set(df["variant"]):
        print(f"{name}: no A/A twin measured (rows from before the twins)")
        return []
    runs = calibration.aa_by_run(df, variant, twin=twin)
    t = calibration.tally(runs)
    n_sessions = df["session"].nunique() if "session" in df.columns else 1
    print(
        f"{name}: {t['covered']} of {t['total']} runs' A/A intervals cover 0; resolving power "
        f"per run {t['resolving_power'][variant]:.3g} ns (median); over all runs "
        f"({n_sessions} session(s)): {calibration.aa(df, variant, twin=twin).sentence()}"
    )
    return runs


def from_bundle(path: str) -> int:
    """The A/A intervals of every run in a bundle, per experiment, and their coverage of 0."""
    from labkit.report import bundle

    b = bundle.load(path)
    found = []
    for exp, _, variant, twin in TWINS:
        try:
            df = b.samples(exp)
        except KeyError:
            print(f"{exp}: not in the bundle")
            continue
        found += tally_rows(exp, df, variant, twin)
    return _total(found)


def from_reproduction(path: str) -> int:
    """The same, over the rows a reproduction's measuring phase stored (``<out>/measured``,
    any mode: quick runs have no samples in their bundle)."""
    import json
    from pathlib import Path

    from labkit.claims import stored

    index = json.loads((Path(path) / "measured" / "index.json").read_text())
    found = []
    for _, exp_id, variant, twin in TWINS:
        hits = [e for e in index["entries"] if e["experiment"] == exp_id]
        if not hits:
            print(f"{exp_id}: not measured there")
            continue
        st = stored.load(exp_id, hits[0]["key"], bool(index["quick"]), out=path)
        assert st is not None
        found += tally_rows(exp_id, st.data, variant, twin)
        if "seconds" in hits[0]:  # phases from 2026-12-03 16:00 UTC on record it
            print(f"{exp_id}: {hits[0]['seconds']:.0f} s of measuring in all sessions")
    return _total(found)


def _total(found: list) -> int:
    if found:
        t = calibration.tally(found)
        print(f"all: {t['covered']} of {t['total']} ({100 * t['share']:.0f}%) cover 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
