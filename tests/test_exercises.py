"""labkit.teach.exercises: the model's answers match the ones worked out by hand, and checks."""

from __future__ import annotations

import pytest

from labkit.teach import exercises

# Worked out by hand from the questions (see notebook 01, section 8).
HAND = {
    # 100 + 0 fit in 150; 50 bytes into the 200-byte segment; 300 - 150 left
    "advance": (2, 50, 150),
    # 50 back inside segment 2, the empty segment gives nothing, 10 more out of segment 0
    "revert": (0, 90, 210),
    "import": ("IOVEC", "UBUF"),
    # first bvec 3584 bytes; 10000 - 3584 = 6416 = 1 page + 2320: bvec 1 + 1 = 2
    "seek": (2, 2320),
}


@pytest.mark.parametrize("ex", exercises.ALL, ids=lambda e: e.name)
def test_model_answers_match_hand_answers(ex):
    assert tuple(ex.solution()) == HAND[ex.name]


@pytest.mark.parametrize("ex", exercises.ALL, ids=lambda e: e.name)
def test_check_accepts_right_and_rejects_wrong(ex, capsys):
    right = HAND[ex.name]
    assert ex.is_correct(right) and ex.is_correct(list(right))
    assert not ex.is_correct(None) and not ex.is_correct(...)
    wrong = tuple(v + 1 if isinstance(v, int) else v + "X" for v in right)
    assert not ex.is_correct(wrong)
    ex.check(right)
    assert "correct" in capsys.readouterr().out
    ex.check(wrong)
    printed = capsys.readouterr().out
    assert "not yet" in printed and ex.hint in printed
    ex.check(None)
    assert "no answer yet" in capsys.readouterr().out


def test_strings_ignore_case_and_spaces():
    assert exercises.IMPORT.is_correct((" iovec", "Ubuf "))
    assert not exercises.IMPORT.is_correct(("UBUF", "IOVEC"))
