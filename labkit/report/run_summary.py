"""The summary of one reproduction: exactly the rows its notebooks recorded.

Each notebook's rows are files under ``<out>/summary`` (written by
:func:`labkit.report.summary.record` in the notebook's kernel, with the
notebook's name).  :func:`labkit.report.reproduce.run` removes a notebook's
rows before it reruns and after it fails (:func:`labkit.report.run_state.forget_rows`);
:func:`run_summary` then keeps the rows of the notebooks of this run only,
says where each came from, and puts each failure in place of its rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from labkit.report import summary as report

if TYPE_CHECKING:
    from labkit.report.reproduce import Reproduction

#: Statuses of a notebook that did not complete (as labkit.report.reproduce.INCOMPLETE).
INCOMPLETE = ("failed", "output error", "interrupted")

#: The ``origin`` of a summary row: recorded by a notebook this run executed.
THIS_RUN = "this run"


def run_summary(rep: Reproduction) -> pd.DataFrame:
    """The summary of this run: exactly the rows its notebooks recorded.

    Rows of notebooks that ran come from this run; rows of up-to-date notebooks
    are carried over from the run that produced them and marked so in the
    ``origin`` column; a notebook that did not complete has one row, its
    failure, in place of its rows; rows no notebook of this run recorded (an
    old notebook, a row written by hand) are left out.
    """
    df = report.summary_table(rep.out)
    origin: dict[str, str] = {}
    for r in rep.runs:
        if r.status == "ran":
            origin[r.name] = THIS_RUN
        elif r.status == "up to date":
            when = (r.finished or "?").replace("T", " ")[:16]
            origin[r.name] = f"carried over (up to date, run of {when} UTC)"
    df = df[df["notebook"].isin(list(origin))].copy()
    df["origin"] = [origin[n] for n in df["notebook"]]
    df["reason"] = [  # said where a reader sees it too: in the reason
        why if where == THIS_RUN else f"[{where}] {why if isinstance(why, str) else ''}"
        for where, why in zip(df["origin"], df["reason"], strict=True)
    ]
    failures = [
        {
            "result": Path(r.name).stem,
            "quantity": "(every quantity of this notebook)",
            "verdict": "notebook failed" if r.status == "failed" else r.status,
            "reason": r.describe_failure(),
            "notebook": r.name,
            "quick": rep.quick,
            "origin": THIS_RUN,
        }
        for r in rep.runs
        if r.status in INCOMPLETE
    ]
    if failures:
        rows = pd.DataFrame(failures, columns=list(df.columns))
        df = pd.concat([df, rows], ignore_index=True) if len(df) else rows
        df["n_runs"] = pd.array(df["n_runs"], dtype="Int64")
    df.attrs = {"skipped": report.summary_table(rep.out).attrs.get("skipped", [])}
    return df.reset_index(drop=True)


__all__: list[str] = []  # internal: the summary of one labkit reproduce run
