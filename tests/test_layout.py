"""The package's shape (docs/ARCHITECTURE.md): import direction, no cycle, public surface, style.

Imports are read from the source with :mod:`ast` (every ``import`` and
``from ... import`` naming ``labkit``, at module level or inside a function;
``importlib.import_module("...")`` and ``__import__("...")`` calls; and string
constants that name a labkit module, such as ``"labkit.core.memory"`` or a
worker target ``"labkit.x.y:qualname"``), so the checks hold for code that has
not run.  The C core's files are checked the same way for call cycles.
"""

from __future__ import annotations

import ast
import errno
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "labkit"

#: The layers, bottom to top (docs/ARCHITECTURE.md).  A module may import from its
#: own group, from a lower layer, or sideways only as ALLOWED_SIDEWAYS says (the
#: modules of layer 0 are one group).  The compiled module labkit._labkit is not counted.
LAYERS: dict[str, int] = {
    # 0: the C module's loader, argument checks, safe file writes, run-wide settings, exceptions
    "_ffi": 0,
    "_args": 0,
    "_files": 0,
    "_store": 0,
    "_tools": 0,
    "_progress": 0,
    "_untrusted": 0,
    "_options": 0,
    "_build": 0,
    "_extras": 0,
    "budget": 0,
    "config": 0,
    "errors": 0,
    "buildinfo": 0,
    # 1: the model (and the package root, which re-exports it)
    "core": 1,
    "": 1,
    # 2: cost models of published changes; the running kernel
    "models": 2,
    "live": 2,
    # 3: measurement: runner, statistics, verdicts, the results' ledgers, records
    "measure": 3,
    # 4: the experiments results share
    "experiments": 4,
    # the real kernel code as a second oracle: builds, drives and compares with
    # the model, the measurements' records (measure) and the model's counts (models)
    "kernelsrc": 4,
    # the real kernel booted: x86-64 kernels of each era under QEMU, counted per call; it
    # reuses the oracle's source handling (kernelsrc) and `labkit kernel vm` hangs off its CLI
    "kernelvm": 4,
    # 5: what readers see: summary rows and verdicts, saved figures, bundles, the gallery
    "report": 5,
    "teach": 5,
    # 6: one folder per result (its claims, experiments, figures) and the registry of results;
    # the run: labkit reproduce's orchestration (notebooks executed, run state, lanes, progress)
    "results": 6,
    "run": 6,
    # 7: the engine that measures, decides and records a claim
    "claims": 7,
    # 8: the composition root: the run handed the claims' measuring phase
    "compose": 8,
    # 9: the command line
    "cli": 9,
    # 10: harnesses of the suite and benchmarks/ (labkit.testing); nothing imports them
    "testing": 10,
}

#: Imports between two groups of one layer, and why.
ALLOWED_SIDEWAYS: dict[tuple[str, str], str] = {
    ("", "labkit.core"): "the package root re-exports the model's public API",
    ("models", "labkit.live.variants"): "the models take the one read-variant table",
    ("teach", "labkit.report.plots"): "the drawings use the one colour table",
    ("kernelsrc", "labkit.experiments.callgrind"): "the real code's counts beside the model's",
    ("kernelvm", "labkit.kernelsrc.build"): "the bench patches the oracle's tree with its seed cut",
    ("kernelsrc", "labkit.kernelvm.cli"): "`labkit kernel vm` is a subcommand of `labkit kernel`",
}

#: The public surface: every name of every ``__all__``, one ``module.name`` a line.  A change to
#: it shows in review as a change to this file (``python tests/test_layout.py --write``).
PUBLIC_SURFACE = ROOT / "tests" / "public_surface.txt"

#: Notebooks ruff checks: all of them.
NOTEBOOKS_LINTED = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _group(module: str) -> str:
    """``labkit.live.ring`` -> ``live``; ``labkit.config`` -> ``config``; ``labkit`` -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _target(name: str) -> str | None:
    """The labkit module an imported name lives in (the longest module prefix)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


#: A string constant naming a labkit module (or a target in it: "module:qualname").
MODULE_STRING = re.compile(r"^(labkit(?:\.[A-Za-z_]\w*)+)(?::[\w.]+)?$")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (not references to code)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _imported_names(tree: ast.AST) -> list[str]:
    """Every module name the tree imports: import statements, importlib/__import__ calls
    with a constant name, and string constants naming a labkit module."""
    docs = _docstrings(tree)
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = ast.unparse(node.func)
            if func in ("importlib.import_module", "import_module", "__import__"):
                names.append(str(node.args[0].value))
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
        ):
            match = MODULE_STRING.match(node.value)
            if match:
                names.append(match.group(1))
    return names


def _imports(module: str) -> set[str]:
    """Every labkit module ``module`` imports (``from labkit import X`` counts X if a module)."""
    tree = ast.parse(MODULES[module].read_text())
    for node in ast.walk(tree):  # imports for type checkers only are not run: no cycle
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    out: set[str] = set()
    for name in _imported_names(tree):
        if name.split(".")[0] == "labkit" and not name.startswith("labkit._labkit"):
            target = _target(name)
            if target is not None and target != module:
                out.add(target)
    return out


GRAPH = {m: _imports(m) for m in MODULES}


def test_every_group_has_a_layer():
    assert {_group(m) for m in MODULES} <= set(LAYERS)


def _violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import in ``graph`` that points up, or sideways without a reason."""
    wrong = []
    for module, targets in graph.items():
        src = _group(module)
        for target in targets:
            dst = _group(target)
            if dst == src or LAYERS[dst] < LAYERS[src] or LAYERS[dst] == LAYERS[src] == 0:
                continue
            if LAYERS[dst] == LAYERS[src] and any(
                s == src and (target == t or target.startswith(t + "."))
                for s, t in ALLOWED_SIDEWAYS
            ):
                continue
            wrong.append(f"{module} (layer {LAYERS[src]}) imports {target} (layer {LAYERS[dst]})")
    return wrong


def test_imports_point_down_never_up():
    wrong = _violations(GRAPH)
    assert not wrong, "\n".join(wrong)


def test_the_parser_sees_importlib_and_string_targets():
    code = (
        '"""A docstring naming labkit.report.summary is not an import."""\n'
        "import importlib\n"
        'importlib.import_module("labkit.experiments.live_kernel")\n'
        '__import__("labkit.report.plots")\n'
        'TARGET = "labkit.measure.runner:run.in_worker"\n'
        'NOT_A_MODULE = "labkit rocks"\n'
    )
    assert set(_imported_names(ast.parse(code))) == {
        "importlib",
        "labkit.experiments.live_kernel",
        "labkit.report.plots",
        "labkit.measure.runner",
    }
    assert _violations({"labkit.core.memory": {_target("labkit.report.plots")}})


def test_the_direction_check_can_fail():
    assert _violations({"labkit.core.memory": {"labkit.measure.runner"}})  # up
    assert _violations({"labkit.live.ring": {"labkit.models.ubuf"}})  # sideways, no reason
    assert not _violations({"labkit.models.ubuf": {"labkit.live.variants"}})  # listed
    assert "labkit.live.variants" in GRAPH["labkit.models.ubuf"]  # the parser sees imports


def test_no_import_cycle():
    """No cycle among modules (an import of a module's own parent package does not count:
    Python runs the parent first whatever the module says)."""
    graph = {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in GRAPH.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def public_names() -> dict[str, list[str]]:
    """Each module's ``__all__`` (written out as a literal list: no ``*x.__all__``)."""
    out = {}
    for module, path in MODULES.items():
        for node in ast.parse(path.read_text()).body:
            targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
            if any(isinstance(x, ast.Name) and x.id == "__all__" for x in targets):
                out[module] = list(ast.literal_eval(node.value))  # ValueError: not a literal
    return out


def surface() -> list[str]:
    """The public surface: ``module.name`` for every name of every ``__all__``, sorted."""
    return sorted(f"{m}.{n}" for m, ns in public_names().items() for n in ns)


def test_the_public_surface_is_the_committed_list():
    names = public_names()
    assert all(n.isidentifier() for ns in names.values() for n in ns)
    want = PUBLIC_SURFACE.read_text().split()
    got = surface()
    added, gone = sorted(set(got) - set(want)), sorted(set(want) - set(got))
    assert got == want, (
        f"the public surface changed (added {added}, removed {gone}): if on purpose, "
        "run python tests/test_layout.py --write and commit tests/public_surface.txt"
    )


def function_imports(path: Path) -> list[tuple[int, bool]]:
    """Each import inside a function of ``path``: its line and whether a comment on that
    line or the line above says why it is not at the top."""
    lines = path.read_text().splitlines()
    out = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                above = lines[child.lineno - 2] if child.lineno > 1 else ""
                out.append((child.lineno, "#" in lines[child.lineno - 1] or "#" in above))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse("\n".join(lines)), False)
    return out


def test_imports_inside_functions_say_why():
    unexplained = {}
    for path in MODULES.values():
        n = sum(not why for _, why in function_imports(path))
        if n:
            unexplained[str(path.relative_to(ROOT))] = n
    # the reasons: a cycle, an optional extra, the cost of loading pandas, matplotlib or the C
    # core where it is not needed (docs/ARCHITECTURE.md)
    assert unexplained == {}, f"imports inside functions with no comment saying why: {unexplained}"


def test_the_import_check_sees_a_function_import(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import os\n\n\ndef f():\n    import json\n    import re  # why\n")
    assert function_imports(path) == [(5, False), (6, True)]


def test_the_read_variant_table_is_the_c_one():
    from labkit import live
    from labkit._ffi import ffi, lib

    # the table's first rows (a new variant is a row added to it, and needs no edit here)
    assert live.SYSCALL_VARIANTS[:5] == ("read", "readv1", "readv_empty", "readv_split", "preadv2")
    assert live.URING_OPS[:4] == ("read", "readv1", "readv_empty", "readv_split")
    assert "read_fixed" in live.URING_OPS and "read_fixed" not in live.SYSCALL_VARIANTS
    for k, (name, v) in enumerate(live.VARIANTS.items()):
        row = lib.lk_read_variant(k)
        assert (v.id, v.name, v.label) == (k, name, ffi.string(row.label).decode())
    assert lib.lk_read_variant(len(live.VARIANTS)) == ffi.NULL
    labels = {op: live.VARIANTS[op].uring_label for op in live.URING_OPS}
    assert [labels[op] for op in ("read", "readv1", "readv_empty", "readv_split")] == [
        "READ",
        "READV(1 x 4K)",
        "READV(4K + empty)",
        "READV(2 x 2K)",
    ]
    assert labels["read_fixed"] == "READ_FIXED"
    assert lib.lk_read_variant(-1) == ffi.NULL
    length = 4096
    assert live.VARIANTS["readv_empty"].segments(length) == [(0, length), (length, 0)]
    assert live.VARIANTS["readv_split"].segments(length) == [(0, 2048), (2048, 2048)]
    with pytest.raises(ValueError):
        live.VARIANTS["readv_split"].segments(1)


def test_the_c_entry_points_refuse_what_the_table_does_not_offer():
    from labkit import live
    from labkit._ffi import ffi, lib

    buf = ffi.new("char[]", 64)
    fixed, count = live.VARIANTS["read_fixed"].id, len(live.VARIANTS)
    for vid in (fixed, count, -1):
        assert lib.lk_time_syscall(vid, 0, buf, 64, -1, 10) == -errno.EINVAL
        assert lib.lk_sys_read_once(vid, 0, buf, 64, -1) == -errno.EINVAL


def _ruff() -> str:
    beside = Path(sys.executable).parent / "ruff"
    found = str(beside) if beside.exists() else shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed")
    return found


def test_ruff_format_and_check():
    """ruff format covers labkit, tests, benchmarks and the notebooks; ruff check the code."""
    ruff = _ruff()
    paths = ["labkit", "tests", "benchmarks", "notebooks"]
    fmt = subprocess.run([ruff, "format", "--check", *paths], cwd=ROOT, capture_output=True)
    assert fmt.returncode == 0, fmt.stdout.decode() + fmt.stderr.decode()
    lint_paths = ["labkit", "tests", "benchmarks", *map(str, NOTEBOOKS_LINTED)]
    lint = subprocess.run([ruff, "check", *lint_paths], cwd=ROOT, capture_output=True)
    assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()


def test_every_package_is_in_the_readme_layout_table():
    readme = (ROOT / "README.md").read_text()
    packages = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
    missing = [p for p in packages if f"`labkit/{p}/`" not in readme]
    assert not missing, f"README.md's layout table does not name labkit/{missing}/"


def test_every_group_is_in_the_architecture_doc():
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    for group in LAYERS:
        if group and not group.startswith("_"):
            assert f"`{group}" in doc, f"docs/ARCHITECTURE.md does not mention {group}"


CSRC = PACKAGE / "csrc"
_C_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_C_DEFINITION = re.compile(r"^(?!static)[A-Za-z_][\w \*]*?\b(lk_\w+)\s*\([^;{]*\)\s*\{", re.M)


def _c_calls(sources: dict[str, str]) -> dict[str, set[str]]:
    """File -> the other files whose (non-static) functions it calls."""
    code = {name: _C_COMMENT.sub("", text) for name, text in sources.items()}
    defined = {fn: name for name, text in code.items() for fn in _C_DEFINITION.findall(text)}
    return {
        name: {
            defined[fn]
            for fn in set(re.findall(r"\b(lk_\w+)\s*\(", text)) & defined.keys()
            if defined[fn] != name
        }
        for name, text in code.items()
    }


def _c_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Pairs or rings of files that call each other (depth-first search)."""
    cycles, state = [], dict.fromkeys(graph, 0)  # 0 new, 1 on the path, 2 done

    def visit(v: str, path: list[str]) -> None:
        state[v] = 1
        for w in sorted(graph[v]):
            if state[w] == 1:
                cycles.append(path[path.index(w) :] + [v] if w in path else [w, v])
            elif state[w] == 0:
                visit(w, [*path, v])
        state[v] = 2

    for v in sorted(graph):
        if state[v] == 0:
            visit(v, [])
    return cycles


def test_no_c_file_calls_back_into_its_caller():
    sources = {str(p.relative_to(CSRC)): p.read_text() for p in sorted(CSRC.rglob("*.c"))}
    graph = _c_calls(sources)
    assert graph["core/iov_extract.c"] >= {"core/iov_xarray.c", "core/iov_iter.c"}  # sees calls
    assert not _c_cycles(graph), _c_cycles(graph)


def test_the_c_cycle_check_can_fail():
    sources = {
        "a.c": "int lk_a(void)\n{\n\treturn lk_b();\n}\n",
        "b.c": "int lk_b(void)\n{\n\treturn 0;\n}\nint lk_c(void)\n{\n\treturn lk_a();\n}\n",
        "c.c": "static int lk_d(void)\n{\n\treturn lk_b();\n}\n",
    }
    graph = _c_calls(sources)
    assert graph == {"a.c": {"b.c"}, "b.c": {"a.c"}, "c.c": {"b.c"}}
    assert _c_cycles(graph)


#: Paths a comment or docstring may name: a file of the clone, from its root, or ``csrc/...``.
_NAMED_PATH = re.compile(
    r"(?<![\w/])((?:labkit|tests|benchmarks|notebooks|docs|data|csrc)/[\w./-]*\w"
    r"\.(?:py|c|h|cdef|md|csv|ipynb))\b"
)
#: Patterns, not files: ARCHITECTURE's "where a new piece goes".
_PLACEHOLDERS = {
    "notebooks/NN-name.ipynb",
    "labkit/experiments/name.py",
    "labkit/results/rN/published.csv",
}


def test_comments_name_files_that_exist():
    """Every file path written in labkit's code, comments and docs exists."""
    missing = []
    texts = [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.[ch]"), *PACKAGE.rglob("*.cdef")]
    texts += [ROOT / "docs" / "ARCHITECTURE.md", ROOT / "README.md"]
    for path in texts:
        for name in set(_NAMED_PATH.findall(path.read_text())) - _PLACEHOLDERS:
            where = PACKAGE / name if name.startswith("csrc/") else ROOT / name
            if not where.exists():
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert not missing, "\n".join(sorted(missing))


def test_the_path_check_sees_a_path():
    text = "see labkit/iov_iter.py and csrc/iov_xarray.c, not mylabkit/x.py"
    assert set(_NAMED_PATH.findall(text)) == {"labkit/iov_iter.py", "csrc/iov_xarray.c"}


def test_every_module_is_named_in_the_architecture_doc():
    """Every Python module and every C file is named on docs/ARCHITECTURE.md (a header or a
    .cdef goes with the .c of its name, as the page says)."""
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    files = [p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"]
    files += [p for ext in ("*.c", "*.h", "*.cdef") for p in CSRC.rglob(ext)]
    missing = []
    for p in files:
        stem_c = p.with_suffix(".c").name
        named = f"`{p.name}`" in doc or (p.suffix in (".h", ".cdef") and f"`{stem_c}`" in doc)
        if not named:
            missing.append(str(p.relative_to(ROOT)))
    assert not missing, f"not in docs/ARCHITECTURE.md: {missing}"


if __name__ == "__main__":  # python tests/test_layout.py [--write]: the public names, by module
    if "--write" in sys.argv:
        PUBLIC_SURFACE.write_text("".join(f"{line}\n" for line in surface()))
    names = public_names()
    for module, ns in sorted(names.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(ns):4d} {module}")
    print(f"{sum(map(len, names.values()))} names in __all__ over {len(names)} modules")
    found = [why for path in MODULES.values() for _, why in function_imports(path)]
    print(f"{len(found)} imports inside functions, {found.count(False)} with no comment why")


_CONFLICT = re.compile(r"^(<<<<<<< |>>>>>>> |=======$)", re.M)


def _conflicted(text: str) -> bool:
    return bool(_CONFLICT.search(text))


def test_no_merge_conflict_markers():
    """No text file of the package, docs, tests, benchmarks or README keeps a merge's
    conflict markers (one sat in docs/ARCHITECTURE.md for a session)."""
    assert _conflicted("a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> other\n")
    assert not _conflicted("a ======= b\n<<<<<<<< not a marker\n")
    paths = [ROOT / "README.md", ROOT / "Makefile"]
    for folder, pattern in [
        ("labkit", "*.py"),
        ("labkit", "*.c"),
        ("labkit", "*.h"),
        ("docs", "*.md"),
        ("tests", "*.py"),
        ("benchmarks", "*.py"),
        ("labkit/results", "*.csv"),
    ]:
        paths += sorted((ROOT / folder).rglob(pattern))
    bad = [str(p.relative_to(ROOT)) for p in paths if _conflicted(p.read_text(errors="replace"))]
    assert not bad
