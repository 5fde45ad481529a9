#!/usr/bin/env python3
"""Instructions per modelled call, 6.3 vs 6.4 (R2), READV vs READ (R3), and per skipped page
of the R1 seeks, under callgrind.

The measuring code is :mod:`labkit.experiments.callgrind` (one valgrind process,
one counter dump per phase; see there for the method and the ``rep stosb``
caveat); the notebooks call it in full mode for the summary.  This script
runs every model variant, prints the table and saves it as the
``ubuf-callgrind`` result (with the environment record).

Needs valgrind (Debian/Ubuntu: ``apt-get install valgrind``); about a minute:

    python benchmarks/ubuf_callgrind.py [--csv out.csv] [--n1 1000 --n2 3000] [--no-save]
"""

from __future__ import annotations

import argparse
import sys

from labkit.experiments import callgrind


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n1", type=int, default=1000)
    p.add_argument("--n2", type=int, default=3000)
    p.add_argument("--csv", help="also write the table here")
    p.add_argument("--no-save", action="store_true", help="do not save under data/results")
    args = p.parse_args(argv)
    ok, why = callgrind.available()
    if not ok:
        print(why, file=sys.stderr)
        return 2
    df = callgrind.measure(callgrind.UBUF_VARIANTS, n1=args.n1, n2=args.n2)
    print(df[["experiment", "variant", "instructions_per_call"]].to_string(index=False))
    for key, value in callgrind.evidence(df).items():
        print(f"{key:20s} {value:10.1f}")
    if args.csv:
        df.to_csv(args.csv, index=False)
    if not args.no_save:
        from labkit.measure import results

        print("saved", results.save("ubuf-callgrind", df))
    return 0


if __name__ == "__main__":
    sys.exit(main())
