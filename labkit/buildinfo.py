"""How labkit's C core was built: compiler and flags, compiled into the module."""

from __future__ import annotations

from labkit._ffi import _mod, ffi, lib


def build_info() -> dict[str, object]:
    """The C core's compiler, flags, sanitizer state and module path."""
    cflags = ffi.string(lib.lk_build_cflags()).decode()
    return {
        "compiler": ffi.string(lib.lk_build_compiler()).decode(),
        "cflags": cflags,
        "optimised": any(f in cflags.split() for f in ("-O1", "-O2", "-O3")),
        "sanitizers": "-fsanitize" in cflags,
        "module": getattr(_mod, "__file__", "?"),
    }
