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
2. imports the experiment function, named by a dotted path
   (``"labkit.experiments.live_kernel:_syscalls_in_worker"``), and calls it
   with JSON-able keyword arguments; it returns its rows as a list of dicts
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

A worker that raises comes back as a :class:`WorkerError` naming the
experiment, the run and the worker's traceback; when the worker raised a
built-in exception (ValueError, OSError with its errno, ...), the error is
also an instance of that type, so callers can keep catching what they caught
before.  A worker killed by a signal, or one that outlives ``timeout``, is an
error too (:class:`WorkerTimeout`); every wait is bounded.
"""

from __future__ import annotations

import builtins
import importlib
import json
import os
import pickle
import select
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labkit.measure import runner, threads

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

#: Lines of the worker's traceback and output quoted in an error.
TAIL_LINES = 25

# The worker's first code: pin, then take the parent's import path (the directory
# of the parent's labkit first), and only then import labkit (and with it numpy).
# Run with -S (the parent's path already holds site-packages; processing .pth files
# costs a fifth of a worker's start) and -P (Python 3.11+: the working directory is
# not on the path).
_BOOT = """\
import json, os, sys
with open(sys.argv[1], encoding="utf-8") as f:
    spec = json.load(f)
if spec["cpu"] is not None:
    os.sched_setaffinity(0, {spec["cpu"]})
sys.path[:] = spec["path"] + [p for p in sys.path if p not in spec["path"]]
from labkit.measure.workers import worker_main
code = worker_main(spec)
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # the rows are written: skip the interpreter's teardown
"""


class WorkerError(Exception):
    """An experiment failed in a worker process.

    Attributes:
        target: the experiment function's dotted path.
        run: which run (0-based) failed.
        worker_type: the exception type the worker raised ("" if it died).
        worker_traceback: the tail of the worker's traceback (or output).
        returncode: the worker's exit status (negative: killed by that signal).
    """

    target: str = ""
    run: int = -1
    worker_type: str = ""
    worker_traceback: str = ""
    returncode: int | None = None


class WorkerTimeout(WorkerError, TimeoutError):
    """A worker ran past its deadline and was killed."""


_COMBINED: dict[type, type] = {}


def _error_class(type_name: str, module: str) -> type[WorkerError]:
    """WorkerError, combined with the built-in exception type the worker raised."""
    base = getattr(builtins, type_name, None) if module == "builtins" else None
    if not (isinstance(base, type) and issubclass(base, Exception)) or base is Exception:
        return WorkerError
    if base not in _COMBINED:
        _COMBINED[base] = type(f"Worker{base.__name__}", (WorkerError, base), {})
    return _COMBINED[base]


def target_name(fn: Callable[..., Any] | str) -> str:
    """The ``"module:qualname"`` a worker imports to find ``fn`` (strings pass through).

    Raises:
        ValueError: for a function a fresh interpreter cannot import by name
            (a lambda, a nested function, one defined in ``__main__``).
    """
    if isinstance(fn, str):
        if ":" not in fn and "." not in fn:
            raise ValueError(f"target {fn!r} must be 'package.module:function'")
        return fn
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        raise ValueError(
            f"{fn!r} cannot run in a worker: it must be a module-level function of an "
            "importable module"
        )
    return f"{module}:{qualname}"


def _resolve(name: str) -> Callable[..., Any]:
    module, sep, attr = name.partition(":")
    if not sep:
        module, _, attr = name.rpartition(".")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{name} is not callable")
    return obj


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


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
    import labkit

    root = str(Path(labkit.__file__).resolve().parent.parent)
    rest = [p for p in sys.path if p and p != root]
    return [root, *rest]


def run_in_workers(
    target: Callable[..., Any] | str,
    kwargs: Mapping[str, Any] | None = None,
    *,
    runs: int,
    cpu: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    single_thread: bool = True,
    allow_io_threads: bool = True,
    progress: bool = False,
) -> pd.DataFrame:
    """Run ``target(**kwargs)`` in ``runs`` fresh worker processes, one after another.

    Args:
        target: a module-level function returning its tidy rows (one per
            batch) as a list of dicts or a DataFrame, or its
            ``"module:function"`` name.
        kwargs: its keyword arguments; must survive ``json.dumps``.
        runs: independent runs (worker processes), at least 1.
        cpu: the CPU every worker pins itself to before importing anything;
            None picks :func:`labkit.measure.runner.default_cpu` (of this process).
        timeout: seconds each worker may take before it is killed.
        single_thread: enforce exactly one thread while measuring (see
            :mod:`labkit.measure.threads`).
        allow_io_threads: let io_uring's kernel threads exist (they are
            counted in ``io_threads``); False for pure system-call loops, which
            must then have exactly one entry in /proc/self/task.
        progress: one line per run on stderr.

    Returns:
        The workers' rows, concatenated, with a ``run`` column (0 .. runs-1,
        after ``repeat``) and, from runner.run, ``threads`` and ``io_threads``.

    Raises:
        ValueError: for runs < 1, a CPU outside the affinity set, or a target
            that cannot be imported by name.
        TypeError: for keyword arguments that are not JSON-able.
        WorkerError: the worker raised (also an instance of the built-in type
            it raised), died, or returned no DataFrame; WorkerTimeout if it ran
            out of time.
        RuntimeError: when called inside a worker (runs do not nest).
    """
    import pandas as pd

    if threads.watching():
        raise RuntimeError("run_in_workers: already inside a worker (runs do not nest)")
    runs = int(runs)
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    name = target_name(target)
    kwargs = dict(kwargs or {})
    try:
        json.dumps(kwargs)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name}: keyword arguments must be JSON-able for a worker: {exc}"
        ) from None
    cpu = _measuring_cpu(cpu)
    frames = []
    with tempfile.TemporaryDirectory(prefix="labkit-workers-") as tmp:
        for run in range(runs):
            start = time.monotonic()
            df = _one_run(
                name,
                kwargs,
                run,
                runs,
                cpu,
                float(timeout),
                Path(tmp),
                single_thread,
                allow_io_threads,
            )
            if progress:
                sys.stderr.write(
                    f"{name}: run {run + 1}/{runs} in {time.monotonic() - start:.1f} s\n"
                )
            at = df.columns.get_loc("repeat") + 1 if "repeat" in df.columns else len(df.columns)
            df.insert(at, "run", run)
            frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _one_run(
    name: str,
    kwargs: dict[str, Any],
    run: int,
    runs: int,
    cpu: int | None,
    timeout: float,
    tmp: Path,
    single_thread: bool,
    allow_io_threads: bool,
) -> pd.DataFrame:
    import subprocess

    base = tmp / f"run{run}"
    spec = {
        "target": name,
        "kwargs": kwargs,
        "cpu": cpu,
        "path": _search_path(),
        "out": str(base) + ".pkl",
        "error": str(base) + ".error.json",
        "single_thread": single_thread,
        "allow_io_threads": allow_io_threads,
        "run": run,
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
        )
        try:
            code = _wait(proc, timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            err = WorkerTimeout(
                f"{where} ran past its {timeout:g} s deadline and was killed (pid {proc.pid})"
                + _with_output(log_path)
            )
            _fill(err, name, run, "", _tail(_read(log_path)), proc.returncode)
            raise err from None
        finally:
            if proc.poll() is None:  # interrupted (KeyboardInterrupt): leave no worker behind
                proc.kill()
                proc.wait(timeout=10)
    error_path = Path(spec["error"])
    if error_path.exists():
        raise _worker_exception(where, name, run, code, error_path)
    if code != 0:
        if code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code} without reporting an error"
        err = WorkerError(f"{where} {how} (pid {proc.pid})" + _with_output(log_path))
        _fill(err, name, run, "", _tail(_read(log_path)), code)
        raise err
    out = Path(spec["out"])
    if not out.exists():
        err = WorkerError(f"{where} exited without writing its rows" + _with_output(log_path))
        _fill(err, name, run, "", _tail(_read(log_path)), code)
        raise err
    import pandas as pd

    with open(out, "rb") as f:
        rows = pickle.load(f)  # written by our own worker into our private directory
    return rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows, columns=list(rows[0]))


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


def _with_output(log_path: Path) -> str:
    text = _tail(_read(log_path))
    return f"\n--- worker output (last lines) ---\n{text}" if text else " (no output)"


def _fill(err: WorkerError, target: str, run: int, kind: str, tb: str, code: int | None) -> None:
    err.target, err.run, err.worker_type, err.worker_traceback, err.returncode = (
        target,
        run,
        kind,
        tb,
        code,
    )


def _worker_exception(where: str, name: str, run: int, code: int, path: Path) -> WorkerError:
    """The exception to raise in the parent for the error record a worker wrote."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        rec = {
            "type": "",
            "module": "",
            "message": f"unreadable error record: {exc}",
            "traceback": "",
        }
    tb = _tail(rec.get("traceback", ""))
    message = (
        f"{where} raised {rec.get('type')}: {rec.get('message')}\n"
        f"--- worker traceback (last lines) ---\n{tb}"
    )
    cls = _error_class(rec.get("type", ""), rec.get("module", ""))
    err: WorkerError
    try:
        if issubclass(cls, OSError) and rec.get("errno"):
            err = cls(int(rec["errno"]), message)
        else:
            err = cls(message)
    except Exception:  # a built-in type with another constructor (UnicodeError ...)
        err = WorkerError(message)
    _fill(err, name, run, str(rec.get("type", "")), tb, code)
    return err


# ---- inside the worker --------------------------------------------------------------


def worker_main(spec: Mapping[str, Any]) -> int:
    """The worker's body (called by the boot code after pinning): 0 on success, 3 on error."""
    try:
        if spec["cpu"] is not None and os.sched_getaffinity(0) != {spec["cpu"]}:
            raise RuntimeError(f"the worker is not pinned to CPU {spec['cpu']}")
        rule = threads.Rule(allow_io_threads=bool(spec["allow_io_threads"]))
        threads.require_single_thread(rule if spec["single_thread"] else None)
        runner.continue_rotation(spec["run"])
        start = threads.observe(spec["target"], "at the start of")
        fn = _resolve(spec["target"])
        rows = fn(**spec["kwargs"])
        end = threads.count_threads() or start
        counts = {
            "threads": max(start.threads, end.threads),
            "io_threads": max(start.io_threads, end.io_threads),
        }
        if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
            for row in rows:  # rows not made by runner.measure: the worker's own counts
                for key, value in counts.items():
                    row.setdefault(key, value)
        elif type(rows).__name__ == "DataFrame" and len(rows):
            for key, value in counts.items():
                if key not in rows.columns:
                    rows[key] = value
        else:
            raise TypeError(
                f"{spec['target']} returned {type(rows).__name__}, not a non-empty list of "
                "row dicts or DataFrame"
            )
        tmp = spec["out"] + ".tmp"
        with open(tmp, "wb") as f:
            pickle.dump(rows, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, spec["out"])
        return 0
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
        errno_ = getattr(exc, "errno", None) if isinstance(exc, OSError) else None
        record = {
            "type": type(exc).__name__,
            "module": type(exc).__module__,
            "message": exc.strerror if errno_ else str(exc),
            "errno": errno_,
            "traceback": traceback.format_exc(),
        }
        with open(spec["error"], "w", encoding="utf-8") as f:
            json.dump(record, f, default=str)
        return 3


def probe_threads(*, timeout: float = 120.0) -> threads.ThreadCount:
    """The threads a measuring worker has once labkit's live experiments are imported.

    Spawns one worker (as :func:`run_in_workers` does) that imports
    :mod:`labkit.experiments.live_kernel` and counts its threads: what the
    environment record states as the measuring process's thread count.
    """
    df = run_in_workers(_thread_probe, runs=1, timeout=timeout, single_thread=False)
    return threads.ThreadCount(int(df["threads"].iloc[0]), int(df["io_threads"].iloc[0]))


def _thread_probe() -> runner.Rows:
    # what a live worker imports (by name: a run-time probe, not a dependency of this layer)
    importlib.import_module("labkit.experiments.live_kernel")

    seen = threads.count_threads()
    if seen is None:
        raise OSError("/proc/self/task is not readable")
    return [{"threads": seen.threads, "io_threads": seen.io_threads}]


__all__ = [
    "DEFAULT_TIMEOUT",
    "THREAD_ENV",
    "WorkerError",
    "WorkerTimeout",
    "probe_threads",
    "run_in_workers",
    "target_name",
    "worker_main",
]
