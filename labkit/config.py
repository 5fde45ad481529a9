"""Run-wide settings: quick mode and where data lives.

Quick mode (``LABKIT_QUICK=1``, or ``--quick`` on the command line, or the
``QUICK`` papermill parameter of a notebook) shrinks sizes and repeats so
that CI stays fast.  Full mode is what a reproduction publishes.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def quick_mode(override: bool | None = None) -> bool:
    """True in quick mode: ``override`` if given, else ``LABKIT_QUICK`` is set and not "0"."""
    if override is not None:
        return bool(override)
    return os.environ.get("LABKIT_QUICK", "") not in ("", "0")


def repo_root() -> Path:
    """The checkout labkit runs from (the parent of the package directory)."""
    return PACKAGE_DIR.parent


def data_dir() -> Path:
    """``data/`` of the checkout, or ``LABKIT_DATA`` if set."""
    env = os.environ.get("LABKIT_DATA")
    return Path(env) if env else repo_root() / "data"
