"""Checked external tools: a program that fails is an error naming it, never a silent 0.

Every program labkit runs for a measurement or a build (``nm``, valgrind,
``make``, the compiler, QEMU) goes through :func:`run_tool`: a non-zero exit,
a missing program or a timeout raises :class:`ToolFailed` (or the caller's
subclass of it) whose message names the tool, its exit status and the last line
it wrote to stderr. :func:`positive_count` refuses a count of 0 (or less) where
the method cannot give 0.
"""

from __future__ import annotations

import math
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


class ToolFailed(RuntimeError):
    """An external program failed; ``str()`` names it and its last line of stderr.

    Attributes:
        tool: the program's name (its first argument's base name).
        tail: the last lines of its output (stderr after stdout), for a log.
    """

    def __init__(self, message: str, *, tool: str = "", tail: str = "") -> None:
        self.tool = tool
        self.tail = tail
        super().__init__(message)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(nothing on stderr)"


def run_tool(
    cmd: Sequence[str],
    *,
    what: str = "",
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,  # noqa: A002 - subprocess.run's name
    timeout: float | None = None,
    error: type[ToolFailed] | type[Exception] = ToolFailed,
    tail_lines: int = 0,
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` (text in and out) and return it; any failure raises ``error``.

    Args:
        cmd: the program and its arguments.
        what: what the step does, in words (default: the program's name).
        cwd, env, input, timeout: as for :func:`subprocess.run`.
        error: the exception class raised (called with one message).
        tail_lines: also append this many last lines of output to the message
            (for a build log); 0 gives the one-line form.

    Raises:
        error: "<what>: <tool> exited with <n>: <last stderr line>", or the program
            is missing, or it ran past ``timeout``.
    """
    tool = Path(cmd[0]).name
    label = what or tool
    try:
        proc = subprocess.run(
            list(cmd),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            input=input,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except FileNotFoundError:
        raise _make(
            error, f"{label}: {tool} is not installed (not found on PATH)", tool, ""
        ) from None
    except subprocess.TimeoutExpired:
        raise _make(error, f"{label}: {tool} ran past its {timeout} s limit", tool, "") from None
    except OSError as exc:
        raise _make(
            error, f"{label}: {tool} cannot run ({exc.strerror or exc})", tool, ""
        ) from None
    if proc.returncode != 0:
        status = (
            f"was killed by signal {-proc.returncode}"
            if proc.returncode < 0
            else f"exited with {proc.returncode}"
        )
        last = _last_line(proc.stderr or proc.stdout)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        msg = f"{label}: {tool} {status}: {last}"
        if tail_lines:
            msg += "\n" + "\n".join(tail.splitlines()[-tail_lines:])
        raise _make(error, msg, tool, tail)
    return proc


def _make(error: type[Exception], message: str, tool: str, tail: str) -> Exception:
    if isinstance(error, type) and issubclass(error, ToolFailed):
        return error(message, tool=tool, tail=tail)
    exc = error(message)
    exc.tool, exc.tail = tool, tail  # type: ignore[attr-defined]
    return exc


def positive_count(value: float, what: str, *, error: type[Exception] = ToolFailed) -> float:
    """``value`` if it is a finite count > 0; else ``error`` saying the method cannot give it.

    For counts that cannot be 0 when the method worked (instructions a call runs,
    functions an object defines): a 0 means a tool read nothing.
    """
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise error(f"{what}: {value!r}, which the method cannot give (a tool read nothing?)")
    return value


__all__: list[str] = []  # internal: the checked tools of labkit's builds and counts
