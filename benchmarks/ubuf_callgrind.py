#!/usr/bin/env python3
"""Instructions per modelled call, 6.3 vs 6.4 (R2) and READV vs READ (R3), under callgrind.

Wall-clock time on a shared, noisy machine moves by more than the few
nanoseconds the 2023 changes save; an instruction count does not.  For each
model variant this runs the model's C timing kernel under
``valgrind --tool=callgrind`` twice, with N1 and N2 calls, collecting only
inside the kernel (``--toggle-collect``), and reports
(Ir(N2) - Ir(N1)) / (N2 - N1): the instructions of one call, with the clock
reads and the untimed warm-up call cancelled out.

Caveat: valgrind counts every iteration of a ``rep stosb``/``rep movsb`` as an
instruction, so the 4 KiB memset behind ``iov_iter_zero`` weighs ~4,100
"instructions" here; the *differences* between variants are what matter.

Not part of CI (needs valgrind, takes a few minutes):

    python benchmarks/ubuf_callgrind.py [--csv out.csv] [--n1 1000 --n2 3000]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

VARIANTS = [
    # (experiment, label, model class, kwargs)
    (
        "mechanics",
        "6.3 (IOVEC)",
        "SyscallModel",
        {"syscall": "readv", "kernel": "6.3", "op": "advance"},
    ),
    (
        "mechanics",
        "6.4 (UBUF)",
        "SyscallModel",
        {"syscall": "readv", "kernel": "6.4", "op": "advance"},
    ),
    ("read-zero", "read", "SyscallModel", {"syscall": "read"}),
    ("read-zero", "readv 6.3", "SyscallModel", {"syscall": "readv", "kernel": "6.3"}),
    ("read-zero", "readv 6.4", "SyscallModel", {"syscall": "readv", "kernel": "6.4"}),
    (
        "read-zero",
        "readv 6.4 (4K+empty)",
        "SyscallModel",
        {"syscall": "readv", "kernel": "6.4", "segments": [4096, 0]},
    ),
]
for _k in (0, 4):
    for _v in ("readv-iovec", "readv-rewrite", "readv-6.4", "read"):
        VARIANTS.append(
            (f"uring defer_every={_k}", _v, "UringModel", {"variant": _v, "defer_every": _k})
        )

CHILD = """
import json, sys

from labkit.models import ubuf

cls, kwargs, n = json.loads(sys.argv[1])
getattr(ubuf, cls)(**kwargs).time(n)
"""


def instructions(cls: str, kwargs: dict, n: int) -> int:
    """Ir collected inside the model's timing kernel for one batch of n calls."""
    fn = "lk_time_ubuf_uring" if cls == "UringModel" else "lk_time_ubuf_syscall"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            f"--toggle-collect={fn}",
            sys.executable,
            "-c",
            CHILD,
            json.dumps([cls, kwargs, n]),
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            m = re.search(r"^summary:\s+(\d+)", f.read(), re.M)
    if not m:
        raise RuntimeError(f"no summary in callgrind output for {cls} {kwargs}")
    return int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n1", type=int, default=1000)
    p.add_argument("--n2", type=int, default=3000)
    p.add_argument("--csv", help="also write the table here")
    args = p.parse_args(argv)
    if not shutil.which("valgrind"):
        print("valgrind is not installed", file=sys.stderr)
        return 2
    rows = []
    for exp, label, cls, kwargs in VARIANTS:
        i1 = instructions(cls, kwargs, args.n1)
        i2 = instructions(cls, kwargs, args.n2)
        per_call = (i2 - i1) / (args.n2 - args.n1)
        rows.append({"experiment": exp, "variant": label, "instructions_per_call": per_call})
        print(f"{exp:24s} {label:24s} {per_call:10.1f}", flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
