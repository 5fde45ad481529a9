"""labkit.experiments.callgrind: the clock-free evidence (instruction counts)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from labkit.experiments import callgrind

pytestmark = pytest.mark.slow  # make test-fast leaves it out


#: The fixture's counts: instructions per call of each (experiment, variant) ...
READ_ZERO = {"readv 6.3": 4607.0, "readv 6.4": 4560.0}
URING = {"readv-iovec": 4618.0, "readv-rewrite": 4576.0, "read": 4442.0}
#: ... and of one seek into page ``p`` of the buffer: ``base + per_page * (p - 1)``.
SEEKS = {"walk-2019": (154.0, 48.0), "shift": (107.0, 0.0)}
PAGES = (1, 4095)


def rows():
    seeks = [
        ("fixed-seek", f"{seek} @ page {p}", base + per_page * (p - 1), seek, p)
        for seek, (base, per_page) in SEEKS.items()
        for p in PAGES
    ]
    return pd.DataFrame(
        [
            *(("read-zero", v, n, None, None) for v, n in READ_ZERO.items()),
            *(("uring defer_every=0", v, n, None, None) for v, n in URING.items()),
            *seeks,
        ],
        columns=["experiment", "variant", "instructions_per_call", "seek", "page"],
    )


def test_evidence_from_rows():
    ev = callgrind.evidence(rows())
    assert ev == {
        "r2_saved": READ_ZERO["readv 6.3"] - READ_ZERO["readv 6.4"],
        "r3_saved": URING["readv-iovec"] - URING["read"],
        "r3_rewrite_saved": URING["readv-iovec"] - URING["readv-rewrite"],
        "r1_walk_per_page": SEEKS["walk-2019"][1],
        "r1_shift_per_page": SEEKS["shift"][1],
    }
    partial = callgrind.evidence(rows().iloc[:2].drop(columns=["seek", "page"]))
    assert partial["r2_saved"] == ev["r2_saved"] and math.isnan(partial["r3_saved"])
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
