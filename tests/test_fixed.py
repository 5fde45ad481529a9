"""Registered buffers and io_import_fixed: the four seeks agree, bugs show, nothing escapes."""

from __future__ import annotations

import errno
import gc
import random

import numpy as np
import pytest

import labkit
from labkit import ITER_DEST, ITER_SOURCE, PAGE_SIZE, io_import_fixed, live, register_buffer
from labkit.config import quick_mode
from labkit.core.fixed import SEEKS
from labkit.measure import timers
from labkit.results.r1 import experiments as r1_experiments

pytestmark = pytest.mark.slow  # make test-fast leaves it out

MiB = 1 << 20
GiB = 1 << 30
HUGE = 2 * MiB
SEEK_NAMES = list(SEEKS)


# ---- helpers ----------------------------------------------------------------------


def make_buffer(size: int, page_offset: int, folio_shift: int = 12):
    """A registered buffer of ``size`` bytes starting ``page_offset`` bytes into a page
    (folio), inside one mapping with at least a whole page (folio) on each side that is
    never registered: bytes there must never change."""
    mem = labkit.UserMemory()
    folio = 1 << folio_shift
    end = folio + page_offset + size
    m = mem.map(-(-end // folio) * folio + folio, align=folio)
    reg = register_buffer(mem, m.addr + folio + page_offset, size, folio_shift=folio_shift)
    return mem, m, reg


def state(it: labkit.IovIter):
    return (it.count, it.iov_offset, it.seg_index, it.iovec())


def interesting_offsets(reg, rng: random.Random, samples: int):
    """Offsets around every kind of boundary, plus random ones."""
    n = reg.length
    first = reg.first_len
    f = reg.folio_size
    cands = {0, 1, first - 1, first, first + 1, n - 1, n // 2}
    for k in (1, 2, 3, (n - first) // f):
        for d in (-1, 0, 1):
            cands.add(first + k * f + d)
    cands.update(rng.randrange(n) for _ in range(samples))
    return sorted(o for o in cands if 0 <= o < n)


def interesting_lengths(reg, offset: int, rng: random.Random):
    left = reg.length - offset
    cands = {1, left, min(left, PAGE_SIZE), min(left, reg.folio_size + 1)}
    cands.add(rng.randint(1, left))
    # lengths that end exactly on the next bvec boundary, and just past it
    first = reg.first_len
    f = reg.folio_size
    nxt = first if offset < first else first + ((offset - first) // f + 1) * f
    for d in (0, 1):
        if 0 < nxt - offset + d <= left:
            cands.add(nxt - offset + d)
    return sorted(c for c in cands if 1 <= c <= left)


LAYOUTS = [
    (size, po, 12)
    for po in (0, 512, 3584, 4095)
    for size in (
        1,
        100,
        PAGE_SIZE - 1,
        PAGE_SIZE,
        PAGE_SIZE + 1,
        3 * PAGE_SIZE + 7,
        37 * PAGE_SIZE + 5,
    )
] + [
    (size, po, 21)
    for po in (0, 512, 3584, 4095, HUGE - 4096 + 512)
    for size in (1, PAGE_SIZE + 3, HUGE - 1, HUGE + 1, 3 * HUGE + 4097)
]


# ---- registration ---------------------------------------------------------------


@pytest.mark.parametrize("po", [0, 512, 3584, 4095])
@pytest.mark.parametrize("size", [1, 100, 4096, 4097, 5 * 4096 + 11])
def test_table_layout_pages(po, size):
    _, _, reg = make_buffer(size, po)
    t = reg.table
    assert reg.nr_bvecs == len(t) == -(-(po + size) // PAGE_SIZE)
    assert t["len"].sum() == size
    assert t[0]["offset"] == po and t[0]["len"] == min(size, PAGE_SIZE - po)
    assert (t["offset"][1:] == 0).all()
    assert (t["len"][1:-1] == PAGE_SIZE).all()
    assert (t["page"] % PAGE_SIZE == 0).all()
    assert t[0]["page"] + t[0]["offset"] == reg.addr
    assert (np.diff(t["page"].astype(np.int64)) == PAGE_SIZE).all()


def test_table_layout_folios():
    _, _, reg = make_buffer(3 * HUGE + 4097, 512, folio_shift=21)
    t = reg.table
    assert reg.folio_shift == 21 and reg.nr_bvecs == 4
    assert list(t["len"]) == [HUGE - 512, HUGE, HUGE, 4097 + 512]
    assert list(t["offset"]) == [512, 0, 0, 0]
    assert (t["page"] % HUGE == 0).all()


def test_table_is_read_only():
    _, _, reg = make_buffer(3 * PAGE_SIZE, 0)
    with pytest.raises(ValueError):
        reg.table["len"][0] = 1 << 30
    with pytest.raises(ValueError):
        reg.table.flags.writeable = True


def test_table_outlives_its_buffer():
    # the table was a view of the C bvec array, freed with the RegisteredBuffer
    _, _, reg = make_buffer(PAGE_SIZE + 100, 100)
    t = reg.table
    expected = t.tolist()
    del reg
    gc.collect()
    junk = [bytearray(32) for _ in range(1000)]  # reuse the freed heap memory
    assert t.tolist() == expected
    del junk


def adjacent_mappings(mem, size, tries=64):
    """Two mappings of ``mem`` with the second starting where the first ends, or skip."""
    maps = [mem.map(size) for _ in range(tries)]
    by_addr = {m.addr: m for m in maps}
    for a in maps:
        b = by_addr.get(a.end)
        if b is not None:
            for m in maps:
                if m is not a and m is not b:
                    mem.unmap(m)
            return a, b
    pytest.skip("mmap placed no two mappings next to each other")


def test_view_across_adjacent_mappings_keeps_the_memory_alive():
    # a buffer spanning two mappings had a view over raw addresses that did not
    # keep the mappings alive: once unmapped and collected, the view dangled
    mem = labkit.UserMemory()
    a, b = adjacent_mappings(mem, 16 * PAGE_SIZE)
    reg = register_buffer(mem, a.end - 100, 200)
    v = reg.view()
    v[:] = 7
    mem.unmap(a)
    mem.unmap(b)
    del a, b, reg
    gc.collect()
    assert (v == 7).all()
    v[:] = 8
    assert (v == 8).all()


def test_register_one_gib():
    mem = labkit.UserMemory()
    m = mem.map(GiB)
    reg = register_buffer(mem, m.addr, GiB)
    assert reg.nr_bvecs == GiB // PAGE_SIZE == 262_144
    assert reg.table["len"].sum() == GiB


def test_register_errors():
    mem = labkit.UserMemory()
    m = mem.map(4 * PAGE_SIZE)
    cases = [
        ((m.addr, 0), errno.EFAULT),  # empty
        ((m.addr, 4 * PAGE_SIZE + 1), errno.EFAULT),  # runs past the mapping
        ((m.addr - PAGE_SIZE, PAGE_SIZE), errno.EFAULT),  # before the mapping
        ((0, PAGE_SIZE), errno.EFAULT),  # NULL
        ((m.addr, GiB + 1), errno.EFAULT),  # above io_uring's 1 GiB cap
        ((2**64 - PAGE_SIZE, 2 * PAGE_SIZE), errno.EOVERFLOW),
    ]
    for (addr, length), err in cases:
        with pytest.raises(OSError) as exc:
            register_buffer(mem, addr, length)
        assert exc.value.errno == err, (addr, length)
    with pytest.raises(OSError) as exc:
        register_buffer(mem, m.addr, PAGE_SIZE, folio_shift=11)
    assert exc.value.errno == errno.EINVAL
    with pytest.raises(TypeError):
        register_buffer(object(), m.addr, PAGE_SIZE)


def test_register_folio_needs_mapped_folios():
    mem = labkit.UserMemory()
    m = mem.map(HUGE, align=HUGE)
    register_buffer(mem, m.addr + 512, 1000, folio_shift=21)  # inside one mapped folio
    small = mem.map(4 * PAGE_SIZE)
    with pytest.raises(OSError) as exc:
        register_buffer(mem, small.addr, PAGE_SIZE, folio_shift=21)
    assert exc.value.errno == errno.EINVAL and "align" in str(exc.value)


def test_registered_pages_stay_pinned_after_unmap():
    mem, m, reg = make_buffer(2 * PAGE_SIZE, 0)
    mem.unmap(m)
    it = io_import_fixed(ITER_DEST, reg, reg.addr + 10, 20)
    assert it.copy_to_iter(b"x" * 20) == 20
    assert bytes(reg.view()[10:30]) == b"x" * 20


# ---- import: range checks ----------------------------------------------------------


def test_import_range_errors():
    _, m, reg = make_buffer(3 * PAGE_SIZE, 512)
    bad = [
        (reg.addr - 1, 1),
        (reg.addr, reg.length + 1),
        (reg.addr + reg.length, 1),
        (reg.addr + 1, 2**64 - 1),  # wraps
        (reg.addr, labkit.MAX_RW_COUNT + 1),
    ]
    for seek in SEEK_NAMES:
        for addr, length in bad:
            with pytest.raises(OSError) as exc:
                io_import_fixed(ITER_DEST, reg, addr, length, seek=seek)
            assert exc.value.errno == errno.EFAULT, (seek, addr, length)
    with pytest.raises(ValueError):
        io_import_fixed(ITER_DEST, reg, reg.addr, 1, seek="teleport")
    with pytest.raises(ValueError):
        io_import_fixed(ITER_DEST, reg, reg.addr, 1, seek="walk", bugs=("count-2019",))
    with pytest.raises(ValueError):
        io_import_fixed(ITER_DEST, reg, reg.addr, 1, bugs=("nonsense",))
    with pytest.raises(TypeError):
        io_import_fixed(ITER_DEST, object(), reg.addr, 1)


def test_max_rw_count_inside_a_large_buffer():
    mem = labkit.UserMemory()
    m = mem.map(GiB)
    reg = register_buffer(mem, m.addr, GiB)
    it = io_import_fixed(ITER_DEST, reg, reg.addr, GiB)  # 1 GiB < MAX_RW_COUNT: fine
    assert it.count == GiB and it.nr_segs == reg.nr_bvecs


# ---- the four seeks agree -----------------------------------------------------------


def _spanned(reg: labkit.RegisteredBuffer, offset: int, length: int) -> int:
    """The oracle of the shift's nr_segs: the bvecs a read of ``length`` bytes at byte
    ``offset`` touches (a first bvec of ``first_len`` bytes, then whole folios)."""

    def index(at: int) -> int:
        return 0 if at < reg.first_len else 1 + ((at - reg.first_len) >> reg.folio_shift)

    return 0 if length == 0 else index(offset + length - 1) - index(offset) + 1


@pytest.mark.parametrize("size,po,fs", LAYOUTS)
def test_four_seeks_agree(size, po, fs):
    _, _, reg = make_buffer(size, po, folio_shift=fs)
    rng = random.Random(size * 31 + po * 7 + fs)
    exhaustive = reg.length <= (PAGE_SIZE + 1 if quick_mode() else 3 * PAGE_SIZE + 7)
    offsets = range(reg.length) if exhaustive and fs == 12 else interesting_offsets(reg, rng, 12)
    for off in offsets:
        lengths = (
            interesting_lengths(reg, off, rng)
            if reg.length > 200
            else range(1, reg.length - off + 1)
        )
        for ln in lengths:
            its = {
                s: io_import_fixed(ITER_DEST, reg, reg.addr + off, ln, seek=s) for s in SEEK_NAMES
            }
            ref = state(its["shift"])
            assert ref[0] == ln
            assert ref[3][0] == reg.addr + off, (off, ln)
            for s, it in its.items():
                assert state(it) == ref, (s, off, ln, it, its["shift"])
                if s == "shift":
                    assert it.nr_segs == _spanned(reg, off, ln), (off, ln)
                else:
                    assert it.nr_segs == reg.nr_bvecs - it.seg_index, (s, off, ln)


@pytest.mark.parametrize(
    "size,po,fs",
    [(13 * PAGE_SIZE + 5, 3584, 12), (5 * PAGE_SIZE, 0, 12), (2 * HUGE + 700, 512, 21)],
)
def test_four_seeks_copy_the_same_bytes_to_the_same_place(size, po, fs):
    mem, m, reg = make_buffer(size, po, folio_shift=fs)
    whole = m.array
    rng = random.Random(size)
    start0 = reg.addr - m.addr
    for off in interesting_offsets(reg, rng, 6):
        for ln in interesting_lengths(reg, off, rng):
            # no zero byte in data: every nonzero byte of the mapping is one we wrote
            data = np.random.default_rng(off).integers(1, 256, ln, dtype=np.uint8).tobytes()
            start = start0 + off
            for s in SEEK_NAMES:
                it = io_import_fixed(ITER_DEST, reg, reg.addr + off, ln, seek=s)
                assert it.copy_to_iter(data + b"overflow") == ln
                assert it.count == 0
                assert bytes(whole[start : start + ln]) == data, (s, off, ln)
                assert np.count_nonzero(whole) == ln, (s, off, ln)
                whole[start : start + ln] = 0


def test_seeks_agree_for_writes_too():
    mem, m, reg = make_buffer(9 * PAGE_SIZE + 1, 512)
    reg.view()[:] = np.arange(reg.length, dtype=np.uint64).astype(np.uint8)
    for off, ln in [(0, 10), (3583, 2), (3584, 4096), (5000, reg.length - 5000)]:
        out = {
            s: io_import_fixed(ITER_SOURCE, reg, reg.addr + off, ln, seek=s).copy_from_iter(ln)
            for s in SEEK_NAMES
        }
        assert len(set(out.values())) == 1
        assert out["shift"] == bytes(reg.view()[off : off + ln])


@pytest.mark.parametrize("size", [64 * MiB, GiB])
def test_large_buffers_sampled(size):
    mem = labkit.UserMemory()
    m = mem.map(size + PAGE_SIZE)
    rng = random.Random(size)
    for po in (0, 512, 3584, 4095):
        reg = register_buffer(mem, m.addr + po, size)
        offs = [0, reg.first_len, size - 1, size - PAGE_SIZE - 1, rng.randrange(size)]
        for off in offs:
            ln = min(size - off, rng.choice([1, 4096, 12345]))
            its = {
                s: io_import_fixed(ITER_DEST, reg, reg.addr + off, ln, seek=s) for s in SEEK_NAMES
            }
            ref = state(its["shift"])
            assert all(state(it) == ref for it in its.values()), (po, off, ln)
            data = bytes([off % 200 + 1]) * ln
            for it in its.values():
                assert it.copy_to_iter(data) == ln
                v = m.array[po + off : po + off + ln]
                assert bytes(v) == data
                v[:] = 0


def test_zero_length_reads_copy_nothing():
    for size, po in [(5000, 0), (3 * PAGE_SIZE, 512), (PAGE_SIZE, 0)]:
        mem, m, reg = make_buffer(size, po)
        for off in (0, reg.first_len, size):
            for s in SEEK_NAMES:
                it = io_import_fixed(ITER_DEST, reg, reg.addr + off, 0, seek=s)
                assert it.count == 0
                assert it.copy_to_iter(b"abc") == 0
        assert not m.array.any()


# ---- liburing regression cases -------------------------------------------------------


def test_liburing_fixed_buf_merge():
    """test/fixed-buf-merge.c (liburing issue #994): a page-aligned 128-page buffer,
    three 4 KiB reads at buffer + 4096, + 8192, + 12288."""
    mem, m, reg = make_buffer(128 * PAGE_SIZE, 0)
    for s in SEEK_NAMES:
        reg.view()[:] = 0
        for k, off in enumerate((4096, 8192, 12288)):
            it = io_import_fixed(ITER_DEST, reg, reg.addr + off, 4096, seek=s)
            addr, ln = it.iovec()
            assert (addr, ln) == (reg.addr + off, 4096)  # no empty first segment
            assert it.copy_to_iter(bytes([k + 1]) * 4096) == 4096
        v = reg.view()
        assert not v[:4096].any() and not v[16384:].any()
        for k in range(3):
            assert (v[4096 * (k + 1) : 4096 * (k + 2)] == k + 1).all()


@pytest.mark.parametrize("vec_off", [0, 512, 3584])
def test_liburing_fixed_seg(vec_off):
    """test/fixed-seg.c: a 512 KiB page-aligned buffer registered vec_off bytes in;
    reads (len, at rvec + off): (4096, vec_off), (8192, 4096), (4096, 4096)."""
    mem = labkit.UserMemory()
    m = mem.map(512 * 1024)
    reg = register_buffer(mem, m.addr + vec_off, 512 * 1024 - vec_off)
    src = np.random.default_rng(vec_off).integers(0, 256, 512 * 1024, dtype=np.uint8)
    for s in SEEK_NAMES:
        for ln, off in [(4096, vec_off), (8192, 4096), (4096, 4096)]:
            m.array[:] = 0
            it = io_import_fixed(ITER_DEST, reg, m.addr + off, ln, seek=s)
            if s == "shift":
                assert it.nr_segs == _spanned(reg, off - vec_off, ln)
            assert it.copy_to_iter(src[:ln]) == ln
            assert np.array_equal(m.array[off : off + ln], src[:ln]), (s, ln, off)
            assert not m.array[:off].any() and not m.array[off + ln :].any()


def test_fixed_seg_nr_segs_exact():
    """The 2025 review case: first bvec at bv_offset 256, a 512-byte read at 3584
    into the buffer crosses the page end, so it spans two segments."""
    mem = labkit.UserMemory()
    m = mem.map(4 * PAGE_SIZE)
    reg = register_buffer(mem, m.addr + 256, 3 * PAGE_SIZE)
    it = io_import_fixed(ITER_DEST, reg, reg.addr + 3584, 512)
    assert it.nr_segs == 2 and it.iovec() == (reg.addr + 3584, 256)


# ---- segments visited --------------------------------------------------------------------


def test_visited_walks_grow_shifts_constant():
    mem = labkit.UserMemory()
    m = mem.map(64 * MiB, align=HUGE)
    small = register_buffer(mem, m.addr, 64 * MiB)
    huge = register_buffer(mem, m.addr, 64 * MiB, folio_shift=21)
    offsets = [0, PAGE_SIZE, MiB, 16 * MiB, 64 * MiB - PAGE_SIZE]
    v = {
        (s, r.folio_shift): [
            io_import_fixed(ITER_DEST, r, r.addr + o, PAGE_SIZE, seek=s).visited for o in offsets
        ]
        for s in SEEK_NAMES
        for r in (small, huge)
    }
    # walk-2019 takes one step per page skipped, whatever the bvec size
    assert v["walk-2019", 12] == [0] + [o // PAGE_SIZE for o in offsets[1:]]
    assert v["walk-2019", 21] == v["walk-2019", 12]
    # today's walk: one step per bvec skipped, plus the one it stops in
    assert v["walk", 12] == [0] + [o // PAGE_SIZE + 1 for o in offsets[1:]]
    assert v["walk", 21] == [0] + [o // HUGE + 1 for o in offsets[1:]]
    for fs in (12, 21):
        assert max(v["shift", fs]) == min(v["shift", fs]) == 1
        assert max(v["shift-2019", fs]) <= 2
    assert v["walk", 12][-1] == 16384 and v["walk", 21][-1] == 32


# ---- historical bugs ----------------------------------------------------------------------


@pytest.mark.parametrize("po", [512, 3584, 4095])
def test_bug_count_2019(po):
    """Before Aug 2019, shift-2019's count assumed a full first page: a buffer
    starting po bytes into a page reads PAGE_SIZE - first_len = po bytes short."""
    mem, m, reg = make_buffer(10 * PAGE_SIZE, po)
    off, ln = 2 * PAGE_SIZE + 100, 3 * PAGE_SIZE
    good = io_import_fixed(ITER_DEST, reg, reg.addr + off, ln, seek="shift-2019")
    bad = io_import_fixed(
        ITER_DEST, reg, reg.addr + off, ln, seek="shift-2019", bugs=("count-2019",)
    )
    assert good.count == ln
    assert bad.count == ln - po
    assert state(good)[1:3] == state(bad)[1:3]  # position right, count wrong
    assert bad.copy_to_iter(b"\x01" * ln) == ln - po  # the short read Aleix Roca Nonell saw
    # page-aligned buffers never showed it
    _, _, aligned = make_buffer(10 * PAGE_SIZE, 0)
    it = io_import_fixed(
        ITER_DEST, aligned, aligned.addr + off, ln, seek="shift-2019", bugs=("count-2019",)
    )
    assert it.count == ln


def test_bug_count_2019_wrap_is_clamped_inside_the_buffer():
    """A read shorter than the missing bytes made the 2019 count wrap below zero;
    the model clamps it to what the segments hold: the copy stays in the buffer."""
    mem, m, reg = make_buffer(6 * PAGE_SIZE, 3584)  # first bvec 512 bytes: 3584 missing
    off, ln = PAGE_SIZE + 100, 1000
    bad = io_import_fixed(
        ITER_DEST, reg, reg.addr + off, ln, seek="shift-2019", bugs=("count-2019",)
    )
    assert bad.count == reg.length - off  # wrapped, clamped to the capacity
    assert bad.copy_to_iter(b"\x07" * (10 * PAGE_SIZE)) == reg.length - off
    start = reg.addr - m.addr
    assert not m.array[: start + off].any()
    assert (m.array[start + off : start + reg.length] == 7).all()
    assert not m.array[start + reg.length :].any()  # the guard after the buffer


def test_bug_off_by_one_2023():
    """d6fef34ee4d1: with offset <= first_len, an offset equal to the first bvec's
    length left the iterator on an empty first segment (liburing issue #994)."""
    for po, fs in [(0, 12), (512, 12), (512, 21)]:
        mem, m, reg = make_buffer(8 << fs, po, folio_shift=fs)
        off = reg.first_len
        good = io_import_fixed(ITER_DEST, reg, reg.addr + off, PAGE_SIZE)
        bad = io_import_fixed(ITER_DEST, reg, reg.addr + off, PAGE_SIZE, bugs=("off-by-one-2023",))
        assert (good.seg_index, good.iov_offset) == (1, 0)
        assert good.iovec() == (reg.addr + off, PAGE_SIZE)
        assert (bad.seg_index, bad.iov_offset) == (0, reg.first_len)
        assert bad.iovec()[1] == 0  # the zero-length bvec
        assert bad.nr_segs == good.nr_segs + 1
        # bytes still land in the right place
        assert bad.copy_to_iter(b"\x09" * PAGE_SIZE) == PAGE_SIZE
        assert (reg.view()[off : off + PAGE_SIZE] == 9).all()
        # any other offset is unaffected
        for o in (off - 1, off + 1):
            a = io_import_fixed(ITER_DEST, reg, reg.addr + o, 10)
            b = io_import_fixed(ITER_DEST, reg, reg.addr + o, 10, bugs=("off-by-one-2023",))
            assert state(a) == state(b)


@pytest.mark.parametrize("bug,seek", [("count-2019", "shift-2019"), ("off-by-one-2023", "shift")])
def test_buggy_seeks_never_leave_the_buffer(bug, seek):
    rng = random.Random(bug)
    for po in (0, 512, 3584, 4095):
        mem, m, reg = make_buffer(7 * PAGE_SIZE + 33, po)
        start = reg.addr - m.addr
        for _ in range(60):
            off = rng.randrange(reg.length + 1)
            ln = rng.randint(0, reg.length - off)
            m.array[:] = 0
            it = io_import_fixed(ITER_DEST, reg, reg.addr + off, ln, seek=seek, bugs=(bug,))
            n = it.copy_to_iter(b"\xff" * (reg.length + 2 * PAGE_SIZE))
            assert n <= reg.length - off
            assert not m.array[:start].any() and not m.array[start + reg.length :].any()


# ---- timing kernels: logic only (no clock in pass/fail) ------------------------------------


def test_timing_kernels_run_and_validate():
    mem, m, reg = make_buffer(8 * PAGE_SIZE, 0)
    for s in SEEK_NAMES:
        assert timers.time_fixed_seek(reg, 4 * PAGE_SIZE, 100, s, 10) > 0
        assert timers.time_fixed_submit(reg, 4 * PAGE_SIZE, 100, s, 10) > 0
    assert (reg.view()[4 * PAGE_SIZE : 4 * PAGE_SIZE + 100] == 0xA5).all()
    with pytest.raises(OSError):
        timers.time_fixed_seek(reg, reg.length, 1, "shift", 10)
    assert live.read_syscall_ns(length=1, iters=10, batches=1) > 0


# ---- experiment helpers: logic on synthetic data ------------------------------------------


def test_r1_figures_come_from_the_one_statistics_module():
    import pandas as pd

    from labkit.measure import stats

    rows = [
        {"variant": "walk-2019", "pages_skipped": p, "ns_per_op": 10 + 3.0 * p + e}
        for p in (0, 10, 100, 1000, 10000)
        for e in (-1.0, 0.0, 1.0)
    ]
    slope = stats.slope(pd.DataFrame(rows), variant="walk-2019", min_x=1)
    assert slope.estimate == pytest.approx(3.0, rel=1e-6) and slope.ci_low <= 3.0 <= slope.ci_high
    sub = pd.DataFrame(
        {
            "variant": ["walk-2019 tail"] * 9 + ["shift tail"] * 9,
            "ns_per_op": [300.0] * 9 + [100.0] * 9,
        }
    )
    r = stats.composed_ratio(sub, "walk-2019 tail", "shift tail", fixed=[100.0] * 9)
    assert r.estimate == r.ci_low == r.ci_high == 2.0
    assert not hasattr(r1_experiments, "composed_ratio_ci") and not hasattr(
        r1_experiments, "fit_ns_per_page"
    )


def test_experiment_helpers_with_a_stand_in_runner():
    import pandas as pd

    calls = []

    def run(experiment, variants, *, repeats, params=None, **_):
        calls.append((experiment, sorted(variants), params))
        return pd.DataFrame(
            [
                {
                    "experiment": experiment,
                    "variant": v,
                    "repeat": r,
                    "ns_per_op": variants[v](),
                    **(params or {}),
                }
                for r in range(repeats)
                for v in variants
            ]
        )

    mem, m, reg = make_buffer(64 * PAGE_SIZE, 0)
    offs = r1_experiments.seek_offsets(reg.length)
    assert offs[0] == 0 and offs[-1] == reg.length - PAGE_SIZE and offs == sorted(set(offs))
    df = r1_experiments.seek_cost_experiment(reg, offs[:3], repeats=2, run=run, target_ns=1e4)
    assert len(df) == 3 * 4 * 2 and set(df["variant"]) == set(SEEK_NAMES)
    assert list(df["pages_skipped"].unique()) == [o // PAGE_SIZE for o in offs[:3]]
    sub = r1_experiments.submission_experiment(reg, repeats=2, run=run, target_ns=1e4)
    assert set(sub["where"]) == {"head", "tail"} and set(sub["seek"]) == set(SEEK_NAMES)
    assert (sub["ns_per_op"] > 0).all()
