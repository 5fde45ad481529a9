"""The kernel oracle's build lock: one build of an era at a time, across processes.

pytest-xdist's workers and ``.ci/run``'s background build may ask for the same era at once;
``labkit.kernelsrc.tree.locked`` holds an exclusive ``flock`` on ``<build>.lock`` (and on
``<tree>.lock`` while extracting), so the second waits and then finds the first's build.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys

import pytest

from labkit.kernelsrc import tree


def _try_lock(path) -> bool:
    """True if a lock on ``path`` could be taken now (from a new open file, not waiting)."""
    with path.open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def test_the_lock_is_held_inside_and_released_after(tmp_path):
    lock = tmp_path / "sub" / "era.lock"
    with tree.locked(lock):
        assert lock.exists()
        assert not _try_lock(lock)  # another thread of this process would wait
    assert _try_lock(lock)


def test_the_lock_is_released_when_the_block_raises(tmp_path):
    lock = tmp_path / "era.lock"
    with pytest.raises(RuntimeError), tree.locked(lock):
        raise RuntimeError("a failed build")
    assert _try_lock(lock)


def test_another_process_cannot_take_the_lock(tmp_path):
    lock = tmp_path / "era.lock"
    probe = (
        "import fcntl, sys\n"
        "f = open(sys.argv[1], 'a')\n"
        "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except BlockingIOError:\n    sys.exit(3)\n"
    )
    with tree.locked(lock):
        held = subprocess.run([sys.executable, "-c", probe, str(lock)], timeout=60)
    free = subprocess.run([sys.executable, "-c", probe, str(lock)], timeout=60)
    assert (held.returncode, free.returncode) == (3, 0)
