"""Loading labkit's compiled C core, and turning its errors into exceptions.

The extension module ``labkit._labkit`` is built at install time by cffi
(``labkit/_build.py``).  Setting ``LABKIT_EXT_PATH`` to the path of another
build of it (for example the sanitizer build used by the tests) loads that one
instead (:func:`labkit.config.ext_path`); a bad path is :class:`CoreLoadError`,
which the ``labkit`` command prints as one line.

One error contract covers the whole C core: every entry point returns a
negative errno on failure (for int and double results alike), and
:func:`check` is the one mapping to :class:`OSError`.
"""

from __future__ import annotations

import errno
import importlib.util
import os
from collections.abc import Callable
from typing import Any, NoReturn

from labkit import config
from labkit.errors import CoreLoadError


def _fail(message: str) -> NoReturn:
    raise CoreLoadError(message)


def _load_path(path: str) -> Any:
    what = f"LABKIT_EXT_PATH={path!r}"
    if not os.path.exists(path):
        _fail(f"{what}: no such file (unset it to use the installed C core)")
    if os.path.isdir(path):
        _fail(f"{what} is a directory, not the C core's .so file")
    spec = importlib.util.spec_from_file_location("labkit._labkit", path)
    if spec is None or spec.loader is None:
        _fail(f"{what} is not an extension module (a .so file)")
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ImportError as exc:
        _fail(f"{what} cannot be loaded: {exc}")
    if not (hasattr(module, "ffi") and hasattr(module, "lib")):
        _fail(f"{what} is not a cffi build of labkit's C core (no ffi and lib)")
    return module


def _load() -> Any:
    path = config.ext_path()
    if path:
        return _load_path(path)
    try:  # here, not at the top: a missing build must become a CoreLoadError
        from labkit import _labkit
    except ImportError as exc:  # pragma: no cover - only without a build
        _fail(
            "labkit's C core is not built: install the package (pip install -e .) "
            f"so that cffi compiles labkit/csrc ({exc})"
        )
    return _labkit


_mod = _load()
ffi = _mod.ffi
lib = _mod.lib


def raise_errno(err: int, message: str) -> NoReturn:
    """Raise ``OSError(err, "<strerror>: message")`` for a positive errno."""
    raise OSError(err, f"{os.strerror(err)}: {message}")


def check(ret: Any, message: str) -> Any:
    """Return ``ret`` unless it is negative: then it is ``-errno`` (the C core's one
    error convention, for int and double results alike) and OSError is raised."""
    if ret < 0:
        err = int(-ret)
        if err == errno.ETIMEDOUT:
            budget = lib.lk_time_budget_ns() / 1e9
            message += (
                f" (the batch ran past its time budget of {budget:g} s: use fewer "
                "iterations, or labkit.budget.set_time_budget)"
            )
        raise_errno(err, message)
    return ret


def owned(new: Callable[[], Any], free: Callable[[Any], None], what: str) -> Any:
    """``new()``, freed by ``free`` when Python drops it; MemoryError naming ``what`` if NULL."""
    ptr = new()
    if ptr == ffi.NULL:
        raise MemoryError(f"cannot allocate {what}")
    return ffi.gc(ptr, free)


__all__: list[str] = []  # internal: the C core for labkit's own modules
