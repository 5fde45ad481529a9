"""The eras side by side: boots, per-call counts, savings, identities and attribution.

A *plan* lists what to boot: per configuration and CPU model, the eras and the guest's
groups.  Each (era, config, cpu, groups) is booted ``boots`` times (two QEMU processes
at a time); every boot's rows are kept.  The figure of a case is the modal batch's
instructions per call; :func:`summarize` says how many batches agree within a boot and
how many boots agree with each other.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from labkit import config as labkit_config
from labkit._files import atomic_write
from labkit._progress import ProgressLine
from labkit._store import StoreDamaged
from labkit.kernelvm import attrib, build, guest, qemu


@dataclass(frozen=True)
class Step:
    """Boot each of ``eras`` with ``config`` on ``cpu`` and run ``groups``."""

    config: str
    cpu: str
    eras: tuple[str, ...]
    groups: tuple[str, ...]


#: The whole era matrix (benchmarks/kernel_vm_matrix.py).
MATRIX: tuple[Step, ...] = (
    Step("base", "max", ("6.1", "6.1+v1", "6.1+merged", "6.1+r3"),
         ("import", "floor", "zero", "uring", "nullblk")),
    Step("base", "max", ("6.1", "6.1-r1fix"), ("fixed",)),
    Step("base", "max-erms", ("6.1", "6.1+v1", "6.1+merged"), ("import", "floor", "zero", "uring")),
    Step("mitigations", "max", ("6.1", "6.1+v1", "6.1+merged", "6.1+r3"),
         ("import", "floor", "zero", "uring", "nullblk")),
)  # fmt: skip

#: The smallest plan: both sides of the change, /dev/zero only (the suite's boots).
CHANGE: tuple[Step, ...] = (
    Step("base", "max", ("6.1", "6.1+merged"), ("import", "floor", "zero")),
)


@dataclass(frozen=True)
class Pair:
    """A saving to attribute: ``before`` against ``after`` on these cases."""

    name: str
    config: str
    cpu: str
    before: str
    after: str
    cases: tuple[tuple[str, int], ...]


_R2_CASES = (("readv1", 4096), ("readv1", 64), ("readv_4k_empty", 4096),
             ("uring_readv1", 4096), ("nullb_readv1", 4096))  # fmt: skip
ATTRIBUTION: tuple[Pair, ...] = (
    Pair("R2 as mailed (v1)", "base", "max", "6.1", "6.1+v1", _R2_CASES),
    Pair("R2 as merged", "base", "max", "6.1", "6.1+merged", _R2_CASES),
    Pair("R2 as merged, mitigations", "mitigations", "max", "6.1", "6.1+merged",
         (("readv1", 4096),)),
    Pair("R3", "base", "max", "6.1", "6.1+r3", (("uring_readv1", 4096),
                                                ("nullb_uring_readv1", 4096))),
    Pair("R1", "base", "max", "6.1-r1fix", "6.1", (("uring_read_fixed_tail", 4096),)),
)  # fmt: skip
ATTRIB_CALLS = 100


#: The order eras are built in one object folder: the io_uring eras first, then the two that
#: change include/linux/uio.h (whose rebuild is the widest) one after the other.
BUILD_ORDER = ("6.1", "6.1+r3", "6.1-r1fix", "6.1+v1", "6.1+merged")


def plan_steps(plan: tuple[Step, ...], boots: int) -> int:
    """The builds and boots of ``plan`` with ``boots`` boots of each (a progress line's
    total): one build per (era, config), one boot per era of a step per boot."""
    builds = {(era, step.config) for step in plan for era in step.eras}
    return len(builds) + sum(len(step.eras) for step in plan) * boots


def build_plan(
    plan: tuple[Step, ...],
    log: Callable[[str], None] | None = None,
    line: ProgressLine | None = None,
) -> dict[tuple[str, str], build.Kernel]:
    """Build every (era, config) of the plan, one configuration's eras after another (each
    configuration reuses its object folder); each build is a step of ``line``."""
    return {key: k for key, k in _build_each(plan, log, line)}


def _build_order(plan: tuple[Step, ...]) -> list[tuple[str, str]]:
    wanted = {(era, step.config) for step in plan for era in step.eras}
    return [(era, config) for config in dict.fromkeys(step.config for step in plan)
            for era in BUILD_ORDER if (era, config) in wanted]  # fmt: skip


def _build_each(
    plan: tuple[Step, ...], log: Callable[[str], None] | None, line: ProgressLine | None
) -> Iterator[tuple[tuple[str, str], build.Kernel]]:
    for era, config in _build_order(plan):
        if line is not None:
            line.step(f"building {era} ({config})")
        k = build.build(era, config, log=log)
        if line is not None:
            line.done()
        yield (era, config), k


#: The boots that take longest: their groups register the 1 GiB buffer ("fixed").
_LONG_GROUPS = frozenset({"fixed"})


def run_plan(
    plan: tuple[Step, ...],
    *,
    boots: int = 3,
    parallel: int = 2,
    log: Callable[[str], None] | None = None,
    line: ProgressLine | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Build and boot the plan; (rows of every boot, identities and timings).

    The kernels are built one after another in :data:`BUILD_ORDER` while ``parallel`` QEMU
    processes boot those already built (a kernel the cache holds is booted at once); of the
    boots ready to start, the long ones (the 1 GiB registration) go first.  The rows are
    returned in the plan's order whatever order the boots ended in.  Each build (a cached
    one returns at once) and each boot is a step of ``line`` (:func:`plan_steps` of them).
    """
    say = log or (lambda _s: None)
    t0 = time.monotonic()
    initrd = guest.initramfs(build.cache_root())
    jobs = [(step, era, b) for step in plan for era in step.eras for b in range(1, boots + 1)]
    kernels: dict[tuple[str, str], build.Kernel] = {}
    for era, config in _build_order(plan):
        with contextlib.suppress(StoreDamaged):  # build() below rebuilds a damaged one
            if (k := build.cached(era, config)) is not None:
                kernels[(era, config)] = k

    def one(job: tuple[Step, str, int]) -> tuple[guest.Boot, float]:
        step, era, b = job
        k = kernels[(era, step.config)]
        if line is not None:
            line.step(f"booting {era} {step.config} {step.cpu} #{b}")
        parsed, _log, secs = qemu.boot(k.image, initrd, step.cpu, list(step.groups))
        say(f"  boot {era} {step.config} {step.cpu} #{b}: {secs:.0f} s")
        if line is not None:
            line.done()
        return parsed, secs

    futures: dict[int, Future[tuple[guest.Boot, float]]] = {}

    def submit_ready(pool: ThreadPoolExecutor) -> None:
        ready = [i for i, (step, era, _b) in enumerate(jobs)
                 if i not in futures and (era, step.config) in kernels]  # fmt: skip
        ready.sort(key=lambda i: not (_LONG_GROUPS & set(jobs[i][0].groups)))
        for i in ready:
            futures[i] = pool.submit(one, jobs[i])

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        try:
            submit_ready(pool)
            t_build0 = time.monotonic()
            for key, k in _build_each(plan, say, line):
                kernels[key] = k
                submit_ready(pool)
            t_build = time.monotonic() - t_build0
            results = [futures[i].result() for i in range(len(jobs))]
        finally:
            for f in futures.values():
                f.cancel()
    rows: list[dict[str, Any]] = []
    identity: dict[str, Any] = {"kernels": {}, "boots": []}
    for (step, era, b), (parsed, secs) in zip(jobs, results, strict=True):
        for r in parsed.rows:
            rows.append({"era": era, "config": step.config, "cpu": step.cpu, "boot": b, **r})
        identity["boots"].append({
            "era": era, "config": step.config, "cpu": step.cpu, "boot": b,
            "groups": list(step.groups), "seconds": round(secs, 1),
            "errors": parsed.errors, **{k: v for k, v in parsed.identity.items()},
        })  # fmt: skip
    for (era, config), k in kernels.items():
        identity["kernels"][f"{era} {config}"] = k.record
    identity["guest_source_sha256"] = guest.source_hash()
    identity["cpu_models"] = {s.cpu: qemu.qemu_command(Path("x"), Path("y"), s.cpu, [])[6]
                              for s in plan}  # fmt: skip
    identity["kernel_cmdline"] = qemu.KERNEL_CMDLINE
    identity["seconds"] = {"build": round(t_build, 1), "total": round(time.monotonic() - t0, 1)}
    return pd.DataFrame(rows), identity


#: The case each boot's null_blk counts are aligned on: ``read(4K)`` with O_DIRECT from
#: null_blk, a path none of the eras' patches touch.
STATE_CASE = ("nullb_read", 4096)


def align_states(rows: pd.DataFrame) -> pd.DataFrame:
    """The boots' rows with each boot's null_blk counts aligned on one state.

    A boot that reads from null_blk lands in one of two states 8 instructions per call
    apart, which shift every null_blk case of that boot alike (the /dev/zero cases never).
    Each boot's ``nullb_*`` counts are shifted by its own :data:`STATE_CASE` count less the
    lowest one of the same config and CPU model over every era and boot (``state_shift``:
    0 or 8; NaN for a boot with null_blk cases but no :data:`STATE_CASE`, left unshifted).
    ``raw_per_call`` keeps the count as measured."""
    out = rows.copy()
    out["raw_per_call"] = out["per_call"]
    out["state_shift"] = 0.0
    nullb = out["case"].str.startswith("nullb_")
    if not nullb.any():
        return out
    case, nbytes = STATE_CASE
    ref = out[(out["case"] == case) & (out["bytes"] == nbytes)]
    lowest = ref.groupby(["config", "cpu"])["per_call"].transform("min")
    shift = (ref["per_call"] - lowest).set_axis(
        pd.MultiIndex.from_frame(ref[["config", "cpu", "era", "boot"]])
    )
    keys = pd.MultiIndex.from_frame(out.loc[nullb, ["config", "cpu", "era", "boot"]])
    out.loc[nullb, "state_shift"] = shift.reindex(keys).to_numpy()
    out.loc[nullb, "per_call"] = out.loc[nullb, "raw_per_call"] - out.loc[
        nullb, "state_shift"
    ].fillna(0.0)
    return out


def summarize(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (config, cpu, era, case, bytes): the modal per-call count over boots (null_blk's
    aligned on one state, :func:`align_states`), how many boots give it, how many boots were
    shifted to that state, the fewest batches agreeing in any boot, and the batches per boot."""
    keys = ["config", "cpu", "era", "case", "bytes"]
    out = []
    for key, g in align_states(rows).groupby(keys, sort=False):
        counts = g["per_call"].value_counts()
        out.append({
            **dict(zip(keys, key, strict=True)),
            "per_call": float(counts.index[0]),
            "boots_agree": int(counts.iloc[0]),
            "boots_shifted": int((g["state_shift"].fillna(0) != 0).sum()),
            "boots": len(g),
            "batches_agree_min": int(g["agree"].min()),
            "min_per_call": float((g["min_total"] / g["calls"]).min()),
            "median_per_call": float((g["median_total"] / g["calls"]).median()),
            "batches": int(g["batches"].iloc[0]),
            "calls_per_batch": int(g["calls"].iloc[0]),
        })  # fmt: skip
    return pd.DataFrame(out)


def savings(summary: pd.DataFrame, before: str = "6.1") -> pd.DataFrame:
    """Each era's modal per-call count against ``before``'s, same config, cpu and case.

    :data:`STATE_CASE` is not listed: the null_blk counts are aligned on it, so its saving
    is 0 by construction (:func:`align_states`)."""
    base = summary[summary["era"] == before].set_index(["config", "cpu", "case", "bytes"])
    out = []
    for _, r in summary[summary["era"] != before].iterrows():
        key = (r["config"], r["cpu"], r["case"], r["bytes"])
        if key not in base.index or (r["case"], r["bytes"]) == STATE_CASE:
            continue
        b, a = float(base.loc[key, "per_call"]), float(r["per_call"])
        out.append({"config": r["config"], "cpu": r["cpu"], "case": r["case"],
                    "bytes": r["bytes"], "before_era": before, "era": r["era"],
                    "before": b, "after": a, "saved": b - a,
                    "saved_share": (b - a) / b})  # fmt: skip
    return pd.DataFrame(out)


def attribute(
    pairs: tuple[Pair, ...] = ATTRIBUTION,
    *,
    calls: int = ATTRIB_CALLS,
    log: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Boot each era of the pairs once under the plugin; per pair and case, the saving by
    function (:func:`labkit.kernelvm.attrib.saving_table`), long form."""
    say = log or (lambda _s: None)
    root = build.cache_root()
    so = attrib.plugin(root)
    initrd = guest.initramfs(root)
    wanted: dict[tuple[str, str, str], set[tuple[str, int]]] = {}
    for p in pairs:
        for era in (p.before, p.after):
            wanted.setdefault((era, p.config, p.cpu), set()).update(p.cases)
    per: dict[tuple[str, str, str, str, int], pd.Series] = {}

    def one(item: tuple[tuple[str, str, str], set[tuple[str, int]]]) -> None:
        (era, config, cpu), cases = item
        k = build.build(era, config, log=say)
        symbols = attrib.SymbolMap(k.system_map)
        ordered = sorted(cases)
        out = root / "attrib" / f"{era}-{config}-{cpu}-{time.time_ns()}.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        groups = [f"attrib={c}:{n}:{calls}" for c, n in ordered]
        parsed, _log, secs = qemu.boot(k.image, initrd, cpu, groups,
                                       plugin=[str(so), f"out={out}"])  # fmt: skip
        windows = attrib.read_windows(out)
        out.unlink()
        if len(windows) != len(ordered) or parsed.errors:
            raise attrib.KernelVMError(
                f"attribution boot of {era}: {len(windows)} windows for {len(ordered)} cases; "
                f"errors: {parsed.errors}"
            )
        for (c, n), w in zip(ordered, windows, strict=True):
            per[(era, config, cpu, c, n)] = attrib.by_function(w, symbols, calls)
        say(f"  attribution boot {era} {config} {cpu}: {secs:.0f} s")

    for (era, config), _ in {(e, c): 0 for (e, c, _cpu) in wanted}.items():
        build.build(era, config, log=say)  # built one after another, before the boots
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(one, wanted.items()))
    frames = []
    for p in pairs:
        for c, n in p.cases:
            t = attrib.saving_table(per[(p.before, p.config, p.cpu, c, n)],
                                    per[(p.after, p.config, p.cpu, c, n)])  # fmt: skip
            t = t.reset_index()
            t.insert(0, "pair", p.name)
            t.insert(1, "before_era", p.before)
            t.insert(2, "after_era", p.after)
            t.insert(3, "config", p.config)
            t.insert(4, "cpu", p.cpu)
            t.insert(5, "case", c)
            t.insert(6, "bytes", n)
            frames.append(t)
    return pd.concat(frames, ignore_index=True)


def write(out: Path, name: str, frame: pd.DataFrame | dict[str, Any]) -> Path:
    """Write a table (CSV) or a record (JSON) into ``out`` atomically, never through a link."""
    path = out / name
    if isinstance(frame, pd.DataFrame):
        atomic_write(path, frame.to_csv(index=False, float_format="%.2f"), root=out)
    else:
        atomic_write(path, json.dumps(frame, indent=1, sort_keys=True) + "\n", root=out)
    return path


#: The tables of a committed run (``data/kernelvm``), by name.
COMMITTED = ("rows", "summary", "savings", "attribution")


def committed(name: str) -> pd.DataFrame:
    """One table of the era matrix's committed run (``data/kernelvm/<name>.csv``, shipped
    with labkit): "rows", "summary", "savings" or "attribution" (:data:`COMMITTED`).

    Raises:
        ValueError: for another name.
        FileNotFoundError: when the run is not there.
    """
    if name not in COMMITTED:
        raise ValueError(f"committed: {name!r} is not one of {', '.join(COMMITTED)}")
    return pd.read_csv(labkit_config.resource("kernelvm") / f"{name}.csv")


__all__ = [
    "STATE_CASE",
    "align_states",
    "attribute",
    "committed",
    "plan_steps",
    "run_plan",
    "savings",
    "summarize",
]
