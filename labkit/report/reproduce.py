"""``labkit reproduce``: run every notebook headless and gather what they produce.

For each ``notebooks/[0-9][0-9]-*.ipynb`` in order, :func:`run` executes the
notebook with papermill (the ``QUICK`` parameter injected, the notebooks
directory as working directory, ``LABKIT_OUT`` pointing at the output
directory so that :mod:`labkit.report` rows and figures land there) and then
writes, under the output directory:

============================  =================================================
``notebooks/NN-*.ipynb``      the executed notebooks, with their outputs
``html/NN-*.html``            each executed notebook as HTML (nbconvert)
``index.html``                the report: summary table, notebooks, figures
``figures/*.png, *.svg``      the figures the notebooks saved
``summary/*.json``            one row per headline quantity (labkit.report)
``summary.csv, summary.txt``  the summary table
``results/<experiment>/``     copies of the result tables written in data/results
``.state/NN-*.json``          what was run, with which hash, how long it took
============================  =================================================

A notebook is skipped when its executed copy exists and was produced from the
same code and parameters: the hash covers the notebook's cells (sources, not
outputs), every source file of the labkit package (Python and C) and the
parameters.  ``force=True`` reruns everything.  A failing notebook does not
stop the others; :func:`run` reports each failure with the notebook and the
cell, and the command exits non-zero.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import html
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from labkit.config import PACKAGE_DIR, data_dir, repo_root
from labkit.report import summary as report

NOTEBOOK_GLOB = "[0-9][0-9]-*.ipynb"
SOURCE_SUFFIXES = (".py", ".c", ".h", ".cdef")


@dataclass
class NotebookRun:
    """What happened to one notebook.

    Attributes:
        name: file name ("01-iov-iter-tour.ipynb").
        status: "ran", "skipped" (same hash as the last good run) or "failed".
        seconds: execution time (of the run that produced the stored copy, if skipped).
        hash: the code + parameters hash.
        cell: for a failure, the index of the failing cell in the source notebook
            (0 is the first cell, markdown included).
        exec_count: for a failure, its execution count ("In [n]").
        error: for a failure, "ExceptionName: message".
        source: for a failure, the first line of the failing cell.
    """

    name: str
    status: str
    seconds: float
    hash: str
    cell: int | None = None
    exec_count: int | None = None
    error: str | None = None
    source: str | None = None

    def describe_failure(self) -> str:
        """One line naming the notebook and the cell, for a failed run."""
        where = f"cell {self.cell}" if self.cell is not None else "before any cell ran"
        if self.exec_count is not None:
            where += f" (In [{self.exec_count}])"
        src = f": `{self.source}`" if self.source else ""
        return f"{self.name}: {where}{src}: {self.error}"


@dataclass
class Reproduction:
    """The outcome of :func:`run`."""

    out: Path
    quick: bool
    runs: list[NotebookRun] = field(default_factory=list)
    summary: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=report.COLUMNS))
    seconds: float = 0.0

    @property
    def failed(self) -> list[NotebookRun]:
        """The notebooks that failed."""
        return [r for r in self.runs if r.status == "failed"]

    @property
    def ok(self) -> bool:
        """True when no notebook failed."""
        return not self.failed


def notebooks_dir() -> Path:
    """Where the notebooks are: ``$LABKIT_NOTEBOOKS`` or ``notebooks/`` of the checkout."""
    env = os.environ.get("LABKIT_NOTEBOOKS")
    return Path(env) if env else repo_root() / "notebooks"


def default_out(quick: bool) -> Path:
    """``reproduction/quick`` or ``reproduction/full`` in the checkout."""
    return repo_root() / "reproduction" / ("quick" if quick else "full")


def find_notebooks(folder: str | os.PathLike[str]) -> list[Path]:
    """The numbered notebooks (``NN-*.ipynb``) of ``folder``, in order."""
    return sorted(Path(folder).glob(NOTEBOOK_GLOB))


def _notebook_sources(path: Path) -> bytes:
    """The cells of a notebook (type and source), without outputs or execution counts."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = []
    for cell in nb.get("cells", []):
        src = cell.get("source", "")
        cells.append(
            [
                cell.get("cell_type"),
                "".join(src) if isinstance(src, list) else src,
                sorted(cell.get("metadata", {}).get("tags", [])),
            ]
        )
    return json.dumps(cells, sort_keys=True).encode()


def package_sources(package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """Every source file of the labkit package (Python and C), sorted."""
    return sorted(
        p
        for p in package_dir.rglob("*")
        if p.suffix in SOURCE_SUFFIXES
        and p.is_file()
        and "__pycache__" not in p.parts
        and p.name != "_labkit.c"
    )


def run_hash(notebook: Path, params: dict[str, Any], package_dir: Path = PACKAGE_DIR) -> str:
    """sha256 of the notebook's cells, the package's sources and the parameters."""
    h = hashlib.sha256()
    h.update(b"notebook\0" + _notebook_sources(notebook))
    for src in package_sources(package_dir):
        h.update(b"\0file\0" + str(src.relative_to(package_dir)).encode() + b"\0")
        h.update(src.read_bytes())
    h.update(b"\0params\0" + json.dumps(params, sort_keys=True).encode())
    return h.hexdigest()


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _state_path(out: Path, nb: Path) -> Path:
    return out / ".state" / f"{nb.stem}.json"


def _load_state(out: Path, nb: Path) -> dict[str, Any]:
    try:
        return json.loads(_state_path(out, nb).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _first_line(source: Any) -> str:
    text = "".join(source) if isinstance(source, list) else str(source or "")
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:120]
    return ""


def _execute(
    nb: Path, dest: Path, params: dict[str, Any], cwd: Path, timeout: float | None
) -> NotebookRun:
    """Run one notebook with papermill; a failure is returned, not raised."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    start = time.perf_counter()
    run = NotebookRun(nb.name, "ran", 0.0, "")
    try:
        papermill.execute_notebook(
            str(nb),
            str(dest),
            parameters=params,
            cwd=str(cwd),
            progress_bar=False,
            log_output=False,
            kernel_name="python3",
            execution_timeout=timeout,
        )
    except PapermillExecutionError as exc:
        run.status = "failed"
        run.exec_count = exc.exec_count
        run.error = f"{exc.ename}: {exc.evalue}"
        run.source = _first_line(exc.source)
        cell = _failing_cell(dest)
        if cell is not None:
            run.cell = cell[0]
    except Exception as exc:  # kernel died, bad notebook, missing parameters cell ...
        run.status = "failed"
        run.error = f"{type(exc).__name__}: {exc}"
        cell = _failing_cell(dest)
        if cell is not None:
            run.cell, run.exec_count, run.source = cell
    run.seconds = time.perf_counter() - start
    return run


_ADDED_BY_PAPERMILL = {"injected-parameters", "papermill-error-cell-tag"}


def _failing_cell(path: Path) -> tuple[int, int | None, str] | None:
    """The first cell with an error output in a (partly) executed notebook, if any.

    Returns (index of the cell in the source notebook, its execution count, its
    first line): cells papermill added (injected parameters, error banner) are
    not counted, so the index is the one the reader sees in ``notebooks/``.
    """
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    k = 0
    for cell in nb.get("cells", []):
        if _ADDED_BY_PAPERMILL & set(cell.get("metadata", {}).get("tags", [])):
            continue
        for out in cell.get("outputs", []) or []:
            if out.get("output_type") == "error":
                return k, cell.get("execution_count"), _first_line(cell.get("source"))
        k += 1
    return None


def _html(nb_path: Path, dest: Path) -> None:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab").from_filename(str(nb_path))
    report.atomic_write_text(dest, body)


def _copy_results(out: Path) -> list[str]:
    """Copy the result tables of data/results (not the summary) into ``out/results``."""
    src = data_dir() / "results"
    copied = []
    if not src.is_dir() or src.resolve() == (out / "results").resolve():
        return copied
    for exp in sorted(p for p in src.iterdir() if p.is_dir() and p.name != "summary"):
        shutil.copytree(exp, out / "results" / exp.name, dirs_exist_ok=True)
        copied.append(exp.name)
    return copied


def _index_html(rep: Reproduction) -> str:
    esc = html.escape
    mode = "quick" if rep.quick else "full"
    rows = []
    for r in rep.runs:
        stem = Path(r.name).stem
        status = r.status if r.status != "failed" else f"FAILED: {r.describe_failure()}"
        rows.append(
            f"<tr><td><a href='html/{esc(stem)}.html'>{esc(r.name)}</a></td>"
            f"<td><a href='notebooks/{esc(r.name)}'>ipynb</a></td>"
            f"<td>{esc(status)}</td><td>{r.seconds:.1f} s</td></tr>"
        )
    table = rep.summary.drop(columns=["recorded"], errors="ignore").copy()
    for c in ("published", "model", "live"):
        table[c] = table[c].map(report.format_figure)
    summary = (
        table.to_html(index=False, escape=True, border=0, classes="summary")
        if len(table)
        else "<p>(no results recorded)</p>"
    )
    figs = sorted((rep.out / "figures").glob("*.png"))
    gallery = (
        "\n".join(
            f"<figure><a href='figures/{esc(p.stem)}.svg'><img src='figures/{esc(p.name)}' "
            f"alt='{esc(p.stem)}'></a><figcaption>{esc(p.stem)}</figcaption></figure>"
            for p in figs
        )
        or "<p>(no figures saved)</p>"
    )
    import labkit

    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>labkit reproduction ({mode} mode)</title>
<style>
body {{ font-family: sans-serif; max-width: 75em; margin: 2em auto; line-height: 1.4; }}
table {{ border-collapse: collapse; }} td, th {{ padding: 0.2em 0.6em; text-align: left;
border-bottom: 1px solid #ddd; vertical-align: top; }}
figure {{ display: inline-block; margin: 0.5em; }} img {{ max-width: 36em; }}
</style></head><body>
<h1>labkit reproduction ({mode} mode)</h1>
<p>labkit {esc(labkit.__version__)}, {esc(when)}, {len(rep.runs)} notebooks in
{rep.seconds:.0f} s. The notebooks tell each story; this page gathers their headline
figures.</p>
<h2>Summary</h2>
{summary}
<h2>Notebooks</h2>
<table><tr><th>notebook</th><th>executed</th><th>status</th><th>time</th></tr>
{chr(10).join(rows)}
</table>
<h2>Figures</h2>
{gallery}
</body></html>
"""


def run(
    *,
    quick: bool = False,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    notebooks: str | os.PathLike[str] | None = None,
    progress: bool = True,
    timeout: float | None = None,
    html_report: bool = True,
) -> Reproduction:
    """Execute every numbered notebook and write the reproduction into ``out``.

    Args:
        quick: quick mode (``QUICK=True`` in the notebooks, ``LABKIT_QUICK=1``).
        out: output directory (default :func:`default_out`).
        force: rerun notebooks whose code and parameters have not changed.
        notebooks: the notebooks directory (default :func:`notebooks_dir`).
        progress: show a progress bar on stderr.
        timeout: seconds allowed per cell (None: no limit).
        html_report: write the HTML pages and index.

    Returns:
        A :class:`Reproduction`; ``.failed`` lists the notebooks that failed.

    Raises:
        FileNotFoundError: if the notebooks directory holds no numbered notebook.
    """
    from tqdm.auto import tqdm

    start = time.perf_counter()
    nb_dir = Path(notebooks) if notebooks is not None else notebooks_dir()
    nbs = find_notebooks(nb_dir)
    if not nbs:
        raise FileNotFoundError(f"no notebooks named {NOTEBOOK_GLOB} in {nb_dir}")
    out_path = Path(out) if out is not None else default_out(quick)
    for sub in ("notebooks", "html", "figures", "summary", ".state"):
        (out_path / sub).mkdir(parents=True, exist_ok=True)
    out_path = out_path.resolve()
    params = {"QUICK": bool(quick)}
    rep = Reproduction(out=out_path, quick=bool(quick))
    bar = tqdm(nbs, desc="reproduce", unit="notebook", disable=not progress, file=sys.stderr)
    for nb in bar:
        bar.set_postfix_str(nb.name)
        digest = run_hash(nb, params)
        dest = out_path / "notebooks" / nb.name
        state = _load_state(out_path, nb)
        if (
            not force
            and state.get("hash") == digest
            and state.get("status") == "ran"
            and dest.is_file()
        ):
            rep.runs.append(
                NotebookRun(nb.name, "skipped", float(state.get("seconds", 0.0)), digest)
            )
            continue
        env = {
            "LABKIT_OUT": str(out_path),
            "LABKIT_QUICK": "1" if quick else "0",
            "LABKIT_NOTEBOOK": nb.name,
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        }
        with _environ(env):
            result = _execute(nb, dest, params, nb_dir.resolve(), timeout)
        result.hash = digest
        rep.runs.append(result)
        state = {k: v for k, v in asdict(result).items()}
        state["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        report.atomic_write_text(_state_path(out_path, nb), json.dumps(state, indent=1) + "\n")
        if html_report and dest.is_file():
            _html(dest, out_path / "html" / f"{nb.stem}.html")
    bar.close()
    if html_report:  # pages missing for skipped notebooks (e.g. out copied elsewhere)
        for r in rep.runs:
            page = out_path / "html" / f"{Path(r.name).stem}.html"
            executed = out_path / "notebooks" / r.name
            if not page.is_file() and executed.is_file():
                _html(executed, page)
    _copy_results(out_path)
    rep.summary = report.summary_table(out_path)
    rep.summary.to_csv(out_path / "summary.csv", index=False)
    report.atomic_write_text(out_path / "summary.txt", report.format_summary(rep.summary) + "\n")
    rep.seconds = time.perf_counter() - start
    if html_report:
        report.atomic_write_text(out_path / "index.html", _index_html(rep))
    return rep


def print_reproduction(rep: Reproduction, stream: Any = None) -> None:
    """Print the per-notebook status, the summary table and any failure."""
    stream = stream or sys.stdout
    mode = "quick" if rep.quick else "full"
    print(
        f"labkit reproduce ({mode} mode): {len(rep.runs)} notebooks in {rep.seconds:.1f} s",
        file=stream,
    )
    for r in rep.runs:
        note = f"  {r.status:8s} {r.name}  {r.seconds:6.1f} s"
        if r.status == "skipped":
            note += "  (unchanged since the last run; --force reruns it)"
        print(note, file=stream)
    print("", file=stream)
    print(report.format_summary(rep.summary), file=stream)
    print(f"\noutputs: {rep.out} (open index.html)", file=stream)
    for r in rep.failed:
        print(f"FAILED {r.describe_failure()}", file=sys.stderr)


def main(
    *,
    quick: bool,
    out: str | None,
    force: bool,
    notebooks: str | None = None,
    progress: bool = True,
    timeout: float | None = None,
) -> int:
    """What ``labkit reproduce`` runs: returns 0, or 1 if a notebook failed."""
    try:
        rep = run(
            quick=quick,
            out=out,
            force=force,
            notebooks=notebooks,
            progress=progress,
            timeout=timeout,
        )
    except FileNotFoundError as exc:
        print(f"labkit reproduce: {exc}", file=sys.stderr)
        return 2
    print_reproduction(rep)
    return 1 if rep.failed else 0


def add_arguments(parser: Any) -> None:
    """The options of ``labkit reproduce``."""
    parser.add_argument(
        "--quick", action="store_true", help="quick mode: small sizes and few repeats (as CI)"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="output directory (default: reproduction/quick or reproduction/full)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="rerun notebooks even if their code and parameters are unchanged",
    )
    parser.add_argument(
        "--notebooks",
        metavar="DIR",
        default=None,
        help="notebooks directory (default: $LABKIT_NOTEBOOKS or notebooks/)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time allowed per cell (default: no limit)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def from_args(args: Any) -> int:
    """Run ``labkit reproduce`` from parsed arguments."""
    return main(
        quick=args.quick,
        out=args.out,
        force=args.force,
        notebooks=args.notebooks,
        progress=not args.no_progress,
        timeout=args.timeout,
    )


__all__: Sequence[str] = (
    "NotebookRun",
    "Reproduction",
    "run",
    "run_hash",
    "find_notebooks",
    "notebooks_dir",
    "default_out",
    "print_reproduction",
    "main",
)
