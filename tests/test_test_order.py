"""The order tests/conftest.py gives pytest-xdist's workers names real files, once each."""

from __future__ import annotations

from pathlib import Path

from slow_first import ROOT, SLOW_FIRST, rank


def test_every_slow_file_exists_once():
    assert len(set(SLOW_FIRST)) == len(SLOW_FIRST)
    missing = [name for name in SLOW_FIRST if not (ROOT / name).is_file()]
    assert not missing, f"tests/slow_first.py names files that are gone: {missing}"


def test_slow_files_rank_first_in_their_order():
    assert [rank(ROOT / name) for name in SLOW_FIRST] == list(range(len(SLOW_FIRST)))
    assert rank(ROOT / "tests" / "test_stats.py") == len(SLOW_FIRST)
    assert rank(Path("/elsewhere/test_x.py")) == len(SLOW_FIRST)
