"""R1 at the source: the real ``iov_iter_advance()`` of Linux 6.1 and 6.12, timed as a claim.

The experiment ``R1.kernel_seek`` times the real advance over a 1 GiB bvec
table (:mod:`labkit.kernelsrc.seek`) in independent runs, in the measuring
phase with the other timed experiments; the claim ``R1.kernel_ns_per_page``
(declared in :mod:`labkit.claims.r1`) is 6.12's ns per skipped page at -O2,
with the other eras and levels and the model's two walks in its reason.  It is
never judged: the code is not the 2019 code (``data/published/setups.csv``).
Where the oracle cannot be built, or in quick mode before it is built, the row
says so with the one command that makes it available.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

import pandas as pd

from labkit.claims.claim import EstimateFn, Experiment, get
from labkit.claims.engine import Measured, Outcome
from labkit.experiments import callgrind
from labkit.experiments.params import Params
from labkit.kernelsrc import seek
from labkit.kernelsrc.counts import kernel_counts
from labkit.measure import results, stats
from labkit.measure.resampling import Estimate
from labkit.measure.sequential import FULL_MIN_RUNS, Budget

#: The headline's era and level: today's code as a distribution kernel builds it.
HEADLINE = ("6.12", "O2")
LEVELS = {"O2": "-O2", "defconfig": "-Os (UML defconfig)"}


@dataclass(frozen=True)
class KernelSeek(Params):
    """The real ``iov_iter_advance()`` timed over a 1 GiB bvec table
    (:mod:`labkit.kernelsrc.seek`): the eras and optimisation levels, advances per batch,
    and whether a missing build of the oracle is made first (full mode) or the row says
    how to make it (quick mode: 6.12 at -O2 only, and only if already built)."""

    eras: tuple[str, ...]
    opts: tuple[str, ...]
    iters: int
    build: bool

    @classmethod
    def quick(cls) -> KernelSeek:
        return cls(eras=("6.12",), opts=("O2",), iters=20, build=False)

    @classmethod
    def full(cls) -> KernelSeek:
        return cls(eras=("6.12", "6.1"), opts=("O2", "defconfig"), iters=20, build=True)


def kernel_seek_budget(quick: bool) -> Budget:
    """Runs of the real advance (about 0.2 s per era and level each): 3 in quick mode (2
    runs' interval is widened about 9x for its small sample),
    :data:`~labkit.measure.sequential.FULL_MIN_RUNS` in full mode, shared out over sessions
    like every experiment's first runs; no looks (the row has nothing to be decided
    against: its verdict is *not comparable*, data/published/setups.csv)."""
    if quick:
        return Budget(min_runs=3, max_runs=3, budget_s=10.0)
    return Budget(min_runs=FULL_MIN_RUNS, max_runs=FULL_MIN_RUNS, budget_s=60.0)


def measure_kernel_seek(p: KernelSeek, runs: int) -> pd.DataFrame:
    """``runs`` independent runs of the real advance, each a fresh driver process per era
    and level."""
    return seek.measure_runs(p.eras, p.opts, runs, iters=p.iters)


def kernel_seek_unavailable(p: KernelSeek) -> str:
    """Why the real advance is not timed here ("" if it is), with the command that fixes it."""
    return seek.unavailable(p.eras, build_missing=p.build)


KERNEL_SEEK = Experiment(
    id="R1.kernel_seek",
    params=KernelSeek,
    measure=measure_kernel_seek,
    budget=kernel_seek_budget,
    unavailable=kernel_seek_unavailable,
    results="kernel-source-seek",
)


def kernel_ns_per_page(era: str, opt: str, rows: pd.DataFrame, confidence: float) -> Estimate:
    """The real advance's ns per skipped page in ``era`` at ``opt``: the slope of ns over
    pages skipped (0 to 262,143), each offset's best-of-five batch one sample per run.

    Raises:
        KeyError: when the rows hold no timing of ``era`` at ``opt``.
    """
    d = rows[(rows["era"] == era) & (rows["opt"] == opt)]
    if d.empty:
        raise KeyError(f"no timed advance of {era} at {opt} in these rows")
    return stats.slope(d, confidence=confidence)


def walk_slope(variant: str, rows: pd.DataFrame, confidence: float) -> Estimate:
    """A model seek's ns per skipped page over offsets of at least 16 pages (as
    ``R1.ns_per_page`` is for walk-2019)."""
    return stats.slope(rows, variant=variant, min_x=16, confidence=confidence)


def _quoted(out: Outcome, estimate: EstimateFn, m: Measured | None = None) -> str:
    """``estimate`` of the rows of ``m`` (default: the outcome's), pooled over sessions as
    the outcome's own figure is, quoted with its interval."""
    m = out.measured if m is None else m
    est = m.estimate(replace(out.claim, estimate=estimate))
    return "not measured" if est is None else est.brief("{:.2f}")


def kernel_seek_reason(out: Outcome) -> str:
    """The method of ``R1.kernel_ns_per_page``, the other eras and levels, and the model's
    walks measured in the same reproduction (``R1.model_seek``)."""
    p = out.params
    others = [
        f"{era} at {LEVELS[opt]} {_quoted(out, partial(kernel_ns_per_page, era, opt))}"
        for era in p.eras
        for opt in p.opts
        if (era, opt) != HEADLINE
    ]
    model = out.session.measure(get("R1.ns_per_page").experiment)
    beside = ""
    if not model.why_not:
        beside = (
            f"; the model in the same reproduction: walk-2019 "
            f"{_quoted(out, partial(walk_slope, 'walk-2019'), model)} ns, labkit's own C of "
            f"today's walk {_quoted(out, partial(walk_slope, 'walk'), model)} ns"
        )
    return (
        "the real lib/iov_iter.c (Debian's source, its own kbuild) in user space: "
        "iov_iter_advance from a kept iterator over 262,144 one-page bvecs, the slope of ns over "
        "0-262,143 pages skipped (best of 5 batches per offset, one fresh process per run)"
        + (f"; also {', '.join(others)} ns" if others else "")
        + beside
        + "; a clock figure of this CPU, beside its clock-free count (R1.kernel_instr_per_page)"
    )


def slopes(m: Measured) -> dict[tuple[str, str], Estimate]:
    """ns per skipped page of each era and level the rows of ``m`` (``R1.kernel_seek``'s)
    hold, pooled over sessions as the claim's figure is; {} when it was not measured."""
    if m.why_not or m.data.empty:
        return {}
    claim = get("R1.kernel_ns_per_page")
    pairs = m.data[["era", "opt"]].drop_duplicates().itertuples(index=False)
    out = {}
    for era, opt in pairs:
        est = m.estimate(replace(claim, estimate=partial(kernel_ns_per_page, era, opt)))
        if est is not None:
            out[(str(era), str(opt))] = est
    return out


def _counts() -> dict[tuple[str, str], float]:
    """Instructions per skipped page of the real advance and of the model's walk-2019, from
    the committed callgrind samples (clock-free; {} where none is shipped)."""
    out: dict[tuple[str, str], float] = {}
    k = kernel_counts()
    if not k.empty:
        for r in k[k["call"] == "advance/page"].itertuples():
            out[(str(r.era), str(r.opt))] = float(r.instructions)
    runs = results.runs("ubuf-callgrind")
    if runs:
        rows, _ = results.load_run(runs[-1])
        out[("model", "walk-2019")] = float(callgrind.evidence(rows)["r1_walk_per_page"])
    return out


def comparison(kernel: Measured, model: Measured) -> pd.DataFrame:
    """The real advance beside the model's two walks: one row per code and level, its ns
    per skipped page with the interval and runs (measured here), and its instructions per
    page (the committed callgrind counts, clock-free; NaN where none was counted)."""
    counts = _counts()
    rows = []
    for (era, opt), est in sorted(
        slopes(kernel).items(), key=lambda kv: (kv[0][0] != "6.12", kv[0])
    ):
        rows.append((f"real {era}", LEVELS[opt], est, counts.get((era, opt), float("nan"))))
    if not model.why_not:
        claim = get("R1.ns_per_page")
        for variant, what in (
            ("walk-2019", "model walk-2019"),
            ("walk", "model walk (today's loop)"),
        ):
            est = model.estimate(replace(claim, estimate=partial(walk_slope, variant)))
            if est is not None:
                n = counts.get(("model", variant), float("nan"))
                rows.append((what, "labkit's C build", est, n))
    return pd.DataFrame(
        [
            {"code": c, "level": lv, "ns_per_page": e.estimate, "ci_low": e.ci_low}
            | {"ci_high": e.ci_high, "runs": e.n_runs, "instructions_per_page": n}
            for c, lv, e, n in rows
        ],
        columns=["code", "level", "ns_per_page", "ci_low", "ci_high", "runs"]
        + ["instructions_per_page"],
    )


# KERNEL_SEEK, kernel_ns_per_page and kernel_seek_reason: declared as a claim by r1.py;
# slopes and comparison: notebook 02's figure and table (labkit.claims.figures); the rest: tests
__all__: list[str] = []
