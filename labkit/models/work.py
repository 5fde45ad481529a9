"""What modelled calls did, counted by the C model (``struct lk_ubuf_work``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Work:
    """Work done by a number of modelled calls, counted by the C model.

    Attributes:
        calls: calls completed.
        ubuf_iters / iovec_iters: calls whose data moved through an ITER_UBUF / ITER_IOVEC.
        seg_steps: segment-table entries stepped over while moving data (0 for UBUF).
        uvec_bytes_read: bytes of the user's iovec array read (copy_from_user).
        iovec_table_bytes: bytes of iovec copied into a table the iterator walks
            (the on-stack fast array, an allocated array, or the async state).
        iter_bytes_copied: bytes of iterator state saved for deferred requests.
        imports: import_iovec/import_ubuf calls (a deferred READ imports twice).
        allocs / frees: heap allocations and frees.
        deferred: requests deferred (io_uring model).
        rewritten: READV requests turned into READ (R3).
        bytes_moved: data bytes moved into user memory.
    """

    calls: int
    ubuf_iters: int
    iovec_iters: int
    seg_steps: int
    uvec_bytes_read: int
    iovec_table_bytes: int
    iter_bytes_copied: int
    imports: int
    allocs: int
    frees: int
    deferred: int
    rewritten: int
    bytes_moved: int

    @classmethod
    def _from_c(cls, w: Any) -> Work:
        return cls(**{name: int(getattr(w, name)) for name in cls.__dataclass_fields__})

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict."""
        return asdict(self)

    def per_call(self) -> dict[str, float]:
        """Every counter divided by the number of calls (empty counts stay 0)."""
        n = self.calls or 1
        return {k: v / n for k, v in self.as_dict().items() if k != "calls"}

    @property
    def overhead(self) -> int:
        """Bookkeeping beyond the data itself: segment steps + iovec and iterator
        bytes copied + allocations + frees (the quantities the 2023 changes remove)."""
        return (
            self.seg_steps
            + self.iovec_table_bytes
            + self.iter_bytes_copied
            + self.allocs
            + self.frees
        )


__all__: list[str] = []  # internal: the work record of labkit.models.ubuf
