"""The reference run: one full reproduction whose outputs are the ones stored in the notebooks.

A reader who opens a notebook without running it sees its stored outputs.  They should be
the figures and intervals that ``data/reproduction/summary.csv`` reports, from one full-mode
run, named.  :func:`store_reference` makes it so::

    make reference                         # = python -m labkit.run.reference
    python -m labkit.run.reference --quick --out DIR   # a trial, e.g. on a laptop

It runs ``labkit reproduce`` (full mode unless ``--quick``), then reruns the index notebook
alone (it runs first, so its summary table could only show an earlier run), and then:

* writes every executed notebook back into ``notebooks/`` in the form JupyterLab writes
  (:mod:`labkit.run.notebook_files`: papermill's injected cell and metadata dropped),
  with ``metadata.labkit`` naming the run and, under its title, a Markdown line saying
  which run, host and date its outputs come from (a cell tagged ``labkit-run``);
* copies the run's ``summary.csv`` and ``summary.txt`` into ``data/reproduction/`` and writes
  ``data/reproduction/run.json``: the run's id, mode, host, date, each notebook's execution
  window and the summary's SHA-256.

:func:`check_reference` is the other half (``tests/test_reference.py`` calls it): every
stored notebook names the run of ``run.json``, the summary is the one that run wrote, every
row was recorded while its notebook was executing in that run, and each row's printed figure
(``measured [95% CI]`` as :func:`labkit.report.summary.format_summary` writes it) appears in
the stored outputs of the notebook that recorded it and of the index.

Running a notebook afterwards measures afresh (quick when ``LABKIT_QUICK`` is set):
``labkit reproduce`` drops the ``labkit-run`` line from its executed copies
(:func:`labkit.run.notebook_files.drop_stored_run`), which describe their own run.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import platform
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

import labkit
from labkit import config
from labkit.measure.envinfo import cpu_model
from labkit.report import summary
from labkit.report.bundle import from_reproduction, load_state, state_path
from labkit.run import notebook_files, reproduce

#: What under ``labkit/`` does not change a figure or a summary row (orchestration, the
#: command line, test drivers); everything else does.
NOT_FIGURE_CODE = (
    "_resources/",
    "run/",
    "testing/",
    "cli.py",
    "_options.py",
    "_args.py",
    "kernelsrc/cli.py",
    "kernelvm/cli.py",
)
#: The file types of labkit's code and declared data.
CODE_SUFFIXES = (".py", ".c", ".h", ".S", ".csv", ".patch", ".json")
#: The command that regenerates the stored outputs.
REGENERATE = "make reference"


def code_manifest() -> dict[str, str]:
    """Every file under ``labkit/`` that affects a figure or a summary row (all but
    :data:`NOT_FIGURE_CODE`; the results' declared ledgers among them), with its SHA-256 (12
    hex digits): ``{"labkit/results/r2/claims.py": "1a2b3c...", "labkit/results/r2/bands.csv":
    ...}``."""
    pkg = Path(labkit.__file__).resolve().parent
    out = {}
    for path in sorted(pkg.rglob("*")):
        rel = path.relative_to(pkg).as_posix()
        if not path.is_file() or path.suffix not in CODE_SUFFIXES or "__pycache__" in rel:
            continue
        if any(rel == x or (x.endswith("/") and rel.startswith(x)) for x in NOT_FIGURE_CODE):
            continue
        out[f"labkit/{rel}"] = _sha256(path)[:12]
    return out


def code_id(manifest: dict[str, str] | None = None) -> str:
    """One id of :func:`code_manifest` (16 hex digits): equal ids, same figure code."""
    m = code_manifest() if manifest is None else manifest
    text = "\n".join(f"{k} {v}" for k, v in sorted(m.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def stale_outputs(notebooks: str | Path, reproduction: str | Path) -> list[str]:
    """Where the stored outputs are older than the code they ship with (empty: none):
    ``run.json``'s code id against :func:`code_id` of this tree (with the files changed,
    added or removed since), and each stored notebook's code id against ``run.json``'s.
    Raises FileNotFoundError when there is no ``run.json``."""
    run = json.loads((Path(reproduction) / RUN_FILE).read_text(encoding="utf-8"))
    stored = run.get("code") or {}
    now = code_manifest()
    problems = []
    if stored.get("id") != code_id(now):
        then = stored.get("files") or {}
        changed = sorted(k for k in now if k in then and then[k] != now[k])
        added = sorted(set(now) - set(then))
        removed = sorted(set(then) - set(now))
        what = (
            "; ".join(
                f"{label}: {', '.join(files[:8])}{' ...' if len(files) > 8 else ''}"
                for label, files in (("changed", changed), ("added", added), ("removed", removed))
                if files and then
            )
            or "the run recorded no code id"
        )
        problems.append(
            f"data/reproduction ({run.get('run')}, code {stored.get('id')}) is older than the "
            f"code (code {code_id(now)}; {what}): run `{REGENERATE}` from this tree"
        )
    for path in sorted(Path(notebooks).glob("[0-9][0-9]-*.ipynb")):
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("labkit", {})
        if meta.get("code") != stored.get("id") or stored.get("id") is None:
            problems.append(
                f"{path.name}: outputs of code {meta.get('code')}, not the stored run's "
                f"{stored.get('id')}: run `{REGENERATE}`"
            )
    return problems


#: The summary files of a reproduction that the reference stores.
SUMMARY_FILES = ("summary.csv", "summary.txt")
#: The file beside ``summary.csv`` that names the run.
RUN_FILE = "run.json"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _host() -> dict[str, str]:
    return {"cpu": cpu_model(), "kernel": platform.release(), "machine": platform.machine()}


def run_id(finished: str, host: dict[str, str]) -> str:
    """``<UTC date and time>-<cpu slug>``, e.g. ``20261203T1012Z-intel-xeon-processor``."""
    stamp = finished.replace("-", "").replace(":", "")[:13] + "Z"
    cpu = "".join(ch if ch.isalnum() else "-" for ch in host["cpu"].lower())
    cpu = "-".join(part for part in cpu.split("-") if part and part not in ("r", "tm", "cpu"))
    return f"{stamp}-{cpu[:40].rstrip('-')}"


def provenance_text(run: dict[str, Any]) -> str:
    """The Markdown line put under each stored notebook's title."""
    mode = "quick-mode trial" if run["mode"] == "quick" else "full-mode reference"
    host = run["host"]
    return (
        f"*Stored outputs: the {mode} run `{run['run']}` of labkit {run['labkit']} on "
        f"{host['cpu']} (Linux {host['kernel']}, {host['machine']}), finished "
        f"{run['date'].replace('T', ' ')[:16]} UTC; `data/reproduction/summary.csv` is its "
        "summary. Running a cell replaces its output with a fresh measurement on your "
        "machine (in quick mode when `LABKIT_QUICK` is set).*"
    )


def stored_notebook(executed: Path, run: dict[str, Any]) -> str:
    """The text to store for an executed notebook of ``run``: normalised, named, with its
    provenance line under the first cell."""
    import nbformat  # the [lab] extra

    nb = notebook_files.normalise(nbformat.read(str(executed), as_version=4))
    nb = notebook_files.drop_stored_run(nb)
    cell = nbformat.v4.new_markdown_cell(provenance_text(run))
    cell.id = notebook_files.STORED_RUN_TAG
    cell.metadata["tags"] = [notebook_files.STORED_RUN_TAG]
    nb.cells.insert(1 if nb.cells else 0, cell)
    nb.metadata["labkit"] = {"run": run["run"], "mode": run["mode"]}
    if run.get("code"):
        nb.metadata["labkit"]["code"] = run["code"]["id"]
    return notebook_files.dumps(nb)


def store_reference(
    *,
    quick: bool = False,
    out: str | Path | None = None,
    notebooks: str | Path | None = None,
    reproduction: str | Path | None = None,
    force: bool = True,
    progress: bool = True,
    measure: Any = None,
) -> dict[str, Any]:
    """Run the reproduction and store it as the reference (see the module docstring).

    Args:
        quick: quick mode (a trial; the reference is full mode).
        out: the reproduction's output folder (default: ``labkit reproduce``'s).
        notebooks: where the notebooks are read and stored (default: the clone's).
        reproduction: where summary.csv, summary.txt and run.json go (default: the clone's
            ``data/reproduction``).
        force: rerun every notebook (default), not only those that changed.
        progress: show progress on stderr.
        measure: the measuring phase, as ``labkit reproduce`` runs it
            (:func:`labkit.claims.schedule.phase`; ``make reference`` passes it).

    Returns:
        The run record written to ``run.json``.

    Raises:
        RuntimeError: if a notebook failed (nothing is stored then).
    """
    if config.checkout() is None and (notebooks is None or reproduction is None):
        raise RuntimeError("an installed labkit stores no reference: give the folders to write")
    nb_dir = Path(notebooks) if notebooks is not None else reproduce.notebooks_dir()
    dest = Path(reproduction) if reproduction is not None else config.resource("reproduction")
    kw = {"quick": quick, "out": out, "notebooks": nb_dir, "progress": progress}
    rep = reproduce.run(force=force, measure=measure, **kw)
    if not rep.ok:
        raise RuntimeError("the reproduction did not complete: " + _failures(rep))
    # The summary of the run that measured: the index's rerun below would mark every other
    # notebook's rows "carried over" (up to date), although they are this run's own.
    summaries = {name: (rep.out / name).read_bytes() for name in SUMMARY_FILES}
    index = reproduce.find_notebooks(nb_dir)[0].name
    # <out>/bundle, as labkit reproduce writes it (make gallery copies it): before the
    # index's rerun, whose gallery shows it in this host's place (gallery_with_this_run)
    from_reproduction(rep.out)
    state_path(rep.out, index).unlink()  # rerun the index alone: its table shows this run
    again = reproduce.run(**kw)
    if not again.ok:
        raise RuntimeError("the index notebook did not complete: " + _failures(again))
    for name, data in summaries.items():
        summary.atomic_write_text(rep.out / name, data)
    manifest = code_manifest()  # the code that measured and drew, as it was when it ran
    host = _host()
    windows = {}
    for path in reproduce.find_notebooks(nb_dir):
        st = load_state(rep.out, path.name)
        windows[path.name] = {"started": st.get("started"), "finished": st.get("finished")}
    finished = max(w["finished"] for w in windows.values())
    run = {
        "run": run_id(finished, host),
        "mode": "quick" if quick else "full",
        "labkit": labkit.__version__,
        "host": host,
        "date": finished,
        "notebooks": windows,
        "code": {"id": code_id(manifest), "files": manifest},
    }
    texts = {
        p.name: stored_notebook(rep.out / "notebooks" / p.name, run)
        for p in reproduce.find_notebooks(nb_dir)
    }
    dest.mkdir(parents=True, exist_ok=True)
    for name in SUMMARY_FILES:
        shutil.copyfile(rep.out / name, dest / name)
    run["summary_sha256"] = _sha256(dest / "summary.csv")
    for name, text in texts.items():
        summary.atomic_write_text(nb_dir / name, text)
    summary.atomic_write_text(dest / RUN_FILE, json.dumps(run, indent=1) + "\n")
    return run


def _failures(rep: Any) -> str:
    return "; ".join(r.describe_failure() for r in rep.failed) or "interrupted or output error"


def _outputs_text(nb: dict[str, Any]) -> str:
    """Every text output of a notebook (plain and HTML, unescaped) as one string."""
    parts = []
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            texts = [out.get("text", "")]
            data = out.get("data", {})
            texts += [data.get("text/plain", ""), data.get("text/html", "")]
            for t in texts:
                parts.append(html.unescape("".join(t) if isinstance(t, list) else str(t)))
    return "\n".join(parts)


def check_reference(notebooks: str | Path, reproduction: str | Path) -> list[str]:
    """What contradicts "the stored notebooks are the run that ``run.json`` names" (empty:
    nothing).  Raises FileNotFoundError when there is no ``run.json``."""
    nb_dir, rep_dir = Path(notebooks), Path(reproduction)
    run = json.loads((rep_dir / RUN_FILE).read_text(encoding="utf-8"))
    problems = []
    summary_csv = rep_dir / "summary.csv"
    if _sha256(summary_csv) != run.get("summary_sha256"):
        problems.append("summary.csv is not the one the run wrote (its SHA-256 differs)")
    stored = {}
    for path in sorted(nb_dir.glob("[0-9][0-9]-*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        stored[path.name] = nb
        named = nb.get("metadata", {}).get("labkit", {}).get("run")
        if named != run["run"]:
            problems.append(f"{path.name}: outputs of run {named!r}, not {run['run']!r}")
        if path.name not in run.get("notebooks", {}):
            problems.append(f"{path.name}: not part of run {run['run']}")
    df = pd.read_csv(summary_csv)
    index = min(stored) if stored else None
    for _, row in df.iterrows():
        name = str(row.get("notebook") or "")
        window = run.get("notebooks", {}).get(name)
        what = f"{row['result']} {row['quantity']!r}"
        if window is None or name not in stored:
            problems.append(f"{what}: recorded by {name!r}, which the run does not store")
            continue
        if not (window["started"] <= str(row["recorded"]) <= window["finished"]):
            problems.append(
                f"{what}: recorded {row['recorded']}, outside {name}'s run "
                f"({window['started']} to {window['finished']})"
            )
        printed = summary.row_cells(row)["measured [95% CI]"]
        for shown in {name, index}:
            if printed not in _outputs_text(stored[shown]):
                problems.append(f"{what}: {printed!r} is not in the outputs of {shown}")
    return problems


def main(argv: Sequence[str] | None = None, measure: Any = None) -> int:
    """``python -m labkit.run.reference [--quick] [--out DIR]`` (``measure``: see
    :func:`store_reference`; without it each notebook measures its own experiments)."""
    parser = argparse.ArgumentParser(
        prog="python -m labkit.run.reference",
        description="Run the full reproduction and store it as the reference: the executed "
        "notebooks into notebooks/ (normalised, each naming the run), the summary and "
        "run.json into data/reproduction/.",
    )
    parser.add_argument("--quick", action="store_true", help="quick mode (a trial)")
    parser.add_argument("--out", help="the reproduction's folder (default: labkit reproduce's)")
    parser.add_argument("--notebooks", help="the notebooks folder to read and write")
    parser.add_argument("--reproduction", help="where summary.csv and run.json go")
    args = parser.parse_args(argv)
    try:
        run = store_reference(
            quick=args.quick,
            out=args.out,
            notebooks=args.notebooks,
            reproduction=args.reproduction,
            measure=measure,
        )
    except RuntimeError as exc:
        print(f"labkit reference: {exc}; nothing stored", file=sys.stderr)
        return 1
    print(f"stored run {run['run']} ({run['mode']} mode, {run['host']['cpu']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "main",
]
