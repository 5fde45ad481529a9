"""Where the model's readv(1) saving and the real code's differ, step by step.

Both counts come from callgrind, per function (self cost): the model's
(``labkit.experiments.callgrind``) and the real ``lib/iov_iter.c``'s
(:mod:`labkit.kernelsrc.counts`).  This module sorts the functions of each
into the steps of the call and puts them side by side, and splits each step's
count into its *call frames* (``call``/``ret``, pushes and pops, stack
adjustments: :mod:`labkit.kernelsrc.frames`) and the rest, the step's work.

Steps:

- ``import``: turning the user's iovec into an iterator (``import_iovec`` and
  what it calls: copying and checking the array, ``access_ok``,
  ``iov_iter_init`` / ``import_ubuf``);
- ``iterate``: ``iov_iter_zero`` of 4 KiB walking the iterator (the kernel's
  ``iterate_iovec`` / ``iterate_ubuf`` are inlined into ``iov_iter_zero``);
- ``not comparable``: what one side counts and the other does not: the
  model's stand-in for a user copy (``lk_user_piece``: the fault lookup in
  its address-space table, ``lk_mm_*``, and the step that clears the piece,
  ``step_zero`` and the 4 KiB memset), out of line as the real code's
  user-copy stand-ins, which are excluded; the model's timing loop.  These
  are the same in both eras or are not kernel work; they are shown, not
  compared.

Each step's count is also split into three classes of instruction
(:mod:`labkit.kernelsrc.frames`): call frames, user-access checks (code
inlined from the ``uaccess.h`` headers, or labkit's ``usermem.h``) and the
rest, the step's work.

:func:`summary_text` says what remains, class by class; how the model came to agree
with the real code is in ``docs/history.md``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from labkit import config
from labkit.experiments import callgrind as model_callgrind
from labkit.kernelsrc.counts import (
    ACCESS_COLUMN,
    CLASS_COLUMNS,
    FRAME_COLUMN,
    _by_function,
    kernel_counts,
    proxy_cost,
)
from labkit.kernelsrc.frames import VALGRIND_ARGS, instruction_classes
from labkit.measure.results import load

MODEL_EXPERIMENT = "model-callgrind-functions"
MODEL_COLUMNS = ["variant", "function", "instructions"]
MODEL_VARIANTS = ("readv 6.3", "readv 6.4", "readv 6.4 (4K+empty)")
#: the model's functions kept besides those of MODEL_STEPS (labkit's own, and libc's memset)
MODEL_PREFIXES = ("lk_", "iterate", "step_", "__mem")

MODEL_STEPS = {
    "lk_import_iovec": "import",
    "lk_import_ubuf": "import",
    "import_iovec_ubuf": "import",
    "iovec_from_user": "import",
    "copy_iovec_from_user": "import",
    "lk_iter_init": "import",
    "lk_iter_ubuf": "import",
    "iterate_iovec": "iterate",
    "iterate_and_advance": "iterate",
    "lk_iov_iter_zero": "iterate",
}
KERNEL_STEPS = {
    "import_iovec": "import",
    "__import_iovec": "import",
    "__import_iovec_ubuf": "import",
    "iovec_from_user": "import",
    "iovec_from_user.part.0": "import",
    "copy_iovec_from_user": "import",
    "_copy_from_user": "import",
    "import_ubuf": "import",
    "iov_iter_init": "import",
    "__access_ok": "import",
    "iov_iter_zero": "iterate",
}


def model_breakdown(n1: int = 1000, n2: int = 3000) -> pd.DataFrame:
    """The model's instructions per read-zero readv call, per function (callgrind, self
    cost), with the call-frame instructions (``frame``) and user-access checks
    (``access``) among them."""
    variants = [
        v for v in model_callgrind.UBUF_VARIANTS if v[0] == "read-zero" and v[1] in MODEL_VARIANTS
    ]
    phases = model_callgrind._phases(variants, (), n1, n2)
    rows = []
    with model_callgrind.dumps(phases, extra_args=VALGRIND_ARGS) as paths:
        for k in range(0, len(phases), 2):
            a = _by_function(Path(paths[k]), None)
            b = _by_function(Path(paths[k + 1]), None)
            fa = instruction_classes(Path(paths[k]))
            fb = instruction_classes(Path(paths[k + 1]))
            none = {FRAME_COLUMN: 0, ACCESS_COLUMN: 0}
            n = phases[k + 1]["n"] - phases[k]["n"]
            for fn in sorted(set(a) | set(b)):
                per = (b.get(fn, 0) - a.get(fn, 0)) / n
                if abs(per) >= 0.5 and (fn in MODEL_STEPS or fn.startswith(MODEL_PREFIXES)):
                    rows.append(
                        {
                            "variant": phases[k]["variant"],
                            "function": fn,
                            "instructions": per,
                            **{
                                c: (fb.get(fn, none)[c] - fa.get(fn, none)[c]) / n
                                for c in CLASS_COLUMNS
                            },
                        }
                    )
    return pd.DataFrame(rows, columns=[*MODEL_COLUMNS, *CLASS_COLUMNS])


def _step_of(fn: str, steps: dict[str, str]) -> str:
    """The step of a function; a compiler's clone (``f.part.0``, ``f.constprop.0``) is f's."""
    return steps.get(fn, steps.get(fn.split(".")[0], "not comparable"))


def _steps(df: pd.DataFrame, key: str, steps: dict[str, str], value: str) -> pd.DataFrame:
    d = df.assign(step=df["function"].map(lambda f: _step_of(f, steps)))
    return d.pivot_table(index="step", columns=key, values=value, aggfunc="sum").fillna(0)


def _side_by_side(model: pd.DataFrame, kernel: pd.DataFrame, value: str) -> pd.DataFrame:
    m = _steps(model, "variant", MODEL_STEPS, value)
    out = pd.DataFrame(
        {
            "model 6.3": m.get("readv 6.3", 0),
            "model 6.4": m.get("readv 6.4", 0),
        }
    )
    out["model saved"] = out["model 6.3"] - out["model 6.4"]
    k = kernel[kernel["call"] == "readv(1)"]
    for opt, g in k.groupby("opt", sort=False):
        s = _steps(g, "era", KERNEL_STEPS, value)
        out[f"real 6.1 {opt}"] = s.get("6.1", 0)
        out[f"real 6.1+ubuf {opt}"] = s.get("6.1+ubuf", 0)
        out[f"real saved {opt}"] = out[f"real 6.1 {opt}"] - out[f"real 6.1+ubuf {opt}"]
    out = out.fillna(0)
    compared = out.loc[[s for s in ("import", "iterate") if s in out.index]].sum()
    out.loc["compared (import + iterate)"] = compared
    return out


def reconcile(model: pd.DataFrame, kernel: pd.DataFrame) -> pd.DataFrame:
    """Instructions per readv(1) by step: the model's 6.3 and 6.4, the real 6.1 and 6.1+ubuf.

    Args:
        model: :func:`model_breakdown` rows (or the saved ones).
        kernel: ``kernel_counts(functions=True)`` rows.

    Returns:
        One row per step (import, iterate, not comparable, and "compared", the
        sum of the first two) with the model's counts and saving, and the real
        code's at each optimisation level.  When both sides carry the
        instruction classes, each of import, iterate and compared is also split
        into "<step>: call frames", "<step>: user-access checks" (where both
        sides carry them) and "<step>: work", the rest.
    """
    out = _side_by_side(model, kernel, "instructions")
    classes = {FRAME_COLUMN: "call frames", ACCESS_COLUMN: "user-access checks"}
    have = [c for c in classes if c in model.columns and c in kernel.columns]
    if FRAME_COLUMN not in have:
        return out
    split = {c: _side_by_side(model, kernel, c) for c in have}
    for step in ("import", "iterate", "compared (import + iterate)"):
        if step not in out.index:
            continue
        work = out.loc[step].copy()
        for c in have:
            part = split[c].loc[step] if step in split[c].index else 0 * work
            out.loc[f"{step}: {classes[c]}"] = part
            work = work - part
        out.loc[f"{step}: work"] = work
    return out


def within(model_saved: float, real_saved: float, tolerance: float = 0.2) -> bool:
    """Is the model's saving within ``tolerance`` (a fraction) of the real code's?"""
    return abs(model_saved - real_saved) <= tolerance * abs(real_saved)


def committed() -> pd.DataFrame:
    """:func:`reconcile` of the committed breakdowns (the newest saved run of each side)."""
    model = load(MODEL_EXPERIMENT, config.reference_data_dir(), required=MODEL_COLUMNS)
    model = model[model["saved_run"] == model["saved_run"].max()]
    model = model.drop(columns=[c for c in CLASS_COLUMNS if c in model and model[c].isna().any()])
    return reconcile(model, kernel_counts(functions=True))


def _n(value: float) -> str:
    return f"{value:.0f}"


_M, _O2, _OS = "model saved", "real saved O2", "real saved defconfig"
_BOTH = "compared (import + iterate)"


def _savings(recon: pd.DataFrame, row: str) -> str:
    """'<model> in the model against <O2> at -O2 and <Os> at -Os'."""
    r = recon.loc[row]
    return f"{_n(r[_M])} in the model against {_n(r[_O2])} at `-O2` and {_n(r[_OS])} at `-Os`"


def _within_text(recon: pd.DataFrame, row: str) -> str:
    """Which real builds the model's saving on ``row`` is within 20% of."""
    r = recon.loc[row]
    hits = [lvl for lvl, col in (("`-O2`", _O2), ("`-Os`", _OS)) if within(r[_M], r[col])]
    if len(hits) == 2:
        return "within 20% of both builds"
    return f"within 20% of the {hits[0]} build only" if hits else "within 20% of neither build"


def _frames_at_os(saved: float) -> str:
    if round(saved) == 0:
        return "loses no call frame at `-Os`"
    return f"{'saves' if saved > 0 else 'adds'} {_n(abs(saved))} at `-Os`"


def summary_text(recon: pd.DataFrame, kernel: pd.DataFrame) -> str:
    """Markdown: the model's saving per readv(1) against the real code's, by step and by
    instruction class, and what the live proxy costs in the real 6.12, every number read
    from ``recon`` (:func:`reconcile`) and ``kernel`` (``kernel_counts()``)."""
    proxy = {row["opt"]: row for row in proxy_cost(kernel).to_dict("records")}
    text = (
        f"The 2023 change saves **{_n(recon.loc[_BOTH, _M])}** instructions per `readv(1)` in "
        f"the model, against **{_n(recon.loc[_BOTH, _O2])}** at `-O2` and "
        f"**{_n(recon.loc[_BOTH, _OS])}** at `-Os` in the real code (6.1 against 6.1 with the "
        f"change): {_within_text(recon, _BOTH)}. "
    )
    classes = f"{_BOTH}: call frames" in recon.index
    if classes:
        access = f"{_BOTH}: user-access checks" in recon.index
        walk = (
            f"the model walks one IOVEC segment in {_n(recon.loc['iterate: work', 'model 6.3'])}"
            f" instructions of work and a UBUF in {_n(recon.loc['iterate: work', 'model 6.4'])}"
            f", the real code at `-O2` in {_n(recon.loc['iterate: work', 'real 6.1 O2'])} and "
            f"{_n(recon.loc['iterate: work', 'real 6.1+ubuf O2'])}"
        )
        text += (
            "By what the instructions do:\n\n"
            "* **the steps' work** (call frames"
            + (" and user-access checks" if access else "")
            + f" left out) saves {_savings(recon, f'{_BOTH}: work')}, "
            f"{_within_text(recon, f'{_BOTH}: work')}; the import's "
            f"{_savings(recon, 'import: work')} ({_within_text(recon, 'import: work')}), the "
            f"iteration's {_savings(recon, 'iterate: work')} "
            f"({_within_text(recon, 'iterate: work')}; {walk});\n"
            f"* **call frames** (calls, returns, pushes and pops): "
            f"{_savings(recon, f'{_BOTH}: call frames')}. The real 6.4 import is spread over more "
            "out-of-line functions than 6.1's (`__import_iovec_ubuf()`, "
            "`copy_iovec_from_user()`, `import_ubuf()`); how many of them the compiler keeps "
            "out of line is the build's choice, not the change's: the same source "
            + _frames_at_os(recon.loc[f"{_BOTH}: call frames", _OS])
            + (";\n" if access else ".\n\n")
        )
        if access:
            text += (
                "* **user-access checks** (`access_ok()` and the user-copy wrappers, inlined): "
                f"{_savings(recon, f'{_BOTH}: user-access checks')}. The model's `access_ok()` "
                "is x86-64's; the real code's is user-mode Linux's own, which checks the same "
                "range with different code, so this line compares two architectures, not two "
                "eras.\n\n"
            )
    return text + (
        "The live proxy: in the real 6.12, one more empty iovec costs "
        f"{_n(proxy['O2']['empty_iovec'])} instructions at `-O2` "
        f"({_n(proxy['defconfig']['empty_iovec'])} at `-Os`), and `readv(4K+empty)` costs "
        f"{_n(proxy['O2']['iovec_vs_ubuf'])} more than `readv(1)` "
        f"({_n(proxy['defconfig']['iovec_vs_ubuf'])}), "
        f"{proxy['O2']['iovec_vs_ubuf'] / recon.loc[_BOTH, _O2]:.0f}x what the change itself "
        f"saves at `-O2` ({proxy['defconfig']['iovec_vs_ubuf'] / recon.loc[_BOTH, _OS]:.1f}x at "
        "`-Os`): the live A/B measures today's IOVEC path with an empty segment, not only the "
        "2023 change. A caveat on all real counts: user-mode Linux reaches user memory through "
        "out-of-line copies (excluded here) where x86-64 inlines them."
    )


def eras_text(kernel: pd.DataFrame, opt: str = "O2") -> str:
    """Markdown: what readv(1) and readv(4K+empty) cost in each era of the real code."""
    sel = kernel[kernel["opt"] == opt].set_index(["call", "era"])["instructions"]

    def row(call: str) -> str:
        return ", ".join(f"{_n(sel[(call, era)])} in {era}" for era in ("6.1", "6.1+ubuf", "6.12"))

    level = {"O2": "-O2", "defconfig": "-Os"}.get(opt, opt)
    return (
        f"Instructions per call in the real code at `{level}`: `readv(1)` {row('readv(1)')}; "
        f"`readv(4K+empty)`, an IOVEC in every era, {row('readv(4K+empty)')}."
    )
