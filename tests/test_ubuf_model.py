"""The R2/R3 model experiments (labkit.models.ubuf): logic and work counts, never timing."""

import errno
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import labkit
from labkit import live
from labkit._ffi import lib
from labkit.models import ubuf
from labkit.models.ubuf import SyscallModel, UringModel

PAGE = labkit.PAGE_SIZE


# ---- R2: the import under each era ----------------------------------------------


@pytest.mark.parametrize("kernel, expected", [("6.3", "IOVEC"), ("6.4", "UBUF"), ("6.12", "UBUF")])
def test_readv_one_segment_type_per_era_matches_core_import(kernel, expected):
    m = SyscallModel("readv", kernel)
    w = m.work(5)
    assert w.calls == 5
    assert (w.iovec_iters, w.ubuf_iters) == ((5, 0) if expected == "IOVEC" else (0, 5))
    # the same answer from the core's own Python import
    mem = labkit.UserMemory()
    buf = mem.map(PAGE)
    it = labkit.import_iovec(labkit.ITER_DEST, [(buf.addr, PAGE)], mem, kernel=kernel)
    assert it.iter_type == expected


def test_read_is_always_ubuf_and_reads_no_iovec():
    w = SyscallModel("read").work(3)
    assert (w.ubuf_iters, w.iovec_iters, w.uvec_bytes_read, w.seg_steps) == (3, 0, 0, 0)


@pytest.mark.parametrize("syscall, kernel", [("read", "6.4"), ("readv", "6.3"), ("readv", "6.4")])
def test_read_zero_really_zeroes_user_memory(syscall, kernel):
    m = SyscallModel(syscall, kernel, size=3 * PAGE + 100)
    m.buffer[:] = 0xFF
    w = m.work(2)
    assert w.bytes_moved == 2 * (3 * PAGE + 100)
    assert not m.buffer.any()


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_copy_op_lands_the_source_bytes(kernel):
    m = SyscallModel("readv", kernel, op="copy", size=1000)
    w = m.work(1)
    assert w.bytes_moved == 1000
    assert bytes(m.buffer[:1000]) == (bytes(range(256)) * 4)[:1000]


def test_advance_moves_no_bytes_but_counts_them():
    m = SyscallModel("readv", "6.3", op="advance", size=PAGE)
    m.buffer[:] = 7
    w = m.work(4)
    assert w.bytes_moved == 4 * PAGE
    assert (m.buffer == 7).all()


@pytest.mark.parametrize("op", sorted(ubuf.OPS))
def test_64_does_strictly_less_work_than_63(op):
    old = SyscallModel("readv", "6.3", op=op).work(100)
    new = SyscallModel("readv", "6.4", op=op).work(100)
    assert new.bytes_moved == old.bytes_moved == 100 * PAGE
    assert new.uvec_bytes_read == old.uvec_bytes_read == 100 * 16  # both copy the user's iovec
    assert old.seg_steps == 100 and new.seg_steps == 0
    assert old.iovec_table_bytes == 100 * 16 and new.iovec_table_bytes == 0
    assert new.overhead < old.overhead
    for field in ("allocs", "frees", "imports", "iter_bytes_copied"):
        assert getattr(new, field) <= getattr(old, field), field


def test_live_proxy_copies_one_more_iovec_than_63():
    """readv(4K + empty) on 6.4 is IOVEC like readv(4K) on 6.3, plus one more iovec read."""
    proxy = SyscallModel("readv", "6.4", segments=[PAGE, 0]).work(10)
    old = SyscallModel("readv", "6.3").work(10)
    assert proxy.iovec_iters == old.iovec_iters == 10
    assert proxy.uvec_bytes_read == old.uvec_bytes_read + 10 * 16
    assert proxy.iovec_table_bytes == old.iovec_table_bytes + 10 * 16
    assert proxy.seg_steps == old.seg_steps
    assert proxy.bytes_moved == old.bytes_moved


def test_segment_steps_count_empty_segments():
    for kernel in ("6.3", "6.4"):
        w = SyscallModel("readv", kernel, segments=[100, 0, 200]).work(1)
        assert (w.iovec_iters, w.seg_steps, w.bytes_moved) == (1, 3, 300)


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_more_than_fast_segments_allocates_and_frees(kernel):
    w = SyscallModel("readv", kernel, segments=[10] * 9).work(3)
    assert w.allocs == w.frees == 3
    assert w.iovec_table_bytes == 3 * 9 * 16
    w8 = SyscallModel("readv", kernel, segments=[10] * 8).work(3)
    assert w8.allocs == w8.frees == 0


@settings(max_examples=40, deadline=None)
@given(segs=st.lists(st.integers(0, 5000), min_size=0, max_size=12))
def test_any_segment_list_moves_exactly_its_bytes(segs):
    works = {}
    for kernel in ("6.3", "6.4"):
        m = SyscallModel("readv", kernel, segments=segs)
        m.buffer[:] = 0xAA
        w = m.work(1)
        total = sum(segs)
        assert w.bytes_moved == total
        assert not m.buffer[:total].any()
        assert (m.buffer[total:] == 0xAA).all()
        works[kernel] = w
    if len(segs) != 1:  # the eras differ only for one segment
        assert works["6.3"] == works["6.4"]


# ---- errors: clear exceptions, no crash -----------------------------------------


def test_unmapped_buffer_is_efault():
    m = SyscallModel("readv", "6.4")
    m.mem.unmap(m.data)
    with pytest.raises(OSError) as e:
        m.work(1)
    assert e.value.errno == errno.EFAULT
    with pytest.raises(OSError) as e:
        m.time(10)
    assert e.value.errno == errno.EFAULT


def test_unmapped_iovec_array_is_efault():
    for m in (SyscallModel("readv", "6.3"), UringModel("readv-rewrite")):
        m.mem.unmap(m.uvec_map)
        with pytest.raises(OSError) as e:
            m.work(1)
        assert e.value.errno == errno.EFAULT


def test_too_many_segments_is_einval():
    with pytest.raises(OSError) as e:
        SyscallModel("readv", segments=[1] * (labkit.UIO_MAXIOV + 1))
    assert e.value.errno == errno.EINVAL
    m = SyscallModel("readv", segments=[1] * 4)
    m._args.nr_segs = labkit.UIO_MAXIOV + 1  # the C model checks too
    with pytest.raises(OSError) as e:
        m.work(1)
    assert e.value.errno == errno.EINVAL


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        SyscallModel("pread")
    with pytest.raises(ValueError):
        SyscallModel(op="fill")
    with pytest.raises(ValueError):
        SyscallModel(kernel="six")
    with pytest.raises(ValueError):
        UringModel("writev")
    with pytest.raises(ValueError):
        UringModel(defer_every=-1)
    with pytest.raises(OSError, match="iters"):  # iters 0 is EINVAL everywhere, as from C
        SyscallModel().time(0)
    with pytest.raises(ValueError):
        SyscallModel().work(-1)
    m = SyscallModel()
    m._args.era = 65
    with pytest.raises(OSError):
        m.work(1)


# ---- R3: the io_uring request model ------------------------------------------


def test_defer_every_for():
    assert ubuf.defer_every_for(0) == 0
    assert ubuf.defer_every_for(1) == 1
    assert ubuf.defer_every_for(0.25) == 4
    assert ubuf.defer_every_for(0.1) == 10
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError):
            ubuf.defer_every_for(bad)


@pytest.mark.parametrize("k", [0, 1, 3, 10])
def test_uring_deferral_counts(k):
    n = 30
    d = n // k if k else 0
    iov = UringModel("readv-iovec", defer_every=k).work(n)
    assert (iov.deferred, iov.allocs, iov.frees) == (d, d, d)
    assert iov.iter_bytes_copied == d * ubuf.ITER_STATE_BYTES
    assert iov.iovec_table_bytes == 16 * (n + d)  # the import's copy + the async copy
    assert (iov.iovec_iters, iov.seg_steps, iov.rewritten) == (n, n, 0)

    rw = UringModel("readv-rewrite", defer_every=k).work(n)
    assert (rw.deferred, rw.allocs, rw.frees, rw.iter_bytes_copied) == (d, 0, 0, 0)
    assert (rw.rewritten, rw.ubuf_iters, rw.seg_steps) == (n, n, 0)
    assert rw.imports == n + d  # a deferred READ imports again at issue
    assert rw.iovec_table_bytes == 16 * n  # the patch still imports as IOVEC first

    g64 = UringModel("readv-6.4", defer_every=k).work(n)
    assert (g64.allocs, g64.iovec_table_bytes, g64.ubuf_iters) == (d, 0, n)
    assert g64.iter_bytes_copied == d * ubuf.ITER_STATE_BYTES

    rd = UringModel("read", defer_every=k).work(n)
    assert (rd.allocs, rd.uvec_bytes_read, rd.iovec_table_bytes, rd.imports) == (0, 0, 0, n + d)
    for w in (iov, rw, g64, rd):
        assert w.bytes_moved == n * PAGE and w.calls == n


@pytest.mark.parametrize("rate", [0.0, 0.05, 0.5, 1.0])
def test_rewrite_does_strictly_less_work_than_iovec(rate):
    k = ubuf.defer_every_for(rate)
    iov = UringModel("readv-iovec", defer_every=k).work(200)
    rw = UringModel("readv-rewrite", defer_every=k).work(200)
    rd = UringModel("read", defer_every=k).work(200)
    assert rw.overhead < iov.overhead
    assert rd.overhead <= rw.overhead
    assert rw.allocs <= iov.allocs and rw.iter_bytes_copied <= iov.iter_bytes_copied


def test_defer_alloc_ubuf_models_the_eagain_path():
    n, k = 12, 3
    rd = UringModel("read", defer_every=k, defer_alloc_ubuf=True).work(n)
    assert (rd.allocs, rd.frees, rd.imports) == (n // k, n // k, n)
    assert rd.iter_bytes_copied == (n // k) * ubuf.ITER_STATE_BYTES
    assert rd.iovec_table_bytes == 0  # a UBUF iterator has no iovecs to save


def test_deferred_request_with_allocated_iovecs_frees_everything():
    m = UringModel("readv-iovec", defer_every=2, segments=[100] * 9)
    m.buffer[:] = 1
    w = m.work(6)
    assert w.allocs == w.frees == 6 + 3  # 6 heap arrays + 3 async states
    assert w.iovec_table_bytes == 6 * 9 * 16  # the heap array moves, it is not copied
    assert w.bytes_moved == 6 * 900 and not m.buffer[:900].any()


@pytest.mark.parametrize("variant", sorted(ubuf.URING_VARIANTS))
def test_uring_deferred_and_direct_requests_write_the_same_bytes(variant):
    for k in (0, 1):
        m = UringModel(variant, defer_every=k, op="copy", size=777)
        w = m.work(2)
        assert w.bytes_moved == 2 * 777
        assert bytes(m.buffer[:777]) == (bytes(range(256)) * 4)[:777]


def test_rewrite_does_not_apply_to_two_segments():
    w = UringModel("readv-rewrite", segments=[PAGE, 0]).work(4)
    assert (w.rewritten, w.iovec_iters) == (0, 4)


# ---- plumbing for the harness (not timing: only that a batch returns a number) ----


def test_batches_return_ns_per_call_and_work_table():
    models = {**ubuf.read_zero_models(proxy=True), **ubuf.uring_models(defer_every=4)}
    for name, fn in ubuf.batches(models, iters=5).items():
        ns = fn()
        assert isinstance(ns, float) and ns > 0, name
    table = ubuf.work_table(ubuf.read_zero_models(proxy=True), calls=10)
    assert list(table.index) == ["read", "readv 6.3", "readv 6.4", "readv 6.4 (4K+empty)"]
    assert table.loc["readv 6.3", "seg_steps"] == 1.0
    assert table.loc["readv 6.4", "seg_steps"] == 0.0
    assert (table["bytes_moved"] == PAGE).all()
    assert ubuf.ASYNC_STATE_BYTES > ubuf.ITER_STATE_BYTES == lib.lk_ubuf_iter_size()


def test_experiment_sets_share_one_data_page_and_table_page():
    mem = labkit.UserMemory()
    models = ubuf.read_zero_models(proxy=True, mem=mem)
    assert all(m.mem is mem for m in models.values())
    assert len(mem.mappings) == 2  # one data page, one table page
    assert len({m.data.addr for m in models.values()}) == 1
    slots = [m.uvec_addr for m in models.values()]
    assert len(set(slots)) == len(slots)  # each its own iovec array
    for m in models.values():
        m.buffer[:] = 0xFF
        assert m.work(1).bytes_moved == PAGE and not m.buffer.any()
    assert np.asarray(models["readv 6.4"].buffer).size == PAGE


def test_shared_memory_refuses_what_does_not_fit():
    sh = ubuf.SharedMemory(PAGE)
    with pytest.raises(ValueError):
        SyscallModel("readv", size=2 * PAGE, shared=sh)
    with pytest.raises(ValueError):
        SyscallModel("readv", shared=sh, mem=labkit.UserMemory())
    with pytest.raises(ValueError):
        for _ in range(PAGE // ubuf.SharedMemory.SLOT + 1):
            SyscallModel("readv", shared=sh)


# ---- threads: the C loops read the address-space table with the GIL released ----------


@pytest.mark.parametrize("call", [lambda m: m.work(3), lambda m: m.time(10)], ids=["work", "time"])
@pytest.mark.parametrize(
    "make",
    [
        lambda mem: SyscallModel("readv", "6.3", segments=[64, 64], mem=mem),
        lambda mem: UringModel("readv-iovec", mem=mem),
    ],
    ids=["syscall", "uring"],
)
def test_model_calls_take_the_address_space_lock(make, call):
    mem = labkit.UserMemory()
    model = make(mem)
    done = threading.Event()
    thread = threading.Thread(target=lambda: (call(model), done.set()), daemon=True)
    with mem.lock:
        thread.start()
        waited = not done.wait(0.3)
    thread.join(30)
    assert waited and done.is_set()


def test_model_never_sees_a_half_moved_table_while_another_thread_maps():
    # map()/unmap() move the table's entries; a C loop reading it without the
    # lock found its own mapping missing and failed with a spurious EFAULT
    mem = labkit.UserMemory()
    model = SyscallModel("readv", "6.3", op="advance", size=64, segments=[16] * 4, mem=mem)
    stop = threading.Event()

    def mapper():
        while not stop.is_set():
            maps = [mem.map(labkit.PAGE_SIZE) for _ in range(50)]
            for m in maps:
                mem.unmap(m)

    thread = threading.Thread(target=mapper, daemon=True)
    thread.start()
    try:
        for _ in range(40):
            assert model.work(2000).calls == 2000
    finally:
        stop.set()
        thread.join(30)


def test_shared_args_slots_are_aligned_distinct_and_in_one_block():
    """Variants sharing memory read their C arguments from one block of aligned slots."""
    from labkit._ffi import ffi

    models = ubuf.uring_models(defer_every=20)
    addrs = [int(ffi.cast("uintptr_t", m._args)) for m in models.values()]
    assert len(set(addrs)) == len(addrs)
    assert all(a % ubuf.SharedMemory.ARGS_SLOT == 0 for a in addrs)
    assert max(addrs) - min(addrs) < ubuf.SharedMemory.ARGS_SLOT * ubuf.SharedMemory.ARGS_SLOTS
    assert ffi.sizeof("struct lk_ubuf_args") <= ubuf.SharedMemory.ARGS_SLOT
    # the slot carries the model's own arguments, and the model still works
    m = models["READV as IOVEC (6.3)"]
    assert m._args.defer_every == 20
    assert (m._args.variant, m._args.era, m._args.rewrite) == (live.VARIANTS["readv1"].id, 63, 0)
    assert m.work(40).deferred == 2


def test_shared_args_block_full():
    sh = ubuf.SharedMemory(PAGE)
    for _ in range(ubuf.SharedMemory.ARGS_SLOTS):
        sh.args_slot()
    with pytest.raises(ValueError, match="argument block is full"):
        sh.args_slot()


def test_live_gain_by_run_gives_each_runs_saving_and_speed():
    import pandas as pd

    from labkit.results.r2 import experiments as r2_experiments

    rng = np.random.default_rng(7)
    rows = []
    # runs 0-2 fast (200 ns, 2% saved), runs 3-5 slow (300 ns, 4% saved)
    for run, (ns, saved) in enumerate([(200, 0.02)] * 3 + [(300, 0.04)] * 3):
        for k in range(20):
            noise = 1 + rng.normal(0, 0.002)
            rows.append(
                {"variant": "readv_empty", "run": run, "repeat": k, "ns_per_op": ns * noise}
            )
            rows.append(
                {
                    "variant": "readv1",
                    "run": run,
                    "repeat": k,
                    "ns_per_op": ns * (1 - saved) * noise,
                }
            )
    df = pd.DataFrame(rows)
    by_run = r2_experiments.live_gain_by_run(df, "readv(1) vs readv(4K+empty)", kind="time")
    assert list(by_run["run"]) == list(range(6))
    assert np.allclose(by_run["gain"], [2, 2, 2, 4, 4, 4], atol=1e-6)
    assert np.allclose(by_run["iovec_ns"], [200] * 3 + [300] * 3, rtol=0.01)
    assert (by_run["ci_low"] <= by_run["gain"]).all() and (
        by_run["gain"] <= by_run["ci_high"]
    ).all()
