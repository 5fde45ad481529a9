"""Python started from the folder that contains a clone named labkit (issue 14, teaching).

The clone's root then comes first on sys.path; its __init__.py either imports the
labkit that is installed or says what happened, instead of an empty namespace package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fake_clone(parent: Path) -> Path:
    """parent/labkit: the clone's root __init__.py and an inner labkit package."""
    clone = parent / "labkit"
    (clone / "labkit").mkdir(parents=True)
    shutil.copy(ROOT / "__init__.py", clone / "__init__.py")
    (clone / "labkit" / "__init__.py").write_text("WHICH = 'the clone, uninstalled'\n")
    return clone


def python(code: str, cwd: Path, pythonpath: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    # -S: no site-packages, so that no labkit is installed unless PYTHONPATH brings one
    return subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_uninstalled_clone_says_what_happened(tmp_path):
    clone = fake_clone(tmp_path)
    proc = python("import labkit", cwd=tmp_path)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: 'import labkit' found ")
    assert f"{clone}, the root of a labkit clone" in last
    assert f"Python runs from {tmp_path}" in last and "cd labkit" in last
    assert "pip install -e labkit" in last


def test_installed_labkit_is_imported_instead(tmp_path):
    fake_clone(tmp_path)
    installed = tmp_path / "site" / "labkit"
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("WHICH = 'installed'\n")
    (installed / "core.py").write_text("X = 1\n")
    proc = python(
        "import labkit, labkit.core; print(labkit.WHICH, labkit.core.X, labkit.__file__)",
        cwd=tmp_path,
        pythonpath=str(tmp_path / "site"),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[:2] == ["installed", "1"]
    assert proc.stdout.split()[2] == str(installed / "__init__.py")


def test_from_inside_the_clone_the_package_is_imported(tmp_path):
    clone = fake_clone(tmp_path)
    proc = python("import labkit; print(labkit.WHICH)", cwd=clone)
    assert proc.returncode == 0 and proc.stdout.strip() == "the clone, uninstalled"
