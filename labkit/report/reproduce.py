"""``labkit reproduce``: run every notebook headless and gather what they produce.

For each ``NN-*.ipynb`` of the notebooks folder, in order, :func:`run`
executes the notebook with papermill (the ``QUICK`` parameter injected, the
notebooks folder as working directory, ``LABKIT_OUT`` and ``LABKIT_DATA``
pointing at the output folder so that summary rows, figures and result tables
land there and nowhere else) and writes, under the output folder:

============================  =================================================
``index.html``                the report: which run produced the results, the
                              summary table, the notebooks, the figures
``notebooks/NN-*.ipynb``      the executed notebooks, with their outputs
``html/NN-*.html``            each executed notebook as HTML (nbconvert)
``figures/*.png, .svg, .json`` the figures the notebooks saved (.json: caption)
``summary/*.json``            one row per headline quantity (labkit.report)
``summary.csv, summary.txt``  the summary table
``results/<experiment>/``     the result tables this reproduction measured
``.state/NN-*.json``          what was run, with which hash, how long it took
============================  =================================================

A notebook is skipped ("up to date") when its last run here finished with
the same code and parameters: the hash covers the notebook's cells (sources,
not outputs), every source file of the labkit package (Python and C) and the
parameters, and the executed copy must be the complete one that run wrote.
``force=True`` reruns everything.  A failing notebook does not stop the
others.  Every file is written through a temporary file and a rename; the
state of a notebook is written last, so an interrupted, killed or full-disk
run is resumed by running the same command again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from labkit import _files, config
from labkit.report import summary as report
from labkit.report.notebook_exec import (
    NotebookPlan,
    SigintStops,
    environ,
    execute,
    kernel_env,
    remove_quietly,
)
from labkit.report.progress import Planned, Progress, estimates_from_state
from labkit.report.run_state import (
    NotebookError,
    OutputError,
    check_out,
    code_version,
    file_sha256,
    forget_rows,
    load_state,
    lock_out,
    now_iso,
    package_sources,
    read_notebook,
    run_hash,
    up_to_date,
    write_state,
)
from labkit.report.run_summary import INCOMPLETE, run_summary

NOTEBOOK_GLOB = "[0-9][0-9]-*.ipynb"

#: Exit statuses of ``labkit reproduce``.
EXIT_OK, EXIT_NOTEBOOK_FAILED, EXIT_USAGE, EXIT_OUTPUT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@dataclass
class NotebookRun:
    """What happened to one notebook.

    Attributes:
        name: file name ("01-iov-iter-tour.ipynb").
        status: "ran", "up to date" (skipped: same hash as its last complete run),
            "failed" (a cell raised, the kernel died, the notebook is unreadable),
            "output error" (an output could not be written), "interrupted" or
            "not run" (after an interruption).
        seconds: execution time (of the run that produced the stored copy, if up to date).
        hash: the code + parameters hash.
        cell: for a failure, the index of the failing cell in the source notebook
            (0 is the first cell, markdown included); if the kernel died or the run
            was interrupted, the last cell that started.
        exec_count: for a failure, its execution count ("In [n]").
        error: for a failure, "ExceptionName: message" (or the output error).
        source: for a failure, the first line of code of that cell.
        finished: when the run that produced the stored copy finished (ISO 8601).
        code: the code version of that run (:func:`labkit.report.run_state.code_version`).
        reason: why it was rerun, or "up to date".
        kernel_log: the kernel's last lines, when it died.
    """

    name: str
    status: str
    seconds: float
    hash: str
    cell: int | None = None
    exec_count: int | None = None
    error: str | None = None
    source: str | None = None
    finished: str | None = None
    code: dict[str, Any] | None = None
    reason: str = ""
    kernel_log: str = ""

    def describe_failure(self) -> str:
        """One line naming the notebook, the cell and the cause."""
        if self.status == "output error":
            return f"{self.name}: {self.error}"
        if self.cell is None:
            where = "before any cell started"
        elif self.status == "interrupted" or (self.error or "").startswith("the kernel died"):
            where = f"during cell {self.cell}"
        else:
            where = f"cell {self.cell}"
        if self.exec_count is not None:
            where += f" (In [{self.exec_count}])"
        src = f": `{self.source}`" if self.source else ""
        text = f"{self.name}: {where}{src}: {self.error}"
        if self.kernel_log:
            text += " | kernel's last words: " + " / ".join(self.kernel_log.splitlines()[-3:])
        return text


@dataclass
class Reproduction:
    """The outcome of :func:`run`."""

    out: Path
    quick: bool
    runs: list[NotebookRun] = field(default_factory=list)
    summary: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=report.COLUMNS))
    seconds: float = 0.0
    finished: str | None = None
    interrupted: NotebookRun | None = None
    output_errors: list[str] = field(default_factory=list)
    measured_s: float | None = None  #: the measuring phase's seconds (None: no phase ran)

    @property
    def failed(self) -> list[NotebookRun]:
        """The notebooks that did not complete (failed, output error, interrupted)."""
        return [r for r in self.runs if r.status in INCOMPLETE]

    @property
    def ok(self) -> bool:
        """True when every notebook completed and every output was written."""
        return not self.failed and not self.output_errors and self.interrupted is None

    @property
    def exit_status(self) -> int:
        """130 interrupted, 3 an output could not be written, 1 a notebook failed, else 0."""
        if self.interrupted is not None:
            return EXIT_INTERRUPTED
        if self.output_errors or any(r.status == "output error" for r in self.runs):
            return EXIT_OUTPUT_ERROR
        return EXIT_NOTEBOOK_FAILED if self.failed else EXIT_OK


def notebooks_dir() -> Path:
    """Where the notebooks are: ``$LABKIT_NOTEBOOKS``, else the clone's ``notebooks/``, else
    the copy an installed labkit carries."""
    return config.notebooks_setting() or config.resource("notebooks")


def default_out(quick: bool) -> Path:
    """``reproduction/quick`` or ``/full`` in the clone (ignored by git); for an installed
    labkit, ``reproduction/<mode>`` under the data dir (``./labkit-results`` or LABKIT_DATA)."""
    mode = "quick" if quick else "full"
    root = config.checkout()
    return (root if root is not None else config.data_dir()) / "reproduction" / mode


def find_notebooks(folder: str | os.PathLike[str]) -> list[Path]:
    """The numbered notebooks (``NN-*.ipynb``) of ``folder``, in order."""
    return sorted(Path(folder).glob(NOTEBOOK_GLOB))


def _html(nb_path: Path, dest: Path) -> None:
    """Write the HTML page of an executed notebook (OSError, or OutputError naming ``dest``)."""
    from nbconvert import HTMLExporter

    log = logging.getLogger("labkit.report.html")
    log.setLevel(logging.ERROR)  # not "Alternative text is missing on 3 image(s)" per page
    try:
        import nbformat

        nb = nbformat.read(nb_path, as_version=4)
        # no stored widget state: a page would need the widgets' JavaScript from the network
        # to show them, while each widget output also carries its static drawing (PNG)
        nb.metadata.pop("widgets", None)
        body, _ = HTMLExporter(template_name="lab", log=log).from_notebook_node(nb)
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. nbconvert's templates not installed
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise OutputError(dest, f"nbconvert failed: {type(exc).__name__}: {first}") from None
    _files.atomic_write(dest, body, root=dest.parent.parent)  # <out>/html/<name>.html


@dataclass
class _Item:
    nb: Path
    digest: str = ""
    plan: NotebookPlan | None = None
    state: dict[str, Any] = field(default_factory=dict)
    run: bool = True
    reason: str = ""
    error: str | None = None


def _reads_claims(item: _Item) -> bool:
    """True when a code cell of the notebook uses ``labkit.claims``."""
    code = [c for c in (item.plan.cells if item.plan else []) if c.get("cell_type") == "code"]
    return any("claims" in "".join(c.get("source", "")) for c in code)


def _plan(nbs: list[Path], out: Path, params: dict[str, Any], force: bool, html: bool) -> list:
    items = []
    for nb in nbs:
        item = _Item(nb)
        try:
            item.plan = NotebookPlan.of(read_notebook(nb))
            item.digest = run_hash(nb, params)
        except NotebookError as exc:
            item.error = str(exc)
            items.append(item)
            continue
        item.state = load_state(out, nb.name)
        page = out / "html" / f"{nb.stem}.html" if html else None
        fresh, why = up_to_date(item.state, item.digest, out / "notebooks" / nb.name, page)
        item.run = force or not fresh
        item.reason = "--force" if force and fresh else why
        items.append(item)
    return items


def _run_one(
    item: _Item, out: Path, params: dict[str, Any], cwd: Path, prog: Progress, opts: dict
) -> NotebookRun:
    """Execute one notebook and publish its outputs; never raises but KeyboardInterrupt."""
    nb, quick = item.nb, bool(params["QUICK"])
    dest = out / "notebooks" / nb.name
    partial = out / "notebooks" / f".{nb.stem}.partial.ipynb"
    result = NotebookRun(nb.name, "ran", 0.0, item.digest, reason=item.reason)
    started = {"status": "running", "hash": item.digest, "started": now_iso(), "quick": quick}
    t0 = time.perf_counter()
    try:
        write_state(out, nb.name, started)  # a kill from here on leaves "running": rerun
        forget_rows(out, nb.name)  # its rows of an earlier run: it records them again
        with environ(kernel_env(out, quick, nb.name)):
            cells = execute(
                nb,
                partial,
                params,
                cwd,
                item.plan,
                kernel_log=out / ".state" / f"{nb.stem}.kernel.log",
                timeout=opts["timeout"],
                on_cell=prog.cell_start,
                root=out,
            )
        result.seconds = time.perf_counter() - t0
        if not cells.ok:
            result.status = "interrupted" if cells.interrupted else "failed"
            result.error, result.cell = cells.error, cells.cell
            result.exec_count, result.source = cells.exec_count, cells.source
            result.kernel_log = cells.kernel_log_tail
            forget_rows(out, nb.name)  # a failed notebook reports its failure, not half its rows
        if partial.is_file():
            _files.rename_within(partial, dest, out)
        t_html = time.perf_counter()
        if opts["html"] and dest.is_file():
            _html(dest, out / "html" / f"{nb.stem}.html")
        t_html = time.perf_counter() - t_html
        result.finished, result.code = now_iso(), code_version()
        write_state(
            out,
            nb.name,
            {
                "status": result.status,
                "hash": item.digest,
                "quick": quick,
                "seconds": result.seconds,
                "html_seconds": t_html,
                "started": started["started"],
                "finished": result.finished,
                "code": result.code,
                "executed_sha256": file_sha256(dest),
                "cell_seconds": {str(k): v for k, v in cells.cell_seconds.items()},
                "cell": result.cell,
                "exec_count": result.exec_count,
                "error": result.error,
                "source": result.source,
            },
        )
    except KeyboardInterrupt:
        result.status, result.seconds = "interrupted", time.perf_counter() - t0
        result.error = "KeyboardInterrupt"
        result.cell = prog.cell
        if result.cell is not None and item.plan is not None:
            from labkit.report.notebook_exec import first_code_line

            result.source = first_code_line(item.plan.cells[result.cell].get("source"))
        remove_quietly(partial, out)
    except (OSError, OutputError) as exc:
        err = exc if isinstance(exc, OutputError) else OutputError.from_oserror(exc, out)
        result.status, result.error = "output error", str(err)
        result.seconds = time.perf_counter() - t0
        remove_quietly(partial, out)
    except Exception as exc:  # noqa: BLE001 - a bug here must not stop the other notebooks
        result.status, result.seconds = "failed", time.perf_counter() - t0
        result.error = f"labkit reproduce itself failed: {type(exc).__name__}: {exc}"
        remove_quietly(partial, out)
    if result.status in INCOMPLETE:
        with contextlib.suppress(OSError, OutputError):
            forget_rows(out, nb.name)
    return result


def _finish(rep: Reproduction, html_report: bool) -> None:
    """Summary table, summary.csv/.txt and index.html; output errors are collected."""
    out = rep.out
    rep.summary = run_summary(rep)
    if html_report:  # pages missing for up-to-date notebooks (e.g. out copied elsewhere)
        for r in (r for r in rep.runs if r.status == "up to date"):
            page = out / "html" / f"{Path(r.name).stem}.html"
            executed = out / "notebooks" / r.name
            if not page.is_file() and executed.is_file():
                try:
                    _html(executed, page)
                except OutputError as exc:
                    rep.output_errors.append(str(exc))
                except OSError as exc:
                    rep.output_errors.append(str(OutputError.from_oserror(exc, page)))
    writes = [
        (out / "summary.csv", lambda: rep.summary.to_csv(index=False)),
        (out / "summary.txt", lambda: report.format_summary(rep.summary) + "\n"),
    ]
    if html_report:
        from labkit.report.index_page import index_html

        writes.append((out / "index.html", lambda: index_html(rep)))
    for path, text in writes:
        try:
            _files.atomic_write(path, text(), root=out)
        except OSError as exc:
            rep.output_errors.append(str(OutputError.from_oserror(exc, path)))


def run(
    *,
    quick: bool = False,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    notebooks: str | os.PathLike[str] | None = None,
    progress: bool = True,
    timeout: float | None = None,
    html_report: bool = True,
    measure: Callable[[Path, bool], Any] | None = None,
) -> Reproduction:
    """Execute every numbered notebook and write the reproduction into ``out``.

    Args:
        quick: quick mode (``QUICK=True`` in the notebooks, ``LABKIT_QUICK=1``).
        out: output directory (default :func:`default_out`).
        force: rerun notebooks whose code and parameters have not changed.
        notebooks: the notebooks directory (default :func:`notebooks_dir`).
        progress: show progress on stderr.
        timeout: seconds allowed per cell (None: no limit).
        html_report: write the HTML pages and index.
        measure: ``measure(out, quick)``, run first when a notebook using ``claims`` runs
            (``labkit reproduce`` passes :func:`labkit.claims.schedule.phase`); they read its rows.

    Returns:
        A :class:`Reproduction`; ``.failed`` lists the notebooks that did not
        complete and ``.exit_status`` says what went wrong.  SIGINT (Ctrl-C)
        stops the run with ``.interrupted`` set; what completed is kept.

    Raises:
        FileNotFoundError: if the notebooks directory holds no numbered notebook.
        OutputError: if ``out`` cannot take a reproduction (checked before anything runs):
            it is or contains the notebooks folder, a link is planted where a folder
            goes, or another reproduction holds its lock (``<out>/.state/lock``, held while
            this one runs; the message names the holder).
    """
    start = time.perf_counter()
    nb_dir = Path(notebooks) if notebooks is not None else notebooks_dir()
    nbs = find_notebooks(nb_dir)
    if not nbs:
        raise FileNotFoundError(f"no notebooks named {NOTEBOOK_GLOB} in {nb_dir}")
    out_path = check_out(Path(out) if out is not None else default_out(quick), notebooks=nb_dir)
    lock = lock_out(out_path)
    try:
        return _run_locked(
            nbs, nb_dir, out_path, quick, force, html_report, timeout, progress, start, measure
        )
    finally:
        lock.release()


def _run_locked(
    nbs: list[Path],
    nb_dir: Path,
    out_path: Path,
    quick: bool,
    force: bool,
    html_report: bool,
    timeout: float | None,
    progress: bool,
    start: float,
    measure: Callable[[Path, bool], Any] | None = None,
) -> Reproduction:
    """The body of :func:`run`, while the output folder is locked."""
    params = {"QUICK": bool(quick)}
    rep = Reproduction(out=out_path, quick=bool(quick))
    items = _plan(nbs, out_path, params, force, html_report)
    if measure is not None and any(i.run and i.error is None and _reads_claims(i) for i in items):
        t0 = time.perf_counter()
        measure(out_path, bool(quick))  # Ctrl-C here: KeyboardInterrupt, nothing kept
        rep.measured_s = time.perf_counter() - t0
        for i in items:  # a notebook that reads the claims reads the new measurements
            if i.error is None and not i.run and _reads_claims(i):
                i.run, i.reason = True, "new measurements"
    planned = [
        Planned(
            i.nb.name,
            i.run and i.error is None,
            i.plan.code if i.plan else [],
            i.plan.sections if i.plan else [],
            *estimates_from_state(i.state, quick),
        )
        for i in items
    ]
    prog = Progress(planned, enabled=progress)
    opts = {"timeout": timeout, "html": html_report}
    sigint = SigintStops()
    try:
        sigint.__enter__()
        for item in items:
            name = item.nb.name
            if rep.interrupted is not None:
                rep.runs.append(NotebookRun(name, "not run", 0.0, item.digest))
            elif item.error is not None:
                rep.runs.append(NotebookRun(name, "failed", 0.0, "", error=item.error))
            elif not item.run:
                st = item.state
                rep.runs.append(
                    NotebookRun(
                        name,
                        "up to date",
                        float(st.get("seconds", 0.0)),
                        item.digest,
                        finished=st.get("finished"),
                        code=st.get("code"),
                        reason="up to date",
                    )
                )
            else:
                prog.notebook_start(name)
                result = _run_one(item, out_path, params, nb_dir.resolve(), prog, opts)
                if sigint.seen and result.status != "interrupted":  # e.g. seen as a dead kernel
                    result.status, result.error, result.kernel_log = "interrupted", "SIGINT", ""
                prog.notebook_done(name, result.status, result.seconds)
                rep.runs.append(result)
                if result.status == "interrupted":
                    rep.interrupted = result
    finally:
        sigint.__exit__()
        prog.close()
    rep.seconds = time.perf_counter() - start
    rep.finished = now_iso()
    if rep.interrupted is None:
        _finish(rep, html_report)
    rep.seconds = time.perf_counter() - start
    return rep


__all__: Sequence[str] = (
    "NotebookRun",
    "OutputError",
    "Reproduction",
    "default_out",
    "find_notebooks",
    "notebooks_dir",
    "package_sources",
    "run",
    "run_hash",
)
