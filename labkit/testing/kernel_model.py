"""labkit's side of the differential run: each system call written, in a few lines,
around labkit's import_iovec and copies (see :mod:`labkit.testing.kernel_diff`)."""

from __future__ import annotations

import errno
from collections.abc import Sequence

import labkit
from labkit import ITER_DEST, ITER_SOURCE, UIO_MAXIOV
from labkit.core.memory import UserMemory
from labkit.testing.kernel_calls import PAGE, SSIZE_MAX, Arena

# ---- labkit's side: the system calls, written around labkit's iterator -----------------------


def try_import(direction: int, pairs: Sequence[tuple[int, int]], mem: UserMemory, kernel: str):
    """labkit.import_iovec: (the iterator, 0), or (None, -errno) when it refuses."""
    try:
        return labkit.import_iovec(direction, pairs, mem, kernel=kernel), 0
    except OSError as exc:
        return None, -exc.errno


def _copy_out(it: labkit.IovIter, limit: int, chunk: int = 1 << 16) -> bytes:
    """copy_from_iter up to ``limit`` bytes, a chunk at a time, until the copy stops short."""
    out = []
    while limit:
        want = min(chunk, limit)
        before = it.count
        got = it.copy_from_iter(want)
        assert it.count == before - len(got), "the iterator must advance by the bytes copied"
        out.append(got)
        limit -= len(got)
        if len(got) < want:
            break
    return b"".join(out)


def model_read(
    pairs: Sequence[tuple[int, int]], mem: UserMemory, data: bytes, offset: int, kernel: str = "6.4"
) -> int:
    """readv/preadv2 of a file holding ``data``, read at ``offset``: bytes or -errno.

    vfs_readv: import_iovec (its errno), 0 for an empty iterator, then the
    file's read_iter copies min(count, size - offset) bytes; a fault stops
    it, 0 bytes of a non-empty request is EFAULT.
    """
    it, err = try_import(ITER_DEST, pairs, mem, kernel)
    if it is None:
        return err
    if it.count == 0:
        return 0
    chunk = data[offset : offset + it.count]
    if not chunk:
        return 0
    before = it.count
    n = it.copy_to_iter(chunk)
    assert it.count == before - n, "the iterator must advance by the bytes copied"
    return n if n else -errno.EFAULT


def model_write(
    pairs: Sequence[tuple[int, int]],
    mem: UserMemory,
    content: bytearray,
    offset: int,
    kernel: str = "6.4",
) -> int:
    """writev/pwritev2 at ``offset`` of a file holding ``content`` (updated in place).

    vfs_writev: import_iovec, 0 for an empty iterator, then
    generic_perform_write copies out of the iterator until it stops.  Since
    6.11 the source is faulted in only after a copy made no progress, so the
    first chunk's ->write_begin()/->write_end() run even when the very first
    byte faults: write_end(copied = 0) still sets i_size to the offset when
    that is past the end of the file (shmem and ext4 alike), and the call
    then fails with EFAULT.
    """
    it, err = try_import(ITER_SOURCE, pairs, mem, kernel)
    if it is None:
        return err
    if it.count == 0:
        return 0
    got = _copy_out(it, it.count)
    if offset > len(content):
        content.extend(bytes(offset - len(content)))
    if not got:
        return -errno.EFAULT
    content[offset : offset + len(got)] = got
    return len(got)


def model_vm_rw(
    write: bool,
    local: Sequence[tuple[int, int]],
    remote: Sequence[tuple[int, int]],
    mem: UserMemory,
    remote_arena: Arena,
    flags: int = 0,
    kernel: str = "6.4",
) -> int:
    """process_vm_readv (write=False) or process_vm_writev on the own process.

    process_vm_rw: flags != 0 is EINVAL; import_iovec of the local array; an
    empty local iterator returns 0 before the remote array is looked at; the
    remote array is checked by iovec_from_user only (count, lengths); no
    remote length > 0 returns 0; then each remote segment is walked a page
    at a time: a page that cannot be pinned (for writing, when writing) ends
    the call, so does a local fault while bytes are still wanted.
    """
    if flags:
        return -errno.EINVAL
    it, err = try_import(ITER_SOURCE if write else ITER_DEST, local, mem, kernel)
    if it is None:
        return err
    total = it.count
    if total == 0:
        return 0
    if len(remote) > UIO_MAXIOV or any(n % 2**64 > SSIZE_MAX for _a, n in remote):
        return -errno.EINVAL
    if not any(n for _a, n in remote):
        return 0
    rc = 0
    for addr, n in remote:
        if not it.count:
            break
        if not n:
            continue
        reach = mem.accessible(addr, n, write=write)
        if not reach:
            rc = -errno.EFAULT
            break
        want = min(reach, it.count)
        if write:
            got = _copy_out(it, want)
            remote_arena.write(addr, got)
            moved = len(got)
        else:
            before = it.count
            moved = it.copy_to_iter(remote_arena.read(addr, want))
            assert it.count == before - moved, "the iterator must advance by the bytes copied"
        if moved < want or (reach < n and it.count):
            rc = -errno.EFAULT
            break
    done = total - it.count
    return done if done else rc


def model_vmsplice(
    pairs: Sequence[tuple[int, int]], mem: UserMemory, slots: int, kernel: str = "6.4"
) -> tuple[int, bytes]:
    """vmsplice into an empty pipe of ``slots`` buffers: (bytes or -errno, the bytes).

    vmsplice: import_iovec, 0 for an empty iterator, then iter_to_pipe: pins
    the pages of the current (non-empty) segment (iov_iter_get_pages2, up to
    a hole) and puts each page's piece in its own pipe buffer until the pipe
    is full; a segment whose next page cannot be pinned ends the call (EFAULT
    if nothing was spliced).  So the count is the first ``slots`` page pieces
    up to the first unreachable page.  labkit: walk the iterator a page piece
    at a time (the arenas' pages are all-or-nothing), copying each out.
    """
    it, err = try_import(ITER_SOURCE, pairs, mem, kernel)
    if it is None:
        return err, b""
    if it.count == 0:
        return 0, b""
    out = []
    while it.count and slots:
        it.advance(0)  # step over empty segments
        addr, seglen = it.iovec()
        piece = min(seglen, PAGE - addr % PAGE)
        got = _copy_out(it, piece)
        if len(got) < piece:
            assert not got, "a page is reachable in full or not at all"
            break
        out.append(got)
        slots -= 1
    data = b"".join(out)
    return (len(data) if data else -errno.EFAULT), data
