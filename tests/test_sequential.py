"""labkit.measure.sequential: stop adding runs once the verdict is decided (synthetic data)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from labkit.measure import sequential, stats


class Source:
    """Independent synthetic runs of a two-variant A/B: each call returns k new runs."""

    def __init__(self, saving: float, run_sd: float = 0.0, seed: int = 0):
        self.saving, self.run_sd = saving, run_sd
        self.rng = np.random.default_rng(seed)
        self.calls: list[int] = []

    def __call__(self, k: int) -> pd.DataFrame:
        self.calls.append(k)
        rows = []
        for r in range(k):
            shift = self.rng.normal(0, self.run_sd)
            for v, m in (("slow", 100.0 + self.saving), ("fast", 100.0)):
                mr = m + (shift if v == "slow" else 0.0)
                rows += [
                    {"variant": v, "run": r, "ns_per_op": mr + e}
                    for e in self.rng.normal(0, 0.2, 15)
                ]
        return pd.DataFrame(rows)


def analyse(df: pd.DataFrame, confidence: float) -> stats.Estimate:
    return stats.difference(df, "slow", "fast", confidence=confidence, n_resamples=1000)


class Clock:
    def __init__(self, per_call: float):
        self.t, self.per_call = 0.0, per_call

    def __call__(self) -> float:
        self.t += self.per_call
        return self.t


def test_stops_at_min_runs_when_clearly_inside_or_outside():
    src = Source(saving=5.5)
    res = sequential.until_decided(src, analyse, (4.5, 6.5), min_runs=3, max_runs=6)
    assert res.stopped == "decided" and res.verdict.verdict == "reproduced"
    assert res.n_runs == 3 and src.calls == [3] and res.looks == 1
    src = Source(saving=0.0)
    res = sequential.until_decided(src, analyse, (4.5, 6.5), min_runs=3, max_runs=6)
    assert res.verdict.verdict == "differs" and res.n_runs == 3


def test_adds_runs_until_the_cap_when_undecided_and_relabels_them():
    src = Source(saving=4.5, run_sd=1.0)  # on the band's edge, runs disagree
    res = sequential.until_decided(src, analyse, (4.5, 6.5), min_runs=2, max_runs=5)
    assert res.stopped == "run cap" and res.verdict.verdict == "inconclusive"
    assert src.calls == [2, 1, 1, 1] and res.n_runs == 5
    assert sorted(res.data["run"].unique()) == [0, 1, 2, 3, 4]
    assert [h["n_runs"] for h in res.history] == [2, 3, 4, 5]


def test_the_time_budget_stops_additions():
    src = Source(saving=4.5, run_sd=1.0)
    res = sequential.until_decided(
        src, analyse, (4.5, 6.5), min_runs=2, max_runs=50, budget_s=10.0, clock=Clock(2.0)
    )
    assert res.stopped == "time budget" and res.n_runs < 50


def test_looks_split_the_confidence():
    assert sequential.looks_for(2, 6, 1) == 5 and sequential.looks_for(3, 3, 1) == 1
    res = sequential.until_decided(Source(5.5), analyse, (4.5, 6.5), min_runs=2, max_runs=6)
    assert res.confidence == pytest.approx(1 - 0.05 / 5)
    assert res.estimate.confidence == pytest.approx(res.confidence)


def test_band_object_and_bad_arguments():
    from labkit import claims

    band = claims.get("R2.saved_ns").band()
    res = sequential.until_decided(Source(5.5), analyse, band, min_runs=2, max_runs=3)
    assert res.verdict.verdict == "reproduced"
    with pytest.raises(ValueError):
        sequential.until_decided(Source(1), analyse, (0, 1), min_runs=3, max_runs=2)
    with pytest.raises(ValueError):
        sequential.until_decided(Source(1), analyse, (0, 1), budget_s=0)
    with pytest.raises(ValueError):
        sequential.until_decided(lambda k: pd.DataFrame(), analyse, (0, 1))


def test_repeated_labels_same_process_calls_as_runs():
    calls = []

    def one():
        calls.append(1)
        return pd.DataFrame({"variant": ["slow", "fast"], "ns_per_op": [2.0, 1.0]})

    df = sequential.repeated(one)(3)
    assert len(calls) == 3 and sorted(df["run"].unique()) == [0, 1, 2]


def test_extra_limits_additions_to_a_share_of_the_first_runs():
    src = Source(saving=4.5, run_sd=1.0)
    # every clock read advances 1 s: the first 2 runs take 1 s, a third would end at 1.5 s,
    # past 1.4 x the first runs' time (extra=0.4); without that limit the cap is reached
    res = sequential.until_decided(
        src, analyse, (4.5, 6.5), min_runs=2, max_runs=5, extra=0.4, clock=Clock(1.0)
    )
    assert res.stopped == "time budget" and res.n_runs == 2
    res = sequential.until_decided(
        Source(4.5, 1.0), analyse, (4.5, 6.5), min_runs=2, max_runs=5, clock=Clock(1.0)
    )
    assert res.stopped == "run cap" and res.n_runs == 5
    b = sequential.Budget(min_runs=3, max_runs=5, budget_s=40.0)
    assert b.kwargs()["extra"] == 0.5 and b.kwargs()["doubling"] is False
    with pytest.raises(TypeError):
        sequential.Budget(3, 5, 40.0)  # keyword arguments only: no positional numbers
    assert b.share(31, 2) == 9 and b.share(3, 0) == 3


def test_doubling_adds_as_many_runs_as_there_are():
    assert sequential.looks_for(3, 48, doubling=True) == 5  # 3, 6, 12, 24, 48
    assert sequential.looks_for(3, 40, doubling=True) == 5  # 3, 6, 12, 24, 40
    asked = []

    def more(k):
        asked.append(k)
        return pd.DataFrame({"variant": ["a"] * k, "run": list(range(k)), "ns_per_op": [1.0] * k})

    def never_decided(data, conf):
        n = data["run"].nunique()
        return stats.Estimate("x", 0.5, -10.0, 10.0, conf, "test", n, 1, 0.0, 0.0)

    seq = sequential.until_decided(
        more,
        never_decided,
        (0.0, 1.0),
        min_runs=3,
        max_runs=20,
        doubling=True,
        budget_s=1e9,
    )
    assert asked == [3, 3, 6, 8] and seq.n_runs == 20 and seq.stopped == "run cap"
    assert seq.looks == sequential.looks_for(3, 20, doubling=True) == 4
