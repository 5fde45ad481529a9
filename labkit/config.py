"""Run-wide settings: every ``LABKIT_*`` environment variable, and where labkit's files are.

Every setting is read here, by the function named in :data:`SETTINGS`, when
it is needed (never when labkit is imported, so a bad value cannot break
``import labkit``); the README's "Settings" table documents them all, and
``tests/test_settings.py`` keeps the two in step.  One exception: the C
build reads ``LABKIT_SANITIZE`` itself (``labkit/_build.py`` runs at build
time, before labkit can be imported).

Quick mode (``LABKIT_QUICK=1``, or ``--quick`` on the command line, or the
``QUICK`` papermill parameter of a notebook) shrinks sizes and repeats so
that CI stays fast.  Full mode is what a reproduction publishes.

Two kinds of files, two places:

* **What labkit ships** (read only, :data:`RESOURCES`): the notebooks, the
  seed mails (``data/seeds``) and the reference results measured when labkit
  was released (``data/results``).  In a clone they are the checkout's own
  folders; in an installed wheel the build copied them into the package, under
  ``labkit/_resources/`` (:func:`resource`).  Each result's own facts (its
  published figures, bands, setups and evidence) are CSV files in its folder
  of the package, ``labkit/results/rN/`` (:func:`results_dir`), in a clone and
  in a wheel alike.
* **What a user measures** (written): ``<data dir>/results/<experiment>/``
  where the data dir (:func:`data_dir`) is ``$LABKIT_DATA``, or else the
  folder ``labkit-results`` in the clone (ignored by git) or, for an
  installed labkit, in the current directory.  Nothing is ever written into
  the package or into the clone's ``data/``: results are committed there on
  purpose (see the README).

This module imports nothing from labkit (``setup.py`` reads :data:`RESOURCES`
from it before labkit is built).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import NamedTuple, TypeVar

T = TypeVar("T")

PACKAGE_DIR = Path(__file__).resolve().parent

#: The folder of the results a user measures, when ``LABKIT_DATA`` is not set.
RESULTS_FOLDER = "labkit-results"

#: Where a built labkit keeps what it ships; only a build creates it (setup.py).
SHIPPED = "_resources"


class Resource(NamedTuple):
    """A folder labkit ships: its path in a clone (and under ``labkit/_resources``), and
    the patterns of the files the wheel and the sdist carry from it."""

    path: str
    patterns: tuple[str, ...]


#: What labkit ships, by name: the one list (setup.py builds the wheel and sdist from it).
RESOURCES: dict[str, Resource] = {
    "notebooks": Resource("notebooks", ("[0-9][0-9]-*.ipynb", "sanitize.cfg", "conftest.py")),
    "seeds": Resource("data/seeds", ("*.txt", "README.md")),
    # the kernel bench's committed run of the era matrix
    "kernelvm": Resource("data/kernelvm", ("*.csv", "*.json", "README.md")),
    # the summary of the last full run published
    "reproduction": Resource("data/reproduction", ("summary.csv", "summary.txt")),
    # a data dir: results/<experiment>/ of the released runs
    "reference": Resource("data", ("results/*/*.csv", "results/*/*.json")),
}


class Setting(NamedTuple):
    """One ``LABKIT_*`` environment variable: what it does, and the function reading it."""

    name: str
    meaning: str
    reader: str


#: Every LABKIT_* variable labkit reads (the README's "Settings" table lists the same).
SETTINGS: tuple[Setting, ...] = (
    Setting("LABKIT_QUICK", "1: quick mode (smaller sizes, fewer repeats)", "quick_mode"),
    Setting("LABKIT_DATA", "where results are written (a folder)", "data_dir_setting"),
    Setting("LABKIT_TIME_BUDGET", "seconds a timing batch may run (default 10)", "budget_setting"),
    Setting("LABKIT_EXT_PATH", "load this build of the C core (a .so)", "ext_path"),
    Setting("LABKIT_SANITIZE", "1 at build time: compile with ASan + UBSan", "labkit/_build.py"),
    Setting("LABKIT_LIVE_URING", "0: report io_uring as unavailable", "live_uring_allowed"),
    Setting("LABKIT_TMPFS", "the tmpfs folder the live experiments use", "tmpfs_setting"),
    Setting("LABKIT_NOTEBOOKS", "the notebooks labkit reproduce runs", "notebooks_setting"),
    Setting("LABKIT_OUT", "output root of a reproduction (summary, figures)", "out_setting"),
    Setting("LABKIT_NOTEBOOK", "the notebook a summary row comes from", "notebook_name"),
    Setting("LABKIT_KERNEL_SRC", "a kernel tree the source oracle builds", "kernel_src_setting"),
    Setting("LABKIT_KERNEL_CACHE", "where the source oracle caches builds", "kernel_cache_setting"),
    Setting("LABKIT_KERNEL_JOBS", "kbuild's jobs for the kernel bench (default 2)", "kernel_jobs"),
    Setting("LABKIT_QEMU_PLUGIN_H", "QEMU's qemu-plugin.h for the attribution", "qemu_plugin_h"),
)


def _text(name: str) -> str:
    """The value of a LABKIT_* variable ("" when unset)."""
    return os.environ.get(name, "")


def _path(name: str) -> Path | None:
    """A LABKIT_* variable that names a file or folder (None when unset or empty)."""
    text = _text(name)
    return Path(text) if text else None


def quick_mode(override: bool | None = None) -> bool:
    """True in quick mode: ``override`` if given, else ``LABKIT_QUICK`` is set and not "0"."""
    if override is not None:
        return bool(override)
    return _text("LABKIT_QUICK") not in ("", "0")


def data_dir_setting() -> Path | None:
    """``$LABKIT_DATA`` (where results are written), or None when unset."""
    return _path("LABKIT_DATA")


def budget_setting() -> float | None:
    """``$LABKIT_TIME_BUDGET`` in seconds, or None when unset.

    Raises:
        ValueError: naming the variable, for a value that is not a number of seconds > 0.
    """
    text = _text("LABKIT_TIME_BUDGET")
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0.01 <= seconds <= 1e6:  # false for nan too; below 10 ms no batch completes
        raise ValueError(
            f"LABKIT_TIME_BUDGET={text!r} is not a number of seconds >= 0.01 and <= 1e+06"
        )
    return seconds


def ext_path() -> str | None:
    """``$LABKIT_EXT_PATH``: the C core's .so to load instead of the installed one."""
    return _text("LABKIT_EXT_PATH") or None


def live_uring_allowed() -> bool:
    """False when ``LABKIT_LIVE_URING=0`` switches the io_uring experiments off."""
    return _text("LABKIT_LIVE_URING") != "0"


def tmpfs_setting() -> Path | None:
    """``$LABKIT_TMPFS``: the tmpfs folder to try first for the live experiments."""
    return _path("LABKIT_TMPFS")


def notebooks_setting() -> Path | None:
    """``$LABKIT_NOTEBOOKS``: the folder of notebooks ``labkit reproduce`` runs."""
    return _path("LABKIT_NOTEBOOKS")


def out_setting() -> Path | None:
    """``$LABKIT_OUT``: the output root of a reproduction (``labkit reproduce`` sets it)."""
    return _path("LABKIT_OUT")


def notebook_name() -> str:
    """``$LABKIT_NOTEBOOK``: the notebook running now (set by ``labkit reproduce``), or ""."""
    return _text("LABKIT_NOTEBOOK")


def kernel_src_setting() -> Path | None:
    """``$LABKIT_KERNEL_SRC``: a kernel tree :mod:`labkit.kernelsrc` builds instead of Debian's."""
    return _path("LABKIT_KERNEL_SRC")


def set_kernel_src(tree: str) -> None:
    """Name ``tree`` as ``$LABKIT_KERNEL_SRC`` for this process and its children (the
    command line's ``--src``, which the oracle's builds then read as the one setting)."""
    os.environ["LABKIT_KERNEL_SRC"] = str(tree)


def kernel_cache_setting() -> Path | None:
    """``$LABKIT_KERNEL_CACHE``: where :mod:`labkit.kernelsrc` caches its builds."""
    return _path("LABKIT_KERNEL_CACHE")


def kernel_jobs() -> int:
    """``$LABKIT_KERNEL_JOBS``: kbuild's parallel jobs for :mod:`labkit.kernelvm` (default 2).

    Raises:
        ValueError: naming the variable, for a value that is not a whole number 1-256.
    """
    text = _text("LABKIT_KERNEL_JOBS") or "2"
    if not (text.isdigit() and 1 <= int(text) <= 256):
        raise ValueError(f"LABKIT_KERNEL_JOBS={text!r} is not a whole number from 1 to 256")
    return int(text)


def qemu_plugin_h() -> Path | None:
    """``$LABKIT_QEMU_PLUGIN_H``: QEMU's ``qemu-plugin.h``, for :mod:`labkit.kernelvm.attrib`."""
    return _path("LABKIT_QEMU_PLUGIN_H")


def repo_root() -> Path:
    """The parent of the package directory (the checkout, when labkit runs from one)."""
    return PACKAGE_DIR.parent


def checkout() -> Path | None:
    """The clone labkit runs from (editable install or ``PYTHONPATH``), or None if installed.

    A built labkit carries what it ships in ``labkit/_resources/``, which only
    the build creates (setup.py); a package without it runs from its clone.
    """
    return None if (PACKAGE_DIR / SHIPPED).is_dir() else repo_root()


def resource(name: str) -> Path:
    """The folder of a shipped resource: "notebooks", "seeds", "kernelvm", "reproduction"
    or "reference".

    In a clone, its own folder (``notebooks/``, ``data/seeds`` ...); in an
    installed labkit, the copy the build put under ``labkit/_resources/``
    (read through :mod:`importlib.resources`).

    Raises:
        KeyError: for an unknown name.
    """
    rel = RESOURCES[name].path
    root = checkout()
    if root is not None:
        return root / rel
    shipped = resources.files("labkit").joinpath(SHIPPED, *rel.split("/"))
    # A wheel is installed unpacked (and the C core cannot be imported from a zip),
    # so the resource is a folder on disk.
    return Path(str(shipped))


def results_dir() -> Path:
    """``labkit/results``: one folder per result (``r1/``, ``r2/`` ...), each holding the
    CSV files of that result's own facts (:mod:`labkit.measure.ledgers`).  They are package
    data, so a clone and an installed labkit read them from the package alike."""
    return PACKAGE_DIR / "results"


def data_dir() -> Path:
    """Where results are written: ``$LABKIT_DATA``, else a ``labkit-results`` folder.

    The folder is ``labkit-results`` in the clone when labkit runs from one
    (git ignores it), else in the current directory.  Results go to
    ``<data dir>/results/<experiment>/``.
    """
    env = data_dir_setting()
    if env is not None:
        return env
    root = checkout()
    return (root if root is not None else Path.cwd()) / RESULTS_FOLDER


def reference_data_dir() -> Path:
    """The data dir of the reference results shipped with labkit (read only)."""
    return resource("reference")


@contextmanager
def temporarily(setter: Callable[[T], T], value: T) -> Iterator[T]:
    """``setter(value)`` for a ``with`` block, then ``setter(previous)``.

    For the run-wide settings whose setter returns the previous value
    (:func:`labkit.budget.set_time_budget`, :func:`labkit.live.set_clock`).
    """
    old = setter(value)
    try:
        yield value
    finally:
        setter(old)


__all__ = [
    "RESOURCES",
    "checkout",
    "data_dir",
    "quick_mode",
    "reference_data_dir",
    "resource",
    "results_dir",
    "temporarily",
]
