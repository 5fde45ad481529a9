"""The seeded random-operation fuzzer (labkit.testing.fuzz_driver), short: a few thousand calls.

Each seed runs in its own child process, so a crash fails this test with the
seed and signal named (rerun it with ``python -m labkit.testing.fuzz_driver --seed S
--calls N``).  Under tests/run_sanitized.py the children inherit the sanitized
build.  The long campaign (100,000 calls, both builds) is benchmarks/fuzz.py.
"""

from __future__ import annotations

import json

import pytest
from childproc import describe, run_python

pytestmark = pytest.mark.slow  # make test-fast leaves it out

DRIVER = ["-m", "labkit.testing.fuzz_driver"]
SEEDS = [11, 12, 13, 14]
CALLS = 1500


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzer_finds_no_crash_hang_or_stray_write(seed):
    proc = run_python([*DRIVER, "--seed", str(seed), "--calls", str(CALLS)], timeout=240)
    assert proc.returncode == 0, f"seed {seed}: " + describe(proc)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["calls"] >= CALLS and summary["thread_calls"] > 0, summary
    assert (summary["unexpected"], summary["stray_bytes"], summary["hangs"]) == (0, 0, 0)
    print(f"fuzz seed {seed}: {summary}")


def test_the_fuzzer_sees_a_stray_write(monkeypatch):
    """The guards work: a write just past an arena, made behind labkit's back, is seen."""
    from labkit.testing import fuzz_driver
    from labkit.testing.fuzz_inputs import GUARD

    fuzzer = fuzz_driver.Fuzzer(1)
    arena = fuzzer.arena()
    base = arena.base if arena.base is not None else arena
    # the arena is a slice of a larger array whose tail guard follows it
    whole = base[: GUARD + len(arena) + GUARD]
    whole[GUARD + len(arena)] ^= 0xFF
    fuzzer.check_guards()
    assert fuzzer.stray == 1
