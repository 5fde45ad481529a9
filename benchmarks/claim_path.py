#!/usr/bin/env python3
"""Which labkit modules a claim passes through, from its notebook call to its summary row.

Runs what a notebook runs for each claim id given (``claims.start``, then ``claims.run(id)``,
which measures the claim and records its summary row) in quick mode, with a profiler hook,
and counts two things (worker processes are not followed):

* **the chain**: every labkit module with a frame on the call stack at one of the claim's
  steps: its own code (any call into its result's folder, ``labkit.results.rN``), its runs
  (``labkit.measure.workers.run_in_workers``), its verdict (``labkit.measure.verdicts.judge``)
  and its row (``labkit.report.summary.record``), the step's module included.  These are the
  modules a reader follows from the notebook's call to the row;
* **every module entered**: the chain and every helper its modules call (settings, file
  writes, statistics, the host record, the ledgers' reader ...), the number of calls into
  each printed beside it.

Usage: ``python benchmarks/claim_path.py [R2.saved_share R1.tail_speedup ...]``
(a few seconds per claim: the live claims measure in quick mode).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from types import FrameType

from labkit import claims

#: The steps of a claim outside its result's folder: (module, function).
STEPS = (
    ("labkit.measure.workers", "run_in_workers"),
    ("labkit.measure.verdicts", "judge"),
    ("labkit.report.summary", "record"),
)


def _module(frame: FrameType) -> str:
    name = frame.f_globals.get("__name__", "")
    return name if name == "labkit" or name.startswith("labkit.") else ""


def trace(claim_id: str) -> tuple[set[str], Counter[str]]:
    """(the chain, the calls per module entered) while ``claim_id`` is run and recorded."""
    own = f"labkit.results.{claim_id.split('.')[0].lower()}."
    chain: set[str] = set()
    entered: Counter[str] = Counter()

    def hook(frame: FrameType, event: str, _arg: object) -> None:
        name = _module(frame) if event == "call" else ""
        if not name:
            return
        entered[name] += 1
        if name.startswith(own) or (name, frame.f_code.co_name) in STEPS:
            f: FrameType | None = frame
            while f is not None:
                chain.add(_module(f))
                f = f.f_back

    sys.setprofile(hook)
    try:
        claims.run(claim_id)
    finally:
        sys.setprofile(None)
    chain.discard("")
    return chain, entered


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="*", default=["R2.saved_share", "R1.tail_speedup"])
    cfg = ap.parse_args()
    claims.start(True)
    for claim_id in cfg.ids:
        chain, entered = trace(claim_id)
        print(f"{claim_id}: a chain of {len(chain)} modules; {len(entered)} modules entered")
        for module in sorted(entered):
            mark = "chain" if module in chain else ""
            print(f"  {module:36} {mark:6} {entered[module]:>8} calls")


if __name__ == "__main__":
    main()
