"""Attribution: the guest instructions of a call, by kernel function, and a saving's share.

A QEMU TCG plugin (``kernel/gpl/qemu-plugin/labkit_insn_count.c``, GPL: it is built on
QEMU's plugin header) counts every guest instruction executed per address between two
marker instructions the guest places around ``CALLS`` calls of one case (bench.c's
``attrib=`` group).  The addresses are mapped to functions with the kernel's
``System.map``; user-space addresses are one entry, ``[user]``.

The plugin is compiled on first use against ``qemu-plugin.h`` of the QEMU that runs it
(Debian ships QEMU with plugin support but without the header): labkit looks for it in
``$LABKIT_QEMU_PLUGIN_H``, then in ``<cache>/qemu-plugin/``, then in a QEMU source
package downloaded into ``<cache>/qemu-src`` (``apt-get source --download-only qemu``).
"""

from __future__ import annotations

import bisect
import hashlib
import shutil
import tarfile
from collections import defaultdict
from pathlib import Path

import pandas as pd

from labkit import config
from labkit._store import Stage, Store
from labkit._tools import run_tool
from labkit.kernelsrc.build import GPL_DIR
from labkit.kernelvm.eras import KernelVMError

PLUGIN_SOURCE = GPL_DIR / "qemu-plugin" / "labkit_insn_count.c"
USER = "[user]"
_KERNEL_BASE = 0xFFFF800000000000


def plugin_header(root: Path) -> Path:
    """``qemu-plugin.h`` for building the plugin (see the module's docstring for where from).

    Raises:
        KernelVMError: not found; the message names the command that fetches it.
    """
    env = config.qemu_plugin_h()
    if env is not None and env.is_file():
        return env
    dest = root / "qemu-plugin" / "qemu-plugin.h"
    if dest.is_file():
        return dest
    src = root / "qemu-src"
    for archive in sorted(src.glob("qemu_*.orig.tar.*")) if src.is_dir() else []:
        with tarfile.open(archive) as tar:
            for member in tar:
                if member.isfile() and member.name.endswith("include/qemu/qemu-plugin.h"):
                    f = tar.extractfile(member)
                    if f is not None:
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        tmp = dest.with_name(".qemu-plugin.h.tmp")
                        tmp.write_bytes(f.read())
                        tmp.rename(dest)
                        return dest
    raise KernelVMError(
        "the attribution needs QEMU's plugin header: "
        f"mkdir -p {src} && cd {src} && apt-get source --download-only qemu "
        "(with a deb-src line for the archive QEMU came from)"
    )


def plugin(root: Path) -> Path:
    """The compiled plugin (a checked store keyed by its source, the header and gcc)."""
    header = plugin_header(root)
    gcc = run_tool(["gcc", "--version"], error=KernelVMError).stdout.splitlines()[0]
    key = hashlib.sha256(
        PLUGIN_SOURCE.read_bytes() + header.read_bytes() + gcc.encode()
    ).hexdigest()[:16]
    store = Store(root / "qemu-plugin" / f"insn-{key}", rebuild="remove the folder", root=root)

    def make(stage: Stage) -> None:
        run_tool(
            ["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-I", str(header.parent),
             "-o", str(stage.path / "labkit_insn_count.so"), str(PLUGIN_SOURCE)],
            what="compiling labkit's QEMU plugin", error=KernelVMError,
        )  # fmt: skip
        stage.record = {"header_sha256": hashlib.sha256(header.read_bytes()).hexdigest()}

    store.build(make)
    return store.folder / "labkit_insn_count.so"


class SymbolMap:
    """Kernel text symbols from ``System.map``: an address's function."""

    def __init__(self, system_map: Path) -> None:
        syms = []
        for line in system_map.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                syms.append((int(parts[0], 16), parts[2]))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]

    def function(self, addr: int) -> str:
        if addr < _KERNEL_BASE:
            return USER
        k = bisect.bisect_right(self.addrs, addr) - 1
        return self.names[k] if k >= 0 else f"[{addr:#x}]"


def read_windows(path: Path) -> list[dict[int, int]]:
    """The plugin's windows: per window, {address: instructions}."""
    windows: list[dict[int, int]] = []
    for line in path.read_text().splitlines():
        if line.startswith("window "):
            windows.append({})
        elif windows and line.strip():
            a, n = line.split()
            windows[-1][int(a, 16)] = int(n)
    return windows


def by_function(window: dict[int, int], symbols: SymbolMap, calls: int) -> pd.Series:
    """Instructions per call by function (descending)."""
    acc: dict[str, int] = defaultdict(int)
    for addr, n in window.items():
        acc[symbols.function(addr)] += n
    return pd.Series(acc, dtype=float).div(calls).sort_values(ascending=False)


def saving_table(before: pd.Series, after: pd.Series, share: float = 0.9) -> pd.DataFrame:
    """Per function: instructions per call before, after, and saved (before - after), the
    functions ordered by |saved|, and the smallest leading set whose sum is within
    (1 - share) of the whole saving marked ``top``."""
    df = pd.DataFrame({"before": before, "after": after}).fillna(0.0)
    df["saved"] = df["before"] - df["after"]
    df = df[df["saved"].abs() > 1e-9]
    df = df.reindex(df["saved"].abs().sort_values(ascending=False).index)
    total = df["saved"].sum()
    run, top = 0.0, []
    done = False
    for v in df["saved"]:
        top.append(not done)
        run += v
        if not done and abs(total - run) <= (1 - share) * abs(total):
            done = True
    df["top"] = top
    df.index.name = "function"
    return df


def have_tools() -> str | None:
    """None if QEMU can load plugins here, else why not."""
    if shutil.which("qemu-system-x86_64") is None:
        return "qemu-system-x86_64 is not installed"
    return None


__all__: list[str] = []  # internal: used by the bench's matrix and tests
