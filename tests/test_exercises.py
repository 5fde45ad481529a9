"""labkit.teach.exercises: the model's answers match the ones worked out by hand, and checks."""

from __future__ import annotations

import numpy as np
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


def wrong_part(value):
    return value + 1 if isinstance(value, int) else ("UBUF" if value != "UBUF" else "KVEC")


@pytest.mark.parametrize("ex", exercises.ALL, ids=lambda e: e.name)
def test_model_answers_match_hand_answers(ex):
    assert tuple(ex.solution()) == HAND[ex.name]


@pytest.mark.parametrize("ex", exercises.ALL, ids=lambda e: e.name)
def test_check_accepts_right_and_rejects_wrong(ex, capsys):
    right = HAND[ex.name]
    assert ex.is_correct(right) and ex.is_correct(list(right))
    assert not ex.is_correct(None) and not ex.is_correct(...)
    wrong = tuple(wrong_part(v) for v in right)
    assert not ex.is_correct(wrong)
    ex.check(right)
    assert "correct" in capsys.readouterr().out
    ex.check(wrong)
    printed = capsys.readouterr().out
    assert "not yet" in printed and ex.hint in printed
    ex.check(None)
    assert "no answer yet" in capsys.readouterr().out


@pytest.mark.parametrize("ex", exercises.ALL, ids=lambda e: e.name)
def test_feedback_is_per_part(ex):
    right = HAND[ex.name]
    for k in range(len(right)):
        answer = list(right)
        answer[k] = wrong_part(answer[k])
        fb = ex.feedback(tuple(answer))
        text = str(fb)
        assert not fb.correct
        assert f"{len(right) - 1} of {len(right)} right" in text
        for j, part in enumerate(ex.parts):
            line = next(line for line in fb.lines if line.strip().startswith(part.name + ":"))
            if j == k:
                assert "is not" in line and part.hint in line
            else:
                assert "is right" in line and part.hint not in line


@pytest.mark.parametrize(
    "answer, says",
    [
        ((2, 50), "a tuple of 2"),
        ("2, 50, 150", "the string"),
        ({"seg": 2, "iov_offset": 50, "count": 150}, "a dict"),
        (150, "int 150"),
        ((2, 50, 150, 0), "a tuple of 4"),
    ],
)
def test_shape_is_checked_first(answer, says):
    fb = exercises.ADVANCE.feedback(answer)
    text = str(fb)
    assert not fb.correct and len(fb.lines) == 1
    assert "should be a tuple of 3 integers: (seg, iov_offset, count)" in text and says in text
    assert exercises.ADVANCE.hint not in text  # no hint about the model for a malformed answer


def test_parts_of_the_wrong_kind_are_named():
    fb = exercises.ADVANCE.feedback((2, "50", 150.0))
    text = str(fb)
    assert "iov_offset should be an integer, not the string '50'" in text
    assert "count should be an integer, not float 150.0" in text
    assert "seg should" not in text
    fb = exercises.IMPORT.feedback((1, "UBUF"))
    assert "type under 6.3 should be an iterator type" in str(fb)


def test_integers_of_any_integer_type_count():
    assert exercises.ADVANCE.is_correct((np.int64(2), np.uint16(50), 150))
    assert not exercises.ADVANCE.is_correct((True, 50, 150))  # a bool is not an answer


def test_type_names_as_the_kernel_writes_them():
    assert exercises.IMPORT.is_correct(("ITER_IOVEC", "ITER_UBUF"))
    assert exercises.IMPORT.is_correct((" iovec", "iter_ubuf "))
    assert exercises.IMPORT.is_correct(["IOVEC", "ITER_UBUF"])
    assert not exercises.IMPORT.is_correct(("ITER_UBUF", "ITER_IOVEC"))
    fb = exercises.IMPORT.feedback(("ITER_IOVEC", "ITER_IOVEC"))
    assert "1 of 2 right" in str(fb) and "type under 6.3: 'IOVEC' is right" in str(fb)
