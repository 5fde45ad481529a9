"""One boot of a bench kernel under QEMU's TCG, with the guest counting per call.

``qemu-system-x86_64`` runs without KVM (``-accel tcg``) with
``-icount shift=0,align=off,sleep=off``: the guest's clock, and so its ``rdtsc``,
advances exactly one per guest instruction, whatever the host does meanwhile.  The
machine has 2 GiB (the 1 GiB registered buffer of the ``fixed`` group), one CPU of a
fixed model (:data:`labkit.kernelvm.eras.CPUS`), the serial console on stdout, no
other device; the guest powers off by rebooting, which ``-no-reboot`` turns into an exit.

The kernel's timer tick comes from the PIT (``noapictimer``), and the boot does not check
that the timer interrupt works (``no_timer_check``).  Both checks busy-wait a stretch of
guest time: calibrating the local APIC timer waits 2 x 100 ms, which under icount is
2e8 guest instructions through ``rdtsc`` (which ends a translation block), about 11 s of
host time, 90% of a boot.  Without them a boot reaches ``/init`` in under a second.
The tick still comes every 10 M guest instructions (HZ=100); only its own cost differs
(1,132 instructions by the PIT against 921 by the APIC timer), which a batch holding
no tick does not see.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from labkit.kernelvm.eras import CPUS, INSTALL_HINT, KernelVMError
from labkit.kernelvm.guest import GROUPS, Boot, parse

QEMU = "qemu-system-x86_64"
#: The kernel's command line before the guest's groups (the module's docstring says why).
KERNEL_CMDLINE = "console=ttyS0 quiet panic=-1 null_blk.irqmode=0 noapictimer no_timer_check"


def qemu_command(
    image: Path, initrd: Path, cpu: str, args: list[str], plugin: list[str] | None = None
) -> list[str]:
    """The QEMU command line of one boot (``args``: the guest's groups)."""
    cmd = [
        QEMU, "-accel", "tcg", "-icount", "shift=0,align=off,sleep=off",
        "-cpu", CPUS[cpu], "-m", "2G", "-smp", "1",
        "-nodefaults", "-no-reboot", "-display", "none", "-serial", "stdio", "-monitor", "none",
        "-kernel", str(image), "-initrd", str(initrd),
        "-append", f"{KERNEL_CMDLINE} -- " + " ".join(args),
    ]  # fmt: skip
    if plugin:
        cmd += ["-plugin", ",".join(plugin)]
    return cmd


def boot(
    image: Path,
    initrd: Path,
    cpu: str,
    groups: list[str],
    *,
    timeout: float = 900.0,
    plugin: list[str] | None = None,
) -> tuple[Boot, str, float]:
    """Boot once and run the guest's ``groups``; (parsed records, console log, seconds).

    Raises:
        KernelVMError: QEMU is missing, fails, runs past ``timeout``, or the guest did
            not reach its end (the message holds the console's last lines).
    """
    if shutil.which(QEMU) is None:
        raise KernelVMError(f"{QEMU} is not installed: install with {INSTALL_HINT}")
    for g in groups:
        if g not in GROUPS and not g.startswith("attrib="):
            raise ValueError(f"unknown guest group {g!r} (known: {', '.join(GROUPS)})")
    cmd = qemu_command(image, initrd, cpu, groups, plugin)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, errors="replace", timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        tail = "\n".join(out.splitlines()[-10:])
        raise KernelVMError(
            f"{QEMU} ran past its {timeout:.0f} s limit; console:\n{tail}"
        ) from None
    seconds = time.monotonic() - t0
    log = proc.stdout
    parsed = parse(log)
    if proc.returncode != 0 or not parsed.ended:
        tail = "\n".join((log + proc.stderr).strip().splitlines()[-15:])
        raise KernelVMError(
            f"{QEMU} exited with {proc.returncode} before the guest's end; last lines:\n{tail}"
        )
    return parsed, log, seconds


__all__: list[str] = []  # internal: used by the bench's matrix and tests
