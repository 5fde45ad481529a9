"""The worker's side of :mod:`labkit.measure.workers`: what a fresh interpreter runs.

The boot code the parent hands to ``python -c`` pins the process, sets its
import path and calls :func:`worker_main` with the run's spec: it installs
the single-thread rule, imports the experiment by its ``"module:function"``
name, calls it with the JSON keyword arguments, and writes the rows (or an
error record) where the parent reads them back.
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from labkit import _files
from labkit.measure import runner, threads


def resolve(name: str) -> Callable[..., Any]:
    """The callable named ``"package.module:attr.attr"`` (or ``"package.module.attr"``)."""
    module, sep, attr = name.partition(":")
    if not sep:
        module, _, attr = name.rpartition(".")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{name} is not callable")
    return obj


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
        fn = resolve(spec["target"])
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


__all__ = ["resolve", "worker_main"]
