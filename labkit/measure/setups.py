"""Is a claim comparable here?  Its declared setup against labkit's, decided before measuring.

A published figure is measured in a setup: a device, a number of cores, a buffer
size.  Where labkit's setup differs in a way that moves the figure by
construction (R3's peak on 24 NVMe drives over many cores against /dev/zero on
one pinned CPU; a quick-mode 64 MiB tail speed-up against a band derived for
1 GiB), a verdict of *differs* would be certain before measuring and says
nothing about the kernel change.  Such a claim is **not comparable**
(:func:`labkit.measure.verdicts.not_comparable`): the row still shows labkit's
figure, with what it would take to make it comparable.

Each result's ``setups.csv`` (its ledger in ``labkit/results/rN/``,
:mod:`labkit.measure.ledgers`; a result with no mismatch has none) declares the
mismatches, one row per (claim, aspect): the claim id, the aspect (device, cores,
buffer size, mode), the published setup, labkit's, ``when`` the mismatch holds
(``always``, ``quick`` or ``full``), what it would take to compare (``to_compare``) and
the source.
A claim without rows is comparable in both modes.  Each row also says when it was
declared (``declared``, ``declared_in``: the date and commit that first held it), its
``status`` (``in force``, or ``withdrawn``: kept in the file, no longer applied) and
``after_results``: what had already been judged when it was declared ("" for nothing),
so that a row made *not comparable* after it had differed shows both verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from labkit import config
from labkit.measure import ledgers

#: Columns of setups.csv.
COLUMNS = (
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
#: Values of its ``when`` column.
WHEN = ("always", "quick", "full")
#: Values of its ``status`` column: a declaration in force, or one withdrawn (kept in the file).
STATUSES = ("in force", "withdrawn")


@dataclass(frozen=True)
class Mismatch:
    """One way labkit's setup differs from the claim's (a row of setups.csv)."""

    claim: str
    aspect: str
    published: str
    labkit: str
    when: str
    to_compare: str
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


def load(path: str | Path | None = None) -> list[Mismatch]:
    """Every row of every result's setups.csv (or of the one file ``path``) as a
    :class:`Mismatch`.

    Raises:
        ValueError: naming the file, for a file without the columns :data:`COLUMNS`, a
            row of another result, an empty claim or aspect, or a ``when`` not in
            :data:`WHEN`.
    """
    found = ledgers.rows("setups.csv", COLUMNS) if path is None else ledgers.read(path, COLUMNS)
    out = []
    for row in found:
        m = Mismatch(*(row.fields[c].strip() for c in COLUMNS))
        if not m.claim or not m.aspect:
            raise ValueError(f"{row.where}: empty claim or aspect")
        if m.when not in WHEN:
            raise ValueError(f"{row.where}: when must be one of {WHEN}, got {m.when!r}")
        if m.status not in STATUSES:
            raise ValueError(f"{row.where}: status must be one of {STATUSES}, got {m.status!r}")
        out.append(m)
    return out


@cache
def _shipped() -> tuple[Mismatch, ...]:
    return tuple(load())


def mismatches(claim: str, quick: bool | None = None) -> list[Mismatch]:
    """The declared mismatches of ``claim`` that hold in this mode (``quick`` None: the
    run's mode, :func:`labkit.config.quick_mode`); [] when the claim is comparable."""
    q = config.quick_mode(quick)
    return [m for m in _shipped() if m.claim == claim and m.status == "in force" and m.holds(q)]


def why_not_comparable(found: list[Mismatch]) -> tuple[str, str]:
    """(what differs, what it would take) for a non-empty list of mismatches."""
    return (
        "; ".join(m.sentence() for m in found),
        "; ".join(dict.fromkeys(m.to_compare for m in found)),
    )


__all__ = [
    "mismatches",
]
