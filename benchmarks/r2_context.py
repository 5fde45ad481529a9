#!/usr/bin/env python3
"""Does R2's live gap depend on which other calls share the loop? (not part of CI)

R2's live A/B is ``readv(1)`` (UBUF) against ``readv(4K + empty)`` (IOVEC) on
/dev/zero.  Notebook 03 interleaves the pair with ``read()``; notebook 04 with
three more variants (``readv_split``, ``preadv2``).  On the Intel Xeon guest
the two gave the same gap (2.9% and a ratio of 1.030); on the AMD EPYC guest
notebook 03 saw 1.2-1.5% and notebook 04 a ratio of 1.022-1.027.  This script
measures the pair in each company, back to back, ``--sets`` times: the time
saved by UBUF, in percent of the IOVEC call, with its 95% interval over
``--runs`` single-threaded worker runs, and each side's median per call.

Usage: ``python benchmarks/r2_context.py [--sets 3] [--runs 3] [--repeats 600]``
(about 20 s with the defaults).
"""

from __future__ import annotations

import argparse

from labkit.experiments import live_kernel
from labkit.results.r2 import experiments as r2_experiments

COMPANY = {
    "pair alone": ("readv1", "readv_empty"),
    "with read() (notebook 03)": ("read", "readv1", "readv_empty"),
    "with four others (notebook 04)": live_kernel.SYSCALL_VARIANTS,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=3, help="times each company is measured")
    ap.add_argument("--runs", type=int, default=3, help="worker runs per measurement")
    ap.add_argument("--repeats", type=int, default=600, help="interleaved rounds per run")
    ap.add_argument("--iters", type=int, default=1000, help="calls per batch")
    cfg = ap.parse_args()
    print(f"{'set':>3}  {'company':32}  time saved by UBUF (95% CI)   readv1   readv(4K+empty)")
    for k in range(cfg.sets):
        for name, names in COMPANY.items():
            d = live_kernel.run_syscalls(
                "zero",
                iters=cfg.iters,
                repeats=cfg.repeats,
                warmup=1,
                names=names,
                clock_name="cpu",
                runs=cfg.runs,
            )
            g = r2_experiments.live_gain(d, "readv(1) vs readv(4K+empty)", kind="time")
            med = d.groupby("variant")["ns_per_op"].median()
            print(
                f"{k + 1:>3}  {name:32}  {g.brief('{:+.2f}'):26} %  "
                f"{med['readv1']:6.1f}   {med['readv_empty']:6.1f} ns",
                flush=True,
            )


if __name__ == "__main__":
    main()
