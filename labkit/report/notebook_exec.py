"""Execute one notebook headless for ``labkit reproduce``, quietly, and say what went wrong.

:func:`execute` runs a notebook with papermill into a hidden partial file and
returns a :class:`CellReport` of what happened; it never raises for a failing
cell or a dying kernel.  The kernel's own log (its stdout and stderr: the
"TCP without encryption" note, the "KeyboardInterrupt caught in kernel" that
every shutdown provokes, and whatever a crashing C call prints) goes to a log
file beside the notebook's state instead of the terminal; when the kernel
dies, its last lines are quoted in the failure.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit import _files, config
from labkit.report.notebook_files import drop_stored_run_file
from labkit.report.run_state import NotebookError, read_notebook

#: Tags papermill gives the cells it adds (they are not in the source notebook).
ADDED_BY_PAPERMILL = {"injected-parameters", "papermill-error-cell-tag"}


def first_code_line(source: Any) -> str:
    """The first line of a cell that is code: not blank, not a comment (``# NBVAL_...``)."""
    text = "".join(source) if isinstance(source, list) else str(source or "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if not line.startswith("#"):
            return line[:120]
    return lines[0][:120] if lines else ""


def _heading(source: str) -> str | None:
    """The first markdown heading of a cell, as plain text (no #, backticks, asterisks)."""
    for line in source.splitlines():
        s = line.strip()
        if s.startswith("#"):
            return s.lstrip("#").replace("`", "").replace("*", "").strip() or None
    return None


@dataclass
class NotebookPlan:
    """The cells of a source notebook, as progress and failure messages name them.

    Attributes:
        cells: the source cells (dicts as in the .ipynb).
        code: indices (in ``cells``) of the code cells that will run.
        sections: for each cell, the last markdown heading at or before it.
    """

    cells: list[dict[str, Any]]
    code: list[int] = field(default_factory=list)
    sections: list[str | None] = field(default_factory=list)

    @classmethod
    def of(cls, nb: dict[str, Any]) -> NotebookPlan:
        """The plan of a notebook's JSON."""
        cells = list(nb.get("cells", []))
        plan = cls(cells)
        section = None
        for k, cell in enumerate(cells):
            src = cell.get("source", "")
            src = "".join(src) if isinstance(src, list) else str(src)
            if cell.get("cell_type") == "markdown":
                section = _heading(src) or section
            elif cell.get("cell_type") == "code" and src.strip():
                plan.code.append(k)
            plan.sections.append(section)
        return plan

    def source_index(self, cell: Any, executed_index: int, injected_before: int) -> int | None:
        """The index in the source notebook of a cell of the executing notebook."""
        if ADDED_BY_PAPERMILL & set(cell.get("metadata", {}).get("tags", [])):
            return None
        cid = cell.get("id")
        if cid:
            for k, c in enumerate(self.cells):
                if c.get("id") == cid:
                    return k
        k = executed_index - injected_before
        return k if 0 <= k < len(self.cells) else None


@dataclass
class CellReport:
    """What happened when one notebook was executed.

    Attributes:
        ok: every cell ran without error.
        error: "ExceptionName: message" for a failure.
        cell: the source index of the failing cell (or, if the kernel died,
            of the last cell that started).
        exec_count: the failing cell's execution count (``In [n]``).
        source: the first line of code of that cell.
        kernel_died: the kernel process died (the cell did not finish).
        interrupted: SIGINT (Ctrl-C) stopped the run.
        timed_out: a cell ran past the time allowed per cell.
        cells_started: how many code cells started.
        kernel_log_tail: the last lines the kernel printed, when it died.
        cell_seconds: seconds per source cell index that ran.
    """

    ok: bool = True
    error: str | None = None
    cell: int | None = None
    exec_count: int | None = None
    source: str | None = None
    kernel_died: bool = False
    interrupted: bool = False
    timed_out: bool = False
    cells_started: int = 0
    kernel_log_tail: str = ""
    cell_seconds: dict[int, float] = field(default_factory=dict)


def _kernel_manager_class(
    log_path: Path,
    root: Path | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> type:
    """An AsyncKernelManager whose kernel writes its stdout/stderr to ``log_path``, gets
    ``env`` on top of this process's environment and starts in ``cwd`` (that kernel
    alone: notebooks run side by side each see their own; papermill's ``cwd=`` would
    change this whole process's working directory, under the other notebooks' feet).

    Where this jupyter_client and pyzmq can, the kernel's channels are also
    encrypted (CurveZMQ keys provisioned by the manager).
    """
    import zmq  # the [lab] extra
    from jupyter_client import AsyncKernelManager  # the [lab] extra

    extra = dict(env or {})

    class QuietKernelManager(AsyncKernelManager):
        async def _async_pre_start_kernel(self, **kw: Any) -> Any:
            if self.has_trait("transport_encryption") and zmq.has("curve"):
                kw.setdefault("transport_encryption", "auto")
            if extra:  # the provisioner starts from kw["env"] (default: os.environ)
                kw["env"] = {**(kw.get("env") or os.environ), **extra}
            if cwd is not None:  # the kernel's own working directory (Popen's cwd)
                kw["cwd"] = str(cwd)
            cmd, kw = await super()._async_pre_start_kernel(**kw)
            log = _files.open_file(log_path, "ab", root=root)  # the kernel keeps its own copy
            kw["stdout"] = log
            kw["stderr"] = log
            self._labkit_log = log
            return cmd, kw

        async def _async_post_start_kernel(self, **kw: Any) -> None:
            await super()._async_post_start_kernel(**kw)
            log = getattr(self, "_labkit_log", None)
            if log is not None:
                log.close()
            with _RUNNING_LOCK:
                _RUNNING.append(self)
                stopping = STOPPING.is_set()
            if stopping:  # Ctrl-C came while this kernel was starting: it runs nothing
                _kill(self)

    return QuietKernelManager


#: Kernel managers whose kernel this process started and has not seen end (notebooks
#: running side by side: several), guarded by :data:`_RUNNING_LOCK`.
_RUNNING: list[Any] = []
_RUNNING_LOCK = threading.Lock()
#: Set by Ctrl-C during a reproduction (:class:`SigintStops`): no kernel may run on.
STOPPING = threading.Event()


def _quiet_when_stopping(record: logging.LogRecord) -> bool:
    """A logging filter: nothing from papermill's logger once Ctrl-C stopped the run (its
    client says "Kernel died while waiting for execute reply." of every kernel Ctrl-C
    killed; the interruption is said in one line instead)."""
    return not STOPPING.is_set()


def _kill(km: Any) -> None:
    """SIGKILL the kernel (process group) of one kernel manager."""
    prov = getattr(km, "provisioner", None)
    proc = getattr(prov, "process", None)
    pgid = getattr(prov, "pgid", None)
    try:
        if pgid and pgid != os.getpgid(0):
            os.killpg(pgid, signal.SIGKILL)
        elif proc is not None:
            proc.kill()
    except (OSError, ProcessLookupError):
        pass


def kill_kernels() -> None:
    """SIGKILL every kernel (process group) this process started: used on Ctrl-C, so that
    nothing can keep waiting for a cell that will never finish."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for km in running:
        _kill(km)


class SigintStops:
    """While a reproduction runs: Ctrl-C kills the running kernels (and any that starts
    later: :data:`STOPPING`), then raises KeyboardInterrupt in the main thread, so the run
    stops at once whatever the kernels or papermill were doing (the notebooks are then
    marked interrupted; what completed is kept)."""

    def __init__(self) -> None:
        self.seen = False
        self.stopped = False  #: Ctrl-C stopped the run (set on leaving the block)
        self._old: Any = None

    def __enter__(self) -> SigintStops:
        STOPPING.clear()
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.seen = True
        STOPPING.set()
        kill_kernels()
        raise KeyboardInterrupt

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        self.stopped = self.seen or STOPPING.is_set()
        STOPPING.clear()  # a kernel started later (another run in this process) may run


def kernel_env(out: Path, quick: bool, name: str) -> dict[str, str]:
    """The environment of the kernel that runs notebook ``name`` for a reproduction into
    ``out``: its outputs go there, and it imports the same labkit as this process (given to
    that kernel alone, on top of this process's environment: :func:`execute`)."""
    env = {
        "LABKIT_OUT": str(out),
        "LABKIT_DATA": str(out),
        "LABKIT_QUICK": "1" if quick else "0",
        "LABKIT_NOTEBOOK": name,
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    }
    root = config.checkout()
    if root is not None:  # the kernel imports the same labkit as this command
        path = os.environ.get("PYTHONPATH", "")
        env["PYTHONPATH"] = str(root) + (os.pathsep + path if path else "")
    return env


def _log_tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    keep = [
        line
        for line in text.splitlines()
        if line.strip()
        and "without encryption" not in line
        and "KeyboardInterrupt caught in kernel" not in line
    ]
    return "\n".join(keep[-lines:])


def execute(
    nb_path: Path,
    partial: Path,
    params: dict[str, Any],
    cwd: Path,
    plan: NotebookPlan,
    *,
    kernel_log: Path,
    timeout: float | None = None,
    on_cell: Callable[[int], None] | None = None,
    root: Path | None = None,
    env: dict[str, str] | None = None,
) -> CellReport:
    """Run ``nb_path`` with papermill into ``partial`` (written as cells complete).

    Args:
        nb_path: the source notebook.
        partial: where papermill writes the executing notebook.
        params: papermill parameters.
        cwd: the kernel's working directory.
        plan: :meth:`NotebookPlan.of` the source notebook.
        kernel_log: file that receives the kernel's stdout and stderr.
        timeout: seconds per cell (None: no limit).
        on_cell: called with the source index of each code cell as it starts.
        root: the output folder: no link below it is followed when the kernel
            log and ``partial`` are created (:mod:`labkit._files`).
        env: variables the kernel gets on top of this process's environment
            (:func:`kernel_env`); this process's own environment is not changed, so
            notebooks may run side by side in threads.

    Returns:
        A :class:`CellReport`.  OSError raised while writing ``partial`` and
        KeyboardInterrupt propagate (the caller owns the outputs and SIGINT).
    """
    import papermill  # the [lab] extra
    from nbclient.exceptions import CellTimeoutError, DeadKernelError  # the [lab] extra
    from papermill.exceptions import PapermillExecutionError  # the [lab] extra

    rep = CellReport()
    last: dict[str, Any] = {"index": None, "t": None}
    injected = {"n": 0}

    def cell_started(cell: Any, cell_index: int, **_: Any) -> None:
        now = time.perf_counter()
        if last["index"] is not None and last["t"] is not None:
            rep.cell_seconds[last["index"]] = now - last["t"]
        if ADDED_BY_PAPERMILL & set(cell.get("metadata", {}).get("tags", [])):
            injected["n"] += 1
            last["index"], last["t"] = None, None
            return
        k = plan.source_index(cell, cell_index, injected["n"])
        if k is None or cell.get("cell_type") != "code" or not str(cell.get("source", "")).strip():
            last["index"], last["t"] = None, None
            return
        rep.cells_started += 1
        last["index"], last["t"] = k, now
        if on_cell is not None:
            on_cell(k)

    def cell_done(cell: Any, cell_index: int, **_: Any) -> None:
        if last["index"] is not None and last["t"] is not None:
            rep.cell_seconds[last["index"]] = time.perf_counter() - last["t"]
            last["t"] = None

    def failing_from_partial() -> None:
        found = _failing_cell(partial, plan)
        if found is not None:
            rep.cell, rep.exec_count, rep.source = found

    _files.open_file(kernel_log, "wb", root=root).close()  # emptied, never through a link
    _files.remove(partial, root)
    _files.open_file(partial, "xb", root=root).close()  # a new file of ours for papermill
    manager = _kernel_manager_class(kernel_log, root, env, cwd)
    pm_log = logging.getLogger("papermill")
    if _quiet_when_stopping not in pm_log.filters:
        pm_log.addFilter(_quiet_when_stopping)
    try:
        papermill.execute_notebook(
            str(nb_path),
            str(partial),
            parameters=params,
            progress_bar=False,
            log_output=False,
            kernel_name="python3",
            execution_timeout=None if timeout is None else math.ceil(timeout),
            kernel_manager_class=manager,
            on_cell_start=cell_started,
            on_cell_executed=cell_done,
        )
    except PapermillExecutionError as exc:
        rep.ok = False
        rep.error = f"{exc.ename}: {exc.evalue}"
        rep.exec_count = exc.exec_count
        rep.source = first_code_line(exc.source)
        rep.interrupted = exc.ename == "KeyboardInterrupt"
        failing_from_partial()
        if rep.cell is None:
            rep.cell = last["index"]
    except DeadKernelError as exc:
        rep.ok = False
        rep.kernel_died = True
        rep.error = f"the kernel died ({type(exc).__name__}: {str(exc).strip() or 'no message'})"
        rep.kernel_log_tail = _log_tail(kernel_log)
        k = last["index"]
        rep.cell = k
        if k is not None:
            rep.source = first_code_line(plan.cells[k].get("source"))
    except CellTimeoutError as exc:  # a TimeoutError, hence an OSError: not a write error
        rep.ok = False
        rep.timed_out = True
        k = last["index"]
        rep.cell = k
        if k is not None:
            rep.source = first_code_line(plan.cells[k].get("source"))
        limit = f"{timeout:g} s" if timeout is not None else "its time limit"
        rep.error = (
            f"timeout: the cell ran past the {limit} allowed per cell and was stopped "
            f"(raise the limit with --timeout SECONDS; {type(exc).__name__})"
        )
    except (OSError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - bad notebook, missing kernel, timeout ...
        rep.ok = False
        rep.error = (
            f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        )
        k = last["index"]
        if k is not None:
            rep.cell = k
            rep.source = first_code_line(plan.cells[k].get("source"))
        else:
            failing_from_partial()
        if "died" in str(exc).lower():
            rep.kernel_died = True
            rep.kernel_log_tail = _log_tail(kernel_log)
    finally:
        with _RUNNING_LOCK:  # this run's kernel: ended (another thread's may still run)
            _RUNNING[:] = [km for km in _RUNNING if not isinstance(km, manager)]
    if partial.is_file():  # its outputs are this run's, not those of a stored reference run
        drop_stored_run_file(partial)
    return rep


def _failing_cell(path: Path, plan: NotebookPlan) -> tuple[int, int | None, str] | None:
    """(source index, execution count, first code line) of the first cell with an error output."""
    try:
        nb = read_notebook(path)
    except NotebookError:
        return None
    injected = 0
    for k, cell in enumerate(nb["cells"]):
        if ADDED_BY_PAPERMILL & set(cell.get("metadata", {}).get("tags", [])):
            injected += 1
            continue
        for out in cell.get("outputs", []) or []:
            if out.get("output_type") == "error":
                idx = plan.source_index(cell, k, injected)
                return (
                    idx if idx is not None else k - injected,
                    cell.get("execution_count"),
                    first_code_line(cell.get("source")),
                )
    return None


def remove_quietly(path: Path, root: Path | None = None) -> None:
    """Remove a file if it exists, following no link below ``root`` (errors ignored: used on
    the way out of a failure)."""
    try:
        _files.remove(path, root)
    except OSError:
        pass


__all__: list[str] = []  # internal: runs notebooks for labkit.report.reproduce
