"""What labkit's readv() fingerprint program printed, and what labkit's model predicts.

``uml/fingerprint.c`` prints one record per line (``LABKIT-FP case <name>
<return value> <errno>``, see its header); :func:`parse` reads them from a
kernel's console or a process's output into a :class:`Fingerprint`.
:func:`model_fingerprint` runs the same ``readv()`` calls through labkit's
model of 6.3 or 6.4, and :func:`side_by_side` puts the kernels (and the
model) next to each other.  No subprocess here: :mod:`labkit.kernelsrc.boot`
compiles, boots and runs.
"""

from __future__ import annotations

import errno as _errno
import re
from dataclasses import dataclass, field

import pandas as pd

import labkit
from labkit.core.memory import PAGE_SIZE, PROT_NONE, PROT_RW
from labkit.kernelsrc.build import KernelSourceError

#: The columns of a result file: one row per kernel and call.
COLUMNS = ["where", "release", "case", "ret", "errno", "result"]

#: The program's calls, in its order: name -> what it does.
CASES: dict[str, str] = {
    "readv1_ssize_max": "readv(fd, {buf, SSIZE_MAX}, 1)",
    "readv1_max_rw_count": "readv(fd, {buf, MAX_RW_COUNT}, 1)",
    "readv1_two_pages": "readv(fd, {buf, 8192}, 1)",
    "readv1_two_pages_plus_1": "readv(fd, {buf, 8193}, 1)",
    "readv1_negative": "readv(fd, {buf, (size_t)-1}, 1)",
    "readv1_zero_length": "readv(fd, {buf, 0}, 1)",
    "readv2_4k_empty": "readv(fd, {buf, 4096}, {buf + 4096, 0}, 2)",
    "readv2_4k_ssize_max": "readv(fd, {buf, 4096}, {buf + 4096, SSIZE_MAX}, 2)",
    "read_ssize_max": "read(fd, buf, SSIZE_MAX)",
}
#: The call whose outcome changed with the 6.4 import change.
FINGERPRINT = "readv1_ssize_max"

_SSIZE_MAX = (1 << 63) - 1
_SIZE_MAX = (1 << 64) - 1  # (size_t)-1: negative as ssize_t
_LINE = re.compile(r"LABKIT-FP (begin|end|uname|page|case|error)(?: (.*))?$")


class BootError(KernelSourceError):
    """A boot could not run or gave no complete answer; the message says why and what to do."""


@dataclass(frozen=True)
class Fingerprint:
    """What the program printed on one kernel: its release and each call's outcome."""

    where: str
    release: str
    machine: str
    page: int
    cases: dict[str, tuple[int, int]]
    boot_seconds: float | None = None
    xstate_shim: bool = False
    console: str = field(default="", repr=False)

    def result(self, case: str) -> str:
        """A call's outcome as a reader says it: the count, or the errno's name."""
        ret, err = self.cases[case]
        return str(ret) if ret >= 0 else _errno.errorcode.get(err, f"errno {err}")

    def frame(self) -> pd.DataFrame:
        """One row per call (:data:`COLUMNS`)."""
        rows = [
            {
                "where": self.where,
                "release": self.release,
                "case": case,
                "ret": ret,
                "errno": err,
                "result": self.result(case),
            }
            for case, (ret, err) in self.cases.items()
        ]
        return pd.DataFrame(rows, columns=COLUMNS)


def kernel_version(release: str) -> tuple[int, int]:
    """``(major, minor)`` of a kernel release such as ``"6.1.176"`` or ``"6.18.44-fc"``.

    Raises:
        ValueError: for a release that does not start with two numbers.
    """
    m = re.match(r"(\d+)\.(\d+)", release)
    if not m:
        raise ValueError(f"not a kernel release: {release!r}")
    return int(m.group(1)), int(m.group(2))


def expected_fingerprint(release: str, page: int = 4096) -> str:
    """What :data:`FINGERPRINT` returns on a kernel: EFAULT before 6.4, two pages from 6.4 on."""
    return "EFAULT" if kernel_version(release) < (6, 4) else str(2 * page)


def parse(text: str, where: str) -> Fingerprint:
    """The program's records in ``text`` (other lines, e.g. a kernel's console, are skipped).

    Raises:
        BootError: when the records are incomplete (no begin or end, a call
            missing) or the program reported an error.
    """
    release = machine = ""
    page = 0
    cases: dict[str, tuple[int, int]] = {}
    seen: set[str] = set()
    for line in text.splitlines():
        m = _LINE.search(line.rstrip("\r"))
        if not m:
            continue
        kind, rest = m.group(1), (m.group(2) or "").split()
        seen.add(kind)
        if kind == "uname" and len(rest) == 2:
            release, machine = rest
        elif kind == "page" and len(rest) == 1 and rest[0].isdigit():
            page = int(rest[0])
        elif kind == "case" and len(rest) == 3 and rest[0] in CASES:
            try:
                cases[rest[0]] = (int(rest[1]), int(rest[2]))
            except ValueError:
                raise BootError(f"{where}: a malformed record: {line.strip()!r}") from None
        elif kind == "error":
            raise BootError(f"{where}: the program failed: {line.strip()!r}")
    missing = [c for c in CASES if c not in cases]
    if "begin" not in seen or "end" not in seen or missing or not release:
        what = "no output from the program" if "begin" not in seen else "incomplete output"
        tail = "\n".join(text.strip().splitlines()[-8:])
        raise BootError(
            f"{where}: {what}"
            + (f" (missing: {', '.join(missing)})" if "begin" in seen and missing else "")
            + (f"; its last lines:\n{tail}" if tail else "")
        )
    return Fingerprint(where, release, machine, page, {c: cases[c] for c in CASES})


#: The program's readv() calls as ``(offset into the two pages, length)`` segments, for the model.
_READV_SEGMENTS: dict[str, list[tuple[int, int]]] = {
    "readv1_ssize_max": [(0, _SSIZE_MAX)],
    "readv1_max_rw_count": [(0, -1)],  # -1: MAX_RW_COUNT, filled in below
    "readv1_two_pages": [(0, 8192)],
    "readv1_two_pages_plus_1": [(0, 8193)],
    "readv1_negative": [(0, _SIZE_MAX)],
    "readv1_zero_length": [(0, 0)],
    "readv2_4k_empty": [(0, 4096), (4096, 0)],
    "readv2_4k_ssize_max": [(0, 4096), (4096, _SSIZE_MAX)],
}


def model_fingerprint(kernel: str) -> Fingerprint:
    """The program's ``readv()`` calls through labkit's model of ``kernel`` ("6.3" or "6.4").

    The same memory (two pages, then a guard page) in a model ``UserMemory``;
    each call is ``import_iovec`` and then what ``/dev/zero``'s ``read_iter``
    does with the iterator: zero it a page at a time until it is empty or a
    page faults (the bytes zeroed, or EFAULT if none were).  ``read()`` is not
    modelled, so its row is absent.
    """
    mem = labkit.UserMemory()
    base = mem.map_contiguous([(2 * PAGE_SIZE, PROT_RW), (PAGE_SIZE, PROT_NONE)])[0].addr
    cases: dict[str, tuple[int, int]] = {}
    for case, segments in _READV_SEGMENTS.items():
        iov = [(base + off, labkit.MAX_RW_COUNT if n == -1 else n) for off, n in segments]
        try:
            it = labkit.import_iovec(labkit.ITER_DEST, iov, mem, kernel=kernel)
        except OSError as exc:
            cases[case] = (-1, exc.errno)
            continue
        written = 0
        while it.count:
            n = it.zero(min(it.count, PAGE_SIZE))
            if n == 0:
                break
            written += n
        cases[case] = (written, 0) if written or not it.count else (-1, _errno.EFAULT)
    return Fingerprint(f"model {kernel}", f"model {kernel}", "", PAGE_SIZE, cases)


def side_by_side(df: pd.DataFrame, *, model: bool = False) -> pd.DataFrame:
    """One row per call: its outcome under UML's kernel and the host's, and whether they agree.

    The outcome columns are named by the kernels' releases.  ``model=True`` adds
    labkit's model of 6.3 beside the UML kernel and of 6.4 beside the host
    (:func:`model_fingerprint`; ``read()`` is not modelled: empty there).
    """
    uml = df[df["where"] == "uml"].set_index("case")
    host = df[df["where"] == "host"].set_index("case")
    if uml.empty or host.empty:
        raise ValueError("side_by_side needs the rows of both a UML boot and the host")
    col_uml = f"{uml['release'].iloc[0]} (UML)"
    col_host = f"{host['release'].iloc[0]} (host)"
    models = {k: model_fingerprint(k) for k in ("6.3", "6.4")} if model else {}
    rows = []
    for case in uml.index:
        if case not in host.index:
            continue
        row = {"call": CASES.get(case, case)}
        if model:
            row["model 6.3"] = models["6.3"].result(case) if case in models["6.3"].cases else ""
        row[col_uml] = uml.at[case, "result"]
        if model:
            row["model 6.4"] = models["6.4"].result(case) if case in models["6.4"].cases else ""
        row[col_host] = host.at[case, "result"]
        row["same"] = uml.at[case, "result"] == host.at[case, "result"]
        rows.append(row)
    return pd.DataFrame(rows)
