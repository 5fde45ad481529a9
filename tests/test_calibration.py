"""A/A calibration and the proxy's bias: clock-free checks on simulated tables, and that a
live loop measures a variant and its twin side by side."""

import numpy as np
import pandas as pd
import pytest

from labkit import live
from labkit.measure import calibration
from labkit.results.r2.claims import proxy_corrected


def _table(rng, runs=4, rounds=12, cost=None, drift=True):
    """Interleaved rows: each round shares a machine speed (drift), each call its cost."""
    cost = cost or {
        "readv1": 180.0,
        "readv1_aa": 180.0,
        "readv_empty": 186.0,
        "readv_empty2": 188.0,
    }
    rows = []
    for run in range(runs):
        for rep in range(rounds):
            speed = 1 + (0.05 * rng.standard_normal() if drift else 0)
            for name, c in cost.items():
                rows.append((run, rep, name, c * speed + rng.normal(0, 0.3)))
    return pd.DataFrame(rows, columns=["run", "repeat", "variant", "ns_per_op"])


def test_aa_intervals_cover_zero_about_95_percent():
    rng = np.random.default_rng(11)
    found = [calibration.aa(_table(rng), "readv1", n_resamples=500) for _ in range(60)]
    t = calibration.tally(found)
    assert t["total"] == 60 and 0.85 <= t["share"] <= 1.0
    assert 0 < t["resolving_power"]["readv1"] < 2  # ns per call, at noise SD 0.3 and 5% drift
    assert "resolving power" in found[0].sentence()


def test_aa_misses_zero_when_the_twin_differs():
    rng = np.random.default_rng(3)
    cost = {"readv1": 180.0, "readv1_aa": 185.0}
    a = calibration.aa(_table(rng, cost=cost), "readv1", n_resamples=500)
    assert not a.covers_zero and "MISSES 0" in a.sentence()
    with pytest.raises(KeyError):
        calibration.aa(_table(rng, cost={"read": 1.0, "readv1": 2.0}), "readv1")


def test_proxy_correction_removes_one_empty_iovec():
    rng = np.random.default_rng(7)
    est = proxy_corrected(_table(rng), n_resamples=500)
    # truth: raw 6 ns, bias 2 ns, corrected 4 ns; shares 100 (1 - 180/186) and 100 (1 - 180/184)
    assert est["saved_ns_raw"].ci_low <= 6 <= est["saved_ns_raw"].ci_high
    assert est["bias_ns"].ci_low <= 2 <= est["bias_ns"].ci_high
    assert est["saved_ns"].ci_low <= 4 <= est["saved_ns"].ci_high
    share = 100 * (1 - 180 / 184)
    assert est["saved_share"].ci_low <= share <= est["saved_share"].ci_high
    # the correction's uncertainty is in the interval: wider than the raw one
    raw = est["saved_ns_raw"]
    assert est["saved_ns"].ci_high - est["saved_ns"].ci_low > raw.ci_high - raw.ci_low


def test_proxy_needs_the_same_rounds():
    rng = np.random.default_rng(1)
    df = _table(rng)
    df.loc[df["variant"] == "readv_empty2", "repeat"] += 100
    with pytest.raises(ValueError, match="same interleaved rounds"):
        proxy_corrected(df)


def test_live_loop_measures_a_twin():
    """The runner interleaves one call under two labels (no timing asserted)."""
    from labkit.experiments.live_kernel import run_syscalls

    names = ("readv1", live.aa_twin("readv1"), "readv_empty", "readv_empty2")
    df = run_syscalls(names=names, iters=2000, repeats=3, warmup=1, runs=2)
    assert set(df["variant"]) == set(names)
    assert (df.groupby("variant").size() == 6).all()  # 3 rounds x 2 runs each
    a = calibration.aa(df, "readv1", n_resamples=200)
    assert np.isfinite(a.resolving_power)
    assert set(proxy_corrected(df, n_resamples=200)) >= {"saved_ns", "bias_ns"}
    assert live.base_name("readv1_aa") == "readv1"
    # the calibration row reads the same bytes and stays out of the default lists
    fd = live.open_zero()
    try:
        assert live.syscall_read("readv_empty2", fd) == bytes(4096)
    finally:
        import os

        os.close(fd)
    assert "readv_empty2" in live.CALIBRATION_VARIANTS
    assert "readv_empty2" not in live.SYSCALL_VARIANTS
    assert live.read_variant("readv1_aa").name == "readv1"


def test_aa_by_run_gives_one_interval_per_run():
    rng = np.random.default_rng(2)
    df = _table(rng, runs=5)
    found = calibration.aa_by_run(df, "readv1", n_resamples=300)
    assert len(found) == 5 and all(np.isfinite(a.resolving_power) for a in found)
    assert len(calibration.aa_by_run(df.drop(columns="run"), "readv1", n_resamples=300)) == 1
