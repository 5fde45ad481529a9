"""The kernel trees the oracle builds from, and the checked steps that make them.

Debian's source archive is extracted in part (the directories and files the
build reads, :data:`EXTRACT`) into a temporary sibling, marked complete and
renamed into place, under a lock, walking from the cache root without
following links; a tree the user names is copied (the same parts), never
written. Every build step runs through :func:`labkit._tools.run_tool`: a failure
is a :class:`KernelSourceError` naming the tool and its last line of stderr.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from labkit import _files
from labkit._tools import ToolFailed, run_tool

#: Directories and files of a tree the build reads (the rest is not extracted).
EXTRACT = (
    "Makefile",
    "Kbuild",
    "Kconfig",
    "scripts",
    "include",
    "arch/um",
    "arch/x86",
    "lib",
    "kernel",
    "init",
    "tools/include",
)


#: What a complete extraction's marker holds: a tree marked otherwise (an older labkit's,
#: whose builds could write through the hard links into it) is extracted again.
MARK = "labkit extracted tree, format 2: " + " ".join(EXTRACT) + "\n"

#: Where labkit's builds put their shim and its header (``glue/``) in their copy of a tree:
#: never in the tree itself.
SHIM = ("lib/lko_shim.c", "lib/lko.h")


class KernelSourceError(ToolFailed):
    """A kernel tree, a tool or a build step is missing or failed, or a cached build is
    damaged; the message says what to do."""


def run_step(
    cmd: list[str], cwd: Path | None = None, what: str = "", env: dict | None = None
) -> str:
    """Run a build step; a failure is a KernelSourceError naming the tool, its last
    stderr line, then the end of its log."""
    proc = run_tool(cmd, cwd=cwd, what=what, env=env, error=KernelSourceError, tail_lines=25)
    return proc.stdout


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created if needed) for the block.

    ``flock`` locks belong to an open file, so the lock excludes other threads of this
    process as well as other processes: ``build_all``'s threads, pytest-xdist's workers
    and a build started in the background by ``.ci/run`` wait for each other.
    """
    with _files.open_dir(path.parent, create=True) as dfd:
        try:
            fd = os.open(
                path.name,
                os.O_WRONLY
                | os.O_APPEND
                | os.O_CREAT
                | os.O_NOFOLLOW
                | os.O_CLOEXEC
                | os.O_NONBLOCK,
                0o666,
                dir_fd=dfd,
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _files.LinkRefused(path) from None
            raise
    with open(fd, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def extract_tree(archive: Path, dest: Path, root: Path | None = None) -> Path:
    """Extract the parts of a Debian kernel source archive the build needs; return the tree.

    The parts go to a temporary sibling, marked complete, then renamed to ``dest``; a
    killed extraction leaves only the sibling, removed by the next. No link between
    ``root`` (default: ``dest``'s parent) and ``dest`` is followed.
    """
    no_links(dest, root if root is not None else dest.parent)
    with locked(dest.with_name(dest.name + ".lock")):  # 6.1 and 6.1+ubuf extract it once
        return _extract_tree(archive, dest)


def _extract_tree(archive: Path, dest: Path) -> Path:
    top = archive.name.removesuffix(".tar.xz")
    if _is_extracted(dest, top):
        return dest / top
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    members = [f"{top}/{p}" for p in EXTRACT]
    run_step(
        ["tar", "-xJf", str(archive), "-C", str(tmp), "--wildcards", "--no-wildcards-match-slash",
         *members, "--wildcards-match-slash", f"{top}/*Kconfig*"],
        what=f"extracting {archive.name}",
    )  # fmt: skip
    (tmp / ".labkit-extracted").write_text(MARK)
    remove_path(dest)
    tmp.rename(dest)
    return dest / top


def _is_extracted(dest: Path, top: str) -> bool:
    """Whether ``dest`` holds a complete, clean extraction of this labkit's format."""
    done = dest / ".labkit-extracted"
    if done.is_symlink() or not done.is_file() or not (dest / top).is_dir():
        return False
    if done.read_text(errors="replace") != MARK:
        return False
    return not any(os.path.lexists(dest / top / rel) for rel in SHIM)


def remove_path(path: Path) -> None:
    """Remove a folder or file (a link itself, never what it points to); nothing if absent."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def no_links(path: Path, root: Path) -> None:
    """Make ``path`` (a folder under ``root``); LinkRefused (a KernelSourceError line) if a
    component below ``root`` is a link."""
    try:
        _files.make_dirs(path, root)
    except _files.LinkRefused as exc:
        raise KernelSourceError(f"{exc} (in the kernel cache)") from None


def copy_parts(base: Path, tree: Path) -> None:
    """Copy the parts of the user's tree ``base`` the build reads into ``tree`` (writable)."""
    try:
        tree.mkdir(parents=True)
        for rel in EXTRACT:
            src = base / rel
            if src.is_dir() and not src.is_symlink():
                shutil.copytree(src, tree / rel, symlinks=True, dirs_exist_ok=True)
            elif src.is_file():
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, tree / rel)
        for src in base.rglob("Kconfig*"):
            dst = tree / src.relative_to(base)
            if src.is_file() and not src.is_symlink() and not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
        for folder, _dirs, files in os.walk(tree):
            for name in [".", *files]:
                p = os.path.join(folder, name)
                if not os.path.islink(p):
                    os.chmod(p, os.stat(p).st_mode | 0o200)
    except OSError as exc:
        raise KernelSourceError(f"copying the tree {base}: {exc}") from None
