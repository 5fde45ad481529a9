"""The progress line of the command line's long steps: kernel builds and boots.

:func:`progress_line` opens one tqdm line on stderr, ``"<what>: <done>/<total> <unit>
[<elapsed>] <step>"``, redrawn every second by a thread of its own, so that a step of a minute
shows time passing instead of a silent terminal.  The caller names each step as it starts
(:meth:`ProgressLine.step`) and counts it when it ends (:meth:`ProgressLine.done`); lines it
prints meanwhile go through :meth:`ProgressLine.say`, above the progress line (stdout by
default), so the two do not overwrite each other.  The line is closed (and left showing the
count and the time taken) when the ``with`` block ends, also on an error.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any


class ProgressLine:
    """One progress line (see the module docstring); thread-safe, as the boots run in two."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar
        self._lock = threading.Lock()

    def step(self, what: str) -> None:
        """Name the step under way (shown after the elapsed time)."""
        with self._lock:
            self._bar.set_postfix_str(what)

    def done(self, n: int = 1) -> None:
        """Count ``n`` steps as done."""
        with self._lock:
            self._bar.update(n)

    def say(self, line: str, file: IO[str] | None = None) -> None:
        """Print ``line`` (to ``file``, default stdout) above the progress line."""
        from tqdm.auto import tqdm  # on use: labkit --help stays fast

        with self._lock:
            tqdm.write(line, file=file or sys.stdout)


@contextmanager
def progress_line(
    what: str, total: int, unit: str, *, file: IO[str] | None = None
) -> Iterator[ProgressLine]:
    """A progress line of ``total`` steps (``unit``: their name, plural) on ``file`` (default
    stderr), redrawn each second until the block ends."""
    from tqdm.auto import tqdm  # on use: labkit --help stays fast

    bar = tqdm(
        total=total,
        desc=what,
        file=file or sys.stderr,
        bar_format="{desc}: {n}/{total} " + unit + " [{elapsed}]{postfix}",
    )
    stop = threading.Event()
    line = ProgressLine(bar)

    def tick() -> None:  # a build or a boot takes a minute: show the elapsed time grow
        while not stop.wait(1.0):
            with line._lock:
                bar.refresh()

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield line
    finally:
        stop.set()
        ticker.join()
        bar.close()


__all__: list[str] = []  # internal: used by labkit kernel and labkit kernel vm
