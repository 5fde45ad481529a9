"""The measuring phase: runs of different experiments interleaved, the rows handed to the
notebooks' sessions, sessions pooled.

The order of (experiment, run) pairs is clock-free; the looks' time budget runs on a
fake clock.  Only the end-to-end test measures (a model experiment, quick mode, 2 runs a
session).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import pandas as pd
import pytest

from labkit.claims import engine, schedule, stored
from labkit.measure import sequential
from labkit.measure.sequential import Looks
from labkit.measure.stats import Estimate
from labkit.results.r1 import claims as r1_claims


def _est(x: float, half: float, n: int) -> Estimate:
    return Estimate("x", x, x - half, x + half, 0.95, "test", n, 4, 0.01, 0.1)


def _job(name: str, calls: list, *, runs: int = 0, decide_at: int = 0) -> schedule.Job:
    """A job that records its runs in ``calls``; with ``decide_at``, its looks decide once
    that many runs are in (the interval narrows inside the band), else runs ``runs``."""
    count = itertools.count()

    def one_run() -> pd.DataFrame:
        k = next(count)
        calls.append((name, k))
        return pd.DataFrame({"value": [float(k)] * 3, "run": [7] * 3})

    if not decide_at:
        return schedule.Job(name, one_run, None, runs)

    def analyse(rows: pd.DataFrame, confidence: float) -> Estimate:
        n = rows["run"].nunique()
        return _est(1.0, 0.1 if n >= decide_at else 5.0, n)

    looks = Looks(analyse, (0.5, 1.5), min_runs=2, max_runs=8, budget_s=1e9)
    return schedule.Job(name, one_run, looks)


def test_interleave_is_round_robin_and_extra_runs_interleave_too():
    """Run k of every experiment, then run k+1; the looks' extra runs are interleaved among
    the experiments still undecided, and a decided one stops."""
    calls: list = []
    jobs = [
        _job("A", calls, runs=2),
        _job("B", calls, runs=3),
        _job("C", calls, decide_at=4),
        _job("D", calls, decide_at=3),
    ]
    schedule.interleave(jobs, clock=itertools.count().__next__)
    names = [n for n, _ in calls]
    assert names == list("ABCDABCDBCDC")
    # each job's runs in order, and numbered 0, 1, 2, ... in its rows
    for j in jobs:
        assert [k for n, k in calls if n == j.name] == list(range(names.count(j.name)))
        assert sorted(j.data()["run"].unique()) == list(range(names.count(j.name)))
    seq = jobs[2].sequential()
    assert seq is not None and seq.stopped == "decided" and seq.n_runs == 4
    assert [h["n_runs"] for h in seq.history] == [2, 3, 4]
    assert jobs[0].sequential() is None


def test_each_job_is_timed_on_its_own_clock():
    """Time spent on other experiments does not count against a job's budget: with a
    clock that advances 1 s per reading, a job's seconds count its own runs only."""
    calls: list = []
    jobs = [_job("A", calls, runs=3), _job("B", calls, runs=1)]
    schedule.interleave(jobs, clock=itertools.count().__next__)
    assert jobs[0].seconds == 3 and jobs[1].seconds == 1


def test_looks_time_budget_stops_additions():
    """An undecided job stops at its time budget (its own seconds), like until_decided."""
    calls: list = []
    job = _job("C", calls, decide_at=99)
    assert job.looks is not None
    job.looks.budget_s = 3.5  # 1 s a run on the fake clock: after 3 runs a 4th would end at 4 s
    schedule.interleave([job], clock=itertools.count().__next__)
    assert job.looks.stopped == "time budget" and job.looks.n_runs == 3


def test_timed_experiments_are_planned_once():
    exps = schedule.experiments()
    ids = [e.id for e in exps]
    assert len(ids) == len(set(ids))
    assert "R2.live_ab" in ids and "R3.live_peak" in ids and "R1.model_seek" in ids
    assert not [e for e in exps if schedule.timed(e) and "callgrind" in e.id]


def _seek_rows(session: str, runs: int, slope: float) -> pd.DataFrame:
    rows = []
    for r in range(runs):
        for off in (0, 1 << 20, 1 << 22):
            rows.append({"run": r, "offset": off, "session": session, "x": slope})
    return pd.DataFrame(rows)


def test_session_reads_the_stored_measurement(tmp_path, monkeypatch):
    """Under a reproduction with a measuring phase, a session takes the stored rows of an
    experiment instead of measuring it; in another mode or outside one, it does not."""
    p = r1_claims.SEEK.params.for_mode(True)
    data = _seek_rows("01-x", 2, 1.0)
    stored.write(
        tmp_path, True, ["01-x"], [(r1_claims.SEEK.id, p.key(), data, 0.99, "2 runs, noted")]
    )
    monkeypatch.setenv("LABKIT_OUT", str(tmp_path))
    s = engine.Session(quick=True)
    m = s.measure(r1_claims.SEEK)
    pd.testing.assert_frame_equal(m.data, data)
    assert m.confidence == 0.99 and m.stopped() == "2 runs, noted" and m.n_runs == 2
    # another mode: not this phase's rows
    assert stored.load(r1_claims.SEEK.id, p.key(), quick=False) is None
    # other parameters: not these rows
    assert stored.load(r1_claims.SEEK.id, p.replace(**_other(p)).key(), quick=True) is None
    monkeypatch.delenv("LABKIT_OUT")
    assert stored.load(r1_claims.SEEK.id, p.key(), quick=True) is None
    # a cleared phase hands nothing over
    stored.clear(tmp_path)
    assert stored.load(r1_claims.SEEK.id, p.key(), quick=True, out=tmp_path) is None


def _other(p) -> dict:
    """A change of one integer parameter of ``p``."""
    for k, v in p.to_json().items():
        if isinstance(v, int) and not isinstance(v, bool):
            return {k: v + 1}
    raise AssertionError("no integer parameter")


def test_rows_of_several_sessions_give_a_pooled_estimate():
    """Rows of 3 sessions: the claim's estimate is pooled over sessions (session on top),
    with the between-session spread; one session gives the session's own estimate."""
    from labkit.results.claim import Claim, Experiment

    def estimate(rows: pd.DataFrame, confidence: float) -> Estimate:
        x = float(rows["x"].mean())
        return Estimate("x", x, x - 0.1, x + 0.1, confidence, "t", rows["run"].nunique(), 3, 0, 0)

    exp = Experiment(
        "R9.fake", type(r1_claims.SEEK.params.quick()), lambda p, k: None, sequential.one_run
    )
    claim = Claim("R9.fake_claim", "fake", "ns", exp, estimate, lambda o: "")
    p = r1_claims.SEEK.params.quick()
    frames = [_seek_rows(f"0{k}-s", 2, v) for k, v in ((1, 1.0), (2, 1.4), (3, 1.2))]
    data = pd.concat(frames, ignore_index=True)
    m = engine.Measured(exp, p, data, 0.99, None)
    assert m.n_sessions == 3 and m.n_runs == 6
    est = m.estimate(claim)
    assert est is not None and est.n_sessions == 3 and est.confidence == 0.95
    assert est.estimate == pytest.approx(1.2)
    assert est.between_session == pytest.approx(0.2)
    assert est.ci_low < 1.0 and est.ci_high > 1.4  # t with 2 df on three figures
    one = engine.Measured(exp, p, frames[0], 0.99, None).estimate(claim)
    assert one is not None and one.n_sessions == 1 and one.confidence == 0.99
    assert math.isnan(one.between_session)


def test_combine_numbers_runs_across_sessions():
    exp, p = r1_claims.SEEK, r1_claims.SEEK.params.quick()
    ms = [
        [engine.Measured(exp, p, _seek_rows("01-a", 2, 1.0), 0.95, None)],
        [engine.Measured(exp, p, _seek_rows("02-b", 3, 1.0), 0.95, None)],
    ]
    ((exp_id, key, data, _, note, seconds),) = schedule._combine(ms)
    assert exp_id == exp.id and key == p.key()
    assert sorted(data["run"].unique()) == [0, 1, 2, 3, 4]
    assert data.groupby("session")["run"].nunique().to_dict() == {"01-a": 2, "02-b": 3}
    assert note.startswith("session 1: 2 runs; session 2: 3 runs")
    assert math.isnan(seconds)  # measured outside the phase: not timed
    timed = [
        [engine.Measured(exp, p, m[0].data, 0.95, None, seconds=s)]
        for m, s in zip(ms, (3, 4), strict=True)
    ]
    ((*_, note, seconds),) = schedule._combine(timed)
    assert seconds == 7 and note.startswith("session 1: 2 runs in 3 s; session 2: 3 runs in 4 s")
    # the full mode's result tables read the same entries (a 5-tuple unpacking broke it once)
    frames = schedule._result_frames(schedule._combine(timed))
    assert set(frames) == {"fixed-seek"} and len(frames["fixed-seek"]) == 5 * 3


def test_phase_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="sessions"):
        schedule.phase(tmp_path, True, sessions=0, plan=[])
    with pytest.raises(ValueError, match="pause"):
        schedule.phase(tmp_path, True, pause=-1, plan=[])


def test_session_runs_share_the_first_runs_out():
    """One session: the budget's first runs; N sessions: about two sessions' worth in all,
    at least 2 a session, never more than the first runs."""
    from labkit.measure.sequential import Budget

    full = Budget(min_runs=6, max_runs=48, budget_s=60.0)
    assert [schedule.session_runs(full, n) for n in (1, 2, 3, 4, 6, 10)] == [6, 6, 4, 3, 2, 2]
    quick = Budget(min_runs=2, max_runs=3, budget_s=8.0)
    assert [schedule.session_runs(quick, n) for n in (1, 3)] == [2, 2]
    once = Budget(min_runs=1, max_runs=1, budget_s=600.0)
    assert schedule.session_runs(once, 3) == 1
    assert schedule.default_sessions(True) == 1 and schedule.default_sessions(False) >= 3


def test_several_sessions_take_fixed_runs_and_one_run_sweeps_once():
    """With several sessions a deciding experiment gets its share of runs and no looks; an
    experiment of one run is measured in the first session only."""
    job = schedule.job_of(r1_claims.SEEK, r1_claims.SEEK.params.quick(), False, sessions=3)
    assert job.looks is None and job.runs == 4
    job1 = schedule.job_of(r1_claims.SEEK, r1_claims.SEEK.params.quick(), False, sessions=1)
    assert job1.looks is not None
    measured: list[str] = []

    def fake(exp):
        def measure(p, k):
            measured.append(exp.id)
            return _seek_rows("x", 1, 1.0).drop(columns="session")

        return measure

    plan = []
    for exp in (r1_claims.SEEK, r1_claims.SIZES):
        plan.append((dataclasses.replace(exp, measure=fake(exp)), exp.params.for_mode(True)))
    s = engine.Session(quick=True, name="02-later")
    ms = schedule.measure_session(s, plan, sessions=2, first=False)
    assert [m.experiment.id for m in ms] == [r1_claims.SEEK.id]
    assert measured == [r1_claims.SEEK.id, r1_claims.SEEK.id]
    assert set(ms[0].data["session"]) == {"02-later"} and ms[0].n_runs == 2
    assert s.measure(r1_claims.SEEK) is ms[0]  # put into the session


def test_no_measuring_phase_for_notebooks_that_do_not_read_claims(tmp_path):
    """The phase runs only when a notebook that uses ``claims`` is to run."""
    import nbformat

    from labkit.run import reproduce

    nbs = tmp_path / "nbs"
    nbs.mkdir()
    nb = nbformat.v4.new_notebook()
    spec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["kernelspec"] = spec
    params = nbformat.v4.new_code_cell("QUICK = None")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("print('no measuring here')")]
    nbformat.write(nb, nbs / "01-plain.ipynb")
    calls: list = []
    rep = reproduce.run(
        quick=True,
        out=tmp_path / "out",
        notebooks=nbs,
        progress=False,
        html_report=False,
        measure=lambda out, quick: calls.append((out, quick)),
    )
    assert rep.ok and calls == [] and rep.measured_s is None


def test_result_tables_are_named_once_per_experiment():
    """In full mode the phase saves each experiment's result table once (its ``results``
    name); an experiment without one saves none."""
    rows = _seek_rows("01-a", 2, 1.0)
    entries = [
        (r1_claims.SEEK.id, "k", rows, 0.95, ""),
        ("R3.live_tmpfs", "k", rows, 0.95, ""),  # no results name
    ]
    frames = schedule._result_frames(entries)
    assert list(frames) == [r1_claims.SEEK.results]
    pd.testing.assert_frame_equal(frames[r1_claims.SEEK.results], rows)
