"""The statistics the gate and the paired rule share (:mod:`commcheck.analysis.stats`), on data
made here from fixed seeds: the rule's outcomes, the margin that never holds with a
regression, the slope fitted the same whichever launch of a pair came first, the interval
that inverts the exact test and agrees with the decision of a few tests, the spending that
sums to alpha."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from commcheck.analysis import stats

T, M = math.log1p(0.02), math.log1p(0.05)


@pytest.mark.parametrize('low,high,accept,outcome', [
    (0.03, 0.08, None, stats.WORSE), (-0.01, 0.01, None, stats.SAME),
    (-0.08, -0.03, None, stats.BETTER), (0.01, 0.08, None, stats.UNKNOWN),
    # a margin: not slower by more than 5 % passes whatever the better end says
    (-0.09, 0.04, M, stats.SAME), (0.03, 0.045, M, stats.SAME),
    # slower beyond the margin fails; beyond the threshold but not the margin: go on
    (0.055, 0.09, M, stats.WORSE), (0.03, 0.08, M, stats.UNKNOWN),
    (-0.08, -0.03, M, stats.BETTER),
])
def test_the_rule_with_and_without_a_margin(low, high, accept, outcome):
    assert stats.decide(low, high, T, accept=accept) == outcome


def test_pass_and_fail_never_both_hold():
    """With a margin, WORSE needs the better end beyond max(threshold, margin) and SAME the
    worse end below the margin: on a grid of intervals and of margins on either side of the
    threshold, never both conditions at once (the rule returns one outcome; here the two
    conditions are checked as written)."""
    grid = np.linspace(-0.2, 0.2, 41)
    for accept in (0.01, T, M, 0.2):
        for low in grid:
            for high in grid[grid >= low]:
                fails = low > max(T, accept)
                passes = high < accept
                assert not (fails and passes)
                out = stats.decide(low, high, T, accept=accept)
                assert (out == stats.WORSE) == fails
                assert out in (stats.SAME, stats.BETTER) or not passes


def test_the_pair_slope_does_not_depend_on_which_launch_came_first():
    rng = np.random.default_rng(1)
    dx = rng.normal(0, 0.2, 15)
    dy = 0.6 * dx + rng.normal(0, 0.03, 15)
    fit = stats.PairSlope(dx, dy)
    flip = np.where(rng.random(15) < 0.5, -1.0, 1.0)
    swapped = stats.PairSlope(dx * flip, dy * flip)
    assert fit.slope(0.0) == pytest.approx(0.6, abs=0.1)
    for c in (0.0, 0.02, -0.05):
        # under c the points are (dx, dy - c): swapping a pair's order mirrors that point
        assert stats.PairSlope(dx * flip, (dy - c) * flip).slope(0.0) == pytest.approx(
            fit.slope(c), abs=1e-12)
    assert swapped.slope(0.0) == pytest.approx(fit.slope(0.0), abs=1e-12)


def test_the_slope_is_clipped_to_the_band_the_rules_admit():
    dx = np.linspace(-0.3, 0.3, 12)
    assert stats.PairSlope(dx, 5 * dx).slope(0.0) == stats.MAX_SLOPE
    assert stats.PairSlope(dx, -dx).slope(0.0) == 0.0
    assert stats.theil_sen([1, 2, 3, 4, 5], [5, 4, 3, 2, 1], 0.95)[0] == 0.0
    assert stats.theil_sen([1, 1, 1], [1, 2, 3], 0.95) == (1.0, 0.0, stats.MAX_SLOPE)


def test_a_fixed_slope_gives_the_walsh_interval_and_the_test_inverts_it():
    """With the slope fixed (the ratio: 1), the interval is the exact signed-rank interval of
    d_y - d_x; each value outside it is one scipy's exact test rejects."""
    rng = np.random.default_rng(3)
    dx, dy = rng.normal(0, 0.1, 14), rng.normal(0.04, 0.03, 14)
    level = 1 - 0.05 / 3
    est, low, high, slope = stats.adjusted_interval(dx, dy, level, slope=1.0)
    assert (est, low, high) == stats.walsh_interval(dy - dx, level) and slope == 1.0
    for c in np.linspace(low - 0.05, high + 0.05, 101):
        if min(abs(c - low), abs(c - high)) < 1e-9:
            continue
        p = scipy_stats.wilcoxon(dy - dx - c, method='exact').pvalue
        assert (not low <= c <= high) == (p < 1 - level), (c, p)
    # the tests the bisection runs reject just outside it, and its coarse form holds it
    test = stats.PairTest(dx, dy, 1.0)
    assert test.side(low - 1e-6, level) == 1 and test.side(high + 1e-6, level) == -1
    assert test.side(low + 1e-6, level) == 0 == test.side(high - 1e-6, level)
    coarse = stats.adjusted_interval(dx, dy, level, slope=1.0, rounds=0, probes=(T, -T))
    assert coarse[1] <= low and coarse[2] >= high


@pytest.mark.parametrize('seed', range(12))
def test_a_few_tests_decide_as_the_whole_interval_does(seed):
    """The simulation decides on the tests at the thresholds alone (rounds=0); commcheck
    upgrade bisects between them for the interval it prints: both decide alike."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 40))
    dx = rng.normal(0, 0.15, n)
    dy = rng.uniform(0, 1.2) * dx + rng.normal(rng.choice([0.0, 0.03, 0.06]), 0.04, n)
    probes = (T, -T, M)
    level = 1 - 0.05 / 3
    coarse = stats.adjusted_interval(dx, dy, level, probes=probes, rounds=0)
    fine = stats.adjusted_interval(dx, dy, level, probes=probes)
    for accept in (None, M):
        assert stats.decide(*coarse[1:3], T, accept=accept) == \
            stats.decide(*fine[1:3], T, accept=accept)
    assert fine[1] <= fine[0] <= fine[2]


def test_too_few_pairs_have_no_interval():
    level = 1 - 0.05 / 6
    assert stats.min_pairs(level) == 8
    assert stats.adjusted_interval(np.zeros(7), np.ones(7), level) is None
    assert stats.walsh_interval([0.1] * 7, level) is None


def test_the_looks_spend_alpha_and_no_more():
    plan = stats.looks(12, 60)
    assert plan == [12, 18, 27, 41, 60]
    shares = [stats.look_share(b, n, 60) for b, n in zip([0, *plan], plan)]
    assert all(s > 0 for s in shares) and sum(shares) == pytest.approx(1.0)
    assert shares[0] == pytest.approx((12 / 60) ** stats.SPENDING)
    # stopped early by the budget: what was spent is less than alpha
    assert sum(shares[:3]) < 1.0
    assert stats.looks(12, 12) == [12] and stats.look_share(0, 12, 12) == 1.0


def test_pairs_needed_follow_the_spread_and_the_distance():
    assert stats.needed(10, 0.04, 0.02, 1000) == 40
    assert stats.needed(10, 0.01, 0.02, 1000) == 11          # never fewer than one more
    assert stats.needed(10, 0.5, 0.001, 1000) == 1001        # "more than 1000"
    assert stats.needed(10, 0.04, 0.0, 1000) is None         # on the boundary
    assert stats.needed(10, 0.01, 0.02, 1000, least=16) == 16    # what the test needs at all
    assert stats.needed(10, 0.5, 0.001, 1000, least=16) == 1001
    assert stats.distance(0.03, T) == pytest.approx(0.03 - T)
    assert stats.distance(0.03, T, M) == pytest.approx(M - 0.03)
    assert stats.distance(0.08, T, M) == pytest.approx(0.08 - M)
