"""What ``labkit reproduce`` keeps between runs: hashes, per-notebook state, the output check.

Each notebook has ``<out>/.state/NN-name.json``.  Before a notebook runs its
state is replaced by ``{"status": "running", ...}``; the final state (status,
time, per-cell times, the sha256 of the executed copy, the code version) is
written only after every output of the notebook is complete.  So a run that
is killed, interrupted or runs out of disk leaves a state that a rerun does
not trust (:func:`up_to_date`), never one that claims a half-executed
notebook ran.
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import labkit
from labkit import _files
from labkit.config import PACKAGE_DIR, checkout
from labkit.measure.envinfo import git_state
from labkit.report.bundle import state_path

SOURCE_SUFFIXES = (".py", ".c", ".h", ".cdef")
#: Folders of the output directory.
SUBDIRS = ("notebooks", "html", "figures", "summary", "results", ".state")
#: Free space required before the first notebook runs (a full reproduction writes ~15 MB).
MIN_FREE_BYTES = 64 << 20
#: Largest notebook read (source or executed copy; the largest executed one is ~3 MB).
MAX_NOTEBOOK_BYTES = 256 << 20
#: Largest state or summary row file read back (one is about 1 kB).
MAX_ROW_BYTES = 1 << 20


class OutputError(Exception):
    """An output file or folder could not be written: ``str()`` is one line with path and cause."""

    def __init__(self, path: str | os.PathLike[str], cause: str) -> None:
        self.path = str(path)
        self.cause = cause
        super().__init__(f"cannot write {self.path}: {cause}")

    @classmethod
    def from_oserror(cls, exc: OSError, default: str | os.PathLike[str]) -> OutputError:
        """The OutputError for ``exc`` (its file name if it has one, else ``default``)."""
        cause = exc.strerror or (errno.errorcode.get(exc.errno or 0) or type(exc).__name__)
        return cls(exc.filename or default, cause)


class NotebookError(Exception):
    """A notebook file cannot be read (missing, not JSON, not a notebook)."""


def now_iso() -> str:
    """Now, UTC, to the second (ISO 8601)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def read_notebook(path: Path) -> dict[str, Any]:
    """The notebook's JSON; :class:`NotebookError` naming the file if it is not a notebook."""
    try:
        nb = json.loads(_files.read_regular(path, MAX_NOTEBOOK_BYTES).decode("utf-8"))
    except OSError as exc:
        raise NotebookError(f"{path}: cannot read: {exc.strerror}") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise NotebookError(f"{path}: not a valid notebook (JSON: {exc})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError(f"{path}: not a notebook (no list of cells)")
    return nb


def notebook_sources(path: Path) -> bytes:
    """The cells of a notebook (type, source, tags), without outputs or execution counts."""
    cells = []
    for cell in read_notebook(path)["cells"]:
        src = cell.get("source", "")
        cells.append(
            [
                cell.get("cell_type"),
                "".join(src) if isinstance(src, list) else src,
                sorted(cell.get("metadata", {}).get("tags", [])),
            ]
        )
    return json.dumps(cells, sort_keys=True).encode()


def package_sources(package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """Every source file of the labkit package (Python and C), sorted (shipped data excluded)."""
    return sorted(
        p
        for p in package_dir.rglob("*")
        if p.suffix in SOURCE_SUFFIXES
        and p.is_file()
        and "__pycache__" not in p.parts
        and "_resources" not in p.relative_to(package_dir).parts
        and p.name != "_labkit.c"
    )


def _package_digest(package_dir: Path) -> bytes:
    h = hashlib.sha256()
    for src in package_sources(package_dir):
        h.update(b"\0file\0" + str(src.relative_to(package_dir)).encode() + b"\0")
        h.update(src.read_bytes())
    return h.digest()


def run_hash(notebook: Path, params: dict[str, Any], package_dir: Path = PACKAGE_DIR) -> str:
    """sha256 of the notebook's cells, the package's sources and the parameters.

    Raises:
        NotebookError: if the notebook cannot be read.
    """
    h = hashlib.sha256()
    h.update(b"notebook\0" + notebook_sources(notebook))
    h.update(_package_digest(package_dir))
    h.update(b"\0params\0" + json.dumps(params, sort_keys=True).encode())
    return h.hexdigest()


@lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """Which code produced a result: labkit's version, git commit (in a clone), source digest."""
    root = checkout()
    commit, dirty = git_state(root) if root is not None else (None, None)
    return {
        "labkit": labkit.__version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "sources_sha256": _package_digest(PACKAGE_DIR).hex()[:12],
    }


def describe_code(code: dict[str, Any] | None) -> str:
    """A code version in words: "labkit 0.1.0, git 1a2b3c4d (local changes)"."""
    if not code:
        return "unknown"
    text = f"labkit {code.get('labkit', '?')}"
    if code.get("git_commit"):
        text += f", git {code['git_commit'][:10]}"
        if code.get("git_dirty"):
            text += " with local changes"
    else:
        text += f", sources {code.get('sources_sha256', '?')}"
    return text


def file_sha256(path: Path) -> str | None:
    """sha256 of a file's bytes, None if it cannot be read."""
    try:
        return hashlib.sha256(_files.read_regular(path, MAX_NOTEBOOK_BYTES)).hexdigest()
    except OSError:
        return None


def write_state(out: Path, nb_name: str, state: dict[str, Any]) -> None:
    """Replace a notebook's state, atomically (raises :class:`OutputError`)."""
    path = state_path(out, nb_name)
    try:
        _files.atomic_write(path, json.dumps(state, indent=1) + "\n", root=out)
    except OSError as exc:
        raise OutputError.from_oserror(exc, path) from None


def executed_complete(path: Path) -> bool:
    """True when every code cell of an executed notebook has an execution count."""
    try:
        nb = read_notebook(path)
    except NotebookError:
        return False
    codes = [c for c in nb["cells"] if c.get("cell_type") == "code" and c.get("source")]
    return bool(codes) and all(c.get("execution_count") for c in codes)


def up_to_date(
    state: dict[str, Any], digest: str, executed: Path, page: Path | None
) -> tuple[bool, str]:
    """Whether a notebook can be skipped, and why it cannot if not.

    It can when its last run finished ("ran") with the same hash, and the
    executed copy is the one that run wrote (same sha256, every code cell
    executed) and its HTML page (``page``, if required) exists.
    """
    status = state.get("status")
    if not state:
        return False, "never run here"
    if status == "running":
        return False, "its last run did not finish (interrupted or killed)"
    if status != "ran":
        return False, f"its last run {status}"
    if state.get("hash") != digest:
        return False, "its cells, labkit's code or the parameters changed"
    if not executed.is_file() or file_sha256(executed) != state.get("executed_sha256"):
        return False, "its executed copy is missing or not the one its last run wrote"
    if not executed_complete(executed):
        return False, "its executed copy is incomplete"
    if page is not None and not page.is_file():
        return False, "its HTML page is missing"
    return True, "up to date"


def check_out(out: Path, min_free: int = MIN_FREE_BYTES, *, notebooks: Path | None = None) -> Path:
    """Make sure ``out`` can take a reproduction before anything runs; return it resolved.

    Refuses an ``out`` that is or contains the ``notebooks`` source folder (its
    executed copies would overwrite the sources), creates ``out`` and its
    folders without following a link planted below it (:mod:`labkit._files`),
    writes and removes a probe file, and checks the free space.

    Raises:
        OutputError: ``out`` is a file, contains the notebooks, holds a link
            where a folder goes, cannot be created or written (read-only,
            permission, ENOSPC), or has less than ``min_free`` bytes free.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutputError(out, "it exists and is not a directory")
    if notebooks is not None and _files.same_or_inside(notebooks, out):
        raise OutputError(
            out,
            f"it is or contains the notebooks folder {Path(notebooks).resolve()}: the executed "
            "copies would overwrite the source notebooks; choose another --out",
        )
    try:
        for sub in SUBDIRS:
            _files.make_dirs(out / sub, out)
    except OSError as exc:
        raise OutputError.from_oserror(exc, out) from None
    out = out.resolve()
    try:
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=out / ".state")
        try:
            os.write(fd, b"\0" * 65536)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise OutputError.from_oserror(exc, out) from None
    free = shutil.disk_usage(out).free
    if free < min_free:
        raise OutputError(
            out,
            f"only {free / 1e6:.1f} MB free; a reproduction needs about {min_free / 1e6:.0f} MB",
        )
    return out


def out_lock(out: Path) -> _files.FolderLock:
    """The lock of an output folder, ``<out>/.state/lock``: held while a reproduction runs."""
    return _files.FolderLock(Path(out) / ".state", "lock")


def lock_out(out: Path) -> _files.FolderLock:
    """Take :func:`out_lock` (release it when done).

    Raises:
        OutputError: another run holds it (the message names the holder), or the
            lock file cannot be made (a link planted in its place ...).
    """
    lock = out_lock(out)
    try:
        return lock.acquire()
    except _files.FolderLocked as exc:
        msg = f"in use by another run ({exc.holder}); wait for it to end"
        raise OutputError(out, msg) from None
    except OSError as exc:
        raise OutputError.from_oserror(exc, out) from None


def recorded_rows(out: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(file, row) of every readable summary row under ``<out>/summary`` (regular files only)."""
    found = []
    folder = out / "summary"
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            row = json.loads(_files.read_regular(path, MAX_ROW_BYTES))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(row, dict):
            found.append((path, row))
    return found


def forget_rows(out: Path, nb_name: str) -> int:
    """Remove the summary rows ``nb_name`` recorded (before it reruns, after it fails).

    Returns how many were removed.
    """
    gone = 0
    for path, row in recorded_rows(out):
        if row.get("notebook") == nb_name:
            try:
                gone += _files.remove(path, out)
            except OSError as exc:
                raise OutputError.from_oserror(exc, path) from None
    return gone


__all__: list[str] = []  # internal: the run state of labkit.run.reproduce
