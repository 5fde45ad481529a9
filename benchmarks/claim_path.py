#!/usr/bin/env python3
"""Which labkit modules a claim passes through, from its notebook call to its summary row.

Runs what a notebook runs for each claim id given (``claims.start``, ``claims.run(id)``,
``claims.summary_of([id])``) in quick mode, with a profiler hook that records every labkit
module whose code is called in this process (worker processes are not followed), and
prints them grouped by package, with the number of calls into each.  The count is the
dynamic path: every module a reader stepping through the call in a debugger would enter,
helpers included.

Usage: ``python benchmarks/claim_path.py [R2.saved_share R1.tail_speedup ...]``
(a few seconds per claim: the live claims measure in quick mode).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from labkit import claims


def trace(claim_id: str) -> Counter[str]:
    """Calls per labkit module while ``claim_id`` is run and its summary row written."""
    seen: Counter[str] = Counter()

    def hook(frame, event, _arg):  # noqa: ANN001 - sys.setprofile's signature
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name == "labkit" or name.startswith("labkit."):
                seen[name] += 1

    sys.setprofile(hook)
    try:
        claims.run(claim_id)
        claims.summary_of([claim_id])
    finally:
        sys.setprofile(None)
    return seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="*", default=["R2.saved_share", "R1.tail_speedup"])
    cfg = ap.parse_args()
    claims.start(True)
    for claim_id in cfg.ids:
        seen = trace(claim_id)
        packages = Counter(m.rsplit(".", 1)[0] if m.count(".") > 1 else m for m in seen)
        print(f"{claim_id}: {len(seen)} modules in {len(packages)} packages")
        for module in sorted(seen):
            print(f"  {module:40} {seen[module]:>8} calls")


if __name__ == "__main__":
    main()
