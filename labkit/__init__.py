"""labkit: the Linux kernel's iov_iter machinery rebuilt in user space.

The iterator model runs in C over real memory (``labkit/csrc``); this package
is its typed Python API.  See README.md, docs/ARCHITECTURE.md and
notebooks/00-index.ipynb.

The package is grouped by concern: :mod:`labkit.core` (the model),
:mod:`labkit.models` (cost models of published changes), :mod:`labkit.live`
(the running kernel), :mod:`labkit.measure` (runner, statistics, records),
:mod:`labkit.experiments` (one module per result), :mod:`labkit.report`
(summary, plots, ``labkit reproduce``), :mod:`labkit.teach` (drawings,
exercises) and :mod:`labkit.testing` (harnesses of the test suite).  The
model's public API, what the README and the notebooks use, is re-exported
here.

The re-exports are loaded on first use (PEP 562), so ``import labkit`` (and
``import labkit.cli`` or ``labkit.config``) does not load the C core: a bad
``LABKIT_EXT_PATH`` or a missing build is a :class:`labkit.errors.CoreLoadError`
at the first use of the model, which the ``labkit`` command prints as one line.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"  #: the one place the version is written (pyproject.toml reads it)

#: Each name the package root exports, and the module it comes from.
_EXPORTS: dict[str, str] = {
    "ITER_DEST": "labkit.core.iov_iter",
    "ITER_SOURCE": "labkit.core.iov_iter",
    "IovIter": "labkit.core.iov_iter",
    "PAGE_SIZE": "labkit.core.memory",
    "UserMemory": "labkit.core.memory",
    "MAX_RW_COUNT": "labkit.core.imports",
    "UIO_MAXIOV": "labkit.core.imports",
    "import_iovec": "labkit.core.imports",
    "import_single_range": "labkit.core.imports",
    "import_ubuf": "labkit.core.imports",
    "kernel_era": "labkit.core.imports",
    "io_import_fixed": "labkit.core.fixed",
    "register_buffer": "labkit.core.fixed",
    "Folio": "labkit.core.folio",
    "PageCache": "labkit.core.pagecache",
    "FolioQueue": "labkit.core.folioq",
    "IterMisuseError": "labkit.errors",
    "build_info": "labkit.buildinfo",
}

#: Submodules reachable as attributes of the package without importing them first.
_SUBMODULES = ("config",)

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from labkit import config  # noqa: F401 (a submodule, not exported)
    from labkit.buildinfo import build_info
    from labkit.core.fixed import io_import_fixed, register_buffer
    from labkit.core.folio import Folio
    from labkit.core.folioq import FolioQueue
    from labkit.core.imports import (
        MAX_RW_COUNT,
        UIO_MAXIOV,
        import_iovec,
        import_single_range,
        import_ubuf,
        kernel_era,
    )
    from labkit.core.iov_iter import ITER_DEST, ITER_SOURCE, IovIter
    from labkit.core.memory import PAGE_SIZE, UserMemory
    from labkit.core.pagecache import PageCache
    from labkit.errors import IterMisuseError


def __getattr__(name: str) -> Any:
    """Load a re-exported name (or a listed submodule) on first use."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later uses find it directly
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})


__all__ = [  # the keys of _EXPORTS (tests/test_public_api.py checks), written out for tools
    "FolioQueue",
    "Folio",
    "ITER_DEST",
    "ITER_SOURCE",
    "IovIter",
    "IterMisuseError",
    "MAX_RW_COUNT",
    "PAGE_SIZE",
    "PageCache",
    "UIO_MAXIOV",
    "UserMemory",
    "__version__",
    "build_info",
    "import_iovec",
    "import_single_range",
    "import_ubuf",
    "io_import_fixed",
    "kernel_era",
    "register_buffer",
]
