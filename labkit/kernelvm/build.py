"""Build the bench's kernels: Debian's 6.1 tree, one era's patches, one config, kbuild out of tree.

Layout of the cache (``<kernel cache>/vm``, the kernel oracle's cache root):

``trees/<tree>``
    the source tree, extracted from ``/usr/src/linux-source-6.1.tar.xz`` (or copied from
    the tree named with ``src``; the user's tree is never written).
``work/<tree>-<config>/src``, ``.../obj``
    one work tree per configuration: a hard-linked copy of the tree with the current
    era's patches applied (each patched file is a file of its own), and kbuild's object
    folder (``O=``).  Switching eras restores the files the last era patched, applies the
    new era's patches and runs ``make`` again, which rebuilds what changed.
``builds/<era>-<config>-<key>``
    the artefacts of one build (``bzImage``, ``System.map``, ``config``), a checked store
    (:class:`labkit._store.Store`): built aside, recorded in a manifest with size and
    sha256, renamed into place, verified by every reader.  ``key`` hashes the tree, the
    patches, the config fragments, the compiler and this recipe.

Builds are reproducible (kbuild's timestamp, user, host and build number are fixed), so
an incremental build can be compared byte for byte with a clean one
(:func:`check_incremental`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit import config as settings
from labkit._files import FolderLock
from labkit._store import Stage, Store
from labkit._tools import run_tool
from labkit.kernelsrc.build import cache_dir as kernel_cache_dir
from labkit.kernelsrc.build import digest
from labkit.kernelvm.eras import (
    CONFIG_DIR,
    CONFIGS,
    ERAS,
    INSTALL_HINT,
    KernelVMError,
    config_text,
    missing_tools,
    patch_texts,
)

#: Bumped when the recipe changes what a build holds.
RECIPE = "kernelvm-build-1"
#: kbuild's variables that make a build reproducible.
_REPRO = {
    "KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 1970",
    "KBUILD_BUILD_USER": "labkit",
    "KBUILD_BUILD_HOST": "labkit",
    "KBUILD_BUILD_VERSION": "1",
}
ARTEFACTS = ("bzImage", "System.map", "config")


@dataclass
class Kernel:
    """One built kernel: its folder (a verified store) and its identity record."""

    era: str
    config: str
    folder: Path
    record: dict[str, Any]

    @property
    def image(self) -> Path:
        return self.folder / "bzImage"

    @property
    def system_map(self) -> Path:
        return self.folder / "System.map"


def cache_root() -> Path:
    """``<kernel cache>/vm`` (``$LABKIT_KERNEL_CACHE/vm`` or the user cache's ``kernel/vm``)."""
    return kernel_cache_dir() / "vm"


def gcc_version() -> str:
    """``gcc --version``'s first line."""
    return run_tool(["gcc", "--version"], error=KernelVMError).stdout.splitlines()[0]


def _archive() -> Path:
    path = Path("/usr/src/linux-source-6.1.tar.xz")
    if not path.is_file():
        raise KernelVMError(
            f"{path} is missing (Debian package linux-source-6.1): install with {INSTALL_HINT}, "
            "or name a tree with --src"
        )
    return path


def tree_identity(src: Path | None) -> str:
    """What identifies the source tree: the archive's name, size and mtime, or the tree's
    path and version."""
    if src is not None:
        version = run_tool(["make", "-s", "kernelversion"], cwd=src, error=KernelVMError)
        return f"src:{src.resolve()}:{version.stdout.strip()}"
    a = _archive()
    st = a.stat()
    return f"deb:{a.name}:{st.st_size}:{int(st.st_mtime)}"


def _locked(folder: Path, name: str) -> FolderLock:
    """A :class:`FolderLock` on ``folder/name``, waited for (polling) rather than refused."""
    lock = FolderLock(folder, name)
    while not lock.try_acquire():
        time.sleep(0.5)
    return lock


def base_tree(src: Path | None, root: Path) -> Path:
    """The source tree in the cache: extracted from Debian's archive, or a copy of ``src``."""
    ident = tree_identity(src)
    name = f"linux-6.1-{digest(ident)}" if src is None else f"src-{digest(ident)}"
    dest = root / "trees" / name
    done = dest / ".labkit-tree"
    if done.is_file() and done.read_text() == ident:
        return dest / "linux"
    lock = _locked(root / "trees", f".{name}.lock")
    try:
        if done.is_file() and done.read_text() == ident:
            return dest / "linux"
        tmp = root / "trees" / f".{name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if src is None:
            top = "linux-source-6.1"
            run_tool(
                ["tar", "-xJf", str(_archive()), "-C", str(tmp),
                 "--exclude", f"{top}/Documentation", "--exclude", f"{top}/arch/[a-tv-w]*",
                 "--exclude", f"{top}/arch/xtensa"],
                what="extracting linux-source-6.1", error=KernelVMError,
            )  # fmt: skip
            run_tool(
                ["tar", "-xJf", str(_archive()), "-C", str(tmp), "--wildcards",
                 f"{top}/arch/*Kconfig*", f"{top}/Documentation/*Kconfig*"],
                what="extracting linux-source-6.1's Kconfig files", error=KernelVMError,
            )  # fmt: skip
            (tmp / top).rename(tmp / "linux")
        else:
            run_tool(["cp", "-a", str(src), str(tmp / "linux")], error=KernelVMError)
            run_tool(["make", "-s", "mrproper"], cwd=tmp / "linux", error=KernelVMError)
        (tmp / ".labkit-tree").write_text(ident)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    finally:
        lock.release()
    return dest / "linux"


def _patched_files(text: str) -> list[str]:
    return re.findall(r"(?m)^\+\+\+ b/(\S+)", text)


def switch_patches(base: Path, tree: Path, era: str, state_file: Path) -> list[str]:
    """Make ``tree`` the base tree plus the era's patches; return the files it patched.

    The patches are applied to fresh copies of the base tree's files in a scratch folder;
    then each file the previous era or this one patches is replaced in ``tree`` only if
    its bytes differ (a new file of its own, so kbuild sees it changed), and left alone
    (mtime and all) if not: two eras that share a header rebuild only what differs.
    """
    state = json.loads(state_file.read_text()) if state_file.is_file() else {"files": []}
    texts = patch_texts(ERAS[era])
    if state.get("era") == era and state.get("texts") == digest(*(t for _, t in texts)):
        return state["files"]
    files = sorted({f for _, t in texts for f in _patched_files(t)})
    scratch = state_file.parent / "patching"
    shutil.rmtree(scratch, ignore_errors=True)
    for rel in files:
        (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(base / rel, scratch / rel)
    for name, text in texts:
        run_tool(["patch", "-p1", "-F3", "--no-backup-if-mismatch"], cwd=scratch, input=text,
                 what=f"applying {name} to 6.1", error=KernelVMError)  # fmt: skip
    state_file.write_text(
        json.dumps({"era": None, "files": sorted(set(files) | set(state["files"]))})
    )
    for rel in sorted(set(files) | set(state["files"])):
        want = (scratch / rel if rel in files else base / rel).read_bytes()
        target = tree / rel
        if target.is_file() and target.read_bytes() == want:
            continue
        target.unlink(missing_ok=True)
        target.write_bytes(want)
    shutil.rmtree(scratch, ignore_errors=True)
    state_file.write_text(
        json.dumps({"era": era, "texts": digest(*(t for _, t in texts)), "files": files})
    )
    return files


def _fragment_lines(text: str) -> list[str]:
    return [
        ln.strip()
        for ln in text.splitlines()
        if ln.startswith("CONFIG_") or re.match(r"# CONFIG_\w+ is not set", ln)
    ]


def make_config(tree: Path, obj: Path, config: str) -> None:
    """``make tinyconfig``, the config's fragments merged, ``olddefconfig``; every line of the
    fragments checked in the result."""
    env = os.environ | _REPRO
    run_tool(["make", "-s", f"O={obj}", "tinyconfig"], cwd=tree, env=env,
             what="make tinyconfig", error=KernelVMError)  # fmt: skip
    run_tool(
        ["scripts/kconfig/merge_config.sh", "-m", "-O", str(obj), str(obj / ".config"),
         *(str(CONFIG_DIR / f) for f in CONFIGS[config])],
        cwd=tree, env=env, what="merging the config fragments", error=KernelVMError,
    )  # fmt: skip
    run_tool(["make", "-s", f"O={obj}", "olddefconfig"], cwd=tree, env=env,
             what="make olddefconfig", error=KernelVMError)  # fmt: skip
    have = set((obj / ".config").read_text().splitlines())
    missing = [
        ln
        for ln in _fragment_lines(config_text(config))
        if ln not in have and not (ln.startswith("#") and ln.split()[1] + "=y" not in have)
    ]
    if missing:
        raise KernelVMError(f"the config {config} does not hold {', '.join(missing)} "
                            "after olddefconfig (a dependency is off)")  # fmt: skip


def build_key(era: str, config: str, src: Path | None) -> str:
    """The cache key of one build."""
    return digest(
        RECIPE,
        tree_identity(src),
        *(t for _, t in patch_texts(ERAS[era])),
        config_text(config),
        gcc_version(),
    )


def _store(era: str, config: str, src: Path | None, root: Path) -> Store:
    key = build_key(era, config, src)
    rebuild = f"labkit kernel vm build --era {era} --config {config} --force"
    return Store(root / "builds" / f"{era}-{config}-{key}", rebuild=rebuild, root=root)


def cached(era: str, config: str, src: str | os.PathLike[str] | None = None) -> Kernel | None:
    """The verified build if the cache holds it, else None (a damaged one raises StoreDamaged)."""
    root = cache_root()
    srcp = Path(src) if src else settings.kernel_src_setting()
    store = _store(era, config, srcp, root)
    record = store.read()
    return Kernel(era, config, store.folder, record) if record is not None else None


def build(
    era: str,
    config: str = "base",
    *,
    src: str | os.PathLike[str] | None = None,
    force: bool = False,
    log: Callable[[str], None] | None = None,
) -> Kernel:
    """Build (or return the cached, verified) kernel of ``era`` with ``config``.

    Args:
        era: a key of :data:`labkit.kernelvm.eras.ERAS`.
        config: a key of :data:`labkit.kernelvm.eras.CONFIGS`.
        src: a 6.1 tree to use instead of Debian's archive (copied, never written).
        force: build again even if the cache holds a good build.
        log: called with one line per step.

    Raises:
        KernelVMError: a tool, the tree or a build step is missing or failed.
        KeyError: an unknown era or config.
    """
    ERAS[era], CONFIGS[config]  # noqa: B018 - KeyError for unknown names
    if (why := missing_tools(build_only=True)) is not None:
        raise KernelVMError(why)
    root = cache_root()
    srcp = Path(src) if src else settings.kernel_src_setting()
    store = _store(era, config, srcp, root)

    def make(stage: Stage) -> None:
        stage.record = _build_into(stage.path, era, config, srcp, root, log)

    store.build(make, force=force)
    record = store.verify()
    return Kernel(era, config, store.folder, record)


def work_dir(config: str, srcp: Path | None, root: Path) -> Path:
    """The work folder of one configuration (its tree copy and kbuild's objects)."""
    return root / "work" / f"{digest(tree_identity(srcp))}-{config}-{digest(config_text(config))}"


def _build_into(
    dest: Path,
    era: str,
    config: str,
    srcp: Path | None,
    root: Path,
    log: Callable[[str], None] | None,
    work: Path | None = None,
) -> dict[str, Any]:
    say = log or (lambda _s: None)
    t0 = time.monotonic()
    base = base_tree(srcp, root)
    work = work or work_dir(config, srcp, root)
    work.mkdir(parents=True, exist_ok=True)
    lock = _locked(work, ".lock")  # one build per work tree at a time
    try:
        tree, obj = work / "src", work / "obj"
        if not (work / ".labkit-copied").is_file():
            shutil.rmtree(tree, ignore_errors=True)
            run_tool(["cp", "-al", str(base), str(tree)], what="copying the tree",
                     error=KernelVMError)  # fmt: skip
            (work / ".labkit-copied").touch()
        files = switch_patches(base, tree, era, work / "patched.json")
        marker = work / ".labkit-config"
        fresh = not marker.is_file()
        if fresh:  # a fresh object folder: kbuild's own, made for this config
            shutil.rmtree(obj, ignore_errors=True)
            make_config(tree, obj, config)
            marker.write_text(digest(config_text(config)))
        t1 = time.monotonic()
        run_tool(
            ["make", "-s", f"-j{settings.kernel_jobs()}", f"O={obj}", "bzImage"],
            cwd=tree, env=os.environ | _REPRO, what=f"building {era} ({config})",
            error=KernelVMError, tail_lines=20,
        )  # fmt: skip
        build_s = time.monotonic() - t1
        shutil.copyfile(obj / "arch/x86/boot/bzImage", dest / "bzImage")
        shutil.copyfile(obj / "System.map", dest / "System.map")
        shutil.copyfile(obj / ".config", dest / "config")
        release = (obj / "include/config/kernel.release").read_text().strip()
    finally:
        lock.release()
    say(f"{era} ({config}): {'clean' if fresh else 'incremental'} build {build_s:.0f} s")
    return {
        "era": era,
        "config": config,
        "what": ERAS[era].what,
        "patches": [n for n, _ in patch_texts(ERAS[era])],
        "patched_files": files,
        "release": release,
        "config_fragments": list(CONFIGS[config]),
        "config_sha256": hashlib.sha256((dest / "config").read_bytes()).hexdigest(),
        "gcc": gcc_version(),
        "tree": tree_identity(srcp),
        "recipe": RECIPE,
        "incremental": not fresh,
        "build_seconds": round(build_s, 1),
        "seconds": round(time.monotonic() - t0, 1),
    }


def check_incremental(era: str, config: str = "base") -> dict[str, Any]:
    """Build ``era`` clean in a fresh work folder and compare it byte for byte with the
    cached build (incremental or not).  Returns the sha256 of each artefact on both sides
    and whether they are equal; the fresh folder is removed."""
    kernel = build(era, config)
    root = cache_root()
    srcp = settings.kernel_src_setting()
    scratch = root / "work" / f".clean-{era}-{config}"
    shutil.rmtree(scratch, ignore_errors=True)
    out = scratch / "out"
    out.mkdir(parents=True)
    try:
        _build_into(out, era, config, srcp, root, None, work=scratch / "w")
        result: dict[str, Any] = {"era": era, "config": config, "artefacts": {}}
        for name in ARTEFACTS:
            a = hashlib.sha256((kernel.folder / name).read_bytes()).hexdigest()
            b = hashlib.sha256((out / name).read_bytes()).hexdigest()
            result["artefacts"][name] = {"cached": a, "clean": b, "equal": a == b}
        result["equal"] = all(v["equal"] for v in result["artefacts"].values())
        result["cached_was_incremental"] = kernel.record.get("incremental")
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


__all__: list[str] = []  # internal: used by the bench's matrix, CLI, benchmark and tests
