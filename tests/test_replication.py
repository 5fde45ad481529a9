"""The spread between reproductions (labkit.measure.stats.between_reproductions) and the
bridge from a share of time to instructions (labkit.measure.bridge)."""

import math

import pytest

from labkit.measure import bridge, stats


def test_a_three_session_interval_is_a_t_with_2_df():
    se = stats.se_of_interval(3.08, 5.0, 2)
    assert se == pytest.approx(0.96 / 4.3027, rel=1e-3)
    assert stats.se_of_interval(3.08, 5.0, None) == pytest.approx(0.96 / 1.96, rel=1e-3)
    with pytest.raises(ValueError):
        stats.se_of_interval(5.0, 3.0, 2)


def test_reproductions_that_agree_beyond_their_intervals_have_no_spread_between_them():
    r = stats.between_reproductions([4.0, 4.1, 3.9], [0.5, 0.5, 0.5])
    assert r.pooled.tau == 0.0 and r.pooled.estimate == pytest.approx(4.0)
    assert r.pred_low < r.pooled.ci_low < 4.0 < r.pooled.ci_high < r.pred_high


def test_reproductions_that_disagree_widen_the_prediction_interval():
    tight = stats.between_reproductions([4.0, 4.1, 3.9, 4.05], [0.1] * 4)
    spread = stats.between_reproductions([3.0, 5.5, 3.7, 5.8], [0.1] * 4)
    assert spread.pooled.tau > 1.0 > tight.pooled.tau
    assert spread.pred_high - spread.pred_low > 5 * (tight.pred_high - tight.pred_low)
    assert "over 4 reproductions" in spread.sentence("ns")
    two = stats.between_reproductions([4.0, 5.0], [0.1, 0.1])
    assert math.isnan(two.pred_low)
    with pytest.raises(ValueError):
        stats.between_reproductions([4.0], [0.1])


def test_the_bridge_needs_its_measured_inputs():
    empty = bridge.Bridge(None, None, None)
    assert len(bridge.missing(empty)) == 2
    with pytest.raises(ValueError, match="I_call"):
        bridge.instruction_band(0.025, 0.035, empty)
    b = bridge.Bridge(2000.0, 0.8, 1.25, "synthetic")
    assert bridge.missing(b) == []
    lo, hi = bridge.instruction_band(0.025, 0.035, b)
    assert (lo, hi) == pytest.approx((0.025 * 2000 / 1.25, 0.035 * 2000 / 0.8))
    assert bridge.share_band(0.025, 0.035, b) == pytest.approx((0.025 / 1.25, 0.035 / 0.8))
    with pytest.raises(ValueError, match="low < high"):
        bridge.instruction_band(0.035, 0.025, b)
