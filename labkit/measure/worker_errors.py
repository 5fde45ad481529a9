"""The errors of a worker process, as the parent raises them (:mod:`labkit.measure.workers`).

A worker that raises writes an error record (its exception's type, module,
message, errno and traceback, :func:`labkit.measure.worker_main.worker_main`);
the parent turns it into a :class:`WorkerError` naming the experiment, the run
and the worker's traceback.  When the worker raised a built-in exception
(ValueError, OSError with its errno, ...), the error is also an instance of
that type, so callers can keep catching what they caught before.  A worker
killed by a signal, or one that outlives its deadline, is an error too
(:class:`WorkerTimeout`).
"""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

#: Lines of the worker's traceback and output quoted in an error.
TAIL_LINES = 25


class WorkerError(Exception):
    """An experiment failed in a worker process.

    Attributes:
        target: the experiment function's dotted path.
        run: which run (0-based) failed.
        worker_type: the exception type the worker raised ("" if it died).
        worker_traceback: the tail of the worker's traceback (or output).
        returncode: the worker's exit status (negative: killed by that signal).
        partial: the rows of the runs that finished before (see :func:`keep_partial`).
        runs_done: how many runs finished before.
    """

    target: str = ""
    run: int = -1
    worker_type: str = ""
    worker_traceback: str = ""
    returncode: int | None = None
    #: The rows of the runs that finished before this one failed (a DataFrame, with
    #: their ``run`` column; empty if none did): a partial result, never lost.
    partial: Any = None
    #: How many runs finished before the failure.
    runs_done: int = 0


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


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of ``text``."""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def with_output(log_path: Path) -> str:
    """The end of a worker's output, to append to an error message."""
    text = tail(_read(log_path))
    return f"\n--- worker output (last lines) ---\n{text}" if text else " (no output)"


def fill(err: WorkerError, target: str, run: int, kind: str, tb: str, code: int | None) -> None:
    """Set the attributes of ``err`` (see :class:`WorkerError`)."""
    err.target, err.run, err.worker_type, err.worker_traceback, err.returncode = (
        target,
        run,
        kind,
        tb,
        code,
    )


def died(
    cls: type[WorkerError], message: str, name: str, run: int, log_path: Path, code: int | None
) -> WorkerError:
    """The error for a worker that died, hung or wrote nothing: ``message`` and its output."""
    err = cls(message + with_output(log_path))
    fill(err, name, run, "", tail(_read(log_path)), code)
    return err


def worker_exception(where: str, name: str, run: int, code: int, path: Path) -> WorkerError:
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
    tb = tail(rec.get("traceback", ""))
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
    fill(err, name, run, str(rec.get("type", "")), tb, code)
    return err


def keep_partial(err: WorkerError, partial: Any, done: int, runs: int) -> WorkerError:
    """Put the finished runs' rows on ``err`` and say so at the end of its message."""
    err.partial, err.runs_done = partial, done
    if done == 0:
        note = f"no run of {runs} finished before this one"
    else:
        which = "run 1" if done == 1 else f"runs 1-{done}"
        note = (
            f"{which} of {runs} finished: their {len(partial)} rows are kept on this "
            "error (.partial), a partial result"
        )
    if isinstance(err, OSError) and err.strerror:
        err.strerror = f"{err.strerror}\n{note}"
        err.args = (err.errno, err.strerror)
    elif err.args and isinstance(err.args[0], str):
        err.args = (f"{err.args[0]}\n{note}", *err.args[1:])
    else:
        err.args = (note,)
    return err


def keys_differ(name: str, run: int, runs: int, first: list[str], these: list[str]) -> WorkerError:
    """The error for a run whose rows do not have the keys (columns) of the first run's."""
    extra = [c for c in these if c not in first]
    missing = [c for c in first if c not in these]
    err = WorkerError(
        f"{name} (worker run {run + 1} of {runs}): its rows do not have the keys of run 1's "
        f"rows: extra {extra}, missing {missing}"
    )
    fill(err, name, run, "", "", 0)
    return err


__all__: list[str] = []  # internal: errors of labkit.measure.workers
