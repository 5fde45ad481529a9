"""The command line's one rule for numbers, output files and ``LABKIT_*`` settings.

Every numeric option is parsed by a :func:`number` type (argparse calls it, so
a bad value stops the command before any work): it must be a finite number,
an integer where a count is asked for, inside its range; the error names the
option's rule and the value, and argparse prefixes the option's name
("argument --timeout: must be a number of seconds > 0 and <= 1e+06, got 'nan'").

:func:`output_file` checks an output option (a figure, a table) up front: its
format from the suffix, a folder meaning a default file name inside it, the
folder existing. :func:`check_settings` reads every ``LABKIT_*`` setting that
names a number or a place once, at the start of a command.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from labkit import config

#: Bounds of the command line's numbers.
MAX_TIMEOUT_S = 1e6  # about 11 days
MAX_SESSIONS = 100
MAX_RUNS = 10_000
MAX_REPEATS = 1_000_000
MAX_JOBS = 256
MAX_SEQUENCES = 100_000_000
MAX_PAUSE_S = 86_400.0


def _rule(integer: bool, low: float, high: float, low_open: bool, unit: str) -> str:
    what = "a whole number" if integer else "a number"
    if unit:
        what += f" of {unit}"
    cmp = ">" if low_open else ">="
    return f"{what} {cmp} {low:g} and <= {high:g}"


def check_number(
    text: str | float,
    *,
    integer: bool = False,
    low: float = 0,
    high: float = math.inf,
    low_open: bool = False,
    unit: str = "",
) -> float | int:
    """``text`` as a number by the one rule, else ValueError("must be <rule>, got <text>").

    Finite; an integer when ``integer`` (written as one: "3", not "3.0" or "1e23");
    ``low <= value`` (``low < value`` when ``low_open``) and ``value <= high``.
    """
    rule = _rule(integer, low, high, low_open, unit)
    raw = str(text).strip()
    try:
        value: float | int = int(raw, 10) if integer else float(raw)
    except ValueError:
        raise ValueError(f"must be {rule}, got {str(text)!r}") from None
    ok = math.isfinite(value) and (value > low if low_open else value >= low) and value <= high
    if not ok:
        raise ValueError(f"must be {rule}, got {str(text)!r}")
    return value


def number(
    *,
    integer: bool = False,
    low: float = 0,
    high: float = math.inf,
    low_open: bool = False,
    unit: str = "",
) -> Callable[[str], float | int]:
    """An argparse ``type`` applying :func:`check_number` (its error names the option)."""

    def parse(text: str) -> float | int:
        try:
            return check_number(
                text, integer=integer, low=low, high=high, low_open=low_open, unit=unit
            )
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = "whole number" if integer else "number"
    return parse


#: The usual options' types.
def seconds(high: float = MAX_TIMEOUT_S) -> Callable[[str], float | int]:
    """Seconds > 0 (fractions allowed), at most ``high``."""
    return number(low=0, low_open=True, high=high, unit="seconds")


def count(low: int = 1, high: int = MAX_RUNS) -> Callable[[str], float | int]:
    """A whole number from ``low`` to ``high``."""
    return number(integer=True, low=low, high=high)


class OutputOptionError(ValueError):
    """An output option that cannot be written: the message names the option and value."""


def output_file(
    option: str, value: str | None, formats: Sequence[str], default_name: str
) -> Path | None:
    """The file an output option names, checked before any work (None if not given).

    The format is the suffix's (one of ``formats``, e.g. ``("png", "svg")``); a
    folder (existing, or written with a trailing slash) means ``default_name``
    inside it; the file's folder must exist.

    Raises:
        OutputOptionError: "--figure x.xyz: the format 'xyz' is not one of png, svg".
    """
    if value is None:
        return None
    path = Path(value)
    if value.endswith(os.sep) or path.is_dir():
        path = path / default_name
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in formats:
        shown = f"the format {suffix!r}" if suffix else "no suffix"
        raise OutputOptionError(
            f"{option} {value}: {shown} is not one of {', '.join(formats)} "
            f"(name a .{formats[0]} file or a folder)"
        )
    folder = path.parent
    if not folder.is_dir():
        why = "is not a folder" if folder.exists() else "does not exist"
        raise OutputOptionError(f"{option} {value}: the folder {folder} {why}")
    if path.is_dir():
        raise OutputOptionError(f"{option} {value}: {path} is a folder")
    return path


def _place(name: str, pseudo: bool) -> str | None:
    """Why the setting ``name`` (a folder) is unusable, or None; ``pseudo``: refuse a
    folder under /proc, /sys or /dev."""
    path = config._path(name)  # noqa: SLF001 - the one reader of LABKIT_* paths
    if path is None:
        return None
    real = os.path.realpath(path)
    if pseudo and any(real == p or real.startswith(p + "/") for p in ("/proc", "/sys", "/dev")):
        return f"{name}={path}: not a place for labkit's files (under {real.split('/')[1]}/)"
    if path.exists() and not path.is_dir():
        return f"{name}={path}: exists and is not a folder ({os.strerror(errno.ENOTDIR)})"
    return None


def check_settings() -> None:
    """Read every ``LABKIT_*`` setting that names a number or a place, once, before work.

    Raises:
        ValueError: one line naming the variable and its value.
    """
    config.budget_setting()  # raises ValueError naming the variable and its range
    config.kernel_jobs()  # the same
    for name in ("LABKIT_DATA", "LABKIT_KERNEL_CACHE", "LABKIT_OUT", "LABKIT_TMPFS"):
        why = _place(name, pseudo=name == "LABKIT_KERNEL_CACHE")
        if why:
            raise ValueError(why)


__all__: list[str] = []  # internal: the command line's checks
