"""The ``labkit`` command line.

Subcommands register themselves in ``COMMANDS``: a name, a one-line help, a
function that adds its arguments to a parser, and the function that runs it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass


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
    import labkit

    mem = labkit.UserMemory()
    m = mem.map(4 * labkit.PAGE_SIZE)
    print(f"mapped {m}")
    for kernel in ("6.3", "6.4"):
        it = labkit.import_iovec(labkit.ITER_DEST, [(m.addr + 100, 6000)], mem, kernel=kernel)
        print(f"kernel {kernel}: readv with one segment imports as {it.iter_type}: {it!r}")
    it = labkit.import_iovec(labkit.ITER_DEST, [(m.addr, 10), (m.addr + 4096, 0),
                                                (m.addr + 8192, 20)], mem)
    print(f"three segments (one empty): {it!r}")
    copied = it.copy_to_iter(bytes(range(1, 26)))
    print(f"copy_to_iter(25 bytes) -> {copied}: {it!r}")
    print(f"  bytes at addr+0: {list(m.array[:10])}")
    print(f"  bytes at addr+8192: {list(m.array[8192:8207])}")
    it.revert(20)
    print(f"revert(20): {it!r}, current segment (addr, len) = {it.iovec()}")
    print(f"C core built with: {labkit.build_info()['cflags']}")
    return 0


def _reproduce_args(parser: argparse.ArgumentParser) -> None:
    from labkit import reproduce

    reproduce.add_arguments(parser)


def _reproduce(args: argparse.Namespace) -> int:
    from labkit import reproduce

    return reproduce.from_args(args)


COMMANDS: list[Command] = [
    Command("demo", "a short tour of the iterator API", _demo_args, _demo),
    Command("reproduce", "run every notebook headless: report, figures, summary table",
            _reproduce_args, _reproduce),
]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``labkit`` command."""
    parser = argparse.ArgumentParser(prog="labkit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd in COMMANDS:
        p = sub.add_parser(cmd.name, help=cmd.help)
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run)
    args = parser.parse_args(argv)
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
