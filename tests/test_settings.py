"""The LABKIT_* settings: each read in labkit.config only, each documented in the README.

labkit/_build.py reads LABKIT_SANITIZE itself (it runs at build time, before
labkit can be imported); labkit/testing/ holds harnesses of the suite, whose
variables the README names separately.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

from labkit import config

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "labkit"
READS = re.compile(r"""(?:environ\.get\(|environ\[|getenv\()\s*["'](LABKIT_\w+)""")
NAMES = re.compile(r"\bLABKIT_[A-Z_]+\b")


def _readers() -> dict[str, set[str]]:
    """Variable -> the labkit modules (outside labkit/testing) that read it."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = str(path.relative_to(ROOT))
        if rel.startswith("labkit/testing/"):
            continue
        for name in READS.findall(path.read_text()):
            found.setdefault(name, set()).add(rel)
    return found


def test_settings_are_read_in_config_only():
    readers = _readers()
    assert readers.pop("LABKIT_SANITIZE", set()) <= {"labkit/_build.py"}
    outside = {
        name: sorted(where - {"labkit/config.py"})
        for name, where in readers.items()
        if where - {"labkit/config.py"}
    }
    assert not outside, f"read outside labkit/config.py: {outside}"


def test_the_reader_scan_sees_a_read():
    assert READS.findall('x = os.environ.get("LABKIT_FOO", "")') == ["LABKIT_FOO"]
    assert READS.findall("os.environ['LABKIT_BAR']") == ["LABKIT_BAR"]


def test_every_setting_is_listed_and_documented():
    """Each LABKIT_* name labkit mentions is in config.SETTINGS, read by the function the
    table names, and has a row in the README's Settings table."""
    mentioned = set()
    for path in PACKAGE.rglob("*.py"):
        if "testing" not in path.relative_to(PACKAGE).parts:
            mentioned |= set(NAMES.findall(path.read_text()))
    listed = {s.name for s in config.SETTINGS}
    assert mentioned == listed, (mentioned - listed, listed - mentioned)
    for s in config.SETTINGS:
        if s.reader == "labkit/_build.py":
            assert s.name in READS.findall((ROOT / s.reader).read_text())
        else:
            assert f'"{s.name}"' in inspect.getsource(getattr(config, s.reader)), s
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("### Settings") :]
    table = table[: table.index("\n## ")]
    rows = set(re.findall(r"^\| `(LABKIT_\w+)` \|", table, flags=re.M))
    assert rows == listed


def test_no_setting_is_parsed_at_import():
    """Bad values everywhere: importing labkit and its model still works."""
    bad = {s.name: "bad\x01value" for s in config.SETTINGS if s.name != "LABKIT_EXT_PATH"}
    code = "import labkit, labkit.config, labkit.cli; labkit.IovIter; print('ok')"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**bad, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout.strip() == "ok", proc.stderr


def test_settings_found_in_tests_are_documented():
    """The suite's own variables are named in the README too."""
    readme = (ROOT / "README.md").read_text()
    used = set()
    for path in [*(ROOT / "tests").glob("*.py"), *(PACKAGE / "testing").glob("*.py")]:
        if path.name != Path(__file__).name:  # this file's examples are not settings
            used |= set(NAMES.findall(path.read_text()))
    missing = sorted(n for n in used if f"`{n}`" not in readme)
    assert not missing, missing
