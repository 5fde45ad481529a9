"""Words that interpret a figure agree with it, in every notebook that renders them.

``labkit.claims.phrases`` picks the words (saves/costs, seen/not seen, decided/not decided,
the same figure/another) from the numbers, and ``claims.markdown`` stores each phrase's
record (its words, its case, its numbers) in the output's metadata.  Here every such record
of an executed notebook is checked by this file's own rule (not the package's), and its
words must be in the rendered text:

* the stored notebooks (``notebooks/``): a cell that renders phrases must carry them (an
  output without them is older than the code: ``make reference`` regenerates);
* a quick reproduction's executed notebooks, where one is found (``LABKIT_PHRASES_RUN``
  names its folder; default ``labkit-results/reproduction/quick``).

A planted contradiction (a record whose words say "saves" over an interval below zero, and
words that are not in the text) is caught.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from labkit import claims
from labkit.claims import phrases
from labkit.measure.stats import Estimate

ROOT = Path(__file__).resolve().parent.parent
DECIDING = {"reproduced", "differs", "consistent in magnitude", "not consistent", "factors cancel"}


def expected_role(rec: dict[str, Any]) -> str:
    """The case a phrase's numbers put it in, by this test's own rule."""
    kind = rec["kind"]
    if kind == "sign":
        return "positive" if rec["low"] > 0 else "negative" if rec["high"] < 0 else "neither"
    if kind == "count":
        return "some" if rec["n"] > 0 else "none"
    if kind == "decided":
        return "decided" if rec["verdict"] in DECIDING else "undecided"
    if kind == "same":
        apart = rec["a_high"] < rec["b_low"] or rec["b_high"] < rec["a_low"]
        return "different" if apart else "same"
    raise AssertionError(f"unknown phrase kind {kind!r}")


def _text(v: Any) -> str:
    return "".join(v) if isinstance(v, list) else str(v)


def phrase_problems(nb: dict[str, Any], name: str) -> tuple[int, list[str]]:
    """(phrases checked, disagreements) of one executed notebook."""
    n, problems = 0, []
    for k, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        renders = "phrases." in _text(cell.get("source", ""))
        found = False
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {})  # IPython keeps a repr's metadata by its type
            meta = meta.get("text/markdown", meta)
            recs = meta.get("labkit", {}).get("phrases", [])
            text = _text(out.get("data", {}).get("text/markdown", ""))
            for rec in recs:
                found, n = True, n + 1
                want = expected_role(rec)
                if rec["role"] != want:
                    problems.append(
                        f"{name} cell {k}: {rec['text']!r} is the {rec['role']!r} case, but "
                        f"its numbers make it {want!r}: {rec}"
                    )
                if rec["text"] not in text:
                    problems.append(f"{name} cell {k}: {rec['text']!r} is not in its text")
        if renders and not found:
            problems.append(
                f"{name} cell {k} renders phrases but its output carries none "
                "(an output older than the code: `make reference` regenerates it)"
            )
    return n, problems


def _check_folder(folder: Path) -> tuple[int, list[str]]:
    total, problems = 0, []
    for path in sorted(folder.glob("[0-9][0-9]-*.ipynb")):
        n, p = phrase_problems(json.loads(path.read_text(encoding="utf-8")), path.name)
        total, problems = total + n, problems + p
    return total, problems


def _est(e: float, lo: float, hi: float) -> Estimate:
    return Estimate("t", e, lo, hi, 0.95, "test", 3, 10, 0.01, 0.02)


# ---- the helpers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("est", "role", "words"),
    [
        (_est(2.0, 1.0, 3.0), "positive", "saves"),
        (_est(-2.06, -3.92, -0.2), "negative", "costs"),
        (_est(0.1, -1.0, 1.0), "neither", "neither"),
    ],
)
def test_sign_follows_the_interval(est, role, words):
    p = phrases.sign(est, positive="saves", negative="costs", neither="neither")
    assert (p, p.role) == (words, role) and expected_role(p.record()) == role


def test_count_decided_and_same():
    assert phrases.count(0, some="{n} seen", none="none seen") == "none seen"
    assert phrases.count(3, some="{n} seen", none="none seen") == "3 seen"
    assert phrases.decided("differs", yes="decided: {verdict}", no="open") == "decided: differs"
    assert phrases.decided("inconclusive", yes="decided", no="open: {verdict}").role == "undecided"
    a, b = _est(874.7, 860.2, 892.5), _est(1016.4, 932.6, 1112.3)
    p = phrases.same(a, b, same_text="the same F", different_text="another F")
    assert p == "another F" and expected_role(p.record()) == "different"
    with pytest.raises(TypeError, match="not a measured figure"):
        phrases.sign(math.nan, positive="a", negative="b", neither="c")


def test_markdown_stores_each_phrase_with_its_numbers():
    claims.new_session(quick=True)
    seen = phrases.count(0, some="workers are visible", none="no worker is visible")
    md = claims.markdown("io-wq workers: {n}; {seen}.", n=0, seen=seen)
    text, meta = md._repr_markdown_()
    assert text == "io-wq workers: 0; no worker is visible."
    (rec,) = meta["labkit"]["phrases"]
    assert rec == {"text": "no worker is visible", "kind": "count", "role": "none", "n": 0}
    assert claims.markdown("no phrase here")._repr_markdown_() == "no phrase here"


# ---- the notebooks ---------------------------------------------------------------------------


def _cell(text: str, rec: dict[str, Any]) -> dict[str, Any]:
    out = {
        "output_type": "execute_result",
        "data": {"text/markdown": text},
        "metadata": {"labkit": {"phrases": [rec]}},
    }
    return {"cell_type": "code", "source": "phrases.sign(...)", "outputs": [out]}


def test_a_planted_contradiction_is_caught():
    good = phrases.sign(
        _est(-2.06, -3.92, -0.2), positive="saves", negative="costs", neither="-"
    ).record()
    nb = {"cells": [_cell("the rewrite costs (-2.06 ns)", good)]}
    assert phrase_problems(nb, "nb") == (1, [])
    planted = dict(good, text="saves", role="positive")  # the words of a saving, over a cost
    n, problems = phrase_problems({"cells": [_cell("the rewrite saves (-2.06 ns)", planted)]}, "nb")
    assert n == 1 and len(problems) == 1 and "its numbers make it 'negative'" in problems[0]
    n, problems = phrase_problems({"cells": [_cell("the rewrite saves (-2.06 ns)", good)]}, "nb")
    assert problems == ["nb cell 0: 'costs' is not in its text"]
    stale = {"cells": [{"cell_type": "code", "source": "phrases.count(w)", "outputs": []}]}
    assert "older than the code" in phrase_problems(stale, "nb")[1][0]


def test_the_stored_notebooks_phrases_agree_with_their_numbers():
    n, problems = _check_folder(ROOT / "notebooks")
    print(f"stored notebooks: {n} phrases checked")
    assert problems == [], "\n".join(problems)


def test_a_quick_runs_phrases_agree_with_their_numbers():
    where = Path(os.environ.get("LABKIT_PHRASES_RUN", "labkit-results/reproduction/quick"))
    folder = where / "notebooks" if (where / "notebooks").is_dir() else where
    if not list(folder.glob("[0-9][0-9]-*.ipynb")):
        pytest.skip(f"no executed quick run in {folder} (labkit reproduce --quick makes one)")
    n, problems = _check_folder(folder)
    print(f"{folder}: {n} phrases checked")
    assert n > 0 and problems == [], "\n".join(problems)
