"""The labkit command line.

Subcommands register themselves in COMMANDS: a name, a one-line help, a
function that adds its arguments to a parser, and the function that runs it.
Each command imports the parts of labkit it runs inside its function, so that
``labkit --help`` (and every other command) loads neither pandas nor the
parts it does not use; ``import labkit`` itself loads nothing (the package
root loads the model on first use).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import labkit
from labkit import _files, _options, config
from labkit._extras import MissingExtraError, require_lab
from labkit._options import check_settings
from labkit.errors import CoreLoadError


@dataclass(frozen=True)
class Command:
    """One ``labkit`` subcommand."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _demo_args(parser: argparse.ArgumentParser) -> None:
    pass


def _demo(args: argparse.Namespace) -> int:
    """A short tour of the API: import one segment under 6.3 and 6.4, copy, revert."""
    mem = labkit.UserMemory()
    m = mem.map(4 * labkit.PAGE_SIZE)
    print(f"mapped {m}")
    for kernel in ("6.3", "6.4"):
        it = labkit.import_iovec(labkit.ITER_DEST, [(m.addr + 100, 6000)], mem, kernel=kernel)
        print(f"kernel {kernel}: readv with one segment imports as {it.iter_type}: {it!r}")
    it = labkit.import_iovec(
        labkit.ITER_DEST, [(m.addr, 10), (m.addr + 4096, 0), (m.addr + 8192, 20)], mem
    )
    print(f"three segments (one empty): {it!r}")
    copied = it.copy_to_iter(bytes(range(1, 26)))
    print(f"copy_to_iter(25 bytes) -> {copied}: {it!r}")
    print(f"  bytes at addr+0: {m.array[:10].tolist()}")
    print(f"  bytes at addr+8192: {m.array[8192:8207].tolist()}")
    it.revert(20)
    print(f"revert(20): {it!r}, current segment (addr, len) = {it.iovec()}")
    _demo_all_types(labkit, mem, m)
    print(f"C core built with: {labkit.build_info()['cflags']}")
    return 0


def _demo_all_types(labkit, mem, m) -> None:
    """One iterator of each of the kernel's seven types over 8 KiB, each given 5000 bytes."""
    page, dest = labkit.PAGE_SIZE, labkit.ITER_DEST
    buf = m.array[: 2 * page]
    cache = labkit.PageCache()
    cache.populate(0, 2)
    queue = labkit.FolioQueue()
    queue.extend([0, 0])
    iters = [
        labkit.import_ubuf(dest, m.addr, 2 * page, mem),
        labkit.import_iovec(dest, [(m.addr, page), (m.addr + page, page)], mem),
        labkit.IovIter.kvec(dest, [buf[:page], buf[page:]]),
        labkit.IovIter.bvec(dest, [(buf, 0, page), (buf, page, page)]),
        labkit.IovIter.discard(dest, 2 * page),
        labkit.IovIter.xarray(dest, cache, 0, 2 * page),
        labkit.IovIter.folio_queue(dest, queue, 0, 0, 2 * page),
    ]
    print("the kernel's seven iterator types, 8 KiB each, copy_to_iter(5000 bytes):")
    for it in iters:
        copied = it.copy_to_iter(bytes(5000))
        print(f"  {it.iter_type:<7} -> {copied}: {it!r}")


def _info_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the record as JSON")
    parser.add_argument(
        "--quick",
        action="store_true",
        default=None,
        help="record quick mode (default: LABKIT_QUICK)",
    )


def _info(args: argparse.Namespace) -> int:
    """Print the environment record and whether io_uring is available here."""
    from labkit.measure.envinfo import (  # on use: labkit --help stays fast
        environment,
        format_environment,
    )

    env = environment(quick=args.quick)
    if args.json:
        print(json.dumps(env, indent=2, default=str))
        return 0
    print(format_environment(env))
    io = env["io_uring"]
    print()
    print(
        "io_uring: " + ("available" if io["available"] else "NOT available") + f" ({io['reason']})"
    )
    return 0


def _bench_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "what",
        choices=["copy"],
        help="copy: the core's copy_to_iter/copy_from_iter/advance vs memcpy",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        default=None,
        help="small sizes and few repeats (also LABKIT_QUICK=1)",
    )
    parser.add_argument(
        "--repeats",
        type=_options.count(1, _options.MAX_REPEATS),
        default=None,
        help="override the repeats per run",
    )
    parser.add_argument(
        "--runs",
        type=_options.count(1, _options.MAX_RUNS),
        default=None,
        help="independent runs (worker processes)",
    )
    parser.add_argument("--cpu", type=int, default=None, help="CPU to pin to")
    parser.add_argument(
        "--no-save",
        action="store_true",
        help="do not write results under labkit-results/results/ (or LABKIT_DATA)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


def _bench(args: argparse.Namespace) -> int:
    """Run the core copy benchmark, print its table and headline figures, save the results."""
    import pandas as pd  # on use: labkit --help stays fast

    from labkit.experiments import core_copy as corebench  # on use: labkit --help stays fast
    from labkit.measure import results, runner  # on use: labkit --help stays fast
    from labkit.measure.envinfo import environment  # on use: labkit --help stays fast

    quick = config.quick_mode(args.quick)
    cfg = corebench.CoreCopy.for_mode(quick)
    reps = cfg.repeats if args.repeats is None else args.repeats
    runs = cfg.runs if args.runs is None else args.runs
    for option, value in (("--repeats", reps), ("--runs", runs)):
        if value < 1:
            print(f"labkit bench: {option} must be >= 1, got {value}", file=sys.stderr)
            return 2
    # everything the run needs is checked before it measures, not after
    try:
        runner.cpu_arg(args.cpu)
    except ValueError as exc:
        print(f"labkit bench: --cpu {args.cpu}: {exc}", file=sys.stderr)
        return 2
    if not args.no_save:
        try:
            results.check_writable(corebench.EXPERIMENT)
        except OSError as exc:
            print(f"labkit bench: {exc.strerror} (or use --no-save)", file=sys.stderr)
            return 2
    print(
        f"labkit bench copy: {'quick' if quick else 'full'} mode, sizes "
        f"{', '.join(map(str, cfg.sizes))} bytes, {runs} run(s) in single-threaded workers "
        f"of {reps} interleaved repeats"
    )
    df = corebench.core_copy(
        quick, repeats=reps, cpu=args.cpu, progress=not args.no_progress, runs=runs
    )
    summary = corebench.summarize(df)
    cols = [
        "size",
        "segments",
        "variant",
        "n",
        "median",
        "ci_low",
        "ci_high",
        "GB_per_s",
        "pct_of_memcpy",
        "ns_per_segment",
    ]
    with pd.option_context(
        "display.width", 200, "display.max_rows", 500, "display.float_format", "{:,.3f}".format
    ):
        print(summary[cols].rename(columns={"median": "ns/op (median)"}).to_string(index=False))
    print()
    print("Headline figures (medians, 95% bootstrap intervals, measured side by side):")
    for t in corebench.targets(df):
        mark = "met" if t.met else "MISSED"
        print(
            f"  {t.name}: {t.value:.3g} {t.unit} [{t.ci_low:.3g}, {t.ci_high:.3g}]"
            f"  (target {t.bound}: {mark})"
        )
    if not args.no_save:
        try:
            path = results.save(corebench.EXPERIMENT, df, env=environment(quick=quick))
        except OSError as exc:
            print(f"labkit bench: the results could not be saved: {exc}", file=sys.stderr)
            return 1
        print(f"\nresults: {path} (+ .json environment record)")
    return 0


def _reproduce_args(parser: argparse.ArgumentParser) -> None:
    from labkit.run import reproduce  # on use: labkit --help stays fast

    reproduce.add_arguments(parser)


def _reproduce(args: argparse.Namespace) -> int:
    try:
        require_lab("labkit reproduce")
    except MissingExtraError as exc:
        print(exc, file=sys.stderr)
        return 2
    from labkit.compose import reproduce_from_args  # on use: labkit --help stays fast

    return reproduce_from_args(args)


def _kernel_args(parser: argparse.ArgumentParser) -> None:
    from labkit.kernelsrc.cli import add_arguments  # on use: labkit --help stays fast

    add_arguments(parser)


def _kernel(args: argparse.Namespace) -> int:
    """Build or run the kernel-source oracle (labkit.kernelsrc)."""
    from labkit.kernelsrc.cli import run  # on use: labkit --help stays fast

    return run(args)


def _notebooks_args(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Copy the notebooks labkit ships (00 index to 04 live kernel) into DIR, where "
        "JupyterLab can open and edit them: jupyter lab DIR."
    )
    parser.add_argument(
        "dir", nargs="?", default="labkit-notebooks", metavar="DIR", help="(default: %(default)s)"
    )
    parser.add_argument("--force", action="store_true", help="overwrite notebooks already in DIR")


def _notebooks(args: argparse.Namespace) -> int:
    """Copy the shipped notebooks into a folder of the user's."""
    from labkit.run.reproduce import (  # on use: labkit --help stays fast
        find_notebooks,
        notebooks_dir,
    )

    src = notebooks_dir()
    nbs = find_notebooks(src)
    if not nbs:
        print(f"labkit notebooks: no notebooks in {src}", file=sys.stderr)
        return 2
    dest = Path(args.dir)
    if dest.exists() and not dest.is_dir():
        print(f"labkit notebooks: {dest} exists and is not a directory", file=sys.stderr)
        return 2
    there = [p.name for p in nbs if (dest / p.name).exists() or (dest / p.name).is_symlink()]
    if there and not args.force:
        print(
            f"labkit notebooks: {dest} already has {', '.join(there)}; "
            "--force overwrites them (your edits would be lost)",
            file=sys.stderr,
        )
        return 2
    try:
        for p in nbs:  # never through a link planted in DIR
            _files.atomic_write(dest / p.name, p.read_bytes(), root=dest)
    except OSError as exc:
        print(
            f"labkit notebooks: cannot write {exc.filename or dest}: {exc.strerror}",
            file=sys.stderr,
        )
        return 2
    print(f"copied {len(nbs)} notebooks to {dest}: open them with  jupyter lab {dest}")
    return 0


def _compare_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "bundles", nargs="*", help="result bundles (default: every bundle of data/gallery)"
    )
    parser.add_argument(
        "--figure", help="write the figure to this file (PNG or SVG; a folder: compare.png in it)"
    )
    parser.add_argument(
        "--csv", help="write the comparison table to this CSV file (a folder: compare.csv in it)"
    )
    parser.add_argument("--markdown", action="store_true", help="one Markdown table")


def _compare(args: argparse.Namespace) -> int:
    """Bundles side by side: per claim each host's verdict, the pooled interval, findings."""
    from labkit.report import bundle, gallery  # on use: labkit --help stays fast

    try:  # the output options first: nothing is read if they cannot be written
        csv_path = _options.output_file("--csv", args.csv, ("csv",), "compare.csv")
        fig_path = _options.output_file("--figure", args.figure, ("png", "svg"), "compare.png")
    except _options.OutputOptionError as exc:
        print(f"labkit compare: {exc}", file=sys.stderr)
        return 2
    paths = args.bundles or [str(p) for p in bundle.gallery_bundles()]
    try:
        found = [bundle.load(p) for p in paths]
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always", bundle.HostsWarning)
            c = gallery.compare(found)
    except (bundle.BundleError, ValueError) as exc:
        print(f"labkit compare: {exc}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"labkit compare: warning: {note.message}", file=sys.stderr)
    print(gallery.format_comparison(c, markdown=args.markdown))
    try:
        if csv_path is not None:
            c.table.to_csv(csv_path, index=False)
        if fig_path is not None:
            gallery.plot(c).savefig(fig_path, dpi=110)
    except OSError as exc:
        where = exc.filename or csv_path or fig_path
        print(f"labkit compare: OUTPUT ERROR cannot write {where}: {exc.strerror}", file=sys.stderr)
        return 3
    return 0


COMMANDS: list[Command] = [
    Command("demo", "a short tour of the iterator API", _demo_args, _demo),
    Command(
        "info", "print the environment record and whether io_uring is available", _info_args, _info
    ),
    Command(
        "bench", "run a benchmark (copy: the core copy/advance benchmark)", _bench_args, _bench
    ),
    Command(
        "reproduce",
        "run every notebook headless: report, figures, summary table",
        _reproduce_args,
        _reproduce,
    ),
    Command(
        "compare",
        "result bundles of several hosts side by side, with the pooled interval and findings",
        _compare_args,
        _compare,
    ),
    Command(
        "notebooks",
        "copy the notebooks into a folder to open them in JupyterLab",
        _notebooks_args,
        _notebooks,
    ),
    Command(
        "kernel",
        "the real lib/iov_iter.c of 6.1 and 6.12 as a second oracle (build, diff, counts)",
        _kernel_args,
        _kernel,
    ),
]

DESCRIPTION = (
    "labkit: the Linux kernel's iov_iter rebuilt in user space over real memory, "
    "to reproduce and explain three published kernel performance results."
)
EPILOG = "Run 'labkit COMMAND --help' for the options of a command."


def version() -> str:
    """labkit's version (of the package this command runs)."""
    return labkit.__version__


def _innermost(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The deepest parser ``args`` went through (``labkit kernel diff``'s, not ``kernel``'s)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                return _innermost(action.choices[chosen], args)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``labkit`` command."""
    parser = argparse.ArgumentParser(
        prog="labkit",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=30),
    )
    parser.add_argument("--version", action="version", version=f"labkit {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parsers: dict[str, argparse.ArgumentParser] = {}
    for cmd in COMMANDS:
        p = sub.add_parser(
            cmd.name,
            help=cmd.help,
            description=cmd.help[0].upper() + cmd.help[1:] + ".",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run)
        parsers[cmd.name] = p
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the subcommand's own usage, not the top level's
        _innermost(parsers[args.command], args).error(
            f"unrecognized arguments: {' '.join(unknown)}"
        )
    try:
        check_settings()  # every LABKIT_* number and place, before any work
    except ValueError as exc:
        print(f"labkit {args.command}: {exc}", file=sys.stderr)
        return 2
    try:
        return int(args._run(args) or 0)
    except CoreLoadError as exc:  # a bad LABKIT_EXT_PATH, or no build: one line
        print(f"labkit: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `labkit info | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback
        print(f"labkit {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
