"""The running kernel as an oracle: read-family system calls and io_uring, timed in C.

The model in the rest of labkit answers *why*; this package asks the running
kernel *what it does today*.  Everything timed here runs in C
(``labkit/csrc/live/``), through raw system calls (no liburing): Python calls
one batch and receives nanoseconds per operation, so the runner
(:func:`labkit.measure.runner.run`) can interleave variants.

- :mod:`~labkit.live.variants`: the read variants by name (``read``,
  ``readv1`` (``ITER_UBUF`` since 6.4), ``readv_empty`` (the same bytes
  through ``ITER_IOVEC``; it copies one more iovec, so it slightly overstates
  the UBUF gain), ``readv_split``, ``preadv2``, ``read_fixed``): one table,
  read from the C core's (``csrc/live/read_variants.h``), which the system
  calls, the io_uring ring and the R2/R3 models all use.
- :mod:`~labkit.live.syscalls`: system call loops on a descriptor.
- :mod:`~labkit.live.ring`: :class:`Ring`, an io_uring instance: setup and
  mapping, a registered buffer (up to 1 GiB) and registered files, READ /
  READV / READ_FIXED at queue depth 1 and a batched peak loop in the spirit of
  fio's ``t/io_uring``.  Every wait is bounded by the ring's timeout.
- :mod:`~labkit.live.probe`: whether io_uring is available here and why not.
- :mod:`~labkit.live.sources`: /dev/zero and :class:`PatternFile`, a tmpfs
  file with a known byte pattern so reads can be verified byte for byte.
- :mod:`~labkit.live.verify`: every variant reads exactly the expected bytes.
- :mod:`~labkit.live.clock`: wall clock or thread CPU time for the loops.

The experiments built on these (what notebook 04 runs) are in
:mod:`labkit.experiments.live_kernel`.
"""

from labkit.live.clock import clock, get_clock, set_clock
from labkit.live.probe import io_wq_workers, probe, tmpfs_dir
from labkit.live.ring import Ring
from labkit.live.sources import PatternFile, open_zero, pattern_bytes
from labkit.live.syscalls import read_syscall_ns, syscall_ns, syscall_read, syscall_variants
from labkit.live.variants import (
    AA_SUFFIX,
    CALIBRATION_VARIANTS,
    DEFAULT_LENGTH,
    MAX_REGISTERED_BUFFER,
    SYSCALL_VARIANTS,
    URING_OPS,
    VARIANTS,
    ReadVariant,
    aa_twin,
    base_name,
    read_variant,
)
from labkit.live.verify import fixed_lands_right, verify_syscalls, verify_uring

__all__ = [
    "AA_SUFFIX",
    "CALIBRATION_VARIANTS",
    "DEFAULT_LENGTH",
    "MAX_REGISTERED_BUFFER",
    "SYSCALL_VARIANTS",
    "URING_OPS",
    "VARIANTS",
    "PatternFile",
    "ReadVariant",
    "Ring",
    "aa_twin",
    "base_name",
    "clock",
    "fixed_lands_right",
    "get_clock",
    "io_wq_workers",
    "open_zero",
    "pattern_bytes",
    "probe",
    "read_syscall_ns",
    "read_variant",
    "set_clock",
    "syscall_ns",
    "syscall_read",
    "syscall_variants",
    "tmpfs_dir",
    "verify_syscalls",
    "verify_uring",
]
