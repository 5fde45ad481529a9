"""Where a row's verdict holds: not comparable first, the scope and the original's interval."""

from labkit.measure.stats import Estimate
from labkit.report import summary
from labkit.results.r2 import seed as r2_seed


class _Band:
    low, high, effect, unit = 2.5, 3.5, 3.0, "%"


def _e(lo, hi, sessions=1):
    return Estimate("x", (lo + hi) / 2, lo, hi, 0.95, "m", 6, 10, 0.1, 0.1, sessions, 0.2)


def test_judge_row_scope_and_original():
    original = r2_seed.original("R2.saved_share")
    v, extra = summary.judge_row(
        "R2.saved_share", _e(0.8, 1.9), _Band(), quick=False, original=original
    )
    assert v.verdict == "not consistent"  # a proxy on a later kernel: a stand-in
    assert extra["scope"].startswith(f"on {summary.fingerprint()}, one session")
    assert extra["original"].startswith("consistent with the original measurement")
    v, extra = summary.judge_row("R2.saved_share", _e(2.6, 3.3, sessions=3), _Band(), quick=False)
    assert v.verdict == "consistent in magnitude" and "over 3 sessions" in extra["scope"]


def test_judge_row_not_comparable_before_the_rule():
    v, extra = summary.judge_row("R3.ubuf_gain", _e(5.5, 6.0), _Band(), quick=False)
    assert v.verdict == "not comparable" and "to compare:" in v.reason
    v, _ = summary.judge_row("R1.tail_speedup", _e(2.6, 3.3), _Band(), quick=True)
    assert v.verdict == "not comparable"
    v, _ = summary.judge_row("R1.tail_speedup", _e(2.6, 3.3), _Band(), quick=False)
    assert v.verdict == "consistent in magnitude"  # labkit's model: a stand-in
    v, extra = summary.judge_row(None, None, _Band())
    assert v.verdict == "not measured" and extra["original"] == ""
