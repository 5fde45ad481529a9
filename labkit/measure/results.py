"""Results on disk: tidy CSV tables with their environment record beside them.

Layout::

    <data dir>/results/<experiment>/<timestamp>-<host>.csv    one row per sample
    <data dir>/results/<experiment>/<timestamp>-<host>.json   environment record

(the data dir is :func:`labkit.config.data_dir`: ``$LABKIT_DATA`` or a
``labkit-results`` folder; labkit's own reference results are read too).

Both files are written atomically (a temporary file in the same directory,
flushed and fsynced, then ``os.replace``): an interrupted run leaves either
the complete file or none, never half of one.  The JSON is written first, so
every CSV has its record.  Results copied in from other machines keep their
``<host>`` in the name, and :func:`load` merges every run of an experiment
into one DataFrame with ``saved_run`` and ``host`` columns.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import pandas as pd

from labkit import config

#: read_csv options that read floats back exactly (pandas 3 does by default).
READ_CSV_EXACT: dict = (
    {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
)

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
#: Environment fields copied onto every row by :func:`load`.
ENV_COLUMNS = (
    "hostname",
    "cpu_model",
    "kernel_release",
    "quick_mode",
    "labkit_version",
    "git_commit",
)


def _safe_name(text: str, what: str) -> str:
    name = _SAFE.sub("-", str(text)).strip("-.")
    if not name:
        raise ValueError(f"{what} {text!r} has no usable characters for a file name")
    return name


def results_dir(experiment: str, data_dir: Path | str | None = None) -> Path:
    """``<data_dir>/results/<experiment>`` (data_dir defaults to :func:`labkit.config.data_dir`)."""
    base = Path(data_dir) if data_dir is not None else config.data_dir()
    return base / "results" / _safe_name(experiment, "experiment")


def atomic_write(path: Path | str, write: Callable[[IO[str]], Any]) -> Path:
    """Create ``path`` with the text ``write(f)`` puts in ``f``, atomically.

    The text goes to a temporary file in the same directory, which is fsynced
    and then renamed over ``path``; if ``write`` raises (or the process dies)
    ``path`` is untouched and the temporary file is removed (or, after a
    crash, left as a hidden ``.*.tmp`` file that no loader reads).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def _stamp(now: _dt.datetime | None = None) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def save(
    experiment: str,
    df: pd.DataFrame,
    *,
    env: dict[str, Any] | None = None,
    data_dir: Path | str | None = None,
    host: str | None = None,
    timestamp: str | None = None,
) -> Path:
    """Write ``df`` and its environment record; return the CSV's path.

    Args:
        experiment: the directory under ``data/results``.
        df: one row per sample (as :func:`labkit.measure.runner.run` returns).
        env: the environment record; by default :func:`labkit.measure.envinfo.environment`.
        data_dir: defaults to :func:`labkit.config.data_dir` (``LABKIT_DATA``).
        host: defaults to the record's hostname.
        timestamp: defaults to now, UTC (``YYYYmmddTHHMMSSZ``).
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"save: df must be a pandas DataFrame, not {type(df).__name__}")
    if env is None:
        from labkit.measure.envinfo import environment

        env = environment()
    out_dir = results_dir(experiment, data_dir)
    stem = (
        f"{_safe_name(timestamp or _stamp(), 'timestamp')}-"
        f"{_safe_name(host or env.get('hostname') or 'unknown', 'host')}"
    )
    csv_path = out_dir / f"{stem}.csv"
    k = 1
    while csv_path.exists() or csv_path.with_suffix(".json").exists():
        csv_path = out_dir / f"{stem}-{k}.csv"
        k += 1
    record = {
        "experiment": experiment,
        "rows": len(df),
        "columns": list(map(str, df.columns)),
        "env": env,
    }
    atomic_write(
        csv_path.with_suffix(".json"),
        lambda f: json.dump(record, f, indent=2, sort_keys=False, default=str),
    )
    atomic_write(csv_path, lambda f: df.to_csv(f, index=False))
    return csv_path


def load_run(csv_path: Path | str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One saved run: (its DataFrame, its environment record; {} if the JSON is missing)."""
    csv_path = Path(csv_path)
    df = pd.read_csv(csv_path, **READ_CSV_EXACT)
    json_path = csv_path.with_suffix(".json")
    env: dict[str, Any] = {}
    if json_path.exists():
        env = json.loads(json_path.read_text(encoding="utf-8")).get("env", {})
    return df, env


def default_data_dirs() -> list[Path]:
    """Where :func:`runs` looks by default: the user's data dir, then labkit's reference results."""
    dirs = [config.data_dir(), config.reference_data_dir()]
    return [d for k, d in enumerate(dirs) if d.resolve() not in {e.resolve() for e in dirs[:k]}]


def runs(experiment: str, data_dir: Path | str | Sequence[Path | str] | None = None) -> list[Path]:
    """The CSV files of ``experiment`` (in one data dir or several), sorted by name.

    By default (``data_dir=None``) the user's data dir (:func:`labkit.config.data_dir`)
    and the reference results shipped with labkit (:func:`labkit.config.reference_data_dir`).
    """
    dirs: Iterable[Path | str | None]
    if data_dir is None:
        dirs = default_data_dirs()
    elif isinstance(data_dir, (str, Path)):
        dirs = [data_dir]
    else:
        dirs = list(data_dir)
    found: list[Path] = []
    for d in dirs:
        rdir = results_dir(experiment, d)
        if rdir.is_dir():
            found.extend(p for p in rdir.glob("*.csv") if not p.name.startswith("."))
    return sorted(found, key=lambda p: (p.name, str(p)))


class NoResultsWarning(UserWarning):
    """:func:`load` found no saved run of the experiment (it returns an empty frame)."""


def load(
    experiment: str,
    data_dir: Path | str | Sequence[Path | str] | None = None,
    *,
    env_columns: Sequence[str] = ENV_COLUMNS,
) -> pd.DataFrame:
    """Every saved run of ``experiment`` merged into one DataFrame.

    ``data_dir`` may be a list of data directories (e.g. one per machine).  Each
    row gains ``saved_run`` (the file's stem; ``run`` is already the worker
    that measured the row, :mod:`labkit.measure.workers`), ``host`` and the
    ``env_columns`` of its environment record (prefixed ``env_``).  No runs:
    an empty frame.
    """
    frames = []
    for path in runs(experiment, data_dir):
        df, env = load_run(path)
        df.insert(0, "saved_run", path.stem)
        df.insert(1, "host", env.get("hostname", path.stem.split("-", 1)[-1]))
        for col in env_columns:
            value = env.get(col)
            df[f"env_{col}"] = value if not isinstance(value, (dict, list)) else json.dumps(value)
        frames.append(df)
    if not frames:
        searched = default_data_dirs() if data_dir is None else data_dir
        if isinstance(searched, (str, Path)):
            searched = [searched]
        where = ", ".join(str(results_dir(experiment, d)) for d in searched)
        warnings.warn(
            f"results.load: no runs of {experiment!r} in {where}", NoResultsWarning, stacklevel=2
        )
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True)


__all__ = [
    "ENV_COLUMNS",
    "NoResultsWarning",
    "atomic_write",
    "default_data_dirs",
    "load",
    "load_run",
    "results_dir",
    "runs",
    "save",
]
