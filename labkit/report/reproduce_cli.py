"""The command line of ``labkit reproduce``: options, printed report, exit status.

:func:`main` runs :func:`labkit.report.reproduce.run` and prints the
notebooks' statuses and the summary on stdout, one line per failure on
stderr; SIGINT ends it with one line.  The exit status says what failed.
A completed reproduction also writes its result bundle, ``<out>/bundle``
(:func:`write_bundle`; ``make gallery`` copies the full-mode one into the gallery).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labkit import _options
from labkit.report import summary as report
from labkit.report.reproduce import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    OutputError,
    Reproduction,
    run,
)


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
    print(report.format_summary(rep.summary), file=stream)
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

    ``options`` are :func:`labkit.report.reproduce.run`'s keyword arguments
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
    "add_arguments",
    "from_args",
    "main",
    "print_reproduction",
    "write_bundle",
]
