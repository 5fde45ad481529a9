"""Build the kernel-source oracle: the real ``lib/iov_iter.c`` of each era, in user space.

For each era (:data:`ERAS`) and optimisation level (:data:`OPT_LEVELS`) this
compiles the tree's own ``lib/iov_iter.c`` with the tree's own kbuild for
``ARCH=um`` (``make ARCH=um defconfig``, then ``make ARCH=um lib/iov_iter.o``),
compiles labkit's kernel-side shim (``glue/lko_shim.c``) in the same tree, and
links both with labkit's user-side runtime (``glue/lko_runtime.c``) into

- ``liblko.so``: a shared library the differential tests load (cffi, ABI mode);
- ``lko-drive``: a program the instruction counts run under callgrind.

Trees come from Debian's ``linux-source-6.1`` and ``linux-source-6.12``
packages (``/usr/src/linux-source-*.tar.xz``, extracted in part: the build
needs ``scripts/``, ``include/``, ``arch/um``, ``arch/x86``, ``lib/``,
``kernel/``, ``init/`` and every Kconfig file), or from a tree the user names
(``--src`` / ``LABKIT_KERNEL_SRC``).  The era ``6.1+ubuf`` is 6.1 with the
seed mail's patch series applied from the mail itself, plus the GPL-2.0
patches in the repository's ``kernel/gpl/`` folder (``import_ubuf()`` from 6.2,
and the merged form's check of its return value).

Everything built is cached in the user's cache directory (platformdirs), keyed
by the tree, the patches, the glue and the compiler: a second build is a
cache hit. Each build is a checked store (:mod:`labkit._store`): built aside
under its lock, its files recorded (size, sha256) in a manifest and swapped in
whole; every reader verifies it first, and a damaged build is one error naming
the file and the command that rebuilds it (``labkit kernel build`` rebuilds it
at once). No link inside the cache is followed, and a tree the user names is
never written: the build works in a copy of it.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from labkit import _files, config
from labkit._store import Stage, Store, StoreDamaged
from labkit._tools import run_tool
from labkit.kernelsrc.tree import (
    SHIM,
    KernelSourceError,
    copy_parts,
    extract_tree,
    no_links,
    remove_path,
    run_step,
)

GLUE = Path(__file__).resolve().parent / "glue"
REPO_ROOT = Path(__file__).resolve().parents[2]
GPL_DIR = REPO_ROOT / "kernel" / "gpl"
SEED_MAIL = REPO_ROOT / "data" / "seeds" / "2023-iov_iter-ubuf-import-thread.txt"

#: The one command that installs what the oracle needs (Debian/Ubuntu).
INSTALL_HINT = (
    "apt-get install -y linux-source-6.1 linux-source-6.12 gcc make bc flex bison "
    "libelf-dev xz-utils patch valgrind"
)

#: Optimisation levels: the UML defconfig's own (CONFIG_CC_OPTIMIZE_FOR_SIZE: -Os), and
#: a distribution kernel's (CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE: -O2, given as KCFLAGS,
#: which kbuild appends after the config's -Os, so the last -O wins).
OPT_LEVELS: dict[str, str] = {"defconfig": "", "O2": "-O2"}


@dataclass(frozen=True)
class Era:
    """One kernel era: a tree (Debian package version) and the patches applied to it."""

    name: str
    tree: str
    seed_patch: bool = False
    gpl_patches: tuple[str, ...] = ()
    defines: tuple[str, ...] = field(default_factory=tuple)

    @property
    def package(self) -> str:
        return f"linux-source-{self.tree}"


ERAS: dict[str, Era] = {
    "6.1": Era("6.1", "6.1"),
    "6.1+ubuf": Era(
        "6.1+ubuf",
        "6.1",
        seed_patch=True,
        gpl_patches=(
            "0001-iov_iter-backport-import_ubuf-from-6.2.patch",
            "@seed",
            "0002-iov_iter-check-import_ubuf-return-in-single-segment-import.patch",
        ),
        defines=("LKO_HAVE_IMPORT_UBUF",),
    ),
    "6.12": Era("6.12", "6.12"),
}


@dataclass
class Built:
    """Where one era's build is, and how it was made."""

    era: str
    directory: Path
    record: dict

    def library(self, opt: str = "defconfig") -> Path:
        return self.directory / f"liblko-{opt}.so"

    def driver(self, opt: str = "defconfig") -> Path:
        return self.directory / f"lko-drive-{opt}"

    def kernel_object(self, opt: str = "defconfig") -> Path:
        return self.directory / f"iov_iter-{opt}.o"


def cache_dir() -> Path:
    """The oracle's cache: ``$LABKIT_KERNEL_CACHE`` or the user cache dir's ``kernel/``.

    Raises:
        KernelSourceError: the setting names something that is not a folder labkit can
            make or use (a file, a folder under ``/proc``, ``/sys`` or ``/dev``).
    """
    env = config.kernel_cache_setting()
    path = env if env else Path(platformdirs.user_cache_dir("labkit")) / "kernel"
    where = f"LABKIT_KERNEL_CACHE={env}" if env else f"the kernel cache {path}"
    real = Path(os.path.realpath(path))
    if any(real == Path(p) or Path(p) in real.parents for p in ("/proc", "/sys", "/dev")):
        raise KernelSourceError(f"{where}: not a folder for a cache (under {real.parts[1]}/)")
    if path.exists() and not path.is_dir():
        raise KernelSourceError(f"{where}: exists and is not a folder")
    return path


def _cache_root() -> Path:
    """:func:`cache_dir`, made (a one-line KernelSourceError if it cannot be)."""
    root = cache_dir()
    try:
        _files.make_dirs(root)
    except OSError as exc:
        raise KernelSourceError(f"kernel cache {root}: {exc.strerror or exc}") from None
    return root


def _need_tools() -> None:
    missing = [
        t for t in ("gcc", "make", "bc", "flex", "bison", "patch", "tar") if not shutil.which(t)
    ]
    if missing:
        raise KernelSourceError(
            f"the kernel-source oracle needs {', '.join(missing)}: install with\n  {INSTALL_HINT}"
        )


def source_archive(tree: str, root: str | os.PathLike = "/usr/src") -> Path:
    """Debian's ``/usr/src/linux-source-<tree>.tar.xz``, or a clear error naming the package."""
    path = Path(root) / f"linux-source-{tree}.tar.xz"
    if not path.exists():
        raise KernelSourceError(
            f"kernel source {path} is missing (Debian package linux-source-{tree}): install with\n"
            f"  {INSTALL_HINT}\nor name a tree with --src / LABKIT_KERNEL_SRC"
        )
    return path


def digest(*parts: bytes | str) -> str:
    """A short hash (16 hex digits) of ``parts``, each ended by a NUL: the caches' keys."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:16]


def seed_patch_text() -> str:
    """The seed mail's diffs (both patches, three hunks), cut from the mail as it stands."""
    out, on = [], False
    for line in SEED_MAIL.read_text().splitlines(keepends=True):
        if line.startswith("diff --git"):
            on = True
        elif on and re.match(r"^-- ?$", line.rstrip("\n")):
            on = False
        if on:
            out.append(line)
    return "".join(out)


def patch_texts(
    names: Iterable[str], era: str, error: type[Exception] = KernelSourceError
) -> list[tuple[str, str]]:
    """(name, text) of the patches ``names`` (``@seed``: the seed mail's), in order.

    Raises:
        error: a patch of the repository's kernel/gpl/ folder is missing (a wheel has none).
    """
    texts = []
    for name in names:
        if name == "@seed":
            texts.append(("seed mail " + SEED_MAIL.name, seed_patch_text()))
            continue
        path = GPL_DIR / name
        if not path.is_file():
            raise error(
                f"{path} is missing: the era {era} needs the GPL patches of the "
                "repository's kernel/gpl/ folder (build from a clone of labkit)"
            )
        texts.append((name, path.read_text()))
    return texts


def _patch_texts(era: Era) -> list[tuple[str, str]]:
    return patch_texts(era.gpl_patches, era.name)


def _glue_hash() -> str:
    return digest(*(p.read_bytes() for p in sorted(GLUE.glob("*.[ch]"))))


def _era_tree(era: Era, base: Path, work: Path, *, users: bool) -> Path:
    """A tree for the era in ``work/src``: a copy of ``base`` with its patches applied.

    Labkit's own extracted tree is copied as hard links (the files a patch or the
    build rewrites are replaced, never written through); a tree the user named
    (``users``) is copied for real, only the parts the build reads, so it is never
    written and may be read-only.
    """
    texts = _patch_texts(era)
    tree = work / "src"
    remove_path(tree)
    work.mkdir(parents=True, exist_ok=True)
    if users:
        copy_parts(base, tree)
    else:
        run_step(["cp", "-al", str(base), str(tree)], what="copying the tree")
    for rel in ("lib/iov_iter.c", "include/linux/uio.h"):  # the files the patches touch
        target = tree / rel
        data = target.read_bytes()
        target.unlink()
        target.write_bytes(data)
    for name, text in texts:
        proc = run_tool(
            ["patch", "-p1", "-F3", "--no-backup-if-mismatch"],
            cwd=tree, input=text, what=f"patch {name} on {era.tree}",
            error=KernelSourceError, tail_lines=10,
        )  # fmt: skip
        with (work / "patch.log").open("a") as log:
            log.write(f"== {name}\n{proc.stdout}")
    return tree


def _kbuild(tree: Path, out: Path, era: Era, opt_flags: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for rel in SHIM:  # the work tree hard-links labkit's extracted tree: new files, not writes
        (tree / rel).unlink(missing_ok=True)
        (tree / rel).write_bytes((GLUE / Path(rel).name).read_bytes())
    make = ["make", "-s", "ARCH=um", f"O={out}", f"-j{min(os.cpu_count() or 1, 4)}"]
    if not (out / ".config").exists():
        run_step([*make, "defconfig"], cwd=tree, what="make ARCH=um defconfig")
    kcflags = " ".join([opt_flags, *(f"-D{d}" for d in era.defines)]).strip()
    run_step(
        [*make, f"KCFLAGS={kcflags}", "lib/iov_iter.o", "lib/lko_shim.o"],
        cwd=tree,
        what=f"make ARCH=um lib/iov_iter.o ({era.name}, {opt_flags or 'defconfig'})",
    )


def _link(objdir: Path, dest: Path, opt: str) -> None:
    kobj = dest / f"iov_iter-{opt}.o"
    shim = dest / f"lko_shim-{opt}.o"
    shutil.copy(objdir / "lib" / "iov_iter.o", kobj)
    shutil.copy(objdir / "lib" / "lko_shim.o", shim)
    rt_pic = dest / "lko_runtime-pic.o"
    rt = dest / "lko_runtime.o"
    if not rt_pic.exists():
        run_step(
            ["gcc", "-O2", "-fPIC", "-Wall", "-c", str(GLUE / "lko_runtime.c"), "-o", str(rt_pic)]
        )
        run_step(["gcc", "-O2", "-Wall", "-c", str(GLUE / "lko_runtime.c"), "-o", str(rt)])
    # the kernel objects are -mcmodel=large -fno-PIE: text relocations are expected
    run_step(
        ["gcc", "-shared", "-o", str(dest / f"liblko-{opt}.so"), str(kobj), str(shim), str(rt_pic),
         "-Wl,-Bsymbolic", "-Wl,-z,notext", "-Wl,-z,defs"],
        what="linking the oracle library",
    )  # fmt: skip
    run_step(
        ["gcc", "-O2", "-no-pie", "-I", str(GLUE), "-o", str(dest / f"lko-drive-{opt}"),
         str(GLUE / "lko_drive.c"), str(kobj), str(shim), str(rt)],
        what="linking the callgrind driver",
    )  # fmt: skip


def _tree_identity(archive: Path | None, src: Path | None) -> str:
    if src is not None:
        version = run_step(["make", "-s", "kernelversion"], cwd=src).strip()
        return f"src:{src.resolve()}:{version}"
    assert archive is not None
    st = archive.stat()
    return f"deb:{archive.name}:{st.st_size}:{int(st.st_mtime)}"


def _gcc_version() -> str:
    return run_step(["gcc", "-dumpfullversion"]).strip()


def build(
    era: str,
    *,
    src: str | os.PathLike | None = None,
    force: bool = False,
    log: bool = False,
) -> Built:
    """Build one era (both optimisation levels), or return the cached build.

    Args:
        era: a key of :data:`ERAS` ("6.1", "6.1+ubuf", "6.12").
        src: a kernel tree to use instead of Debian's package (any version;
            ``LABKIT_KERNEL_SRC`` also names one).  The era's patches are
            applied to a copy of it.
        force: rebuild even if the cache holds this build.
        log: print each step and its time.

    Raises:
        KernelSourceError: a package, a tool or a build step is missing or
            failed (the message says what to install).
        KeyError: an unknown era.
    """
    e = ERAS[era]
    t0 = time.monotonic()
    src = src if src is not None else config.kernel_src_setting()
    src_path = Path(src) if src else None
    if src_path is not None and not (src_path / "lib" / "iov_iter.c").is_file():
        raise KernelSourceError(f"{src_path} is not a kernel tree (no lib/iov_iter.c)")
    _need_tools()
    archive = None if src_path else source_archive(e.tree)
    key = _key(e, archive, src_path)
    root = _cache_root()
    store = _store(root, e, key, src_path)
    no_links(store.folder.parent, root)
    if archive is not None:  # the tree is kept current even when the build is cached
        _debian_tree(archive, root)
    made: list[bool] = []

    def make(stage: Stage) -> None:
        if log:
            try:
                store.verify()
            except StoreDamaged as exc:
                print(f"  {e.name}: rebuilding a damaged build ({exc})")
            except FileNotFoundError:
                pass
        stage.record = _build(e, key, stage.path, src_path, archive, root, t0, log)
        made.append(True)

    try:
        record = store.build(make, force=force)
    except (StoreDamaged, _files.LinkRefused) as exc:
        raise KernelSourceError(str(exc)) from None
    return Built(e.name, store.folder, record | {"cached": not made})


def _store(root: Path, e: Era, key: str, src_path: Path | None) -> Store:
    """The checked store of era ``e``'s build with cache key ``key``."""
    cmd = f"labkit kernel build --era {e.name} --force"
    if src_path is not None:
        cmd += f" --src {src_path}"
    return Store(root / "builds" / f"{e.name}-{key}", rebuild=cmd, root=root)


def _key(e: Era, archive: Path | None, src_path: Path | None) -> str:
    """The cache key of era ``e``'s build: tree, patches, glue, driver, compiler, levels."""
    return digest(
        _tree_identity(archive, src_path),
        *(t for _, t in _patch_texts(e)),
        _glue_hash(),
        (GLUE / "lko_drive.c").read_bytes(),
        _gcc_version(),
        json.dumps(OPT_LEVELS, sort_keys=True),
    )


def cached(era: str) -> Built | None:
    """The era's build if the cache already holds it, else None; never builds.

    None too when it could not be built here (:func:`is_available` says why).

    Raises:
        KernelSourceError: the cache holds the build damaged (the message names the file
            and the command that rebuilds it).
    """
    e = ERAS[era]
    src = config.kernel_src_setting()
    try:
        _need_tools()
        archive = None if src else source_archive(e.tree)
        key = _key(e, archive, Path(src) if src else None)
    except KernelSourceError:
        return None
    store = _store(cache_dir(), e, key, Path(src) if src else None)
    try:
        record = store.read()
    except (StoreDamaged, _files.LinkRefused) as exc:
        raise KernelSourceError(str(exc)) from None
    if record is None:
        return None
    return Built(e.name, store.folder, record | {"cached": True})


def _debian_tree(archive: Path, root: Path) -> Path:
    """The extracted tree of Debian's ``archive`` in the cache (extracted if it is not, or
    if an older labkit's build wrote into it)."""
    top = archive.name.removesuffix(".tar.xz")
    return extract_tree(archive, root / "trees" / top, root)


def _build(
    e: Era,
    key: str,
    dest: Path,
    src_path: Path | None,
    archive: Path | None,
    root: Path,
    t0: float,
    log: bool,
) -> dict:
    """Build era ``e`` into the stage ``dest`` (the caller holds its lock); its record."""
    if src_path is None:
        assert archive is not None
        base = _debian_tree(archive, root)
    else:
        base = src_path
    t_extract = time.monotonic() - t0
    work = dest / "work"
    tree = _era_tree(e, base, work, users=src_path is not None)
    steps = {"extract_s": round(t_extract, 1)}
    for opt, flags in OPT_LEVELS.items():
        t1 = time.monotonic()
        objdir = work / "obj"
        _kbuild(tree, objdir, e, flags)
        _link(objdir, dest, opt)
        steps[f"build_{opt}_s"] = round(time.monotonic() - t1, 1)
        if log:
            print(f"  {e.name} {opt}: {steps[f'build_{opt}_s']} s")
    if (work / "patch.log").exists():
        shutil.copyfile(work / "patch.log", dest / "patch.log")
    shutil.rmtree(work)
    return {
        "era": e.name,
        "tree": _tree_identity(archive, src_path),
        "kernelversion": _kernelversion(dest),
        "patches": [n for n, _ in _patch_texts(e)],
        "gcc": _gcc_version(),
        "opt_levels": {k: (v or "-Os (UML defconfig)") for k, v in OPT_LEVELS.items()},
        "key": key,
        "seconds": round(time.monotonic() - t0, 1),
        **steps,
    }


def _kernelversion(dest: Path) -> str:
    lib = ctypes.CDLL(str(dest / "liblko-defconfig.so"))
    lib.lko_version.restype = ctypes.c_int64
    code = int(lib.lko_version())
    return f"{code >> 16}.{(code >> 8) & 0xFF}.{code & 0xFF}"


def build_all(*, src: str | None = None, force: bool = False, log: bool = False) -> list[Built]:
    """Build every era (6.1, 6.1+ubuf, 6.12), two at a time; cached builds are returned as they are.

    The eras build in parallel threads (each ``make`` runs its own jobs); the eras that
    share a source archive extract it once.
    """

    def one(name: str) -> Built:
        t = time.monotonic()
        b = build(name, src=src, force=force, log=log)
        if log:
            state = "cached" if b.record.get("cached") else "built"
            print(f"{name}: {state} in {time.monotonic() - t:.1f} s -> {b.directory}")
        return b

    # the two trees first (6.1 and 6.12 extract and build side by side), then 6.1+ubuf
    order = sorted(ERAS, key=lambda name: ERAS[name].seed_patch)
    with ThreadPoolExecutor(max_workers=2) as pool:
        built = dict(zip(order, pool.map(one, order), strict=True))
    return [built[name] for name in ERAS]


def is_available(eras: Iterable[str] | None = None) -> str | None:
    """None if every era (or each of ``eras``) can be built here, else the reason (with the
    install command)."""
    src = config.kernel_src_setting()
    if src is not None and not (src / "lib" / "iov_iter.c").exists():
        return f"LABKIT_KERNEL_SRC={src} is not a kernel tree (no lib/iov_iter.c)"
    try:
        _need_tools()
        for e in ERAS.values() if eras is None else (ERAS[name] for name in eras):
            if src is None:
                source_archive(e.tree)
            _patch_texts(e)
    except KernelSourceError as exc:
        return str(exc)
    return None
