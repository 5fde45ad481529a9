"""The results' ledgers: each result's own facts, one CSV file per kind in its folder.

A result's folder (``labkit/results/rN/``, under :func:`labkit.config.results_dir`) holds,
beside its code, the declarations that are its own (:data:`KINDS`; columns in
``labkit/results/README.md``):

* ``published.csv``: its published figures, one row each with its source in the seed mail
  (seed file, mail subject, author and date, and the line and words it is read from):
  :func:`published` reads one as stored.  What a result derives from its table (per-call
  times, the gains its claims compare with) is the result's own (each result's ``seed.py``);
* ``bands.csv``: its claims' declared tolerance bands (:func:`bands`, :func:`claim_band`,
  :class:`Band`): what difference from the published figure still counts as the same
  result, with its reason and source.  Bands come from the claims themselves (their
  wording, the spread of the published samples), not from our measurements, and are the
  same in quick and full mode.  The figure a band surrounds is the claim's
  (``Claim.published``);
* ``setups.csv``: where a claim's setup differs from labkit's, so that its verdict is
  *not comparable* here (:func:`setups`, :func:`mismatches`, :class:`Mismatch`; a result
  with no such row has no file);
* ``evidence.csv``: what each claim's figure compares, and with what (:func:`evidence`,
  :func:`evidence_of`, :class:`Evidence`): what its verdict may say
  (:func:`labkit.measure.verdicts.restate`).

This module reads and checks the ledgers; what a verdict makes of them is
:mod:`labkit.measure.verdicts`'. The ledgers are append-only declarations: an amended band
or a withdrawn setup stays in its file. A reader of one kind reads every result's file of
that kind, result by result (R1, R2, ..., R10), each file's rows in their order:
:func:`rows` is that one reader. A file holds only its own result's rows: a row whose claim
id or ``result`` names another result is refused, naming the file and the line.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

from labkit import config
from labkit.measure.results import READ_CSV_EXACT

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


# ---- the published figures and the bands ------------------------------------------

#: Where a published figure is written: the seed mail (file, subject, author, date), the
#: line of the seed file its words start on, and those words (``source_text``, verbatim but
#: for runs of spaces).
SOURCE_COLUMNS = (
    *("source_file", "source_subject", "source_author", "source_date"),
    *("source_line", "source_text"),
)

#: The results with published figures ("R1", "R2", "R3", ...): every result folder with a
#: ``published.csv``.
RESULTS = tuple(result_of(p) for p in files("published.csv"))


def published(result_id: str) -> pd.DataFrame:
    """The published figures of ``result_id`` (one of :data:`RESULTS`: "R1", "R2", "R3")
    exactly as stored.

    Raises:
        KeyError: for a result with no table; FileNotFoundError: for a missing file.
    """
    rid = str(result_id).upper()
    if rid not in RESULTS:
        raise KeyError(f"unknown result {result_id!r}; expected one of {RESULTS}")
    p = path(rid, "published.csv")
    if not p.exists():
        raise FileNotFoundError(f"published figures for {result_id} not found at {p}")
    return pd.read_csv(p, **READ_CSV_EXACT)


BAND_COLUMNS = (
    "claim",
    "result",
    "band_low",
    "band_high",
    "null",
    "unit",
    "reason",
    "source",
    "declared",
    "declared_in",
    "status",
    "amendment",
)
#: Values of bands.csv's ``status`` column: the band in force, or an earlier one it amended.
BAND_STATUSES = ("in force", "amended")


@dataclass(frozen=True)
class Band:
    """A declared tolerance band around a published figure (or a claim's direction)."""

    claim: str  #: the claim's id, e.g. "R2.saved_share" (:mod:`labkit.claims`)
    result: str
    low: float
    high: float
    null: float  #: the value meaning "no effect" (0 for gains and costs, 1 for ratios)
    unit: str
    reason: str
    source: str
    #: the published figure (the claim's, ``Claim.band``); None for a direction-only band
    published: float | None = None
    declared: str = ""  #: the date the band was first committed (YYYY-MM-DD)
    declared_in: str = ""  #: the commit that first held it ("" while not yet committed)
    status: str = "in force"  #: "in force", or "amended" for a band an amendment replaced
    amendment: str = ""  #: what was amended and why, or when this band was replaced

    @property
    def effect(self) -> float | None:
        """How far the published figure is from no effect (None for a direction-only band)."""
        return None if self.published is None else abs(self.published - self.null)

    def contains(self, value: float) -> bool:
        """``low <= value <= high``."""
        return self.low <= float(value) <= self.high


def bands(*, amended: bool = False) -> pd.DataFrame:
    """The declared tolerance bands in force, one row per claim, read from every result's
    ``bands.csv``; ``amended=True`` adds the earlier bands that an amendment replaced
    (``status`` "amended"), which stay in the file.

    Every row says when it was declared (``declared``, ``declared_in``: the date and
    commit that first held it) and, for an amendment, what it amended and why.

    Raises:
        ValueError: naming the file, for a missing column, a status not in
            :data:`BAND_STATUSES`, a band that is not a number, a row of another result, a
            duplicate claim id among the bands in force, an amended band with no band in
            force, or a band with low >= high.
    """
    found = rows("bands.csv", BAND_COLUMNS)
    records = []
    for row in found:
        if row.fields["status"] not in BAND_STATUSES:
            raise ValueError(
                f"{row.where}: status must be one of {BAND_STATUSES}, got {row.fields['status']!r}"
            )
        try:
            numbers = {c: float(row.fields[c]) for c in _BAND_NUMBERS.values()}
        except ValueError:
            columns = ", ".join(_BAND_NUMBERS.values())
            raise ValueError(f"{row.where}: {columns} must be numbers") from None
        records.append({**row.fields, **numbers})
    df = pd.DataFrame(records) if records else pd.DataFrame(columns=BAND_COLUMNS)
    where = pd.Series([r.where for r in found], dtype=object)

    def problem(mask: pd.Series, what: str) -> None:
        if mask.any():
            raise ValueError(f"{what}: {df.loc[mask, 'claim'].tolist()} ({'; '.join(where[mask])})")

    is_old = df["status"] == "amended"
    in_force = df["claim"].where(~is_old)
    problem(is_old & ~df["claim"].isin(in_force), "amended bands without a band in force")
    problem(~is_old & in_force.duplicated(), "duplicate claim ids among the bands in force")
    problem(~(df["band_low"] < df["band_high"]), "band_low must be < band_high")
    old = df[is_old]
    df = df[~is_old].reset_index(drop=True)
    if amended and len(old):
        df = pd.concat([df, old], ignore_index=True)
    return df


def claim_band(claim_id: str, table: pd.DataFrame | None = None) -> Band | None:
    """The declared band of the claim ``claim_id`` (e.g. "R2.saved_share"), or None.

    ``table``: :func:`bands` read once by a caller that looks up many claims (reading
    and checking every result's bands.csv takes a few milliseconds); None reads it.
    """
    df = bands() if table is None else table
    return _band_of(df[df["claim"] == claim_id])


def amended_bands(claim_id: str) -> list[Band]:
    """The earlier bands of ``claim_id`` that an amendment replaced, oldest first ([] for
    none): a row judged against its band in force is also judged against these (with the
    published figure of the band in force: an amendment moves a band, not the figure)."""
    df = bands(amended=True)
    sel = df[(df["claim"] == claim_id) & (df["status"] == "amended")]
    return [_band_row(r) for _, r in sel.sort_values("declared", kind="stable").iterrows()]


def _band_of(sel: pd.DataFrame) -> Band | None:
    if sel.empty:
        return None
    return _band_row(sel.iloc[0])


#: Band's numeric fields and their columns in bands.csv; its text fields keep their names.
_BAND_NUMBERS = {"low": "band_low", "high": "band_high", "null": "null"}
_BAND_TEXTS = (
    *("claim", "result", "unit", "reason", "source"),
    *("declared", "declared_in", "status", "amendment"),
)


def _band_row(r: pd.Series) -> Band:
    """The Band of one row of bands.csv (its published figure is the claim's)."""
    return Band(
        **{field: float(r[column]) for field, column in _BAND_NUMBERS.items()},
        **{field: str(r[field]) for field in _BAND_TEXTS},
    )


# ---- the setups: where a claim's setup differs from labkit's ---------------------------

SETUP_COLUMNS = (
    "claim",
    "aspect",
    "published",
    "labkit",
    "when",
    "to_compare",
    "source",
    "declared",
    "declared_in",
    "status",
    "after_results",
)
#: Values of setups.csv's ``when`` column.
WHEN = ("always", "quick", "full")
#: Values of setups.csv's ``status`` column: a declaration in force, or one withdrawn (kept
#: in the file).
SETUP_STATUSES = ("in force", "withdrawn")


@dataclass(frozen=True)
class Mismatch:
    """One way labkit's setup differs from the claim's (a row of setups.csv).

    A published figure is measured in a setup: a device, a number of cores, a buffer size.
    Where labkit's differs in a way that moves the figure by construction (R3's peak on 24
    NVMe drives over many cores against /dev/zero on one pinned CPU; a quick-mode 64 MiB
    tail speed-up against a band derived for 1 GiB), a verdict of *differs* would be
    certain before measuring: such a claim is *not comparable*
    (:func:`labkit.measure.verdicts.not_comparable`).  A claim without rows is comparable
    in both modes.  A row made after the claim had been judged says so
    (``after_results``), so that the row shows both verdicts.
    """

    claim: str
    aspect: str  #: device, cores, buffer size, mode
    published: str  #: the claim's setup
    labkit: str  #: labkit's
    when: str  #: one of :data:`WHEN`
    to_compare: str  #: what it would take to compare
    source: str
    declared: str = ""  #: the date the row was first committed
    declared_in: str = ""  #: the commit that first held it ("" while not yet committed)
    status: str = "in force"  #: "in force" or "withdrawn"
    after_results: str = ""  #: what had been judged before it was declared ("" if nothing)

    def holds(self, quick: bool) -> bool:
        """Whether the mismatch holds in this mode."""
        return self.when == "always" or self.when == ("quick" if quick else "full")

    def sentence(self) -> str:
        """``"device: the claim's 24 NVMe drives ..., labkit's /dev/zero"``."""
        return f"{self.aspect}: the claim's {self.published}, labkit's {self.labkit}"


def setups(file: str | Path | None = None) -> list[Mismatch]:
    """Every row of every result's setups.csv (or of the one file ``file``) as a
    :class:`Mismatch`, withdrawn ones included.

    Raises:
        ValueError: naming the file, for a file without the columns :data:`SETUP_COLUMNS`,
            a row of another result, an empty claim or aspect, or a ``when`` or ``status``
            outside :data:`WHEN` and :data:`SETUP_STATUSES`.
    """
    cols = SETUP_COLUMNS
    found = rows("setups.csv", cols) if file is None else read(file, cols)
    out = []
    for row in found:
        m = Mismatch(*(row.fields[c].strip() for c in cols))
        if not m.claim or not m.aspect:
            raise ValueError(f"{row.where}: empty claim or aspect")
        if m.when not in WHEN:
            raise ValueError(f"{row.where}: when must be one of {WHEN}, got {m.when!r}")
        if m.status not in SETUP_STATUSES:
            raise ValueError(
                f"{row.where}: status must be one of {SETUP_STATUSES}, got {m.status!r}"
            )
        out.append(m)
    return out


@cache
def _shipped_setups() -> tuple[Mismatch, ...]:
    return tuple(setups())


def mismatches(claim: str, quick: bool | None = None) -> list[Mismatch]:
    """The declared mismatches of ``claim`` in force in this mode (``quick`` None: the
    run's mode, :func:`labkit.config.quick_mode`); [] when the claim is comparable."""
    q = config.quick_mode(quick)
    return [
        m for m in _shipped_setups() if m.claim == claim and m.status == "in force" and m.holds(q)
    ]


# ---- the evidence: what each claim's figure compares, and with what ---------------------

EVIDENCE_COLUMNS = ("claim", "estimand", "compares", "instrument", "config", "role", "note")
#: What a row compares.
COMPARES = {
    "change": "the change itself, before and after in the same code",
    "era": "one kernel era against another",
    "model": "labkit's model of the code",
    "proxy": "a proxy on a later kernel",
    "other quantity": "a published figure against a figure of another quantity",
}
#: What a row measures with.
INSTRUMENTS = ("booted kernel", "real code in user space", "labkit's model", "live kernel")
#: What a row is for: it judges the claim, or it checks labkit's method.
ROLES = ("claim", "method check")


@dataclass(frozen=True)
class Evidence:
    """What one claim's row compares, with what and where (a row of evidence.csv).

    ``estimand`` is the quantity the published figure is about, in words; ``compares``
    one of :data:`COMPARES`; ``instrument`` one of :data:`INSTRUMENTS`; ``config`` the
    build or setup the figure comes from (the host is the row's scope); ``role`` one of
    :data:`ROLES`: a *method check*'s outcome is fixed by construction, or it only checks
    a direction no one published.
    """

    claim: str
    estimand: str
    compares: str
    instrument: str
    config: str = ""
    role: str = "claim"
    note: str = ""

    def sentence(self) -> str:
        """``"a proxy on a later kernel, with the live kernel (6.18 ...)"``."""
        where = f" ({self.config})" if self.config else ""
        the = "" if self.instrument.startswith("labkit's") else "the "
        return f"{COMPARES[self.compares]}, with {the}{self.instrument}{where}"


def evidence(file: str | Path | None = None) -> dict[str, Evidence]:
    """Every row of every result's evidence.csv (or of the one file ``file``), by claim id.

    Raises:
        ValueError: naming the file, for a missing column, a row of another result, an
            empty claim or estimand, a duplicate claim, or a ``compares``, ``instrument``
            or ``role`` outside the vocabulary.
    """
    cols = EVIDENCE_COLUMNS
    found = rows("evidence.csv", cols) if file is None else read(file, cols)
    out: dict[str, Evidence] = {}
    for row in found:
        ev = Evidence(*(row.fields[c].strip() for c in cols))
        problems = [
            f"{name} {value!r} not one of {sorted(allowed)}"
            for name, value, allowed in (
                ("compares", ev.compares, COMPARES),
                ("instrument", ev.instrument, INSTRUMENTS),
                ("role", ev.role, ROLES),
            )
            if value not in allowed
        ]
        if not ev.claim or not ev.estimand:
            problems.append("empty claim or estimand")
        if ev.claim in out:
            problems.append(f"claim {ev.claim} twice")
        if problems:
            raise ValueError(f"{row.where}: {'; '.join(problems)}")
        out[ev.claim] = ev
    return out


@cache
def _shipped_evidence() -> dict[str, Evidence]:
    return evidence()


def evidence_of(claim: str | None) -> Evidence | None:
    """The declared evidence of ``claim`` (None for no claim or no row)."""
    return _shipped_evidence().get(claim) if claim else None


__all__ = [
    "BAND_STATUSES",
    "Band",
    "Evidence",
    "Mismatch",
    "amended_bands",
    "bands",
    "claim_band",
    "evidence",
    "evidence_of",
    "files",
    "mismatches",
    "path",
    "published",
    "result_of",
    "rows",
    "setups",
]
