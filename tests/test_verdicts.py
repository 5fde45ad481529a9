"""The verdict rule (equivalence with a declared band), every branch, and record() using it."""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pandas as pd
import pytest

from labkit import claims, report
from labkit.measure import stats
from labkit.report import summary, verdict

INF = math.inf


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for var in ("LABKIT_OUT", "LABKIT_NOTEBOOK"):
        monkeypatch.delenv(var, raising=False)


def test_inside_the_band_is_reproduced():
    v = verdict(3.0, 2.6, 3.4, 2.5, 3.5, unit="%")
    assert v.verdict == "reproduced" and "inside" in v.reason
    assert verdict(3.0, 2.5, 3.5, 2.5, 3.5).verdict == "reproduced"  # edges count as inside


@pytest.mark.parametrize("lo, hi, where", [(-0.5, 0.5, "below"), (4.0, 9.0, "above")])
def test_wholly_outside_is_differs(lo, hi, where):
    v = verdict((lo + hi) / 2, lo, hi, 2.5, 3.5)
    assert v.verdict == "differs" and f"wholly {where}" in v.reason


def test_a_wider_interval_is_never_reproduced():
    # the old rule ("the published figure lies inside our interval") rewarded noise
    for half in (0.6, 1.0, 5.0, 100.0):
        v = verdict(3.0, 3.0 - half, 3.0 + half, 2.5, 3.5)
        assert v.verdict == "inconclusive"
        assert "wider than the band" in v.reason and "shrink at least" in v.reason


def test_crossing_an_edge_says_which_and_how_much_to_shrink():
    v = verdict(2.6, 2.1, 2.9, 2.5, 3.5, unit="%")
    assert v.verdict == "inconclusive"
    assert "lower edge 2.5%" in v.reason and "estimate inside" in v.reason
    assert "lower half (0.5%)" in v.reason and "under 0.1%" in v.reason and "5x" in v.reason
    v = verdict(2.3, 2.1, 2.6, 2.5, 3.5)
    assert "estimate outside" in v.reason and "upper half" in v.reason and "below" in v.reason
    v = verdict(3.4, 3.2, 3.7, 2.5, 3.5)
    assert "upper edge 3.5" in v.reason and "inside the band" in v.reason
    v = verdict(3.6, 3.3, 3.8, 2.5, 3.5)
    assert "upper edge" in v.reason and "lower half" in v.reason and "above" in v.reason


def test_one_sided_bands():
    assert verdict(40.0, 38.0, 42.0, 1, INF).verdict == "reproduced"
    assert verdict(-3.0, -4.0, -2.0, 1, INF).verdict == "differs"
    v = verdict(0.5, -1.0, 2.0, 1, INF)
    assert v.verdict == "inconclusive" and "lower edge 1;" in v.reason
    assert "at least 1" in verdict(-3.0, -4.0, -2.0, 1, INF).reason


def test_noise_guard():
    v = verdict(3.0, 2.9, 3.1, 2.5, 3.5, noise=4.0, effect=3.0, unit="ns")
    assert v.verdict == "inconclusive" and v.reason.startswith(report.TOO_NOISY)
    assert verdict(3.0, 2.9, 3.1, 2.5, 3.5, noise=0.2, effect=3.0).verdict == "reproduced"
    assert verdict(3.0, 2.9, 3.1, 2.5, 3.5, noise=math.nan, effect=3.0).verdict == "reproduced"
    assert verdict(3.0, 2.9, 3.1, 2.5, 3.5, noise=9.0, effect=None).verdict == "reproduced"


def test_not_measured_and_no_interval():
    assert verdict(None, None, None, 2.5, 3.5).verdict == "not measured"
    assert verdict(math.nan, math.nan, math.nan, 2.5, 3.5).verdict == "not measured"
    assert verdict(3.0, 2.9, 3.1, None, None).verdict == "not measured"
    v = verdict(3.0, math.nan, math.nan, 2.5, 3.5)
    assert v.verdict == "inconclusive" and "no interval" in v.reason


def test_bad_input():
    with pytest.raises(ValueError):
        verdict(1.0, 2.0, 1.0, 0.0, 3.0)
    with pytest.raises(ValueError):
        verdict(1.0, 0.5, 1.5, 3.0, 3.0)


def _estimate(mean, sd, n=31, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"variant": "v", "ns_per_op": rng.normal(mean, sd, n)})
    return stats.median(df, "v")


def test_record_decides_with_the_declared_band(tmp_path):
    q = "readv(1) as UBUF: ns saved per call"
    band = claims.get("R2.saved_ns").band()
    assert band is not None and band.contains(band.published)
    record = functools.partial(report.record, claim="R2.saved_ns", band=band)
    row = record("R2", q, live=5.5, measured=_estimate(5.5, 0.1), reason="synthetic", out=tmp_path)
    # R2's ns saved is a proxy on a later kernel: inside its band it is consistent in
    # magnitude with the claim, never a reproduction (labkit.measure.verdicts.restate)
    assert row["verdict"] == "consistent in magnitude" and row["published"] == pytest.approx(5.5)
    assert row["reason"].startswith("a stand-in (a proxy on a later kernel")
    assert row["evidence"].startswith("a proxy on a later kernel, with the live kernel")
    assert "ITER_UBUF" in row["estimand"] and row["amended"] == ""
    assert (row["band_low"], row["band_high"]) == (band.low, band.high)
    assert row["unit"] == "ns" and row["n_runs"] == 1 and row["method"].startswith("BCa")
    assert row["reason"].endswith("; synthetic") and row["explained"] == ""
    row = record(
        "R2", q, live=0.0, measured=_estimate(0.0, 0.1), reason="x", explained="y", out=tmp_path
    )
    assert row["verdict"] == "not consistent" and row["explained"] == "y"
    row = record("R2", q, live=5.5, measured=_estimate(5.5, 10.0), reason="x", out=tmp_path)
    assert row["verdict"] == "inconclusive" and row["noise"] > 0
    row = record("R2", q, measured=None, reason="io_uring unavailable", out=tmp_path)
    assert row["verdict"] == "not measured"
    with pytest.raises(ValueError, match="declared band"):
        record("R2", q, verdict="reproduced", reason="by hand", out=tmp_path)
    df = report.summary_table(tmp_path)
    assert list(df.columns) == report.COLUMNS and len(df) == 1
    on_disk = json.loads(next((tmp_path / "summary").glob("*.json")).read_text())
    assert set(on_disk) == set(report.COLUMNS)


def test_record_without_a_band(tmp_path):
    row = report.record("R9", "x", model=1.0, measured=_estimate(1, 0.1), reason="r", out=tmp_path)
    assert row["verdict"] == "not comparable" and "no declared band" in row["reason"]
    assert "shown, not judged" in row["reason"]
    assert summary.label_problems(row) == []
    row = report.record("T1", "y", verdict="reproduced", reason="a test row", out=tmp_path)
    assert row["verdict"] == "reproduced" and row["method"] == "verdict given by the notebook"


def _wide_estimate(**kw):
    """3.0 [1.0, 5.0]: four times wider than R2's band [2.5, 3.5]."""
    fields = dict(
        quantity="x",
        estimate=3.0,
        ci_low=1.0,
        ci_high=5.0,
        confidence=0.95,
        method="m",
        n_runs=3,
        n_batches=10,
        within_run=0.1,
        between_run=0.5,
    )
    return stats.Estimate(**(fields | kw))


def test_judge_says_what_it_would_take():
    band = claims.get("R2.saved_share").band()  # [2.5, 3.5] %
    e = _wide_estimate(n_runs=3)
    v = report.judge(e, band)
    assert v.verdict == "inconclusive" and v.shrink == pytest.approx(4.0)
    assert "about 48 runs instead of 3" in v.reason
    assert verdict(2.6, 2.1, 2.9, 2.5, 3.5).shrink == pytest.approx(5.0)
    assert verdict(3.0, 2.6, 3.4, 2.5, 3.5).shrink is None
    assert report.judge(None, band).verdict == "not measured"
    assert report.judge(e, None).verdict == "not measured"


def test_an_interval_over_sessions_asks_for_sessions_not_runs():
    """Over sessions the interval is a t interval on the sessions' figures: more runs in
    each session do not narrow it, more sessions do (t(S-1)/sqrt(S) at the same spread)."""
    from scipy.stats import t

    from labkit.measure.verdicts import sessions_to_shrink

    band = claims.get("R2.saved_share").band()  # [2.5, 3.5] %
    e = _wide_estimate(n_runs=12, n_sessions=3, between_session=0.8)
    v = report.judge(e, band)
    assert v.verdict == "inconclusive" and v.shrink == pytest.approx(4.0)
    need = sessions_to_shrink(3, 4.0)
    assert f"about {need} sessions instead of 3" in v.reason and "runs instead" not in v.reason
    # the smallest such count, checked against the t quantiles directly
    half = lambda n: t.ppf(0.975, n - 1) / n**0.5  # noqa: E731
    assert half(need) <= half(3) / 4.0 < half(need - 1)
    assert sessions_to_shrink(3, 1.0) == 3 and sessions_to_shrink(2, 1.5) == 3
    assert sessions_to_shrink(3, 1e6) > 10**11  # no loop over a trillion sessions
    with pytest.raises(ValueError):
        sessions_to_shrink(1, 2.0)


# ---- not comparable (decided from the declared setups, before measuring) -----------


def test_not_comparable_setups_shipped():
    from labkit.measure import ledgers

    rows = ledgers.setups()
    assert {m.claim for m in rows} >= {"R3.ubuf_gain", "R3.read_gain", "R1.tail_speedup"}
    assert all(m.to_compare and m.published and m.labkit for m in rows)
    # R3's device peak is never comparable; R1's tail only in quick mode (64 MiB vs 1 GiB)
    assert ledgers.mismatches("R3.ubuf_gain", quick=False)
    assert ledgers.mismatches("R3.ubuf_gain", quick=True)
    assert ledgers.mismatches("R1.tail_speedup", quick=True)
    assert not ledgers.mismatches("R1.tail_speedup", quick=False)
    assert not ledgers.mismatches("R1.walk_tail_ns", quick=True)  # extrapolated to 1 GiB
    assert not ledgers.mismatches("R2.saved_share", quick=True)  # read-zero is R2's own setup


def test_not_comparable_beats_any_interval():
    from labkit.measure import ledgers
    from labkit.measure.verdicts import NOT_COMPARABLE, VERDICTS, judge

    band = type("B", (), {"low": 5.0, "high": 6.8, "effect": 5.8, "unit": "%"})()
    inside = type(
        "E",
        (),
        {
            "estimate": 5.5,
            "ci_low": 5.4,
            "ci_high": 5.6,
            "noise": 0.01,
            "confidence": 0.95,
            "n_runs": 6,
            "brief": lambda self: "5.5 [5.4, 5.6]",
        },
    )()
    v = judge(inside, band, setup=ledgers.mismatches("R3.read_gain", quick=False))
    assert v.verdict == NOT_COMPARABLE and NOT_COMPARABLE in VERDICTS
    assert "24 NVMe drives" in v.reason and "to compare:" in v.reason
    assert "5.5 [5.4, 5.6] %" in v.reason  # labkit's estimate still shown
    assert judge(inside, band, setup=[]).verdict == "reproduced"


def test_setups_file_checked(tmp_path):
    import pytest

    from labkit.measure import ledgers
    from labkit.measure.verdicts import not_comparable

    bad = tmp_path / "s.csv"
    bad.write_text(
        "claim,aspect,published,labkit,when,to_compare,source,declared,declared_in,status,"
        "after_results\nR9.x,size,a,b,sometimes,c,d,2026-12-01,abc1234,in force,\n"
    )
    with pytest.raises(ValueError, match="when must be one of"):
        ledgers.setups(bad)
    bad.write_text(bad.read_text().replace("sometimes", "always").replace("in force", "gone"))
    with pytest.raises(ValueError, match="status must be one of"):
        ledgers.setups(bad)
    bad.write_text("claim,aspect\nR9.x,size\n")
    with pytest.raises(ValueError, match="no column"):
        ledgers.setups(bad)
    with pytest.raises(ValueError):
        not_comparable("", "x")


def test_a_shrink_just_over_1_does_not_read_as_1x():
    v = verdict(4.0, 3.08, 5.0, 4.588, 6.423)  # 1.92 wide against 1.835: 1.046x
    assert "shrink at least 1.05x" in v.reason
    assert "shrink at least 4x" in verdict(3.0, 1.0, 5.0, 2.5, 3.5).reason


def test_a_verdict_label_matches_its_reason(tmp_path):
    """Not measured means no figure; a reason that says "not measured" is labelled so, also
    where the setups would not have been comparable either."""
    from labkit.report.summary import label_problems

    row = report.record("R9", "x", measured=None, reason="not built here", out=tmp_path)
    assert row["verdict"] == "not measured" and row["reason"].startswith("not measured")
    assert label_problems(row) == []
    bad = dict(row, verdict="not comparable")
    assert label_problems(bad) == [
        "its reason says not measured but it is labelled 'not comparable'"
    ]
    bad = dict(row, verdict="not measured", estimate=-2.06)
    assert "labelled not measured but carries a measured figure" in label_problems(bad)
