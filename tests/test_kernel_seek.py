"""R1 at the source: the real iov_iter_advance() timed, as a row of the summary (clock-free).

Nothing here asserts a time: the row's declaration, its parameters per mode, why it is
not measured (with the command that fixes it), the estimate on made-up rows, and the
shape of a short real run (skipped, with the command, where the oracle is not built).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from labkit import claims
from labkit.claims import schedule
from labkit.claims.engine import Measured, Session
from labkit.kernelsrc import build as kbuild
from labkit.kernelsrc import seek
from labkit.measure import ledgers
from labkit.measure.sequential import FULL_MIN_RUNS
from labkit.results.r1 import claims as r1_claims

pytestmark = pytest.mark.slow  # make test-fast leaves it out

CLAIM = "R1.kernel_ns_per_page"
MISSING = kbuild.is_available()
BUILT = MISSING is None and kbuild.cached("6.12") is not None


def test_the_row_is_a_timed_claim_of_r1_measured_in_the_phase():
    c = claims.get(CLAIM)
    assert (c.result, c.unit, c.side) == ("R1", "ns", "model")
    assert c.experiment is r1_claims.KERNEL_SEEK and c.experiment.id == "R1.kernel_seek"
    assert "real code" in c.label and "6.12" in c.label and "-O2" in c.label
    assert schedule.timed(c.experiment)
    assert any(e is r1_claims.KERNEL_SEEK for e in schedule.experiments())
    assert c.experiment.decided_by is None  # nothing to decide against: not comparable
    assert c.experiment.results == "kernel-source-seek"


def test_it_is_shown_beside_the_2019_figure_but_never_judged_against_it():
    band, walk = claims.get(CLAIM).band(), claims.get("R1.ns_per_page").band()
    assert band is not None and walk is not None
    assert (band.low, band.high, band.published) == (walk.low, walk.high, walk.published)
    for quick in (True, False):
        found = ledgers.mismatches(CLAIM, quick)
        assert [m.aspect for m in found] == ["code"]
        assert "2019" in found[0].published and "6.12" in found[0].labkit


def test_quick_mode_measures_less_and_never_builds():
    q, f = r1_claims.KernelSeek.quick(), r1_claims.KernelSeek.full()
    assert (q.eras, q.opts, q.build) == (("6.12",), ("O2",), False)
    assert set(f.eras) == {"6.1", "6.12"} and set(f.opts) == set(kbuild.OPT_LEVELS) and f.build
    assert r1_claims.kernel_seek_budget(True).max_runs == 3
    assert r1_claims.kernel_seek_budget(False).min_runs == FULL_MIN_RUNS


def _no_compiler(monkeypatch):
    real = kbuild.shutil.which
    monkeypatch.setattr(kbuild.shutil, "which", lambda t: None if t == "gcc" else real(t))


@pytest.mark.parametrize("quick", [True, False])
def test_not_measured_with_the_install_command_when_the_oracle_cannot_be_built(
    quick, monkeypatch, tmp_path
):
    _no_compiler(monkeypatch)
    monkeypatch.setenv("LABKIT_OUT", str(tmp_path))
    p = r1_claims.KernelSeek.quick() if quick else r1_claims.KernelSeek.full()
    why = r1_claims.kernel_seek_unavailable(p)
    assert "gcc" in why and kbuild.INSTALL_HINT in why
    out = Session(quick).run(CLAIM)
    assert out.estimate is None and out.row["model"] is None and out.row["estimate"] is None
    assert (
        out.row["reason"].startswith("not measured: ") and kbuild.INSTALL_HINT in out.row["reason"]
    )


@pytest.mark.skipif(MISSING is not None, reason=f"kernel oracle: {MISSING}")
def test_quick_mode_names_the_build_command_when_the_oracle_is_not_built(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_KERNEL_CACHE", str(tmp_path / "empty"))

    def no_build(*a, **k):
        raise AssertionError("asking why must not build")

    monkeypatch.setattr(kbuild, "_build", no_build)
    assert kbuild.cached("6.12") is None
    why = r1_claims.kernel_seek_unavailable(r1_claims.KernelSeek.quick())
    assert why.startswith("quick mode") and "labkit kernel build" in why
    assert r1_claims.kernel_seek_unavailable(r1_claims.KernelSeek.full()) == ""  # it builds
    assert not (tmp_path / "empty" / "builds").exists()


def test_time_advance_refuses_bad_input_before_running_anything():
    with pytest.raises(KeyError, match="optimisation level"):
        seek.time_advance("6.12", "O3")
    with pytest.raises(ValueError, match="pages"):
        seek.time_advance("6.12", "O2", pages=(0, 1 << 18))
    with pytest.raises(ValueError, match="pages"):
        seek.time_advance("6.12", "O2", pages=())
    with pytest.raises(ValueError, match="iters"):
        seek.time_advance("6.12", "O2", iters=0)
    with pytest.raises(KeyError):
        seek.time_advance("5.2", "O2")
    with pytest.raises(ValueError, match="runs"):
        seek.measure_runs(["6.12"], ["O2"], 0)


def _rows(slopes: dict[tuple[str, str], float], runs: int = 3, session: str = "") -> pd.DataFrame:
    """Made-up timings: ns = 5 + slope * pages (+ a small per-run offset), every offset."""
    rows = [
        {"run": k, "era": era, "opt": opt, "pages_skipped": p, "ns_per_op": 5 + s * p + 0.1 * k}
        for k in range(runs)
        for (era, opt), s in slopes.items()
        for p in seek.PAGES
    ]
    df = pd.DataFrame(rows)
    return df.assign(session=session) if session else df


def test_the_estimate_is_the_slope_of_its_era_and_level():
    rows = _rows({("6.12", "O2"): 0.9, ("6.12", "defconfig"): 0.5, ("6.1", "O2"): 2.0})
    for (era, opt), want in {("6.12", "O2"): 0.9, ("6.12", "defconfig"): 0.5}.items():
        est = r1_claims.kernel_ns_per_page(era, opt, rows, 0.95)
        assert math.isclose(est.estimate, want, rel_tol=1e-9) and est.n_runs == 3
    assert math.isclose(claims.get(CLAIM).estimate(rows, 0.95).estimate, 0.9, rel_tol=1e-9)
    with pytest.raises(KeyError, match="6.1 at defconfig"):
        r1_claims.kernel_ns_per_page("6.1", "defconfig", rows, 0.95)


def test_slopes_pool_sessions_and_the_table_sets_the_real_code_beside_the_model():
    p = r1_claims.KernelSeek.full()
    a = _rows({("6.12", "O2"): 0.9, ("6.1", "O2"): 2.0}, session="s1")
    b = _rows({("6.12", "O2"): 1.1, ("6.1", "O2"): 2.0}, session="s2")
    m = Measured(r1_claims.KERNEL_SEEK, p, pd.concat([a, b], ignore_index=True), 0.95, None)
    got = r1_claims.slopes(m)
    assert set(got) == {("6.12", "O2"), ("6.1", "O2")}
    assert math.isclose(got[("6.12", "O2")].estimate, 1.0, rel_tol=1e-9)  # mean of sessions
    assert got[("6.12", "O2")].n_sessions == 2
    nothing = Measured(
        r1_claims.SEEK, r1_claims.Model.quick(), pd.DataFrame(), 0.95, None, "no model here"
    )
    table = r1_claims.comparison(m, nothing)
    assert list(table["code"]) == ["real 6.12", "real 6.1"]  # the headline first
    assert list(table.columns) == [
        "code", "level", "ns_per_page", "ci_low", "ci_high", "runs", "instructions_per_page",
    ]  # fmt: skip
    unmeasured = Measured(r1_claims.KERNEL_SEEK, p, pd.DataFrame(), 0.95, None, "no oracle")
    assert r1_claims.slopes(unmeasured) == {} and r1_claims.comparison(unmeasured, nothing).empty


@pytest.mark.skipif(not BUILT, reason=f"kernel oracle not built: labkit kernel build ({MISSING})")
def test_a_short_real_run_has_the_rows_the_claim_reads():
    p = r1_claims.KernelSeek.quick().replace(iters=2)
    df = r1_claims.measure_kernel_seek(p, 2)
    assert list(df.columns) == ["run", "era", "opt", "pages_skipped", "ns_per_op"]
    assert sorted(df["run"].unique()) == [0, 1]
    assert set(df["era"]) == {"6.12"} and set(df["opt"]) == {"O2"}
    assert sorted(df.loc[df["run"] == 0, "pages_skipped"]) == sorted(seek.PAGES)
    assert np.isfinite(df["ns_per_op"]).all()
    est = claims.get(CLAIM).estimate(df, 0.95)
    assert est.n_runs == 2 and math.isfinite(est.estimate)


@pytest.mark.skipif(MISSING is not None, reason=f"kernel oracle: {MISSING}")
def test_timing_6_12_does_not_need_the_gpl_patches_of_6_1_ubuf(monkeypatch, tmp_path):
    """A wheel install has no kernel/gpl/ folder: 6.1+ubuf cannot be built, 6.12 still can."""
    monkeypatch.setattr(kbuild, "GPL_DIR", tmp_path)
    assert "kernel/gpl" in (kbuild.is_available() or "")
    assert kbuild.is_available(["6.12", "6.1"]) is None
    assert r1_claims.kernel_seek_unavailable(r1_claims.KernelSeek.full()) == ""


def test_a_named_tree_that_is_no_kernel_tree_is_a_reason_not_a_crash(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_KERNEL_SRC", str(tmp_path))
    why = r1_claims.kernel_seek_unavailable(r1_claims.KernelSeek.full())
    assert "LABKIT_KERNEL_SRC" in why and "not a kernel tree" in why
