"""The real lib/iov_iter.c of 6.1, 6.1+ubuf and 6.12 as a second oracle (labkit.kernelsrc).

Skipped, with the one command that installs what is missing, where Debian's
linux-source packages or the build tools are absent.  The first run builds the
three eras (about 2-3 minutes); later runs use the cache.
"""

from __future__ import annotations

import errno
import os

import pytest

import labkit
from labkit.core.memory import PROT_NONE, PROT_RW
from labkit.kernelsrc.build import ERAS, KernelSourceError, build, is_available, source_archive

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
