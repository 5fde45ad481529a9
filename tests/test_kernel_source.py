"""The real lib/iov_iter.c of 6.1, 6.1+ubuf and 6.12 as a second oracle (labkit.kernelsrc).

Skipped, with the one command that installs what is missing, where Debian's
linux-source packages or the build tools are absent.  The first run builds the
three eras (about 2-3 minutes); later runs use the cache.
"""

from __future__ import annotations

import errno
import os
import shutil

import pytest

import labkit
from labkit.core.memory import PROT_NONE, PROT_RW
from labkit.kernelsrc.build import ERAS, KernelSourceError, build, is_available, source_archive

pytestmark = pytest.mark.slow  # make test-fast leaves it out

MISSING = is_available()
needs_oracle = pytest.mark.skipif(MISSING is not None, reason=f"kernel oracle: {MISSING}")

#: Sequences per era pair in CI (the benchmark runs 20,000).
SEQUENCES = int(os.environ.get("LABKIT_KERNEL_DIFF_SEQUENCES", "1000"))
TASK_SIZE_MAX = 0x7FFFFFFFF000


@pytest.fixture(scope="module")
def oracles():
    from labkit.kernelsrc.oracle import KernelOracle

    return {era: KernelOracle(era) for era in ERAS}


@pytest.fixture()
def arena():
    mem = labkit.UserMemory()
    maps = mem.map_contiguous([(4096, PROT_NONE), (8192, PROT_RW), (4096, PROT_NONE)])
    return mem, maps[1].addr


def test_missing_source_names_the_install_command(tmp_path):
    with pytest.raises(KernelSourceError, match="apt-get install -y linux-source-6.1"):
        source_archive("6.1", root=tmp_path)


def test_src_that_is_not_a_tree_is_refused(tmp_path):
    with pytest.raises(KernelSourceError, match="not a kernel tree"):
        build("6.12", src=tmp_path)


@needs_oracle
def test_second_build_is_a_cache_hit():
    first = build("6.12")
    again = build("6.12")
    assert again.record["cached"] is True
    assert again.directory == first.directory
    assert again.library().exists() and again.driver("O2").exists()


@needs_oracle
def test_versions_and_functions(oracles):
    assert oracles["6.1"].version.startswith("6.1.")
    assert oracles["6.1+ubuf"].version == oracles["6.1"].version
    assert oracles["6.12"].version.startswith("6.12.")
    assert not oracles["6.1"].has_import_ubuf and oracles["6.1+ubuf"].has_import_ubuf
    assert oracles["6.1"].has_import_single_range and not oracles["6.12"].has_import_single_range


@needs_oracle
def test_single_segment_ssize_max_fingerprint(oracles, arena):
    """readv(fd, {buf, SSIZE_MAX}, 1): EFAULT before the change, clamped after it."""
    mem, addr = arena
    got = {}
    for era, o in oracles.items():
        o.use_memory(mem)
        it = o.iterator()
        got[era] = (it.import_iovec(labkit.ITER_DEST, [(addr, 2**63 - 1)]), it.state())
    assert got["6.1"] == (-errno.EFAULT, None)
    for era in ("6.1+ubuf", "6.12"):
        assert got[era][0] == labkit.MAX_RW_COUNT
        assert got[era][1].type == "UBUF"


@needs_oracle
def test_copies_fault_where_the_model_does(oracles, arena):
    mem, addr = arena
    for era, o in oracles.items():
        o.use_memory(mem)
        it = o.iterator()
        assert it.import_iovec(labkit.ITER_DEST, [(addr + 100, 3 * 4096)]) == 3 * 4096
        assert it.zero(3 * 4096) == 8192 - 100, era  # stops at the guard page
        assert it.state().count == 3 * 4096 - (8192 - 100)
        model = labkit.import_iovec(labkit.ITER_DEST, [(addr + 100, 3 * 4096)], mem)
        assert model.zero(3 * 4096) == 8192 - 100


@needs_oracle
def test_access_ok_is_x86_64s(oracles, arena):
    """A range may end at TASK_SIZE_MAX, not one byte past it (UML's check, with task_size set)."""
    mem, addr = arena
    for o in oracles.values():
        o.use_memory(mem)
        ok = o.iterator().import_iovec(0, [(addr, 1), (TASK_SIZE_MAX - 10, 10)])
        bad = o.iterator().import_iovec(0, [(addr, 1), (TASK_SIZE_MAX - 10, 11)])
        empty_at_top = o.iterator().import_iovec(0, [(addr, 1), (TASK_SIZE_MAX, 0)])
        assert (ok, bad, empty_at_top) == (11, -errno.EFAULT, 1)


@needs_oracle
@pytest.mark.parametrize("pair", [("6.3", "6.1"), ("6.4", "6.1+ubuf"), ("6.4", "6.12")])
def test_model_matches_the_real_code(pair):
    from labkit.kernelsrc.diff import run_pair

    res = run_pair(pair, SEQUENCES, seed=7)
    assert res.sequences == SEQUENCES
    # every constructor and operation was exercised
    assert {
        "import_iovec",
        "kvec",
        "bvec",
        "advance",
        "revert",
        "zero",
        "copy_to",
        "copy_from",
    } <= set(res.ops)
    assert not res.differences, "\n".join(str(d) for d in res.differences[:5])


@needs_oracle
def test_the_comparison_sees_the_era_difference():
    """The harness can fail: the 6.3 model against 6.12's real code differs (IOVEC vs UBUF)."""
    from labkit.kernelsrc.diff import run_pair

    res = run_pair(("6.3", "6.12"), 300, seed=3)
    assert any(
        d.what == "state.type" and d.model == "IOVEC" and d.kernel == "UBUF"
        for d in res.differences
    )


def test_the_comparison_sees_a_memory_difference():
    from labkit.kernelsrc.diff import PairResult, _compare

    state = {"type": "IOVEC", "count": 1}
    res = PairResult("6.4", "6.12")
    model = [(1, state, None, b"ab"), (1, state, None, b"ab")]
    kernel = [(1, state, None, b"ab"), (1, state, None, b"a\0")]
    _compare(res, 0, ("import_iovec",), [("zero", 1)], model, kernel)
    assert [(d.step, d.what) for d in res.differences] == [(1, "memory byte 1")]


# ---- instruction counts of the real code (committed results; clock-free) --------------------


def _committed():
    from labkit.kernelsrc.counts import kernel_counts

    counts = kernel_counts()
    if counts.empty:
        pytest.fail("data/results/kernel-callgrind holds no run")
    return counts


def test_committed_counts_cover_every_era_level_and_call():
    from labkit.kernelsrc.counts import CALLS

    counts = _committed()
    calls = {c[0] for c in CALLS} | {"advance/page"}
    for era in ERAS:
        for opt in ("defconfig", "O2"):
            got = set(counts[(counts["era"] == era) & (counts["opt"] == opt)]["call"])
            assert got == calls, (era, opt)
    assert (counts["instructions"] > 0).all()


def test_committed_counts_order():
    """An empty iovec costs the IOVEC import something; the UBUF import iterates cheaper."""
    from labkit.kernelsrc.counts import saving

    c = _committed().set_index(["era", "opt", "call"])["instructions"]
    for era in ERAS:
        for opt in ("defconfig", "O2"):
            assert c[era, opt, "readv(4K+empty+empty)"] > c[era, opt, "readv(4K+empty)"]
    assert (saving(_committed(), "6.1", "6.1+ubuf") > 0).all()


def test_breakdowns_add_up_to_the_counts():
    from labkit.kernelsrc.counts import kernel_counts

    counts = _committed().set_index(["era", "opt", "call"])["instructions"]
    fns = kernel_counts(functions=True)
    sums = fns.groupby(["era", "opt", "call"])["instructions"].sum()
    for key, total in sums.items():
        assert total == pytest.approx(counts[key]), key


def test_reconciliation_splits_call_frames_from_work():
    """Per step, call frames + user-access checks + work = the step's count, on both sides
    and in both eras; the real 6.4 import's extra call frames outweigh what its work saves
    at -O2."""
    from labkit.kernelsrc.reconcile import committed, within

    table = committed()
    for step in ("import", "iterate", "compared (import + iterate)"):
        for col in table.columns:
            parts = sum(
                table.loc[f"{step}: {part}", col]
                for part in ("call frames", "user-access checks", "work")
            )
            assert parts == pytest.approx(table.loc[step, col]), (step, col)
    assert table.loc["import: call frames", "real saved O2"] < 0
    assert table.loc["import: work", "real saved O2"] > 0
    assert table.loc["iterate", "real saved defconfig"] > 0
    # the iteration's frames are the same in both eras, on both sides
    assert table.loc["iterate: call frames", "model saved"] == 0
    assert table.loc["iterate: call frames", "real saved O2"] == 0
    # the model's iteration makes no user-access check (its user copy is not comparable);
    # the real code's clear_user() checks the range in both eras
    assert table.loc["iterate: user-access checks", "model 6.3"] == 0
    assert table.loc["iterate: user-access checks", "real 6.1 O2"] > 0
    assert within(10, 9) and not within(10, 8) and within(-14, -12)


def test_user_access_files():
    from labkit.kernelsrc.frames import is_user_access

    for path in (
        "/src/arch/um/include/asm/uaccess.h",
        "/src/include/asm-generic/uaccess.h",
        "/src/include/linux/uaccess.h",
        "/src/include/linux/thread_info.h",
        "labkit/csrc/core/usermem.h",
    ):
        assert is_user_access(path), path
    for path in ("/src/lib/iov_iter.c", "/src/include/linux/uio.h", "labkit/csrc/core/usermem.c"):
        assert not is_user_access(path), path


def test_call_frame_instructions():
    from labkit.kernelsrc.frames import is_frame

    for mnemonic, operands in [
        ("push", "%rbp"),
        ("pop", "%r15"),
        ("call", "*%rax"),
        ("ret", ""),
        ("sub", "$0x68,%rsp"),
        ("add", "$0x38, %rsp"),
        ("endbr64", ""),
    ]:
        assert is_frame(mnemonic, operands), mnemonic
    for mnemonic, operands in [("mov", "%rsp,%rbp"), ("add", "%rsp,%rax"), ("jmp", "*%rax")]:
        assert not is_frame(mnemonic, operands), (mnemonic, operands)


def test_committed_frames_are_part_of_each_function():
    from labkit.kernelsrc.counts import ACCESS_COLUMN, FRAME_COLUMN, kernel_counts

    fns = kernel_counts(functions=True)
    assert FRAME_COLUMN in fns.columns and ACCESS_COLUMN in fns.columns
    classes = fns[FRAME_COLUMN] + fns[ACCESS_COLUMN]
    assert ((fns[FRAME_COLUMN] >= 0) & (fns[ACCESS_COLUMN] >= 0)).all()
    assert (classes <= fns["instructions"]).all()
    assert (fns[FRAME_COLUMN] > 0).any()
    # at -Os user-mode Linux's __access_ok() is a function of its own, all of it a check
    own = fns[fns["function"] == "__access_ok"]
    assert not own.empty
    assert (own[ACCESS_COLUMN] + own[FRAME_COLUMN] == own["instructions"]).all()


#: The compiler the committed counts were made with (gcc of Debian 12); another one
#: compiles lib/iov_iter.c differently, so its counts are not expected to match.
COUNTED_WITH_GCC = "12.2.0"


@needs_oracle
@pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind: apt-get install -y valgrind")
def test_a_count_is_reproduced():
    """Clock-free: counting again gives the committed count, exactly (same compiler)."""
    from labkit.kernelsrc.counts import measure_counts

    if build("6.12").record["gcc"] != COUNTED_WITH_GCC:
        pytest.skip(f"the committed counts were made with gcc {COUNTED_WITH_GCC}")
    counts = _committed()
    row = counts[
        (counts["era"] == "6.12") & (counts["opt"] == "O2") & (counts["call"] == "readv(1)")
    ]
    again = measure_counts(["6.12"], ["O2"], n1=20, n2=60, calls=["readv(1)"])
    again = again["instructions"].iloc[0]
    assert again == row["instructions"].iloc[0]


def test_proxy_cost_in_the_real_code():
    """readv(4K+empty+empty) - readv(4K+empty) in 6.12: what one more empty iovec costs."""
    from labkit.kernelsrc.counts import proxy_cost

    cost = proxy_cost(_committed()).set_index("opt")
    assert (cost["empty_iovec"] > 0).all()
    assert (cost["iovec_vs_ubuf"] > cost["empty_iovec"]).all()


@needs_oracle
def test_misuse_is_a_python_error_not_a_crash(oracles, arena):
    mem, addr = arena
    o = oracles["6.12"]
    o.use_memory(None)  # an empty address space: the real code may touch nothing
    it = o.iterator()
    assert it.import_iovec(labkit.ITER_DEST, [(addr, 4096)]) == 4096
    assert it.zero(4096) == 0  # faults on the first byte: nothing mapped
    with pytest.raises(ValueError, match="not been set up"):
        o.iterator().advance(1)
    o.use_memory(mem)
    it = o.iterator()
    it.import_iovec(labkit.ITER_DEST, [(addr, 100), (addr + 200, 100)])
    it.advance(150)
    with pytest.raises(labkit.IterMisuseError):
        it.revert(151)
    it.revert(150)
    assert it.state().count == 200
    with pytest.raises(ValueError, match="not inside buf"):
        o.iterator().kvec(labkit.ITER_DEST, bytearray(10), [(5, 6)], 6)
    with pytest.raises(ValueError, match="page boundary|not inside"):
        o.iterator().bvec(labkit.ITER_DEST, bytearray(10), [(0, 0, 11)], 11)


def test_evidence_from_the_committed_counts():
    from labkit.kernelsrc.counts import evidence

    ev = evidence(_committed())
    c = _committed().set_index(["era", "opt", "call"])["instructions"]
    assert ev["r2_saved_O2"] == c["6.1", "O2", "readv(1)"] - c["6.1+ubuf", "O2", "readv(1)"]
    assert ev["r1_per_page_defconfig"] == c["6.1", "defconfig", "advance/page"]
    assert all(v == v for v in ev.values())  # no NaN: every row is there


@needs_oracle
def test_model_matches_the_real_code_at_o2():
    """The -O2 build is the same code: the same sequences find no difference there either."""
    from labkit.kernelsrc.diff import run_pair

    res = run_pair(("6.4", "6.12"), max(SEQUENCES // 2, 100), seed=11, opt="O2")
    assert not res.differences, "\n".join(str(d) for d in res.differences[:5])


@needs_oracle
def test_the_kernel_command():
    import subprocess
    import sys

    def labkit_cmd(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "labkit.cli", "kernel", *args], capture_output=True, text=True
        )

    built = labkit_cmd("build", "--era", "6.12")
    assert built.returncode == 0 and "6.12: cached" in built.stdout, built.stderr
    diff = labkit_cmd("diff", "--sequences", "30")
    assert diff.returncode == 0, diff.stderr
    assert diff.stdout.count("0 differences") == 3
    bad = labkit_cmd("build", "--src", "/nonexistent")
    assert bad.returncode == 2 and "not a kernel tree" in bad.stderr
    assert "Traceback" not in bad.stderr
