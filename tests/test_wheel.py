"""labkit as a user installs it: a wheel, in a fresh venv, run from an empty folder.

The wheel is built from a copy of the clone (so the clone gets no build/ or
egg-info) and installed with ``--no-deps`` into a new venv that sees this
environment's packages through a ``.pth`` file (fast, and no network needed).
From an empty folder, with HOME and TMPDIR pointed at fresh folders:
``labkit info``, ``labkit notebooks``, ``labkit reproduce --quick`` must pass and
nothing may be written outside ``./labkit-results`` (the user's results folder,
which holds the reproduction) and the copied notebooks: not into site-packages,
not into the clone, not into HOME (beyond the caches matplotlib and IPython
keep there), not into TMPDIR.

It takes about 1.5 to 3 minutes (the wheel build compiles the C core; the
reproduction runs notebooks 00-04 in quick mode).  Marked ``wheel``: CI runs it
with everything else; ``pytest -m "not wheel"`` leaves it out of a quick loop.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.wheel]

#: What HOME may gain: caches that matplotlib, IPython and Jupyter keep for every user.
HOME_CACHES = (".cache/matplotlib", ".config/matplotlib", ".ipython", ".local/share/jupyter")


def snapshot(folder: Path) -> dict[str, float]:
    """Every file under ``folder`` with its mtime (empty if it does not exist)."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): p.stat().st_mtime_ns
        for p in folder.rglob("*")
        if p.is_file() or p.is_symlink()
    }


def source_copy(dest: Path) -> Path:
    """The clone's tracked files (or, outside git, its tree without build products)."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z"],
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout.split(b"\0")
        files = [f.decode() for f in listed if f]
    except (OSError, subprocess.SubprocessError):
        files = []
    if files:
        for rel in files:
            src = ROOT / rel
            if src.is_file():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / rel)
    else:
        shutil.copytree(
            ROOT,
            dest,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns(
                ".git", ".venv", "build", "*.egg-info", "*.so", "__pycache__", "reproduction"
            ),
        )
    return dest


def run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> tuple[str, str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv bin dir, env for commands, timings) with the wheel of this clone installed."""
    base = tmp_path_factory.mktemp("wheel")
    timings: dict[str, float] = {}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABKIT_", "PYTHON"))}
    t0 = time.perf_counter()
    src = source_copy(base / "src")
    build = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-w", str(base / "dist")]
    if all(importlib.util.find_spec(m) for m in ("setuptools", "wheel", "cffi")):
        build.append("--no-build-isolation")  # build with what is installed: no network
    out, err = run(build + ["-v"], cwd=base, env=env, timeout=600)
    timings["build"] = time.perf_counter() - t0
    wheels = list((base / "dist").glob("labkit-*.whl"))
    assert len(wheels) == 1
    for noise in ("is absent from the `packages`", "SetuptoolsDeprecationWarning"):
        assert noise not in out + err, f"setuptools warns: {noise}"
    t0 = time.perf_counter()
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    vpy = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the dependencies (numpy, pandas, papermill ...) of the environment running the tests
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "labkit-test-deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    run(
        [sys.executable, "-m", "pip", "--python", str(vpy), "install", "--no-deps", str(wheels[0])],
        cwd=base,
        env=env,
        timeout=300,
    )
    timings["install"] = time.perf_counter() - t0
    home, tmp = base / "home", base / "tmp"
    home.mkdir()
    tmp.mkdir()
    env.update(HOME=str(home), TMPDIR=str(tmp), PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
    # the data files of those packages (nbconvert's templates), as their install put them
    env["JUPYTER_PATH"] = str(Path(sys.prefix, "share", "jupyter"))
    return venv / "bin", env, Path(purelib), timings, base


def test_wheel_carries_notebooks_and_data(installed):
    bindir, env, purelib, _, _ = installed
    res = purelib / "labkit" / "_resources"
    names = {p.name for p in (res / "notebooks").glob("*.ipynb")}
    assert names == {p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")}
    assert (res / "notebooks" / "sanitize.cfg").is_file()
    # each result's ledgers are package data, in its folder
    ledgers = {p.relative_to(ROOT / "labkit") for p in (ROOT / "labkit").glob("results/*/*.csv")}
    assert ledgers and {p.relative_to(purelib / "labkit") for p in
                        (purelib / "labkit").glob("results/*/*.csv")} == ledgers  # fmt: skip
    assert list((res / "data" / "seeds").glob("*.txt"))
    assert list((res / "data" / "results" / "ubuf-callgrind").glob("*.csv"))


def test_installed_labkit_from_an_empty_folder(installed, tmp_path):
    """`labkit info`, `notebooks`, `reproduce --quick`: all pass, all writes in the folder."""
    bindir, env, purelib, timings, base = installed
    work = tmp_path / "empty"
    work.mkdir()
    home, tmpdir = Path(env["HOME"]), Path(env["TMPDIR"])
    before = {
        "site-packages": snapshot(purelib),
        "clone data": snapshot(ROOT / "data"),
        "clone labkit-results": snapshot(ROOT / "labkit-results"),
    }
    home_before = snapshot(home)
    labkit = str(bindir / "labkit")

    out, err = run([labkit, "--version"], cwd=work, env=env, timeout=60)
    assert out.startswith("labkit ")
    out, _ = run([labkit, "info"], cwd=work, env=env, timeout=120)
    assert "kernel_release" in out and "io_uring:" in out
    code = (
        "import warnings, labkit, labkit.config as c\n"
        "from labkit.measure import results\n"
        "assert c.checkout() is None, c.checkout()\n"
        "print(labkit.__file__)\n"
        "print(len(results.load('fixed-seek')))\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    assert results.load('no-such-experiment').empty\n"
        "print(w[0].category.__name__, w[0].message)\n"
        "from labkit.measure import ledgers\n"
        "print(ledgers.published('R1')['value'].max())\n"
    )
    out, _ = run([str(bindir / "python"), "-c", code], cwd=work, env=env, timeout=120)
    lines = out.splitlines()
    assert lines[0].startswith(str(purelib)), "the wheel's labkit was not the one imported"
    assert int(lines[1]) > 0  # the reference results travel with the wheel
    assert lines[2].startswith("NoResultsWarning")
    assert float(lines[3]) == 1_039_879

    out, _ = run([labkit, "notebooks", "my-notebooks"], cwd=work, env=env, timeout=60)
    assert len(list((work / "my-notebooks").glob("*.ipynb"))) == 5

    t0 = time.perf_counter()
    out, err = run([labkit, "reproduce", "--quick"], cwd=work, env=env, timeout=1200)
    timings["reproduce --quick"] = time.perf_counter() - t0
    report = work / "labkit-results" / "reproduction" / "quick"
    assert (report / "index.html").is_file() and (report / "summary.csv").is_file()
    assert "5 notebooks" in out and "verdict" in out and str(report) in out
    # stderr: progress lines only (one when a notebook starts, one when it ends)
    noise = [line for line in err.splitlines() if line.strip() and not line.startswith("[")]
    assert noise == [], err

    assert sorted(p.name for p in work.iterdir()) == ["labkit-results", "my-notebooks"]
    after = {
        "site-packages": snapshot(purelib),
        "clone data": snapshot(ROOT / "data"),
        "clone labkit-results": snapshot(ROOT / "labkit-results"),
    }
    for where, files in before.items():
        changed = {k for k in set(files) | set(after[where]) if files.get(k) != after[where].get(k)}
        changed = {k for k in changed if "__pycache__" not in k}  # Python's own bytecode cache
        assert not changed, f"{where} changed: {sorted(changed)[:10]}"
    home_new = set(snapshot(home)) - set(home_before)
    assert all(k.startswith(HOME_CACHES) for k in home_new), sorted(home_new)
    assert not [p for p in Path(home, ".local/share/jupyter/runtime").glob("*")]
    assert snapshot(tmpdir) == {}, sorted(snapshot(tmpdir))[:10]
    print(
        "wheel test timings: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items())
        + f" (wheel at {base})"
    )
