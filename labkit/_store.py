"""Checked stores: a folder of built artefacts that readers verify before they trust it.

One rule for every cache labkit reads back (the kernel oracle's builds, the
kernel bench's images):

* a store is one folder, ``<parent>/<name>``, walked from a trusted ``root``
  without following links (:func:`labkit._files.open_dir`);
* it is built under an exclusive lock (``<parent>/.<name>.build.lock``) into
  a temporary sibling folder (``<parent>/.<name>.tmp-<random>``); when the
  build succeeds every regular file in it is recorded (size and sha256) in
  ``manifest.json``, written last and fsynced, and the folder is renamed into
  place (an existing one is exchanged with it in one ``renameat2`` step, then
  removed, so ``--force`` never rewrites a folder a reader is using);
* a build that fails or is killed leaves only a hidden temporary sibling,
  which the next build removes;
* readers call :meth:`Store.verify` (or :meth:`Store.read`): every artefact
  present, a regular file (a link is refused, never followed), its size and
  sha256 as recorded. Any mismatch raises one :class:`StoreDamaged` whose
  message names the file and the command that rebuilds the store. The swap
  takes ``<parent>/.<name>.lock`` exclusively and readers take it shared, so
  a reader never sees a half-swapped folder.

Usage::

    store = Store(cache / "builds" / "6.1-abcd", rebuild="labkit kernel build --era 6.1",
                  root=cache)
    record = store.read()      # readers: None if never built; StoreDamaged if damaged

    def make(stage):           # builders: fill stage.path, say what was built
        (stage.path / "thing.so").write_bytes(...)
        stage.record = {"what": "it is"}

    record = store.build(make, force=False)   # kept if it verifies, else (re)built
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit._files import LinkRefused, open_dir, open_in
from labkit._untrusted import UntrustedFileError, parse_json

#: The manifest's name inside a store, and its format number.
MANIFEST = "manifest.json"
_FORMAT = 1
#: The largest manifest read back (bytes).
_MANIFEST_LIMIT = 4 << 20
_CHUNK = 1 << 20


class StoreDamaged(OSError):
    """A store's file is missing, not a regular file, or not what its manifest records.

    ``str()`` is one line: "<file>: <what is wrong>; rebuild with: <command>".
    ``filename`` is the file, ``rebuild`` the command.
    """

    def __init__(self, path: str | os.PathLike[str], problem: str, rebuild: str) -> None:
        self.rebuild = rebuild
        super().__init__(errno.EIO, problem, str(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}; rebuild with: {self.rebuild}"


@dataclass
class Stage:
    """A store being built: write the artefacts into ``path``; set ``record`` to what the
    manifest should say about the build (JSON-serialisable)."""

    path: Path
    record: dict[str, Any] = field(default_factory=dict)
    abandoned: bool = False

    def abandon(self) -> None:
        """Throw the stage away on exit; the store is left as it is."""
        self.abandoned = True


@contextlib.contextmanager
def _flock(dfd: int, name: str, shown: Path, op: int) -> Iterator[None]:
    """Hold ``flock(op)`` on the file ``name`` of folder ``dfd`` (made if absent, no link)."""
    fd = open_in(dfd, name, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, shown, regular=True)
    try:
        fcntl.flock(fd, op)
        yield
    finally:
        os.close(fd)  # drops the lock


_RENAME_EXCHANGE = 2
_libc: Any = None


def _exchange(dfd: int, a: str, b: str) -> bool:
    """Swap the names ``a`` and ``b`` of folder ``dfd`` in one step (``renameat2`` with
    ``RENAME_EXCHANGE``); False where the system or file system cannot."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(_libc, "renameat2", None)
    if fn is None:
        return False
    if fn(dfd, os.fsencode(a), dfd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def _sha256_fd(fd: int) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    while chunk := os.read(fd, _CHUNK):
        h.update(chunk)
        size += len(chunk)
    return size, h.hexdigest()


def _walk(dfd: int, prefix: str, shown: Path) -> Iterator[tuple[str, int]]:
    """(relative name, open fd) of every regular file below folder ``dfd``; links refused."""
    for name in sorted(os.listdir(dfd)):
        rel = f"{prefix}{name}"
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            raise LinkRefused(shown / rel)
        if stat.S_ISDIR(st.st_mode):
            sub = os.open(
                name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd
            )
            try:
                yield from _walk(sub, f"{rel}/", shown)
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode):
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            try:
                yield rel, fd
            finally:
                os.close(fd)
        else:
            raise OSError(errno.EINVAL, "not a regular file or folder", str(shown / rel))


class Store:
    """A verified folder of artefacts (see the module's docstring).

    Args:
        folder: the store's folder.
        rebuild: the command that rebuilds it (named in every :class:`StoreDamaged`).
        root: the trusted folder it is under (the cache root the user chose); no
            component below it is followed if it is a link. Default: ``folder``'s parent.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        rebuild: str,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.rebuild = rebuild
        self.root = Path(root) if root is not None else self.folder.parent

    @property
    def name(self) -> str:
        return self.folder.name

    def _damaged(self, rel: str, problem: str) -> StoreDamaged:
        return StoreDamaged(self.folder / rel, problem, self.rebuild)

    # ---- reading ---------------------------------------------------------------------

    def exists(self) -> bool:
        """Whether the store's folder (or something at its name) exists; nothing verified."""
        try:
            with open_dir(self.folder.parent, self.root, create=False) as pfd:
                os.stat(self.name, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def verify(self) -> dict[str, Any]:
        """Check every artefact against the manifest; return the manifest's ``record``.

        Takes the store's lock shared while it checks (a swap waits for it).

        Raises:
            FileNotFoundError: the store was never built (its folder is absent).
            StoreDamaged: a file is missing, a link, not a regular file, or its size or
                sha256 is not the recorded one; or the manifest is unreadable.
            LinkRefused: a folder on the way from ``root`` is a link.
        """
        lock = self.folder.parent / f".{self.name}.lock"
        try:
            with open_dir(self.folder.parent, self.root, create=False) as pfd:
                try:
                    with _flock(pfd, lock.name, lock, fcntl.LOCK_SH):
                        return self._verify_in(pfd)
                except OSError as exc:
                    if exc.errno not in (errno.EROFS, errno.EACCES) or exc.filename != str(lock):
                        raise
                # a read-only cache: nothing can swap it, so it is read without the lock
                return self._verify_in(pfd)
        except FileNotFoundError as exc:
            if isinstance(exc, StoreDamaged):  # pragma: no cover - StoreDamaged is EIO
                raise
            raise FileNotFoundError(errno.ENOENT, "not built", str(self.folder)) from None

    def read(self) -> dict[str, Any] | None:
        """The verified record, or None if the store was never built (see :meth:`verify`)."""
        try:
            return self.verify()
        except FileNotFoundError as exc:
            if isinstance(exc, StoreDamaged):  # pragma: no cover - StoreDamaged is EIO
                raise
            return None

    def _verify_in(self, pfd: int) -> dict[str, Any]:
        try:
            st = os.stat(self.name, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "not built", str(self.folder)) from None
        if stat.S_ISLNK(st.st_mode):
            raise self._damaged("", "a symbolic link where the store's folder belongs")
        if not stat.S_ISDIR(st.st_mode):
            raise self._damaged("", "not a folder")
        dfd = os.open(self.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                      dir_fd=pfd)  # fmt: skip
        try:
            manifest = self._manifest(dfd)
            for rel, want in manifest["artefacts"].items():
                self._check(dfd, rel, want)
            return manifest["record"]
        finally:
            os.close(dfd)

    def _open_member(self, dfd: int, rel: str) -> int:
        """An fd of the regular file ``rel`` below ``dfd``, no link followed on the way."""
        parts = rel.split("/")
        if not rel or any(p in ("", ".", "..") for p in parts):
            raise self._damaged(MANIFEST, f"names an artefact outside the store ({rel!r})")
        cur = os.dup(dfd)
        try:
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                try:
                    st = os.stat(part, dir_fd=cur, follow_symlinks=False)
                except FileNotFoundError:
                    raise self._damaged(rel, "missing") from None
                if stat.S_ISLNK(st.st_mode):
                    raise self._damaged(rel, "a symbolic link (refused, never followed)")
                if last:
                    if not stat.S_ISREG(st.st_mode):
                        raise self._damaged(rel, "not a regular file")
                    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
                else:
                    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                try:
                    nfd = os.open(part, flags, dir_fd=cur)
                except OSError as exc:
                    raise self._damaged(rel, f"cannot be opened ({exc.strerror})") from None
                os.close(cur)
                cur = nfd
            if not stat.S_ISREG(os.fstat(cur).st_mode):
                raise self._damaged(rel, "not a regular file")
            return cur
        except BaseException:
            os.close(cur)
            raise

    def _manifest(self, dfd: int) -> dict[str, Any]:
        fd = self._open_member(dfd, MANIFEST)
        try:
            if os.fstat(fd).st_size > _MANIFEST_LIMIT:
                raise self._damaged(MANIFEST, "larger than a manifest can be")
            data = os.read(fd, _MANIFEST_LIMIT + 1)
        finally:
            os.close(fd)
        try:
            m = parse_json(data, self.folder / MANIFEST, "manifest", expect=None)  # bounded depth
        except UntrustedFileError:
            raise self._damaged(MANIFEST, "not a readable manifest (not JSON)") from None
        ok = (
            isinstance(m, dict)
            and m.get("format") == _FORMAT
            and isinstance(m.get("record"), dict)
            and isinstance(m.get("artefacts"), dict)
            and all(
                isinstance(k, str)
                and isinstance(v, dict)
                and isinstance(v.get("size"), int)
                and isinstance(v.get("sha256"), str)
                for k, v in m["artefacts"].items()
            )
        )
        if not ok:
            raise self._damaged(MANIFEST, "not a manifest of this labkit (format or fields)")
        return m

    def _check(self, dfd: int, rel: str, want: dict[str, Any]) -> None:
        fd = self._open_member(dfd, rel)
        try:
            if os.fstat(fd).st_size != want["size"]:
                raise self._damaged(
                    rel, f"{os.fstat(fd).st_size} bytes, the manifest records {want['size']}"
                )
            size, digest = _sha256_fd(fd)
        finally:
            os.close(fd)
        if size != want["size"] or digest != want["sha256"]:
            raise self._damaged(rel, "its sha256 is not the one the manifest records")

    # ---- building --------------------------------------------------------------------

    def build(self, make: Callable[[Stage], None], *, force: bool = False) -> dict[str, Any]:
        """Build the store with ``make(stage)`` unless a good one exists; return its record.

        Without ``force``, a store that verifies (also one another process built while
        this one waited for the build lock) is kept; a damaged one is rebuilt. With
        ``force`` a new one is always built and swapped in. The record returned is the
        verified one.
        """
        if not force:
            with contextlib.suppress(FileNotFoundError, StoreDamaged):
                record = self.verify()
                self._tidy()
                return record
        with self.building() as stage:
            if not force:
                try:
                    record = self.verify()
                except (FileNotFoundError, StoreDamaged):
                    pass
                else:
                    stage.abandon()
                    return record
            make(stage)
        return self.verify()

    @contextlib.contextmanager
    def building(self) -> Iterator[Stage]:
        """Build the store: hold its build lock, yield a fresh temporary folder to fill.

        Waits while another process builds it. Leftovers of killed builds are
        removed first. On a normal exit every regular file in the stage is
        recorded in the manifest (written last) and the stage replaces the store
        in one swap; on an exception the stage is removed and the store is
        untouched.

        Raises:
            LinkRefused: the stage holds a link, or a folder on the way is one.
            OSError: the folder cannot be made or swapped.
        """
        parent = self.folder.parent
        with open_dir(parent, self.root, create=True) as pfd:
            with _flock(pfd, f".{self.name}.build.lock", parent / f".{self.name}.build.lock",
                        fcntl.LOCK_EX):  # fmt: skip
                self._remove_leftovers(pfd)
                tmp = f".{self.name}.tmp-{secrets.token_hex(4)}"
                os.mkdir(tmp, 0o777, dir_fd=pfd)
                stage = Stage(parent / tmp)
                try:
                    yield stage
                    if stage.abandoned:
                        shutil.rmtree(tmp, dir_fd=pfd)
                    else:
                        self._commit(pfd, tmp, stage)
                except BaseException:
                    with contextlib.suppress(OSError):
                        shutil.rmtree(tmp, dir_fd=pfd)
                    raise

    def _tidy(self) -> None:
        """Remove leftovers of killed builds if no build runs now (never waits)."""
        parent = self.folder.parent
        lock = parent / f".{self.name}.build.lock"
        with open_dir(parent, self.root, create=False) as pfd:
            try:
                with _flock(pfd, lock.name, lock, fcntl.LOCK_EX | fcntl.LOCK_NB):
                    self._remove_leftovers(pfd)
            except BlockingIOError:
                pass  # a build runs: it removes them itself
            except OSError as exc:
                if exc.errno not in (errno.EROFS, errno.EACCES):
                    raise

    def _remove_leftovers(self, pfd: int) -> None:
        """Remove temporary and swapped-out siblings of killed builds (build lock held)."""
        for name in os.listdir(pfd):
            if name.startswith((f".{self.name}.tmp-", f".{self.name}.old-")):
                st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(name, dir_fd=pfd)
                else:
                    os.unlink(name, dir_fd=pfd)

    def _commit(self, pfd: int, tmp: str, stage: Stage) -> None:
        shown = self.folder.parent / tmp
        sfd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pfd)
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(MANIFEST, dir_fd=sfd)
            artefacts = {}
            for rel, fd in _walk(sfd, "", shown):
                os.fsync(fd)
                size, digest = _sha256_fd(fd)
                artefacts[rel] = {"size": size, "sha256": digest}
            text = json.dumps(
                {"format": _FORMAT, "record": stage.record, "artefacts": artefacts},
                indent=1,
                sort_keys=True,
            )
            mfd = os.open(MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                          | os.O_CLOEXEC, 0o666, dir_fd=sfd)  # fmt: skip
            with open(mfd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.fsync(sfd)
        finally:
            os.close(sfd)
        with _flock(pfd, f".{self.name}.lock", self.folder.parent / f".{self.name}.lock",
                    fcntl.LOCK_EX):  # fmt: skip
            old = None
            try:
                os.stat(self.name, dir_fd=pfd, follow_symlinks=False)
            except FileNotFoundError:
                os.rename(tmp, self.name, src_dir_fd=pfd, dst_dir_fd=pfd)
            else:
                if _exchange(pfd, tmp, self.name):
                    old = tmp  # the old store, now under the temporary name
                else:  # no atomic exchange here: move the old aside, then the new in
                    old = f".{self.name}.old-{secrets.token_hex(4)}"
                    os.rename(self.name, old, src_dir_fd=pfd, dst_dir_fd=pfd)
                    os.rename(tmp, self.name, src_dir_fd=pfd, dst_dir_fd=pfd)
            os.fsync(pfd)
        if old is not None:
            st = os.stat(old, dir_fd=pfd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(old, dir_fd=pfd)
            else:
                os.unlink(old, dir_fd=pfd)


__all__: list[str] = []  # internal: the checked stores of labkit's caches
