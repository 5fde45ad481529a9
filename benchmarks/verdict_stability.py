#!/usr/bin/env python3
"""Several full reproductions in a row: do their verdicts agree? (not part of CI)

The verdict rule lets noise move a verdict only to or from *inconclusive*; a
quantity *reproduced* in one reproduction and *differs* in another would mean
the intervals do not cover what changes from one run of the machine to the
next.  This script runs ``labkit reproduce --force`` ``--runs`` times in a
row, each into its own folder under ``--out``, optionally with a busy loop
spinning on every CPU but the measuring one (``--load``), and prints, for
every headline quantity, its verdict and interval in each reproduction and
whether it stayed the same, moved to or from *inconclusive*, or flipped
(:mod:`labkit.report.stability`).  ``--with CSV`` adds summaries measured
before (for example the stored reference, ``data/reproduction/summary.csv``).

Writes ``<out>/verdicts.csv`` (the comparison) and ``<out>/times.csv`` (the
wall time of each reproduction).  Exit status 0 when nothing flipped, 1 when a
verdict flipped, 2 when a reproduction failed.

Usage: ``python benchmarks/verdict_stability.py [--runs 3] [--load] [--quick]
[--out DIR] [--with CSV ...] [--markdown]``.  A full reproduction takes about
three minutes on a 2-core VM, so three take about ten.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from labkit.measure import runner
from labkit.report import stability

_SPIN = "while True: pass"


def spin_others(cpu: int) -> list[subprocess.Popen]:
    """One busy loop pinned to each allowed CPU other than ``cpu`` (none on a 1-CPU machine)."""
    others = sorted(os.sched_getaffinity(0) - {cpu})
    procs = []
    for c in others:
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", _SPIN],
                preexec_fn=lambda c=c: os.sched_setaffinity(0, {c}),
            )
        )
    return procs


def reproduce(out: Path, quick: bool) -> tuple[int, float]:
    """``labkit reproduce --force`` into ``out``: exit status and wall seconds."""
    cmd = [sys.executable, "-c", "import sys; from labkit.cli import main; sys.exit(main())"]
    cmd += ["reproduce", "--force", "--no-progress", "--out", str(out)]
    if quick:
        cmd.append("--quick")
    t0 = time.monotonic()
    with open(out.with_suffix(".log"), "w") as log:
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    return rc, time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="reproductions to run (0: none)")
    ap.add_argument("--load", action="store_true", help="spin a busy loop on the other CPUs")
    ap.add_argument("--quick", action="store_true", help="quick reproductions")
    ap.add_argument("--out", type=Path, help="folder for the reproductions (default: a temp one)")
    ap.add_argument(
        "--with",
        dest="extra",
        type=Path,
        action="append",
        default=[],
        help="a summary.csv measured before, compared too (repeatable)",
    )
    ap.add_argument("--markdown", action="store_true", help="print one Markdown table")
    cfg = ap.parse_args()
    out = cfg.out or Path(tempfile.mkdtemp(prefix="labkit-stability-"))
    out.mkdir(parents=True, exist_ok=True)
    names, tables = [], []
    for p in cfg.extra:
        name = p.parent.name if p.name == "summary.csv" and p.parent.name else p.stem
        names.append(name if name not in names else str(p))
        tables.append(pd.read_csv(p))
    cpu = runner.default_cpu()
    load = spin_others(cpu) if cfg.load else []
    times = []
    try:
        for i in range(1, cfg.runs + 1):
            folder = out / f"run-{i}"
            rc, secs = reproduce(folder, cfg.quick)
            times.append({"run": i, "seconds": round(secs, 1), "exit": rc, "load": cfg.load})
            print(f"run {i}: exit {rc} in {secs:.0f} s ({folder})", file=sys.stderr, flush=True)
            if rc != 0:
                print(f"reproduction {i} failed: see {folder.with_suffix('.log')}", file=sys.stderr)
                return 2
            names.append(f"run {i}" + (" (load)" if cfg.load else ""))
            tables.append(pd.read_csv(folder / "summary.csv"))
    finally:
        for p in load:
            p.kill()
            p.wait()
    pd.DataFrame(times).to_csv(out / "times.csv", index=False)
    if len(tables) < 2:
        print("fewer than two summaries: nothing to compare", file=sys.stderr)
        return 0
    tab = stability.compare(tables, names)
    tab.to_csv(out / "verdicts.csv", index=False)
    print(stability.format_comparison(tab, markdown=cfg.markdown))
    print(f"\nwritten: {out / 'verdicts.csv'}, {out / 'times.csv'}", file=sys.stderr)
    return 1 if stability.counts(tab)["flipped"] else 0


if __name__ == "__main__":
    sys.exit(main())
