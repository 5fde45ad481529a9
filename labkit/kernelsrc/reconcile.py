"""Where the model's readv(1) saving and the real code's differ, step by step.

labkit's model says the 6.4 change saves 60 instructions per read-zero
``readv(1)`` (``labkit.experiments.callgrind``, 2026-12-03; 92 before main's
C core changes of that day); the real ``lib/iov_iter.c`` says 30 at the UML
defconfig's -Os and 7 at -O2 (:mod:`labkit.kernelsrc.counts`).
Both counts come from callgrind, per function (self cost): this module sorts
the functions of each into the steps of the call and puts them side by side.

Steps:

- ``import``: turning the user's iovec into an iterator (``import_iovec`` and
  what it calls: copying and checking the array, ``access_ok``,
  ``iov_iter_init`` / ``import_ubuf``);
- ``iterate``: ``iov_iter_zero`` of 4 KiB walking the iterator (the kernel's
  ``iterate_iovec`` / ``iterate_ubuf`` are inlined into ``iov_iter_zero``);
- ``not comparable``: what one side counts and the other does not: the
  model's fault lookups in its address-space table (``lk_mm_*``, the real
  code's stand-ins are excluded), the 4 KiB memset, the model's timing loop
  and its segment-index bookkeeping.  These are the same in both eras or are
  not kernel work; they are shown, not compared.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from labkit.config import repo_root
from labkit.experiments import callgrind as model_callgrind
from labkit.kernelsrc.counts import _by_function

MODEL_EXPERIMENT = "model-callgrind-functions"
MODEL_COLUMNS = ["variant", "function", "instructions"]
MODEL_VARIANTS = ("readv 6.3", "readv 6.4", "readv 6.4 (4K+empty)")

MODEL_STEPS = {
    "lk_import_iovec": "import",
    "lk_import_ubuf": "import",
    "lk_iter_init": "import",
    "lk_iter_ubuf": "import",
    "iterate_iovec": "iterate",
    "iterate_and_advance": "iterate",
    "lk_iov_iter_zero": "iterate",
    "step_zero": "iterate",
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
    """The model's instructions per read-zero readv call, per function (callgrind, self cost)."""
    variants = [
        v for v in model_callgrind.UBUF_VARIANTS if v[0] == "read-zero" and v[1] in MODEL_VARIANTS
    ]
    phases = model_callgrind._phases(variants, (), n1, n2)
    with tempfile.TemporaryDirectory(prefix="labkit-mcg-") as tmp:
        out = Path(tmp) / "cg.out"
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            "--toggle-collect=lk_time_*",
            "--dump-after=lk_time_empty",
            sys.executable,
            "-c",
            model_callgrind._CHILD,
            json.dumps(phases),
            str(repo_root()),
        ]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        rows = []
        for k in range(0, len(phases), 2):
            a = _by_function(Path(f"{out}.{k + 1}"), None)
            b = _by_function(Path(f"{out}.{k + 2}"), None)
            for fn in sorted(set(a) | set(b)):
                per = (b.get(fn, 0) - a.get(fn, 0)) / (phases[k + 1]["n"] - phases[k]["n"])
                if abs(per) >= 0.5 and (fn.startswith(("lk_", "iterate", "step_", "__mem"))):
                    rows.append(
                        {"variant": phases[k]["variant"], "function": fn, "instructions": per}
                    )
    return pd.DataFrame(rows, columns=MODEL_COLUMNS)


def _steps(df: pd.DataFrame, key: str, steps: dict[str, str]) -> pd.DataFrame:
    d = df.assign(step=df["function"].map(steps).fillna("not comparable"))
    return d.pivot_table(index="step", columns=key, values="instructions", aggfunc="sum").fillna(0)


def reconcile(model: pd.DataFrame, kernel: pd.DataFrame) -> pd.DataFrame:
    """Instructions per readv(1) by step: the model's 6.3 and 6.4, the real 6.1 and 6.1+ubuf.

    Args:
        model: :func:`model_breakdown` rows (or the saved ones).
        kernel: ``kernel_counts(functions=True)`` rows.

    Returns:
        One row per step (import, iterate, not comparable, and "compared", the
        sum of the first two) with the model's counts and saving, and the real
        code's at each optimisation level.
    """
    m = _steps(model, "variant", MODEL_STEPS)
    out = pd.DataFrame(
        {
            "model 6.3": m.get("readv 6.3", 0),
            "model 6.4": m.get("readv 6.4", 0),
        }
    )
    out["model saved"] = out["model 6.3"] - out["model 6.4"]
    k = kernel[kernel["call"] == "readv(1)"]
    for opt, g in k.groupby("opt", sort=False):
        s = _steps(g, "era", KERNEL_STEPS)
        out[f"real 6.1 {opt}"] = s.get("6.1", 0)
        out[f"real 6.1+ubuf {opt}"] = s.get("6.1+ubuf", 0)
        out[f"real saved {opt}"] = out[f"real 6.1 {opt}"] - out[f"real 6.1+ubuf {opt}"]
    out = out.fillna(0)
    compared = out.loc[[s for s in ("import", "iterate") if s in out.index]].sum()
    out.loc["compared (import + iterate)"] = compared
    return out


def committed() -> pd.DataFrame:
    """:func:`reconcile` of the committed breakdowns (the newest saved run of each side)."""
    from labkit.kernelsrc.counts import kernel_counts
    from labkit.measure.results import load

    model = load(MODEL_EXPERIMENT, required=MODEL_COLUMNS)
    model = model[model["saved_run"] == model["saved_run"].max()]
    return reconcile(model, kernel_counts(functions=True))
