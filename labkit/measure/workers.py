"""Independent runs: an experiment repeated in fresh, single-threaded worker processes.

An interval computed over the batches of one process understates the spread
a reader sees between two reproductions: the allocation and placement of the
memory measured, the CPU caches and the branch predictors' history, the
frequency the CPU settled at, all are fixed within one process and change
between processes.  So, as pyperf does with its worker processes, every
experiment is repeated in ``runs`` independent workers, and the rows say which
worker produced them (the ``run`` column) so that intervals can be computed
over runs.

Each worker is a fresh interpreter (``sys.executable``), spawned and waited
for one at a time (the runs are timed; the machine may have two cores).  It

1. pins itself to the measuring CPU and gets ``OPENBLAS_NUM_THREADS=1`` (and
   the other thread-pool variables, :data:`THREAD_ENV`) **before** importing
   labkit or numpy, so that no library starts a thread;
2. looks the experiment function up by its registered id (``"live.syscalls"``:
   see :func:`target`; a worker refuses an id nobody registered, so a spec can
   never name arbitrary code), and calls it with JSON-able keyword arguments
   (:mod:`labkit.measure.worker_main`); it returns its rows as a list of dicts
   (:func:`labkit.measure.runner.measure`), so that the worker never imports
   pandas (half of a worker's start-up), or a DataFrame;
3. measures single-threaded: :func:`labkit.measure.runner.measure` counts
   the process's threads right before and right after measuring and fails if
   there is more than one (:mod:`labkit.measure.threads`); the rows get
   ``threads`` and ``io_threads`` columns.  The variants are interleaved as
   in one process, the rotation of their order continued from run to run
   (:func:`labkit.measure.runner.continue_rotation`);
4. writes its rows to a file the parent reads back (pickle: the parent
   created the file in its own private temporary directory), which turns
   them into one DataFrame.

Nothing measured is lost and nothing is left behind: when a run fails, the
rows of the runs that finished come with the error (``WorkerError.partial``,
its message says how many); every run's rows must have the first run's keys
(else the run fails naming the difference); a worker leads its own process
group, ended whole when it times out (its children too), and dies with its
parent (``PR_SET_PDEATHSIG``); the private temporary folder is removed on
exit, and the folders of parents killed before they could remove theirs
(SIGKILL) are removed by the next call (:func:`remove_stale_tmp`).

A worker that raises comes back as a :class:`WorkerError` naming the
experiment, the run and the worker's traceback; when the worker raised a
built-in exception (ValueError, OSError with its errno, ...), the error is
also an instance of that type, so callers can keep catching what they caught
before.  A worker killed by a signal, or one that outlives ``timeout``, is an
error too (:class:`WorkerTimeout`); every wait is bounded
(:mod:`labkit.measure.worker_errors`).
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import labkit
from labkit.live import ring as _live_ring  # noqa: F401 (what a live worker loads: probe_threads)
from labkit.live import sources as _live_sources  # noqa: F401
from labkit.live import syscalls as _live_syscalls  # noqa: F401
from labkit.measure import runner, threads
from labkit.measure.worker_errors import (
    WorkerError,
    WorkerTimeout,
    died,
    keep_partial,
    keys_differ,
    worker_exception,
)
from labkit.measure.worker_main import Target, lookup, register
from labkit.measure.worker_tmp import private_tmp

if TYPE_CHECKING:
    import pandas as pd

#: Environment of every worker: thread pools of numpy's BLAS and friends at one thread.
THREAD_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "BLIS_NUM_THREADS": "1",
}

#: Seconds one worker may take before it is killed (each run has its own deadline).
DEFAULT_TIMEOUT = 600.0

# The worker's first code: pin, then take the parent's import path (the directory
# of the parent's labkit first), and only then import labkit (and with it numpy).
# Run with -S (the parent's path already holds site-packages; processing .pth files
# costs a fifth of a worker's start) and -P (Python 3.11+: the working directory is
# not on the path).
_BOOT = """\
import json, os, sys
with open(sys.argv[1], encoding="utf-8") as f:
    spec = json.load(f)
import ctypes
ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: never outlive the parent
if os.getppid() != spec["parent"]:
    os._exit(1)
if spec["cpu"] is not None:
    os.sched_setaffinity(0, {spec["cpu"]})
sys.path[:] = spec["path"] + [p for p in sys.path if p not in spec["path"]]
from labkit.measure.worker_main import worker_main
code = worker_main(spec)
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # the rows are written: skip the interpreter's teardown
"""


def target(
    target_id: str, *, allow_io_threads: bool = True
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register a module-level function of one run as worker target ``target_id``.

    The function is returned unchanged, with a ``target_id`` attribute;
    :func:`run_in_workers` runs it by that id.  ``allow_io_threads=False``
    makes every run of it refuse io_uring's kernel threads (pure system-call loops).
    """

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        register(target_id, fn, allow_io_threads=allow_io_threads)
        fn.target_id = target_id  # type: ignore[attr-defined]
        return fn

    return wrap


def _target(target: str | Callable[..., Any]) -> Target:
    """The registered target named by its id, or by its function (carrying ``target_id``)."""
    if callable(target):
        target_id = getattr(target, "target_id", None)
        if target_id is None:
            raise ValueError(
                f"{target!r} is not a registered worker target (register it with "
                "labkit.measure.workers.target)"
            )
        return lookup(target_id)
    return lookup(target)


def _measuring_cpu(cpu: int | None) -> int | None:
    if cpu is None:
        return runner.default_cpu()
    cpu = int(cpu)
    if hasattr(os, "sched_getaffinity") and cpu not in os.sched_getaffinity(0):
        raise ValueError(
            f"cpu {cpu} is not in this process's affinity set {sorted(os.sched_getaffinity(0))}"
        )
    return cpu


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(THREAD_ENV)
    return env


def _search_path() -> list[str]:
    """The parent's import path, the directory of the labkit it imported first."""
    root = str(Path(labkit.__file__).resolve().parent.parent)
    rest = [p for p in sys.path if p and p != root]
    return [root, *rest]


def run_in_workers(
    target: str | Callable[..., Any],
    kwargs: Mapping[str, Any] | None = None,
    *,
    runs: int,
    cpu: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    single_thread: bool = True,
    allow_io_threads: bool | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Run ``target(**kwargs)`` in ``runs`` fresh worker processes, one after another.

    Args:
        target: the id of a registered worker target (:func:`target`), or
            its function; it returns its tidy rows (one per batch) as a list
            of dicts or a DataFrame.
        kwargs: its keyword arguments; must survive ``json.dumps``.
        runs: independent runs (worker processes), at least 1.
        cpu: the CPU every worker pins itself to before importing anything;
            None picks :func:`labkit.measure.runner.default_cpu` (of this process).
        timeout: seconds each worker may take before it is killed.
        single_thread: enforce exactly one thread while measuring (see
            :mod:`labkit.measure.threads`).
        allow_io_threads: let io_uring's kernel threads exist (they are
            counted in ``io_threads``); False for pure system-call loops, which
            must then have exactly one entry in /proc/self/task.  None: as
            the target was registered.
        progress: one line per run on stderr.

    Returns:
        The workers' rows, concatenated, with a ``run`` column (0 .. runs-1,
        after ``repeat``) and, from runner.run, ``threads`` and ``io_threads``.

    Raises:
        ValueError: for runs < 1, a CPU outside the affinity set, or a target
            that is not registered.
        TypeError: for keyword arguments that are not JSON-able.
        WorkerError: the worker raised (also an instance of the built-in type
            it raised), died, or returned no DataFrame; WorkerTimeout if it ran
            out of time.
        RuntimeError: when called inside a worker (runs do not nest).
    """
    import pandas as pd  # on use: the workers import this module

    if threads.watching():
        raise RuntimeError("run_in_workers: already inside a worker (runs do not nest)")
    runs = int(runs)
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    tgt = _target(target)
    name = tgt.id
    if allow_io_threads is None:
        allow_io_threads = tgt.allow_io_threads
    kwargs = dict(kwargs or {})
    try:
        json.dumps(kwargs)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name}: keyword arguments must be JSON-able for a worker: {exc}"
        ) from None
    cpu = _measuring_cpu(cpu)
    frames: list[pd.DataFrame] = []
    keys: list[str] = []
    with private_tmp() as tmp:
        for run in range(runs):
            start = time.monotonic()
            try:
                df = _one_run(
                    tgt,
                    kwargs,
                    run,
                    runs,
                    cpu,
                    float(timeout),
                    tmp,
                    single_thread,
                    allow_io_threads,
                )
                these = list(map(str, df.columns))
                if run == 0:
                    keys = these
                elif set(these) != set(keys):
                    raise keys_differ(name, run, runs, keys, these)
            except WorkerError as err:  # the finished runs' rows go with the error
                done = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
                raise keep_partial(err, done, len(frames), runs) from None
            if progress:
                sys.stderr.write(
                    f"{name}: run {run + 1}/{runs} in {time.monotonic() - start:.1f} s\n"
                )
            at = df.columns.get_loc("repeat") + 1 if "repeat" in df.columns else len(df.columns)
            df.insert(at, "run", run)
            frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _one_run(
    tgt: Target,
    kwargs: dict[str, Any],
    run: int,
    runs: int,
    cpu: int | None,
    timeout: float,
    tmp: Path,
    single_thread: bool,
    allow_io_threads: bool,
) -> pd.DataFrame:
    name = tgt.id
    base = tmp / f"run{run}"
    spec = {
        "target": name,
        "home": tgt.home,
        "kwargs": kwargs,
        "cpu": cpu,
        "path": _search_path(),
        "out": str(base) + ".pkl",
        "error": str(base) + ".error.json",
        "single_thread": single_thread,
        "allow_io_threads": allow_io_threads,
        "run": run,
        "parent": os.getpid(),
    }
    spec_path = base.with_suffix(".spec.json")
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    log_path = base.with_suffix(".log")
    flags = ["-S", "-P"] if sys.version_info >= (3, 11) else ["-S"]
    where = f"{name} (worker run {run + 1} of {runs})"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, *flags, "-c", _BOOT, str(spec_path)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_worker_env(),
            close_fds=True,
            start_new_session=True,  # its own process group: ended whole, children included
        )
        try:
            code = _wait(proc, timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            msg = f"{where} ran past its {timeout:g} s deadline and was killed (pid {proc.pid})"
            raise died(WorkerTimeout, msg, name, run, log_path, proc.returncode) from None
        finally:
            if proc.poll() is None:  # interrupted (KeyboardInterrupt): leave no worker behind
                _kill_group(proc)
                proc.wait(timeout=10)
    error_path = Path(spec["error"])
    if error_path.exists():
        raise worker_exception(where, name, run, code, error_path)
    if code != 0:
        if code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code} without reporting an error"
        raise died(WorkerError, f"{where} {how} (pid {proc.pid})", name, run, log_path, code)
    out = Path(spec["out"])
    if not out.exists():
        msg = f"{where} exited without writing its rows"
        raise died(WorkerError, msg, name, run, log_path, code)
    import pandas as pd  # on use: the workers import this module

    with open(out, "rb") as f:
        rows = pickle.load(f)  # written by our own worker into our private directory
    if isinstance(rows, pd.DataFrame):
        return rows
    # every key of every row, in order of first appearance; a row's missing keys are empty
    return pd.DataFrame(rows, columns=list(dict.fromkeys(k for row in rows for k in row)))


def _kill_group(proc: Any) -> None:
    """SIGKILL a worker's whole process group (it leads its own session), before it is reaped."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except OSError:
        proc.kill()


def _wait(proc: Any, timeout: float) -> int:
    """``proc.wait(timeout)``, woken the moment the worker exits (a pidfd, Linux 5.3+).

    Popen.wait with a timeout polls, sleeping up to 50 ms between looks.
    """
    deadline = time.monotonic() + timeout
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # older Python or kernel: Popen.wait polls
        fd = None
    if fd is not None:
        try:
            select.select([fd], [], [], timeout)
        finally:
            os.close(fd)
    return proc.wait(timeout=max(0.0, deadline - time.monotonic()))


def probe_threads(*, timeout: float = 120.0) -> threads.ThreadCount:
    """The threads a measuring worker has once labkit's live layer is imported.

    Spawns one worker (as :func:`run_in_workers` does), which loads what a live
    experiment measures with (:mod:`labkit.live`: this module imports it), and
    counts its threads: what the environment record states as the measuring
    process's thread count.
    """
    df = run_in_workers(_thread_probe, runs=1, timeout=timeout, single_thread=False)
    return threads.ThreadCount(int(df["threads"].iloc[0]), int(df["io_threads"].iloc[0]))


@target("measure.thread_probe")
def _thread_probe() -> runner.Rows:
    seen = threads.count_threads()
    if seen is None:
        raise OSError("/proc/self/task is not readable")
    return [{"threads": seen.threads, "io_threads": seen.io_threads}]


__all__ = [
    "DEFAULT_TIMEOUT",
    "THREAD_ENV",
    "WorkerError",
    "target",
]
