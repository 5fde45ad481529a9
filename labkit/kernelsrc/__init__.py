"""The real kernel code as a second oracle: ``lib/iov_iter.c`` of Linux 6.1 and 6.12 in user space.

``labkit kernel build`` (or :func:`labkit.kernelsrc.build.build_all`) compiles each era's own
``lib/iov_iter.c`` with its own kbuild and links it with labkit's glue;
:mod:`labkit.kernelsrc.oracle` loads it, :mod:`labkit.kernelsrc.diff` runs
differential sequences against labkit's model, :mod:`labkit.kernelsrc.counts`
counts its instructions under callgrind.  Code derived from the kernel (the
GPL-2.0 patches) lives apart, in the repository's ``kernel/gpl/`` folder.
"""

from labkit.kernelsrc.build import INSTALL_HINT, is_available

#: What .ci/run and the Makefile ask of the package; the rest is in its modules (build,
#: oracle, diff, counts, reconcile), imported by name.
__all__ = ["INSTALL_HINT", "is_available"]
