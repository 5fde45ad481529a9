"""The harness logic, without depending on the clock."""

import errno
import os

import numpy as np
import pandas as pd
import pytest

from labkit.core.iov_iter import ITER_DEST, ITER_SOURCE, IovIter
from labkit.errors import IterMisuseError
from labkit.experiments import core_copy
from labkit.measure import runner, stats, timers


def recorder(calls, name, value=1.0):
    def variant():
        calls.append(name)
        return value

    return variant


def test_run_interleaves_after_warmup():
    calls = []
    variants = {n: recorder(calls, n) for n in ("A", "B", "C")}
    df = runner.run("x", variants, repeats=3, warmup=2)
    assert calls == ["A", "B", "C"] * 5
    assert list(df["variant"]) == ["A", "B", "C"] * 3
    assert list(df["repeat"]) == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_run_rotated_order_counterbalances():
    calls = []
    variants = {n: recorder(calls, n) for n in ("A", "B", "C")}
    df = runner.run("x", variants, repeats=4, warmup=1, rotate=True)
    assert calls == list("ABC" + "ABC" + "BCA" + "CAB" + "ABC")
    assert list(df["variant"]) == list("ABCBCACABABC")
    assert list(df["repeat"]) == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3


def test_run_columns_params_and_sample_lists():
    df = runner.run(
        "exp",
        {"a": lambda: [1.0, 2.0, 3.0], "b": lambda: 4},
        repeats=2,
        warmup=0,
        params={"size": 64, "kind": "k"},
    )
    assert list(df.columns) == ["experiment", "variant", "repeat", "ns_per_op", "size", "kind"]
    assert len(df) == 8
    assert df.loc[df["variant"] == "a", "ns_per_op"].tolist() == [1.0, 2.0, 3.0] * 2
    assert set(df["size"]) == {64} and set(df["experiment"]) == {"exp"}


@pytest.mark.parametrize("bad", [float("nan"), -1.0, float("inf"), [], "x"])
def test_run_rejects_bad_samples(bad):
    with pytest.raises((ValueError, TypeError)):
        runner.run("x", {"a": lambda: bad}, repeats=1, warmup=0)


def test_run_rejects_bad_arguments():
    with pytest.raises(ValueError):
        runner.run("x", {}, repeats=1)
    with pytest.raises(ValueError):
        runner.run("x", {"a": lambda: 1.0}, repeats=0)
    with pytest.raises(ValueError):
        runner.run("x", {"a": lambda: 1.0}, repeats=1, params={"variant": 1})


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity")
def test_run_pins_and_restores_affinity():
    before = os.sched_getaffinity(0)
    cpu = max(before)
    seen = []
    runner.run(
        "x",
        {"a": lambda: seen.append(os.sched_getaffinity(0)) or 1.0},
        repeats=2,
        warmup=1,
        cpu=cpu,
    )
    assert seen == [{cpu}] * 3
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity")
def test_affinity_restored_when_a_variant_raises():
    before = os.sched_getaffinity(0)

    def boom():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        runner.run("x", {"a": boom}, repeats=1, cpu=min(before))
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity")
def test_pinning_to_a_foreign_cpu_is_an_error():
    with pytest.raises(ValueError):
        with runner.pinned(10_000):
            pass


def synthetic(ratio, n=60, seed=1):
    rng = np.random.default_rng(seed)
    base = 100 * rng.lognormal(0, 0.05, n)
    other = ratio * 100 * rng.lognormal(0, 0.05, n)
    return pd.DataFrame(
        {
            "experiment": "s",
            "variant": ["base"] * n + ["slow"] * n,
            "ns_per_op": np.concatenate([base, other]),
        }
    )


def test_ratio_contains_known_ratio_and_is_seeded():
    df = synthetic(1.5)
    r = stats.ratio(df, "slow", "base")
    assert isinstance(r, stats.Estimate)
    assert r.ci_low < 1.5 < r.ci_high
    assert r.ci_low <= r.estimate <= r.ci_high
    assert r.ci_high - r.ci_low < 0.1
    assert r.method.startswith("BCa") and r.n_runs == 1 and r.n_batches == 60
    again = stats.ratio(df, "slow", "base")
    assert (again.estimate, again.ci_low, again.ci_high) == (r.estimate, r.ci_low, r.ci_high)
    other = stats.ratio(df, "slow", "base", seed=7)
    assert other.estimate == r.estimate and (other.ci_low, other.ci_high) != (r.ci_low, r.ci_high)


def test_ratio_ci_by_group_and_missing_variant():
    df = pd.concat([synthetic(1.2).assign(size=1), synthetic(3.0, seed=2).assign(size=2)])
    out = stats.ratio_ci(df, "slow", "base", by="size")
    assert list(out["size"]) == [1, 2]
    assert out.loc[0, "ci_low"] < 1.2 < out.loc[0, "ci_high"]
    assert out.loc[1, "ci_low"] < 3.0 < out.loc[1, "ci_high"]
    assert {"numerator", "denominator", "estimate", "method", "n_runs"} <= set(out.columns)
    with pytest.raises(KeyError):
        stats.ratio_ci(df, "nope", "base")
    one = stats.ratio_ci(df[df["size"] == 1], "slow", "base")  # one return type: a table
    assert isinstance(one, pd.DataFrame) and len(one) == 1
    assert one.loc[0, "estimate"] == stats.ratio(df[df["size"] == 1], "slow", "base").estimate


def test_median_ci():
    df = synthetic(2.0)
    out = stats.median_ci(df)
    assert list(out.columns) == ["experiment", "variant", *stats.MEDIAN_COLUMNS]
    for _, row in out.iterrows():
        assert row["ci_low"] <= row["median"] <= row["ci_high"]
        assert row["n"] == 60 and row["n_runs"] == 1
    assert out.equals(stats.median_ci(df))
    with pytest.raises(KeyError):
        stats.median_ci(df, by="size")
    with pytest.raises(ValueError):
        stats.bootstrap_median([1.0, 2.0], confidence=1.5)


def test_calibrate_scales_to_target():
    # a fake kernel costing exactly 10 ns/op: 2 ms needs 200,000 iterations
    assert runner.calibrate(lambda iters: 10.0, target_ns=2e6) == 200_000


def test_timing_wrappers_check_their_arguments():
    buf = bytearray(4096)
    src = bytes(4096)
    dest = IovIter.ubuf(ITER_DEST, buf)
    source = IovIter.ubuf(ITER_SOURCE, src)
    with pytest.raises(ValueError):
        timers.time_memcpy(buf, src, 4097, 1)
    with pytest.raises(ValueError):
        timers.time_copy_to_iter(dest, src, 5000, 1)
    with pytest.raises(IterMisuseError):
        timers.time_copy_to_iter(source, src, 10, 1)
    with pytest.raises(IterMisuseError):
        timers.time_copy_from_iter(dest, buf, 10, 1)
    with pytest.raises(OSError) as err:  # iters 0 is EINVAL everywhere, as from C
        timers.time_empty(0)
    assert err.value.errno == errno.EINVAL
    with pytest.raises(TypeError):
        timers.time_memcpy(buf, "text", 1, 1)


def test_timed_copies_move_the_bytes_and_leave_the_iterator_alone():
    src = bytes(range(256)) * 32
    dst = bytearray(8192)
    pieces = [memoryview(dst)[k : k + 4096] for k in (0, 4096)]
    it = IovIter.iovec(ITER_DEST, pieces)
    before = it.state()
    assert timers.time_copy_to_iter(it, src, 8192, 3) >= 0
    assert bytes(dst) == src
    assert it.state() == before
    out = bytearray(8192)
    assert timers.time_copy_from_iter(IovIter.ubuf(ITER_SOURCE, src), out, 8192, 2) >= 0
    assert bytes(out) == src


def test_repeated_page_bvec_walks_every_segment():
    big = core_copy.repeated_page_bvec(ITER_DEST, 1000)
    assert (big.iter_type, big.count, big.nr_segs) == ("BVEC", 1000 * 4096, 1000)
    timers.time_advance(big, big.count, 2)
    assert big.count == 1000 * 4096  # the prototype is untouched
    big.advance(big.count)
    assert big.visited == 1000 and big.nr_segs == 0


def test_summary_and_targets_on_synthetic_rows():
    rows = []
    for r in range(5):
        rows += [
            ("memcpy", 1 << 20, 256, 100.0 + r),
            ("copy_to_iter UBUF", 1 << 20, 256, 105.0),
            ("copy_to_iter IOVEC", 1 << 20, 256, 200.0),
            ("advance BVEC", 1 << 30, core_copy.BIG_BVEC_SEGMENTS, 2.0 * (1 << 18)),
            ("empty", 0, 0, 0.5),
        ]
    df = pd.DataFrame(rows, columns=["variant", "size", "segments", "ns_per_op"])
    df["experiment"] = "core-copy"
    df["repeat"] = 0
    t = {x.name.split(",")[0]: x for x in core_copy.targets(df)}
    assert len(t) == 4
    ubuf = t["copy_to_iter into a 1 MiB UBUF"]
    assert ubuf.value == pytest.approx(100 * 102 / 105) and ubuf.met
    iovec = t["copy_to_iter into an IOVEC of 256 x 4 KiB"]
    assert iovec.value == pytest.approx(51.0) and not iovec.met
    adv = [x for x in t.values() if x.name.startswith("advance")][0]
    assert adv.value == pytest.approx(2.0) and not adv.met
    s = core_copy.summarize(df)
    row = s[s["variant"] == "copy_to_iter IOVEC"].iloc[0]
    assert row["pct_of_memcpy"] == pytest.approx(51.0)
