#!/usr/bin/env python3
"""labkit against the running kernel, at length: many seeded cases, one report.

The long form of tests/test_kernel_differential.py (whose harness,
labkit.testing.kernel_diff, this runs): seeded random iovec arrays given to
readv/preadv2 (memfd, ext4 file), writev/pwritev2 (memfd),
process_vm_readv/writev and vmsplice, and to labkit's import_iovec + copies, over the same
real memory; every return value, errno and byte compared.  Prints the number
of cases per call, the outcomes they reached, the differences (0 expected)
and the time taken; exits 1 if there was any difference.

    python benchmarks/kernel_differential.py [--cases 20000] [--seed 20190729]
"""

from __future__ import annotations

import argparse
import sys
import tempfile

from labkit.measure.stats import DEFAULT_SEED
from labkit.testing import kernel_diff


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000, help="cases in all (default 20,000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--show", type=int, default=20, help="differences to print")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        report = kernel_diff.run(args.cases, args.seed, workdir)
    print(report.summary())
    for diff in report.differences[: args.show]:
        print(" ", diff)
    return 1 if report.differences else 0


if __name__ == "__main__":
    sys.exit(main())
