"""The kernel oracle's cache trusts nothing it did not check.

Each build is a checked store: a killed build at any stage recovers, a damaged
file (truncated, empty, garbage, a link) is one line naming it and the command
that rebuilds it (never a SIGBUS or a count of 0), ``--force`` builds a new
folder and swaps it in, no link in the cache is followed, and a tree named
with ``--src`` is never written.  Each test works on its own copy of the cache.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from cache_damage import KINDS, damage

from labkit.kernelsrc import build as kb
from labkit.kernelsrc.build import KernelSourceError, build, cached, is_available
from labkit.kernelsrc.tree import SHIM

MISSING = is_available(["6.12"])


def needs_oracle(test):
    """A test on a copy of the built oracle: slow (a fresh machine builds it first; several
    rebuild it), and skipped where the oracle's kernel tree is missing."""
    return pytest.mark.slow(
        pytest.mark.skipif(MISSING is not None, reason=f"kernel oracle: {MISSING}")(test)
    )


ERA = "6.12"
REBUILD = f"labkit kernel build --era {ERA} --force"


@pytest.fixture(scope="module")
def good():
    """The suite's own build of 6.12 (built once, then cached)."""
    return build(ERA)


@pytest.fixture()
def cache(good, tmp_path, monkeypatch):
    """A private cache holding a copy of the good build (trees hard-linked)."""
    root = tmp_path / "cache"
    (root / "builds").mkdir(parents=True)
    shutil.copytree(good.directory, root / "builds" / good.directory.name)
    trees = kb.cache_dir() / "trees"
    subprocess.run(["cp", "-al", str(trees), str(root / "trees")], check=True)
    monkeypatch.setenv("LABKIT_KERNEL_CACHE", str(root))
    return root / "builds" / good.directory.name


def _cli(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "labkit.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


ARTEFACTS = ["liblko-defconfig.so", "lko-drive-defconfig", "iov_iter-defconfig.o", "manifest.json"]


@needs_oracle
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("artefact", ARTEFACTS)
def test_damaged_cache_file_is_one_line_naming_it_and_the_rebuild(cache, tmp_path, artefact, kind):
    damage(cache / artefact, kind, tmp_path)
    with pytest.raises(KernelSourceError) as info:
        cached(ERA)
    text = str(info.value)
    assert "\n" not in text and str(cache / artefact) in text and REBUILD in text


@needs_oracle
def test_kernel_build_rebuilds_a_damaged_cache_and_readers_never_load_it(cache, tmp_path):
    lib = cache / "liblko-defconfig.so"
    os.truncate(lib, lib.stat().st_size // 2)  # once: a SIGBUS in `kernel diff`
    done = _cli("kernel", "diff", "--sequences", "20")
    assert done.returncode == 0, done.stderr
    assert cached(ERA) is not None  # rebuilt, whole
    os.truncate(lib, 0)
    done = _cli("kernel", "build", "--era", ERA)
    assert done.returncode == 0 and f"{ERA}: built" in done.stdout, done.stdout + done.stderr


def test_tools_that_read_nothing_are_errors_never_a_zero(tmp_path):
    from labkit._tools import ToolFailed, positive_count
    from labkit.kernelsrc.counts import _callgrind, _kernel_functions

    empty, garbage = tmp_path / "empty.o", tmp_path / "garbage.o"
    empty.write_bytes(b"")
    garbage.write_bytes(os.urandom(4096))
    for obj in (empty, garbage):
        with pytest.raises(KernelSourceError, match=r"nm|functions nm found") as info:
            _kernel_functions(obj)
        assert "\n" not in str(info.value)
    if shutil.which("valgrind"):
        empty.chmod(0o755)
        with pytest.raises(KernelSourceError, match="cannot give"):
            _callgrind(empty, ["readv", "100", "1"], ["lko_import_iovec"], {"iov_iter_init"})
    with pytest.raises(ToolFailed, match="cannot give"):
        positive_count(0.0, "instructions per call")
    with pytest.raises(ToolFailed, match="cannot give"):
        positive_count(float("nan"), "instructions per call")


_KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from labkit.kernelsrc import build as kb
    import labkit._store as st
    stage = sys.argv[1]

    def die():
        os.killpg(0, signal.SIGKILL)

    run = kb.run_step
    def _run(cmd, cwd=None, what="", env=None):
        joined = " ".join(cmd)
        if stage == "compile" and what.startswith("make ARCH=um lib/iov_iter.o"):
            die()
        out = run(cmd, cwd=cwd, what=what, env=env)
        if stage == "defconfig" and what == "make ARCH=um defconfig":
            die()
        if stage == "runtime" and "lko_runtime.c" in joined and "-fPIC" in joined:
            die()
        if stage == "link" and what == "linking the oracle library":
            die()
        return out
    kb.run_step = _run

    renames = []
    rename = os.rename
    def _rename(src, dst, **kw):
        renames.append(src)
        if stage == "swap":
            die()
        rename(src, dst, **kw)
    st.os.rename = _rename
    exchange = st._exchange
    def _exchange(dfd, a, b):
        if stage == "swap":
            die()
        done = exchange(dfd, a, b)
        if stage == "swap-old":
            die()
        return done
    st._exchange = _exchange
    kb.build(kb.ERAS and "6.12", force=True)
    """
)


def _killed_build(stage: str) -> int:
    proc = subprocess.run(
        [sys.executable, "-c", _KILLER, stage],
        capture_output=True,
        text=True,
        timeout=600,
        start_new_session=True,
    )
    return proc.returncode


@needs_oracle
@pytest.mark.parametrize("stage", ["defconfig", "compile", "runtime", "link", "swap", "swap-old"])
def test_a_build_killed_at_any_stage_recovers(cache, stage):
    before, inode = cached(ERA).record, os.stat(cache).st_ino
    assert _killed_build(stage) == -signal.SIGKILL
    after = cached(ERA)  # killed before its swap: the old build, whole; after: the new one
    assert after is not None
    assert (os.stat(cache).st_ino != inode) == (stage == "swap-old")
    if stage != "swap-old":
        assert after.record == before
    again = build(ERA)
    assert cached(ERA) is not None and again.library().is_file()
    assert not [p for p in cache.parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


@needs_oracle
def test_a_build_killed_in_a_fresh_cache_is_rebuilt(cache):
    """Killed after one runtime object was compiled: the next build must not reuse it."""
    shutil.rmtree(cache)
    assert _killed_build("runtime") == -signal.SIGKILL
    assert cached(ERA) is None
    assert build(ERA).record["cached"] is False and cached(ERA) is not None


@needs_oracle
def test_force_swaps_a_new_folder_in_while_readers_verify(cache):
    held = os.open(cache / "liblko-defconfig.so", os.O_RDONLY)
    inode = os.stat(cache).st_ino
    data = os.pread(held, 1 << 20, 0)
    seen, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            try:
                seen.append(cached(ERA) is not None)
            except KernelSourceError as exc:  # pragma: no cover - the failure this test is for
                seen.append(str(exc))

    t = threading.Thread(target=reader)
    t.start()
    try:
        build(ERA, force=True)
    finally:
        stop.set()
        t.join()
    try:
        assert os.stat(cache).st_ino != inode  # a new folder, not the old one rewritten
        assert os.pread(held, 1 << 20, 0) == data  # the reader's open file untouched
    finally:
        os.close(held)
    assert seen and all(s is True for s in seen), [s for s in seen if s is not True][:3]


@needs_oracle
def test_links_in_the_cache_are_never_followed(cache, tmp_path):
    victim = tmp_path / "victim"
    (victim / "src").mkdir(parents=True)
    (victim / "obj").mkdir()
    (victim / "src" / "mine").write_text("keep")
    shutil.rmtree(cache)
    cache.symlink_to(victim)
    with pytest.raises(KernelSourceError, match="symbolic link"):
        cached(ERA)
    built = build(ERA)  # the link is swapped out, never written through
    assert built.record["cached"] is False and not cache.is_symlink()
    assert sorted(p.name for p in victim.rglob("*")) == ["mine", "obj", "src"]
    # a link on the way (builds/) and at a lock file: one line, nothing written there
    builds = cache.parent
    shutil.move(builds, tmp_path / "real-builds")
    builds.symlink_to(victim)
    done = _cli("kernel", "build", "--era", ERA)
    assert done.returncode == 2 and "symbolic link" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    builds.unlink()
    shutil.move(tmp_path / "real-builds", builds)
    lock = builds / f".{cache.name}.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(victim / "planted")
    with pytest.raises(KernelSourceError, match="symbolic link"):
        cached(ERA)
    assert not (victim / "planted").exists()
    assert sorted(p.name for p in victim.rglob("*")) == ["mine", "obj", "src"]


def _snapshot(tree: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(tree)): (p.lstat().st_size, p.lstat().st_mtime_ns)
        for p in tree.rglob("*")
    }


@needs_oracle
def test_src_tree_is_never_written(cache, tmp_path):
    user = tmp_path / "linux"
    root = cache.parent.parent  # a clean extraction (an older labkit's tree is extracted again)
    base = kb.extract_tree(kb.source_archive("6.12"), root / "trees" / "linux-source-6.12", root)
    assert not any((base / rel).exists() for rel in SHIM)
    shutil.copytree(base, user, symlinks=True)
    before = _snapshot(user)
    for folder, _dirs, files in os.walk(user):  # read-only, as a packaged tree is
        for name in [".", *files]:
            p = os.path.join(folder, name)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode & ~0o222)
    try:
        built = build(ERA, src=user)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(user)], check=True)
    assert built.library().is_file() and cached(ERA) is not None
    assert not any((user / rel).exists() for rel in SHIM)
    after = _snapshot(user)
    assert after == before


@pytest.mark.slow  # two `labkit kernel build` runs: 6-12 s, the slowest left in make test-fast
def test_kernel_cache_setting_that_is_no_folder_is_one_line(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for value in (str(afile), "/proc/self"):
        done = _cli("kernel", "build", "--era", ERA, env={"LABKIT_KERNEL_CACHE": value})
        assert done.returncode == 2, (value, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "LABKIT_KERNEL_CACHE" in done.stderr


@needs_oracle
def test_a_tree_an_older_labkit_wrote_into_is_extracted_again(cache):
    root = cache.parent.parent
    dest = root / "trees" / "linux-source-6.12"
    base = kb.extract_tree(kb.source_archive("6.12"), dest, root)
    for rel in SHIM:  # the shim and its header, each on its own
        planted = base / rel
        planted.write_text("/* written through a hard link by an older build */\n")
        again = kb.extract_tree(kb.source_archive("6.12"), dest, root)
        assert again == base and not planted.exists() and (again / "lib/iov_iter.c").is_file()
    (dest / ".labkit-extracted").write_text("")  # an older marker: extracted again too
    planted.write_text("x")
    assert not kb.extract_tree(kb.source_archive("6.12"), dest, root).joinpath(rel).exists()
