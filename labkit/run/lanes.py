"""Which notebooks of a reproduction may run side by side, and how many at once.

:func:`labkit.run.reproduce.run` runs up to ``jobs`` notebooks at once, each in
its own kernel, when what each notebook shows is the same as one after another:

* **no clock in a notebook.**  A notebook using :mod:`labkit.claims` reads the timed
  experiments the measuring phase measured before the notebooks
  (:mod:`labkit.claims.schedule`); what it measures itself is clock-free (callgrind
  counts).  Without a measuring phase it times its experiments in its kernel, and
  then every notebook runs alone (:func:`lanes`).
* **rows read as written.**  A notebook that reads this run's summary rows
  (``summary_table``: notebook 00) sees the rows of the notebooks before it and none
  of those after it, as one after another: it waits for the earlier notebooks that
  record rows, and the later ones wait for it (:func:`waits_for`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

#: Most notebooks a reproduction runs at once by default (fewer with fewer CPUs).
MAX_DEFAULT_JOBS = 4


def default_jobs() -> int:
    """How many notebooks a reproduction runs at once unless told: one per CPU this process
    may use, at most :data:`MAX_DEFAULT_JOBS` (2 on a 2-core machine).  Each kernel is
    mostly one busy thread; their start-up (importing labkit, pandas, matplotlib) is
    most of what running them side by side saves."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_DEFAULT_JOBS))


def _code(cells: Sequence[dict[str, Any]] | None) -> str:
    """The code cells' sources, joined."""
    return "\n".join(
        "".join(c.get("source", "")) for c in cells or [] if c.get("cell_type") == "code"
    )


def uses_claims(cells: Sequence[dict[str, Any]] | None) -> bool:
    """True when a code cell uses ``labkit.claims`` (it reads the measuring phase's rows,
    or, without one, times its experiments itself)."""
    return "claims" in _code(cells)


def reads_rows(cells: Sequence[dict[str, Any]] | None) -> bool:
    """True when a code cell reads summary rows (``summary_table``)."""
    return "summary_table" in _code(cells)


def records_rows(cells: Sequence[dict[str, Any]] | None) -> bool:
    """True when a code cell may record summary rows (through claims or ``record``)."""
    code = _code(cells)
    return uses_claims(cells) or "record(" in code


def waits_for(notebooks: Sequence[Sequence[dict[str, Any]] | None]) -> list[list[int]]:
    """For each notebook (its cells, in run order), the earlier ones it must wait for."""
    reads = [reads_rows(c) for c in notebooks]
    records = [records_rows(c) for c in notebooks]
    return [
        [j for j in range(k) if (reads[k] and records[j]) or (reads[j] and records[k])]
        for k in range(len(notebooks))
    ]


def lanes(jobs: int, clock_inside: bool) -> int:
    """Notebooks at once: ``jobs``, or 1 when a notebook that runs times something itself
    (``clock_inside``: it uses claims and no measuring phase ran)."""
    return 1 if clock_inside else max(1, int(jobs))


__all__: list[str] = []  # internal: labkit.run.reproduce's scheduling rules
