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
from typing import Any, NoReturn


def _load() -> Any:
    path = os.environ.get("LABKIT_EXT_PATH")
    if path:
        spec = importlib.util.spec_from_file_location("labkit._labkit", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"LABKIT_EXT_PATH={path!r} is not a loadable extension")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    try:
        from labkit import _labkit
    except ImportError as exc:  # pragma: no cover - only without a build
        raise ImportError(
            "labkit's C core is not built: install the package (pip install -e .) "
            "so that cffi compiles labkit/csrc"
        ) from exc
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


__all__ = ["ffi", "lib", "check", "raise_errno"]
