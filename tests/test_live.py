"""Live kernel experiments: correctness of the C loops on this machine, error paths, probe.

No timing is asserted: the only numbers checked are byte contents, completion
results and counts.  io_uring tests skip, with the probe's reason, where the
kernel or a sandbox refuses io_uring.
"""

from __future__ import annotations

import errno
import os
import platform
import time

import pytest

from labkit import live
from labkit.core import memory
from labkit.experiments import live_kernel
from labkit.results.r1 import experiments as r1_experiments

PROBE = live.probe()
needs_uring = pytest.mark.skipif(not PROBE["available"], reason=PROBE["reason"] or "no io_uring")
LEN = live.DEFAULT_LENGTH


@pytest.fixture
def zero_fd():
    fd = live.open_zero()
    yield fd
    os.close(fd)


@pytest.fixture
def pattern():
    with live.PatternFile(64 * 1024) as pf:
        yield pf


@pytest.fixture
def ring():
    if not PROBE["available"]:
        pytest.skip(PROBE["reason"])
    with live.Ring(16, timeout=2.0) as r:
        yield r


def _closed_fd() -> int:
    fd = live.open_zero()
    os.close(fd)
    return fd


# --------------------------------------------------------------------------- probe and data


def test_probe_shape():
    info = live.probe()
    assert isinstance(info["available"], bool)
    assert isinstance(info["reason"], str) and info["reason"]
    assert info["kernel"] == platform.release()
    if info["available"]:
        assert info["setup_errno"] == 0
        assert all(info["ops"].values())
    else:
        assert (
            not (info["setup_errno"] == 0 and all(info["ops"].values()))
            or "LABKIT_LIVE_URING" in info["reason"]
        )


def test_probe_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("LABKIT_LIVE_URING", "0")
    info = live.probe()
    assert info["available"] is False
    assert "LABKIT_LIVE_URING=0" in info["reason"]


def test_pattern_detects_misplaced_reads():
    base = live.pattern_bytes(0, 2 * LEN)
    assert live.pattern_bytes(LEN, LEN) == base[LEN:]
    assert live.pattern_bytes(1, LEN) != base[:LEN]
    assert live.pattern_bytes(LEN, LEN) != base[:LEN]
    assert len(set(base)) > 200  # not a constant or short cycle


def test_pattern_file_content_and_cleanup(pattern):
    with open(pattern.path, "rb") as f:
        assert f.read() == live.pattern_bytes(0, pattern.size)
    path = pattern.path
    pattern.close()
    assert not path.exists() and pattern.fd == -1


def test_tmpfs_dir_is_writable():
    d = live.tmpfs_dir()
    assert d.is_dir() and os.access(d, os.W_OK)


# --------------------------------------------------------------------------- system calls


def test_syscall_variants_read_the_pattern():
    result = live.verify_syscalls(LEN)
    assert result == {name: True for name in (*live.SYSCALL_VARIANTS, "dev_zero")}, result


@pytest.mark.parametrize("variant", live.SYSCALL_VARIANTS)
def test_syscall_read_at_offsets(variant, pattern):
    for off in (0, 1, LEN - 1, 3 * LEN + 7):
        assert live.syscall_read(variant, pattern.fd, 1000, off) == pattern.expected(off, 1000)


@pytest.mark.parametrize("variant", live.SYSCALL_VARIANTS)
def test_syscall_loops_run(variant, zero_fd, pattern):
    assert live.syscall_ns(variant, zero_fd, iters=200) > 0
    assert live.syscall_ns(variant, pattern.fd, iters=200, offset=LEN) > 0


def test_syscall_variants_for_the_harness(zero_fd):
    runs = live.syscall_variants(zero_fd, iters=100)
    assert set(runs) == set(live.SYSCALL_VARIANTS)
    assert all(run() > 0 for run in runs.values())


@pytest.mark.parametrize("variant", live.SYSCALL_VARIANTS)
def test_syscall_bad_fd_is_ebadf(variant):
    with pytest.raises(OSError) as exc:
        live.syscall_ns(variant, _closed_fd(), iters=10)
    assert exc.value.errno == errno.EBADF


def test_syscall_write_only_fd_is_ebadf(tmp_path):
    fd = os.open(tmp_path / "w", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError) as exc:
            live.syscall_ns("readv1", fd, iters=10, offset=0)
        assert exc.value.errno == errno.EBADF
    finally:
        os.close(fd)


def test_syscall_short_read_is_eio(pattern):
    # 4 KiB at 2 KiB before the end of file: a short read stops the loop.
    with pytest.raises(OSError) as exc:
        live.syscall_ns("read", pattern.fd, iters=10, offset=pattern.size - LEN // 2)
    assert exc.value.errno == errno.EIO


@pytest.mark.parametrize(
    "kwargs", [{"length": 0}, {"iters": 0}, {"offset": -2}, {"length": 1 << 40}]
)
def test_syscall_bad_sizes_are_einval(kwargs, zero_fd):
    with pytest.raises(OSError) as exc:
        live.syscall_ns("read", zero_fd, **{"iters": 10, **kwargs})
    assert exc.value.errno == errno.EINVAL


def test_syscall_unknown_variant(zero_fd):
    with pytest.raises(ValueError):
        live.syscall_ns("write", zero_fd)


def test_read_syscall_ns_fallback():
    assert live.read_syscall_ns(iters=200, batches=2) > 0


# --------------------------------------------------------------------------- io_uring


def test_ring_reads_the_pattern(ring):
    ring.register_buffer(4 << 20)
    result = live.verify_uring(ring, LEN)
    assert result == {
        "read": True,
        "readv1": True,
        "readv_empty": True,
        "readv_split": True,
        "read_fixed_head_tail": True,
    }, result


@pytest.mark.parametrize("op", ["read", "readv1", "readv_empty", "readv_split"])
def test_completion_res_equals_length(ring, pattern, op):
    for length in (2, 100, LEN, 3 * LEN + 5):
        assert ring.submit(op, pattern.fd, length, offset=7) == length
        assert ring.memory(0, length, "scratch") == pattern.expected(7, length)
    if op == "readv_split":  # two halves need at least two bytes
        with pytest.raises(OSError) as exc:
            ring.submit(op, pattern.fd, 1)
        assert exc.value.errno == errno.EINVAL
    else:
        assert ring.read(op, pattern.fd, 1, offset=9) == pattern.expected(9, 1)


def test_read_fixed_lands_at_head_and_tail(ring, pattern):
    size = 2 << 20
    ring.register_buffer(size)
    assert ring.info()["reg_len"] == size
    assert live.fixed_lands_right(ring, pattern, LEN, file_offset=LEN)
    # And an arbitrary unaligned spot in the middle, crossing a page boundary.
    ring.fill(0)
    at = size // 2 - 100
    assert ring.submit("read_fixed", pattern.fd, 300, offset=5, buf_offset=at) == 300
    assert ring.memory(at, 300) == pattern.expected(5, 300)
    assert ring.memory(at - 50, 50) == bytes(50)
    assert ring.memory(at + 300, 50) == bytes(50)


def test_read_fixed_outside_registered_buffer_is_efault(ring, zero_fd):
    with pytest.raises(OSError) as exc:  # nothing registered yet
        ring.submit("read_fixed", zero_fd)
    assert exc.value.errno == errno.EFAULT
    ring.register_buffer(1 << 20)
    with pytest.raises(OSError) as exc:  # the kernel's own range check
        ring.submit("read_fixed", zero_fd, LEN, buf_offset=(1 << 20) - LEN + 1)
    assert exc.value.errno == errno.EFAULT
    assert ring.submit("read_fixed", zero_fd, LEN, buf_offset=(1 << 20) - LEN) == LEN


def test_register_buffer_sizes(ring):
    with pytest.raises(OSError) as exc:
        ring.register_buffer(0)
    assert exc.value.errno == errno.EINVAL
    with pytest.raises(OSError) as exc:  # the kernel caps a registered buffer at 1 GiB
        ring.register_buffer(live.MAX_REGISTERED_BUFFER + memory.PAGE_SIZE)
    assert exc.value.errno == errno.EFAULT
    ring.register_buffer(memory.PAGE_SIZE)
    with pytest.raises(OSError) as exc:
        ring.register_buffer(memory.PAGE_SIZE)
    assert exc.value.errno == errno.EBUSY


def test_scratch_bounds_are_checked(zero_fd):
    if not PROBE["available"]:
        pytest.skip(PROBE["reason"])
    with live.Ring(4, scratch=2 * LEN) as r:
        assert r.submit("read", zero_fd, LEN, buf_offset=LEN) == LEN
        for kwargs in ({"buf_offset": LEN + 1}, {"buf_offset": 3 * LEN}):
            with pytest.raises(OSError) as exc:
                r.submit("read", zero_fd, LEN, **kwargs)
            assert exc.value.errno == errno.EFAULT
        with pytest.raises(OSError) as exc:
            r.submit("readv1", zero_fd, 3 * LEN)
        assert exc.value.errno == errno.EFAULT
        with pytest.raises(OSError) as exc:
            r.submit("read", zero_fd, 0)
        assert exc.value.errno == errno.EINVAL


@pytest.mark.parametrize("op", ["read", "readv1", "readv_empty", "read_fixed"])
def test_bad_fd_completes_with_ebadf(ring, op):
    ring.register_buffer(1 << 20)
    with pytest.raises(OSError) as exc:
        ring.submit(op, _closed_fd())
    assert exc.value.errno == errno.EBADF
    with pytest.raises(OSError) as exc:
        ring.roundtrip_ns(op, _closed_fd(), iters=10)
    assert exc.value.errno == errno.EBADF


def test_registered_files(ring, pattern, zero_fd):
    with pytest.raises(OSError) as exc:  # no table yet
        ring.submit("read", 0, fixed_file=True)
    assert exc.value.errno == errno.EBADF
    ring.register_files([zero_fd, pattern.fd])
    assert ring.info()["nr_files"] == 2
    assert ring.read("read", 1, 64, offset=LEN, fixed_file=True) == pattern.expected(LEN, 64)
    assert ring.read("readv1", 0, 64, fixed_file=True) == bytes(64)
    with pytest.raises(OSError) as exc:
        ring.submit("read", 2, fixed_file=True)
    assert exc.value.errno == errno.EBADF


def test_closed_ring_raises_ebadf(zero_fd):
    if not PROBE["available"]:
        pytest.skip(PROBE["reason"])
    r = live.Ring(4)
    r.close()
    r.close()  # idempotent
    assert r.closed
    calls = [
        lambda: r.submit("read", zero_fd),
        lambda: r.roundtrip_ns("read", zero_fd, iters=1),
        lambda: r.peak("read", zero_fd, depth=1, submit_batch=1, complete_batch=1, ios=1),
        lambda: r.register_buffer(LEN),
        lambda: r.register_files([zero_fd]),
        lambda: r.memory(0, 1, "scratch"),
        lambda: r.info(),
    ]
    for call in calls:
        with pytest.raises(OSError) as exc:
            call()
        assert exc.value.errno == errno.EBADF
    run = None
    with live.Ring(4) as r2:
        run = r2.roundtrip_variant("read", zero_fd, iters=10)
        assert run() > 0
    with pytest.raises(OSError) as exc:
        run()
    assert exc.value.errno == errno.EBADF


def test_a_request_that_never_completes_times_out(zero_fd):
    if not PROBE["available"]:
        pytest.skip(PROBE["reason"])
    rfd, wfd = os.pipe()
    try:
        with live.Ring(4, timeout=0.2) as r:
            t0 = time.monotonic()
            with pytest.raises(OSError) as exc:
                r.submit("read", rfd, 16)  # an empty pipe: never completes by itself
            assert exc.value.errno == errno.ETIME
            assert time.monotonic() - t0 < 10  # bounded (generous: the machine is shared)
            assert r.info()["inflight"] == 1
            with pytest.raises(OSError) as exc:  # still in flight: the ring is busy
                r.submit("read", zero_fd)
            assert exc.value.errno == errno.EBUSY
            os.write(wfd, b"x" * 16)  # lets the stuck read finish; the ring drains
            assert r.submit("read", zero_fd) == LEN
            assert r.info()["inflight"] == 0
        # A ring closed with a request in flight: close must not hang either.
        r = live.Ring(4, timeout=0.1)
        with pytest.raises(OSError):
            r.submit("read", rfd, 16)
        r.close()
    finally:
        os.close(rfd)
        os.close(wfd)


def test_qd1_and_peak_loops(ring, zero_fd):
    ring.register_buffer(1 << 20)
    for op in live.URING_OPS:
        assert ring.roundtrip_ns(op, zero_fd, iters=50) > 0
    res = ring.peak("read", zero_fd, depth=8, submit_batch=4, complete_batch=4, ios=1000)
    assert res.ios == 1000
    assert res.enters >= 1000 / 8  # no enter can complete more than the depth
    assert res.ios_per_enter == pytest.approx(res.ios / res.enters)
    assert res.ios_per_enter > 1  # batching happened (a count, not a time)
    one = ring.peak("read_fixed", zero_fd, depth=1, submit_batch=1, complete_batch=1, ios=100)
    assert one.ios == 100 and one.ios_per_enter <= 1


def test_peak_checks_every_completion(ring, pattern):
    with pytest.raises(OSError) as exc:  # reads at end of file are short
        ring.peak(
            "read",
            pattern.fd,
            offset=pattern.size - 100,
            depth=4,
            submit_batch=2,
            complete_batch=2,
            ios=100,
        )
    assert exc.value.errno == errno.EIO
    assert ring.submit("read", pattern.fd, 8) == 8  # the ring recovers


@pytest.mark.parametrize(
    "kwargs",
    [{"depth": 17}, {"depth": 4, "submit_batch": 5}, {"depth": 4, "complete_batch": 0}, {"ios": 0}],
)
def test_peak_bad_parameters_are_einval(ring, zero_fd, kwargs):
    args = {"depth": 4, "submit_batch": 2, "complete_batch": 2, "ios": 10, **kwargs}
    with pytest.raises(OSError) as exc:
        ring.peak("read", zero_fd, **args)
    assert exc.value.errno == errno.EINVAL


def test_bad_ring_parameters():
    if not PROBE["available"]:
        pytest.skip(PROBE["reason"])
    for kwargs in ({"entries": 0}, {"timeout": 0}, {"scratch": 0}, {"flags": 1 << 1}):
        with pytest.raises(OSError) as exc:
            live.Ring(**{"entries": 4, **kwargs})
        assert exc.value.errno == errno.EINVAL


def test_registered_ring_fd(zero_fd):
    if not PROBE["available"]:
        pytest.skip(PROBE["reason"])
    with live.Ring(4, register_ring_fd=True) as r:
        assert r.info()["registered_ring"] == 1
        assert r.submit("read", zero_fd) == LEN
        assert r.roundtrip_ns("read", zero_fd, iters=20) > 0


@needs_uring
def test_read_fixed_roundtrip_for_notebook_2():
    head = r1_experiments.read_fixed_roundtrip_ns(buffer_size=1 << 20, iters=50, batches=2)
    tail = r1_experiments.read_fixed_roundtrip_ns(
        buffer_size=1 << 20, where="tail", iters=50, batches=2
    )
    assert head > 0 and tail > 0


# --------------------------------------------------------------------------- experiment runners


def test_runners_give_tidy_rows():
    df = live_kernel.run_syscalls("tmpfs", iters=50, repeats=2, warmup=0, runs=2)
    assert len(df) == 2 * 2 * len(live.SYSCALL_VARIANTS)
    assert sorted(set(df["run"])) == [0, 1] and set(df["threads"]) == {1}
    assert set(df["variant"]) == set(live.SYSCALL_VARIANTS)
    assert set(df["target"]) == {"tmpfs"} and set(df["bytes"]) == {LEN}
    if not PROBE["available"]:
        pytest.skip(PROBE["reason"])
    df = live_kernel.run_uring_qd1(
        "zero", ops=("read", "readv1"), iters=20, repeats=2, warmup=0, runs=1
    )
    assert sorted(df["variant"]) == ["read", "read", "readv1", "readv1"]
    df = live_kernel.run_fixed_head_tail(size=1 << 20, iters=20, repeats=2, warmup=0, runs=1)
    assert set(df["pages_skipped"]) == {(1 << 20) // memory.PAGE_SIZE - 1}
    df = live_kernel.run_peak(ops=("read",), depths=(1, 4), ios=64, repeats=2, warmup=1, runs=1)
    assert len(df) == 4
    assert sorted(set(df["depth"])) == [1, 4]
    assert (df.loc[df["depth"] == 1, "ios_per_enter"] <= 1).all()
    assert (df.loc[df["depth"] == 4, "ios_per_enter"] > 1).all()


def test_clock_selection(zero_fd):
    assert live.get_clock() == "wall"
    with live.clock("cpu"):
        assert live.get_clock() == "cpu"
        assert live.syscall_ns("read", zero_fd, iters=100) > 0
    assert live.get_clock() == "wall"
    with pytest.raises(ValueError):
        live.set_clock("sundial")
    assert live.get_clock() == "wall"


CLOSE_WHILE_RUNNING = """
import errno, sys, threading, time
from labkit import live
fd = live.open_zero()
for trial in range(10):
    ring = live.Ring(8, timeout=2.0)
    errors = []
    def worker():
        try:
            for _ in range(1000):
                ring.roundtrip_ns("read", fd, 4096, iters=2000)
        except OSError as exc:
            errors.append(exc.errno)
    t = threading.Thread(target=worker)
    t.start()
    time.sleep(0.005)
    ring.close()
    t.join(60)
    assert not t.is_alive() and errors == [errno.EBADF], errors
print("ok")
"""


def test_close_from_another_thread_waits_for_the_running_batch():
    # cffi releases the GIL: close() in one thread must not unmap and free the
    # ring while another thread's batch is still using it (a segfault)
    if not PROBE["available"]:
        pytest.skip(PROBE["reason"])
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", CLOSE_WHILE_RUNNING], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
