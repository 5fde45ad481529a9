"""R1 at the source: the real iov_iter_advance() of 6.1 and 6.12 over a 1 GiB bvec table, timed.

Prints ns per skipped page (the slope of ns over skipped pages, best of five
batches per offset) at the UML defconfig's -Os and at -O2, beside the
clock-free instructions per skipped page (data/results/kernel-callgrind) and
the model's walk-2019 count.  A clock measurement: only as quiet as the
machine, never a pass/fail test.

    .venv/bin/python benchmarks/kernel_source_seek.py
"""

from __future__ import annotations

import sys

from labkit.experiments import callgrind
from labkit.kernelsrc.counts import kernel_counts
from labkit.kernelsrc.seek import measure_seek
from labkit.measure import results


def main() -> int:
    ns = measure_seek()
    counts = kernel_counts()
    per_page = counts[counts["call"] == "advance/page"].set_index(["era", "opt"])["instructions"]
    ns["instructions_per_page"] = [per_page.get((r.era, r.opt)) for r in ns.itertuples()]
    print(ns.to_string(index=False))
    runs = results.runs("ubuf-callgrind")
    if runs:
        cg, _ = results.load_run(runs[-1])
        walk = callgrind.evidence(cg)["r1_walk_per_page"]
        name = runs[-1].name
        print(f"model walk-2019: {walk:g} instructions per skipped page (callgrind, {name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
