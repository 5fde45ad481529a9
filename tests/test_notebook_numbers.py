"""Numbers in a notebook's prose are never typed measurements.

Wherever a notebook quotes a figure this run measured, the figure is rendered from the run's
own results (a code cell calling ``labkit.claims.markdown``), so a rerun can never leave the
text behind the output.  What a Markdown cell may still spell out:

* a published figure: any number in a result's ledgers (``labkit/results/rN/*.csv``:
  figures, bands and their reasons) or in the seed mails (``data/seeds/*.txt``), or one of
  the derived published figures of each result (``labkit.results.rN.seed``); at the
  precision it is written, and in the units a reader meets it in (ns as us, IOPS in
  millions, fractions in %);
* a constant of the method (:data:`METHOD`, a short declared list);
* a structural number: a year, a kernel version, a section or notebook number, a small
  count (0-4).

Inline code and links are not prose (a file name, a call's arguments).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labkit import claims
from labkit.core.memory import PAGE_SIZE
from labkit.measure.sequential import FULL_MIN_RUNS
from labkit.results.r1 import seed as r1_seed
from labkit.results.r2 import seed as r2_seed
from labkit.results.r3 import seed as r3_seed

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [
    ROOT / "notebooks" / f"{n}.ipynb"
    for n in ("02-fixed-buffer-seek", "03-ubuf-import", "04-live-kernel")
]

#: Constants of the method a notebook explains in words: the page and its halves, the
#: pieces of a 2 MiB folio, bytes per KiB, the confidence, calls per batch, the io_uring
#: batch (fio's t/io_uring), the fewest runs behind a full-mode verdict, the quick
#: buffer (64 MiB), the iovecs the kernel keeps on its stack (8) and its cap (1024).
METHOD = {PAGE_SIZE, PAGE_SIZE // 2, 512, 1024, 95, 1_000, 32, FULL_MIN_RUNS, 64, 8}
#: Kernel versions named in the text.
VERSIONS = {"5.1", "5.2", "6.0", "6.1", "6.3", "6.4", "6.12", "6.18"}

NUMBER = re.compile(r"(?<![\w.,/#-])[~+]?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d,]*\.?\d)(?!\.\d)")
CODE = re.compile(r"`[^`]*`|\]\([^)]*\)|https?://\S+")
#: A section number or a numbered list item: "## 3. The model", "2. the published figures".
NUMBERING = re.compile(r"^(\s*#*\s*)\d+\.\s", re.M)


def _numbers(text: str) -> list[str]:
    """The numbers of ``text`` as written (``"1,039,879"``, ``"5.8"``), outside code and links."""
    prose = NUMBERING.sub(r"\1", CODE.sub(" ", text))
    out = []
    for m in NUMBER.finditer(prose):
        after = prose[m.end() : m.end() + 1]
        if after.isalpha() and after not in "xMKk":  # 4K, 2x, 3.7M are numbers; x86 is not
            continue
        out.append(m.group(1) + (m.group(2) or ""))
    return out


#: Every result's ledgers: its published figures, bands, setups and evidence.
LEDGERS = sorted((ROOT / "labkit" / "results").glob("r*/*.csv"))


def _files() -> list[Path]:
    return [*LEDGERS, *(ROOT / "data" / "seeds").glob("*.txt")]


#: Every number as the published tables and the seed mails write it (commas dropped).
LITERAL = {n.replace(",", "") for p in _files() for n in _numbers(p.read_text(encoding="utf-8"))}


def _published_values() -> set[float]:
    """The published figures (the tables' numbers and the derived figures of
    labkit.published), also in the units a reader meets them in: ns as us, IOPS in millions."""
    values = {
        float(n)
        for p in LEDGERS
        for n in (t.replace(",", "") for t in _numbers(p.read_text(encoding="utf-8")))
    }
    for figs in (r1_seed.published(), r2_seed.published(), r3_seed.published()):
        values.update(float(v) for v in figs.values())
    values.update(c.published() for c in map(claims.get, claims.ids()) if c.published)
    return values | {v / 1e3 for v in values if v >= 1e3} | {v / 1e6 for v in values if v >= 1e6}


PUBLISHED = _published_values()


def allowed(token: str) -> bool:
    """Is the number ``token`` (as written) a published figure, a constant or structural?"""
    plain = token.replace(",", "")
    if token in VERSIONS or plain in LITERAL:
        return True
    value = float(plain)
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    if decimals == 0 and (value <= 4 or value in METHOD or value % PAGE_SIZE == 0):
        return True
    if decimals == 0 and 1990 <= value <= 2030:  # a year
        return True
    digits = len(plain.replace(".", "").lstrip("0"))
    # one significant digit matches too much by rounding: it must be written as published
    return digits >= 2 and any(round(v, decimals) == value for v in PUBLISHED)


def _markdown(path: Path) -> list[tuple[int, str]]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    # the line under the title tagged labkit-run is rendered from data/reproduction/run.json
    # by labkit.run.reference (which run, host and date), not typed
    return [
        (k, "".join(c["source"]))
        for k, c in enumerate(nb["cells"])
        if c["cell_type"] == "markdown"
        and "labkit-run" not in c.get("metadata", {}).get("tags", [])
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_markdown_quotes_no_measured_number(path):
    typed = [(k, n) for k, text in _markdown(path) for n in _numbers(text) if not allowed(n)]
    assert not typed, (
        f"{path.name}: numbers in Markdown that are neither published, nor constants of the "
        f"method, nor structural (render measured ones with labkit.claims.markdown): {typed}"
    )


def test_the_rule_catches_a_typed_measurement():
    # the sentence notebook 02 once held: its own output said 957,037 ns
    assert _numbers("about 0.6 ms at the tail; `readv(4K + empty)` in 6.4") == ["0.6", "6.4"]
    assert not allowed("0.6") and not allowed("957,037") and not allowed("0.992")
    assert allowed("1,039,879") and allowed("3.96") and allowed("755") and allowed("5.8")
    assert allowed("2019") and allowed("6.4") and allowed("4096") and allowed("10")  # 10 us
