"""The lifetime of a live resource (a ring, a pattern file): with-block and finaliser."""

from __future__ import annotations

from typing import TypeVar

_T = TypeVar("_T", bound="Closeable")


class Closeable:
    """Closed at the end of a ``with`` block and when collected; ``close()`` is idempotent.

    A subclass implements :meth:`close`; it must be safe to call again, and on
    an object whose ``__init__`` failed part way (the finaliser still runs).
    """

    def close(self) -> None:
        """Release the resource (idempotent)."""
        raise NotImplementedError

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
