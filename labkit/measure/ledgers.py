"""The results' ledgers: each result's own facts, one CSV file per kind in its folder.

A result's folder (``labkit/results/rN/``, under :func:`labkit.config.results_dir`) holds,
beside its code, the declarations that are its own (:data:`KINDS`; columns in
``labkit/results/README.md``):

* ``published.csv``: its published figures, one row each with its source in the seed mail
  (read by :func:`labkit.published.load`);
* ``bands.csv``: its claims' declared tolerance bands (:func:`labkit.published.bands`);
* ``setups.csv``: where a claim's setup differs from labkit's (:mod:`labkit.measure.setups`;
  a result with no such row has no file);
* ``evidence.csv``: what each claim's figure compares, and with what
  (:mod:`labkit.measure.evidence`).

The ledgers are append-only declarations: an amended band or a withdrawn setup stays in its
file.  A reader of one kind reads every result's file of that kind, result by result (R1,
R2, ..., R10), each file's rows in their order: :func:`rows` is that one reader.  A file
holds only its own result's rows: a row whose claim id or ``result`` names another result
is refused, naming the file and the line.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from labkit import config

#: The ledgers a result's folder may hold.
KINDS = ("published.csv", "bands.csv", "setups.csv", "evidence.csv")


@dataclass(frozen=True)
class Row:
    """One row of a ledger, as text (an empty cell is ""), with where it was read."""

    path: Path
    line: int  #: the row's number in its file, the header being line 1
    fields: dict[str, str]

    @property
    def where(self) -> str:
        """``".../labkit/results/r2/bands.csv line 3"``."""
        return f"{self.path} line {self.line}"


def result_of(path: Path) -> str:
    """The result whose ledger ``path`` is: "R2" for ``.../results/r2/bands.csv``."""
    return path.parent.name.upper()


def path(result_id: str, kind: str) -> Path:
    """Where the ledger ``kind`` of ``result_id`` ("R2") is, whether or not it exists."""
    return config.results_dir() / str(result_id).lower() / kind


def files(kind: str) -> list[Path]:
    """Every result's ledger ``kind`` (one of :data:`KINDS`), ordered by result number.

    Raises:
        KeyError: for a kind not in :data:`KINDS`.
    """
    if kind not in KINDS:
        raise KeyError(f"unknown ledger {kind!r}; expected one of {KINDS}")
    found = [p for p in config.results_dir().glob(f"r*/{kind}") if p.parent.name[1:].isdigit()]
    return sorted(found, key=lambda p: int(p.parent.name[1:]))


def read(file: str | Path, columns: Sequence[str]) -> list[Row]:
    """The rows of one CSV file, each cell as text.

    Raises:
        OSError: for a file that cannot be read; ValueError: naming the file, for a
            missing column among ``columns`` or a row with more cells than the header.
    """
    p = Path(file)
    with open(p, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = set(columns) - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{p}: no column(s) {sorted(missing)}")
        out = []
        for n, r in enumerate(reader, start=2):
            if None in r:
                raise ValueError(f"{p} line {n}: more cells than the header has columns")
            out.append(Row(p, n, {k: v or "" for k, v in r.items()}))
    return out


def rows(kind: str, columns: Sequence[str]) -> list[Row]:
    """Every row of every result's ledger ``kind``, result by result (:func:`files`).

    Raises:
        ValueError: naming the file, as :func:`read` does, and for a row of another
            result (its ``claim`` id's prefix or its ``result`` is not the folder's).
    """
    out = []
    for p in files(kind):
        own = result_of(p)
        for row in read(p, columns):
            claim, result = row.fields.get("claim"), row.fields.get("result")
            other = {claim.split(".")[0] if claim else own, result or own} - {own}
            if other:
                raise ValueError(f"{row.where}: a row of {sorted(other)} in {own}'s ledger")
            out.append(row)
    return out


#: ``read`` serves its siblings setups and evidence (a file named by its caller).
__all__ = ["files", "path", "result_of", "rows"]
