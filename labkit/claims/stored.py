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
included), and reading it back runs no code, whoever wrote the folder.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from labkit import _files, config

#: The folder under a reproduction's output root.
FOLDER = "measured"
INDEX = "index.json"
#: The largest rows file read back (bytes).
MAX_BYTES = 1 << 30


@dataclass(frozen=True)
class Stored:
    """One experiment's rows, measured by a reproduction's measuring phase."""

    experiment: str  #: the experiment's id
    key: str  #: its parameters (:meth:`labkit.experiments.params.Params.key`)
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
) -> Path:
    """Write ``entries`` (experiment id, parameters key, rows, confidence, note, and
    optionally the seconds its runs took) into ``<out>/measured/``, the index last;
    returns the folder.

    Raises:
        OSError: when a file cannot be written (the index is then not written).
    """
    where = folder(out)
    assert where is not None
    _files.make_dirs(where, root=out)
    index: dict[str, Any] = {"quick": bool(quick), "sessions": list(sessions), "entries": []}
    for exp_id, key, data, confidence, note, *rest in entries:
        name = file_name(exp_id, key)
        _files.atomic_write(where / name, _to_json(data), root=out)
        seconds = float(rest[0]) if rest else float("nan")
        index["entries"].append(
            {"experiment": exp_id, "key": key, "file": name, "confidence": confidence}
            | {"note": note, "n_rows": len(data)}
            | ({} if seconds != seconds else {"seconds": round(seconds, 2)})
        )
    _files.atomic_write(where / INDEX, json.dumps(index, indent=1) + "\n", root=out)
    return where


def clear(out: str | Path) -> None:
    """Remove the index of ``<out>/measured`` (so no notebook reads an older phase's rows)."""
    where = folder(out)
    if where is not None and (where / INDEX).exists():
        _files.remove(where / INDEX, root=out)


def _index(where: Path) -> dict[str, Any] | None:
    try:
        return json.loads(_files.read_regular(where / INDEX, 1 << 24))
    except (OSError, ValueError):
        return None


def load(experiment: str, key: str, quick: bool, out: str | Path | None = None) -> Stored | None:
    """The stored rows of (experiment, parameters) in this reproduction and mode, or None
    (not under a reproduction, no measuring phase, another mode, not measured there)."""
    where = folder(out)
    if where is None:
        return None
    index = _index(where)
    if not index or bool(index.get("quick")) != bool(quick):
        return None
    for e in index.get("entries", []):
        if e.get("experiment") == experiment and e.get("key") == key:
            data = _from_json(_files.read_regular(where / str(e["file"]), MAX_BYTES))
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
