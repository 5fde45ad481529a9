"""The kernel bench's cache trusts nothing it did not check, as the oracle's does.

A built kernel and the guest's initramfs are checked stores. Reading a kernel whose
file is damaged (truncated, empty, garbage, a link) or whose manifest is, is one line
naming it and the command that rebuilds it; a link planted where a build folder was is
refused, from the Python API and from ``labkit kernel vm``, and never written through;
the builders (``build``, ``initramfs``, and so every boot) build a damaged store again
rather than boot it.  Each test works
on its own copy of the cache (the suite's 6.1 build is copied, never written).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cache_damage import KINDS, damage

from labkit._files import LinkRefused
from labkit._store import MANIFEST, StoreDamaged
from labkit.kernelvm import build, eras, guest

MISSING = eras.missing_tools(build_only=True)
if MISSING is None and not Path("/usr/src/linux-source-6.1.tar.xz").is_file():
    MISSING = f"/usr/src/linux-source-6.1.tar.xz is missing: install with {eras.INSTALL_HINT}"
needs_bench = pytest.mark.skipif(MISSING is not None, reason=f"kernel bench: {MISSING}")
pytestmark = [pytest.mark.slow, needs_bench]

ERA, CONFIG = "6.1", "base"
REBUILD = f"labkit kernel vm build --era {ERA} --config {CONFIG} --force"
#: A redraw of the command's progress line (tqdm on stderr), not a message.
PROGRESS = re.compile(r"^labkit kernel vm \w+: \d+/\d+ kernels \[")


@pytest.fixture(scope="module")
def good() -> build.Kernel:
    """The suite's stock 6.1 kernel (built once, then cached)."""
    return build.build(ERA, CONFIG)


@pytest.fixture()
def vm_cache(good, tmp_path, monkeypatch) -> Path:
    """A private cache holding a copy of the good build's store; its folder."""
    root = tmp_path / "cache"
    dest = root / "vm" / "builds" / good.folder.name
    shutil.copytree(good.folder, dest)
    monkeypatch.setenv("LABKIT_KERNEL_CACHE", str(root))
    assert build.cached(ERA, CONFIG) is not None
    return dest


def _vm_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "labkit.cli", "kernel", "vm", *args],
        capture_output=True, text=True, timeout=120, env=os.environ.copy(),
    )  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("artefact", [*build.ARTEFACTS, MANIFEST])
def test_a_damaged_kernel_is_one_line_naming_it_and_the_rebuild(vm_cache, tmp_path, artefact, kind):
    damage(vm_cache / artefact, kind, tmp_path)
    with pytest.raises((StoreDamaged, LinkRefused)) as info:
        build.cached(ERA, CONFIG)
    text = str(info.value)
    assert "\n" not in text and artefact in text, text
    if artefact != MANIFEST or kind != "link":
        assert REBUILD in text, text


def test_a_link_where_a_build_folder_belongs_is_damage_never_followed(vm_cache, tmp_path):
    victim = tmp_path / "victim"
    shutil.move(vm_cache, victim)
    vm_cache.symlink_to(victim, target_is_directory=True)
    with pytest.raises(StoreDamaged) as info:
        build.cached(ERA, CONFIG)
    assert "\n" not in str(info.value) and "symbolic link" in str(info.value)
    assert REBUILD in str(info.value)


def test_a_link_on_the_way_to_the_builds_is_one_line_and_never_written_through(vm_cache, tmp_path):
    builds = vm_cache.parent
    victim = tmp_path / "victim"
    shutil.move(builds, victim)
    builds.symlink_to(victim, target_is_directory=True)
    before = sorted(p.name for p in victim.rglob("*"))
    with pytest.raises(LinkRefused):
        build.cached(ERA, CONFIG)
    done = _vm_cli("build", "--era", ERA, "--config", CONFIG)
    assert done.returncode == 2 and "symbolic link" in done.stderr, done.stdout + done.stderr
    said = [x for x in done.stderr.strip().splitlines() if x and not PROGRESS.match(x)]
    assert len(said) == 1 and "Traceback" not in done.stderr, done.stderr  # besides progress
    assert sorted(p.name for p in victim.rglob("*")) == before  # nothing written through


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_initramfs_is_rebuilt_never_booted(vm_cache, tmp_path, kind):
    root = vm_cache.parent.parent
    image = guest.initramfs(root)  # built into the private cache
    whole = image.read_bytes()
    assert guest.initramfs(root) == image  # and read back, checked
    damage(image, kind, tmp_path)
    again = guest.initramfs(root)  # the builder sees the damage and builds it again
    assert not again.is_symlink() and again.read_bytes()[:6] == b"070701"
    assert len(again.read_bytes()) == len(whole)
    if kind == "link":
        assert (tmp_path / "elsewhere").read_bytes() == whole  # the link's target: not written
