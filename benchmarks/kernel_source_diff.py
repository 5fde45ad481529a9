"""Differential sequences against the real kernel code, at benchmark size.

Runs labkit.kernelsrc.diff for every era pair (model 6.3 vs real 6.1, model 6.4
vs 6.1+ubuf and vs 6.12) at both optimisation levels of the real code, 20,000
sequences per pair and level by default, and prints each pair's summary: the
sequences and steps run, the differences (expected: 0), and the accepted ones
with the commit that explains them.  Exit status 1 if any difference is found.

    .venv/bin/python benchmarks/kernel_source_diff.py [SEQUENCES] [SEED]
"""

from __future__ import annotations

import sys
import time

from labkit.kernelsrc.build import OPT_LEVELS
from labkit.kernelsrc.diff import ACCEPTED, PAIRS, run_pair


def main() -> int:
    sequences = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 2026
    bad = 0
    for opt in OPT_LEVELS:
        for pair in PAIRS:
            t0 = time.monotonic()
            res = run_pair(pair, sequences, seed=seed, opt=opt)
            dt = time.monotonic() - t0
            print(f"[{opt}] {res.summary()} ({dt:.0f} s, {res.sequences / dt:.0f}/s)", flush=True)
            for d in res.differences[:10]:
                print("   ", d)
            bad += len(res.differences)
    print("accepted differences:")
    for a in ACCEPTED:
        print(
            f"  {a.field} of a {a.only_type} in {a.era}: "
            f"model {a.model}, real {a.kernel}: {a.commit}"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
