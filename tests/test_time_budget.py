"""Every C timing loop is bounded by a time budget, and iters=0 is EINVAL.

A batch of 2**62 iterations would run for hours; with a budget of a fraction
of a second each loop must stop with OSError(ETIMEDOUT).  Nothing here times
anything: the wall-clock bound (WALL_LIMIT) only tells a stopped loop from a
hung one, and is generous.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import labkit
from labkit import ITER_DEST, ITER_SOURCE, IovIter, budget, live
from labkit.measure import timers
from labkit.models import ubuf

HUGE = 2**62
BUDGET = 0.05  # seconds
WALL_LIMIT = 30.0  # seconds: far above BUDGET, far below "hours"
ROOT = Path(__file__).resolve().parent.parent
PROBE = live.probe()


def _stops(fn: Callable[[], object]) -> None:
    """``fn`` (a huge batch) raises OSError(ETIMEDOUT) under a small budget, promptly."""
    start = time.monotonic()
    with budget.time_budget_of(BUDGET), pytest.raises(OSError) as err:
        fn()
    assert err.value.errno == errno.ETIMEDOUT, err.value
    assert "time budget" in str(err.value)
    assert time.monotonic() - start < WALL_LIMIT


def _registered():
    mem = labkit.UserMemory()
    m = mem.map(1 << 20)
    return mem, labkit.register_buffer(mem, m.addr, 1 << 20)


def _core_loops() -> dict[str, Callable[[], object]]:
    buf, src = bytearray(4096), bytes(4096)
    dest, source = IovIter.ubuf(ITER_DEST, buf), IovIter.ubuf(ITER_SOURCE, src)
    mem, reg = _registered()
    return {
        "empty": lambda: timers.time_empty(HUGE),
        "clock": lambda: timers.time_clock(HUGE),
        "memcpy": lambda: timers.time_memcpy(buf, src, 64, HUGE),
        "copy_to_iter": lambda: timers.time_copy_to_iter(dest, src, 64, HUGE),
        "copy_from_iter": lambda: timers.time_copy_from_iter(source, buf, 64, HUGE),
        "advance": lambda: timers.time_advance(dest, 64, HUGE),
        "fixed_seek": lambda: (mem, timers.time_fixed_seek(reg, 8192, 4096, "walk-2019", HUGE)),
        "fixed_submit": lambda: timers.time_fixed_submit(reg, 8192, 4096, "shift", HUGE),
        "syscall model": lambda: ubuf.SyscallModel("readv", "6.3").time(HUGE),
        "uring model": lambda: ubuf.UringModel("readv-rewrite", defer_every=3).time(HUGE),
        "syscall model, counted": lambda: ubuf.SyscallModel("readv", "6.4").work(HUGE),
        "uring model, counted": lambda: ubuf.UringModel("read", defer_every=2).work(HUGE),
    }


@pytest.mark.parametrize("name", sorted(_core_loops()))
def test_model_and_core_loops_stop_at_the_budget(name):
    _stops(_core_loops()[name])


@pytest.mark.parametrize("variant", live.SYSCALL_VARIANTS)
def test_syscall_loops_stop_at_the_budget(variant):
    fd = live.open_zero()
    try:
        _stops(lambda: live.syscall_ns(variant, fd, iters=HUGE))
    finally:
        os.close(fd)


@pytest.mark.skipif(not PROBE["available"], reason=PROBE["reason"] or "no io_uring")
def test_uring_loops_stop_at_the_budget_and_the_ring_stays_usable():
    fd = live.open_zero()
    try:
        with live.Ring(16, timeout=2.0) as ring:
            _stops(lambda: ring.roundtrip_ns("read", fd, iters=HUGE))
            _stops(lambda: ring.peak("readv1", fd, depth=8, submit_batch=4, ios=HUGE))
            # the requests a stopped peak batch left in flight are drained first
            assert ring.submit("read", fd, 64) == 64
            assert ring.roundtrip_ns("read", fd, iters=10) > 0
    finally:
        os.close(fd)


def test_iters_zero_is_einval_everywhere():
    fd = live.open_zero()
    mem, reg = _registered()
    calls = {
        "time_empty": lambda: timers.time_empty(0),
        "time_fixed_seek": lambda: timers.time_fixed_seek(reg, 0, 4096, "shift", 0),
        "model": lambda: ubuf.SyscallModel().time(0),
        "syscall": lambda: live.syscall_ns("read", fd, iters=0),
    }
    try:
        for name, fn in calls.items():
            with pytest.raises(OSError) as err:
                fn()
            assert err.value.errno == errno.EINVAL, name
    finally:
        os.close(fd)
    del mem


def test_the_c_kernels_refuse_iters_zero_themselves():
    """The C contract, without the Python checks in front: -EINVAL, never 0.0 or -1."""
    from labkit._ffi import ffi, lib

    dst, src = ffi.new("char[]", 64), ffi.new("char[]", 64)
    assert lib.lk_time_empty(0) == -errno.EINVAL
    assert lib.lk_time_clock(0) == -errno.EINVAL
    assert lib.lk_time_memcpy(dst, src, 64, 0) == -errno.EINVAL
    assert lib.lk_time_syscall(live.VARIANTS["read"].id, 0, dst, 64, -1, 0) == -errno.EINVAL
    mem, reg = _registered()
    assert lib.lk_time_fixed_seek(reg.c_buf, 0, 64, 0, 0) == -errno.EINVAL
    assert lib.lk_time_fixed_seek(reg.c_buf, 2 << 20, 64, 0, 10) == -errno.EFAULT
    del mem


def test_budget_setting():
    before = budget.time_budget()
    assert before > 0
    with budget.time_budget_of(1.5):
        assert budget.time_budget() == pytest.approx(1.5)
    assert budget.time_budget() == pytest.approx(before)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            budget.set_time_budget(bad)
    # a normal batch is far inside the budget
    assert np.isfinite(timers.time_empty(1000))


def _child(code: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_ctrl_c_interrupts_a_huge_batch():
    """SIGINT during a batch of 2**62 iterations ends the program (KeyboardInterrupt).

    The child installs Python's own SIGINT handler first: a test run started in the
    background by a non-interactive shell (``cmd &``) inherits SIGINT ignored, and Python
    then leaves it ignored, so the batch would end at its budget with TimeoutError instead.
    """
    child = _child(
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from labkit.measure import timers; print('ready', flush=True); "
        f"timers.time_empty({HUGE})",
        LABKIT_TIME_BUDGET="1",
    )
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    try:
        _, err = child.communicate(timeout=WALL_LIMIT)
    finally:
        child.kill()
    assert "KeyboardInterrupt" in err, err


def test_budget_from_the_environment():
    """LABKIT_TIME_BUDGET is read when a batch needs it: the first batch stops at it."""
    child = _child(
        f"from labkit.measure import timers\ntry:\n    timers.time_empty({HUGE})\n"
        "except TimeoutError as exc:\n    print(exc)\n",
        LABKIT_TIME_BUDGET="0.2",
    )
    out, err = child.communicate(timeout=WALL_LIMIT)
    assert "time budget of 0.2 s" in out, err
    child = _child(
        "from labkit import budget; print(budget.time_budget())", LABKIT_TIME_BUDGET="2.5"
    )
    out, err = child.communicate(timeout=WALL_LIMIT)
    assert float(out) == pytest.approx(2.5), err


def test_a_bad_budget_setting_fails_the_batch_not_the_import():
    code = (
        "import labkit\nfrom labkit.measure import timers\nprint('imported', flush=True)\n"
        "timers.time_empty(10)\n"
    )
    child = _child(code, LABKIT_TIME_BUDGET="soon")
    out, err = child.communicate(timeout=WALL_LIMIT)
    assert out.strip() == "imported", err
    assert child.returncode != 0 and "ValueError: LABKIT_TIME_BUDGET='soon'" in err
