"""Notebook files as JupyterLab writes them, so that opening a stored notebook changes nothing.

JupyterLab 4 (with jupyter_server) saves a notebook as nbformat 4.5 JSON: every cell with an
``id``, the kernelspec of the kernel it runs (``python3``, "Python 3 (ipykernel)"), the
kernel's ``language_info``, keys sorted, one space of indent, a final newline
(``nbformat.write``).  Outputs are written as they were read (consecutive stream outputs, as
papermill stores them, stay apart: JupyterLab merges streams only while a cell runs).  A
stored notebook that differs in any of these is rewritten on its first autosave, and
``git status`` shows it modified although nothing ran.

:func:`normalise` puts a notebook into that form and drops what only papermill adds (its
injected-parameters cell, with the execution counts after it renumbered as if it had not
run, its ``papermill`` metadata and empty tag lists; also stored widget state, which labkit
never stores: each drawing widget leaves a static image instead).  Without that state a
widget's view cannot be shown once its kernel is gone: JupyterLab shows "Error displaying
widget: model not found" in its place in a trusted notebook.  So the view
(``application/vnd.jupyter.widget-view+json``) is dropped from each output and the output's
other forms are kept (labkit's widgets carry a line of text saying what the controls are and
that running the cell brings them back; an output with nothing else is dropped).  Otherwise it
never touches a cell's source or the data of an output.  From a shell::

    python -m labkit.run.notebook_files notebooks/*.ipynb      # rewrite in place
    python -m labkit.run.notebook_files --check notebooks/*.ipynb   # exit 1 if any would change

``tests/test_notebooks_clean.py`` checks every stored notebook with :func:`would_change`, and
``tests/test_browser.py`` checks in JupyterLab itself that a save writes the very same bytes.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from labkit.report.summary import atomic_write_text

#: The kernelspec JupyterLab writes for ipykernel's kernel.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

#: The output form of a widget's view: it needs the widget's model (a live kernel, or state
#: stored in the notebook, which labkit never stores).
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

#: Tags papermill gives the cells it adds.
PAPERMILL_TAGS = ("injected-parameters", "papermill-error-cell-tag")

#: Tag (and id) of the Markdown line naming the run a stored notebook's outputs come from
#: (:mod:`labkit.run.reference`); ``metadata.labkit`` names the run too.
STORED_RUN_TAG = "labkit-run"


#: A measured interval written into prose: "95% CI 0.990-0.995", "[1.018, 1.026]", "3 ± 1".
#: Intervals are measured, so a notebook renders them from its results (code output); in a
#: Markdown cell they go stale the next time the notebook runs.
INTERVAL_IN_PROSE = re.compile(
    r"95%\s*(?:CI|confidence|interval)[^.\n]{0,15}?-?\d"
    r"|\[\s*-?\d[\d.,]*\s*,\s*-?\d[\d.,]*\s*\]"
    r"|\d\s*±\s*\d"
)


def intervals_in_prose(text: str) -> list[str]:
    """The measured intervals written in ``text`` (Markdown prose), with some context."""
    return [
        text[max(0, m.start() - 40) : m.end() + 10].replace("\n", " ")
        for m in INTERVAL_IN_PROSE.finditer(text)
    ]


def language_info(version: str | None = None) -> dict[str, Any]:
    """The ``language_info`` ipykernel reports (``version``: the kernel's Python, default
    this interpreter's), as JupyterLab stores it."""
    version = version or sys.version.split()[0]
    return {
        "codemirror_mode": {"name": "ipython", "version": int(version.split(".")[0])},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": f"ipython{version.split('.')[0]}",
        "version": version,
    }


def _numbers_as_javascript_writes(value: Any) -> Any:
    """``value`` with each whole float as an int: JupyterLab's JSON writes -1.0 as -1."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return type(value)((k, _numbers_as_javascript_writes(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_numbers_as_javascript_writes(v) for v in value]
    return value


def normalise(nb: Any, *, python_version: str | None = None) -> Any:
    """A copy of ``nb`` (an nbformat 4 ``NotebookNode``) as JupyterLab would write it.

    Args:
        nb: the notebook.
        python_version: the version for ``language_info`` (default: this interpreter's,
            which is the kernel's when both come from one venv).

    Returns:
        The normalised notebook (``nb`` itself is not modified).
    """
    import nbformat  # the [lab] extra

    nb = copy.deepcopy(nb)
    if nb.get("nbformat") != 4:
        raise ValueError(f"not an nbformat 4 notebook (nbformat {nb.get('nbformat')})")
    kept, dropped_runs = [], 0
    for cell in nb.cells:
        if set(cell.get("metadata", {}).get("tags", [])) & set(PAPERMILL_TAGS):
            dropped_runs += 1 if cell.get("execution_count") else 0
            continue
        if dropped_runs and cell.get("execution_count"):  # read as run without papermill's cell
            cell.execution_count -= dropped_runs
            for out in cell.get("outputs", []):
                if out.get("execution_count"):
                    out["execution_count"] -= dropped_runs
        kept.append(cell)
    nb.cells = kept
    meta = nb.metadata
    for key in ("papermill", "widgets"):
        meta.pop(key, None)
    meta["kernelspec"] = nbformat.from_dict(dict(KERNELSPEC))
    meta["language_info"] = nbformat.from_dict(language_info(python_version))
    for cell in nb.cells:
        if cell.get("outputs"):
            cell.outputs = _without_widget_views(cell.outputs)
            for out in cell.outputs:
                if "metadata" in out:
                    out["metadata"] = _numbers_as_javascript_writes(out["metadata"])
        cell.metadata.pop("papermill", None)
        if cell.metadata.get("tags") == []:  # papermill gives every cell an empty tag list
            del cell.metadata["tags"]
    if nb.get("nbformat_minor", 0) < 5:
        nb.nbformat_minor = 5
    from nbformat.corpus.words import generate_corpus_id  # the [lab] extra

    for cell in nb.cells:  # nbformat 4.5 requires an id per cell (as JupyterLab adds them)
        if not cell.get("id"):
            cell["id"] = generate_corpus_id()
    return nb


def _without_widget_views(outputs: list[Any]) -> list[Any]:
    """``outputs`` with each widget view dropped (see the module docstring)."""
    kept = []
    for out in outputs:
        data = out.get("data")
        if data and WIDGET_VIEW in data:
            del data[WIDGET_VIEW]
            if not data:
                continue
        kept.append(out)
    return kept


def drop_stored_run(nb: Any) -> Any:
    """``nb`` without the line and metadata naming the run of its stored outputs (for a
    notebook executed afresh: its outputs are its own run's).  Modifies and returns ``nb``."""
    nb.cells = [c for c in nb.cells if STORED_RUN_TAG not in c.get("metadata", {}).get("tags", [])]
    nb.metadata.pop("labkit", None)
    return nb


def drop_stored_run_file(path: str | Path) -> None:
    """:func:`drop_stored_run` on a file, rewritten only if it names a stored run."""
    import nbformat  # the [lab] extra

    nb = nbformat.read(str(path), as_version=4)
    tagged = any(STORED_RUN_TAG in c.get("metadata", {}).get("tags", []) for c in nb.cells)
    if tagged or "labkit" in nb.metadata:
        atomic_write_text(Path(path), dumps(drop_stored_run(nb)))


def dumps(nb: Any) -> str:
    """The file's text as jupyter_server writes it (``nbformat.write``: a final newline)."""
    import nbformat  # the [lab] extra

    text = nbformat.writes(nb, version=nbformat.NO_CONVERT)
    return text if text.endswith("\n") else text + "\n"


def normalised_text(path: str | Path, *, python_version: str | None = None) -> str:
    """What :func:`normalise_file` would write for ``path``."""
    import nbformat  # the [lab] extra

    with warnings.catch_warnings():  # "cell is missing an id": normalise adds the ids
        warnings.simplefilter("ignore", nbformat.warnings.MissingIDFieldWarning)
        nb = nbformat.read(str(path), as_version=4)
    return dumps(normalise(nb, python_version=python_version))


def would_change(path: str | Path, *, python_version: str | None = None) -> bool:
    """True when :func:`normalise_file` would change the file."""
    return Path(path).read_text(encoding="utf-8") != normalised_text(
        path, python_version=python_version
    )


def normalise_file(path: str | Path, *, python_version: str | None = None) -> bool:
    """Rewrite ``path`` in the form JupyterLab writes (atomically). True if it changed."""
    text = normalised_text(path, python_version=python_version)
    if Path(path).read_text(encoding="utf-8") == text:
        return False
    atomic_write_text(Path(path), text)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m labkit.run.notebook_files [--check] FILE...``."""
    parser = argparse.ArgumentParser(
        prog="python -m labkit.run.notebook_files",
        description="Rewrite notebooks as JupyterLab writes them (kernelspec, language_info, "
        "cell ids, no papermill metadata), so that opening one changes nothing.",
    )
    parser.add_argument("files", nargs="+", type=Path, help="notebooks (.ipynb)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if any would")
    parser.add_argument("--python", help="language_info version (default: this Python's)")
    args = parser.parse_args(argv)
    changed = []
    for path in args.files:
        if args.check:
            hit = would_change(path, python_version=args.python)
        else:
            hit = normalise_file(path, python_version=args.python)
        if hit:
            changed.append(path)
            print(f"{'would change' if args.check else 'normalised'}: {path}")
    if not changed:
        print(f"{len(args.files)} notebook(s) already as JupyterLab writes them")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "main",
]
