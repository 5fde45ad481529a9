#!/usr/bin/env python3
"""labkit's live loop in its single-threaded worker against a bare single-threaded C loop.

The published read-zero figures (R2) came from a single-threaded C program.
A system call made from a process with more than one thread pays for the
shared file table on every call (the kernel's ``fdget()`` fast path is for an
unshared one; see :mod:`labkit.measure.threads`), so labkit measures its live
loops in spawned single-threaded workers.  This benchmark shows, side by side
in one run, on one pinned CPU, with the same clock, what that buys.  Three
processes, all pinned to the same CPU, each serving batches on request:

    bare    benchmarks/bare_read_loop.c, compiled here with gcc -O2: the same
            calls in a bare single-threaded C program
    worker  labkit's live loop (labkit.live: syscall_variants, Ring.roundtrip_variant,
            the C loops the experiments run) in a process started as a labkit
            worker is (labkit.measure.workers: pinned and thread pools at one
            before numpy is imported): exactly one thread, checked
    multi   the same, plus one idle Python thread: a multi-threaded process
            (a notebook kernel has a dozen)

for read(/dev/zero, 4 KiB), readv(1 x 4 KiB), readv(4 KiB + empty) and io_uring
READ at queue depth 1.  The driver interleaves single batches: in each round,
every variant (order rotated) is run by the three processes one after the
other (order rotated), so a change of load hits the three alike; each round's
three batches are adjacent in time, and their ratios are paired.

Printed per workload: the median ns per call of each process, worker/bare and
multi/bare as the ratio of the medians and as the median [interquartile range]
of the per-round paired ratios (target for worker/bare: within [0.95, 1.05]).
Then, as a cross-check (not interleaved), what the notebooks' own path gives:
``live_kernel.run_syscalls`` / ``run_uring_qd1`` in ``--notebook-runs`` workers.
Timing lives here, not in the tests.

Usage: ``python benchmarks/live_vs_bare_c.py [--rounds 30] [--clock cpu] [--cpu N]
[--csv out.csv]``.  Needs gcc; io_uring rows are skipped (with the reason)
where the kernel refuses io_uring.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "bare_read_loop.c"
VARIANTS = {"sys": ("read", "readv1", "readv_empty"), "uring": ("read",)}
CONTESTANTS = ("bare", "worker", "multi")
LENGTH = 4096

# What the worker and multi processes run: pinned before anything imports numpy (as
# labkit.measure.workers starts a worker), then labkit's live loops, batch by batch.
_SERVER = """\
import json, os, sys, threading
spec = json.loads(sys.argv[1])
os.sched_setaffinity(0, {spec["cpu"]})
sys.path[:] = spec["path"] + [p for p in sys.path if p not in spec["path"]]
stop = threading.Event()
if spec["extra_thread"]:
    threading.Thread(target=stop.wait, name="idle", daemon=True).start()
from labkit import live
from labkit.measure import threads
live.set_clock(spec["clock"])
fd = live.open_zero()
n, length = spec["iters"], spec["length"]
if spec["mode"] == "sys":
    run = live.syscall_variants(fd, length=length, iters=n, names=spec["variants"])
else:
    ring = live.Ring(8)
    ring.register_buffer(1 << 20)
    run = {"read": ring.roundtrip_variant("read", fd, length, iters=n, offset=0)}
print("ready", threads.count_threads().total, flush=True)
for line in sys.stdin:
    req = line.split()
    if req == ["threads"]:
        print(threads.count_threads().total, flush=True)
        continue
    if int(req[1]) != spec["iters"]:
        raise SystemExit(f"iters {req[1]} != {spec['iters']}")
    print(f"{run[req[0]]():.3f}", flush=True)
"""


class Server:
    """One pinned process that runs a batch per request line and answers ns per call."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.name = name
        self.log_path = log
        self._log = open(log, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
        )
        first = self._readline(120).split()
        if first[:1] != ["ready"]:
            raise RuntimeError(f"{name}: did not start: {first} {self._stderr()}")
        self.threads = int(first[1])

    def _stderr(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-2000:]

    def _readline(self, timeout: float) -> str:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            raise RuntimeError(f"{self.name}: no answer within {timeout} s: {self._stderr()}")
        return line

    def ask(self, request: str, timeout: float = 300) -> float:
        self.proc.stdin.write(request + "\n")
        self.proc.stdin.flush()
        return float(self._readline(timeout))

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()


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


def start_servers(exe: Path, mode: str, cfg: argparse.Namespace, tmp: Path) -> dict[str, Server]:
    from labkit.measure import workers

    env = {**os.environ, **workers.THREAD_ENV}
    iters = cfg.iters if mode == "sys" else cfg.uring_iters
    servers = {
        "bare": Server(
            "bare", [str(exe), "serve", mode, str(cfg.cpu), cfg.clock], env, tmp / "bare.log"
        )
    }
    for name, extra in (("worker", False), ("multi", True)):
        spec = {
            "cpu": cfg.cpu,
            "path": workers._search_path(),
            "extra_thread": extra,
            "clock": cfg.clock,
            "mode": mode,
            "length": LENGTH,
            "iters": iters,
            "variants": list(VARIANTS[mode]),
        }
        argv = [sys.executable, "-S", "-P", "-c", _SERVER, json.dumps(spec)]
        servers[name] = Server(name, argv, env, tmp / f"{name}.log")
    return servers


def interleaved(servers: dict[str, Server], mode: str, cfg: argparse.Namespace) -> list[dict]:
    """Warm-up rounds, then rounds of single batches, variants and processes rotated."""
    iters = cfg.iters if mode == "sys" else cfg.uring_iters
    names = VARIANTS[mode]
    rows = []
    for rnd in range(cfg.warmup + cfg.rounds):
        for i in range(len(names)):
            variant = names[(i + rnd) % len(names)]
            for j in range(len(CONTESTANTS)):
                who = CONTESTANTS[(j + rnd) % len(CONTESTANTS)]
                ns = servers[who].ask(f"{variant} {iters}")
                if rnd >= cfg.warmup:
                    rows.append(
                        {"mode": mode, "variant": variant, "who": who, "round": rnd, "ns": ns}
                    )
    return rows


def summarize(df: Any, threads: dict[tuple[str, str], int]) -> Any:
    """Per workload: medians, ratios of medians, and paired per-round ratios (median [IQR])."""
    import pandas as pd

    out = []
    order = [(m, v) for m in VARIANTS for v in VARIANTS[m]]
    for (mode, variant), d in sorted(
        df.groupby(["mode", "variant"]), key=lambda g: order.index(g[0])
    ):
        wide = d.pivot(index="round", columns="who", values="ns")
        row: dict[str, Any] = {"workload": "io_uring READ QD1" if mode == "uring" else variant}
        for who in CONTESTANTS:
            row[f"{who} ns"] = wide[who].median()
        for who in ("worker", "multi"):
            paired = wide[who] / wide["bare"]
            q1, med, q3 = paired.quantile([0.25, 0.5, 0.75])
            row[f"{who}/bare"] = wide[who].median() / wide["bare"].median()
            row[f"{who}/bare paired"] = f"{med:.3f} [{q1:.3f}, {q3:.3f}]"
        row["threads b/w/m"] = "/".join(str(threads[(mode, who)]) for who in CONTESTANTS)
        out.append(row)
    return pd.DataFrame(out)


def notebook_path(cfg: argparse.Namespace, modes: list[str]) -> list[str]:
    """Medians from the notebooks' own calls (in workers, not interleaved with the above)."""
    from labkit.experiments import live_kernel

    lines = []
    for mode in modes:
        if mode == "sys":
            df = live_kernel.run_syscalls(
                "zero",
                names=VARIANTS["sys"],
                iters=cfg.iters,
                repeats=cfg.notebook_repeats,
                warmup=1,
                clock_name=cfg.clock,
                cpu=cfg.cpu,
                runs=cfg.notebook_runs,
            )
        else:
            df = live_kernel.run_uring_qd1(
                "zero",
                ops=("read",),
                iters=cfg.uring_iters,
                repeats=cfg.notebook_repeats,
                warmup=1,
                clock_name=cfg.clock,
                cpu=cfg.cpu,
                runs=cfg.notebook_runs,
            )
        for variant, d in df.groupby("variant", sort=False):
            name = "io_uring READ QD1" if mode == "uring" else variant
            lines.append(
                f"  {name:18s} {d['ns_per_op'].median():8.1f} ns  ({d['run'].nunique()} runs, "
                f"threads {sorted(set(d['threads']))}, io threads {sorted(set(d['io_threads']))})"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    from labkit import live
    from labkit.measure import runner

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30, help="rounds kept (one batch each)")
    ap.add_argument("--warmup", type=int, default=2, help="rounds thrown away first")
    ap.add_argument("--iters", type=int, default=50_000, help="system calls per batch")
    ap.add_argument("--uring-iters", type=int, default=20_000, help="QD1 round trips per batch")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--cpu", type=int, default=runner.default_cpu(), help="CPU to pin to")
    ap.add_argument("--notebook-runs", type=int, default=3, help="workers of the cross-check")
    ap.add_argument("--notebook-repeats", type=int, default=5, help="repeats per cross-check run")
    ap.add_argument("--csv", type=Path, help="write every batch here")
    cfg = ap.parse_args(argv)

    modes = ["sys"]
    probe = live.probe()
    if probe["available"]:
        modes.append("uring")
    else:
        print("io_uring rows skipped:", probe["reason"])

    rows: list[dict] = []
    threads: dict[tuple[str, str], int] = {}
    with tempfile.TemporaryDirectory(prefix="labkit-bare-") as tmpdir:
        tmp = Path(tmpdir)
        exe = compile_bare(tmp)
        for mode in modes:
            servers = start_servers(exe, mode, cfg, tmp)
            try:
                rows += interleaved(servers, mode, cfg)
                for who, server in servers.items():
                    after = int(server.ask("threads"))
                    threads[(mode, who)] = max(server.threads, after)
            finally:
                for server in servers.values():
                    server.close()
    df = pd.DataFrame(rows)
    if cfg.csv:
        df.to_csv(cfg.csv, index=False)
    table = summarize(df, threads)
    print(
        f"kernel {probe['kernel']}, CPU {cfg.cpu}, clock {cfg.clock}, {cfg.rounds} rounds of "
        f"single batches ({cfg.iters} calls, {cfg.uring_iters} QD1 round trips), interleaved"
    )
    with pd.option_context("display.width", 220, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False))
    ok = table["worker/bare"].between(0.95, 1.05)
    print(
        "worker/bare (ratio of medians) within [0.95, 1.05]: "
        + ", ".join(
            f"{w} {'yes' if k else 'NO'}" for w, k in zip(table["workload"], ok, strict=True)
        )
    )
    print("cross-check, the notebooks' path (labkit.experiments.live_kernel in workers):")
    for line in notebook_path(cfg, modes):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
