"""Safe file operations: the one home for writing files and making folders.

Everything labkit writes (result tables, summary rows, figures, executed
notebooks, the state of a reproduction) goes through this module, so that a
folder an adversary can plant links in (a shared ``--out``, a folder run as
root) cannot turn a write against its user:

* a path is walked one component at a time from a **root** (the folder the
  user named: ``--out``, ``LABKIT_DATA``, ``labkit notebooks DIR``) with
  ``openat(..., O_NOFOLLOW | O_DIRECTORY)``; a symbolic link below the root,
  dangling or not, is refused with :class:`LinkRefused` naming it (the root
  itself is the user's choice and may be a link);
* new files are created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` against the
  descriptor of their folder, and files replaced atomically (a temporary
  file, fsynced, then ``renameat`` over the name: a rename never follows a
  link);
* a file opened for writing must be a regular file (a FIFO or a device is
  refused, never waited on);
* :class:`FolderLock` holds an output folder (``flock`` on a lock file) for
  the duration of a run and says who holds it.

Without an explicit root a path's own folder is the root: its last component
is still never followed.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import io
import os
import secrets
import socket
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW_DIR = _DIR_FLAGS | os.O_NOFOLLOW


class LinkRefused(OSError):
    """A symbolic link where labkit writes: refused, never followed.

    ``str()`` is "<path>: refusing to write through a symbolic link (...)";
    ``strerror`` is the part after the path.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(
            errno.ELOOP,
            "refusing to write through a symbolic link (planted? remove it and run again)",
            str(path),
        )

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class FolderLocked(OSError):
    """Another process holds the lock of a folder (see :class:`FolderLock`)."""

    def __init__(self, folder: str | os.PathLike[str], holder: str) -> None:
        self.holder = holder
        super().__init__(
            errno.EBUSY, f"{folder} is in use by another run ({holder}); wait for it to end"
        )

    def __str__(self) -> str:
        return str(self.strerror)


def _parts(path: Path, root: Path) -> list[str]:
    """The components of ``path`` below ``root`` (lexically, without resolving)."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel == ".":
        return []
    parts = Path(rel).parts
    if parts[0] == ".." or ".." in parts:
        raise ValueError(f"{path} is not inside {root}")
    return list(parts)


def _root_of(path: Path, root: str | os.PathLike[str] | None) -> Path:
    return Path(root) if root is not None else Path(os.path.abspath(path)).parent


def _refuse_if_not_dir(dfd: int, name: str, shown: Path) -> None:
    """Raise LinkRefused (or NotADirectoryError) for a component that is not a folder."""
    st = _check_not_link(dfd, name, shown)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "it exists and is not a directory", str(shown))


@contextlib.contextmanager
def open_dir(
    path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None, *, create: bool = True
) -> Iterator[int]:
    """A descriptor of the folder ``path``, walked from ``root`` without following links.

    Args:
        path: the folder.
        root: the trusted folder it is under (default: ``path`` itself, which
            is then opened as named).
        create: make missing folders (mode 0777 less the umask).

    Raises:
        LinkRefused: a component below ``root`` is a symbolic link.
        OSError: the folder cannot be made or opened.
    """
    path = Path(path)
    base = Path(root) if root is not None else path
    parts = _parts(path, base)
    if create:  # the root is the user's choice: made as named
        try:
            base.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file where the folder goes (mkdir says "File exists")
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(base)) from None
    fd = os.open(base, _DIR_FLAGS)
    shown = base
    try:
        for name in parts:
            shown = shown / name
            if create:
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nfd = os.open(name, _NOFOLLOW_DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    _refuse_if_not_dir(fd, name, shown)
                raise OSError(exc.errno, exc.strerror, str(shown)) from None
            os.close(fd)
            fd = nfd
        yield fd
    finally:
        os.close(fd)


def make_dirs(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> Path:
    """Make the folder ``path`` (and its parents below ``root``), refusing links; return it."""
    with open_dir(path, root if root is not None else path, create=True):
        pass
    return Path(path)


def _check_not_link(dfd: int, name: str, shown: Path) -> os.stat_result | None:
    """``name``'s own status in the folder ``dfd`` (None if absent); LinkRefused for a link."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise LinkRefused(shown)
    return st


def open_in(dfd: int, name: str, flags: int, shown: Path, *, regular: bool = False) -> int:
    """``os.open`` of ``name`` in the folder ``dfd`` with ``flags``, never through a link
    (``O_NOFOLLOW | O_CLOEXEC`` added; a new file gets 0666 less the umask).

    ``regular``: the file must be a regular file (EINVAL, the descriptor closed, if not).

    Raises:
        LinkRefused: ``name`` is a link.
        OSError: the open failed (errno kept, ``shown`` named).
    """
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkRefused(shown) from None
        raise OSError(exc.errno, exc.strerror, str(shown)) from None
    if regular and not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(shown))
    return fd


def atomic_write(
    path: str | os.PathLike[str],
    data: str | bytes | Callable[[IO[str]], Any],
    *,
    root: str | os.PathLike[str] | None = None,
) -> Path:
    """Replace ``path`` with ``data`` (text, bytes, or ``data(f)`` writing text), atomically.

    The bytes go to a new hidden file (``O_EXCL | O_NOFOLLOW``) in the same
    folder, which is fsynced and renamed over ``path``; if writing fails (or
    the process dies) ``path`` is untouched and the temporary file is removed
    (after a crash it is left as a hidden ``.*.tmp`` that no loader reads).
    The file gets the usual mode (0666 less the umask).

    Raises:
        LinkRefused: ``path`` or a folder on the way from ``root`` is a link.
        OSError: the file cannot be written (errno kept, the file named).
    """
    path = Path(path)
    with open_dir(path.parent, _root_of(path, root), create=True) as dfd:
        _check_not_link(dfd, path.name, path)
        for _ in range(100):
            tmp = f".{path.name}.{secrets.token_hex(4)}.tmp"
            try:
                fd = open_in(dfd, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, path)
                break
            except FileExistsError:
                continue
        else:  # pragma: no cover - 100 collisions of 32 random bits
            raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))
        try:
            with open(fd, "wb") as raw:
                if isinstance(data, bytes):
                    raw.write(data)
                else:
                    f = io.TextIOWrapper(raw, encoding="utf-8", newline="")
                    try:
                        if isinstance(data, str):
                            f.write(data)
                        else:
                            data(f)
                        f.flush()
                    finally:
                        f.detach()
                raw.flush()
                os.fsync(raw.fileno())
            os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            if isinstance(exc, OSError) and not exc.filename and not isinstance(exc, LinkRefused):
                raise OSError(exc.errno, exc.strerror, str(path)) from None
            raise
    return path


def open_file(
    path: str | os.PathLike[str],
    mode: str = "wb",
    *,
    root: str | os.PathLike[str] | None = None,
) -> IO[Any]:
    """Open ``path`` for writing ("wb": truncated, "ab": appended, "xb": new) without
    following a link; it must be (or become) a regular file.

    Raises:
        LinkRefused: ``path`` or a folder on the way from ``root`` is a link.
        OSError: e.g. FileExistsError for "xb" on an existing name, or ``path``
            is not a regular file (a FIFO, a device: EINVAL, never waited on).
    """
    flags = {
        "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
        "ab": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
        "xb": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
    }.get(mode)
    if flags is None:
        raise ValueError(f"open_file: mode must be 'wb', 'ab' or 'xb', got {mode!r}")
    path = Path(path)
    with open_dir(path.parent, _root_of(path, root), create=True) as dfd:
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a reader; cleared below
            fd = open_in(dfd, path.name, flags | os.O_NONBLOCK, path, regular=True)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO without a reader
                raise OSError(errno.EINVAL, "not a regular file", str(path)) from None
            raise
    try:
        os.set_blocking(fd, True)
        return open(fd, mode.replace("x", "w") if mode == "xb" else mode)
    except BaseException:
        os.close(fd)
        raise


def rename_within(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    root: str | os.PathLike[str] | None = None,
) -> None:
    """Rename ``src`` over ``dst`` (same folder), walking to it from ``root`` without links.

    A rename replaces a link at ``dst`` (never writes through it).
    """
    src, dst = Path(src), Path(dst)
    if os.path.abspath(src.parent) != os.path.abspath(dst.parent):
        raise ValueError(f"rename_within: {src} and {dst} are not in one folder")
    with open_dir(dst.parent, _root_of(dst, root), create=False) as dfd:
        try:
            os.replace(src.name, dst.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(dst)) from None


def remove(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> bool:
    """Remove the file (or link) ``path`` if it exists, without following links on the way.

    Returns whether something was removed.
    """
    path = Path(path)
    try:
        with open_dir(path.parent, _root_of(path, root), create=False) as dfd:
            os.unlink(path.name, dir_fd=dfd)
    except FileNotFoundError:
        return False
    return True


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    A FIFO, a device, a folder or a link to one is refused (never read, never
    waited on); so is a larger file.

    Raises:
        OSError: the file cannot be opened, is not a regular file (EINVAL) or
            is larger than ``limit`` (EFBIG); the file is named.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if st.st_size > limit:
            raise OSError(
                errno.EFBIG, f"{st.st_size} bytes, more than the {limit} allowed", str(path)
            )
        data = f.read(limit + 1)
    if len(data) > limit:  # grew while read
        raise OSError(errno.EFBIG, f"more than the {limit} bytes allowed", str(path))
    return data


def under(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``root`` or below it, by name (links not resolved)."""
    try:
        _parts(Path(path), Path(root))
    except ValueError:
        return False
    return True


def same_or_inside(inner: str | os.PathLike[str], outer: str | os.PathLike[str]) -> bool:
    """Whether folder ``inner`` is ``outer`` or below it (links resolved)."""
    a, b = Path(inner).resolve(), Path(outer).resolve()
    return a == b or b in a.parents


def _describe_holder() -> str:
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    cmd = " ".join(os.path.basename(a) if k == 0 else a for k, a in enumerate(sys.argv))[:200]
    return f"pid {os.getpid()} on {socket.gethostname()}, since {started}: {cmd}"


class FolderLock:
    """An exclusive ``flock`` on ``<folder>/<name>``, held while the ``with`` block runs.

    The lock file says who holds it (pid, host, start, command); a second
    holder gets :class:`FolderLocked` with that text at once (never waits).
    The kernel drops the lock when the holder dies, SIGKILL included, so a
    stale lock file is simply taken over.
    """

    def __init__(self, folder: str | os.PathLike[str], name: str = ".lock") -> None:
        self.folder = Path(folder)
        self.path = self.folder / name
        self._file: IO[Any] | None = None

    def try_acquire(self, *, create: bool = True) -> bool:
        """Take the lock if free; False (the lock file untouched) if another process holds it.

        With ``create=False`` a missing lock file is not made: False.
        """
        with open_dir(self.folder, self.folder, create=create) as dfd:
            flags = os.O_RDWR | (os.O_CREAT if create else 0) | os.O_NONBLOCK
            try:
                fd = open_in(dfd, self.path.name, flags, self.path, regular=True)
            except FileNotFoundError:
                if create:
                    raise
                return False
        f = open(fd, "r+b")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            return False
        except BaseException:
            f.close()
            raise
        f.truncate(0)
        f.write((_describe_holder() + "\n").encode())
        f.flush()
        self._file = f
        return True

    def holder(self) -> str:
        """What the lock file says about its holder ("unknown" if it says nothing)."""
        try:
            text = read_regular(self.path, 4096).decode("utf-8", "replace").strip()
        except OSError:
            text = ""
        return text or "unknown"

    def acquire(self) -> FolderLock:
        """Take the lock or raise :class:`FolderLocked` naming the holder."""
        if not self.try_acquire():
            raise FolderLocked(self.folder, self.holder())
        return self

    def release(self) -> None:
        """Drop the lock (the file stays: removing it would race with the next holder)."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.truncate(0)
            self._file.close()
            self._file = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__: list[str] = []  # internal: safe file writes for labkit's own modules
