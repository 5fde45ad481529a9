"""Exceptions for misuse that the kernel answers with a warning or a BUG.

Errors the kernel returns as an errno (EFAULT, EINVAL, ...) are raised as
:class:`OSError` with that errno.  Misuse that the kernel does not return as an
error, but answers with ``WARN_ON`` or ``BUG`` (copying against the iterator's
direction, reverting past its start), raises :class:`IterMisuseError`.
A C core that cannot be loaded is :class:`CoreLoadError`.
"""

from __future__ import annotations


class IterMisuseError(ValueError):
    """An operation the kernel would WARN about or BUG on; the iterator is unchanged."""


class CoreLoadError(ImportError):
    """labkit's C core cannot be loaded (a bad ``LABKIT_EXT_PATH``, or no build)."""
