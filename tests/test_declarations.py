"""The results' bands.csv and setups.csv are declarations: every band and setup row ever
committed stays in its result's file, and each row names the commit that first held it
(checked against git).

The ledgers were one file each, ``data/published/bands.csv`` and ``setups.csv``, before each
result's rows moved into its own folder (``labkit/results/rN/``): the history read here is
the old file's, then every result's file at each commit that changed one."""

from __future__ import annotations

import csv
import io
import re
import subprocess
from pathlib import Path

import pytest

from labkit.measure import ledgers

ROOT = Path(__file__).resolve().parents[1]
BANDS = "bands.csv"
SETUPS = "setups.csv"
#: Where all results' rows of a ledger were, before each result's folder held its own.
FORMER = "data/published"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout


def _committed(commit: str, kind: str) -> list[str]:
    """The paths of the ledger ``kind`` at ``commit``: the former file, then each result's."""
    names = _git("ls-tree", "-r", "--name-only", commit, "--", FORMER, "labkit/results")
    own = re.compile(rf"labkit/results/r(\d+)/{re.escape(kind)}")
    found = [n for n in names.splitlines() if own.fullmatch(n)]
    found.sort(key=lambda n: int(own.fullmatch(n).group(1)))
    return [n for n in names.splitlines() if n == f"{FORMER}/{kind}"] + found


def _history(kind: str) -> list[tuple[str, str, list[dict[str, str]]]]:
    """(short commit, date, rows) of every committed version of the ledger ``kind`` (all
    results' rows at that commit), oldest first."""
    try:
        if _git("rev-parse", "--is-shallow-repository").strip() == "true":
            pytest.skip("a shallow clone: the declarations' history is not here")
        paths = (f"{FORMER}/{kind}", f"labkit/results/*/{kind}")
        log = _git("log", "--reverse", "--format=%h %ad", "--date=short", "--", *paths)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the declarations' history is not here")
    out = []
    for line in log.splitlines():
        commit, date = line.split()
        rows = []
        for path in _committed(commit, kind):
            rows += csv.DictReader(io.StringIO(_git("show", f"{commit}:{path}")))
        out.append((commit, date, rows))
    return out


def _rows(kind: str) -> list[dict[str, str]]:
    """Every result's rows of the ledger ``kind`` in the working tree."""
    rows: list[dict[str, str]] = []
    for path in ledgers.files(kind):
        with open(path, newline="") as f:
            rows += csv.DictReader(f)
    return rows


def _first(history, key) -> dict[tuple, tuple[str, str]]:
    """The first (commit, date) of each key over the history."""
    seen: dict[tuple, tuple[str, str]] = {}
    for commit, date, rows in history:
        for r in rows:
            k = key(r)
            if k is not None:
                seen.setdefault(k, (commit, date))
    return seen


def _band_key(history):
    """A band's key (claim, low, high); rows from before claim ids map by their quantity."""
    names = {(r["result"], r.get("quantity")): r["claim"] for _, _, rs in history for r in rs
             if r.get("claim")}  # fmt: skip

    def key(r: dict[str, str]) -> tuple | None:
        claim = r.get("claim") or names.get((r["result"], r.get("quantity")))
        return (claim, float(r["band_low"]), float(r["band_high"])) if claim else None

    return key


def unrecorded_band_changes(rows, history) -> list[str]:
    """Bands committed once but missing from ``rows``, and rows whose declared commit
    is not the one that first held their band ("" for a band not committed yet)."""
    key = _band_key(history)
    first = _first(history, key)
    have = {key(r): r for r in rows}
    problems = [f"{k[0]} [{k[1]:g}, {k[2]:g}] of {c} is gone" for k, (c, _) in first.items()
                if k not in have]  # fmt: skip
    for k, r in have.items():
        want = first.get(k, ("", r["declared"]))
        if (r["declared_in"], r["declared"]) != want:
            problems.append(f"{k[0]} [{k[1]:g}, {k[2]:g}] says {r['declared_in']}, git {want}")
    return problems


def test_every_band_ever_committed_stays_with_its_declaration():
    assert unrecorded_band_changes(_rows(BANDS), _history(BANDS)) == []


def test_a_band_changed_without_an_amendment_line_is_caught():
    rows = _rows(BANDS)
    planted = [dict(r) for r in rows]
    share = next(r for r in planted if r["claim"] == "R2.saved_share")
    share["band_low"] = "2.0"  # widened in place: the old band is no longer in the file
    found = unrecorded_band_changes(planted, _history(BANDS))
    assert any(p.startswith("R2.saved_share [2.5, 3.5]") and "gone" in p for p in found)
    # the old band kept as an amended row, the new one not yet committed: recorded
    share["declared_in"] = ""
    old = next(r for r in rows if r["claim"] == "R2.saved_share")
    assert unrecorded_band_changes([*planted, dict(old, status="amended")], _history(BANDS)) == []


def test_every_setup_ever_committed_stays_with_its_declaration():
    history = _history(SETUPS)
    first = _first(history, lambda r: (r["claim"], r["aspect"]))
    rows = {(r["claim"], r["aspect"]): r for r in _rows(SETUPS)}
    assert sorted(set(first) - set(rows)) == []
    for k, r in rows.items():
        assert (r["declared_in"], r["declared"]) == first.get(k, ("", r["declared"])), k
