#!/usr/bin/env python3
"""labkit's live loop in its single-threaded worker against a bare single-threaded C loop.

The published read-zero figures (R2) came from a single-threaded C program.
A system call made from a process with more than one thread pays for the
shared file table on every call (the kernel's ``fdget()`` fast path is for an
unshared one; see :mod:`labkit.measure.threads`), so labkit measures its live
loops in spawned single-threaded workers.  This benchmark shows, side by side
in one run, on one pinned CPU, with the same clock, what that buys:

    (a) bare   benchmarks/bare_read_loop.c, compiled here with gcc -O2: the
               same calls in a bare single-threaded C program
    (b) worker labkit's live loop as the notebooks run it
               (labkit.experiments.live_kernel.run_syscalls / run_uring_qd1,
               runs=1: one fresh single-threaded worker per round)
    (c) multi  the same labkit C loop called from this process, which has
               imported numpy and starts one more (idle) thread: a
               multi-threaded process, as a notebook kernel is

for read(/dev/zero, 4 KiB), readv(1 x 4 KiB), readv(4 KiB + empty) and
io_uring READ at queue depth 1.  Each round runs the three in a rotated order
(a b c, b c a, c a b, ...) and, inside each, the variants interleaved with the
order rotated.  It prints the median ns per call of each, the ratios b/a
(target: within [0.95, 1.05]) and c/a, and the range of the per-round ratios.
Timing lives here, not in the tests.

Usage: ``python benchmarks/live_vs_bare_c.py [--rounds 7] [--repeats 5]
[--clock cpu] [--cpu N] [--csv out.csv]``.  Needs gcc; io_uring rows are
skipped (with the reason) where the kernel refuses io_uring.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pandas as pd

from labkit import live
from labkit.experiments import live_kernel
from labkit.measure import runner, threads

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "bare_read_loop.c"
SYSCALLS = ("read", "readv1", "readv_empty")
CONTESTANTS = ("bare", "worker", "multi")


def compile_bare(out_dir: Path) -> Path:
    """Build bare_read_loop.c with gcc -O2 (as labkit's C core is optimised)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise SystemExit("live_vs_bare_c: gcc is needed to build the bare C loop")
    exe = out_dir / "bare_read_loop"
    subprocess.run(
        [gcc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(SOURCE)],
        check=True,
        timeout=120,
    )
    return exe


def run_bare(exe: Path, mode: str, cfg: argparse.Namespace, iters: int) -> list[dict]:
    """One run of the bare C program: its kept batches as rows."""
    proc = subprocess.run(
        [exe, mode, str(cfg.cpu), cfg.clock, str(iters), str(cfg.repeats), str(cfg.warmup)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"bare_read_loop {mode} failed: {proc.stderr.strip()}")
    lines = proc.stdout.split("\n")
    tasks = int(next(line.split()[1] for line in lines if line.startswith("threads ")))
    return [
        {"variant": v, "repeat": int(r), "ns_per_op": float(ns), "threads": tasks}
        for v, r, ns in (line.split() for line in lines if line and not line.startswith("threads"))
    ]


def run_worker(mode: str, cfg: argparse.Namespace, iters: int) -> list[dict]:
    """labkit's live loop in one fresh single-threaded worker (what the notebooks call)."""
    common = {"iters": iters, "repeats": cfg.repeats, "warmup": cfg.warmup, "cpu": cfg.cpu}
    if mode == "sys":
        df = live_kernel.run_syscalls(
            "zero", names=SYSCALLS, clock_name=cfg.clock, runs=1, **common
        )
    else:
        df = live_kernel.run_uring_qd1(
            "zero", ops=("read",), clock_name=cfg.clock, runs=1, **common
        )
    return df[["variant", "repeat", "ns_per_op", "threads"]].to_dict("records")


def run_multi(mode: str, cfg: argparse.Namespace, iters: int) -> list[dict]:
    """The same labkit C loop, called from this multi-threaded process."""
    common = {"iters": iters, "repeats": cfg.repeats, "warmup": cfg.warmup, "cpu": cfg.cpu}
    common["length"] = live.DEFAULT_LENGTH
    common["clock_name"] = cfg.clock
    if mode == "sys":
        rows = live_kernel._syscalls_in_worker("zero", names=list(SYSCALLS), **common)
    else:
        rows = live_kernel._uring_qd1_in_worker(
            "zero", ops=["read"], register_ring_fd=False, **common
        )
    tasks = threads.count_threads()
    for row in rows:
        row["threads"] = tasks.total if tasks else None
    return [{k: row[k] for k in ("variant", "repeat", "ns_per_op", "threads")} for row in rows]


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Per (mode, variant): medians of each contestant, b/a and c/a, per-round ranges."""
    out = []
    for (mode, variant), d in df.groupby(["mode", "variant"], sort=False):
        med = {c: d.loc[d["who"] == c, "ns_per_op"].median() for c in CONTESTANTS}
        per_round = d.groupby(["round", "who"])["ns_per_op"].median().unstack("who")
        rb = per_round["worker"] / per_round["bare"]
        rc = per_round["multi"] / per_round["bare"]
        out.append(
            {
                "workload": "io_uring READ QD1" if mode == "uring" else variant,
                "bare ns": med["bare"],
                "worker ns": med["worker"],
                "multi ns": med["multi"],
                "worker/bare": med["worker"] / med["bare"],
                "w/b rounds": f"{rb.min():.3f}-{rb.max():.3f}",
                "multi/bare": med["multi"] / med["bare"],
                "m/b rounds": f"{rc.min():.3f}-{rc.max():.3f}",
                "threads b/w/m": "/".join(
                    str(int(d.loc[d["who"] == c, "threads"].max())) for c in CONTESTANTS
                ),
            }
        )
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7, help="rounds (each contestant once)")
    ap.add_argument("--repeats", type=int, default=5, help="batches per variant per round")
    ap.add_argument("--warmup", type=int, default=1, help="batches thrown away first")
    ap.add_argument("--iters", type=int, default=100_000, help="system calls per batch")
    ap.add_argument("--uring-iters", type=int, default=20_000, help="QD1 round trips per batch")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--cpu", type=int, default=runner.default_cpu(), help="CPU to pin to")
    ap.add_argument("--csv", type=Path, help="write every batch here")
    cfg = ap.parse_args(argv)

    modes = ["sys"]
    probe = live.probe()
    if probe["available"]:
        modes.append("uring")
    else:
        print("io_uring rows skipped:", probe["reason"])

    # (c) is this process with one more thread: numpy is imported, and an idle thread waits
    stop = threading.Event()
    idle = threading.Thread(target=stop.wait, name="idle", daemon=True)
    idle.start()
    rows = []
    with tempfile.TemporaryDirectory(prefix="labkit-bare-") as tmp:
        exe = compile_bare(Path(tmp))
        run = {
            "bare": lambda m, n: run_bare(exe, m, cfg, n),
            "worker": lambda m, n: run_worker(m, cfg, n),
            "multi": lambda m, n: run_multi(m, cfg, n),
        }
        for rnd in range(cfg.rounds):
            order = CONTESTANTS[rnd % 3 :] + CONTESTANTS[: rnd % 3]
            for mode in modes:
                n = cfg.iters if mode == "sys" else cfg.uring_iters
                for who in order:
                    for row in run[who](mode, n):
                        rows.append({**row, "who": who, "mode": mode, "round": rnd})
            sys.stderr.write(f"\rround {rnd + 1}/{cfg.rounds}")
        sys.stderr.write("\n")
    stop.set()
    df = pd.DataFrame(rows)
    if cfg.csv:
        df.to_csv(cfg.csv, index=False)
    table = summarize(df)
    print(
        f"kernel {probe['kernel']}, CPU {cfg.cpu}, clock {cfg.clock}, {cfg.rounds} rounds x "
        f"{cfg.repeats} batches of {cfg.iters} calls ({cfg.uring_iters} QD1 round trips); "
        f"this process: {os.getpid()}"
    )
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False))
    print(
        "bare: benchmarks/bare_read_loop.c; worker: labkit in its single-threaded worker; "
        "multi: labkit's C loop from this multi-threaded process.  ns: medians of all "
        "batches; 'rounds': range of the per-round ratios of medians."
    )
    ok = table["worker/bare"].between(0.95, 1.05)
    print(
        "worker/bare within [0.95, 1.05]: "
        + ", ".join(
            f"{w} {'yes' if k else 'NO'}" for w, k in zip(table["workload"], ok, strict=True)
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
