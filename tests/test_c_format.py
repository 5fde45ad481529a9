"""The C core is formatted with the committed .clang-format (clang-format 14 or newer)."""

from __future__ import annotations

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
