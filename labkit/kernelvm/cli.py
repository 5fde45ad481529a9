"""``labkit kernel vm build|run|compare``: the kernel bench from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from labkit._progress import progress_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``labkit kernel vm``."""
    from labkit.kernelvm.eras import CONFIGS, CPUS, ERAS  # loaded when the action runs
    from labkit.kernelvm.guest import GROUPS  # loaded when the action runs

    sub = parser.add_subparsers(dest="vm_command", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="build the eras' kernels (cached)")
    b.add_argument("--era", choices=sorted(ERAS), action="append", help="only this era")
    b.add_argument("--config", choices=sorted(CONFIGS), action="append", help="only this config")
    b.add_argument("--src", help="a 6.1 tree to build instead of Debian's linux-source-6.1")
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    r = sub.add_parser("run", help="boot one era and print its per-call counts")
    r.add_argument("--era", choices=sorted(ERAS), default="6.1")
    r.add_argument("--config", choices=sorted(CONFIGS), default="base")
    r.add_argument("--cpu", choices=sorted(CPUS), default="max")
    r.add_argument("--group", choices=GROUPS, action="append",
                   help="guest groups (default: import floor zero uring)")  # fmt: skip
    r.add_argument("--boots", type=int, default=1)
    r.add_argument("--out", help="write rows.csv and identity.json into this folder")
    c = sub.add_parser("compare", help="two eras side by side, with the attribution by function")
    c.add_argument("--before", choices=sorted(ERAS), default="6.1")
    c.add_argument("--after", choices=sorted(ERAS), default="6.1+merged")
    c.add_argument("--config", choices=sorted(CONFIGS), default="base")
    c.add_argument("--cpu", choices=sorted(CPUS), default="max")
    c.add_argument("--boots", type=int, default=2)
    c.add_argument("--no-attrib", action="store_true", help="skip the attribution boots")
    c.add_argument("--out", help="write the tables into this folder")


def run(args: argparse.Namespace) -> int:
    """Run ``labkit kernel vm ACTION``; 2 on a missing tool or a failed step (one line)."""
    from labkit._files import LinkRefused  # loaded when the action runs
    from labkit._store import StoreDamaged  # loaded when the action runs
    from labkit.kernelvm.eras import KernelVMError  # loaded when the action runs

    try:
        if getattr(args, "boots", 1) < 1:
            print("labkit kernel vm: --boots must be at least 1", file=sys.stderr)
            return 2
        if args.vm_command == "build":
            return _build(args)
        if args.vm_command == "run":
            return _run(args)
        if args.vm_command == "compare":
            return _compare(args)
    except (KernelVMError, StoreDamaged, LinkRefused) as exc:
        print(f"labkit kernel vm {args.vm_command}: {exc}", file=sys.stderr)
        return 2
    return 2


def _build(args: argparse.Namespace) -> int:
    from labkit.kernelvm.build import build  # loaded when the action runs
    from labkit.kernelvm.eras import CONFIGS, ERAS  # loaded when the action runs

    todo = [(c, e) for c in args.config or sorted(CONFIGS) for e in args.era or list(ERAS)]
    with progress_line("labkit kernel vm build", len(todo), "kernels") as line:
        for config, era in todo:
            line.step(f"{era} ({config})")
            k = build(era, config, src=args.src, force=args.force, log=line.say)
            line.done()
            line.say(f"{era} ({config}): {k.record['release']} -> {k.folder}")
    return 0


def _out(path: str | None) -> Path | None:
    return Path(path) if path else None


def _run(args: argparse.Namespace) -> int:
    from labkit.kernelvm import matrix  # loaded when the action runs

    groups = tuple(args.group or ("import", "floor", "zero", "uring"))
    plan = (matrix.Step(args.config, args.cpu, (args.era,), groups),)
    steps = matrix.plan_steps(plan, args.boots)
    with progress_line("labkit kernel vm run", steps, "builds and boots") as line:
        rows, identity = matrix.run_plan(plan, boots=args.boots, log=line.say, line=line)
    summary = matrix.summarize(rows)
    print(summary.to_string(index=False))
    for b in identity["boots"]:
        print(f"boot {b['boot']}: {b.get('release')} cpu {b.get('cpu_model')} "
              f"erms={b.get('erms')} fsrm={b.get('fsrm')} readv(1) imports as "
              f"{b.get('readv1_import', '?')}; errors: {b['errors'] or 'none'}")  # fmt: skip
    if (out := _out(args.out)) is not None:
        matrix.write(out, "rows.csv", rows)
        matrix.write(out, "identity.json", identity)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from labkit.kernelvm import matrix  # loaded when the action runs

    groups = ("import", "floor", "zero", "uring", "nullblk")
    plan = (matrix.Step(args.config, args.cpu, (args.before, args.after), groups),)
    steps = matrix.plan_steps(plan, args.boots)
    with progress_line("labkit kernel vm compare", steps, "builds and boots") as line:
        rows, identity = matrix.run_plan(plan, boots=args.boots, log=line.say, line=line)
    summary = matrix.summarize(rows)
    saved = matrix.savings(summary, before=args.before)
    print(saved.to_string(index=False))
    out = _out(args.out)
    if out is not None:
        matrix.write(out, "rows.csv", rows)
        matrix.write(out, "savings.csv", saved)
        matrix.write(out, "identity.json", identity)
    if not args.no_attrib:
        pair = matrix.Pair(f"{args.before} -> {args.after}", args.config, args.cpu,
                           args.before, args.after, (("readv1", 4096), ("readv1", 64)))  # fmt: skip
        with progress_line("attribution boots", 1, "pairs") as line:
            line.step(f"{pair.name} under the plugin")
            table = matrix.attribute((pair,), log=line.say)
            line.done()
        print(table[table["top"]].to_string(index=False))
        if out is not None:
            matrix.write(out, "attribution.csv", table)
    return 0
