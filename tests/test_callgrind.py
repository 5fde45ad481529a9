"""labkit.experiments.callgrind: the clock-free evidence (instruction counts)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from labkit.experiments import callgrind

pytestmark = pytest.mark.slow  # make test-fast leaves it out


def rows():
    return pd.DataFrame(
        [
            ("read-zero", "readv 6.3", 4607.0, None, None),
            ("read-zero", "readv 6.4", 4560.0, None, None),
            ("uring defer_every=0", "readv-iovec", 4618.0, None, None),
            ("uring defer_every=0", "readv-rewrite", 4576.0, None, None),
            ("uring defer_every=0", "read", 4442.0, None, None),
            ("fixed-seek", "walk-2019 @ page 1", 154.0, "walk-2019", 1),
            ("fixed-seek", "walk-2019 @ page 4095", 154.0 + 48 * 4094, "walk-2019", 4095),
            ("fixed-seek", "shift @ page 1", 107.0, "shift", 1),
            ("fixed-seek", "shift @ page 4095", 107.0, "shift", 4095),
        ],
        columns=["experiment", "variant", "instructions_per_call", "seek", "page"],
    )


def test_evidence_from_rows():
    ev = callgrind.evidence(rows())
    assert ev == {
        "r2_saved": 47.0,
        "r3_saved": 176.0,
        "r3_rewrite_saved": 42.0,
        "r1_walk_per_page": 48.0,
        "r1_shift_per_page": 0.0,
    }
    partial = callgrind.evidence(rows().iloc[:2].drop(columns=["seek", "page"]))
    assert partial["r2_saved"] == 47.0 and math.isnan(partial["r3_saved"])
    assert math.isnan(partial["r1_walk_per_page"])


def test_as_estimate_is_exact():
    e = callgrind.as_estimate(47.0, "instructions saved")
    assert e.estimate == e.ci_low == e.ci_high == 47.0 and e.noise == 0.0
    assert "callgrind" in e.method
    assert callgrind.as_estimate(math.nan, "x") is None


def test_available_says_how_to_install(monkeypatch):
    monkeypatch.setattr(callgrind.shutil, "which", lambda name: None)
    ok, why = callgrind.available()
    assert not ok and "apt-get install valgrind" in why
    with pytest.raises(RuntimeError, match="apt-get install valgrind"):
        callgrind.measure()


@pytest.mark.skipif(not callgrind.available()[0], reason=callgrind.INSTALL_HINT)
def test_seek_counts_under_valgrind():
    # instruction counts, not time: the walk grows with every page, the shift does not
    df = callgrind.measure([], seeks=callgrind.SEEKS, n1=200, n2=600)
    ev = callgrind.evidence(df)
    assert ev["r1_walk_per_page"] >= 5
    assert abs(ev["r1_shift_per_page"]) < 0.01
