"""The bridge from a published share of time to instructions: when an instruction row is judged.

Instructions are not time.  R2 published time: readv(1) took 183.5 ns a call in
2023 and the change saved about 3% of it (5.5 ns; band 2.5-3.5%, 4.59-6.42 ns).
A count of instructions saved (``dI``) says the same thing only through a stated
bridge with measured inputs::

    dI / I_call = (dt / t_call) / kappa

* ``I_call``: instructions of one whole readv(1) call in the kernel whose ``dI``
  is counted (a booted kernel under QEMU ``-icount`` counts it to the
  instruction, system-call entry and exit included);
* ``dt / t_call``: the published share of time (the claim's band);
* ``kappa``: what one saved instruction costs against the call's average
  instruction: (ns per saved instruction) / (ns per instruction of the call).
  It is measured by timing the same two booted kernels (with and without the
  change, the same ``/init``) on real hardware (KVM, not TCG), where
  ``kappa = (dt / dI) / (t_call / I_call)`` on that host.  Without a measured
  ``kappa`` there is no bridge, and the instruction row is not judged against
  the claim: it stays a check of the method (:func:`labkit.measure.verdicts.restate`).

:func:`instruction_band` turns the claim's band of time shares into a band of
instructions saved, :func:`share_band` into a band of instruction shares
(``dI / I_call``); :func:`missing` says which inputs are not measured.

How the kernel bench's rows are judged: a row counting the change itself in a booted
kernel (the evidence that decides, :func:`labkit.measure.verdicts.decisive`: R2's
instructions saved per readv(1), its share of the call's instructions) is declared with
the role ``claim`` only with a band from this bridge, its inputs measured and named in
the band's source (``bands.csv``); until ``kappa`` is measured it is declared a ``method
check`` against its direction (at least one instruction saved). For R2 today: ``I_call``
comes from the bench's own count of a whole readv(1) call in 6.1 (guest instructions per
call under ``-icount``); ``kappa`` needs the same two kernels booted under KVM on one
host and timed per call (``dt``, ``t_call``).

**The pair bridge** (:func:`pair_share`), which can be measured on any host: two calls
that both exist after the change and differ only on the import path, ``readv(4K+empty)``
(ITER_IOVEC) and ``readv(1)`` (ITER_UBUF), are

* timed on this host's kernel (the live A/B): ``dt_pair`` ns, as a share of the host's
  ``readv(4K+empty)`` call, ``s_pair = dt_pair / t_call``;
* counted in the booted kernel with the change (6.1 with the merged 6.4 text):
  ``dI_pair`` instructions;

so the import path's ns per instruction on this host is ``dt_pair / dI_pair``, and the
change's ``dI`` instructions saved take ``dI * dt_pair / dI_pair`` ns, a share
``s_pair * dI / dI_pair`` of the call.  Its assumptions, stated with every figure: the
change's saved instructions cost what the pair's extra instructions cost on this host (the
same code: copying, checking and stepping an iovec), and the host's kernel does the
pair's extra work in as many instructions as the booted 6.1 does (``dI_pair`` is taken
over the bench's CPU models, with and without ERMS, as a range).  Its time is the live
proxy's, on a later kernel, so a row bridged this way is a stand-in
(:func:`labkit.measure.verdicts.restate`): consistent in magnitude or not, never reproduced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Bridge:
    """The measured inputs of the bridge (None where not measured)."""

    instr_per_call: float | None  #: I_call: instructions of one whole call, same kernel
    kappa_low: float | None  #: the interval of kappa (see the module docstring)
    kappa_high: float | None
    source: str = ""  #: where the inputs were measured (kernel, config, CPU model, host)


def missing(bridge: Bridge) -> list[str]:
    """The inputs a bridge still needs, in words ([] when it can be used)."""
    out = []
    if bridge.instr_per_call is None or not bridge.instr_per_call > 0:
        out.append("I_call (instructions of one whole readv(1) call, counted in the booted "
                   "kernel whose saving is counted: QEMU -icount)")  # fmt: skip
    k = (bridge.kappa_low, bridge.kappa_high)
    if any(v is None or not math.isfinite(v) or v <= 0 for v in k) or k[0] > k[1]:  # type: ignore[operator]
        out.append("kappa (ns per saved instruction over ns per instruction of the call: the "
                   "two booted kernels timed under KVM on one host)")  # fmt: skip
    return out


def instruction_band(share_low: float, share_high: float, bridge: Bridge) -> tuple[float, float]:
    """The band of instructions saved per call that the claim's band of time shares
    (``share_low``..``share_high``, fractions: 0.025..0.035 for R2) means through
    ``bridge``: ``[share_low * I_call / kappa_high, share_high * I_call / kappa_low]``.

    Raises:
        ValueError: for a share band that is not 0 <= low < high < 1, or a bridge with
            inputs missing (:func:`missing` names them).
    """
    if not 0 <= share_low < share_high < 1:
        raise ValueError(
            f"instruction_band: need 0 <= low < high < 1, got {share_low}, {share_high}"
        )
    gaps = missing(bridge)
    if gaps:
        raise ValueError("instruction_band: the bridge is not measured: needs " + "; ".join(gaps))
    n = float(bridge.instr_per_call)  # type: ignore[arg-type]
    return share_low * n / float(bridge.kappa_high), share_high * n / float(bridge.kappa_low)  # type: ignore[arg-type]


def share_band(share_low: float, share_high: float, bridge: Bridge) -> tuple[float, float]:
    """The band of instruction shares saved (``dI / I_call``, fractions) that the claim's
    band of time shares means: ``[share_low / kappa_high, share_high / kappa_low]``.

    Raises:
        ValueError: as :func:`instruction_band`.
    """
    lo, hi = instruction_band(share_low, share_high, bridge)
    n = float(bridge.instr_per_call)  # type: ignore[arg-type]
    return lo / n, hi / n


def pair_share(pair_share_pct: float, saved_instr: float, pair_instr: float) -> float:
    """The change's share of the call's time through the pair bridge (module docstring):
    ``pair_share_pct * saved_instr / pair_instr`` (percent in, percent out).

    Raises:
        ValueError: for a pair count that is not positive, or a NaN input.
    """
    if not pair_instr > 0:
        raise ValueError(
            f"pair_share: the pair's instruction difference must be > 0, got {pair_instr}"
        )
    if math.isnan(pair_share_pct) or math.isnan(saved_instr):
        raise ValueError("pair_share: NaN input")
    return pair_share_pct * saved_instr / pair_instr


__all__ = ["Bridge", "instruction_band", "missing", "pair_share", "share_band"]
