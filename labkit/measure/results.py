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
import io
import json
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from labkit import _files, _untrusted, config
from labkit._untrusted import UntrustedFileError
from labkit.measure.envinfo import environment
from labkit.measure.runner import COLUMNS

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


def check_writable(experiment: str, data_dir: Path | str | None = None) -> Path:
    """Create ``experiment``'s results directory and check that a file can be written there.

    Call it before measuring, so that a bad ``LABKIT_DATA`` (a file, a
    read-only folder, ``/proc/self``) is found before the results exist,
    not after.  Returns the directory.

    Raises:
        OSError: with the errno of the failure and a message naming the
            directory (and ``LABKIT_DATA`` when the directory comes from it).
    """
    out = results_dir(experiment, data_dir)
    env = config.data_dir_setting() if data_dir is None else None
    where = f"{out} (LABKIT_DATA={env})" if env else str(out)
    try:
        _files.make_dirs(out, out.parent.parent)  # no planted link below the data dir
        fd, probe = tempfile.mkstemp(prefix=".labkit-write-check.", suffix=".tmp", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OSError(
            exc.errno, f"cannot write results to {where}: {exc.strerror or exc}"
        ) from None
    return out


def atomic_write(
    path: Path | str, write: Callable[[IO[str]], Any], *, root: Path | str | None = None
) -> Path:
    """Create ``path`` with the text ``write(f)`` puts in ``f``, atomically.

    :func:`labkit._files.atomic_write` (the one home of safe writes): a new
    temporary file in the same directory, fsynced, then renamed over ``path``;
    if ``write`` raises (or the process dies) ``path`` is untouched.  Links
    below ``root`` (default: ``path``'s folder) and at ``path`` are refused.
    """
    return _files.atomic_write(path, write, root=root)


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
        env = environment()
    out_dir = results_dir(experiment, data_dir)
    stem = (
        f"{_safe_name(timestamp or _stamp(), 'timestamp')}-"
        f"{_safe_name(host or env.get('hostname') or 'unknown', 'host')}"
    )
    base = out_dir.parent.parent  # the data dir: no link below it is followed
    csv_path = out_dir / f"{stem}.csv"
    k = 1
    while True:  # the name is reserved by creating its .json: notebooks run side by side
        if not csv_path.exists():  # may save the same experiment in the same second
            try:
                _files.open_file(csv_path.with_suffix(".json"), "xb", root=base).close()
                break
            except FileExistsError:
                pass
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
        root=base,
    )
    atomic_write(csv_path, lambda f: df.to_csv(f, index=False), root=base)
    return csv_path


def save_all(
    frames: dict[str, pd.DataFrame | None],
    *,
    env: dict[str, Any] | None = None,
    data_dir: Path | str | None = None,
) -> str:
    """:func:`save` each ``experiment: frame`` (a None frame is skipped, as an experiment
    that did not run) with one environment record, and say what was written where.

    Returns one line for a reader, e.g. ``"saved 4 result files under
    /home/me/labkit-results/results: live-syscalls, ..."``: where the results went,
    whether in a clone, an installed package's output folder or ``$LABKIT_DATA``.
    """
    if env is None:
        env = environment()
    kept = {k: v for k, v in frames.items() if v is not None}
    for name, frame in kept.items():
        save(name, frame, env=env, data_dir=data_dir)
    where = Path(data_dir) if data_dir is not None else config.data_dir()
    return f"saved {len(kept)} result files under {where / 'results'}: {', '.join(kept)}"


class ResultFileError(UntrustedFileError):
    """A saved result file that does not hold what :func:`save` writes.

    Attributes:
        path: the file at fault (the CSV, or its JSON record).
        reason: what is wrong with it, in a few words.
    """


#: Largest result table :func:`load_run` reads (labkit's largest is a few MB).
MAX_CSV_BYTES = 256 << 20
#: Largest environment record read.
MAX_RECORD_BYTES = 4 << 20


def _read_text(path: Path, what: str) -> str:
    limit = MAX_RECORD_BYTES if path.suffix == ".json" else MAX_CSV_BYTES
    try:
        return _untrusted.read_text(path, limit, what)  # regular file, bounded, UTF-8
    except UntrustedFileError as exc:
        raise ResultFileError(exc.path, exc.reason) from None


def _read_record(json_path: Path) -> dict[str, Any] | None:
    """The JSON record beside a CSV, checked to be what :func:`save` writes; None if absent."""
    if not (json_path.exists() or json_path.is_symlink()):
        return None
    text = _read_text(json_path, "environment record")
    try:
        record = _untrusted.parse_json(text, json_path, "environment record")
    except UntrustedFileError as exc:
        raise ResultFileError(exc.path, exc.reason) from None
    env, rows, columns = record.get("env", {}), record.get("rows"), record.get("columns")
    if not isinstance(env, dict):
        raise ResultFileError(json_path, "its 'env' is not an object")
    host = env.get("hostname")
    if host is not None and not isinstance(host, str):
        raise ResultFileError(json_path, f"its host name is a {type(host).__name__}, not a text")
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
        raise ResultFileError(json_path, f"its 'rows' is not a count: {rows!r}")
    if columns is not None and (
        not isinstance(columns, list) or not all(isinstance(c, str) for c in columns)
    ):
        raise ResultFileError(json_path, "its 'columns' is not a list of names")
    return record


def load_run(
    csv_path: Path | str,
    *,
    required: Sequence[str] = (),
    experiment: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One saved run: (its DataFrame, its environment record; {} if the JSON is missing).

    Each file is checked against what :func:`save` writes: UTF-8 text, not
    empty, the last row complete (ending with a newline), the header, row
    count and experiment of its JSON record (when there is one), and the
    ``required`` columns; ``ns_per_op``, where present, must be finite
    numbers >= 0 and ``repeat`` integers.

    Raises:
        ResultFileError: (a ValueError) naming the bad file and what is wrong.
    """
    csv_path = Path(csv_path)
    text = _read_text(csv_path, "CSV file")
    if not text.endswith("\n"):
        raise ResultFileError(csv_path, "truncated: the last row does not end with a newline")
    try:
        _untrusted.check_csv_fields(text, csv_path)  # no row wider than the header
    except UntrustedFileError as exc:
        raise ResultFileError(exc.path, exc.reason) from None
    try:
        df = pd.read_csv(io.StringIO(text), **READ_CSV_EXACT)
    except Exception as exc:  # noqa: BLE001 - whatever pandas makes of it: named, refused
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ResultFileError(csv_path, f"not a readable CSV table ({first})") from None
    record = _read_record(csv_path.with_suffix(".json"))
    _check_frame(csv_path, df, record, required, experiment)
    env: dict[str, Any] = record.get("env", {}) if record is not None else {}
    return df, env


def default_data_dirs() -> list[Path]:
    """Where :func:`runs` looks by default: the user's data dir, then labkit's reference results."""
    dirs = [config.data_dir(), config.reference_data_dir()]
    return [d for k, d in enumerate(dirs) if d.resolve() not in {e.resolve() for e in dirs[:k]}]


def _check_frame(
    path: Path,
    df: pd.DataFrame,
    record: dict[str, Any] | None,
    required: Sequence[str],
    experiment: str | None,
) -> None:
    columns = list(map(str, df.columns))
    missing = [c for c in required if c not in columns]
    if missing:
        raise ResultFileError(path, f"another schema: no column {', '.join(missing)}")
    if record is not None:
        if record.get("columns") is not None and record["columns"] != columns:
            raise ResultFileError(
                path, f"its columns {columns} are not its record's {record['columns']}"
            )
        if record.get("rows") is not None and record["rows"] != len(df):
            raise ResultFileError(
                path, f"{len(df)} rows where its record says {record['rows']} (truncated?)"
            )
        if experiment is not None and record.get("experiment") not in (None, experiment):
            raise ResultFileError(path, f"a run of {record['experiment']!r}, not of {experiment!r}")
    if "ns_per_op" in df.columns and len(df):
        ns = pd.to_numeric(df["ns_per_op"], errors="coerce")
        if ns.isna().any() or not np.isfinite(ns).all() or (ns < 0).any():
            raise ResultFileError(path, "ns_per_op holds values that are not finite numbers >= 0")
    if "repeat" in df.columns and len(df) and not pd.api.types.is_integer_dtype(df["repeat"]):
        raise ResultFileError(path, "repeat holds values that are not integers")


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


def _load_for_merge(
    path: Path, required: Sequence[str], experiment: str, env_columns: Sequence[str]
) -> pd.DataFrame:
    """One run with the columns :func:`load` adds; every failure a :class:`ResultFileError`."""
    df, env = load_run(path, required=required, experiment=experiment)
    added = ["saved_run", "host", *(f"env_{c}" for c in env_columns)]
    clash = [c for c in added if c in df.columns]
    if clash:
        raise ResultFileError(path, f"it already has the column(s) {', '.join(clash)}")
    df.insert(0, "saved_run", path.stem)
    df.insert(1, "host", env.get("hostname", path.stem.split("-", 1)[-1]))
    for col in env_columns:
        value = env.get(col)
        df[f"env_{col}"] = value if not isinstance(value, (dict, list)) else json.dumps(value)
    return df


def load(
    experiment: str,
    data_dir: Path | str | Sequence[Path | str] | None = None,
    *,
    env_columns: Sequence[str] = ENV_COLUMNS,
    required: Sequence[str] = COLUMNS,
    bad: str = "raise",
) -> pd.DataFrame:
    """Every saved run of ``experiment`` merged into one DataFrame.

    ``data_dir`` may be a list of data directories (e.g. one per machine).  Each
    row gains ``saved_run`` (the file's stem; ``run`` is already the worker
    that measured the row, :mod:`labkit.measure.workers`), ``host`` and the
    ``env_columns`` of its environment record (prefixed ``env_``).  No runs:
    an empty frame.

    Every file is validated first (see :func:`load_run`; ``required`` are the
    columns every run must have, by default those of
    :func:`labkit.measure.runner.run`).  A bad file is refused
    (``bad="raise"``: :class:`ResultFileError` naming it) or left out
    (``bad="skip"``: a :class:`ResultFileWarning` names it, and the frame's
    ``attrs["skipped"]`` lists ``(path, reason)`` pairs).
    """
    if bad not in ("raise", "skip"):
        raise ValueError(f"bad must be 'raise' or 'skip', got {bad!r}")
    frames, skipped = [], []
    for path in runs(experiment, data_dir):
        try:
            frames.append(_load_for_merge(path, required, experiment, env_columns))
        except ResultFileError as exc:
            if bad == "raise":
                raise
            warnings.warn(str(exc), ResultFileWarning, stacklevel=2)
            skipped.append((exc.path, exc.reason))
    if not frames:
        searched = default_data_dirs() if data_dir is None else data_dir
        if isinstance(searched, (str, Path)):
            searched = [searched]
        where = ", ".join(str(results_dir(experiment, d)) for d in searched)
        warnings.warn(
            f"results.load: no runs of {experiment!r} in {where}", NoResultsWarning, stacklevel=2
        )
        empty = pd.DataFrame()
        empty.attrs["skipped"] = skipped
        return empty
    merged = pd.concat(frames, ignore_index=True)
    merged.attrs["skipped"] = skipped
    return merged


class ResultFileWarning(UserWarning):
    """A result file :func:`load` left out (``bad="skip"``)."""


__all__ = [
    "NoResultsWarning",
    "check_writable",
    "load",
    "load_run",
    "runs",
    "save",
    "save_all",
]
