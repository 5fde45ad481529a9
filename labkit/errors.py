"""Exceptions for misuse that the kernel answers with a warning or a BUG.

Errors the kernel returns as an errno (EFAULT, EINVAL, ...) are raised as
:class:`OSError` with that errno.  Misuse that the kernel does not return as an
error, but answers with ``WARN_ON`` or ``BUG`` (copying against the iterator's
direction, reverting past its start), raises :class:`IterMisuseError`.
"""

from __future__ import annotations


class IterMisuseError(ValueError):
    """An operation the kernel would WARN about or BUG on; the iterator is unchanged."""
