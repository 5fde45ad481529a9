"""Instructions of the real kernel code per call, per era and optimisation level (callgrind).

Each count runs an era's ``lko-drive`` (see ``glue/lko_drive.c``) under
``valgrind --tool=callgrind --collect-atstart=no`` with ``--toggle-collect`` on
the shim's entry points that do the counted work (``lko_import_iovec``,
``lko_zero``, ``lko_copy_to``, ``lko_advance``): collection is on only inside
those calls.  Of what is collected, only the *self* cost of the functions the
kernel object ``lib/iov_iter.o`` defines is kept (their names, from ``nm``):
labkit's shim and runtime (the user-copy stand-ins ``raw_copy_to_user``,
``raw_copy_from_user``, ``__clear_user``, the kmalloc family) and libc
(``memcpy``, ``memset``, ``malloc``) are excluded.  So the 4 KiB clear of
``iov_iter_zero`` (a ``rep stosb`` in an x86 kernel, here the stand-in's
``memset``) and the 16-byte copy of the iovec are not counted; everything
``lib/iov_iter.c`` itself executes, with the header code inlined into it, is.

Each pattern runs ``N1`` and ``N2`` times and the count per call is
``(Ir(N2) - Ir(N1)) / (N2 - N1)``, so start-up effects cancel.  Clock-free:
the same build gives the same counts on any machine.

Calls:

- ``readv(1)``: ``import_iovec`` of one 4 KiB segment, then ``iov_iter_zero``
  of 4 KiB (what ``readv`` of ``/dev/zero`` does with its iterator);
- ``readv(4K+empty)``, ``readv(4K+empty+empty)``: the same with one and two
  empty segments after it (always IOVEC: the proxy of notebook 04);
- ``copy_to_iter 4K``: ``copy_to_iter`` of 4 KiB into an iterator imported from one
  4 KiB segment (the import not counted);
- ``advance/page``: ``iov_iter_advance`` over a 1 GiB BVEC of 4 KiB pages
  (a registered buffer, R1), instructions per skipped page: the slope
  between skipping 1,024 and 262,143 pages.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from labkit import config
from labkit._tools import positive_count, run_tool
from labkit.kernelsrc.build import ERAS, OPT_LEVELS, KernelSourceError, build, is_available
from labkit.kernelsrc.frames import VALGRIND_ARGS, instruction_classes
from labkit.measure.results import load, save

EXPERIMENT = "kernel-callgrind"
COLUMNS = ["era", "kernelversion", "opt", "call", "instructions", "unit", "n1", "n2"]

#: (call label, driver arguments after ITERS, toggled entry points)
CALLS: list[tuple[str, list[str], list[str]]] = [
    ("readv(1)", ["readv", "1"], ["lko_import_iovec", "lko_zero"]),
    ("readv(4K+empty)", ["readv", "2"], ["lko_import_iovec", "lko_zero"]),
    ("readv(4K+empty+empty)", ["readv", "3"], ["lko_import_iovec", "lko_zero"]),
    ("copy_to_iter 4K", ["copy"], ["lko_copy_to"]),
]
ADVANCE_PAGES = (1024, 262143)
#: The calls the claims need (labkit.claims: R2.kernel_*, R1.kernel_instr_per_page).
CLAIM_CALLS = ["readv(1)", "readv(4K+empty)", "readv(4K+empty+empty)", "advance/page"]


def _kernel_functions(obj: Path) -> set[str]:
    """The functions ``obj`` defines (``nm``); an error if nm fails or finds none."""
    out = run_tool(
        ["nm", "--defined-only", str(obj)], what=f"listing {obj.name}", error=KernelSourceError
    )
    names = set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            names.add(parts[2])
    positive_count(len(names), f"functions nm found in {obj}", error=KernelSourceError)
    return names


_LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S+)")


def _kernel_ir(out_file: Path, kernel_fns: set[str]) -> int:
    """Self instructions of the kernel object's functions in one callgrind output."""
    return sum(_by_function(out_file, kernel_fns).values())


def _by_function(out_file: Path, kernel_fns: set[str] | None) -> dict[str, int]:
    """Self instructions per function (only ``kernel_fns`` unless None) in one output."""
    proc = run_tool(
        ["callgrind_annotate", "--auto=no", "--inclusive=no", "--threshold=100", str(out_file)],
        error=KernelSourceError,
    )
    out: dict[str, int] = {}
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        fn = m.group(2).rsplit(":", 1)[-1]
        if kernel_fns is None or fn in kernel_fns:
            out[fn] = out.get(fn, 0) + int(m.group(1).replace(",", ""))
    return out


def _callgrind(
    driver: Path,
    args: list[str],
    toggles: list[str],
    kernel_fns: set[str],
    *,
    split: bool = False,
    frames: bool = False,
) -> Any:
    """The kernel functions' self instructions in one run of ``driver``: their sum, or
    per function (``split``), or per function with its call-frame and user-access
    instructions (``frames``: two dicts, the second of
    :func:`labkit.kernelsrc.frames.instruction_classes`)."""
    with tempfile.TemporaryDirectory(prefix="labkit-kcg-") as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = [
            "valgrind",
            "--tool=callgrind",
            *(VALGRIND_ARGS if frames else []),
            f"--callgrind-out-file={out}",
            "--collect-atstart=no",
            *(f"--toggle-collect={t}" for t in toggles),
            str(driver),
            *args,
        ]
        run_tool(cmd, what=f"callgrind of {driver.name} {' '.join(args)}", error=KernelSourceError)
        by_fn = _by_function(out, kernel_fns)
        positive_count(  # the toggled calls ran kernel code: none counted means nothing ran
            sum(by_fn.values()),
            f"instructions of the kernel's functions in {driver.name} {' '.join(args)}",
            error=KernelSourceError,
        )
        if frames:
            per_fn = instruction_classes(out)
            none = {"frame": 0, "access": 0}
            return by_fn, {f: per_fn.get(f, none) for f in kernel_fns}
        return by_fn if split else sum(by_fn.values())


def _per_call(
    driver: Path, call_args: list[str], toggles: list[str], fns: set[str], n1: int, n2: int
) -> float:
    a = _callgrind(driver, [call_args[0], str(n1), *call_args[1:]], toggles, fns)
    b = _callgrind(driver, [call_args[0], str(n2), *call_args[1:]], toggles, fns)
    what = f"instructions per call of {driver.name} {call_args[0]}"
    return positive_count((b - a) / (n2 - n1), what, error=KernelSourceError)


def measure_counts(
    eras: list[str] | None = None,
    opts: list[str] | None = None,
    *,
    n1: int = 100,
    n2: int = 300,
    calls: list[str] | None = None,
) -> pd.DataFrame:
    """Count the real code's instructions per call (see the module's docstring).

    Returns one row per era, optimisation level and call (:data:`COLUMNS`).

    Raises:
        KernelSourceError: valgrind or the oracle's build is missing.
    """
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        raise KernelSourceError(
            "valgrind is not installed (Debian/Ubuntu: apt-get install valgrind)"
        )
    rows = []
    for era in eras or list(ERAS):
        built = build(era)
        for opt in opts or list(OPT_LEVELS):
            driver = built.driver(opt)
            fns = _kernel_functions(built.kernel_object(opt))
            base = {"era": era, "kernelversion": built.record["kernelversion"], "opt": opt}
            for label, call_args, toggles in CALLS:
                if calls is not None and label not in calls:
                    continue
                ir = _per_call(driver, call_args, toggles, fns, n1, n2)
                rows.append(
                    base
                    | {"call": label, "instructions": ir, "unit": "per call", "n1": n1, "n2": n2}
                )
            if calls is not None and "advance/page" not in calls:
                continue
            p1, p2 = ADVANCE_PAGES
            a = _callgrind(driver, ["advance", "4", str(p1)], ["lko_advance"], fns)
            b = _callgrind(driver, ["advance", "4", str(p2)], ["lko_advance"], fns)
            per_page = positive_count(
                (b - a) / 4 / (p2 - p1),
                f"instructions per skipped page of {driver.name}",
                error=KernelSourceError,
            )
            rows.append(
                base
                | {
                    "call": "advance/page",
                    "instructions": per_page,
                    "unit": "per skipped page",
                    "n1": p1,
                    "n2": p2,
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def _breakdown(
    era: str, call: str, opt: str, n1: int, n2: int
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Per kernel function: instructions per call and, of them, call-frame instructions and
    user-access checks (:func:`labkit.kernelsrc.frames.instruction_classes`)."""
    label, call_args, toggles = next(c for c in CALLS if c[0] == call)
    built = build(era)
    driver, fns = built.driver(opt), _kernel_functions(built.kernel_object(opt))
    runs = [
        _callgrind(driver, [call_args[0], str(n), *call_args[1:]], toggles, fns, frames=True)
        for n in (n1, n2)
    ]
    (a, fa), (b, fb) = runs
    per = {fn: (b.get(fn, 0) - a.get(fn, 0)) / (n2 - n1) for fn in set(a) | set(b)}
    positive_count(
        sum(per.values()), f"instructions per call of {driver.name} {call}", error=KernelSourceError
    )

    def share(kind: str) -> dict[str, float]:
        return {fn: (fb[fn][kind] - fa[fn][kind]) / (n2 - n1) for fn in per}

    return per, share("frame"), share("access")


def breakdown(
    era: str, call: str = "readv(1)", opt: str = "defconfig", *, n1: int = 100, n2: int = 300
) -> pd.Series:
    """Instructions per call of each kernel function (self cost, inlined code included)."""
    per, _, _ = _breakdown(era, call, opt, n1, n2)
    return pd.Series({k: v for k, v in per.items() if v}, name=f"{era} {opt} {call}").sort_values(
        ascending=False
    )


FUNCTIONS_EXPERIMENT = "kernel-callgrind-functions"
FUNCTION_COLUMNS = ["era", "opt", "call", "function", "instructions"]
#: Of ``instructions``, the call-frame ones (:mod:`labkit.kernelsrc.frames`); a saved run
#: may lack the column (it is then not split).
FRAME_COLUMN = "frame"
#: Of ``instructions`` not in call frames, the user-access checks (``access_ok()`` and the
#: user-copy wrappers, :data:`labkit.kernelsrc.frames.USER_ACCESS_FILES`); a saved run may
#: lack the column, as the frame one.
ACCESS_COLUMN = "access"
#: The instruction classes a breakdown carries beside its total.
CLASS_COLUMNS = (FRAME_COLUMN, ACCESS_COLUMN)


def measure_breakdowns(
    eras: list[str] | None = None,
    opts: list[str] | None = None,
    calls: tuple[str, ...] = ("readv(1)", "readv(4K+empty)", "readv(4K+empty+empty)"),
) -> pd.DataFrame:
    """:func:`breakdown` of each era, level and call, as a tidy table (FUNCTION_COLUMNS,
    FRAME_COLUMN and ACCESS_COLUMN)."""
    rows = []
    for era in eras or list(ERAS):
        for opt in opts or list(OPT_LEVELS):
            for call in calls:
                per, frame, access = _breakdown(era, call, opt, 100, 300)
                for fn, ir in sorted(per.items(), key=lambda kv: -kv[1]):
                    if ir:
                        rows.append(
                            {
                                "era": era,
                                "opt": opt,
                                "call": call,
                                "function": fn,
                                "instructions": ir,
                                FRAME_COLUMN: frame[fn],
                                ACCESS_COLUMN: access[fn],
                            }
                        )
    return pd.DataFrame(rows, columns=[*FUNCTION_COLUMNS, FRAME_COLUMN, ACCESS_COLUMN])


def save_counts(
    df: pd.DataFrame, data_dir: str | Path | None = None, *, experiment: str = EXPERIMENT
) -> Path:
    """Save counts (or breakdowns) as a result file with its environment record."""
    return save(experiment, df, data_dir=data_dir)


def kernel_counts(data_dir: str | Path | None = None, *, functions: bool = False) -> pd.DataFrame:
    """The committed counts (``data/results/kernel-callgrind``), the newest run only.

    ``functions=True``: the per-function breakdowns (``kernel-callgrind-functions``).
    ``data_dir`` reads another data dir instead (a reproduction's own results hold
    only the ``-O2`` counts its claim measured, so the default is the committed ones).
    """
    exp, cols = (FUNCTIONS_EXPERIMENT, FUNCTION_COLUMNS) if functions else (EXPERIMENT, COLUMNS)
    where = config.reference_data_dir() if data_dir is None else data_dir
    df = load(exp, where, required=cols)
    if df.empty:
        return df
    newest = df["saved_run"].max()
    df = df[df["saved_run"] == newest]
    if functions:  # the instruction classes, where every row of the run has them
        cols = [*cols, *(c for c in CLASS_COLUMNS if c in df and df[c].notna().all())]
    return df[cols].reset_index(drop=True)


def saving(df: pd.DataFrame, before: str, after: str, call: str = "readv(1)") -> pd.Series:
    """Instructions saved per call from era ``before`` to ``after``, per optimisation level."""
    sel = df[df["call"] == call].set_index(["opt", "era"])["instructions"]
    return sel.xs(before, level="era") - sel.xs(after, level="era")


def proxy_cost(df: pd.DataFrame, era: str = "6.12") -> pd.DataFrame:
    """What the live proxy's extra empty iovec costs in the real code, per optimisation level.

    ``empty_iovec``: readv(4K+empty+empty) - readv(4K+empty), one more empty
    segment on the IOVEC path (the cost the proxy-bias correction needs);
    ``iovec_vs_ubuf``: readv(4K+empty) - readv(1), the live proxy's whole
    difference in the real code (IOVEC with an empty segment against UBUF).
    """
    sel = df[df["era"] == era].set_index(["opt", "call"])["instructions"]
    rows = []
    for opt in sel.index.get_level_values("opt").unique():
        s = sel.xs(opt, level="opt")
        rows.append(
            {
                "era": era,
                "opt": opt,
                "empty_iovec": s["readv(4K+empty+empty)"] - s["readv(4K+empty)"],
                "iovec_vs_ubuf": s["readv(4K+empty)"] - s["readv(1)"],
            }
        )
    return pd.DataFrame(rows)


def unavailable() -> str:
    """Why the real code's counts cannot be measured here ("" if they can)."""
    why = is_available()
    if why:
        return why
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        return "valgrind is not installed (Debian/Ubuntu: apt-get install valgrind)"
    return ""


def evidence(df: pd.DataFrame) -> dict[str, float]:
    """The headline figures of the real code's counts (NaN where a row is missing).

    ``r2_saved_<opt>``: instructions saved per readv(1) by the 2023 change
    (6.1 -> 6.1+ubuf); ``r2_proxy_empty_<opt>``: what one more empty iovec costs
    in 6.12 (readv(4K+empty+empty) - readv(4K+empty)); ``r1_per_page_<opt>``:
    instructions per skipped page of 6.1's iov_iter_advance over a BVEC.
    """
    c = df.set_index(["era", "opt", "call"])["instructions"]

    def get(*key: str) -> float:
        return float(c.get(key, float("nan")))

    out = {}
    for opt in OPT_LEVELS:
        out[f"r2_saved_{opt}"] = get("6.1", opt, "readv(1)") - get("6.1+ubuf", opt, "readv(1)")
        out[f"r2_proxy_empty_{opt}"] = get("6.12", opt, "readv(4K+empty+empty)") - get(
            "6.12", opt, "readv(4K+empty)"
        )
        out[f"r1_per_page_{opt}"] = get("6.1", opt, "advance/page")
    return out
