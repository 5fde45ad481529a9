"""The kernel bench's committed run as claims: the change itself, counted in a booted kernel.

``data/kernelvm/`` holds one full run of the era matrix (:mod:`labkit.kernelvm`): x86-64
Linux 6.1 built with and without each change, booted under QEMU TCG with ``-icount
shift=0``, so the guest's ``rdtsc`` counts guest instructions; the figure of a case is
the modal batch of 1,000 calls, divided by 1,000, agreeing over 3 boots.  The
:data:`VM_MATRIX` experiment reads that run (it builds and boots nothing: a build takes
minutes per era, so neither CI nor ``labkit reproduce`` runs it; ``labkit kernel vm``
measures it anew).  The results' claims read their figures with :func:`per_call` and
:func:`saved`; exact counts become estimates with :func:`exact`.

The bridge from R2's instructions to R2's time share (:func:`bridged_share`) is
stated in :mod:`labkit.measure.bridge` (:func:`labkit.measure.bridge.pair_share`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from labkit.kernelvm import matrix
from labkit.measure.experiment import Params
from labkit.measure.sequential import one_run
from labkit.measure.stats import Estimate
from labkit.results.claim import Experiment

#: The method a committed count states.
METHOD = (
    "guest instructions per call (QEMU TCG -icount shift=0: rdtsc counts instructions), "
    "modal batch of 1,000 calls, 3 boots agreeing: exact, the interval is the count"
)
#: What every row of the bench is: its kernel, its build and its counting.
SETUP = "x86-64 Linux 6.1.192 tinyconfig + labkit's fragment, gcc 12 -O2, QEMU 7.2 TCG -icount"


@dataclass(frozen=True)
class VmMatrix(Params):
    """The kernel bench's era matrix, as committed in ``data/kernelvm`` (a new run builds
    kernels for minutes).  Both modes read the per-call summary; full mode also reads every
    boot's rows and counts, per case, the boots whose per-call figure is the summary's
    (``boots_checked``)."""

    source: str = "committed"  #: "committed": data/kernelvm/summary.csv
    check_boots: bool = False  #: read rows.csv too and count the agreeing boots

    @classmethod
    def quick(cls) -> VmMatrix:
        return cls()

    @classmethod
    def full(cls) -> VmMatrix:
        return cls(check_boots=True)


KEYS = ["era", "config", "cpu", "case", "bytes"]


def measure_matrix(p: VmMatrix, runs: int) -> pd.DataFrame:
    """The committed run's per-call summary (``data/kernelvm/summary.csv``), as one run;
    with ``check_boots``, a ``boots_checked`` column from ``rows.csv``."""
    if p.source != "committed":
        raise ValueError(f"VmMatrix.source must be 'committed', got {p.source!r}")
    summary = matrix.committed("summary")
    if p.check_boots:
        rows = matrix.align_states(matrix.committed("rows"))
        boots = rows.merge(summary[[*KEYS, "per_call"]], on=KEYS)
        agree = boots[boots["per_call_x"] == boots["per_call_y"]].groupby(KEYS).size()
        summary = summary.merge(agree.rename("boots_checked").reset_index(), on=KEYS, how="left")
        summary["boots_checked"] = summary["boots_checked"].fillna(0).astype(int)
    return summary.assign(run=0)


VM_MATRIX = Experiment(
    id="kernelvm.matrix",
    params=VmMatrix,
    measure=measure_matrix,
    budget=one_run,
    results="kernel-vm-summary",
)


def per_call(
    rows: pd.DataFrame,
    era: str,
    case: str,
    nbytes: int,
    config: str = "base",
    cpu: str = "max",
) -> float:
    """The modal guest instructions per call of one (era, case, bytes, config, CPU model).

    Raises:
        KeyError: for a combination the run does not hold.
    """
    hit = rows[
        (rows["era"] == era)
        & (rows["case"] == case)
        & (rows["bytes"] == nbytes)
        & (rows["config"] == config)
        & (rows["cpu"] == cpu)
    ]
    if hit.empty:
        raise KeyError(f"kernel bench: no row for {era} {case} {nbytes} B {config} {cpu}")
    return float(hit["per_call"].iloc[0])


def saved(
    rows: pd.DataFrame,
    before: str,
    after: str,
    case: str,
    nbytes: int = 4096,
    config: str = "base",
    cpu: str = "max",
) -> float:
    """Instructions saved per call from era ``before`` to era ``after`` (before - after): the
    modal counts of :func:`labkit.kernelvm.matrix.summarize` (null_blk's aligned on one
    state)."""
    return per_call(rows, before, case, nbytes, config, cpu) - per_call(
        rows, after, case, nbytes, config, cpu
    )


def exact(value: float, quantity: str) -> Estimate:
    """A count of the bench as an Estimate: exact, so its interval is the count."""
    if not math.isfinite(value):
        raise ValueError(f"{quantity}: not a count: {value}")
    return Estimate.count(value, quantity, METHOD)


def scaled(share: Estimate, ratio: float, low: float, high: float, quantity: str) -> Estimate:
    """``share`` times a ratio known to lie in [``low``, ``high``] (point ``ratio``): the
    interval widened by the ratio's own range (both positive)."""
    if not 0 < low <= ratio <= high:
        raise ValueError(f"scaled: need 0 < low <= ratio <= high, got {low}, {ratio}, {high}")
    lo = min(share.ci_low * low, share.ci_low * high)
    hi = max(share.ci_high * low, share.ci_high * high)
    out = share.affine(ratio, quantity=quantity)
    return replace(out, ci_low=lo, ci_high=hi)


def attribution(
    pair: str, case: str, nbytes: int = 4096, config: str = "base", cpu: str = "max"
) -> pd.DataFrame:
    """The committed attribution of one saving by kernel function (``attribution.csv``):
    ``function``, ``before``, ``after``, ``saved`` (per call), the functions that account
    for at least 90% of it (``top``) and the rest summed as "other functions".

    Raises:
        KeyError: for a pair and case the run did not attribute.
    """
    a = matrix.committed("attribution")
    sel = a[
        (a["pair"] == pair)
        & (a["case"] == case)
        & (a["bytes"] == nbytes)
        & (a["config"] == config)
        & (a["cpu"] == cpu)
    ]
    if sel.empty:
        raise KeyError(f"kernel bench: no attribution of {pair!r} {case} {nbytes} B")
    cols = ["function", "before", "after", "saved"]
    top = sel[sel["top"].astype(str) == "True"][cols]
    rest = sel[sel["top"].astype(str) != "True"][cols]
    if not rest.empty:
        other = pd.DataFrame([["other functions", *rest[cols[1:]].sum().tolist()]], columns=cols)
        top = pd.concat([top, other], ignore_index=True)
    return top.reset_index(drop=True)


#: How the user-space oracle's functions map onto the booted kernel's: the x86-64 build
#: inlines ``copy_iovec_from_user`` and ``import_ubuf`` into ``__import_iovec_ubuf``.
_ORACLE_NAMES = {"iovec_from_user.part.0": "iovec_from_user"}
_INLINED = {"copy_iovec_from_user": "__import_iovec_ubuf", "import_ubuf": "__import_iovec_ubuf"}


def oracle_reconciliation(oracle: pd.DataFrame, opt: str = "O2") -> pd.DataFrame:
    """The seed mail's change (v1) per readv(1), function by function: the user-space
    oracle (``oracle``: :func:`labkit.kernelsrc.counts.kernel_counts` with
    ``functions=True``, UML's build of ``lib/iov_iter.c`` at ``opt``, eras 6.1 and
    6.1+ubuf) beside the booted x86-64 kernel (6.1 -> 6.1+v1, ``attribution.csv``).

    Columns: ``function``, ``oracle_before``, ``oracle_after``, ``oracle_saved``,
    ``booted_before``, ``booted_after``, ``booted_saved`` and ``booted`` (what the booted
    kernel has of a function the attribution does not list), one row per function and a
    ``total`` row.  A function the oracle calls out of line that x86-64 inlines (into the
    function :data:`_INLINED` names) has no booted counts (NaN, ``booted`` "inlined"); one
    the attribution does not list otherwise did not change there (it lists only the
    functions whose count changed): saved 0, before and after not recorded (NaN,
    ``booted`` "unchanged").
    """
    o = oracle[(oracle["opt"] == opt) & (oracle["call"] == "readv(1)")]
    o = o.assign(function=o["function"].replace(_ORACLE_NAMES))
    piv = o.pivot_table(index="function", columns="era", values="instructions", aggfunc="sum")
    piv = piv.reindex(columns=["6.1", "6.1+ubuf"]).fillna(0.0)
    b = attribution("R2 as mailed (v1)", "readv1").set_index("function")
    names = [*piv.index, *(f for f in b.index if f not in piv.index and f != "other functions")]
    rows = []
    for f in names:
        ob, oa = (piv.loc[f, "6.1"], piv.loc[f, "6.1+ubuf"]) if f in piv.index else (0.0, 0.0)
        if f in b.index:
            bb, ba, note = b.loc[f, "before"], b.loc[f, "after"], ""
            bs = bb - ba
        elif f in _INLINED:
            bb = ba = bs = math.nan
            note = "inlined"
        else:
            bb, ba, bs, note = math.nan, math.nan, 0.0, "unchanged"
        rows.append([f, ob, oa, ob - oa, bb, ba, bs, note])
    cols = ["function", "oracle_before", "oracle_after", "oracle_saved"]
    cols += ["booted_before", "booted_after", "booted_saved", "booted"]
    out = pd.DataFrame(rows, columns=cols)
    total = ["total", *out[cols[1:7]].sum(min_count=1).tolist(), ""]
    return pd.concat([out, pd.DataFrame([total], columns=cols)], ignore_index=True)


__all__: list[str] = []  # internal: the results' claims and figures use these
