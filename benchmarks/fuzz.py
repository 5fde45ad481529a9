#!/usr/bin/env python3
"""The random-operation fuzzer at length, on the normal and the sanitized build.

The long form of tests/test_fuzz.py: ``--calls`` calls in all (default
100,000), in chunks of ``--chunk`` calls, each chunk a child process running
``python -m labkit.testing.fuzz_driver`` with its own seed (so a crash ends one chunk, is counted,
and the campaign goes on).  ``--build sanitized`` compiles the C core with
ASan + UBSan (tests/run_sanitized.py) and runs the children against it;
``both`` (the default) runs the campaign once on each build.  Prints, per
build: calls (and the calls the fuzzer's threads made), crashes, hangs, stray
bytes written outside the buffers, unexpected exceptions, and the seeds of
any failing chunk.  Exits 1 if any count but the calls is not 0.

    python benchmarks/fuzz.py [--calls 100000] [--chunk 2500] [--seed 1] [--build both]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ["-m", "labkit.testing.fuzz_driver"]


def _load_run_sanitized():
    """tests/run_sanitized.py (the sanitized build), a script of the suite, from its file."""
    spec = importlib.util.spec_from_file_location(
        "run_sanitized", ROOT / "tests" / "run_sanitized.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Campaign:
    """The counts of one build's campaign."""

    build: str
    calls: int = 0
    thread_calls: int = 0
    crashes: int = 0
    hangs: int = 0
    stray_bytes: int = 0
    unexpected: int = 0
    seconds: float = 0.0
    failed_seeds: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.crashes or self.hangs or self.stray_bytes or self.unexpected)

    def line(self) -> str:
        return (
            f"{self.build:>9}: {self.calls:,} calls (+{self.thread_calls:,} from threads), "
            f"{self.crashes} crashes, {self.hangs} hangs, {self.stray_bytes} stray bytes, "
            f"{self.unexpected} unexpected exceptions, {self.seconds:.0f} s"
        )


def run_chunk(c: Campaign, seed: int, calls: int, env: dict[str, str], timeout: float) -> None:
    """One child; its outcome added to ``c``."""
    cmd = [sys.executable, *DRIVER, "--seed", str(seed), "--calls", str(calls)]
    try:
        proc = subprocess.run(
            cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        c.hangs += 1
        c.failed_seeds.append(f"{seed} (no end after {timeout:.0f} s)")
        return
    try:
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        summary = None
    if summary is None:  # died before its summary: a signal, or a sanitizer's abort
        c.crashes += 1
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1][:160]
        c.failed_seeds.append(f"{seed} (status {proc.returncode}: {tail})")
        return
    c.calls += summary["calls"]
    c.thread_calls += summary["thread_calls"]
    c.stray_bytes += summary["stray_bytes"]
    c.unexpected += summary["unexpected"]
    c.hangs += summary["hangs"]
    if proc.returncode != 0:
        c.failed_seeds.append(f"{seed} (status {proc.returncode})")


def campaign(build: str, env: dict[str, str], args: argparse.Namespace) -> Campaign:
    c = Campaign(build)
    start = time.monotonic()
    seed, left = args.seed, args.calls
    while left > 0:
        n = min(args.chunk, left)
        run_chunk(c, seed, n, env, args.timeout)
        seed, left = seed + 1, left - n
        if args.progress:
            print(f"\r{build}: {args.calls - left:,}/{args.calls:,} calls", end="", file=sys.stderr)
    if args.progress:
        print(file=sys.stderr)
    c.seconds = time.monotonic() - start
    return c


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=2_500, help="calls per child process")
    parser.add_argument("--seed", type=int, default=1, help="seed of the first chunk")
    parser.add_argument("--build", choices=["normal", "sanitized", "both"], default="both")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per chunk")
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    args = parser.parse_args(argv)
    if args.calls < 1 or args.chunk < 1:
        parser.error("--calls and --chunk must be >= 1")
    normal_env = dict(os.environ)
    normal_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), normal_env.get("PYTHONPATH")) if p
    )
    normal_env.pop("LABKIT_EXT_PATH", None)
    results: list[Campaign] = []
    if args.build in ("normal", "both"):
        results.append(campaign("normal", normal_env, args))
    if args.build in ("sanitized", "both"):
        run_sanitized = _load_run_sanitized()
        libasan = run_sanitized.find_libasan()
        if libasan is None:
            print("fuzz: gcc or libasan is missing: no sanitized campaign", file=sys.stderr)
        else:
            with tempfile.TemporaryDirectory(prefix="labkit-fuzz-asan-") as tmp:
                so = run_sanitized.build(Path(tmp))
                env = run_sanitized.sanitized_env(so, libasan)
                env["PYTHONPATH"] = normal_env["PYTHONPATH"]
                results.append(campaign("sanitized", env, args))
    for c in results:
        print(c.line())
        for s in c.failed_seeds:
            print(f"           failing chunk: seed {s}")
    return 0 if all(c.clean for c in results) else 1


if __name__ == "__main__":
    sys.exit(main())
