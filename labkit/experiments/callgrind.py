"""Clock-free evidence: instructions per modelled call, counted by callgrind (valgrind).

Wall-clock time on a shared, noisy machine moves by more than the few
nanoseconds the 2023 changes save; an instruction count does not.  For each
*phase* (a model variant and a number of calls) the C timing kernel runs once
under ``valgrind --tool=callgrind``, collecting only inside labkit's timing
kernels (``--toggle-collect=lk_time_*``); after each phase a one-iteration
call of ``lk_time_empty`` makes callgrind dump its counters
(``--dump-after=lk_time_empty``), so one valgrind process measures every
phase.  A variant runs twice, with ``n1`` and ``n2`` calls, and its count per
call is ``(Ir(n2) - Ir(n1)) / (n2 - n1)``: the clock reads, the untimed
warm-up call and the marker cancel out.

Caveat: valgrind counts every iteration of a ``rep stosb``/``rep movsb`` as an
instruction, so the 4 KiB memset behind ``iov_iter_zero`` weighs ~4,100
"instructions" here; the *differences* between variants are what matter.

Needs valgrind (Debian/Ubuntu: ``apt-get install valgrind``); :func:`available`
says whether it is there.  :func:`evidence` gives the figures the summary
records: R2 (read-zero, readv 6.3 -> 6.4), R3 (READV as IOVEC -> READ, no
deferral) and R1 (instructions per skipped page of the walk-2019 and shift
seeks).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import pandas as pd

from labkit.config import repo_root
from labkit.measure.stats import Estimate

INSTALL_HINT = "valgrind is not installed (Debian/Ubuntu: apt-get install valgrind)"

#: (experiment, label, model class, keyword arguments) of the R2/R3 model variants.
UBUF_VARIANTS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "mechanics",
        "6.3 (IOVEC)",
        "SyscallModel",
        {"syscall": "readv", "kernel": "6.3", "op": "advance"},
    ),
    (
        "mechanics",
        "6.4 (UBUF)",
        "SyscallModel",
        {"syscall": "readv", "kernel": "6.4", "op": "advance"},
    ),
    ("read-zero", "read", "SyscallModel", {"syscall": "read"}),
    ("read-zero", "readv 6.3", "SyscallModel", {"syscall": "readv", "kernel": "6.3"}),
    ("read-zero", "readv 6.4", "SyscallModel", {"syscall": "readv", "kernel": "6.4"}),
    (
        "read-zero",
        "readv 6.4 (4K+empty)",
        "SyscallModel",
        {"syscall": "readv", "kernel": "6.4", "segments": [4096, 0]},
    ),
] + [
    (f"uring defer_every={k}", v, "UringModel", {"variant": v, "defer_every": k})
    for k in (0, 4)
    for v in ("readv-iovec", "readv-rewrite", "readv-6.4", "read")
]

#: The variants the summary needs (a subset of :data:`UBUF_VARIANTS`).
SUMMARY_VARIANTS = [
    v
    for v in UBUF_VARIANTS
    if (v[0], v[1])
    in {
        ("read-zero", "readv 6.3"),
        ("read-zero", "readv 6.4"),
        ("uring defer_every=0", "readv-iovec"),
        ("uring defer_every=0", "readv-rewrite"),
        ("uring defer_every=0", "read"),
    }
]

#: R1: the seeks whose cost per skipped page is counted, the buffer and the two pages read.
SEEKS = ("walk-2019", "shift")
SEEK_BUFFER = 16 << 20
SEEK_PAGES = (1, (SEEK_BUFFER >> 12) - 1)
#: Calls per phase: a variant's count per call is (Ir(N2) - Ir(N1)) / (N2 - N1).
N1, N2 = 200, 600

_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[2])
from labkit.core.fixed import register_buffer
from labkit.core.memory import UserMemory
from labkit.measure.timers import time_empty, time_fixed_seek
from labkit.models import ubuf

reg = None
for phase in json.loads(sys.argv[1]):
    if phase["kind"] == "model":
        getattr(ubuf, phase["cls"])(**phase["kwargs"]).time(phase["n"])
    else:
        if reg is None:
            mem = UserMemory()
            m = mem.map(phase["buffer"])
            reg = register_buffer(mem, m.addr, phase["buffer"])
        time_fixed_seek(reg, phase["offset"], 4096, phase["seek"], phase["n"])
    time_empty(1)  # the marker: callgrind dumps after it
"""


def available() -> tuple[bool, str]:
    """(True, path of valgrind) or (False, why not, with how to install it)."""
    path = shutil.which("valgrind")
    return (True, path) if path else (False, INSTALL_HINT)


def _phases(
    variants: Sequence[tuple[str, str, str, dict[str, Any]]], seeks: Sequence[str], n1: int, n2: int
) -> list[dict[str, Any]]:
    phases = []
    for exp, label, cls, kwargs in variants:
        for n in (n1, n2):
            phases.append(
                {
                    "kind": "model",
                    "experiment": exp,
                    "variant": label,
                    "cls": cls,
                    "kwargs": kwargs,
                    "n": n,
                }
            )
    for seek in seeks:
        for page in SEEK_PAGES:
            for n in (max(2, n1 // 100), max(4, n2 // 100)):  # a walk-2019 tail seek is long
                phases.append(
                    {
                        "kind": "seek",
                        "experiment": "fixed-seek",
                        "variant": f"{seek} @ page {page}",
                        "seek": seek,
                        "offset": page << 12,
                        "buffer": SEEK_BUFFER,
                        "n": n,
                    }
                )
    return phases


@contextlib.contextmanager
def dumps(
    phases: list[dict[str, Any]], *, timeout_s: float = 600.0, extra_args: Sequence[str] = ()
) -> Iterator[list[str]]:
    """Run the modelled calls of ``phases`` once under callgrind, counting only the timed
    loops (``lk_time_*``); yields one dump file per phase, removed on exit.
    ``extra_args`` go to valgrind (for example instruction-level positions).

    Raises:
        RuntimeError: if valgrind is missing, fails, or dumps fewer phases than asked.
    """
    ok, where = available()
    if not ok:
        raise RuntimeError(where)
    with tempfile.TemporaryDirectory(prefix="labkit-cg-") as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = [
            where,
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            "--toggle-collect=lk_time_*",
            "--dump-after=lk_time_empty",
            *extra_args,
            sys.executable,
            "-c",
            _CHILD,
            json.dumps(phases),
            str(repo_root()),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"valgrind failed ({done.returncode}): {done.stderr[-400:]}")
        paths = [f"{out}.{k}" for k in range(1, len(phases) + 1)]
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise RuntimeError(
                f"callgrind wrote {len(paths) - len(missing)} dumps, {len(phases)} phases were run"
            )
        yield paths


def measure(
    variants: Sequence[tuple[str, str, str, dict[str, Any]]] = SUMMARY_VARIANTS,
    *,
    seeks: Sequence[str] = SEEKS,
    n1: int = N1,
    n2: int = N2,
    timeout_s: float = 600.0,
) -> pd.DataFrame:
    """Instructions per call of each variant (and each seek at two pages), in one valgrind run.

    Returns:
        Rows with ``experiment``, ``variant``, ``instructions_per_call`` (seek rows
        also ``seek`` and ``page``).

    Raises:
        RuntimeError: if valgrind is missing, fails, or dumps fewer phases than asked.
    """
    ok, where = available()
    if not ok:
        raise RuntimeError(where)
    if not 0 < int(n1) < int(n2):
        raise ValueError(f"need 0 < n1 < n2, got {n1}, {n2}")
    phases = _phases(variants, seeks, int(n1), int(n2))
    counts = []
    with dumps(phases, timeout_s=timeout_s) as paths:
        for path in paths:
            with open(path) as f:
                m = re.search(r"^summary:\s+(\d+)", f.read(), re.M)
            counts.append(int(m.group(1)) if m else 0)
    rows = []
    for k in range(0, len(phases), 2):
        a, b = phases[k], phases[k + 1]
        row = {
            "experiment": a["experiment"],
            "variant": a["variant"],
            "instructions_per_call": (counts[k + 1] - counts[k]) / (b["n"] - a["n"]),
        }
        if a["kind"] == "seek":
            row.update(seek=a["seek"], page=a["offset"] >> 12)
        rows.append(row)
    return pd.DataFrame(rows)


def _per_call(df: pd.DataFrame, experiment: str, variant: str) -> float:
    sel = df[(df["experiment"] == experiment) & (df["variant"] == variant)]
    return float(sel["instructions_per_call"].iloc[0]) if len(sel) else math.nan


def per_page(df: pd.DataFrame, seek: str) -> float:
    """Instructions per skipped page of ``seek``: (count at the last page - at page 1) / pages."""
    if "seek" not in df.columns:
        return math.nan
    s = df[df["seek"] == seek]
    if len(s) < 2:
        return math.nan
    s = s.sort_values("page")
    first, last = s.iloc[0], s.iloc[-1]
    return float(
        (last["instructions_per_call"] - first["instructions_per_call"])
        / (last["page"] - first["page"])
    )


def evidence(df: pd.DataFrame) -> dict[str, float]:
    """The summary's clock-free figures from :func:`measure`'s rows (NaN where not measured).

    ``r2_saved``: instructions saved per read-zero readv(1) call, 6.3 -> 6.4;
    ``r3_saved``: saved per request by READV (as IOVEC) -> READ, no deferral;
    ``r3_rewrite_saved``: saved per request by R3's own change, a one-segment READV
    (IOVEC, 6.3) rewritten to READ (the ``readv-rewrite`` model), no deferral;
    ``r1_walk_per_page`` and ``r1_shift_per_page``: per skipped page.
    """
    return {
        "r2_saved": _per_call(df, "read-zero", "readv 6.3")
        - _per_call(df, "read-zero", "readv 6.4"),
        "r3_saved": _per_call(df, "uring defer_every=0", "readv-iovec")
        - _per_call(df, "uring defer_every=0", "read"),
        "r3_rewrite_saved": _per_call(df, "uring defer_every=0", "readv-iovec")
        - _per_call(df, "uring defer_every=0", "readv-rewrite"),
        "r1_walk_per_page": per_page(df, "walk-2019"),
        "r1_shift_per_page": per_page(df, "shift"),
    }


def as_estimate(value: float, quantity: str) -> Estimate | None:
    """An instruction count as an Estimate: exact, so its interval is the count (None if NaN)."""
    if value is None or math.isnan(value):
        return None
    return Estimate.count(
        value, quantity, "callgrind instruction count (no clock: exact, the interval is the count)"
    )


__all__ = [
    "N1",
    "N2",
    "SEEKS",
    "SEEK_BUFFER",
    "SEEK_PAGES",
    "UBUF_VARIANTS",
    "as_estimate",
    "available",
    "dumps",
    "evidence",
    "measure",
]
