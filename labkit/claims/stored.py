"""Measurements handed from a reproduction's measuring phase to its notebooks.

``labkit reproduce`` measures every timed experiment before the notebooks run
(:mod:`labkit.claims.schedule`: the runs of different experiments interleaved,
the phase repeated once per session) and writes what it measured into
``<out>/measured/``: one file of rows per (experiment, parameters), and
``index.json`` naming them with the mode, the sessions and how the runs
stopped.  A notebook's session (:class:`labkit.claims.engine.Session`) then
reads an experiment's rows from there instead of measuring, when it runs
under that reproduction (``LABKIT_OUT`` names the folder, set by ``labkit
reproduce``) in the same mode.  A notebook run alone (no ``LABKIT_OUT``, or no
``measured/`` in it, as under nbval) measures as it always did.

The rows are JSON in pandas' "table" orientation (a Table Schema beside the
data): it keeps the columns' types (ordered categoricals of the variants
included), and reading it back runs no code, whoever wrote the folder.  The
index records each file's sha256 and row count, and :func:`load` checks both
(:class:`StoredRowsError` names a file that was altered or cut); an experiment
whose runs failed is in the index with its cause, and :func:`load` raises
:class:`MeasurementFailed` saying it.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from labkit import _files, _untrusted, config

#: The folder under a reproduction's output root.
FOLDER = "measured"
INDEX = "index.json"
#: The largest rows file read back (bytes).
MAX_BYTES = 1 << 30


class StoredRowsError(_untrusted.UntrustedFileError):
    """Stored rows that are not what the measuring phase wrote (altered, cut, malformed)."""


class MeasurementFailed(RuntimeError):
    """The measuring phase's runs of an experiment failed; the message gives the cause."""


@dataclass(frozen=True)
class Stored:
    """One experiment's rows, measured by a reproduction's measuring phase."""

    experiment: str  #: the experiment's id
    key: str  #: its parameters (:meth:`labkit.measure.experiment.Params.key`)
    data: pd.DataFrame  #: every row of every session (``session`` and ``run`` columns)
    confidence: float  #: per-look confidence its runs were decided on (one session)
    note: str  #: how the runs stopped, per session, in words
    sessions: tuple[str, ...]  #: the sessions, in order


def file_name(experiment: str, key: str) -> str:
    """The rows file of (experiment, parameters): the id and a hash of the parameters."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return f"{experiment}.{digest}.json"


def _to_json(data: pd.DataFrame) -> str:
    return data.reset_index(drop=True).to_json(orient="table", index=False)


def _from_json(raw: bytes) -> pd.DataFrame:
    return pd.read_json(io.StringIO(raw.decode()), orient="table")


def folder(out: str | Path | None = None) -> Path | None:
    """``<out>/measured`` (``out`` defaults to ``LABKIT_OUT``), or None outside a
    reproduction."""
    root = Path(out) if out is not None else config.out_setting()
    return None if root is None else root / FOLDER


def write(
    out: str | Path,
    quick: bool,
    sessions: list[str],
    entries: list[tuple[Any, ...]],
    *,
    failed: dict[tuple[str, str], str] | None = None,
) -> Path:
    """Write ``entries`` (experiment id, parameters key, rows, confidence, note, and
    optionally the seconds its runs took) into ``<out>/measured/``, the index last;
    returns the folder.  ``failed`` maps (experiment id, parameters key) to why its
    runs failed: recorded in the index instead of rows.

    Raises:
        OSError: when a file cannot be written (the index is then not written).
    """
    where = folder(out)
    assert where is not None
    _files.make_dirs(where, root=out)
    index: dict[str, Any] = {"quick": bool(quick), "sessions": list(sessions), "entries": []}
    for exp_id, key, data, confidence, note, *rest in entries:
        name = file_name(exp_id, key)
        text = _to_json(data).encode()
        _files.atomic_write(where / name, text, root=out)
        seconds = float(rest[0]) if rest else float("nan")
        index["entries"].append(
            {"experiment": exp_id, "key": key, "file": name, "confidence": confidence}
            | {"note": note, "n_rows": len(data), "sha256": hashlib.sha256(text).hexdigest()}
            | ({} if seconds != seconds else {"seconds": round(seconds, 2)})
        )
    for (exp_id, key), cause in (failed or {}).items():
        index["entries"].append({"experiment": exp_id, "key": key, "failed": str(cause)})
    _files.atomic_write(where / INDEX, json.dumps(index, indent=1) + "\n", root=out)
    return where


def clear(out: str | Path) -> None:
    """Remove the index of ``<out>/measured`` (so no notebook reads an older phase's rows)."""
    where = folder(out)
    if where is not None and (where / INDEX).exists():
        _files.remove(where / INDEX, root=out)


def _index(where: Path) -> dict[str, Any] | None:
    """The index (None if there is none); StoredRowsError if it is not what write() makes."""
    path = where / INDEX
    if where.is_symlink():
        raise StoredRowsError(where, f"a symbolic link (refused, never followed); {_RERUN}")
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        index = _untrusted.read_json(path, "index of the measured rows", limit=1 << 24)
    except _untrusted.UntrustedFileError as exc:
        raise StoredRowsError(exc.path, f"{exc.reason}; {_RERUN}") from None
    if not isinstance(index.get("entries", []), list) or not all(
        isinstance(e, dict) for e in index.get("entries", [])
    ):
        raise StoredRowsError(path, f"its 'entries' is not a list of objects; {_RERUN}")
    return index


_RERUN = "run labkit reproduce again to measure anew"


def _rows(where: Path, e: dict[str, Any]) -> pd.DataFrame:
    """The rows of index entry ``e``, checked against its sha256 and row count."""
    path = where / str(e.get("file"))
    if "/" in str(e.get("file")) or str(e.get("file")) in ("", ".", ".."):
        raise StoredRowsError(where / INDEX, f"names a file outside the folder; {_RERUN}")
    raw = _untrusted.read_bytes(path, MAX_BYTES, "stored rows")
    if "sha256" not in e or hashlib.sha256(raw).hexdigest() != e["sha256"]:
        raise StoredRowsError(path, f"not the rows the measuring phase wrote (sha256); {_RERUN}")
    try:
        data = _from_json(raw)
    except Exception as exc:  # noqa: BLE001 - whatever pandas makes of it: named, refused
        raise StoredRowsError(path, f"not readable rows ({type(exc).__name__}); {_RERUN}") from None
    if len(data) != e.get("n_rows"):
        raise StoredRowsError(
            path, f"{len(data)} rows where the index records {e.get('n_rows')}; {_RERUN}"
        )
    return data


def load(experiment: str, key: str, quick: bool, out: str | Path | None = None) -> Stored | None:
    """The stored rows of (experiment, parameters) in this reproduction and mode, or None
    (not under a reproduction, no measuring phase, another mode, not measured there).

    Raises:
        StoredRowsError: the rows or the index were altered, cut or are malformed.
        MeasurementFailed: the measuring phase's runs of it failed (the cause is given).
    """
    where = folder(out)
    if where is None:
        return None
    index = _index(where)
    if not index or bool(index.get("quick")) != bool(quick):
        return None
    for e in index.get("entries", []):
        if e.get("experiment") == experiment and e.get("key") == key:
            if "failed" in e:
                raise MeasurementFailed(
                    f"{experiment}: the measuring phase's runs failed: {e['failed']}"
                )
            data = _rows(where, e)
            return Stored(
                experiment,
                key,
                data,
                float(e["confidence"]),
                str(e.get("note", "")),
                tuple(index.get("sessions", [])),
            )
    return None


# load: benchmarks/aa_calibration.py; the engine and the phase (siblings) use the rest
__all__ = ["load"]
