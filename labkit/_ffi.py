"""Loading labkit's compiled C core, and turning its errors into exceptions.

The extension module ``labkit._labkit`` is built at install time by cffi
(``labkit/_build.py``).  Setting ``LABKIT_EXT_PATH`` to the path of another
build of it (for example the sanitizer build used by the tests) loads that one
instead; ``LABKIT_TIME_BUDGET`` (seconds) sets the time budget of every
timing batch at load (see :func:`labkit.config.set_time_budget`).

One error contract covers the whole C core: every entry point returns a
negative errno on failure (for int and double results alike), and
:func:`check` is the one mapping to :class:`OSError`.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn


class CoreLoadError(ImportError):
    """labkit's C core cannot be loaded (a bad ``LABKIT_EXT_PATH``, or no build)."""


def _report_in_one_line(previous: Any) -> Any:
    """An excepthook that prints an uncaught :class:`CoreLoadError` as one line.

    Installed only when the C core fails to load: the ``labkit`` command (and
    any script importing labkit) then says what is wrong instead of printing
    the import machinery's traceback.  Other exceptions go to ``previous``.
    """

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        if issubclass(kind, CoreLoadError):
            sys.stderr.write(f"labkit: {value}\n")
        else:
            previous(kind, value, tb)

    return hook


def _fail(message: str) -> NoReturn:
    sys.excepthook = _report_in_one_line(sys.excepthook)
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
    path = os.environ.get("LABKIT_EXT_PATH")
    if path:
        return _load_path(path)
    try:
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


def _budget_from_env() -> None:
    text = os.environ.get("LABKIT_TIME_BUDGET", "")
    if not text:
        return
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < 2**63 / 1e9:
        raise ValueError(f"LABKIT_TIME_BUDGET={text!r} is not a number of seconds > 0")
    lib.lk_set_time_budget_ns(max(1, int(seconds * 1e9)))


_budget_from_env()


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
                "iterations, or labkit.config.set_time_budget)"
            )
        raise_errno(err, message)
    return ret


def owned(new: Callable[[], Any], free: Callable[[Any], None], what: str) -> Any:
    """``new()``, freed by ``free`` when Python drops it; MemoryError naming ``what`` if NULL."""
    ptr = new()
    if ptr == ffi.NULL:
        raise MemoryError(f"cannot allocate {what}")
    return ffi.gc(ptr, free)


__all__ = ["CoreLoadError", "ffi", "lib", "check", "owned", "raise_errno"]
