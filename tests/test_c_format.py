"""The C core is formatted with the committed .clang-format (clang-format 14 or newer)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for ext in ("*.c", "*.h") for p in (ROOT / "labkit" / "csrc").rglob(ext))
INSTALL = "apt-get install clang-format (Debian/Ubuntu; .ci/run installs it)"


def _clang_format() -> str:
    found = shutil.which("clang-format")
    if found is None:
        pytest.skip(f"clang-format is not installed: {INSTALL}")
    return found


def test_c_sources_are_formatted():
    tool = _clang_format()
    assert SOURCES and (ROOT / ".clang-format").is_file()
    proc = subprocess.run(
        [tool, "--dry-run", "--Werror", "--style=file", *map(str, SOURCES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, (
        f"run: clang-format -i labkit/csrc/**/*.[ch]\n{proc.stderr[-4000:]}"
    )


def test_the_format_check_can_fail(tmp_path):
    tool = _clang_format()
    shutil.copy(ROOT / ".clang-format", tmp_path / ".clang-format")
    bad = tmp_path / "bad.c"
    bad.write_text("int  f( int x ){return x;}\n")
    proc = subprocess.run(
        [tool, "--dry-run", "--Werror", "--style=file", str(bad)], cwd=tmp_path, capture_output=True
    )
    assert proc.returncode != 0


def _cdef_functions() -> list[str]:
    csrc = ROOT / "labkit" / "csrc"
    names = []
    for cdef in sorted(csrc.rglob("*.cdef")):
        text = re.sub(r"/\*.*?\*/|//[^\n]*", "", cdef.read_text(), flags=re.S)
        names += re.findall(r"\b(lk_\w+)\s*\(", text)
    return names


def test_every_c_entry_point_has_a_kernel_doc_comment():
    """Each function Python calls (every .cdef) has a kernel-doc comment ("/**", then
    " * name - summary", its @parameters and Return:) in the C core or in _build.py."""
    text = "\n".join(p.read_text() for p in [*SOURCES, ROOT / "labkit" / "_build.py"])
    names = _cdef_functions()
    assert len(names) > 50
    missing = [n for n in names if not re.search(rf"/\*\*\n \* {n} - \S", text)]
    assert not missing, missing
