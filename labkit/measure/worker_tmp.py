"""The private temporary folders of :func:`labkit.measure.workers.run_in_workers`.

Each call works in a fresh ``labkit-workers-*`` folder (the workers' specs,
rows, error records and output), removed when the call returns or raises.
A parent killed by SIGKILL cannot remove its own: so the folder holds an
owner file its parent keeps locked (``flock``, which the kernel drops when
the process dies), and every call first removes the folders whose lock it
can take (:func:`remove_stale_tmp`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from labkit import _files

#: Prefix of the private temporary folder of a :func:`run_in_workers` call.
TMP_PREFIX = "labkit-workers-"
#: The file an owner of such a folder holds locked while it lives.
TMP_OWNER = ".owner"
#: Age past which a folder without an owner file (mid-creation or older labkit) is stale.
TMP_STALE_SECONDS = 3600.0


def remove_stale_tmp(folder: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove the ``labkit-workers-*`` folders of parents that died (SIGKILL included).

    A live parent holds its folder's owner file locked (``flock``, dropped by
    the kernel when the parent dies); a folder whose lock can be taken is
    abandoned.  Only this user's folders, never through a link.  Returns the
    folders removed.
    """
    base = Path(folder) if folder is not None else Path(tempfile.gettempdir())
    removed = []
    for d in base.glob(TMP_PREFIX + "*"):
        try:
            st = d.lstat()
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            lock = _files.FolderLock(d, TMP_OWNER)
            if lock.try_acquire(create=False):
                try:
                    shutil.rmtree(d)
                finally:
                    lock.release()
            elif (d / TMP_OWNER).exists() or time.time() - st.st_mtime < TMP_STALE_SECONDS:
                continue
            else:
                shutil.rmtree(d)
            removed.append(d)
        except OSError:
            continue
    return removed


@contextlib.contextmanager
def private_tmp() -> Iterator[Path]:
    """A private temporary folder, locked while this process uses it, removed on exit; the
    folders of parents that died without removing theirs are removed first."""
    remove_stale_tmp()
    with tempfile.TemporaryDirectory(prefix=TMP_PREFIX) as tmp:
        with _files.FolderLock(tmp, TMP_OWNER):
            yield Path(tmp)


__all__: list[str] = []  # internal: private temporary folders of labkit.measure.workers
