"""Correctness of the live loops: every variant reads exactly the expected bytes."""

from __future__ import annotations

import os
from collections.abc import Sequence

from labkit.core.memory import PAGE_SIZE
from labkit.live.ring import Ring
from labkit.live.sources import PatternFile, open_zero
from labkit.live.syscalls import syscall_read
from labkit.live.variants import DEFAULT_LENGTH, SYSCALL_VARIANTS, URING_OPS, VARIANTS


def verify_syscalls(
    length: int = DEFAULT_LENGTH,
    file_size: int = 64 * 1024,
    offsets: Sequence[int] = (0, 4096, 12345),
) -> dict[str, bool]:
    """Every system call variant returns exactly the pattern bytes at each offset.

    Returns ``{variant: ok}``; also checks that /dev/zero reads are all zero.
    """
    result: dict[str, bool] = {}
    with PatternFile(file_size) as pf:
        for name in SYSCALL_VARIANTS:
            ok = True
            for off in offsets:
                if off + length > file_size:
                    continue
                ok &= syscall_read(name, pf.fd, length, off) == pf.expected(off, length)
            result[name] = bool(ok)
    zfd = open_zero()
    try:
        result["dev_zero"] = all(
            syscall_read(n, zfd, length) == bytes(length) for n in SYSCALL_VARIANTS
        )
    finally:
        os.close(zfd)
    return result


def verify_uring(
    ring: Ring,
    length: int = DEFAULT_LENGTH,
    file_size: int = 64 * 1024,
    offsets: Sequence[int] = (0, 4096, 12345),
) -> dict[str, bool]:
    """Every io_uring op reads the pattern bytes, with ``res == length``.

    READ/READV variants read into the ring's scratch buffer; READ_FIXED (if a
    buffer is registered) into its head and its tail, and nothing else in the
    registered memory changes (checked around both landing zones).
    """
    result: dict[str, bool] = {}
    with PatternFile(file_size) as pf:
        for op in (n for n in URING_OPS if VARIANTS[n].uring != "READ_FIXED"):
            ok = True
            for off in offsets:
                if off + length > file_size:
                    continue
                ring.fill(0xA5, "scratch")
                ok &= ring.read(op, pf.fd, length, offset=off) == pf.expected(off, length)
            result[op] = bool(ok)
        reg_len = ring.info()["reg_len"]
        if reg_len >= 2 * length:
            result["read_fixed_head_tail"] = fixed_lands_right(ring, pf, length)
    return result


def fixed_lands_right(
    ring: Ring, pf: PatternFile, length: int = DEFAULT_LENGTH, file_offset: int = 0
) -> bool:
    """READ_FIXED at the head and at the tail of the registered buffer land where asked.

    Poisons the registered memory, reads ``length`` pattern bytes to offset 0
    and to ``reg_len - length``, then checks those ranges hold the pattern and
    a page on either side still holds the poison.
    """
    reg_len = ring.info()["reg_len"]
    poison = 0x5A
    ring.fill(poison, "registered")
    expect = pf.expected(file_offset, length)
    ok = True
    for at in (0, reg_len - length):
        ok &= ring.submit("read_fixed", pf.fd, length, offset=file_offset, buf_offset=at) == length
        ok &= ring.memory(at, length) == expect
    guard = min(PAGE_SIZE, reg_len - 2 * length)
    if guard > 0:
        ok &= ring.memory(length, guard) == bytes([poison]) * guard
        ok &= ring.memory(reg_len - length - guard, guard) == bytes([poison]) * guard
    return bool(ok)
