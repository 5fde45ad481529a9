"""Build labkit's C core with ASan + UBSan and run the core tests against that build.

Usage: python tests/run_sanitized.py [BUILD_DIR] [-- extra pytest args]
       python tests/run_sanitized.py [BUILD_DIR] --run SCRIPT [script args]
       (e.g. --run benchmarks/fuzz.py --calls 100000: any script, under the same build)

1. compiles every labkit/csrc/*.c with LABKIT_SANITIZE=1 (AddressSanitizer and
   UndefinedBehaviorSanitizer, see labkit/_build.py) into BUILD_DIR (a fresh
   temporary directory by default), as the module labkit._labkit;
2. runs the core test files in a child Python with that module loaded through
   LABKIT_EXT_PATH, libasan preloaded (Python itself is not instrumented) and
   libstdc++ after it (else ASan's ``__cxa_throw`` interceptor finds no real
   function and aborts the first C++ exception of any extension: matplotlib's
   ft2font: ``CHECK failed: asan_interceptors.cpp:320``),
   ASAN_OPTIONS=detect_leaks=0 (the interpreter's own allocations would be
   reported as leaks) and UBSAN_OPTIONS=halt_on_error=1, in quick mode.

Exit status: 0 when the tests pass and no sanitizer fired, 77 when gcc or
libasan is missing (nothing was run), otherwise the failing step's status.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SKIP = 77
CORE_TESTS = [
    "test_iov_iter_unit.py",
    "test_iov_iter_properties.py",
    "test_kunit_scenarios.py",
    "test_imports.py",
    "test_bad_input.py",
    "test_fixed.py",
    "test_live.py",
    "test_kernel_differential.py",
    "test_xarray_folioq.py",
    "test_fuzz.py",
    "test_iter_threads.py",
    "test_buffer_exports.py",
]


def find_libasan() -> str | None:
    """The path of gcc's libasan.so, or None when gcc or the library is missing."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    try:
        out = subprocess.run(
            [gcc, "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    # gcc prints the bare name back when it has no such library
    return out if os.path.isabs(out) and os.path.exists(out) else None


def find_libstdcxx() -> str | None:
    """The path of gcc's libstdc++.so.6 (preloaded after libasan), or None."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    try:
        out = subprocess.run(
            [gcc, "-print-file-name=libstdc++.so.6"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return os.path.realpath(out) if os.path.isabs(out) and os.path.exists(out) else None


def preload_env(libasan: str) -> dict[str, str]:
    """LD_PRELOAD and ASAN_OPTIONS that load ASan into an uninstrumented Python.

    libasan first (it must come before every other library), then libstdc++,
    so that ASan's C++ interceptors (``__cxa_throw``) find the real functions
    before any extension throws.
    """
    libs = [libasan] + [p for p in (find_libstdcxx(),) if p]
    return {
        "LD_PRELOAD": " ".join(libs),
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:verify_asan_link_order=0",
    }


def build(build_dir: Path) -> Path:
    """Compile the sanitized module into build_dir; return the .so path."""
    code = (
        "from labkit._build import make_builder\n"
        f"print(make_builder('labkit._labkit').compile(tmpdir={str(build_dir)!r}))\n"
    )
    env = dict(os.environ, LABKIT_SANITIZE="1")
    env.pop("LABKIT_EXT_PATH", None)
    # build this checkout's C core, not whichever labkit the interpreter finds first
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=build_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-8000:])
        raise SystemExit(f"sanitized build failed (status {proc.returncode})")
    so = Path(proc.stdout.strip().splitlines()[-1])
    if not so.is_file():
        raise SystemExit(f"sanitized build produced no module at {so}")
    return so


def sanitized_env(so: Path, libasan: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(preload_env(libasan))
    env.update(
        LABKIT_EXT_PATH=str(so),
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
        LABKIT_QUICK="1",
        LABKIT_UNDER_SANITIZER="1",
    )
    return env


def main(argv: list[str]) -> int:
    extra: list[str] = []
    script: list[str] = []
    if "--run" in argv:
        script = argv[argv.index("--run") + 1 :]
        argv = argv[: argv.index("--run")]
        if not script:
            print("run_sanitized: --run needs a script", file=sys.stderr)
            return 2
    if "--" in argv:
        extra = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    libasan = find_libasan()
    if libasan is None:
        print("run_sanitized: gcc or its libasan.so is missing; nothing to run", file=sys.stderr)
        return SKIP
    tmp = None
    if argv:
        build_dir = Path(argv[0]).resolve()
        build_dir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="labkit-sanitize-")
        build_dir = Path(tmp.name)
    try:
        so = build(build_dir)
        env = sanitized_env(so, libasan)
        check = (
            "import labkit, sys; info = labkit.build_info(); "
            "sys.exit(0 if info['sanitizers'] and info['module'] == sys.argv[1] else 3)"
        )
        proc = subprocess.run([sys.executable, "-c", check, str(so)], env=env)
        if proc.returncode != 0:
            print("run_sanitized: the child did not load the sanitized module", file=sys.stderr)
            return proc.returncode
        if script:
            return subprocess.run([sys.executable, *script], env=env).returncode
        tests = [str(HERE / t) for t in CORE_TESTS]
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests, *extra]
        return subprocess.run(cmd, env=env, cwd=ROOT).returncode
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
