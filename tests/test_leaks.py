"""Nothing is left behind: failed model set-ups unmap what they mapped, pattern files vanish.

A ``SyscallModel(kernel="x", mem=mem)`` that raises leaves no data or iovec-table
pages mapped in ``mem``; a :class:`labkit.live.PatternFile` leaves nothing in
/dev/shm when its process dies (SIGKILL gives no chance to clean up): the file
has no name from the start.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time

import pytest
from childproc import ROOT

import labkit
from labkit import live
from labkit.models.ubuf import SharedMemory, SyscallModel, UringModel


@pytest.mark.parametrize(
    "make",
    [
        lambda mem: SyscallModel(kernel="x", mem=mem),
        lambda mem: SyscallModel(kernel=(6,), mem=mem),
        lambda mem: UringModel("read", op="nope", mem=mem),
        lambda mem: UringModel("nope", mem=mem),
        lambda mem: SyscallModel(segments=[-1], mem=mem),
    ],
    ids=["bad-kernel", "short-kernel-tuple", "bad-op", "bad-variant", "negative-segment"],
)
def test_a_refused_model_leaves_no_mapping(make):
    mem = labkit.UserMemory()
    with pytest.raises((ValueError, OSError)):
        make(mem)
    assert mem.mappings == []


def test_a_model_failing_after_its_first_mapping_unmaps_it(monkeypatch):
    mem = labkit.UserMemory()
    real_map, calls = mem.map, []

    def map_then_fail(size, **kwargs):
        calls.append(size)
        if len(calls) == 2:
            raise OSError(12, "no memory for the iovec table")
        return real_map(size, **kwargs)

    monkeypatch.setattr(mem, "map", map_then_fail)
    with pytest.raises(OSError):
        SyscallModel(mem=mem)
    assert len(calls) == 2 and mem.mappings == []


def test_a_model_over_shared_memory_refused_leaves_the_shared_mappings():
    shared = SharedMemory()
    before = list(shared.mem.mappings)
    with pytest.raises(ValueError):
        SyscallModel(kernel="x", shared=shared)
    assert shared.mem.mappings == before


def test_a_pattern_file_has_no_name(tmp_path):
    with live.PatternFile(8192, directory=tmp_path) as pf:
        assert os.listdir(tmp_path) == []
        with open(pf.path, "rb") as f:
            assert f.read() == live.pattern_bytes(0, 8192)
        assert os.pread(pf.fd, 16, 100) == pf.expected(100, 16)
        assert fcntl.fcntl(pf.fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY


CHILD = """
import sys, time
from labkit import live
pf = live.PatternFile(1 << 20, directory=sys.argv[1])
print("ready", flush=True)
time.sleep(60)
"""


def test_nothing_is_left_when_the_process_is_killed(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    time.sleep(0.05)
    assert os.listdir(tmp_path) == []
