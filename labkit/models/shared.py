"""One data buffer, one iovec-table page and one argument block shared by several models."""

from __future__ import annotations

from typing import Any

from labkit._args import index_arg
from labkit._ffi import ffi
from labkit.core.memory import PAGE_SIZE, UserMemory


class SharedMemory:
    """One data buffer and one iovec-table page shared by several models.

    Variants compared with each other should zero the *same* physical page:
    on this kind of machine the cost of clearing a 4 KiB page depends on which
    page it is by more than the few nanoseconds being compared, and that
    effect lasts as long as the mapping.  Each model gets its own 64-byte slot
    of the table page for its iovec array.

    The C argument struct each model's timed loop reads on every call is
    carved from one block too, a 128-byte (two cache lines) slot per model,
    so that variants compared with each other read their arguments from
    equivalently placed memory instead of wherever the allocator put each
    one (a per-model placement moved a model's ns/call persistently by up to
    ~3.5 ns here, more than some differences being compared).
    """

    SLOT = 64
    ARGS_SLOT = 128
    ARGS_SLOTS = PAGE_SIZE // SLOT  # as many as the iovec table has slots

    def __init__(self, size: int = PAGE_SIZE, mem: UserMemory | None = None) -> None:
        self.mem = mem if mem is not None else UserMemory()
        self.data = self.mem.map(max(index_arg(size, "size"), 1))
        self.table = self.mem.map(PAGE_SIZE)
        self._next = 0
        # kernel-side memory (not in the modelled address space): argument slots
        self._args_block = ffi.new("char[]", self.ARGS_SLOT * (self.ARGS_SLOTS + 1))
        base = int(ffi.cast("uintptr_t", self._args_block))
        self._args_base = (-base) % self.ARGS_SLOT
        self._args_next = 0

    def data_for(self, size: int) -> Any:
        """The shared data mapping, if it holds ``size`` bytes."""
        if size > self.data.size:
            raise ValueError(f"shared data buffer holds {self.data.size} bytes, {size} needed")
        return self.data

    def table_for(self, nbytes: int) -> tuple[Any, int]:
        """A slot of the table page for an iovec array of ``nbytes``: (mapping, offset)."""
        need = -(-max(nbytes, 1) // self.SLOT) * self.SLOT
        if self._next + need > self.table.size:
            raise ValueError("shared iovec table page is full")
        off = self._next
        self._next += need
        return self.table, off

    def args_slot(self) -> Any:
        """A zeroed ``struct lk_ubuf_args *`` in the next 128-byte-aligned argument slot.

        The pointer is valid as long as this SharedMemory is alive.
        """
        if self._args_next >= self.ARGS_SLOTS:
            raise ValueError("shared argument block is full")
        off = self._args_base + self._args_next * self.ARGS_SLOT
        self._args_next += 1
        return ffi.cast("struct lk_ubuf_args *", self._args_block + off)


__all__: list[str] = []  # internal: memory the models share with C (labkit.models.ubuf)
