#!/usr/bin/env python3
"""labkit's live loops against fio on the same workload, in the same run (not part of CI).

fio is the tool users already trust for I/O cost.  This script runs, pinned to
one CPU and interleaved round by round, each labkit loop and the fio job that
does the same work:

    labkit                               fio (--ioengine, one job, iodepth 1)
    pread  (variant "read", offset 0)    psync
    preadv (variant "readv1", offset 0)  pvsync
    io_uring READ, QD1                   io_uring
    io_uring READ_FIXED, QD1             io_uring --fixedbufs=1

on /dev/zero and on a file in a tmpfs directory, 4 KiB per call.  It prints
each tool's cost per call: labkit's ns per call from its C loop, fio's wall
time per IO (1e9 / IOPS) and fio's own mean latency.  The difference is the
per-call overhead of fio's engine loop and accounting beyond the system call
itself; labkit's harness should add less.

fio is not installed by this script: ``apt-get install fio`` (Debian package).
Usage: ``python benchmarks/fio_compare.py [--runtime 3] [--repeats 3] [--cpu 0]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from labkit import live


def fio_job(
    engine: str,
    filename: str,
    *,
    runtime: float,
    cpu: int,
    size: int,
    bs: int,
    extra: list[str] | None = None,
    gtod_reduce: bool = False,
) -> dict[str, float]:
    """Run one fio job and return its per-IO costs in ns."""
    cmd = [
        "fio",
        "--name=labkit",
        f"--filename={filename}",
        "--rw=read",
        f"--bs={bs}",
        f"--size={size}",
        f"--ioengine={engine}",
        "--iodepth=1",
        "--numjobs=1",
        f"--cpus_allowed={cpu}",
        "--time_based",
        f"--runtime={runtime}",
        "--output-format=json",
        *(extra or []),
    ]
    if gtod_reduce:
        cmd.append("--gtod_reduce=1")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    data = json.loads(out[out.index("{") :])
    job = data["jobs"][0]
    if job.get("error"):
        raise RuntimeError(f"fio {engine} failed: error {job['error']}")
    rd = job["read"]
    res = {
        "ns_per_io": 1e9 / rd["iops"],
        "iops": rd["iops"],
        "cpu_pct": job["usr_cpu"] + job["sys_cpu"],
    }
    if not gtod_reduce:
        res["lat_ns_mean"] = rd["lat_ns"]["mean"]
    return res


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", type=float, default=3.0, help="seconds per fio job")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin both tools to")
    parser.add_argument("--iters", type=int, default=200_000, help="labkit calls per batch")
    parser.add_argument("--batches", type=int, default=5, help="labkit batches per round")
    parser.add_argument("--targets", default="zero,tmpfs", help="zero, tmpfs or both")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    if shutil.which("fio") is None:
        print("fio not found: install it (Debian/Ubuntu: apt-get install -y fio)", file=sys.stderr)
        return 2
    info = live.probe()
    fio_version = subprocess.run(
        ["fio", "--version"], capture_output=True, text=True
    ).stdout.strip()
    print(f"kernel {info['kernel']}, {fio_version}, io_uring: {info['reason']}")
    print(f"pinned to CPU {args.cpu}; {args.repeats} interleaved rounds; 4 KiB per call\n")

    bs = live.DEFAULT_LENGTH
    old_affinity = os.sched_getaffinity(0)
    rows: list[dict[str, object]] = []
    tmpdir = tempfile.mkdtemp(prefix="labkit-fio-", dir=live.tmpfs_dir())
    try:
        os.sched_setaffinity(0, {args.cpu})
        targets: dict[str, str] = {}
        if "zero" in args.targets:
            targets["/dev/zero"] = "/dev/zero"
        if "tmpfs" in args.targets:
            path = Path(tmpdir) / "data"
            path.write_bytes(live.pattern_bytes(0, 64 * 1024))
            targets[f"tmpfs ({live.tmpfs_dir()})"] = str(path)
        for label, filename in targets.items():
            fd = os.open(filename, os.O_RDONLY)
            ring = live.Ring(8, register_ring_fd=False) if info["available"] else None
            if ring is not None:
                ring.register_buffer(1 << 20)
            size = 64 * 1024
            pairs: list[tuple[str, Callable[[], float] | None, str, list[str]]] = [
                (
                    "pread / psync",
                    live.syscall_variants(fd, iters=args.iters, offset=0, names=("read",))["read"],
                    "psync",
                    [],
                ),
                (
                    "preadv(1) / pvsync",
                    live.syscall_variants(fd, iters=args.iters, offset=0, names=("readv1",))[
                        "readv1"
                    ],
                    "pvsync",
                    [],
                ),
            ]
            if ring is not None:
                qd1 = max(args.iters // 10, 1000)
                pairs += [
                    (
                        "io_uring READ QD1 / io_uring",
                        ring.roundtrip_variant("read", fd, iters=qd1),
                        "io_uring",
                        [],
                    ),
                    (
                        "io_uring READ_FIXED QD1 / io_uring fixedbufs",
                        ring.roundtrip_variant("read_fixed", fd, iters=qd1),
                        "io_uring",
                        ["--fixedbufs=1"],
                    ),
                ]
            samples: dict[str, dict[str, list[float]]] = {
                name: {"labkit": [], "fio": [], "fio_lat": [], "fio_min": []} for name, *_ in pairs
            }
            for _ in range(args.repeats):
                for name, run, engine, extra in pairs:
                    assert run is not None
                    run()  # warm-up
                    samples[name]["labkit"].append(
                        statistics.median(run() for _ in range(args.batches))
                    )
                    full = fio_job(
                        engine,
                        filename,
                        runtime=args.runtime,
                        cpu=args.cpu,
                        size=size,
                        bs=bs,
                        extra=extra,
                    )
                    lean = fio_job(
                        engine,
                        filename,
                        runtime=args.runtime,
                        cpu=args.cpu,
                        size=size,
                        bs=bs,
                        extra=extra,
                        gtod_reduce=True,
                    )
                    samples[name]["fio"].append(full["ns_per_io"])
                    samples[name]["fio_lat"].append(full["lat_ns_mean"])
                    samples[name]["fio_min"].append(lean["ns_per_io"])
            if ring is not None:
                ring.close()
            os.close(fd)
            print(f"== {label}")
            print(
                f"{'workload':46s} {'labkit':>9s} {'fio':>9s} {'fio lat':>9s} "
                f"{'fio gtod_reduce':>16s} {'fio - labkit':>13s}"
            )
            for name, s in samples.items():
                lk = statistics.median(s["labkit"])
                fio = statistics.median(s["fio"])
                lat = statistics.median(s["fio_lat"])
                lean = statistics.median(s["fio_min"])
                print(f"{name:46s} {lk:9.0f} {fio:9.0f} {lat:9.0f} {lean:16.0f} {fio - lk:13.0f}")
                rows.append(
                    {
                        "target": label,
                        "workload": name,
                        "labkit_ns": lk,
                        "fio_ns_per_io": fio,
                        "fio_lat_ns_mean": lat,
                        "fio_gtod_reduce_ns_per_io": lean,
                        "samples": s,
                    }
                )
            print()
        print(
            "ns per call (medians of rounds). labkit: its C loop's time per call. fio: wall "
            "time per IO (1e9/IOPS); 'fio lat': fio's mean submit-to-completion latency; "
            "gtod_reduce: fio with its clock calls reduced."
        )
    finally:
        os.sched_setaffinity(0, old_affinity)
        shutil.rmtree(tmpdir, ignore_errors=True)
    if args.json:
        args.json.write_text(
            json.dumps({"kernel": info["kernel"], "fio": fio_version, "rows": rows}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
