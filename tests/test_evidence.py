"""What a verdict may say, given the evidence behind its row (its result's evidence.csv)."""

import dataclasses

import pytest

from labkit import claims
from labkit.measure import ledgers
from labkit.measure.ledgers import Evidence, evidence_of
from labkit.measure.stats import Estimate
from labkit.measure.verdicts import Factor, decisive, judge_product, restate, verdict
from labkit.report import summary

INSIDE = verdict(5.5, 5.0, 6.0, 4.5875, 6.4225, unit="ns")
OUTSIDE = verdict(2.0, 1.5, 2.5, 4.5875, 6.4225, unit="ns")
#: The evidence of the kernel bench's rows: the change itself, in a booted kernel.
BOOTED_CHANGE = Evidence("", "", "change", "booted kernel", "6.1 with and without it")


def _e(lo, hi):
    return Estimate("x", (lo + hi) / 2, lo, hi, 0.95, "m", 6, 10, 0.1, 0.1, 3, 0.2)


def test_every_claim_declares_its_evidence():
    table = ledgers.evidence()
    assert set(claims.ids()) == set(table)
    for ev in table.values():
        assert ev.sentence() and ev.estimand
    # only the kernel bench's rows (the change itself, booted) may say reproduced
    for cid, ev in table.items():
        if decisive(ev):
            assert claims.get(cid).experiment.id == "kernelvm.matrix", cid
            assert (ev.compares, ev.instrument) == ("change", "booted kernel")
    assert any(decisive(ev) for ev in table.values())


def test_a_bridged_share_through_the_live_proxy_is_a_stand_in():
    ev = evidence_of("R2.vm_share")
    assert not decisive(ev)
    assert restate(INSIDE, ev).verdict == "consistent in magnitude"
    for kind in ("era", "model", "proxy", "other quantity"):
        other = dataclasses.replace(BOOTED_CHANGE, claim="x", estimand="e", compares=kind)
        assert restate(INSIDE, other).verdict != "reproduced"
    for instrument in ("real code in user space", "labkit's model", "live kernel"):
        other = dataclasses.replace(BOOTED_CHANGE, claim="x", estimand="e", instrument=instrument)
        assert restate(INSIDE, other).verdict != "reproduced"


def test_only_the_change_in_a_booted_kernel_reproduces():
    change = dataclasses.replace(BOOTED_CHANGE, claim="R2.vm_instr_saved", estimand="e")
    assert restate(INSIDE, change).verdict == "reproduced"
    assert restate(OUTSIDE, change).verdict == "differs"
    proxy = evidence_of("R2.saved_ns")
    assert restate(INSIDE, proxy).verdict == "consistent in magnitude"
    assert restate(OUTSIDE, proxy).verdict == "not consistent"
    assert restate(INSIDE, proxy).reason.startswith("a stand-in (a proxy on a later kernel")
    user_space = evidence_of("R2.kernel_instr_saved")  # the change, but not booted
    assert user_space.compares == "change" and not decisive(user_space)
    assert restate(INSIDE, None) is INSIDE


def test_rows_fixed_by_construction_are_checks_of_the_method():
    for cid in ("R1.tail_over_head", "R1.instr_per_page_walk", "R2.kernel_proxy_empty"):
        ev = evidence_of(cid)
        assert ev.role == "method check"
        assert restate(INSIDE, ev).verdict == "check passed"
        assert restate(OUTSIDE, ev).verdict == "check failed"
    # every row judged against a direction-only band (">= 1 instruction") is a check
    for _, b in ledgers.bands().iterrows():
        if b["unit"] == "instructions":
            assert evidence_of(b["claim"]).role == "method check", b["claim"]


def test_a_product_whose_factors_miss_their_bands_says_they_cancel():
    walk = Factor("walk", 2.83, 2.81, 2.85, 3.96, 3.5728, 4.3927, "ns")
    f = Factor("F", 875, 860, 890, 1377, 1241.8, 1526.9, "ns")
    ev = evidence_of("R1.tail_speedup")
    product = restate(verdict(803.6, 788.7, 818.4, 681.06, 837.36, unit="x"), ev)
    v = judge_product(product, [walk, f], ev)
    assert v.verdict == "factors cancel"
    assert "2 of its 2 factors" in v.reason and "0.71x the published 3.96 ns" in v.reason
    good = dataclasses.replace(f, estimate=1377, ci_low=1300, ci_high=1450)
    w = dataclasses.replace(walk, estimate=3.96, ci_low=3.9, ci_high=4.0)
    assert judge_product(product, [w, good], ev).verdict == "consistent in magnitude"
    assert judge_product(product, [], ev) is product


def test_an_amended_band_shows_the_verdict_against_both():
    band = ledgers.claim_band("R1.live_tail_over_head")
    (old,) = ledgers.amended_bands("R1.live_tail_over_head")
    assert (old.low, old.high, old.declared_in) == (0.12253, 0.15065, "21069cc")
    assert band.declared_in == "9d13467" and "amends" in band.amendment
    v, extra = summary.judge_row("R1.live_tail_over_head", _e(0.98, 1.02), band, quick=False)
    assert v.verdict == "consistent in magnitude"
    assert extra["amended"].startswith("against the band declared on 2026-12-01 (21069cc)")
    assert extra["amended"].endswith(": not consistent")


def test_setups_declared_after_results_show_the_verdict_without_them():
    band = ledgers.claim_band("R3.cpu_ratio")
    v, extra = summary.judge_row(
        "R3.cpu_ratio",
        dataclasses.replace(_e(1.055, 1.06), between_session=0.001),
        band,
        quick=False,
    )
    assert v.verdict == "not comparable"
    assert "setups declared on 2026-12-03 (87ff064), after results" in extra["amended"]
    assert extra["amended"].endswith("against its band alone: consistent in magnitude")


def test_the_evidence_file_is_checked(tmp_path):
    bad = tmp_path / "e.csv"
    bad.write_text(
        "claim,estimand,compares,instrument,config,role,note\nR9.x,e,guess,live kernel,,claim,\n"
    )
    with pytest.raises(ValueError, match="compares 'guess'"):
        ledgers.evidence(bad)
    bad.write_text("claim,estimand\nR9.x,e\n")
    with pytest.raises(ValueError, match="no column"):
        ledgers.evidence(bad)


def test_the_summary_says_how_many_timed_verdicts_and_what_95_means():
    from labkit.measure.verdicts import multiplicity

    rows = [
        {"claim": "R2.saved_ns", "unit": "ns", "verdict": "inconclusive", "method": "m"},
        {"claim": "R2.saved_share", "unit": "%", "verdict": "not consistent", "method": "m"},
        {"claim": "R1.ns_per_page", "unit": "ns", "verdict": "not consistent", "method": "m"},
        {"claim": "R1.tail_over_head", "unit": "x", "verdict": "check passed", "method": "m"},
        {"claim": "R2.instr_saved", "unit": "instructions", "verdict": "check passed"},
        {"claim": "R3.cpu_ratio", "unit": "x", "verdict": "not comparable", "method": "m"},
    ]
    text = multiplicity(rows)
    assert text.startswith("3 timed verdicts (2 of them, R2's, read one loop")
    assert "TOST at alpha = 0.025 per side" in text and "about 0.15 could land" in text


def test_an_undecided_check_is_a_check_too():
    open_ = verdict(1.0, 0.8, 1.3, 0.90171, 1.109, unit="x")
    assert open_.verdict == "inconclusive"
    assert restate(open_, evidence_of("R1.tail_over_head")).verdict == "check inconclusive"
