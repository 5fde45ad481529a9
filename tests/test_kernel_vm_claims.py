"""The kernel bench's claims, estimated from its committed run (data/kernelvm): no timing."""

import math

import pandas as pd
import pytest

from labkit import claims
from labkit.kernelvm import matrix
from labkit.measure import bridge
from labkit.measure.ledgers import evidence_of
from labkit.measure.verdicts import decisive
from labkit.results import kernel_vm
from labkit.results.kernel_vm import VM_MATRIX, VmMatrix
from labkit.results.r2 import claims as r2

VM_IDS = (
    "R1.vm_tail_over_head",
    "R1.vm_tail_over_head_undone",
    "R2.vm_instr_saved",
    "R3.vm_rewrite_saved",
)


@pytest.fixture(scope="module")
def rows():
    return VM_MATRIX.measure(VmMatrix.quick(), 1)


def test_the_committed_run_is_read_as_one_run(rows):
    assert set(rows["run"]) == {0}
    assert {"6.1", "6.1+v1", "6.1+merged", "6.1+r3", "6.1-r1fix"} <= set(rows["era"])
    full = VM_MATRIX.measure(VmMatrix.full(), 1)
    assert (full["boots_checked"] <= full["boots"]).all()
    agreeing = full["boots_agree"] == full["boots"]
    assert (full.loc[agreeing, "boots_checked"] == full.loc[agreeing, "boots"]).all()
    with pytest.raises(ValueError, match="committed"):
        VM_MATRIX.measure(VmMatrix(source="boot"), 1)
    with pytest.raises(ValueError, match="not one of"):
        matrix.committed("identity")


def test_counts_agree_over_every_boot(rows):
    for case in ("readv1", "readv_4k_empty", "uring_readv1", "uring_read_fixed_tail"):
        sel = rows[(rows["case"] == case) & (rows["bytes"] == 4096)]
        assert (sel["boots_agree"] == sel["boots"]).all(), case


def test_estimates_follow_from_the_counts(rows):
    pc = kernel_vm.per_call
    r2_saved = claims.get("R2.vm_instr_saved").estimate(rows, 0.95)
    assert r2_saved.estimate == pc(rows, "6.1", "readv1", 4096) - pc(
        rows, "6.1+merged", "readv1", 4096
    )
    assert r2_saved.ci_low == r2_saved.ci_high == r2_saved.estimate
    # the merged text saves more than the mail's v1 (its import is static and inlined)
    assert kernel_vm.saved(rows, "6.1", "6.1+v1", "readv1") < r2_saved.estimate
    # the saving does not depend on the bytes zeroed or the CPU model
    for n, cpu in ((64, "max"), (4096, "max-erms")):
        assert kernel_vm.saved(rows, "6.1", "6.1+merged", "readv1", n, cpu=cpu) == r2_saved.estimate
    fixed = claims.get("R1.vm_tail_over_head").estimate(rows, 0.95).estimate
    undone = claims.get("R1.vm_tail_over_head_undone").estimate(rows, 0.95).estimate
    assert fixed == pytest.approx(
        pc(rows, "6.1", "uring_read_fixed_tail", 4096)
        / pc(rows, "6.1", "uring_read_fixed_head", 4096)
    )
    assert undone > 100 * fixed
    r3 = claims.get("R3.vm_rewrite_saved").estimate(rows, 0.95).estimate
    assert r3 == pc(rows, "6.1", "uring_readv1", 4096) - pc(rows, "6.1+r3", "uring_readv1", 4096)


def test_the_vm_claims_are_booted_change_rows():
    for cid in VM_IDS:
        ev = evidence_of(cid)
        assert (ev.compares, ev.instrument) == ("change", "booted kernel"), cid
        assert claims.get(cid).experiment is VM_MATRIX
    assert decisive(evidence_of("R1.vm_tail_over_head"))
    # instruction counts with a direction-only band are checks, never verdicts on the claim
    for cid in ("R2.vm_instr_saved", "R3.vm_rewrite_saved", "R1.vm_tail_over_head_undone"):
        assert evidence_of(cid).role == "method check"


def test_the_pair_bridge_scales_the_live_share(rows):
    c = r2.vm_pair(rows)
    assert c["max"] > c["saved"] > 0 and c["max-erms"] > 0
    assert bridge.pair_share(3.0, c["saved"], c["max"]) == pytest.approx(
        3.0 * c["saved"] / c["max"]
    )
    with pytest.raises(ValueError):
        bridge.pair_share(3.0, 72, 0)
    with pytest.raises(ValueError):
        bridge.pair_share(math.nan, 72, 112)
    share = kernel_vm.exact(2.0, "s")
    share = share.__class__(**{**share.__dict__, "ci_low": 1.0, "ci_high": 3.0})
    out = kernel_vm.scaled(share, 0.6, 0.5, 0.7, "q")
    assert (out.estimate, out.ci_low, out.ci_high) == pytest.approx((1.2, 0.5, 2.1))
    with pytest.raises(ValueError):
        kernel_vm.scaled(share, 0.8, 0.5, 0.7, "q")


def test_a_count_must_be_finite():
    with pytest.raises(ValueError):
        kernel_vm.exact(float("nan"), "x")
    with pytest.raises(KeyError):
        kernel_vm.per_call(
            pd.DataFrame(columns=["era", "case", "bytes", "config", "cpu"]), "6.1", "readv1", 1
        )


def test_the_committed_counts_are_not_timed():
    from labkit.claims import schedule  # the measuring phase's rule

    assert not schedule.timed(VM_MATRIX)
    assert schedule.timed(r2.LIVE_AB)
