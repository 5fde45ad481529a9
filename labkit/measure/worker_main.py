"""The worker's side of :mod:`labkit.measure.workers`: what a fresh interpreter runs.

The boot code the parent hands to ``python -c`` pins the process, sets its
import path and calls :func:`worker_main` with the run's spec: it installs
the single-thread rule, looks the experiment up by its registered id
(:func:`register`, :func:`lookup`: a worker refuses any id that is not
registered), calls it with the JSON keyword arguments, and writes the rows
(or an error record) where the parent reads them back.
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import re
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from labkit import _files
from labkit.measure import runner, threads

_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")


@dataclass(frozen=True)
class Target:
    """A function a worker may run, registered under a stable id."""

    id: str  #: e.g. ``"live.syscalls"``
    fn: Callable[..., Any]  #: the function of one run: JSON keyword arguments -> rows
    home: str  #: the module that registers it (a worker imports it to find the id)
    allow_io_threads: bool = True  #: io_uring's kernel threads may exist while it measures


_TARGETS: dict[str, Target] = {}


def register(target_id: str, fn: Callable[..., Any], *, allow_io_threads: bool = True) -> Target:
    """Register ``fn`` as the worker target ``target_id`` (registering it again is a no-op).

    Raises:
        ValueError: for an id that is not dotted words, or one already taken by
            another function.
    """
    if not isinstance(target_id, str) or not _ID.fullmatch(target_id):
        raise ValueError(f"worker target id must be dotted words, got {target_id!r}")
    home = getattr(fn, "__module__", None)
    if not home or home == "__main__" or "<" in getattr(fn, "__qualname__", "<"):
        raise ValueError(
            f"{fn!r} cannot run in a worker: it must be a module-level function of an "
            "importable module"
        )
    old = _TARGETS.get(target_id)
    if old is not None and (old.home, old.fn.__qualname__) != (home, fn.__qualname__):
        raise ValueError(f"worker target {target_id!r} is already {old.home}.{old.fn.__qualname__}")
    target = Target(target_id, fn, home, bool(allow_io_threads))
    _TARGETS[target_id] = target
    return target


def lookup(target_id: str) -> Target:
    """The registered target ``target_id``.

    Raises:
        ValueError: for an id nobody registered (the message lists the known ids).
    """
    target = _TARGETS.get(target_id) if isinstance(target_id, str) else None
    if target is None:
        known = ", ".join(sorted(_TARGETS)) or "none"
        raise ValueError(f"{target_id!r} is not a registered worker target (known: {known})")
    return target


def _registered_in(home: str, target_id: str) -> Target:
    """In the worker: import ``home`` (which registers its targets), then look the id up.

    ``home`` is the module the parent's registry recorded for the id, never an
    argument a caller typed; an id the import does not register is refused.
    """
    importlib.import_module(home)
    target = lookup(target_id)
    if target.home != home:
        raise ValueError(f"worker target {target_id!r} is registered by {target.home}, not {home}")
    return target


def _with_counts(rows: Any, counts: Mapping[str, int], target: str) -> None:
    """Add the worker's own thread counts to rows that do not carry them."""
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
            f"{target} returned {type(rows).__name__}, not a non-empty list of "
            "row dicts or DataFrame"
        )


def worker_main(spec: Mapping[str, Any]) -> int:
    """The worker's body (called by the boot code after pinning): 0 on success, 3 on error."""
    try:
        if spec["cpu"] is not None and os.sched_getaffinity(0) != {spec["cpu"]}:
            raise RuntimeError(f"the worker is not pinned to CPU {spec['cpu']}")
        rule = threads.Rule(allow_io_threads=bool(spec["allow_io_threads"]))
        threads.require_single_thread(rule if spec["single_thread"] else None)
        runner.continue_rotation(spec["run"])
        start = threads.observe(spec["target"], "at the start of")
        fn = _registered_in(spec["home"], spec["target"]).fn
        rows = fn(**spec["kwargs"])
        end = threads.count_threads() or start
        counts = {
            "threads": max(start.threads, end.threads),
            "io_threads": max(start.io_threads, end.io_threads),
        }
        _with_counts(rows, counts, spec["target"])
        _files.atomic_write(spec["out"], pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL))
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
        _files.atomic_write(spec["error"], json.dumps(record, default=str))
        return 3


__all__: list[str] = []  # internal: run as python -m labkit.measure.worker_main
