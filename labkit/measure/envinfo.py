"""The environment record saved with every result.

:func:`environment` answers the questions a reader of a performance result
asks first: which CPU, which kernel, which mitigations, which compiler and
flags built the timing kernels, which Python and packages, which labkit (and
git commit), when, in quick or full mode, whether io_uring is usable here, and
how many threads the measuring process has (the live loops are measured in
single-threaded worker processes: :mod:`labkit.measure.workers`), and what
tells this host from others (``host``: CPU family, model, stepping, microcode,
hypervisor, mitigations, kernel command line, SMT, clocks; ``host_fingerprint``:
the one line a verdict's scope names; :mod:`labkit.measure.host`).
Everything is JSON-serialisable.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import labkit
from labkit import config
from labkit.measure import host, threads

#: Keys every record has (tests and the results loader rely on them).
KEYS = (
    "labkit_version",
    "git_commit",
    "git_dirty",
    "date",
    "quick_mode",
    "hostname",
    "cpu_model",
    "cpu_count",
    "cpu_affinity",
    "measuring_threads",
    "machine",
    "kernel_release",
    "kernel_version",
    "mitigations",
    "compiler",
    "cflags",
    "optimised",
    "sanitizers",
    "python",
    "python_implementation",
    "packages",
    "io_uring",
    "host",
    "host_fingerprint",
)

PACKAGES = ("numpy", "pandas", "cffi", "matplotlib", "jupyterlab", "nbval", "pytest")
VULN_DIR = Path("/sys/devices/system/cpu/vulnerabilities")


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux, else platform.processor())."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model", "Processor"):
                if value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def mitigations(vuln_dir: Path = VULN_DIR) -> dict[str, str]:
    """Each file of /sys/devices/system/cpu/vulnerabilities and its one-line state
    (:func:`labkit.measure.host.vulnerabilities`)."""
    return host.vulnerabilities(vuln_dir)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed versions of the packages labkit's results depend on (None: not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state(root: Path | None = None) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout labkit runs from; (None, None) outside git."""
    root = root or config.repo_root()
    if not (root / ".git").exists():
        return None, None
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit.stdout.strip() or None, bool(status.stdout.strip())


def io_uring_status() -> dict[str, Any]:
    """Whether io_uring is available here, in the vocabulary of :func:`labkit.live.probe`.

    Returns:
        ``{"available": bool, "errno": int | None, "reason": str, "sysctl_disabled": int | None}``:
        ``available`` and ``reason`` are the probe's (io_uring_setup(2) works
        and READ, READV and READ_FIXED are supported, so the io_uring
        experiments run); ``errno`` is io_uring_setup's errno when it failed.
    """
    from labkit.live import probe  # loads the C core: only when asked

    p = probe()
    return {
        "available": p["available"],
        "errno": p["setup_errno"] or None,
        "reason": p["reason"],
        "sysctl_disabled": p["io_uring_disabled"],
    }


_worker_threads: dict[str, Any] = {}


def measuring_threads() -> dict[str, Any]:
    """Threads of the process that measures, and of the process writing this record.

    Returns:
        ``{"worker": int | None, "worker_io_threads": int | None,
        "this_process": int | None, "how": str}``: ``worker`` is what a
        spawned measuring worker counts in /proc/self/task once it has
        imported labkit's live experiments (1: it measures single-threaded),
        ``worker_io_threads`` its io_uring kernel threads (0 before any ring
        is used; the rows of each experiment carry the counts seen while it
        measured), ``this_process`` the threads of the caller (a notebook
        kernel has a dozen; it does not measure).  The worker is probed once
        per process.
    """
    from labkit.measure import workers  # loads the C core: only when asked

    if not _worker_threads:
        try:
            seen = workers.probe_threads()
            _worker_threads.update(
                worker=seen.threads, worker_io_threads=seen.io_threads, error=None
            )
        except Exception as exc:  # noqa: BLE001 - the record says why, it does not fail
            _worker_threads.update(worker=None, worker_io_threads=None, error=str(exc))
    here = threads.count_threads()
    how = "spawned single-threaded workers (labkit.measure.workers), pinned before import"
    if _worker_threads["error"]:
        how = f"worker probe failed: {_worker_threads['error'].splitlines()[0]}"
    return {
        "worker": _worker_threads["worker"],
        "worker_io_threads": _worker_threads["worker_io_threads"],
        "this_process": here.total if here else None,
        "how": how,
    }


def environment(quick: bool | None = None) -> dict[str, Any]:
    """The environment record of this run (see the module docstring); keys are :data:`KEYS`."""
    build = labkit.build_info()
    commit, dirty = git_state()
    uname = platform.uname()
    affinity = sorted(os.sched_getaffinity(0))
    record = {
        "labkit_version": labkit.__version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "quick_mode": config.quick_mode(quick),
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "measuring_threads": measuring_threads(),
        "machine": uname.machine,
        "kernel_release": uname.release,
        "kernel_version": uname.version,
        "mitigations": mitigations(),
        "compiler": build["compiler"],
        "cflags": build["cflags"],
        "optimised": build["optimised"],
        "sanitizers": build["sanitizers"],
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "packages": package_versions(),
        "io_uring": io_uring_status(),
        "host": host.host_record(),
    }
    record["host_fingerprint"] = host.fingerprint(record["host"])
    assert tuple(record) == KEYS
    return record


def host_of(env: dict[str, Any]) -> dict[str, Any]:
    """The host record of an environment record, also of one written before ``host`` was
    recorded: then only its ``cpu_model`` (as the model name) and ``mitigations``."""
    if env.get("host"):
        return env["host"]
    return {"model_name": env.get("cpu_model"), "vulnerabilities": env.get("mitigations") or {}}


def format_environment(env: dict[str, Any]) -> str:
    """A human-readable, multi-line rendering of an environment record."""
    lines = []
    width = max(len(k) for k in env)
    for key, value in env.items():
        if isinstance(value, dict) and key in (
            "mitigations",
            "packages",
            "io_uring",
            "measuring_threads",
            "host",
        ):
            lines.append(f"{key}:")
            sub = max((len(k) for k in value), default=0)
            for k, v in value.items():
                lines.append(f"  {k:<{sub}}  {v}")
        else:
            lines.append(f"{key:<{width}}  {value}")
    return "\n".join(lines)


__all__ = [
    "cpu_model",
    "environment",
    "format_environment",
    "git_state",
    "host_of",
]
