"""Loading labkit's compiled C core, and turning its errors into exceptions.

The extension module ``labkit._labkit`` is built at install time by cffi
(``labkit/_build.py``).  Setting ``LABKIT_EXT_PATH`` to the path of another
build of it (for example the sanitizer build used by the tests) loads that one
instead.
"""

from __future__ import annotations

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


def raise_errno(err: int, message: str) -> NoReturn:
    """Raise ``OSError(err, "<strerror>: message")`` for a positive errno."""
    raise OSError(err, f"{os.strerror(err)}: {message}")


def check(ret: Any, message: str) -> Any:
    """Return ``ret`` unless it is negative: then it is ``-errno`` (the C core's one
    error convention, for int and double results alike) and OSError is raised."""
    if ret < 0:
        raise_errno(int(-ret), message)
    return ret


__all__ = ["ffi", "lib", "check", "raise_errno"]
