"""The kernel bench: small x86-64 kernels of each era, booted under QEMU, counted per call.

:mod:`labkit.kernelvm.eras`   the eras (6.1 and 6.1 with one change each), configs, CPU models
:mod:`labkit.kernelvm.build`  kbuild out of tree from Debian's ``linux-source-6.1`` (cached)
:mod:`labkit.kernelvm.guest`  labkit's static ``/init`` (``guest/bench.c``) and its initramfs
:mod:`labkit.kernelvm.qemu`   one boot under QEMU TCG with ``-icount shift=0``: the rows
:mod:`labkit.kernelvm.attrib` the instructions of a call by kernel function (a QEMU plugin)
:mod:`labkit.kernelvm.matrix` the eras side by side: per-call counts, savings, identities
"""

from labkit.kernelvm.eras import ERAS, missing_tools

__all__ = ["ERAS", "missing_tools"]
