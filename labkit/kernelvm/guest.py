"""labkit's guest program: ``guest/bench.c`` compiled static as ``/init``, in an initramfs.

The program is compiled on first use with ``gcc -static`` and cached (a checked store)
keyed by the sha256 of its source and the compiler; the initramfs is a ``newc`` cpio
archive written here (no ``cpio`` program needed) holding only ``/init``.

:func:`parse` reads the guest's console output: the lines the program prints
(``LABKIT-VM ...``, described in bench.c's header) become rows and an identity.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit._store import Stage, Store
from labkit._tools import run_tool
from labkit.kernelvm.eras import KernelVMError

SOURCE = Path(__file__).resolve().parent / "guest" / "bench.c"

#: The measurement groups the guest knows (bench.c's header says what each holds).
GROUPS = ("import", "floor", "zero", "uring", "fixed", "nullblk")


def source_hash() -> str:
    """sha256 of the guest's source (the first 16 hex digits)."""
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def _cpio_newc(files: dict[str, tuple[int, bytes]]) -> bytes:
    """A ``newc`` cpio archive of ``{name: (mode, data)}`` and its trailer."""
    out = io.BytesIO()

    def entry(ino: int, name: str, mode: int, data: bytes) -> None:
        nb = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0)
        out.write(b"070701" + b"".join(b"%08X" % f for f in fields) + nb)
        out.write(b"\0" * (-(110 + len(nb)) % 4))
        out.write(data)
        out.write(b"\0" * (-len(data) % 4))

    for ino, (name, (mode, data)) in enumerate(sorted(files.items()), start=1):
        entry(ino, name, mode, data)
    entry(0, "TRAILER!!!", 0, b"")
    return out.getvalue()


def initramfs(root: Path) -> Path:
    """The initramfs holding the compiled guest as ``/init`` (built once per source and gcc)."""
    gcc = run_tool(["gcc", "--version"], error=KernelVMError).stdout.splitlines()[0]
    key = hashlib.sha256(SOURCE.read_bytes() + gcc.encode()).hexdigest()[:16]
    store = Store(
        root / "guest" / f"bench-{key}",
        rebuild="labkit kernel vm build --force (or remove the folder)",
        root=root,
    )

    def make(stage: Stage) -> None:
        init = stage.path / "init"
        run_tool(
            ["gcc", "-static", "-O2", "-Wall", "-o", str(init), str(SOURCE)],
            what="compiling the guest (gcc -static; needs libc6-dev)",
            error=KernelVMError,
        )
        data = init.read_bytes()
        (stage.path / "initramfs.cpio").write_bytes(_cpio_newc({"init": (0o100755, data)}))
        stage.record = {"source_sha256": hashlib.sha256(SOURCE.read_bytes()).hexdigest(),
                        "gcc": gcc}  # fmt: skip

    store.build(make)
    return store.folder / "initramfs.cpio"


@dataclass
class Boot:
    """What one boot printed: rows, identity lines, errors and whether it ended."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    identity: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    attrib: list[dict[str, Any]] = field(default_factory=list)
    ended: bool = False


def parse(text: str) -> Boot:
    """The guest's records in ``text`` (a console log); other lines are ignored."""
    boot = Boot()
    vulns: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip().replace("\r", "")
        if not line.startswith("LABKIT-VM "):
            continue
        parts = line.split()
        tag = parts[1] if len(parts) > 1 else ""
        try:
            if tag == "row":
                name, nbytes, calls, batches, mode, agree, lo, hi, mid = parts[2:11]
                boot.rows.append({
                    "case": name, "bytes": int(nbytes), "calls": int(calls),
                    "batches": int(batches), "modal_total": int(mode), "agree": int(agree),
                    "min_total": int(lo), "max_total": int(hi), "median_total": int(mid),
                    "per_call": int(mode) / int(calls),
                })  # fmt: skip
            elif tag == "uname":
                boot.identity["release"] = parts[2]
            elif tag == "cpu":
                boot.identity.update(
                    erms=parts[2] == "1", fsrm=parts[3] == "1", cpu_model=parts[4].replace("_", " ")
                )
            elif tag == "vuln":
                vulns[parts[2]] = " ".join(parts[3:]).replace("_", " ")
            elif tag == "import":
                boot.identity["readv1_import"] = parts[2]
                boot.identity["readv1_ssize_max"] = f"{parts[3]} errno {parts[4]}"
            elif tag == "attrib":
                boot.attrib.append({"case": parts[2], "bytes": int(parts[3]),
                                    "calls": int(parts[4])})  # fmt: skip
            elif tag == "error":
                boot.errors.append(" ".join(parts[2:]))
            elif tag == "end":
                boot.ended = True
        except (IndexError, ValueError):
            boot.errors.append(f"unreadable record: {line}")
    if vulns:
        boot.identity["vulnerabilities"] = vulns
    return boot


__all__: list[str] = []  # internal: used by the bench's qemu, matrix and tests
