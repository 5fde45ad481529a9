"""labkit.claims: the registry, the parameters' convention and the engine (no timing here).

The engine is driven with a test-only claim whose experiment makes rows from
numbers (no worker, no clock), so what is checked is the wiring: an
experiment shared by two claims is measured once, runs are added until the
deciding claim is decided, the row is keyed by id and judged by the rule.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pandas as pd
import pytest

from labkit import claims
from labkit.measure import ledgers, stats
from labkit.measure.experiment import Params
from labkit.measure.ledgers import Band
from labkit.measure.sequential import Budget
from labkit.results import registry

#: The headline quantities of R1-R3 as the project names them (a new claim adds to them).
HEADLINE = {
    "R1": ["walk_tail_ns", "ns_per_page", "tail_speedup", "tail_over_head", "live_tail_over_head"]
    + ["instr_per_page_walk", "instr_per_page_shift"],
    "R2": ["saved_share", "saved_ns", "live_ratio", "instr_saved"],
    "R3": ["ubuf_gain", "read_gain", "cpu_ratio", "instr_saved", "model_ns_saved"],
}


def test_every_band_belongs_to_a_claim_and_every_claim_id_is_unique():
    bands = ledgers.bands()
    ids = claims.ids()
    assert len(ids) == len(set(ids))
    assert {f"{r}.{name}" for r, names in HEADLINE.items() for name in names} <= set(ids)
    assert set(bands["claim"]) <= set(ids)
    without = sorted(set(ids) - set(bands["claim"]))
    assert without == ["R3.model_ns_saved"]  # model only: R3 published no per-request figure
    for cid in ids:
        c, b = claims.get(cid), ledgers.claim_band(cid)
        assert c.result == cid.split(".")[0]
        if b is not None:
            assert (b.result, b.unit) == (c.result, c.unit), cid


def test_an_unknown_claim_names_the_known_ones():
    with pytest.raises(KeyError, match="R2.saved_share"):
        claims.get("R2.nope")


def _params_classes() -> set[type[Params]]:
    return {claims.get(cid).experiment.params for cid in claims.ids()}


@pytest.mark.parametrize("cls", sorted(_params_classes(), key=lambda c: c.__qualname__))
def test_params_have_quick_and_full_values_and_survive_json(cls):
    for p in (cls.quick(), cls.full()):
        assert dataclasses.is_dataclass(p)
        back = cls.from_json(json.loads(json.dumps(p.to_json())))
        assert back == p and back.key() == p.key()
    assert cls.quick() != cls.full()
    with pytest.raises(TypeError, match="unknown"):
        cls.from_json({**cls.quick().to_json(), "nope": 1})


def test_experiment_ids_are_unique_per_measurement():
    seen: dict[str, object] = {}
    for cid in claims.ids():
        exp = claims.get(cid).experiment
        assert seen.setdefault(exp.id, exp) is exp, exp.id


# ---- the engine, on a test-only claim ------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Fake(Params):
    """Rows from numbers: variant "a" around ``level``, "b" around 1."""

    level: float = 1.0

    @classmethod
    def quick(cls) -> Fake:
        return cls(level=1.02)

    @classmethod
    def full(cls) -> Fake:
        return cls(level=1.02)


CALLS: list[int] = []


def fake_measure(p: Fake, runs: int) -> pd.DataFrame:
    """``runs`` runs of 5 rounds; the runs' ratios a/b alternate ``level`` and ``level + 0.004``."""
    CALLS.append(runs)
    rows = []
    for run in range(runs):
        level = p.level + 0.004 * (run % 2)
        for rep in range(5):
            b = 100.0 + rep
            rows.append({"variant": "a", "repeat": rep, "run": run, "ns_per_op": b * level})
            rows.append({"variant": "b", "repeat": rep, "run": run, "ns_per_op": b})
    return pd.DataFrame(rows)


def fake_ratio(rows: pd.DataFrame, confidence: float) -> object:
    return stats.ratio(rows, "a", "b", confidence=confidence)


def fake_difference(rows: pd.DataFrame, confidence: float) -> object:
    return stats.difference(rows, "a", "b", confidence=confidence)


def _reason(out: object) -> str:
    return "a test-only claim"


FAKE = claims.Experiment(
    id="R9.fake",
    params=Fake,
    measure=fake_measure,
    budget=lambda quick: Budget(min_runs=2, max_runs=4, budget_s=600.0, extra=None),  # runs only
    decided_by="R9.ratio",
)
BANDS = {"R9.ratio": Band("R9.ratio", "R9", 0.9, 1.15, 1.0, "x", "test", "test")}


@pytest.fixture
def fake_claims(monkeypatch, tmp_path):
    monkeypatch.setattr(ledgers, "claim_band", BANDS.get)
    monkeypatch.setenv("LABKIT_OUT", str(tmp_path))
    CALLS.clear()
    made = [
        claims.Claim(
            "R9.ratio", "fake ratio", "x", FAKE, fake_ratio, _reason, published=lambda: 1.02
        ),
        claims.Claim(
            "R9.diff", "fake difference", "ns", FAKE, fake_difference, _reason, side="model"
        ),
    ]
    claims.register(*made)
    yield tmp_path
    for c in made:
        registry._EXTRA.pop(c.id)


def test_two_claims_of_one_experiment_measure_it_once(fake_claims):
    session = claims.new_session(quick=True)
    diff = session.run("R9.diff")  # asked first, but the ratio decides the runs
    ratio = session.run("R9.ratio")
    assert CALLS == [2]  # the budget's first runs, decided at once, measured once
    assert ratio.measured is diff.measured
    assert ratio.verdict == "reproduced" and math.isclose(ratio.estimate.estimate, 1.022)
    assert diff.estimate.confidence == ratio.measured.confidence  # decided at that confidence
    assert set(diff.data["session"]) == {session.name}
    assert sorted(diff.data["run"].unique()) == [0, 1]
    assert session.plan(["R9.diff", "R9.ratio"]) == [(FAKE, Fake.quick())]


def test_rows_are_keyed_by_claim_id_and_judged_by_the_rule(fake_claims):
    claims.new_session(quick=True)
    claims.run("R9.ratio")
    claims.run("R9.diff")
    rows = pd.read_json(fake_claims / "summary" / "r9-ratio.json", typ="series")
    assert rows["claim"] == "R9.ratio" and rows["verdict"] == "reproduced"
    assert rows["live"] == pytest.approx(1.022) and rows["band_low"] == 0.9
    diff = pd.read_json(fake_claims / "summary" / "r9-diff.json", typ="series")
    # measured, no band declared: shown, not judged (never "not measured" beside a figure)
    assert diff["verdict"] == "not comparable" and diff["model"] > 0
    assert "no declared band" in diff["reason"]


def test_an_undecided_claim_gets_more_runs_up_to_the_cap(fake_claims, monkeypatch):
    narrow = {"R9.ratio": dataclasses.replace(BANDS["R9.ratio"], low=1.021, high=1.023)}
    monkeypatch.setattr(ledgers, "claim_band", narrow.get)
    out = claims.new_session(quick=True).run("R9.ratio")
    assert CALLS[0] == 2 and sum(CALLS) == 4  # 2, then one at a time up to the cap of 4
    assert out.measured.sequential.stopped == "run cap"
    assert out.verdict == "inconclusive"


def test_without_io_uring_its_claims_are_not_measured_and_its_figures_say_why(
    monkeypatch, tmp_path
):
    # a kernel or sandbox that refuses io_uring: nothing io_uring-based runs, nothing fails
    from labkit import live
    from labkit.results import live_figures

    refused = {"available": False, "reason": "io_uring_setup: EPERM (test)", "kernel": "x"}
    monkeypatch.setattr(live, "probe", lambda: refused)  # noqa: E731 - a stand-in probe
    monkeypatch.setenv("LABKIT_OUT", str(tmp_path))
    s = claims.new_session(quick=True)
    out = s.run("R1.live_tail_over_head")
    assert out.estimate is None and out.verdict == "not measured"
    assert "io_uring unavailable: io_uring_setup: EPERM (test)" in out.row["reason"]
    for cid in ("R3.ubuf_gain", "R3.read_gain", "R3.cpu_ratio"):  # some not comparable anyway
        out = s.run(cid)
        assert out.estimate is None and out.verdict in ("not measured", "not comparable")
    for name in ("live-uring-qd1", "R1-live-head-tail", "live-uring-peak"):
        fig = claims.figure(name)
        assert "not measured: io_uring unavailable" in fig.axes[0].texts[0].get_text()
    assert live_figures.head_tail(s).empty and live_figures.qd1(s)[0].empty
    assert live_figures.peak(s).empty and live_figures.peak_ratios(s).empty
    assert "kiops_per_core" in live_figures.peak(s).columns


def test_r2_live_figures_are_computed_once_per_rows(monkeypatch):
    """The three live R2 claims and their reasons read one loop: its seven bootstraps run
    once per rows and confidence, not once per caller."""
    import pandas as pd

    from labkit.results.r2 import claims as r2_claims

    calls = []

    def fake(d, names, confidence):
        calls.append((len(d), confidence))
        return {"saved_share": confidence}

    monkeypatch.setattr(r2_claims, "proxy_corrected", fake)
    r2_claims._proxy_corrected.cache_clear()
    rows = pd.DataFrame({"target": ["zero", "zero", "tmpfs"], "ns_per_op": [1.0, 2.0, 3.0]})
    same = rows.copy()
    assert r2_claims._r2(rows, 0.95) is r2_claims._r2(same, 0.95)  # equal content: one computation
    r2_claims._r2(rows, 0.99)
    r2_claims._r2(rows.assign(ns_per_op=[1.0, 2.5, 3.0]), 0.95)
    assert calls == [(2, 0.95), (2, 0.99), (2, 0.95)]
    r2_claims._proxy_corrected.cache_clear()  # no fake figures left for later tests
