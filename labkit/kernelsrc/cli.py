"""``labkit kernel``: build the kernel-source oracle, run its differential sequences, count."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from labkit import _options, config
from labkit._progress import progress_line
from labkit.kernelsrc.build import ERAS, KernelSourceError, build, build_all


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``labkit kernel``."""
    sub = parser.add_subparsers(dest="kernel_command", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="build the eras' lib/iov_iter.c (cached)")
    b.add_argument(
        "--era", choices=sorted(ERAS), action="append", help="only this era (repeatable)"
    )
    _src_argument(b)
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    d = sub.add_parser("diff", help="differential sequences: labkit's model against the real code")
    d.add_argument(
        "--sequences",
        type=_options.count(1, _options.MAX_SEQUENCES),
        default=2000,
        help="sequences per era pair (>= 1)",
    )
    d.add_argument("--seed", type=int, default=1)
    _src_argument(d)
    c = sub.add_parser("counts", help="instructions of the real code per call (callgrind)")
    _src_argument(c)
    u = sub.add_parser(
        "boot", help="a real 6.1 kernel's readv() import (user-mode-linux), beside the host's"
    )
    u.add_argument(
        "--timeout",
        type=_options.seconds(),
        default=60.0,
        help="seconds for the boot (default 60)",
    )
    u.add_argument(
        "--xstate-shim",
        choices=("auto", "on", "off"),
        default="auto",
        help="preload labkit's xstate shim into UML (auto: on AMX hosts or after a failed boot)",
    )
    u.add_argument("--save", action="store_true", help="save the result file (data dir)")
    from labkit.kernelvm.cli import add_arguments as add_vm_arguments  # the bench's own options

    add_vm_arguments(sub.add_parser("vm", help="the kernel bench: x86-64 kernels under QEMU"))


def _src_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--src",
        metavar="DIR",
        help="a kernel tree to build instead of Debian's linux-source package "
        "(same as LABKIT_KERNEL_SRC)",
    )


def _build_with_progress(src: str | None) -> None:
    """Build every era not yet cached, under the progress line."""
    from labkit.kernelsrc.build import (  # on use: labkit --help stays fast
        ERAS,
        KernelSourceError,
        build,
        cached,
    )

    if src is not None and not (Path(src) / "lib" / "iov_iter.c").is_file():
        raise KernelSourceError(f"--src {src}: not a kernel tree (no lib/iov_iter.c)")

    def wanted(era: str) -> bool:  # not built, or damaged: build() rebuilds a damaged store
        try:
            return cached(era) is None
        except KernelSourceError:
            return True

    todo = [era for era in sorted(ERAS) if src is not None or wanted(era)]
    if not todo:
        return
    with progress_line("building the kernel oracle", len(todo), "eras") as line:
        for era in todo:
            line.step(f"lib/iov_iter.c of {era}")
            build(era, src=src)
            line.done()


def run(args: argparse.Namespace) -> int:
    """Run ``labkit kernel ACTION``."""
    if args.kernel_command == "vm":
        from labkit.kernelvm.cli import run as run_vm  # the bench, loaded when asked

        return run_vm(args)
    try:
        src = getattr(args, "src", None)
        if src is not None and args.kernel_command in ("diff", "counts"):
            config.set_kernel_src(src)  # the oracle's builds read the one setting
        if args.kernel_command in ("diff", "counts"):
            _build_with_progress(src)
        if args.kernel_command == "build":
            t0 = time.monotonic()
            if not args.era:
                build_all(src=args.src, force=args.force, log=True)
                print(f"total {time.monotonic() - t0:.1f} s")
                return 0
            for era in args.era:
                t = time.monotonic()
                built = build(era, src=args.src, force=args.force, log=True)
                state = "cached" if built.record.get("cached") else "built"
                print(f"{era}: {state} in {time.monotonic() - t:.1f} s -> {built.directory}")
            print(f"total {time.monotonic() - t0:.1f} s")
            return 0
        if args.kernel_command == "diff":
            # on use, as each action's modules below: they load pandas or the oracle's library
            from labkit.kernelsrc.diff import PAIRS, run_pair

            bad = 0
            for pair in PAIRS:
                res = run_pair(pair, args.sequences, seed=args.seed)
                print(res.summary())
                bad += len(res.differences)
            return 1 if bad else 0
        if args.kernel_command == "counts":
            from labkit.kernelsrc.counts import measure_counts  # on use: pandas

            print(measure_counts().to_string(index=False))
            return 0
        if args.kernel_command == "boot":
            return _boot(args)
    except KernelSourceError as exc:
        print(f"labkit kernel {args.kernel_command}: {exc}", file=sys.stderr)
        return 2
    return 2


def _boot(args: argparse.Namespace) -> int:
    # on use: pandas (labkit kernel's other actions and labkit --help do without it)
    from labkit.kernelsrc.boot import UML_XSTATE_BYTES, measure, save_boot  # (as above)
    from labkit.kernelsrc.fingerprint import FINGERPRINT, side_by_side

    with progress_line("labkit kernel boot", 1, "boots") as line:
        line.step("user-mode-linux 6.1 and the host, side by side")
        df, extra = measure(timeout=args.timeout, shim=args.xstate_shim)
        line.done()
    table = side_by_side(df, model=True)
    print(table.to_string(index=False))
    shim = "with the xstate shim" if extra["xstate_shim"] else "without the xstate shim"
    print(
        f"user-mode-linux {extra['uml_release']}: booted in {extra['uml_boot_seconds']} s, {shim}"
    )
    if extra.get("host_xstate_bytes"):
        print(
            f"host XSAVE area {extra['host_xstate_bytes']} bytes, UML 6.1 writes {UML_XSTATE_BYTES}"
        )
    fp = df[df["case"] == FINGERPRINT].set_index("where")["result"]
    print(f"fingerprint {FINGERPRINT}: UML {fp['uml']}, host {fp['host']}")
    if args.save:
        print(f"saved {save_boot(df, extra)}")
    return 0
