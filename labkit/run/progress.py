"""Progress of ``labkit reproduce``: notebooks, cells inside each, the section, time left.

On a terminal one status line is redrawn (once a second, so a long cell still
shows time passing)::

    [2/5] 02-fixed-buffer-seek  cell 7/19  3. Cost of the seek against the offset
          0:41 elapsed, about 0:35 left (from the last run)

Elsewhere (a log, CI) one line is printed when a notebook starts and one when
it ends.  When notebooks run side by side, the status line shows each running
one (``[2/5] 02-fixed-buffer-seek  cell 7/19 | [3/5] 03-ubuf-import  cell 2/20``)
and the lines of a log interleave, each naming its notebook.

The estimate is the last run's time of every cell still to come (kept in the
notebooks' state), scaled by how fast this run has been so far.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TextIO


def format_seconds(s: float) -> str:
    """0:07, 1:05, 1:02:03."""
    s = max(0, int(round(s)))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


@dataclass
class Planned:
    """One notebook as the progress display knows it.

    Attributes:
        name: file name.
        run: it will run (False: up to date, skipped).
        code: source indices of its code cells.
        sections: the section of each source cell.
        estimate: last run's seconds per source cell index (empty: no estimate).
        startup: last run's seconds outside its cells (kernel start, papermill).
        html: last run's seconds making the HTML page.
    """

    name: str
    run: bool
    code: list[int]
    sections: list[str | None]
    estimate: dict[int, float]
    startup: float = 0.0
    html: float = 0.0

    def total(self) -> float:
        """The whole notebook's estimate."""
        return sum(self.estimate.values()) + self.startup + self.html


@dataclass
class _Running:
    """A notebook running now: its plan, its place in the list, the cell it is at."""

    planned: Planned
    position: int
    cell: int | None = None
    done_cells: set[int] = field(default_factory=set)
    cell_t0: float = 0.0


class Progress:
    """The progress display (see the module docstring); ``enabled=False`` prints nothing.

    Several notebooks may run at once (``lanes``: how many at most); each event names its
    notebook, and the status line shows every running one.
    """

    def __init__(
        self,
        planned: list[Planned],
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        lanes: int = 1,
    ) -> None:
        self.planned = planned
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.lanes = max(1, int(lanes))
        self.tty = enabled and bool(getattr(self.stream, "isatty", lambda: False)())
        self.running: dict[str, _Running] = {}
        self.t0 = time.monotonic()
        self.done_estimate = 0.0  # estimated seconds of the work finished so far
        self._finished: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._width = 0
        if self.tty:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def cell_of(self, name: str) -> int | None:
        """The source index of the cell notebook ``name`` is at (None: none started, or it
        is not running)."""
        with self._lock:
            r = self.running.get(name)
            return r.cell if r is not None else None

    # ---- estimates ---------------------------------------------------------------

    def _has_estimate(self) -> bool:
        return all(p.estimate for p in self.planned if p.run)

    def _remaining_estimate(self) -> float:
        left = 0.0
        for p in self.planned:
            if not p.run or p.name in self._finished:
                continue
            r = self.running.get(p.name)
            if r is None:
                left += p.total()
                continue
            left += sum(v for k, v in p.estimate.items() if k not in r.done_cells)
            left += p.html + (p.startup if r.cell is None else 0.0)
            if r.cell is not None:  # the running cell: take off what it has already used
                left -= min(p.estimate.get(r.cell, 0.0), time.monotonic() - r.cell_t0)
        return left

    def _eta(self) -> str:
        if not self._has_estimate():
            return "no estimate yet (first run)"
        left = self._remaining_estimate()
        elapsed = time.monotonic() - self.t0
        # seconds of wall time per estimated second: measured once there is enough done
        # (it includes running notebooks side by side), else one per lane
        speed = elapsed / self.done_estimate if self.done_estimate > 5 else 1.0 / self.lanes
        return f"about {format_seconds(max(left, 0.0) * speed)} left (from the last run)"

    # ---- events ------------------------------------------------------------------

    def notebook_start(self, name: str) -> None:
        """A notebook starts running."""
        with self._lock:
            p = next(p for p in self.planned if p.name == name)
            position = [p.name for p in self.planned].index(name) + 1
            self.running[name] = _Running(p, position, cell_t0=time.monotonic())
        if self.enabled and not self.tty:
            est = p.total()
            about = f", about {format_seconds(est)} last time" if est else ""
            self._print(f"[{position}/{len(self.planned)}] {name}: {len(p.code)} code cells{about}")
        self._draw()

    def cell_start(self, index: int, name: str | None = None) -> None:
        """A code cell (source index) of notebook ``name`` starts (None: the notebook
        started last)."""
        with self._lock:
            r = self._find(name)
            if r is None:
                return
            if r.cell is not None:
                r.done_cells.add(r.cell)
                self.done_estimate += r.planned.estimate.get(r.cell, 0.0)
            r.cell = index
            r.cell_t0 = time.monotonic()
        self._draw()

    def notebook_done(self, name: str, status: str, seconds: float) -> None:
        """A notebook finished (``status``: ran, failed, ...)."""
        with self._lock:
            r = self.running.pop(name, None)
            position = [p.name for p in self.planned].index(name) + 1
            if r is not None:
                p = r.planned
                rest = [k for k in p.estimate if k not in r.done_cells]
                self.done_estimate += sum(p.estimate[k] for k in rest) + p.startup + p.html
            self._finished.add(name)
        if self.enabled and not self.tty:
            self._print(f"[{position}/{len(self.planned)}] {name}: {status} in {seconds:.1f} s")
        self._draw()

    def close(self) -> None:
        """Stop redrawing and clear the status line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self.tty:
            with self._lock:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()

    def _find(self, name: str | None) -> _Running | None:
        if name is not None:
            return self.running.get(name)
        return next(reversed(self.running.values()), None)

    # ---- drawing -----------------------------------------------------------------

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            self._draw()

    def _where(self, r: _Running, section: bool) -> str:
        cur = r.planned
        cell = ""
        if r.cell is not None and r.cell in cur.code:
            k = cur.code.index(r.cell) + 1
            title = cur.sections[r.cell] if section and r.cell < len(cur.sections) else None
            cell = f"  cell {k}/{len(cur.code)}" + (f"  {title}" if title else "")
        return f"[{r.position}/{len(self.planned)}] {cur.name.removesuffix('.ipynb')}{cell}"

    def _line(self) -> str:
        elapsed = format_seconds(time.monotonic() - self.t0)
        if not self.running:
            return f"reproduce: {elapsed} elapsed"
        alone = len(self.running) == 1  # the section only fits when one notebook runs
        where = " | ".join(self._where(r, alone) for r in self.running.values())
        return f"{where}  ({elapsed} elapsed, {self._eta()})"

    def _draw(self) -> None:
        if not self.tty:
            return
        with self._lock:
            cols = shutil.get_terminal_size((100, 20)).columns - 1
            line = self._line()
            if len(line) > cols:
                line = line[: cols - 1] + "…"
            pad = max(0, self._width - len(line))
            self.stream.write("\r" + line + " " * pad)
            self.stream.flush()
            self._width = len(line)

    def _print(self, text: str) -> None:
        with self._lock:
            print(text, file=self.stream, flush=True)


def estimates_from_state(
    state: dict[str, Any], quick: bool
) -> tuple[dict[int, float], float, float]:
    """(seconds per cell, seconds outside the cells, seconds of the HTML page) of a notebook's
    last finished run in the same mode; ({}, 0.0, 0.0) if there is none."""
    none: tuple[dict[int, float], float, float] = ({}, 0.0, 0.0)
    if state.get("status") not in ("ran", "failed") or bool(state.get("quick")) != bool(quick):
        return none
    cells = state.get("cell_seconds") or {}
    try:
        per_cell = {int(k): float(v) for k, v in cells.items()}
        seconds, html = float(state.get("seconds", 0.0)), float(state.get("html_seconds", 0.0))
    except (AttributeError, TypeError, ValueError):
        return none
    return per_cell, max(0.0, seconds - sum(per_cell.values())), max(0.0, html)


__all__: list[str] = []  # internal: the progress line of labkit reproduce (labkit.run.reproduce)
