"""Run-wide settings: quick mode, where labkit's files are, and where results go.

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
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

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
]
