"""R3's claims: io_uring READV of one segment rewritten into READ gave about 5.8% more IOPS.

R3's patch was not merged; since 6.4 a one-segment READV is an ``ITER_UBUF``
through the generic import.  Live, on /dev/zero and one core: the batched
peak loop at depth 32 (``READV(1)`` and ``READ`` against ``READV(4K + empty)``)
and the depth sweep of notebook 04; in the model, the request model with no
deferral; and callgrind's count of instructions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import pandas as pd

from labkit import live
from labkit.experiments import live_kernel
from labkit.live.variants import aa_twin
from labkit.measure import calibration, stats
from labkit.measure.experiment import Params
from labkit.measure.sequential import Budget, one_run
from labkit.measure.stats import Estimate
from labkit.results import kernel_vm
from labkit.results.claim import Claim, Experiment
from labkit.results.kernel_vm import VM_MATRIX
from labkit.results.r2 import experiments as r2_experiments
from labkit.results.r2.claims import (
    CALLGRIND_UBUF,
    Model,
    instr_reason,
    instructions,
    live_budget,
    model_budget,
)
from labkit.results.r3 import seed

if TYPE_CHECKING:
    from labkit.claims.engine import Outcome

OPS = ("read", "readv1", "readv_empty")
#: The peak A/B's loop: OPS and READV(1)'s A/A twin (the same request as a fourth op).
PEAK_OPS = (*OPS, aa_twin("readv1"))


def uring_unavailable(p: Params) -> str:
    """Why io_uring cannot be used here ("" if it can)."""
    probe = live.probe()
    return "" if probe["available"] else f"io_uring unavailable: {probe['reason']}"


@dataclass(frozen=True)
class Peak(Params):
    """The batched peak loop on /dev/zero (fio's t/io_uring batches of 32).

    ``depths``: the queue depths swept; ``ios``: IOs per batch; ``repeats``:
    rounds kept per run (16 or 72 in all, shared out over the first runs).
    """

    depths: tuple[int, ...]
    ios: int
    repeats: int
    warmup: int = 1
    ops: tuple[str, ...] = OPS
    batch: int = 32

    @classmethod
    def quick(cls) -> Peak:
        return cls(depths=(32,), ios=10_000, repeats=live_budget(True).share(16, 1), ops=PEAK_OPS)

    @classmethod
    def full(cls) -> Peak:
        return cls(depths=(32,), ios=25_000, repeats=live_budget(False).share(72, 1), ops=PEAK_OPS)


@dataclass(frozen=True)
class PeakSweep(Peak):
    """Notebook 04's sweep of queue depths (the longest experiment)."""

    @classmethod
    def quick(cls) -> PeakSweep:
        return cls(depths=(1, 4, 16, 64), ios=10_000, repeats=live_budget(True).share(16, 1))

    @classmethod
    def full(cls) -> PeakSweep:
        depths = (1, 2, 4, 8, 16, 32, 64, 128)
        return cls(depths=depths, ios=25_000, repeats=live_budget(False).share(72, 1))


def sweep_budget(quick: bool) -> Budget:
    """The depth sweep (the longest experiment) takes the first runs of a live budget only:
    its verdict is judged on them."""
    first = live_budget(quick)
    return Budget(
        min_runs=first.min_runs, max_runs=first.min_runs, budget_s=first.budget_s, extra=0.0
    )


def measure_peak(p: Peak, runs: int) -> pd.DataFrame:
    """``runs`` independent runs of the peak loop, every (op, depth) interleaved."""
    return live_kernel.run_peak(
        ops=p.ops,
        depths=p.depths,
        batch=p.batch,
        ios=p.ios,
        repeats=p.repeats,
        warmup=p.warmup,
        runs=runs,
    )


PEAK = Experiment(
    id="R3.live_peak",
    params=Peak,
    measure=measure_peak,
    budget=live_budget,
    decided_by="R3.ubuf_gain",
    unavailable=uring_unavailable,
    results="ubuf-live-uring-peak",
)
PEAK_SWEEP = Experiment(
    id="R3.live_peak_sweep",
    params=PeakSweep,
    measure=measure_peak,
    budget=sweep_budget,
    decided_by="R3.cpu_ratio",
    unavailable=uring_unavailable,
    results="live-uring-peak",
)


@dataclass(frozen=True)
class QD1(Params):
    """io_uring round trips at queue depth 1 on /dev/zero, one variant per op, interleaved."""

    iters: int  #: round trips per batch
    repeats: int  #: rounds kept per run (16 or 72 in all, shared out over the first runs)
    warmup: int = 1
    ops: tuple[str, ...] = OPS
    target: str = "zero"
    clock: str = "cpu"

    @classmethod
    def quick(cls) -> QD1:
        return cls(iters=1_000, repeats=live_budget(True).share(16, 1))

    @classmethod
    def full(cls) -> QD1:
        return cls(iters=5_000, repeats=live_budget(False).share(72, 1))


@dataclass(frozen=True)
class QD1Ops(QD1):
    """Notebook 04's round trips: every io_uring op, READ_FIXED included."""

    ops: tuple[str, ...] = tuple(live.URING_OPS)

    @classmethod
    def quick(cls) -> QD1Ops:
        return cls(iters=1_000, repeats=live_budget(True).share(16, 1))

    @classmethod
    def full(cls) -> QD1Ops:
        return cls(iters=5_000, repeats=live_budget(False).share(72, 1))


@dataclass(frozen=True)
class Tmpfs(QD1):
    """The detour: READ and READV(1) of a tmpfs file, which io_uring hands to an io-wq thread
    (wall clock: the work runs in another thread)."""

    ops: tuple[str, ...] = ("read", "readv1")
    target: str = "tmpfs"
    clock: str = "wall"

    @classmethod
    def quick(cls) -> Tmpfs:
        return cls(iters=200, repeats=5)

    @classmethod
    def full(cls) -> Tmpfs:
        return cls(iters=500, repeats=24)


def measure_qd1(p: QD1, runs: int) -> pd.DataFrame:
    """``runs`` independent runs of the QD1 round trips of ``p``."""
    return live_kernel.run_uring_qd1(
        p.target,
        ops=p.ops,
        iters=p.iters,
        repeats=p.repeats,
        warmup=p.warmup,
        clock_name=p.clock,
        runs=runs,
    )


QD1_AB = Experiment(
    id="R3.live_qd1",
    params=QD1,
    measure=measure_qd1,
    budget=live_budget,
    unavailable=uring_unavailable,
    results="ubuf-live-uring-qd1",
)
QD1_OPS = Experiment(
    id="R3.live_qd1_ops",
    params=QD1Ops,
    measure=measure_qd1,
    budget=live_budget,
    unavailable=uring_unavailable,
    results="live-uring-qd1",
)
TMPFS = Experiment(
    id="R3.live_tmpfs",
    params=Tmpfs,
    measure=measure_qd1,
    budget=one_run,
    unavailable=uring_unavailable,
)


def measure_uring_model(p: Model, runs: int) -> pd.DataFrame:
    """(c) the io_uring request model, once per deferral rate."""
    return r2_experiments.run_uring(p, runs=runs)


MODEL_URING = Experiment(
    id="R3.model_uring",
    params=Model,
    measure=measure_uring_model,
    budget=model_budget,
    results="ubuf-uring",
)


# ---- estimates ----------------------------------------------------------------------


def rate_gain(fast: str, slow: str, rows: pd.DataFrame, confidence: float) -> Estimate:
    """Request-rate gain of ``fast`` over ``slow`` at depth 32, in %."""
    est = stats.gain(rows, f"{slow}@32", f"{fast}@32", kind="rate", confidence=confidence)
    return est.affine(100.0, quantity=f"{fast}@32 vs {slow}@32 (%)")


def qd1_gain(fast: str, rows: pd.DataFrame, confidence: float = 0.95) -> Estimate:
    """Request-rate gain of ``fast`` over READV(4K + empty) at queue depth 1, in %."""
    est = stats.gain(rows, "readv_empty", fast, kind="rate", confidence=confidence)
    return est.affine(100.0, quantity=f"QD1 {fast} vs readv_empty (%)")


def cpu_ratio(rows: pd.DataFrame, confidence: float) -> Estimate:
    """READV(1) / READ CPU per IO at the deepest queue."""
    deepest = int(rows["depth"].max())
    return stats.ratio(rows, f"readv1@{deepest}", f"read@{deepest}", confidence=confidence)


def model_ns_saved(rows: pd.DataFrame, confidence: float) -> Estimate:
    """The model's ns saved per request by READV -> READ, no deferral."""
    d = rows[rows["defer_rate"] == 0.0]
    return stats.difference(
        d, "READV as IOVEC (6.3)", "READV rewritten to READ (R3)", confidence=confidence
    )


def aa_readv1(rows: pd.DataFrame, confidence: float = 0.95) -> calibration.AA | None:
    """The A/A of the peak loop: READV(1) against its twin at depth 32, in CPU ns per IO
    (None for rows measured without the twin)."""
    twin = f"{aa_twin('readv1')}@32"
    if twin not in set(rows["variant"]):
        return None
    return calibration.aa(rows, "readv1@32", twin=twin, confidence=confidence)


# ---- summary sentences ------------------------------------------------------------------


def vm_rewrite_saved(rows: pd.DataFrame, confidence: float) -> Estimate:
    """Guest instructions saved per io_uring READV(1) of 4 KiB on /dev/zero by R3's rewrite
    alone (stock 6.1 -> 6.1 with the READV-to-READ patch), ``-cpu max``."""
    return kernel_vm.exact(
        kernel_vm.saved(rows, "6.1", "6.1+r3", "uring_readv1"), "R3.vm_rewrite_saved"
    )


def _vm_reason(out: Outcome) -> str:
    vm = out.data
    cases = ", ".join(
        f"{lab} {kernel_vm.saved(vm, '6.1', '6.1+r3', case, n, cfg):+.0f}"
        for lab, case, n, cfg in (
            ("READV(1) 64 B", "uring_readv1", 64, "base"),
            ("READ 4 KiB", "uring_read", 4096, "base"),
            ("READV(1) 4 KiB, mitigations", "uring_readv1", 4096, "mitigations"),
        )
    )
    merged = kernel_vm.saved(vm, "6.1", "6.1+merged", "uring_readv1")
    return (
        f"the change itself in a booted kernel ({kernel_vm.SETUP}, -cpu max): io_uring "
        f"READV(1) of 4 KiB from /dev/zero, one request at a time, {cases} (saved; negative: "
        f"costs more); the 6.4 import (6.1+merged) saves {merged:.0f} on the same call: on "
        "this path the rewrite does not save, so what R3 measured lies in the NVMe path or in "
        "deferral (its io_uring reads from null_blk do not give stable counts here)"
    )


def _aa_sentence(out: Outcome) -> str:
    a = aa_readv1(out.data)
    return "" if a is None else "; " + a.sentence().replace("per call", "per IO")


def _ubuf_reason(out: Outcome) -> str:
    return (
        "live peak@32 on /dev/zero, one core; R3's patch (READV -> READ) was not merged, "
        "only the generic UBUF import was" + _aa_sentence(out)
    )


def _read_reason(out: Outcome) -> str:
    return (
        "what R3's rewrite to READ would still buy today on /dev/zero (no drives, one core)"
        + _aa_sentence(out)
    )


def _cpu_reason(out: Outcome) -> str:
    deepest = max(out.params.depths)
    return (
        f"at depth {deepest}, one core on /dev/zero; R3 measured IOPS on 24 NVMe "
        "drives, and its READV -> READ rewrite was never merged"
    )


def _model_reason(out: Outcome) -> str:
    return (
        f"model only ({out.estimate.brief('{:.1f}')} ns, 95% CI); R3 published no per-request "
        "figure; the rewrite saves work only when requests are deferred"
    )


#: R3's claims, in the order the summary lists them.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="R3.ubuf_gain",
        label="io_uring READV(1) as UBUF: request-rate gain at peak",
        unit="%",
        experiment=PEAK,
        estimate=partial(rate_gain, "readv1", "readv_empty"),
        reason=_ubuf_reason,
        published=seed.gain_pct,
        original=partial(seed.original, "R3.ubuf_gain"),
    ),
    Claim(
        id="R3.read_gain",
        label="io_uring READ vs READV(4K+empty): request-rate gain at peak",
        unit="%",
        experiment=PEAK,
        estimate=partial(rate_gain, "read", "readv_empty"),
        reason=_read_reason,
        published=seed.gain_pct,
        original=partial(seed.original, "R3.read_gain"),
    ),
    Claim(
        id="R3.cpu_ratio",
        label="live: READV(1) / READ CPU per IO at peak",
        unit="x",
        experiment=PEAK_SWEEP,
        estimate=cpu_ratio,
        reason=_cpu_reason,
        published=seed.after_over_before,
        original=partial(seed.original, "R3.cpu_ratio"),
    ),
    Claim(
        id="R3.instr_saved",
        label="model: instructions saved per request by R3's rewrite, READV(1) -> READ, "
        "no deferral (callgrind)",
        unit="instructions",
        experiment=CALLGRIND_UBUF,
        estimate=partial(instructions, "r3_rewrite_saved", "R3.instr_saved"),
        reason=instr_reason,
        side="model",
    ),
    Claim(
        id="R3.model_ns_saved",
        label="model: ns saved per request by READV -> READ, no deferral",
        unit="ns",
        experiment=MODEL_URING,
        estimate=model_ns_saved,
        reason=_model_reason,
        side="model",
    ),
    Claim(
        id="R3.vm_rewrite_saved",
        label="booted kernel: guest instructions saved per io_uring READV(1) by R3's rewrite "
        "alone, 6.1 -> 6.1+r3, /dev/zero 4 KiB",
        unit="instructions",
        experiment=VM_MATRIX,
        estimate=vm_rewrite_saved,
        reason=_vm_reason,
    ),
)


def claim(claim_id: str) -> Claim:
    """The claim ``claim_id`` of this result."""
    return next(c for c in CLAIMS if c.id == claim_id)
