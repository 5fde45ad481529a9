"""io_uring rings: registered ring descriptors are given back, and reads are atomic.

A registered ring fd (``IORING_REGISTER_RING_FDS``) lives in the registering
thread's io_uring context, which holds at most 16 of them, and it keeps the
ring (and its memory) alive after ``close(fd)``; ``Ring.close`` unregisters
it.  ``Ring.read`` submits and copies the bytes out in one critical section,
so two threads sharing a ring each get the bytes of their own request.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from labkit import live

PROBE = live.probe()
pytestmark = pytest.mark.skipif(not PROBE["available"], reason=PROBE["reason"] or "no io_uring")


def _in_fresh_thread(fn):
    """Run ``fn`` in a new thread (its own io_uring task context); re-raise what it raised."""
    out: list = []

    def run() -> None:
        try:
            out.append(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out.append(("err", exc))

    t = threading.Thread(target=run)
    t.start()
    t.join(120)
    assert out, "the thread did not finish"
    kind, value = out[0]
    if kind == "err":
        raise value
    return value


def test_twenty_rings_with_registered_fds_open_and_close_in_one_thread():
    def open_close_20() -> list[int]:
        done = []
        zfd = live.open_zero()
        try:
            for k in range(20):  # the 17th failed with EBUSY before close() unregistered
                with live.Ring(4, register_ring_fd=True) as r:
                    assert r.info()["registered_ring"] == 1
                    assert r.submit("read", zfd) == live.DEFAULT_LENGTH
                done.append(k)
        finally:
            os.close(zfd)
        return done

    assert _in_fresh_thread(open_close_20) == list(range(20))


def test_two_threads_reading_through_one_ring_get_their_own_bytes():
    reads, length = 1500, 512
    with live.PatternFile(64 * 1024) as pf, live.Ring(8, timeout=5.0) as ring:
        wrong: list[tuple[int, int]] = []

        def reader(k: int) -> None:
            for n in range(reads):
                offset = ((n * 2 + k) % 64) * 1024  # the two threads never read the same offset
                got = ring.read("read", pf.fd, length, offset=offset, buf_offset=0)
                if got != pf.expected(offset, length):
                    wrong.append((k, n))

        threads = [threading.Thread(target=reader, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not any(t.is_alive() for t in threads)
    assert wrong == [], f"{len(wrong)} of {2 * reads} reads returned another request's bytes"


def _pinned_kib() -> int | None:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmPin:"):
                return int(line.split()[1])
    return None


def test_a_closed_ring_with_a_registered_fd_unpins_its_buffer():
    """Before close() unregistered the ring fd, the ring and its pinned pages stayed."""
    if _pinned_kib() is None:
        pytest.skip("this kernel does not report VmPin")

    def four_rings() -> tuple[int, int]:
        before = _pinned_kib()
        for _ in range(4):
            with live.Ring(4, register_ring_fd=True) as r:
                r.register_buffer(16 << 20)
        deadline = time.monotonic() + 20  # the kernel tears rings down asynchronously
        while _pinned_kib() > before and time.monotonic() < deadline:
            time.sleep(0.05)
        return before, _pinned_kib()

    before, after = _in_fresh_thread(four_rings)
    assert after <= before, f"{after - before} KiB still pinned after closing the rings"
