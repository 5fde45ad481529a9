"""The public surface: the package root exports the model's API (what the README and the
notebooks use), loads it on first use, and no public name shadows the standard library."""

from __future__ import annotations

import builtins
import collections.abc
import importlib
import pkgutil
import subprocess
import sys
import typing
from pathlib import Path

import labkit

ROOT = Path(__file__).resolve().parent.parent
#: Names a reader would take for the standard library's classes and functions (module
#: names are not counted: ``config.resource`` is not the ``resource`` module).
STDLIB_NAMES = set(dir(builtins)) | set(collections.abc.__all__) | set(typing.__all__)
#: Named in notebook text but not labkit names: notebook 02's comment names a module that
#: does not exist (labkit.corebench, now labkit.experiments.core_copy); the claims branch
#: rewrites notebook 02.
STALE_IN_TEXT = {"corebench"}


def _modules_with_all() -> dict[str, list[str]]:
    out = {"labkit": list(labkit.__all__)}
    for info in pkgutil.walk_packages(labkit.__path__, "labkit."):
        if info.name.startswith("labkit.testing."):
            continue  # harnesses, run as scripts (one needs hypothesis)
        module = importlib.import_module(info.name)
        if hasattr(module, "__all__"):
            out[info.name] = list(module.__all__)
    return out


def test_root_exports_resolve_and_match_the_table():
    assert set(labkit.__all__) == {"__version__", *labkit._EXPORTS}
    for name in labkit.__all__:
        assert getattr(labkit, name) is not None
    assert "config" in dir(labkit) and labkit.config.quick_mode(False) is False


def test_root_exports_what_the_readme_and_notebooks_use():
    import re

    text = (ROOT / "README.md").read_text() + "".join(
        p.read_text() for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
    )
    used = set(re.findall(r"\blabkit\.([A-Za-z_]\w*)", text))
    used |= {n for m in re.findall(r"from labkit import ([\w, ]+)", text) for n in m.split(", ")}
    subpackages = {i.name for i in pkgutil.iter_modules(labkit.__path__)}
    model = {n for n in used if n not in subpackages | STALE_IN_TEXT and not n.startswith("_")}
    assert model <= set(labkit.__all__), model - set(labkit.__all__)


def test_no_public_name_shadows_the_standard_library():
    shadowing = {
        f"{mod}.{name}"
        for mod, names in _modules_with_all().items()
        for name in names
        if name in STDLIB_NAMES and not name.startswith("__")
    }
    assert not shadowing, sorted(shadowing)


def test_import_labkit_does_not_load_the_c_core():
    code = "import sys, labkit, labkit.cli, labkit.config; print('labkit._labkit' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout.strip() == "False", proc.stderr
