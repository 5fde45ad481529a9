"""R1 at the source: the real ``iov_iter_advance()`` over a registered buffer's bvec table, timed.

A registered buffer of 1 GiB is a table of 262,144 bvecs of one 4 KiB page
each; seeking to byte ``offset`` of it the pre-2019 way is ``iov_iter_advance``
from the start, which walks one bvec per skipped page.  Each era's
``lko-drive time-advance`` builds the table once, keeps the iterator, and
times the advance from that kept iterator to several offsets (best of five
batches each); the slope of nanoseconds over skipped pages is the cost per
skipped page, at both optimisation levels.

:func:`measure_runs` is what the claim ``R1.kernel_ns_per_page``
(:mod:`labkit.results.r1.claims`) measures: independent runs, each one fresh driver
process per era and level, pinned to one CPU; :func:`measure_seek` is the
benchmark's one-shot table (``benchmarks/kernel_source_seek.py``).

This is a clock measurement: it belongs in a benchmark or an experiment,
never in a pass/fail test, and it is only as quiet as the machine.  The
clock-free figure is the instruction count per skipped page
(:mod:`labkit.kernelsrc.counts`, ``advance/page``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

import numpy as np
import pandas as pd

from labkit.kernelsrc.build import (
    ERAS,
    OPT_LEVELS,
    KernelSourceError,
    build,
    cached,
    is_available,
)
from labkit.measure.runner import default_cpu

#: Skipped pages timed (the slope is fitted over them); 262,143 is the tail of 1 GiB.
PAGES = (0, 32768, 65536, 131072, 196608, 262143)
#: The eras whose advance is timed (6.1+ubuf's advance is 6.1's: the patch is the import).
SEEK_ERAS = tuple(e for e in ERAS if e != "6.1+ubuf")
#: Columns of :func:`time_advance` and :func:`measure_runs` (with ``run``).
COLUMNS = ["era", "opt", "pages_skipped", "ns_per_op"]


def time_advance(
    era: str,
    opt: str = "defconfig",
    *,
    pages: Sequence[int] = PAGES,
    iters: int = 20,
    cpu: int | None = None,
) -> pd.DataFrame:
    """Nanoseconds per advance at each number of skipped pages (best of five batches of
    ``iters``), from one fresh driver process, pinned to ``cpu`` (None: unpinned).

    Raises:
        KeyError: an unknown era or level.
        ValueError: pages outside the 1 GiB table (0-262,143) or ``iters`` < 1.
        labkit.kernelsrc.build.KernelSourceError: the era cannot be built here.
    """
    if opt not in OPT_LEVELS:
        raise KeyError(f"unknown optimisation level {opt!r}; known: {', '.join(OPT_LEVELS)}")
    if not pages or any(not 0 <= int(p) <= PAGES[-1] for p in pages):
        raise ValueError(f"pages must be 0-{PAGES[-1]:,} (the 1 GiB table), got {list(pages)}")
    if int(iters) < 1:
        raise ValueError(f"iters must be at least 1, got {iters}")
    driver = build(era).driver(opt)
    pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {int(cpu)}))
    proc = subprocess.run(
        [str(driver), "time-advance", str(int(iters)), *(str(int(p)) for p in pages)],
        capture_output=True,
        text=True,
        preexec_fn=pin,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        raise KernelSourceError(
            f"timing the seek: {driver.name} exited with {proc.returncode}: {last}"
        )
    out = proc.stdout
    rows = [tuple(map(float, line.split())) for line in out.splitlines() if line.strip()]
    return pd.DataFrame(
        [{"era": era, "opt": opt, "pages_skipped": int(p), "ns_per_op": ns} for p, ns in rows],
        columns=COLUMNS,
    )


def ns_per_page(df: pd.DataFrame) -> float:
    """The least-squares slope of ns over skipped pages of one era and level's rows."""
    x, y = df["pages_skipped"].to_numpy(float), df["ns_per_op"].to_numpy(float)
    slope, _ = np.polyfit(x, y, 1)
    return float(slope)


def measure_runs(
    eras: Sequence[str], opts: Sequence[str], runs: int, *, iters: int = 20
) -> pd.DataFrame:
    """``runs`` independent runs of the timed advance: in each, one fresh driver process per
    era and level in turn, pinned to :func:`labkit.measure.runner.default_cpu`.  Rows:
    ``run``, ``era``, ``opt``, ``pages_skipped``, ``ns_per_op`` (best of five batches)."""
    if int(runs) < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    cpu = default_cpu()
    frames = [
        time_advance(era, opt, iters=iters, cpu=cpu).assign(run=run)
        for run in range(int(runs))
        for era in eras
        for opt in opts
    ]
    return pd.concat(frames, ignore_index=True)[["run", *COLUMNS]]


def unavailable(eras: Sequence[str], *, build_missing: bool) -> str:
    """Why the advance cannot be timed here ("" if it can).

    ``build_missing`` False (quick mode): an era the cache does not hold yet is not built
    (the first build takes about 35 s); the reason names the command that builds it.
    """
    why = is_available(eras)
    if why:
        return why
    missing = [e for e in eras if cached(e) is None]
    if missing and not build_missing:
        return (
            f"quick mode: the kernel-source oracle of {', '.join(missing)} is not built here "
            "(the first build takes about a minute); build it with: labkit kernel build"
        )
    return ""


def measure_seek(eras: list[str] | None = None, opts: list[str] | None = None) -> pd.DataFrame:
    """ns per skipped page of the real advance, per era and optimisation level (one run)."""
    rows = []
    for era in eras or list(SEEK_ERAS):
        for opt in opts or list(OPT_LEVELS):
            df = time_advance(era, opt)
            rows.append(
                {
                    "era": era,
                    "opt": opt,
                    "ns_per_page": ns_per_page(df),
                    "tail_ns": float(df["ns_per_op"].iloc[-1]),
                    "head_ns": float(df["ns_per_op"].iloc[0]),
                }
            )
    return pd.DataFrame(rows)
