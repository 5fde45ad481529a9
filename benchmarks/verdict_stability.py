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

Sessions and hosts: each reproduction is one session of this host (``--pause``
seconds apart) and writes its result bundle; ``--bundle DIR`` (repeatable) and
``--gallery`` add bundles of other hosts (``data/gallery/``).  With bundles, the
script prints one table per host (its sessions compared: within a host, no
verdict may flip between *reproduced* and *differs*) and then the cross-host
comparison (:mod:`labkit.report.gallery`): per claim each host's verdict, and
every disagreement between hosts as a finding naming what differs between them.

Writes ``<out>/verdicts.csv`` (the comparison), ``<out>/times.csv`` (the
wall time of each reproduction), and with bundles ``<out>/hosts.md`` and
``<out>/gallery.csv``.  Exit status 0 when nothing flipped within a host, 1 when
a verdict flipped, 2 when a reproduction failed.

Usage: ``python benchmarks/verdict_stability.py [--runs 3] [--load] [--quick]
[--out DIR] [--with CSV ...] [--bundle DIR ...] [--gallery] [--pause S]
[--markdown]``.  A full reproduction takes about four minutes on a 2-core VM.
The closing note's measurement (two sessions on this host, the gallery beside)::

    python benchmarks/verdict_stability.py --runs 2 --pause 60 --gallery --out /tmp/stab
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
from labkit.report import bundle, gallery, stability

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


def reproduce(
    out: Path, quick: bool, sessions: int | None = None, pause: float = 0.0
) -> tuple[int, float]:
    """``labkit reproduce --force`` into ``out`` (``--sessions``: its measuring phase that
    many times, ``pause`` seconds apart): exit status and wall seconds."""
    cmd = [sys.executable, "-c", "import sys; from labkit.cli import main; sys.exit(main())"]
    cmd += ["reproduce", "--force", "--no-progress", "--out", str(out)]
    if sessions is not None:  # else labkit reproduce's default for the mode
        cmd += ["--sessions", str(sessions), "--pause", str(pause)]
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
    ap.add_argument(
        "--bundle", type=Path, action="append", default=[], help="a result bundle (repeatable)"
    )
    ap.add_argument("--gallery", action="store_true", help="add every bundle of data/gallery")
    ap.add_argument("--pause", type=float, default=0.0, help="seconds between reproductions")
    ap.add_argument(
        "--sessions",
        type=int,
        default=None,
        help="sessions per reproduction (labkit reproduce --sessions N, --pause apart): "
        "the sessions of each are judged one by one and compared, beside their pooled verdict",
    )
    ap.add_argument(
        "--reproduction",
        type=Path,
        action="append",
        default=[],
        help="a reproduction folder measured before (its measured/): its sessions compared, "
        "nothing run (repeatable)",
    )
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
            if i > 1 and cfg.pause > 0:
                time.sleep(cfg.pause)
            folder = out / f"run-{i}"
            rc, secs = reproduce(folder, cfg.quick, cfg.sessions, cfg.pause)
            times.append({"run": i, "seconds": round(secs, 1), "exit": rc, "load": cfg.load})
            print(f"run {i}: exit {rc} in {secs:.0f} s ({folder})", file=sys.stderr, flush=True)
            if rc != 0:
                print(f"reproduction {i} failed: see {folder.with_suffix('.log')}", file=sys.stderr)
                return 2
            names.append(f"run {i}" + (" (load)" if cfg.load else ""))
            tables.append(pd.read_csv(folder / "summary.csv"))
            sessions = bundle.json_sessions(folder)
            if sessions > 1:  # its sessions are compared; its bundle joins other hosts only
                cfg.reproduction.append(folder)
            if (folder / "bundle" / "manifest.json").is_file() and (sessions == 1 or cfg.gallery):
                cfg.bundle.append(folder / "bundle")
    finally:
        for p in load:
            p.kill()
            p.wait()
    pd.DataFrame(times).to_csv(out / "times.csv", index=False)
    flipped = sum(sessions_report(f, out, cfg.markdown) for f in cfg.reproduction)
    if cfg.reproduction and not cfg.bundle and not cfg.gallery:
        return 1 if flipped else 0
    found = [bundle.load(p) for p in cfg.bundle]
    if cfg.gallery:
        found += [bundle.load(p) for p in bundle.gallery_bundles()]
    if found:
        return hosts_report(found, out, cfg.markdown)
    if len(tables) < 2:
        print("fewer than two summaries: nothing to compare", file=sys.stderr)
        return 0
    tab = stability.compare(tables, names)
    tab.to_csv(out / "verdicts.csv", index=False)
    print(stability.format_comparison(tab, markdown=cfg.markdown))
    print(f"\nwritten: {out / 'verdicts.csv'}, {out / 'times.csv'}", file=sys.stderr)
    return 1 if stability.counts(tab)["flipped"] else 0


def sessions_report(folder: Path, out: Path, markdown: bool) -> int:
    """The sessions of one reproduction's measuring phase, each judged alone, and their
    pooled verdict, per claim (:func:`labkit.claims.schedule.session_summaries`); writes
    ``<out>/sessions-<folder name>.csv`` and returns the number of flips between sessions."""
    import json

    from labkit.claims import schedule
    from labkit.report.summary import fingerprint

    index = json.loads((folder / "measured" / "index.json").read_text())
    tabs = schedule.session_summaries(folder, bool(index["quick"]))
    sessions = [k for k in tabs if k != "pooled"]
    print(f"## {fingerprint()}: {folder} ({len(sessions)} sessions)\n")
    if len(sessions) < 2:
        print("one session only: nothing to compare within this host\n")
        return 0
    names = [f"session {k}" for k in range(1, len(sessions) + 1)] + ["pooled"]
    tab = stability.compare([tabs[k] for k in sessions] + [tabs["pooled"]], names)
    tab.to_csv(out / f"sessions-{folder.name}.csv", index=False)
    print(stability.format_comparison(tab, markdown=markdown))
    within = stability.compare([tabs[k] for k in sessions], names[:-1])
    c = stability.counts(within)
    pooled = tabs["pooled"]["verdict"].value_counts().to_dict()
    print(f"\nbetween sessions: {c}; pooled verdicts: {pooled}\n")
    return int(c["flipped"])


def hosts_report(found: list, out: Path, markdown: bool) -> int:
    """One table per host (its sessions), then the cross-host comparison and its findings."""
    flipped = 0
    lines = []
    for fp, tab in stability.by_host(found).items():
        labels = sorted({b.label for b in found if b.fingerprint == fp})
        lines.append(f"## {fp}" + (f" ({'; '.join(labels)})" if labels != [fp] else ""))
        if tab is None:
            lines.append("one session only: nothing to compare within this host\n")
            continue
        flipped += stability.counts(tab)["flipped"]
        lines.append(stability.format_comparison(tab, markdown=True) + "\n")
    text = "\n".join(lines)
    if len({b.fingerprint for b in found}) >= 2 or len(found) >= 2:
        c = gallery.compare(found)
        c.table.to_csv(out / "gallery.csv", index=False)
        text += "\n## across hosts\n\n" + gallery.format_comparison(c, markdown=markdown)
    (out / "hosts.md").write_text(text + "\n")
    print(text)
    print(f"\nwritten: {out / 'hosts.md'}", file=sys.stderr)
    return 1 if flipped else 0


if __name__ == "__main__":
    sys.exit(main())
