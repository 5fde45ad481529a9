"""Run-wide settings: quick mode, where labkit's files are, where results go, and the
time budget of a batch.

Quick mode (``LABKIT_QUICK=1``, or ``--quick`` on the command line, or the
``QUICK`` papermill parameter of a notebook) shrinks sizes and repeats so
that CI stays fast.  Full mode is what a reproduction publishes.

Two kinds of files, two places:

* **What labkit ships** (read only): the notebooks, the published figures
  (``data/published``), the seed mails (``data/seeds``) and the reference
  results measured when labkit was released (``data/results``).  In a clone
  they are the checkout's own folders; in an installed wheel the build copied
  them into the package, under ``labkit/_resources/`` (:func:`resource`).
* **What a user measures** (written): ``<data dir>/results/<experiment>/``
  where the data dir (:func:`data_dir`) is ``$LABKIT_DATA``, or else the
  folder ``labkit-results`` in the clone (ignored by git) or, for an
  installed labkit, in the current directory.  Nothing is ever written into
  the package or into the clone's ``data/``: results are committed there on
  purpose (see the README).

Every timing loop runs in C, where Python cannot interrupt it, so every loop
is bounded by a time budget as well as by its iteration count: a batch that
runs longer than the budget (10 s unless ``LABKIT_TIME_BUDGET`` or
:func:`set_time_budget` says otherwise) stops and raises
``OSError(ETIMEDOUT)``.  Python handles Ctrl-C between batches, so the budget
also bounds how long an interrupt waits.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from importlib import resources
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

PACKAGE_DIR = Path(__file__).resolve().parent

#: The folder of the results a user measures, when ``LABKIT_DATA`` is not set.
RESULTS_FOLDER = "labkit-results"

#: What labkit ships, by name: (path in a checkout, path under labkit/_resources).
RESOURCES = {
    "notebooks": "notebooks",
    "published": "data/published",
    "seeds": "data/seeds",
    "reproduction": "data/reproduction",  # the summary of the last full run published
    "reference": "data",  # a data dir: results/<experiment>/ of the released runs
}


def quick_mode(override: bool | None = None) -> bool:
    """True in quick mode: ``override`` if given, else ``LABKIT_QUICK`` is set and not "0"."""
    if override is not None:
        return bool(override)
    return os.environ.get("LABKIT_QUICK", "") not in ("", "0")


def repo_root() -> Path:
    """The parent of the package directory (the checkout, when labkit runs from one)."""
    return PACKAGE_DIR.parent


def checkout() -> Path | None:
    """The clone labkit runs from (editable install or ``PYTHONPATH``), or None if installed.

    A clone is recognised by its ``pyproject.toml``, ``notebooks/`` and
    ``data/published/`` beside the package.
    """
    root = repo_root()
    if (root / "pyproject.toml").is_file() and (root / "notebooks").is_dir():
        if (root / "data" / "published").is_dir():
            return root
    return None


def resource(name: str) -> Path:
    """The folder of a shipped resource: "notebooks", "published", "seeds", "reproduction"
    or "reference".

    In a clone, its own folder (``notebooks/``, ``data/published`` ...); in an
    installed labkit, the copy the build put under ``labkit/_resources/``
    (read through :mod:`importlib.resources`).

    Raises:
        KeyError: for an unknown name.
    """
    rel = RESOURCES[name]
    root = checkout()
    if root is not None:
        return root / rel
    shipped = resources.files("labkit").joinpath("_resources", *rel.split("/"))
    # A wheel is installed unpacked (and the C core cannot be imported from a zip),
    # so the resource is a folder on disk.
    return Path(str(shipped))


def data_dir() -> Path:
    """Where results are written: ``$LABKIT_DATA``, else a ``labkit-results`` folder.

    The folder is ``labkit-results`` in the clone when labkit runs from one
    (git ignores it), else in the current directory.  Results go to
    ``<data dir>/results/<experiment>/``.
    """
    env = os.environ.get("LABKIT_DATA")
    if env:
        return Path(env)
    root = checkout()
    return (root if root is not None else Path.cwd()) / RESULTS_FOLDER


def reference_data_dir() -> Path:
    """The data dir of the reference results shipped with labkit (read only)."""
    return resource("reference")


def time_budget() -> float:
    """The time budget of one timing batch, in seconds."""
    from labkit._ffi import lib

    return lib.lk_time_budget_ns() / 1e9


def set_time_budget(seconds: float) -> float:
    """Bound every later timing batch by ``seconds`` of wall time; returns the previous budget.

    Raises:
        ValueError: for a budget that is not a number of seconds > 0.
    """
    from labkit._ffi import check, lib

    seconds = float(seconds)
    if not 0 < seconds < 2**63 / 1e9 or math.isnan(seconds):
        raise ValueError(f"time budget must be a number of seconds > 0, got {seconds}")
    return check(lib.lk_set_time_budget_ns(max(1, int(seconds * 1e9))), "time budget") / 1e9


@contextmanager
def temporarily(setter: Callable[[T], T], value: T) -> Iterator[T]:
    """``setter(value)`` for a ``with`` block, then ``setter(previous)``.

    For the run-wide settings whose setter returns the previous value
    (:func:`set_time_budget`, :func:`labkit.live.set_clock`).
    """
    old = setter(value)
    try:
        yield value
    finally:
        setter(old)


def time_budget_of(seconds: float) -> AbstractContextManager[float]:
    """Use a time budget of ``seconds`` inside a ``with`` block."""
    return temporarily(set_time_budget, seconds)


__all__ = [
    "PACKAGE_DIR",
    "RESOURCES",
    "RESULTS_FOLDER",
    "checkout",
    "data_dir",
    "quick_mode",
    "reference_data_dir",
    "repo_root",
    "resource",
    "set_time_budget",
    "temporarily",
    "time_budget",
    "time_budget_of",
]
