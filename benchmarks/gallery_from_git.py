#!/usr/bin/env python3
"""Build gallery bundles from reference runs committed in git history (not part of CI).

Each bundle takes, at one commit, ``data/reproduction/summary.csv`` (or the path
given) and the sample tables under ``data/results/`` whose environment record names
the reproduction's code commit (``--code``); tables of other runs that sat beside them
(older experiments, another host) are left out and named in the bundle's notes.

Usage::

    python benchmarks/gallery_from_git.py COMMIT CODE DEST --label TEXT [--note TEXT ...]
        [--summary PATH]

For the gallery of 2026-12-03 (see data/gallery/README.md)::

    python benchmarks/gallery_from_git.py 8ac1375 2c381d4 \\
        data/gallery/2026-12-02-intel-xeon-model-207 \\
        --label "Intel Xeon (fam 6 model 207 per README), KVM"
    python benchmarks/gallery_from_git.py 8816239 509344d \\
        data/gallery/2026-12-02-amd-epyc-family-26 \\
        --label "AMD EPYC (family 26 per README), KVM"
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from labkit.report import bundle


def git(*args: str) -> bytes:
    return subprocess.run(["git", *args], check=True, capture_output=True).stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("commit", help="the commit holding the reference run")
    ap.add_argument("code", help="the code commit its environment records name (a prefix)")
    ap.add_argument("dest", type=Path)
    ap.add_argument("--label", required=True)
    ap.add_argument("--note", action="append", default=[])
    ap.add_argument("--summary", default="data/reproduction/summary.csv")
    cfg = ap.parse_args()
    commit = git("rev-parse", cfg.commit).decode().strip()
    summary = pd.read_csv(io.BytesIO(git("show", f"{commit}:{cfg.summary}")))
    names = git("ls-tree", "-r", "--name-only", commit, "--", "data/results").decode().split()
    kept, left, env = [], [], None
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(n for n in names if n.endswith(".json")):
            rec = json.loads(git("show", f"{commit}:{name}"))
            e = rec.get("env", {})
            code = str(e.get("git_commit") or "")
            exp = Path(name).parent.name
            if not code.startswith(cfg.code):
                left.append(
                    f"{exp}/{Path(name).stem}: left out, another run "
                    f"(code {code[:7] or '?'}, {e.get('date')}, {e.get('cpu_model')})"
                )
                continue
            d = Path(tmp) / exp
            d.mkdir(exist_ok=True)
            (d / Path(name).name).write_bytes(git("show", f"{commit}:{name}"))
            csv = name[: -len(".json")] + ".csv"
            (d / Path(csv).name).write_bytes(git("show", f"{commit}:{csv}"))
            kept.append((d / Path(csv).name, d / Path(name).name))
            if env is None or exp == "live-syscalls":
                env = e
        if env is None:
            print(f"no sample table at {commit} names code {cfg.code}", file=sys.stderr)
            return 1
        notes = [
            f"built from git history: {cfg.summary} and data/results at {commit[:7]} "
            f"(the reference run of code {cfg.code})",
            "the environment record of that time names the CPU model only; the host's "
            "family/model come from the label (the README of the time), not from a record",
            *cfg.note,
            *left,
        ]
        out = bundle.write(
            cfg.dest,
            summary=summary,
            environment=env,
            samples=kept,
            source=f"git history at {commit[:7]}",
            label=cfg.label,
            notes=notes,
            extra={"git_source_commit": commit},
        )
    print(f"wrote {out}: {len(kept)} sample tables, {len(left)} left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
