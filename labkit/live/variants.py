"""The read variants labkit issues and models: one table, read from the C core.

A read variant is one way for user space to ask for ``length`` bytes into one
buffer: which system call or io_uring opcode, which iovec array it passes
and which ``RWF_*`` flags.  The table is defined once, in C
(``labkit/csrc/live/read_variants.h``, an X-macro that also generates the
C ids, the iovec layouts and the timed loops); this module reads it at import,
so a new variant is one row there and nothing here.

- :data:`VARIANTS`: every variant by name, as a :class:`ReadVariant`;
- :data:`SYSCALL_VARIANTS` / :data:`URING_OPS`: the names that have a system
  call / an io_uring opcode, in table order;
- :data:`LABELS`: human-readable names for plots and tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from labkit._ffi import ffi, lib
from labkit.core.memory import PAGE_SIZE

DEFAULT_LENGTH = PAGE_SIZE
#: The kernel refuses registered buffers above this size (EFAULT).
MAX_REGISTERED_BUFFER = 1 << 30

_CALLS = {
    lib.LK_CALL_NONE: None,
    lib.LK_CALL_READ: "read",
    lib.LK_CALL_READV: "readv",
    lib.LK_CALL_PREADV2: "preadv2",
}
_RING_OPS = {
    lib.LK_RING_NONE: None,
    lib.LK_RING_READ: "READ",
    lib.LK_RING_READV: "READV",
    lib.LK_RING_READ_FIXED: "READ_FIXED",
}
_LAYOUTS = {
    lib.LK_IOV_BUF: "buffer",
    lib.LK_IOV_ONE: "one",
    lib.LK_IOV_EMPTY: "empty",
    lib.LK_IOV_SPLIT: "split",
    lib.LK_IOV_EMPTY2: "empty2",
}


@dataclass(frozen=True)
class ReadVariant:
    """One row of the C table.

    Attributes:
        id: the C id (``LK_RV_*``), what the C entry points take.
        name: the Python name (``"readv1"``).
        label: for plots and tables (``"readv(1 x 4K)"``).
        syscall: the system call family (``"read"``: read/pread64,
            ``"readv"``: readv/preadv, ``"preadv2"``), or None (io_uring only).
        uring: the io_uring opcode (``"READ"``, ``"READV"``, ``"READ_FIXED"``),
            or None (system call only).
        layout: the segments passed: ``"buffer"`` (the buffer itself, no iovec
            array), ``"one"``, ``"empty"`` (one segment and an empty one),
            ``"split"`` (two halves) or ``"empty2"`` (one segment and two empty
            ones: the R2 proxy with one empty iovec more, to measure its bias).
        rwf: ``RWF_*`` flags (preadv2, and io_uring's ``rw_flags``).
    """

    id: int
    name: str
    label: str
    syscall: str | None
    uring: str | None
    layout: str
    rwf: int

    @property
    def uring_label(self) -> str | None:
        """The label of its io_uring request: the opcode and the layout (``"READV(1 x 4K)"``)."""
        if self.uring is None:
            return None
        return self.uring + (self.label[self.label.index("(") :] if "(" in self.label else "")

    @property
    def vectored(self) -> bool:
        """True when the call passes an iovec array (``import_iovec``), not a buffer."""
        return self.layout != "buffer"

    def segments(self, length: int) -> list[tuple[int, int]]:
        """The ``(offset, length)`` segments a read of ``length`` bytes passes.

        Computed by the C core's one layout function (``lk_rv_segments``).

        Raises:
            ValueError: when the layout cannot split ``length`` (two halves of 1 byte).
        """
        seg = ffi.new("struct lk_rv_seg[]", int(lib.LK_RV_MAX_SEGS))
        n = lib.lk_rv_segments(self.id, length, seg)
        if n < 0:
            raise ValueError(f"read variant {self.name!r} cannot lay out {length} bytes")
        return [(int(seg[k].off), int(seg[k].len)) for k in range(n)]


def _read_table() -> dict[str, ReadVariant]:
    table: dict[str, ReadVariant] = {}
    vid = 0
    while (row := lib.lk_read_variant(vid)) != ffi.NULL:
        v = ReadVariant(
            id=int(row.id),
            name=ffi.string(row.name).decode(),
            label=ffi.string(row.label).decode(),
            syscall=_CALLS[row.call],
            uring=_RING_OPS[row.ring],
            layout=_LAYOUTS[row.layout],
            rwf=int(row.rwf),
        )
        if v.id != vid or v.name in table:
            raise ImportError(f"labkit's C read-variant table is inconsistent at row {vid}")
        table[v.name] = v
        vid += 1
    return table


#: Every read variant, by name, in the C table's order.
VARIANTS: dict[str, ReadVariant] = _read_table()

#: Variants that calibrate another rather than answer a question of their own: measured
#: when asked for by name (R2's proxy bias: readv_empty2 beside readv_empty), left out of
#: the default lists below (and so of the experiments' default variants).
CALIBRATION_VARIANTS: tuple[str, ...] = tuple(
    n for n, v in VARIANTS.items() if v.layout == "empty2"
)

#: System call variants, in the order they are usually shown (calibration rows left out).
SYSCALL_VARIANTS: tuple[str, ...] = tuple(
    n for n, v in VARIANTS.items() if v.syscall and n not in CALIBRATION_VARIANTS
)

#: io_uring operations labkit submits.
URING_OPS: tuple[str, ...] = tuple(n for n, v in VARIANTS.items() if v.uring)

#: Human-readable names for plots and tables.
LABELS: dict[str, str] = {n: v.label for n, v in VARIANTS.items()}


#: The suffix naming a variant's A/A twin: ``"readv1" + AA_SUFFIX`` is readv1 again, measured
#: as a second variant of the same loop (its difference from readv1 calibrates the A/B).
AA_SUFFIX = "_aa"


def aa_twin(name: str) -> str:
    """The name of ``name``'s A/A twin (``"readv1"`` -> ``"readv1_aa"``)."""
    return name + AA_SUFFIX


def base_name(name: str) -> str:
    """The variant an A/A twin repeats (``"readv1_aa"`` -> ``"readv1"``); others unchanged."""
    return name[: -len(AA_SUFFIX)] if name.endswith(AA_SUFFIX) else name


def read_variant(name: str, *, interface: str | None = None) -> ReadVariant:
    """The variant called ``name``; with ``interface`` ("syscall" or "uring") it must have one.

    An A/A twin's name (:func:`aa_twin`) gives the variant it repeats.

    Raises:
        ValueError: for an unknown name, or one the interface does not offer.
    """
    syscalls = SYSCALL_VARIANTS + CALIBRATION_VARIANTS
    choices = {"syscall": syscalls, "uring": URING_OPS, None: tuple(VARIANTS)}[interface]
    name = base_name(name)
    if name not in choices:
        what = {"syscall": "system call variant", "uring": "io_uring op", None: "read variant"}
        raise ValueError(f"unknown {what[interface]} {name!r}; choose from {choices}")
    return VARIANTS[name]


__all__ = [
    "AA_SUFFIX",
    "DEFAULT_LENGTH",
    "MAX_REGISTERED_BUFFER",
    "SYSCALL_VARIANTS",
    "URING_OPS",
    "VARIANTS",
    "ReadVariant",
    "aa_twin",
    "read_variant",
]
