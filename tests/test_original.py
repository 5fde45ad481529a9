"""Intervals from the original measurements' own runs (Welch), and the consistency test."""

import warnings

import numpy as np
import pytest
from scipy import stats as sps

from labkit.measure.stats import Estimate, welch_difference
from labkit.report.summary import consistency
from labkit.results.r1 import seed as r1_seed
from labkit.results.r2 import seed as r2_seed
from labkit.results.r3 import seed as r3_seed


def test_welch_matches_scipy():
    a, b = [1.84, 1.83, 1.86], [1.78, 1.79]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    e = welch_difference(a, b)
    assert e.ci_low == pytest.approx(ref.low) and e.ci_high == pytest.approx(ref.high)
    for bad in (([1.0], [1.0, 2.0]), ([1.0, 1.0], [2.0, 2.0]), ([1.0, np.nan], [1.0, 2.0])):
        with pytest.raises(ValueError):
            welch_difference(*bad)


def test_r2_original_interval_is_wide():
    """Two runs per arm: the saving's interval is about [-0.5, 6.5]%."""
    est = {**r2_seed.originals(), **r3_seed.originals()}
    share = est["R2.saved_share"]
    assert share.estimate == pytest.approx(100 * 0.055 / 1.835, rel=1e-9)
    assert share.ci_low == pytest.approx(-0.465, abs=0.01)
    assert share.ci_high == pytest.approx(6.459, abs=0.01)
    assert est["R2.saved_ns"].estimate == pytest.approx(5.5)
    r3 = est["R3.ubuf_gain"]
    assert 5.0 < r3.ci_low < r3.estimate < r3.ci_high < 6.8  # 8 + 8 samples: narrower
    assert "one published measurement per cell" in r1_seed.NO_INTERVAL


def _e(lo, hi):
    return Estimate("x", (lo + hi) / 2, lo, hi, 0.95, "m", 6, 10, 0.1, 0.1)


def test_consistency():
    orig = r2_seed.original("R2.saved_share")
    # the AMD EPYC figure of 2026-12-02: differs from the rounded band, not from the original
    assert consistency(_e(0.82, 1.86), orig).startswith("consistent")
    assert consistency(_e(7.0, 8.0), orig).startswith("outside")
    assert consistency(None, orig) == ""
