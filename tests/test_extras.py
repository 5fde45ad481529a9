"""Dependencies by use: ``pip install labkit`` runs the model and the measurements; the
notebooks and ``labkit reproduce`` need the "lab" extra, and say so when it is missing."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from labkit import _extras, cli

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "labkit"

#: Import names of pyproject.toml's dependencies (what `pip install labkit` brings).
BASE = {"cffi", "numpy", "pandas", "scipy", "tqdm", "matplotlib", "platformdirs"}
#: Modules only the lab extra brings.
LAB = {"IPython", "ipywidgets", "ipykernel", "jupyter_client", *_extras.LAB_MODULES}


def _module_level_imports(path: Path) -> set[str]:
    """Top-level names imported when the module is imported (not inside functions)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return  # runs when called, not at import
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return  # for type checkers only
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return names


def test_module_level_imports_are_base_dependencies():
    """Every third-party module labkit imports at import time comes with `pip install labkit`
    (labkit.testing is for the test suite: its drivers may use the test extra)."""
    stdlib = set(sys.stdlib_module_names) | {"labkit", "__future__"}
    wrong = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "testing" in path.relative_to(PACKAGE).parts:
            continue
        extra = _module_level_imports(path) - stdlib - BASE
        if extra:
            wrong[str(path.relative_to(ROOT))] = sorted(extra)
    assert not wrong, wrong


def test_the_import_scan_sees_a_module_level_import(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text(
        "import papermill\ndef f():\n    import nbformat\n"
        "class C:\n    def g(self):\n        import nbclient\n    import ipywidgets\n"
    )
    assert _module_level_imports(mod) == {"papermill", "ipywidgets"}


def test_the_model_and_measurements_import_no_notebook_tools():
    code = (
        "import sys, labkit, labkit.core, labkit.live, labkit.models.ubuf, labkit.measure.stats, "
        "labkit.measure.workers, labkit.experiments.core_copy, labkit.experiments.live_kernel, "
        "labkit.measure.ledgers, labkit.cli\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(LAB)!r}))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_reproduce_without_the_lab_extra_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "papermill", None)  # find_spec: not importable
    assert _extras.missing_lab_modules() == ["papermill"]
    assert cli.main(["reproduce", "--quick"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "missing: papermill" in err and "pip install 'labkit[lab]'" in err
