"""labkit: the Linux kernel's iov_iter machinery rebuilt in user space.

The iterator model runs in C over real memory (``labkit/csrc``); this package
is its typed Python API.  See README.md, docs/ARCHITECTURE.md and
notebooks/00-index.ipynb.

The package is grouped by concern: :mod:`labkit.core` (the model),
:mod:`labkit.models` (cost models of published changes), :mod:`labkit.live`
(the running kernel), :mod:`labkit.measure` (runner, statistics, records),
:mod:`labkit.experiments` (one module per result), :mod:`labkit.report`
(summary, plots, ``labkit reproduce``) and :mod:`labkit.teach` (drawings,
exercises).  The model's public API is re-exported here.
"""

from labkit import config
from labkit.buildinfo import build_info
from labkit.core.fixed import RegisteredBuffer, io_import_fixed, register_buffer
from labkit.core.folio import Folio
from labkit.core.folioq import FolioQueue
from labkit.core.imports import (
    MAX_RW_COUNT,
    UIO_FASTIOV,
    UIO_MAXIOV,
    import_iovec,
    import_single_range,
    import_ubuf,
    kernel_era,
)
from labkit.core.iov_iter import ITER_DEST, ITER_SOURCE, Direction, IovIter
from labkit.core.memory import PAGE_SIZE, Mapping, UserMemory
from labkit.core.pagecache import PageCache
from labkit.errors import IterMisuseError

__version__ = "0.1.0"  #: the one place the version is written (pyproject.toml reads it)

__all__ = [
    "ITER_DEST",
    "ITER_SOURCE",
    "MAX_RW_COUNT",
    "PAGE_SIZE",
    "RegisteredBuffer",
    "UIO_FASTIOV",
    "UIO_MAXIOV",
    "Direction",
    "Folio",
    "FolioQueue",
    "IovIter",
    "IterMisuseError",
    "Mapping",
    "PageCache",
    "UserMemory",
    "__version__",
    "build_info",
    "config",
    "import_iovec",
    "import_single_range",
    "import_ubuf",
    "io_import_fixed",
    "kernel_era",
    "register_buffer",
]
