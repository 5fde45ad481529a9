"""The kinds of damage the cache tests do to a cached file (tests/test_kernel_cache.py and
tests/test_kernel_vm_cache.py): each must be seen, named and never followed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

#: Truncated to half, emptied, overwritten with random bytes, replaced by a link.
KINDS = ["truncate", "empty", "garbage", "link"]


def damage(path: Path, kind: str, tmp: Path) -> None:
    """Damage the file ``path`` in the way ``kind`` names (a link points into ``tmp``)."""
    size = path.stat().st_size
    if kind == "truncate":
        os.truncate(path, size // 2)
    elif kind == "empty":
        os.truncate(path, 0)
    elif kind == "garbage":
        path.write_bytes(os.urandom(size))
    elif kind == "link":
        shutil.copyfile(path, tmp / "elsewhere")
        path.unlink()
        path.symlink_to(tmp / "elsewhere")
    else:
        raise ValueError(f"unknown damage {kind!r}")
