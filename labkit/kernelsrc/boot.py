"""``labkit kernel boot``: how a real pre-6.4 kernel imports ``readv()``'s iovecs.

labkit's own static program (``uml/fingerprint.c``) maps two pages and a
guard page, opens ``/dev/zero`` and calls ``readv()`` (and ``read()``) with a
few lengths around the 6.4 change that imports a single iovec as
ITER_UBUF.  :func:`boot_uml` runs it as ``init`` inside Debian's
user-mode-linux (a real Linux 6.1 kernel, as a user process; the host's root
is its read-only root file system, hostfs); :func:`run_host` runs the same
program on the running kernel.  The outcome is a return value and an errno
per call, never a timing: UML's system calls trap through ptrace and cost
microseconds, so it cannot time a 10 ns effect, but it shows what the code of
a real kernel *does*.

The fingerprint: ``readv(fd, {buf, SSIZE_MAX}, 1)`` fails with EFAULT before
6.4 (each segment is checked with ``access_ok()`` at its full length) and
returns 8192 from 6.4 on (the single segment is clamped to MAX_RW_COUNT, and
the read stops at the guard page).  The neighbours (MAX_RW_COUNT, exactly two
pages, a negative length, a zero-length iovec, ``readv(4K+empty)``, two
segments with SSIZE_MAX, ``read()`` with SSIZE_MAX) behave the same on both.

The xstate workaround: UML 6.1 restores a process's FPU state with
``PTRACE_SETREGSET`` of its own XSAVE size (2,696 bytes); a host whose XSAVE
area is larger (AMX CPUs: 11,008 bytes) refuses it with EFAULT and UML
cannot start ``init``.  On such a host (or when a plain boot fails),
:func:`boot_uml` preloads ``uml/xstate_shim.c``, which writes the whole area
back.  ``uml/xstate_probe.c`` (:func:`xstate_probe`) measures the host's area
and reproduces the refusal on any host, with a write shorter than its area,
so the shim's repair is tested where no AMX CPU is at hand.  Programs are
compiled at run time (``gcc -static``; the shim ``gcc -shared``) into the
oracle's cache folder, keyed by their source.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from labkit import config
from labkit._store import Stage, Store, StoreDamaged
from labkit.kernelsrc.build import cache_dir
from labkit.kernelsrc.fingerprint import (
    COLUMNS,
    BootError,
    Fingerprint,
    parse,
)
from labkit.measure.envinfo import environment
from labkit.measure.results import load, save

UML_DIR = Path(__file__).resolve().parent / "uml"
PROGRAM_SOURCE = UML_DIR / "fingerprint.c"
SHIM_SOURCE = UML_DIR / "xstate_shim.c"
PROBE_SOURCE = UML_DIR / "xstate_probe.c"

#: The commands that install what a boot needs (Debian/Ubuntu).
UML_INSTALL_HINT = "apt-get install -y user-mode-linux"
STATIC_INSTALL_HINT = "apt-get install -y gcc libc6-dev"

#: Result files: ``data/results/kernel-uml-boot``.
EXPERIMENT = "kernel-uml-boot"

#: Bytes of the XSAVE area Debian's UML 6.1 writes with PTRACE_SETREGSET (its FP_SIZE * 8,
#: as the shim's log shows; a host whose area is larger refuses the write).
UML_XSTATE_BYTES = 2696
#: CPU flags whose XSAVE components make the host's area larger than UML 6.1's.
_AMX_FLAGS = ("amx_tile", "amx_bf16", "amx_int8")


class BootTimeout(BootError):
    """UML did not finish in time; its process group (``pgid``) was killed."""

    def __init__(self, message: str, pgid: int) -> None:
        super().__init__(message)
        self.pgid = pgid


def uml_binary() -> Path | None:
    """Debian's user-mode-linux kernel (``linux.uml``), or None."""
    found = shutil.which("linux.uml")
    return Path(found) if found else None


def unavailable() -> str:
    """Why a boot cannot run here ("" if it can), with the command that installs what is missing."""
    if uml_binary() is None:
        return f"user-mode-linux is not installed (Debian/Ubuntu: {UML_INSTALL_HINT})"
    if not shutil.which("gcc"):
        return f"gcc is not installed (Debian/Ubuntu: {STATIC_INSTALL_HINT})"
    return ""


@dataclass(frozen=True)
class XstateProbe:
    """What ``uml/xstate_probe.c`` saw: the host's XSAVE area and a short write of it."""

    size: int
    short: int
    ret: int
    errno: int
    kept: bool
    shim: bool


def xstate_probe(short: int = 512, *, shim: bool = False, timeout: float = 30.0) -> XstateProbe:
    """Read a traced child's whole XSAVE area, write back its first ``short`` bytes, read again.

    A write shorter than the host's area is what UML 6.1 does on an AMX host:
    the host refuses it (EFAULT).  With ``shim=True`` the xstate shim is
    preloaded, and the write should succeed with the rest of the area kept.

    Raises:
        BootError: gcc missing, a compile error, or the probe could not trace
            its child (no ptrace here).
    """
    if not 176 <= short <= 1 << 16:
        raise ValueError(
            f"short must cover XMM0 and fit 64 KiB (176 to 65536 bytes), not {short!r}"
        )
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if shim:
        env["LD_PRELOAD"] = str(xstate_shim())
    try:
        proc = subprocess.run(
            [str(probe_program()), str(short)],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise BootError(f"the xstate probe did not finish in {timeout:g} s") from None
    fields = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "XSTATE":
            fields[parts[1]] = parts[2:]
    try:
        size = int(fields["size"][0])
        _, ret, err = (int(x) for x in fields["set"])
        kept = fields["kept"] == ["1"]
    except (KeyError, ValueError):
        raise BootError(
            f"the xstate probe gave no complete answer: {(proc.stdout + proc.stderr).strip()!r}"
        ) from None
    return XstateProbe(size, short, ret, err, kept, shim)


def host_xstate_bytes() -> int | None:
    """The host's XSAVE area as ptrace gives it (None where the probe cannot run)."""
    try:
        return xstate_probe().size
    except BootError:
        return None


def host_needs_xstate_shim(cpuinfo: str | None = None) -> bool:
    """Whether UML 6.1's XSAVE writes (:data:`UML_XSTATE_BYTES`) are shorter than the host's area.

    Measured with :func:`xstate_probe`; where it cannot run (or given ``cpuinfo``
    text), whether the CPU has AMX, whose tiles make the area larger.
    """
    if cpuinfo is None:
        size = host_xstate_bytes()
        if size is not None:
            return size > UML_XSTATE_BYTES
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
    return any(f in flags for f in _AMX_FLAGS)


def _compile(source: Path, name: str, flags: list[str]) -> Path:
    """``gcc flags source`` into the cache, once per source text and compiler."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise BootError(f"gcc is not installed (Debian/Ubuntu: {STATIC_INSTALL_HINT})")
    version = subprocess.run([gcc, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256(
        source.read_bytes() + " ".join(flags).encode() + version.encode()
    ).hexdigest()[:16]
    store = Store(
        cache_dir() / "uml" / f"{name}-{key}",
        rebuild="labkit kernel boot (it recompiles the program)",
        root=cache_dir(),
    )

    def make(stage: Stage) -> None:
        proc = subprocess.run(
            [gcc, "-o", str(stage.path / name), str(source), *flags], capture_output=True, text=True
        )
        if proc.returncode != 0:
            hint = ""
            if "-static" in flags and re.search(r"cannot find -lc|crt1\.o|stdio\.h", proc.stderr):
                hint = f" (a static C library is needed; Debian/Ubuntu: {STATIC_INSTALL_HINT})"
            raise BootError(f"compiling {source.name} failed{hint}:\n{proc.stderr.strip()[-2000:]}")
        stage.record = {"source": source.name, "flags": list(flags), "gcc": version.strip()}

    try:
        store.build(make)  # a damaged program is compiled again: it is cheap
    except (OSError, StoreDamaged) as exc:
        raise BootError(f"the compiled programs' cache: {exc}") from None
    return store.folder / name


def program() -> Path:
    """The fingerprint program, static (it runs as ``init`` on a bare root)."""
    return _compile(PROGRAM_SOURCE, "fingerprint", ["-static", "-O2", "-Wall"])


def probe_program() -> Path:
    """The xstate probe (dynamic: a preloaded shim must see its ptrace() calls)."""
    return _compile(PROBE_SOURCE, "xstate_probe", ["-O2", "-Wall"])


def xstate_shim() -> Path:
    """The xstate shim, a shared object for ``LD_PRELOAD`` into ``linux.uml``."""
    return _compile(SHIM_SOURCE, "xstate_shim.so", ["-shared", "-fPIC", "-O2", "-Wall", "-ldl"])


def run_host(timeout: float = 30.0) -> Fingerprint:
    """The program on the running kernel."""
    prog = program()
    try:
        proc = subprocess.run([str(prog)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BootError(f"host: the program did not finish in {timeout:g} s") from None
    return parse(proc.stdout, "host")


def _run_group(cmd: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str, float]:
    """Run ``cmd`` in its own process group; on timeout (or an error) kill the whole group."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise BootTimeout(
            f"user-mode-linux did not finish in {timeout:g} s; its process group "
            f"{proc.pid} was killed",
            proc.pid,
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    # A clean halt leaves nothing behind: a process still in the group would hold the
    # pipes open, and communicate() would have timed out.
    return proc.returncode, out, err, time.monotonic() - t0


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s process group, then reap ``proc``.

    Only while ``proc`` is unreaped: its pid (the group's id) cannot be reused until then.
    """
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError):
        pass


def boot_uml(
    *,
    timeout: float = 60.0,
    shim: str = "auto",
    mem: str = "64M",
    uml: str | os.PathLike | None = None,
) -> Fingerprint:
    """Boot user-mode-linux with the program as ``init`` and return what it printed.

    Args:
        timeout: seconds for one boot; then UML's process group is killed
            (:class:`BootTimeout`).
        shim: ``"auto"`` preloads the xstate shim where the host's XSAVE area
            is larger than UML's (:func:`host_needs_xstate_shim`), or retries
            with it once when a plain boot gives no answer; ``"on"``: always
            (with the shim forced to rewrite every xstate write, to exercise
            it); ``"off"``: never.
        mem: the guest's memory.
        uml: the UML kernel (default ``linux.uml`` on the PATH).

    Raises:
        BootError: UML or gcc missing (naming the apt command), a compile
            error, a timeout, or no complete answer from the guest.
    """
    if shim not in ("auto", "on", "off"):
        raise ValueError(f"shim must be 'auto', 'on' or 'off', not {shim!r}")
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, not {timeout!r}")
    binary = Path(uml) if uml is not None else uml_binary()
    if binary is None:
        raise BootError(f"user-mode-linux is not installed (Debian/Ubuntu: {UML_INSTALL_HINT})")
    if not binary.is_file():
        raise BootError(f"no user-mode-linux kernel at {binary}")
    prog = program()
    if re.search(r"\s", str(prog)):
        raise BootError(
            f"the program's path has a space, which a kernel command line cannot hold: {prog}"
        )
    if shim == "on":
        return _boot(binary, prog, timeout, mem, force_shim=True)
    if shim == "off" or not host_needs_xstate_shim():
        try:
            return _boot(binary, prog, timeout, mem, use_shim=False)
        except BootTimeout:
            raise
        except BootError as plain:
            if shim == "off":
                raise
            try:
                return _boot(binary, prog, timeout, mem, use_shim=True)
            except BootError as shimmed:
                raise BootError(
                    f"{plain}\n(retried with the xstate shim preloaded: {shimmed})"
                ) from None
    return _boot(binary, prog, timeout, mem, use_shim=True)


def _boot(
    binary: Path,
    prog: Path,
    timeout: float,
    mem: str,
    *,
    use_shim: bool = True,
    force_shim: bool = False,
) -> Fingerprint:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if use_shim or force_shim:
        env["LD_PRELOAD"] = str(xstate_shim())
        env["XSTATE_SHIM_LOG"] = "1"
        env["XSTATE_SHIM_FORCE"] = "1" if force_shim else "0"
    with tempfile.TemporaryDirectory(prefix="labkit-uml-") as tmp:
        env["TMPDIR"] = tmp  # UML's memory file
        cmd = [
            str(binary),
            f"mem={mem}",
            f"uml_dir={tmp}",
            "umid=labkit",
            "rootfstype=hostfs",
            "rootflags=/",
            "ro",
            f"init={prog}",
            "con=null",
            "con0=null,fd:1",
            "quiet",
        ]
        rc, out, err, seconds = _run_group(cmd, env, timeout)
    where = f"user-mode-linux ({binary.name}, exit status {rc})"
    fp = parse(out + "\n" + err, where)
    shim_lines = err.count("labkit-xstate-shim:")
    return Fingerprint(
        "uml",
        fp.release,
        fp.machine,
        fp.page,
        fp.cases,
        boot_seconds=round(seconds, 2),
        xstate_shim=bool(shim_lines),
        console=out + err,
    )


def uml_package_version() -> str:
    """The installed ``user-mode-linux`` package's version ("" if dpkg does not know it)."""
    if not shutil.which("dpkg-query"):
        return ""
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "user-mode-linux"], capture_output=True, text=True
    )
    return proc.stdout.strip() if proc.returncode == 0 else ""


def measure(*, timeout: float = 60.0, shim: str = "auto") -> tuple[pd.DataFrame, dict]:
    """Boot once and run on the host: one frame (rows of both) and what the record adds."""
    guest = boot_uml(timeout=timeout, shim=shim)
    host = run_host()
    df = pd.concat([guest.frame(), host.frame()], ignore_index=True)
    extra = {
        "uml_package": uml_package_version(),
        "uml_release": guest.release,
        "uml_boot_seconds": guest.boot_seconds,
        "xstate_shim": guest.xstate_shim,
        "host_xstate_bytes": host_xstate_bytes(),
    }
    return df, extra


def save_boot(df: pd.DataFrame, extra: dict, data_dir: str | Path | None = None) -> Path:
    """Save a boot's rows with the environment record (plus ``extra`` under ``"uml"``)."""
    env = environment()
    env["uml"] = extra
    return save(EXPERIMENT, df, env=env, data_dir=data_dir)


def committed_boot(data_dir: str | Path | None = None) -> pd.DataFrame:
    """The newest saved boot (default: the reference results shipped with labkit)."""
    df = load(EXPERIMENT, data_dir or config.reference_data_dir(), required=COLUMNS)
    if df.empty:
        return df
    newest = df["saved_run"].max()
    return df[df["saved_run"] == newest][COLUMNS].reset_index(drop=True)
