"""R1 at the source: the real ``iov_iter_advance()`` over a registered buffer's bvec table, timed.

A registered buffer of 1 GiB is a table of 262,144 bvecs of one 4 KiB page
each; seeking to byte ``offset`` of it the pre-2019 way is ``iov_iter_advance``
from the start, which walks one bvec per skipped page.  Each era's
``lko-drive time-advance`` builds the table once, keeps the iterator, and
times the advance from that kept iterator to several offsets (best of five
batches each); the slope of nanoseconds over skipped pages is the cost per
skipped page (``numpy.polyfit``, degree 1), at both optimisation levels.

This is a clock measurement: it belongs in a benchmark or an experiment,
never in a pass/fail test, and it is only as quiet as the machine.  The
clock-free figure is the instruction count per skipped page
(:mod:`labkit.kernelsrc.counts`, ``advance/page``).
"""

from __future__ import annotations

import subprocess

import numpy as np
import pandas as pd

from labkit.kernelsrc.build import ERAS, OPT_LEVELS, build

#: Skipped pages timed (the slope is fitted over them); 262,143 is the tail of 1 GiB.
PAGES = (0, 32768, 65536, 131072, 196608, 262143)


def time_advance(
    era: str, opt: str = "defconfig", *, pages: tuple[int, ...] = PAGES, iters: int = 20
) -> pd.DataFrame:
    """Nanoseconds per advance at each number of skipped pages (best of five batches)."""
    driver = build(era).driver(opt)
    out = subprocess.run(
        [str(driver), "time-advance", str(iters), *map(str, pages)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [tuple(map(float, line.split())) for line in out.splitlines() if line.strip()]
    return pd.DataFrame(
        [{"era": era, "opt": opt, "pages": int(p), "ns": ns} for p, ns in rows],
        columns=["era", "opt", "pages", "ns"],
    )


def ns_per_page(df: pd.DataFrame) -> float:
    """The slope of ns over skipped pages of one era and level's rows."""
    slope, _ = np.polyfit(df["pages"].to_numpy(float), df["ns"].to_numpy(float), 1)
    return float(slope)


def measure_seek(eras: list[str] | None = None, opts: list[str] | None = None) -> pd.DataFrame:
    """ns per skipped page of the real advance, per era and optimisation level."""
    rows = []
    for era in eras or [e for e in ERAS if e != "6.1+ubuf"]:
        for opt in opts or list(OPT_LEVELS):
            df = time_advance(era, opt)
            rows.append(
                {
                    "era": era,
                    "opt": opt,
                    "ns_per_page": ns_per_page(df),
                    "tail_ns": float(df["ns"].iloc[-1]),
                    "head_ns": float(df["ns"].iloc[0]),
                }
            )
    return pd.DataFrame(rows)
