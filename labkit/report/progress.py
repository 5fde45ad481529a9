"""Progress of ``labkit reproduce``: notebooks, cells inside each, the section, time left.

On a terminal one status line is redrawn (once a second, so a long cell still
shows time passing)::

    [2/5] 02-fixed-buffer-seek  cell 7/19  3. Cost of the seek against the offset
          0:41 elapsed, about 0:35 left (from the last run)

Elsewhere (a log, CI) one line is printed when a notebook starts and one when
it ends.  The estimate is the last run's time of every cell still to come
(kept in the notebooks' state), scaled by how fast this run has been so far.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from dataclasses import dataclass
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


class Progress:
    """The progress display (see the module docstring); ``enabled=False`` prints nothing."""

    def __init__(
        self, planned: list[Planned], *, enabled: bool = True, stream: TextIO | None = None
    ) -> None:
        self.planned = planned
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and bool(getattr(self.stream, "isatty", lambda: False)())
        self.current: Planned | None = None
        self.position = 0
        self.cell: int | None = None
        self.done_cells: set[int] = set()
        self.t0 = time.monotonic()
        self.nb_t0 = self.t0
        self.done_estimate = 0.0  # estimated seconds of the work finished so far
        self._finished: set[str] = set()
        self._cell_t0 = self.t0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._width = 0
        if self.tty:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    # ---- estimates ---------------------------------------------------------------

    def _has_estimate(self) -> bool:
        return all(p.estimate for p in self.planned if p.run)

    def _remaining_estimate(self) -> float:
        left = 0.0
        seen_current = self.current is None
        for p in self.planned:
            if not p.run:
                continue
            if p is self.current:
                seen_current = True
                left += sum(v for k, v in p.estimate.items() if k not in self.done_cells)
                left += p.html + (p.startup if self.cell is None else 0.0)
            elif seen_current and p.name not in self._finished:
                left += p.total()
        return left

    def _eta(self) -> str:
        if not self._has_estimate():
            return "no estimate yet (first run)"
        left = self._remaining_estimate()
        if self.cell is not None and self.current is not None:
            # the running cell: take off what it has already used of its estimate
            left -= min(self.current.estimate.get(self.cell, 0.0), time.monotonic() - self._cell_t0)
        elapsed = time.monotonic() - self.t0
        speed = elapsed / self.done_estimate if self.done_estimate > 5 else 1.0
        return f"about {format_seconds(max(left, 0.0) * speed)} left (from the last run)"

    # ---- events ------------------------------------------------------------------

    def notebook_start(self, name: str) -> None:
        """A notebook starts running."""
        with self._lock:
            self.current = next(p for p in self.planned if p.name == name)
            self.position = [p.name for p in self.planned].index(name) + 1
            self.cell, self.done_cells = None, set()
            self.nb_t0 = time.monotonic()
            self._cell_t0 = self.nb_t0
        if self.enabled and not self.tty:
            est = self.current.total()
            about = f", about {format_seconds(est)} last time" if est else ""
            self._print(
                f"[{self.position}/{len(self.planned)}] {name}: "
                f"{len(self.current.code)} code cells{about}"
            )
        self._draw()

    def cell_start(self, index: int) -> None:
        """A code cell (source index) starts."""
        with self._lock:
            if self.cell is not None and self.current is not None:
                self.done_cells.add(self.cell)
                self.done_estimate += self.current.estimate.get(self.cell, 0.0)
            self.cell = index
            self._cell_t0 = time.monotonic()
        self._draw()

    def notebook_done(self, name: str, status: str, seconds: float) -> None:
        """A notebook finished (``status``: ran, failed, ...)."""
        with self._lock:
            if self.current is not None:
                rest = [k for k in self.current.estimate if k not in self.done_cells]
                self.done_estimate += sum(self.current.estimate[k] for k in rest)
                self.done_estimate += self.current.startup + self.current.html
            self._finished.add(name)
            self.current, self.cell = None, None
        if self.enabled and not self.tty:
            self._print(
                f"[{self.position}/{len(self.planned)}] {name}: {status} in {seconds:.1f} s"
            )
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

    # ---- drawing -----------------------------------------------------------------

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            self._draw()

    def _line(self) -> str:
        cur = self.current
        if cur is None:
            return f"reproduce: {format_seconds(time.monotonic() - self.t0)} elapsed"
        cell = ""
        if self.cell is not None and self.cell in cur.code:
            k = cur.code.index(self.cell) + 1
            section = cur.sections[self.cell] if self.cell < len(cur.sections) else None
            cell = f"  cell {k}/{len(cur.code)}" + (f"  {section}" if section else "")
        return (
            f"[{self.position}/{len(self.planned)}] {cur.name.removesuffix('.ipynb')}{cell}  "
            f"({format_seconds(time.monotonic() - self.t0)} elapsed, {self._eta()})"
        )

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


__all__: list[str] = []  # internal: the progress line of labkit reproduce (labkit.report.reproduce)
