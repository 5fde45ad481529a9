"""What a reproduction did: each notebook's outcome, the run's, its exit status.

:func:`labkit.run.reproduce.run` returns a :class:`Reproduction` (re-exported
there with :class:`NotebookRun` and the exit statuses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from labkit.report import summary

if TYPE_CHECKING:
    from labkit.run.reproduce import Reproduction

#: Exit statuses of ``labkit reproduce``.
EXIT_OK, EXIT_NOTEBOOK_FAILED, EXIT_USAGE, EXIT_OUTPUT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@dataclass
class NotebookRun:
    """What happened to one notebook.

    Attributes:
        name: file name ("01-iov-iter-tour.ipynb").
        status: "ran", "up to date" (skipped: same hash as its last complete run),
            "failed" (a cell raised, the kernel died, the notebook is unreadable),
            "output error" (an output could not be written), "interrupted" or
            "not run" (after an interruption).
        seconds: execution time (of the run that produced the stored copy, if up to date).
        hash: the code + parameters hash.
        cell: for a failure, the index of the failing cell in the source notebook
            (0 is the first cell, markdown included); if the kernel died or the run
            was interrupted, the last cell that started.
        exec_count: for a failure, its execution count ("In [n]").
        error: for a failure, "ExceptionName: message" (or the output error).
        source: for a failure, the first line of code of that cell.
        finished: when the run that produced the stored copy finished (ISO 8601).
        code: the code version of that run (:func:`labkit.run.run_state.code_version`).
        reason: why it was rerun, or "up to date".
        kernel_log: the kernel's last lines, when it died.
    """

    name: str
    status: str
    seconds: float
    hash: str
    cell: int | None = None
    exec_count: int | None = None
    error: str | None = None
    source: str | None = None
    finished: str | None = None
    code: dict[str, Any] | None = None
    reason: str = ""
    kernel_log: str = ""

    def describe_failure(self) -> str:
        """One line naming the notebook, the cell and the cause."""
        if self.status == "output error":
            return f"{self.name}: {self.error}"
        if self.cell is None:
            where = "before any cell started"
        elif self.status == "interrupted" or (self.error or "").startswith("the kernel died"):
            where = f"during cell {self.cell}"
        else:
            where = f"cell {self.cell}"
        if self.exec_count is not None:
            where += f" (In [{self.exec_count}])"
        src = f": `{self.source}`" if self.source else ""
        text = f"{self.name}: {where}{src}: {self.error}"
        if self.kernel_log:
            text += " | kernel's last words: " + " / ".join(self.kernel_log.splitlines()[-3:])
        return text


@dataclass
class Reproduction:
    """The outcome of :func:`run`."""

    out: Path
    quick: bool
    runs: list[NotebookRun] = field(default_factory=list)
    summary: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=summary.COLUMNS))
    seconds: float = 0.0
    finished: str | None = None
    interrupted: NotebookRun | None = None
    output_errors: list[str] = field(default_factory=list)
    measured_s: float | None = None  #: the measuring phase's seconds (None: no phase ran)

    @property
    def failed(self) -> list[NotebookRun]:
        """The notebooks that did not complete (failed, output error, interrupted)."""
        return [r for r in self.runs if r.status in INCOMPLETE]

    @property
    def ok(self) -> bool:
        """True when every notebook completed and every output was written."""
        return not self.failed and not self.output_errors and self.interrupted is None

    @property
    def exit_status(self) -> int:
        """130 interrupted, 3 an output could not be written, 1 a notebook failed, else 0."""
        if self.interrupted is not None:
            return EXIT_INTERRUPTED
        if self.output_errors or any(r.status == "output error" for r in self.runs):
            return EXIT_OUTPUT_ERROR
        return EXIT_NOTEBOOK_FAILED if self.failed else EXIT_OK


#: Statuses of a notebook that did not complete (as labkit.run.reproduce.INCOMPLETE).
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
    df = summary.summary_table(rep.out)
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
    df.attrs = {"skipped": summary.summary_table(rep.out).attrs.get("skipped", [])}
    return df.reset_index(drop=True)


__all__: list[str] = []
