"""Can this process use io_uring here, and what is the machine: kernel, tmpfs, io-wq."""

from __future__ import annotations

import errno
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

from labkit._ffi import ffi, lib
from labkit.config import live_uring_allowed, tmpfs_setting


def kernel_release() -> str:
    """The running kernel's release string (``uname -r``)."""
    return platform.release()


def _mount_fstype(path: Path) -> str | None:
    """The file system type of the mount holding ``path`` (from /proc/self/mounts)."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    best, fstype = "", None
    target = str(path.resolve())
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mnt = parts[1]
        inside = target == mnt or target.startswith(mnt.rstrip("/") + "/")
        if inside and len(mnt) >= len(best):
            best, fstype = mnt, parts[2]
    return fstype


def tmpfs_dir() -> Path:
    """A writable directory on tmpfs (``/dev/shm`` normally), else the temp directory.

    Use :func:`is_tmpfs` to know which one you got.
    """
    for cand in (tmpfs_setting(), "/dev/shm", "/run/shm", tempfile.gettempdir()):
        if not cand:
            continue
        p = Path(cand)
        if p.is_dir() and os.access(p, os.W_OK) and _mount_fstype(p) == "tmpfs":
            return p
    return Path(tempfile.gettempdir())


def is_tmpfs(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` lives on a tmpfs mount."""
    return _mount_fstype(Path(path)) == "tmpfs"


def _io_uring_sysctl() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/io_uring_disabled").read_text().strip())
    except (OSError, ValueError):
        return None


def probe() -> dict[str, Any]:
    """Can this process use io_uring here, and if not, why not.

    Returns a dict with ``available`` (bool), ``reason`` (a sentence),
    ``kernel`` (release), ``setup_errno`` (0 when io_uring_setup worked),
    ``io_uring_disabled`` (the sysctl, or None), ``features`` (IORING_FEAT_*
    bits), ``ext_arg`` (bounded waits in the kernel), ``ops`` (READ, READV,
    READ_FIXED supported) and ``tmpfs`` (the tmpfs directory used).
    Setting ``LABKIT_LIVE_URING=0`` reports io_uring as unavailable (to try the
    notebooks' skip paths).
    """
    info: dict[str, Any] = {
        "available": False,
        "reason": "",
        "kernel": kernel_release(),
        "setup_errno": None,
        "io_uring_disabled": _io_uring_sysctl(),
        "features": 0,
        "ext_arg": False,
        "ops": {},
        "tmpfs": str(tmpfs_dir()),
    }
    if not live_uring_allowed():
        info["reason"] = "io_uring experiments switched off (LABKIT_LIVE_URING=0)"
        return info
    p = ffi.new("struct lk_uring_probe *")
    lib.lk_uring_probe(p)
    info["setup_errno"] = p.setup_errno
    info["features"] = p.features
    info["ext_arg"] = bool(p.ext_arg)
    info["ops"] = {
        "READ": p.op_read == 1,
        "READV": p.op_readv == 1,
        "READ_FIXED": p.op_read_fixed == 1,
    }
    if not p.have_header:
        info["reason"] = (
            "labkit was built without <linux/io_uring.h>: io_uring support not compiled"
        )
        return info
    e = p.setup_errno
    if e:
        sysctl = info["io_uring_disabled"]
        if e == errno.ENOSYS:
            why = "the kernel has no io_uring (built without it, or older than 5.1)"
        elif e == errno.EPERM and sysctl == 2:
            why = "io_uring is disabled on this machine (kernel.io_uring_disabled=2)"
        elif e == errno.EPERM and sysctl == 1:
            why = (
                "io_uring is restricted (kernel.io_uring_disabled=1) and this process "
                "is not privileged or in kernel.io_uring_group"
            )
        elif e == errno.EPERM:
            why = "io_uring_setup was refused (EPERM): a sandbox or seccomp filter blocks it"
        else:
            why = f"io_uring_setup failed: {os.strerror(e)}"
        info["reason"] = why
        return info
    missing = [name for name, ok in info["ops"].items() if not ok]
    if missing:
        info["reason"] = f"io_uring works but lacks {', '.join(missing)} (kernel too old)"
        return info
    info["available"] = True
    info["reason"] = "io_uring_setup succeeded; READ, READV and READ_FIXED are supported" + (
        "" if info["ext_arg"] else "; waits are polled (no IORING_FEAT_EXT_ARG)"
    )
    return info


def io_wq_workers() -> int:
    """How many io-wq worker threads (``iou-wrk-*``) this process has right now.

    io_uring runs a request inline when the file can do it without blocking
    (``IOCB_NOWAIT``); otherwise it hands it to an io-wq worker thread, which
    costs a thread hand-off per request.  Workers linger for a while after use.
    """
    n = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0
    for tid in tasks:
        try:
            if Path(f"/proc/self/task/{tid}/comm").read_text().startswith("iou-wrk"):
                n += 1
        except OSError:
            continue
    return n
