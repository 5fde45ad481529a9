#!/usr/bin/env python3
"""The kernel bench's whole era matrix: build, boot, count per call, attribute (not part of CI).

Builds every (era, config) of :data:`labkit.kernelvm.matrix.MATRIX` from Debian's
``linux-source-6.1`` (cached; one object folder per config, rebuilt incrementally
between eras), boots each ``--boots`` times under QEMU TCG with icount, and writes into
``--out``:

``rows.csv``         every boot's rows (per case: calls per batch, batches, the modal
                     batch's total, how many batches agree, min and max)
``summary.csv``      per (config, cpu, era, case, bytes): the modal per-call count over
                     boots, how many boots give it, the fewest agreeing batches
``savings.csv``      each era against stock 6.1 (and R1: stock against its fix undone)
``attribution.csv``  each saving by kernel function (the QEMU plugin), ``top`` marking the
                     functions that account for 90% of it
``identity.json``    the kernels (release, config sha256, patches, gcc), the CPU models and
                     what the guest saw (flags, vulnerabilities, how readv(1) imports),
                     the timings, and, with ``--check-incremental``, the incremental build
                     compared byte for byte with a clean one

Usage: ``python benchmarks/kernel_vm_matrix.py --out DIR [--boots 3] [--no-attrib]
[--check-incremental]``.  Cold (nothing cached) it builds 2 configs clean and 7 eras
incrementally, one after another, and boots each kernel (two QEMU processes at a time)
as soon as it is built, while the next one builds; warm (every kernel cached) it only
boots.  ``identity.json`` records the seconds of each part.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from labkit.kernelvm import build, matrix
from labkit.kernelvm.eras import KernelVMError, missing_tools


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the output folder")
    ap.add_argument("--boots", type=int, default=3)
    ap.add_argument("--no-attrib", action="store_true")
    ap.add_argument("--check-incremental", action="store_true",
                    help="build 6.1+merged clean too; compare it with the cached one")  # fmt: skip
    args = ap.parse_args(argv)
    if (why := missing_tools()) is not None:
        print(why, file=sys.stderr)
        return 2
    out = Path(args.out)
    t0 = time.monotonic()
    try:
        rows, identity = matrix.run_plan(matrix.MATRIX, boots=args.boots, log=print)
        summary = matrix.summarize(rows)
        saved = matrix.savings(summary, before="6.1")
        r1 = matrix.savings(summary[summary["era"].isin(["6.1", "6.1-r1fix"])],
                            before="6.1-r1fix")  # fmt: skip
        matrix.write(out, "rows.csv", rows)
        matrix.write(out, "summary.csv", summary)
        matrix.write(out, "savings.csv", pd.concat([saved, r1], ignore_index=True))
        t_matrix = time.monotonic() - t0
        if not args.no_attrib:
            table = matrix.attribute(log=print)
            matrix.write(out, "attribution.csv", table)
        if args.check_incremental:
            identity["incremental_check"] = build.check_incremental("6.1+merged", "base")
    except KernelVMError as exc:
        print(f"kernel_vm_matrix: {exc}", file=sys.stderr)
        return 2
    identity["seconds"]["matrix"] = round(t_matrix, 1)
    identity["seconds"]["with_attribution"] = round(time.monotonic() - t0, 1)
    matrix.write(out, "identity.json", identity)
    print(summary.to_string(index=False))
    print(saved.to_string(index=False))
    print(f"total {time.monotonic() - t0:.0f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
