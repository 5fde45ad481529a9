"""The read variants labkit times on the running kernel, by name.

One table per interface: the read-family system calls (``SYSCALL_VARIANTS``)
and the io_uring opcodes (``URING_OPS``), each name mapped to its C id, and
one table of labels for plots and tables.
"""

from __future__ import annotations

from collections.abc import Callable

from labkit._ffi import lib

DEFAULT_LENGTH = 4096
#: The kernel refuses registered buffers above this size (EFAULT).
MAX_REGISTERED_BUFFER = 1 << 30

#: System call variants, in the order they are usually shown.
SYSCALL_VARIANTS: tuple[str, ...] = ("read", "readv1", "readv_empty", "readv_split", "preadv2")
_SYSCALL_FUNCS: dict[str, Callable[..., float]] = {
    "read": lib.lk_time_read,
    "readv1": lib.lk_time_readv1,
    "readv_empty": lib.lk_time_readv_empty,
    "readv_split": lib.lk_time_readv_split,
    "preadv2": lib.lk_time_preadv2,
}
_SYSCALL_IDS: dict[str, int] = {
    "read": lib.LK_SYS_READ,
    "readv1": lib.LK_SYS_READV1,
    "readv_empty": lib.LK_SYS_READV_EMPTY,
    "readv_split": lib.LK_SYS_READV_SPLIT,
    "preadv2": lib.LK_SYS_PREADV2,
}

#: io_uring operations labkit submits.
URING_OPS: tuple[str, ...] = ("read", "readv1", "readv_empty", "readv_split", "read_fixed")
_URING_IDS: dict[str, int] = {
    "read": lib.LK_UOP_READ,
    "readv1": lib.LK_UOP_READV1,
    "readv_empty": lib.LK_UOP_READV_EMPTY,
    "readv_split": lib.LK_UOP_READV_SPLIT,
    "read_fixed": lib.LK_UOP_READ_FIXED,
}

#: Human-readable names for plots and tables.
LABELS: dict[str, str] = {
    "read": "read",
    "readv1": "readv(1 x 4K)",
    "readv_empty": "readv(4K + empty)",
    "readv_split": "readv(2 x 2K)",
    "preadv2": "preadv2(1 x 4K)",
    "read_fixed": "READ_FIXED",
}
