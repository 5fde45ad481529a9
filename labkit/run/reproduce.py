"""``labkit reproduce``: run every notebook headless and gather what they produce.

For each ``NN-*.ipynb`` of the notebooks folder (side by side, up to ``jobs`` at
once, where what they show is the same as in order: :mod:`labkit.run.lanes`),
:func:`run` executes the notebook with papermill (the ``QUICK`` parameter injected, the
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
import functools
import logging
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit import _files, _options, config
from labkit.report import summary
from labkit.report.bundle import load_state
from labkit.run import lanes
from labkit.run.index_page import index_html
from labkit.run.notebook_exec import (
    STOPPING,
    NotebookPlan,
    SigintStops,
    execute,
    first_code_line,
    kernel_env,
    kill_kernels,
    remove_quietly,
)
from labkit.run.outcome import (  # noqa: F401 - the exit statuses: labkit reproduce's, here
    EXIT_INTERRUPTED,
    EXIT_NOTEBOOK_FAILED,
    EXIT_OK,
    EXIT_OUTPUT_ERROR,
    EXIT_USAGE,
    INCOMPLETE,
    NotebookRun,
    Reproduction,
    run_summary,
)
from labkit.run.progress import Planned, Progress, estimates_from_state
from labkit.run.run_state import (
    NotebookError,
    OutputError,
    check_out,
    code_version,
    file_sha256,
    forget_rows,
    lock_out,
    now_iso,
    package_sources,
    read_notebook,
    run_hash,
    up_to_date,
    write_state,
)

NOTEBOOK_GLOB = "[0-9][0-9]-*.ipynb"


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
    from nbconvert import HTMLExporter  # on use: seconds to import, only for the pages

    log = logging.getLogger("labkit.report.html")
    log.setLevel(logging.ERROR)  # not "Alternative text is missing on 3 image(s)" per page
    try:
        import nbformat  # with nbconvert, above

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
    """One notebook as the run plans it."""

    nb: Path
    digest: str = ""
    plan: NotebookPlan | None = None
    state: dict[str, Any] = field(default_factory=dict)
    run: bool = True
    reason: str = ""
    error: str | None = None


def _reads_claims(item: _Item) -> bool:
    """True when a code cell of the notebook uses ``labkit.claims``."""
    return lanes.uses_claims(item.plan.cells if item.plan else None)


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


class _Stopped(Exception):
    """Ctrl-C killed this notebook's kernel (seen in a thread that runs notebooks)."""


def _run_one(
    item: _Item, out: Path, params: dict[str, Any], cwd: Path, prog: Progress, opts: dict
) -> NotebookRun:
    """Execute one notebook and publish its outputs; never raises but KeyboardInterrupt.

    It may run in a thread beside another notebook's: its kernel gets its own environment
    (:func:`kernel_env`, nothing of this process's is changed) and everything it writes is
    its own (its state, its executed copy, its page, its rows).
    """
    nb, quick = item.nb, bool(params["QUICK"])
    dest = out / "notebooks" / nb.name
    partial = out / "notebooks" / f".{nb.stem}.partial.ipynb"
    result = NotebookRun(nb.name, "ran", 0.0, item.digest, reason=item.reason)
    started = {"status": "running", "hash": item.digest, "started": now_iso(), "quick": quick}
    t0 = time.perf_counter()
    try:
        write_state(out, nb.name, started)  # a kill from here on leaves "running": rerun
        forget_rows(out, nb.name)  # its rows of an earlier run: it records them again
        cells = execute(
            nb,
            partial,
            params,
            cwd,
            item.plan,
            kernel_log=out / ".state" / f"{nb.stem}.kernel.log",
            timeout=opts["timeout"],
            on_cell=lambda k: prog.cell_start(k, nb.name),
            root=out,
            env=kernel_env(out, quick, nb.name),
        )
        result.seconds = time.perf_counter() - t0
        if not cells.ok and STOPPING.is_set():  # Ctrl-C killed the kernel: not a failure
            raise _Stopped
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
    except (KeyboardInterrupt, _Stopped):
        result.status, result.seconds = "interrupted", time.perf_counter() - t0
        result.error = "KeyboardInterrupt"
        result.cell = prog.cell_of(nb.name)
        if result.cell is not None and item.plan is not None:
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
        (out / "summary.txt", lambda: summary.format_summary(rep.summary) + "\n"),
    ]
    if html_report:
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
    jobs: int | None = None,
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
        jobs: notebooks run at once (None: :func:`labkit.run.lanes.default_jobs`; 1: one
            after another), where what they show is the same as one after another.
            Side by side only when no notebook that runs measures time itself: a notebook
            using ``claims`` without a measuring phase times its experiments in its own
            kernel, so then they run one after another whatever ``jobs`` says.  Results,
            states and the summary are in the notebooks' order either way.

    Returns:
        A :class:`Reproduction`; ``.failed`` lists the notebooks that did not
        complete and ``.exit_status`` says what went wrong.  SIGINT (Ctrl-C)
        stops the run with ``.interrupted`` set; what completed is kept.

    Raises:
        ValueError: if ``jobs`` is less than 1.
        FileNotFoundError: if the notebooks directory holds no numbered notebook.
        OutputError: if ``out`` cannot take a reproduction (checked before anything runs):
            it is or contains the notebooks folder, a link is planted where a folder
            goes, or another reproduction holds its lock (``<out>/.state/lock``, held while
            this one runs; the message names the holder).
    """
    start = time.perf_counter()
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs must be a whole number >= 1 (or None), got {jobs!r}")
    nb_dir = Path(notebooks) if notebooks is not None else notebooks_dir()
    nbs = find_notebooks(nb_dir)
    if not nbs:
        raise FileNotFoundError(f"no notebooks named {NOTEBOOK_GLOB} in {nb_dir}")
    out_path = check_out(Path(out) if out is not None else default_out(quick), notebooks=nb_dir)
    lock = lock_out(out_path)
    try:
        return _run_locked(
            nbs,
            nb_dir,
            out_path,
            quick,
            force,
            html_report,
            timeout,
            progress,
            start,
            measure,
            lanes.default_jobs() if jobs is None else jobs,
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
    jobs: int = 1,
) -> Reproduction:
    """The body of :func:`run`, while the output folder is locked."""
    params = {"QUICK": bool(quick)}
    rep = Reproduction(out=out_path, quick=bool(quick))
    items = _plan(nbs, out_path, params, force, html_report)
    if measure is not None and any(i.run and i.error is None and _reads_claims(i) for i in items):
        t0 = time.perf_counter()
        try:  # Ctrl-C here: KeyboardInterrupt, nothing kept
            measure(out_path, bool(quick))
        except (OSError, OutputError) as exc:  # rows not written: the notebooks measure
            err = exc if isinstance(exc, OutputError) else OutputError.from_oserror(exc, out_path)
            rep.output_errors.append(f"the measuring phase: {err}")
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
    clock_inside = rep.measured_s is None and any(
        i.run and i.error is None and _reads_claims(i) for i in items
    )  # no measuring phase: those notebooks time their experiments themselves
    n_lanes = lanes.lanes(jobs, clock_inside)
    waits = lanes.waits_for([i.plan.cells if i.plan else None for i in items])
    prog = Progress(planned, enabled=progress, lanes=n_lanes)
    opts = {"timeout": timeout, "html": html_report}
    runs: list[NotebookRun | None] = [None] * len(items)
    for k, item in enumerate(items):
        if item.error is not None:
            runs[k] = NotebookRun(item.nb.name, "failed", 0.0, "", error=item.error)
        elif not item.run:
            st = item.state
            runs[k] = NotebookRun(
                item.nb.name,
                "up to date",
                float(st.get("seconds", 0.0)),
                item.digest,
                finished=st.get("finished"),
                code=st.get("code"),
                reason="up to date",
            )

    def lane(item: _Item, after: list[Future[NotebookRun]]) -> NotebookRun:
        name = item.nb.name
        wait(after)  # earlier notebooks whose rows it reads, or which read its rows
        if STOPPING.is_set():
            return NotebookRun(name, "not run", 0.0, item.digest)
        prog.notebook_start(name)
        result = _run_one(item, out_path, params, nb_dir.resolve(), prog, opts)
        if STOPPING.is_set() and result.status in INCOMPLETE and result.status != "interrupted":
            result.status, result.error, result.kernel_log = "interrupted", "SIGINT", ""
        prog.notebook_done(name, result.status, result.seconds)
        return result

    sigint = SigintStops()
    pool = ThreadPoolExecutor(max_workers=n_lanes, thread_name_prefix="labkit-notebook")
    futures: dict[Future[NotebookRun], int] = {}
    by_index: dict[int, Future[NotebookRun]] = {}
    try:
        sigint.__enter__()
        for k, item in enumerate(items):
            if runs[k] is None:  # submitted in order: what it waits for started before it
                after = [by_index[j] for j in waits[k] if j in by_index]
                by_index[k] = pool.submit(lane, item, after)
                futures[by_index[k]] = k
        pending = set(futures)
        while pending:  # a timeout, so that Ctrl-C is seen while notebooks run
            _, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
    except KeyboardInterrupt:
        STOPPING.set()  # no notebook starts; a kernel starting now is killed
        kill_kernels()
        for f in futures:
            f.cancel()
        wait(futures)  # the running notebooks end: their kernels are dead
    finally:
        try:
            pool.shutdown(wait=True)  # every notebook has ended: none may start now
        finally:  # (even if a second Ctrl-C cut the wait short)
            sigint.__exit__()
            prog.close()
    for f, k in futures.items():
        if f.cancelled():
            runs[k] = NotebookRun(items[k].nb.name, "not run", 0.0, items[k].digest)
        elif f.exception() is not None:  # a bug here must not lose the other notebooks
            exc, name = f.exception(), items[k].nb.name
            why = f"labkit reproduce itself failed: {type(exc).__name__}: {exc}"
            runs[k] = NotebookRun(name, "failed", 0.0, items[k].digest, error=why)
        else:
            runs[k] = f.result()
    rep.runs = [r for r in runs if r is not None]
    stopped = sigint.stopped
    for r in rep.runs:
        if stopped and r.status == "interrupted" and rep.interrupted is None:
            rep.interrupted = r
    if stopped and rep.interrupted is None:  # Ctrl-C between two notebooks
        rep.interrupted = next((r for r in rep.runs if r.status == "not run"), None)
    rep.seconds = time.perf_counter() - start
    rep.finished = now_iso()
    if rep.interrupted is None:
        _finish(rep, html_report)
    rep.seconds = time.perf_counter() - start
    return rep


def print_reproduction(rep: Reproduction, stream: Any = None) -> None:
    """Print the per-notebook status, the summary table and one line per failure."""
    stream = stream or sys.stdout
    mode = "quick" if rep.quick else "full"
    ran = [r for r in rep.runs if r.status == "ran"]
    fresh = [r for r in rep.runs if r.status == "up to date"]
    if fresh and not ran and not rep.failed:
        produced = max((r.finished or "" for r in fresh), default="")
        head = (
            f"labkit reproduce ({mode} mode): nothing changed since the run of "
            f"{produced.replace('T', ' ')[:16]} UTC; {len(fresh)} notebooks up to date "
            f"({rep.seconds:.1f} s)"
        )
    else:
        head = f"labkit reproduce ({mode} mode): {len(rep.runs)} notebooks in {rep.seconds:.1f} s"
        if fresh:
            head += f" ({len(ran)} ran, {len(fresh)} up to date)"
        if rep.measured_s is not None:
            head += f"; the measuring phase took {rep.measured_s:.1f} s of it"
    print(head, file=stream)
    width = max(len(r.name) for r in rep.runs) if rep.runs else 0
    for r in rep.runs:
        note = f"  {r.status:12s} {r.name:{width}s} {r.seconds:7.1f} s"
        if r.status == "up to date" and r.finished:
            note += f"  (produced {r.finished.replace('T', ' ')[:16]} UTC; --force reruns it)"
        print(note, file=stream)
    print("", file=stream)
    print(summary.format_summary(rep.summary), file=stream)
    print(f"\noutputs: {rep.out} (open index.html)", file=stream)
    for r in rep.failed:
        print(f"labkit reproduce: {r.status.upper()} {r.describe_failure()}", file=sys.stderr)
    for err in rep.output_errors:
        print(f"labkit reproduce: OUTPUT ERROR {err}", file=sys.stderr)


def _interrupted_line(rep: Reproduction) -> str:
    r = rep.interrupted
    assert r is not None
    where = (
        f" at cell {r.cell}" + (f" (`{r.source}`)" if r.source else "")
        if r.cell is not None
        else ""
    )
    kept = sum(1 for x in rep.runs if x.status in ("ran", "up to date"))
    return (
        f"labkit reproduce: interrupted in {r.name}{where}; {kept} completed notebook(s) kept "
        f"in {rep.out}; run the same command again to resume."
    )


def write_bundle(rep: Reproduction) -> Path | None:
    """The reproduction's result bundle in ``<out>/bundle`` (:mod:`labkit.report.bundle`);
    an error writing it joins ``rep.output_errors``."""
    from labkit.report.bundle import from_reproduction  # only after a run: pandas, gzip

    try:
        return from_reproduction(rep.out)
    except OSError as exc:
        rep.output_errors.append(str(OutputError.from_oserror(exc, rep.out / "bundle")))
        return None


def main(*, measure: Callable[..., Any] | None = None, **options: Any) -> int:
    """What ``labkit reproduce`` runs; returns the exit status (see :data:`EXIT_OK` ...).

    ``options`` are :func:`labkit.run.reproduce.run`'s keyword arguments
    (quick, out, force, notebooks, progress, timeout, jobs), and ``sessions`` and ``pause``:
    ``measure(out, quick, sessions=, pause=, progress=)`` is the measuring phase run
    before the notebooks (:func:`labkit.claims.schedule.phase`, which ``labkit
    reproduce`` passes); without it each notebook measures its own experiments, in one
    session.
    """
    sessions = options.pop("sessions", None)  # None: the measuring phase's default
    pause = float(options.pop("pause", 30.0))
    if measure is not None:
        options["measure"] = functools.partial(
            measure, sessions=sessions, pause=pause, progress=options.get("progress", True)
        )
    bad = sessions is not None and int(sessions) < 1 or not pause >= 0
    if bad or (measure is None and sessions not in (None, 1)):
        why = f"--sessions must be >= 1 and --pause >= 0, got {sessions} and {pause}"
        print(f"labkit reproduce: {why if bad else '--sessions needs the measuring phase'}",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    jobs = options.get("jobs")
    if jobs is not None and int(jobs) < 1:
        print(f"labkit reproduce: --jobs must be >= 1, got {jobs}", file=sys.stderr)
        return EXIT_USAGE
    try:
        rep = run(**options)
        if rep.interrupted is not None:
            print(_interrupted_line(rep), file=sys.stderr)
            return EXIT_INTERRUPTED
        write_bundle(rep)
        print_reproduction(rep)
        return rep.exit_status
    except (FileNotFoundError, OutputError) as exc:
        print(f"labkit reproduce: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(
            "labkit reproduce: interrupted; run the same command again to resume.", file=sys.stderr
        )
        return EXIT_INTERRUPTED


DESCRIPTION = """\
Run every notebook (NN-*.ipynb) headless, side by side after the measuring
phase (--jobs), and write a report: the executed notebooks, their HTML pages,
the figures, the summary table of published / model / live figures, and
index.html. Notebooks whose cells,
labkit's code and the parameters have not changed since their last complete
run are kept as they are (--force reruns them). An interrupted run (Ctrl-C,
a kill, a full disk) is resumed by running the same command again."""

EPILOG = """\
exit status: 0 every notebook completed; 1 a notebook failed (the cell and the
error are named); 2 bad arguments, no notebooks, or an output folder that
cannot be written; 3 an output file could not be written; 130 interrupted."""


def add_arguments(parser: Any) -> None:
    """The options of ``labkit reproduce``."""
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.add_argument(
        "--quick", action="store_true", help="quick mode: small sizes and few repeats (as CI)"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="output folder (default: reproduction/quick or reproduction/full in a clone, "
        "labkit-results/reproduction/... in the current directory otherwise)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="rerun notebooks even if their code and parameters are unchanged",
    )
    parser.add_argument(
        "--notebooks",
        metavar="DIR",
        default=None,
        help="notebooks folder (default: $LABKIT_NOTEBOOKS, else the ones labkit ships)",
    )
    parser.add_argument(
        "--timeout",
        type=_options.seconds(),
        default=None,
        metavar="SECONDS",
        help="time allowed per cell (default: no limit)",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=_options.count(1, _options.MAX_JOBS),
        default=None,
        metavar="N",
        help="notebooks run at once (default: one per CPU, at most 4; 1: one after "
        "another); side by side only after the measuring phase, so that no notebook "
        "times anything while another runs",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--sessions",
        type=_options.count(1, _options.MAX_SESSIONS),
        default=None,
        metavar="N",
        help="repeat the measuring phase (every experiment's runs, interleaved) N times, "
        "pauses between; each verdict's interval then has the session as the unit of "
        "replication (default: 3 in full mode, 1 in quick mode)",
    )
    parser.add_argument(
        "--pause",
        type=_options.number(high=_options.MAX_PAUSE_S, unit="seconds"),
        default=30.0,
        metavar="SECONDS",
        help="pause between sessions (default 30)",
    )


def from_args(args: Any, measure: Callable[..., Any] | None = None) -> int:
    """Run ``labkit reproduce`` from parsed arguments (``measure``: see :func:`main`)."""
    return main(
        measure=measure,
        quick=args.quick,
        out=args.out,
        force=args.force,
        notebooks=args.notebooks,
        progress=not args.no_progress,
        timeout=args.timeout,
        jobs=args.jobs,
        sessions=args.sessions,
        pause=args.pause,
    )


__all__ = [
    "DESCRIPTION",
    "EPILOG",
    "NotebookRun",
    "OutputError",
    "Reproduction",
    "add_arguments",
    "default_out",
    "find_notebooks",
    "from_args",
    "main",
    "notebooks_dir",
    "package_sources",
    "print_reproduction",
    "run",
    "run_hash",
    "write_bundle",
]
