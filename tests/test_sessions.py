"""The session as the unit of replication: random-effects pooling over sessions (and hosts).

Clock-free: simulated tables with a persistent per-session offset, seeded.
"""

import math
import re

import numpy as np
import pandas as pd
import pytest

from labkit.measure import stats
from labkit.measure.stats import Estimate, Sample, bootstrap
from labkit.report.summary import scope_text

pytestmark = pytest.mark.slow  # make test-fast leaves it out


def _mean(a, axis=-1):
    return np.nanmean(a, axis=axis)


def _session(rng, offset, runs=3, batches=8, truth=5.0, sd_run=0.1):
    vals, labels = [], []
    for r in range(runs):
        m = truth + offset + rng.normal(0, sd_run)
        vals += list(m + rng.normal(0, 0.5, batches))
        labels += [r] * batches
    return bootstrap([Sample.of(vals, labels)], _mean, quantity="x", n_resamples=300)


def test_coverage_with_a_persistent_session_offset():
    """One session's interval over runs misses the long-run mean; pooled over four
    sessions it covers it about 95% of the time."""
    rng = np.random.default_rng(23)
    reps, one, pooled, widths = 120, 0, 0, []
    for _ in range(reps):
        per = [_session(rng, rng.normal(0, 0.8)) for _ in range(4)]
        one += per[0].ci_low <= 5.0 <= per[0].ci_high
        p = stats.pool(per)
        pooled += p.ci_low <= 5.0 <= p.ci_high
        widths.append(p.ci_high - p.ci_low)
        assert p.n_sessions == 4 and p.n_runs == 12 and math.isfinite(p.between_session)
    assert one / reps < 0.6  # the old interval: one session's runs
    assert 0.88 <= pooled / reps <= 1.0
    assert np.median(widths) < 4  # not covering by being useless (offset SD 0.8)


def test_no_session_offset_pools_to_a_narrow_interval():
    rng = np.random.default_rng(5)
    per = [_session(rng, 0.0, runs=6) for _ in range(3)]
    p = stats.pool(per)
    assert p.ci_low <= 5.0 <= p.ci_high
    assert p.ci_high - p.ci_low < 1.0


def test_random_effects_edge_cases():
    one = stats.random_effects([3.0], [0.5])
    assert one.k == 1 and one.estimate == 3.0 and math.isnan(one.tau)
    assert one.ci_low == pytest.approx(3.0 - 1.96 * 0.5, rel=1e-3)
    exact = stats.random_effects([48.0, 48.0, 47.0], [0.0, 0.0, 0.0])
    assert exact.ci_low < 47.67 < exact.ci_high and exact.i2 == 1.0
    same = stats.random_effects([2.0, 2.0], [0.0, 0.0])
    assert same.ci_low == same.ci_high == 2.0
    # far apart with small SEs: tau takes the spread, the interval widens
    apart = stats.random_effects([1.3, 2.9], [0.1, 0.05])
    assert apart.tau > 0.5 and apart.ci_low < 1.3 and apart.ci_high > 2.9 and apart.i2 > 0.9
    for bad in (([], []), ([1.0], [0.1, 0.2]), ([math.nan], [0.1]), ([1.0], [-1.0])):
        with pytest.raises(ValueError):
            stats.random_effects(*bad)
    with pytest.raises(ValueError):
        stats.pool([])


def test_sessions_pool_with_equal_weights():
    """One session whose few runs agreed does not outweigh the others: the pooled
    interval over sessions is the t interval on the sessions' figures (computed here
    from the three figures alone), whatever their own intervals say."""
    figures = [735_202.0, 870_870.0, 1_010_305.0]  # the walk-2019 tail seek, 2026-12-03
    per = [
        Estimate("ns", f, lo, hi, 0.95, "m", 4, 8, 1.0, 1.0)
        for f, lo, hi in zip(
            figures, [725_019, 627_174, 590_151], [754_199, 1_421_616, 1_533_537], strict=True
        )
    ]
    p = stats.pool(per)
    mean = sum(figures) / 3
    sd = math.sqrt(sum((f - mean) ** 2 for f in figures) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, 2 df)
    assert p.estimate == pytest.approx(mean)
    assert (p.ci_low, p.ci_high) == pytest.approx((mean - half, mean + half))
    assert p.between_session == pytest.approx(sd) and p.n_sessions == 3 and p.n_runs == 12
    # inverse-variance weights would have sat on the first session
    re = stats.random_effects(figures, [stats.se_of(e) for e in per])
    assert re.ci_high < figures[1] < p.ci_high
    with pytest.raises(ValueError):
        stats.cluster([1.0])


def test_over_sessions_from_a_table_and_scope_text():
    rng = np.random.default_rng(9)
    rows = []
    for s in range(3):
        off = rng.normal(0, 1)
        for run in range(3):
            for rep in range(6):
                base = 100 + off + rng.normal(0, 0.2)
                rows.append((s, run, rep, "a", base + 5 + rng.normal(0, 0.1)))
                rows.append((s, run, rep, "b", base + rng.normal(0, 0.1)))
    df = pd.DataFrame(rows, columns=["session", "run", "repeat", "variant", "ns_per_op"])
    pooled, per = stats.over_sessions(df, lambda d: stats.difference(d, "a", "b"))
    assert len(per) == 3 and pooled.n_sessions == 3
    assert pooled.ci_low <= 5.0 <= pooled.ci_high
    text = scope_text(pooled.n_sessions, "AMD EPYC fam 25", pooled.between_session)
    assert text.startswith("on AMD EPYC fam 25, over 3 sessions (between-session SD")
    assert "3 sessions" in str(pooled)
    single, _ = stats.over_sessions(
        df.drop(columns="session"), lambda d: stats.difference(d, "a", "b")
    )
    assert single.n_sessions == 1
    assert "one session" in scope_text(single.n_sessions)
    assert isinstance(single, Estimate)


def test_pool_summaries_over_sessions():
    from labkit.report.pooled import pool_summaries

    cols = ["result", "quantity", "unit", "estimate", "ci_low", "ci_high", "n_runs"]
    cols += ["band_low", "band_high", "verdict", "method", "reason"]

    def table(share, gain):
        return pd.DataFrame(
            [
                (
                    "R2",
                    "time saved",
                    "%",
                    share,
                    share - 0.2,
                    share + 0.2,
                    6,
                    2.5,
                    3.5,
                    "x",
                    "m",
                    "r",
                ),
                (
                    "R3",
                    "gain",
                    "%",
                    gain,
                    gain - 1,
                    gain + 1,
                    6,
                    5.0,
                    6.8,
                    "not comparable",
                    "m",
                    "r",
                ),
                (
                    "R1",
                    "count",
                    "instructions",
                    48.0,
                    48.0,
                    48.0,
                    1,
                    1.0,
                    math.inf,
                    "reproduced",
                    "m",
                    "r",
                ),
            ],
            columns=cols,
        )

    # two sessions that each "reproduce" alone but disagree: the pooled interval widens
    t = pool_summaries([table(2.7, 13.0), table(3.3, 19.0)], "host X")
    r = t.set_index("quantity")
    assert r.loc["time saved", "n_sessions"] == 2 and r.loc["time saved", "n_runs"] == 12
    assert r.loc["time saved", "ci_low"] < 2.5 and r.loc["time saved", "verdict"] == "inconclusive"
    assert "pooled over 2 sessions" in r.loc["time saved", "reason"]
    assert r.loc["time saved", "scope"].startswith("on host X, over 2 sessions")
    assert r.loc["gain", "verdict"] == "not comparable"  # stays so; figure still pooled
    assert r.loc["count", "verdict"] == "reproduced" and r.loc["count", "estimate"] == 48.0
    with pytest.raises(ValueError):
        pool_summaries([])


def test_reproduce_sessions_end_to_end(tmp_path, capsys):
    """labkit reproduce --sessions 2: the measuring phase runs twice, the notebook reads its
    rows instead of measuring, and the claim's row is pooled over the 2 sessions with its
    scope; the bundle says 2 stats.  (A small notebook and one model experiment stand in
    for the real ones, quick mode, 2 runs a session.)"""
    import functools

    import nbformat

    from labkit.claims import schedule
    from labkit.report import bundle
    from labkit.results.r1 import claims as r1_claims
    from labkit.run import reproduce

    nbs = tmp_path / "nbs"
    nbs.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    params = nbformat.v4.new_code_cell("QUICK = None")
    params.metadata["tags"] = ["parameters"]
    cell = (
        "from labkit import claims\n"
        "claims.start(QUICK)\n"
        "out = claims.run('R1.ns_per_page')\n"
        "print('STOPPED', out.measured.stopped())\n"
        "print('SESSIONS', out.measured.n_sessions, out.estimate.n_sessions)"
    )
    nb.cells = [params, nbformat.v4.new_code_cell(cell)]
    nbformat.write(nb, nbs / "01-one.ipynb")
    out = tmp_path / "out"
    plan = [(r1_claims.SEEK, r1_claims.SEEK.params.for_mode(True))]
    rc = reproduce.main(
        measure=functools.partial(schedule.phase, plan=plan),
        quick=True,
        out=str(out),
        notebooks=str(nbs),
        progress=False,
        sessions=2,
        pause=0.0,
    )
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "the measuring phase took" in text
    executed = (out / "notebooks" / "01-one.ipynb").read_text()
    # read, not measured: the phase's note, with each session's measuring seconds
    assert re.search(r"STOPPED session 1: 2 runs in \d+ s; session 2: 2 runs in \d+ s", executed)
    assert "SESSIONS 2 2" in executed
    row = pd.read_csv(out / "summary.csv").set_index("claim").loc["R1.ns_per_page"]
    assert row["scope"].endswith("over 2 sessions (noise: the SD between sessions)")
    assert row["noise"] > 0  # the between-session SD, beside the figure
    assert row["n_runs"] == 4
    assert bundle.load(out / "bundle").manifest["sessions"] == 2


def test_reproduce_refuses_sessions_without_a_measuring_phase(capsys):
    from labkit.run import reproduce

    assert reproduce.main(quick=True, sessions=2) == 2
    assert "--sessions needs the measuring phase" in capsys.readouterr().err
    assert reproduce.main(measure=print, quick=True, sessions=0) == 2
