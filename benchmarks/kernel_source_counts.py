"""Count the real kernel code's instructions per call under callgrind, and save them.

Runs labkit.kernelsrc.counts.measure_counts for every era (6.1, 6.1+ubuf, 6.12)
and optimisation level (the UML defconfig's -Os, and -O2), prints the table
and the savings, and saves it as ``data/results/kernel-callgrind/`` with its
environment record (``--save``), with the per-function breakdowns of the real
code (``kernel-callgrind-functions``) and of labkit's model
(``model-callgrind-functions``) that notebook 03's reconciliation reads
(``labkit.kernelsrc.reconcile.committed``).  Clock-free: the load of the
machine does not change the counts.

    .venv/bin/python benchmarks/kernel_source_counts.py [--save]
"""

from __future__ import annotations

import sys

from labkit.config import repo_root
from labkit.kernelsrc import reconcile
from labkit.kernelsrc.counts import (
    FUNCTIONS_EXPERIMENT,
    measure_breakdowns,
    measure_counts,
    save_counts,
    saving,
)


def main() -> int:
    df = measure_counts()
    print(df.to_string(index=False))
    for before, after in (("6.1", "6.1+ubuf"), ("6.1", "6.12"), ("6.1+ubuf", "6.12")):
        print(f"readv(1) saved, {before} -> {after}:", saving(df, before, after).to_dict())
    fns = measure_breakdowns()
    for (era, opt, call), g in fns.groupby(["era", "opt", "call"], sort=False):
        parts = ", ".join(f"{r.function} {r.instructions:g}" for r in g.itertuples())
        print(f"{era} {opt} {call}: {parts}")
    model = reconcile.model_breakdown()
    print(model.to_string(index=False))
    print(reconcile.reconcile(model, fns).round(1).to_string())
    if "--save" in sys.argv[1:]:
        data = repo_root() / "data"
        print("saved", save_counts(df, data))
        print("saved", save_counts(fns, data, experiment=FUNCTIONS_EXPERIMENT))
        print("saved", save_counts(model, data, experiment=reconcile.MODEL_EXPERIMENT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
