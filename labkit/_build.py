"""cffi build script for labkit's C core (run by setup.py at install time).

Every ``.c`` file under ``labkit/csrc/`` (its folders group the C by
concern, as the Python package does: ``core/``, ``models/``, ``live/``,
``measure/``) is compiled into one extension module, ``labkit._labkit``; the
cffi declarations are the ``*.cdef`` files, and every ``*.h`` header is
included in the module's preamble.  A new C module therefore needs no edit
here: add its ``.c``, ``.h`` and ``.cdef`` in the folder of its concern.

The compiler flags are fixed here and compiled into the module, so results
can record exactly how their timing kernels were built
(``labkit.build_info()``).

Set ``LABKIT_SANITIZE=1`` while building to compile with AddressSanitizer and
UndefinedBehaviorSanitizer (see README, "Sanitizer build").  To build such a
module beside the installed one, call ``make_builder("labkit._labkit")`` with
the variable set and ``.compile(tmpdir=DIR)``: the module lands in
``DIR/labkit/``, and ``LABKIT_EXT_PATH=<that .so>`` makes labkit load it
(tests/run_sanitized.py does this, with libasan preloaded).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from cffi import FFI

CSRC = Path(__file__).resolve().parent / "csrc"

BASE_CFLAGS = [
    "-O2",
    "-std=gnu11",
    "-fno-strict-aliasing",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
    # every dispatch on the iterator type is a switch on the enum with no
    # default: a type left out is a build error, not an iovec
    "-Wswitch",
    "-Werror=switch",
]
SANITIZE_FLAGS = [
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=undefined",
    "-O1",
    "-g",
]


def sanitize_requested() -> bool:
    """True when the build should use ASan and UBSan (``LABKIT_SANITIZE=1``)."""
    return os.environ.get("LABKIT_SANITIZE", "") not in ("", "0")


def cflags() -> list[str]:
    """The flags the C core is compiled with."""
    return BASE_CFLAGS + (SANITIZE_FLAGS if sanitize_requested() else [])


def _source_path(path: Path) -> str:
    """Relative to the working directory when possible (setuptools prefers it)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _csrc_files(pattern: str) -> list[Path]:
    """Files under csrc/ matching ``pattern``, in a stable order (by file name)."""
    return sorted(CSRC.rglob(pattern), key=lambda p: (p.name, str(p)))


def _include_dirs() -> list[str]:
    """csrc/ and each of its folders, so headers include each other by name."""
    return [str(CSRC)] + sorted(str(d) for d in CSRC.iterdir() if d.is_dir())


def make_builder(module_name: str = "labkit._labkit") -> FFI:
    """A cffi builder for the whole C core."""
    flags = cflags()
    builder = FFI()
    builder.cdef("\n".join(p.read_text() for p in _csrc_files("*.cdef")))
    headers = "\n".join(f'#include "{p.name}"' for p in _csrc_files("*.h"))
    flag_text = " ".join(shlex.quote(f) for f in flags).replace("\\", "\\\\").replace('"', '\\"')
    preamble = f"""
#include <stdlib.h>
{headers}
/**
 * lk_build_cflags - the flags the C core was compiled with
 *
 * Return: a static string of the flags, separated by spaces.
 */
const char *lk_build_cflags(void) {{ return "{flag_text}"; }}
/**
 * lk_build_compiler - the compiler that built the C core
 *
 * Return: a static string, "gcc " and its version.
 */
const char *lk_build_compiler(void) {{ return "gcc " __VERSION__; }}
"""
    builder.set_source(
        module_name,
        preamble,
        sources=[_source_path(p) for p in _csrc_files("*.c")],
        include_dirs=_include_dirs(),
        extra_compile_args=flags,
        extra_link_args=(["-fsanitize=address,undefined"] if sanitize_requested() else []),
        libraries=[],
    )
    return builder


ffibuilder = make_builder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
