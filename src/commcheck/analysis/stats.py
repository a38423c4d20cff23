"""The statistics the gate (:mod:`commcheck.analysis.gate`, between sessions) and the paired
upgrade rule (:mod:`commcheck.analysis.paired`) share, public and in one place: the three
outcomes and the rule that decides them, the launches or pairs that would decide, the exact
signed-rank interval, the floor as a measured covariate (a slope fitted on the data, robust to
a regime switch) and the false-alarm budget of a sequential design.

All on log values with worse up (:func:`worse_up`), so a change is a ratio.

The floor as a covariate. A launch's log figure ``y`` and the log floor ``x`` of the same
launch; MPI's own cost adjusted by its floor is ``y - theta (x - mean x)`` (regression
adjustment, CUPED: Deng et al., WSDM 2013), ``theta`` the slope of ``y`` on ``x``. Dividing by
the floor is ``theta = 1``; the raw value ``theta = 0``. The slope is estimated on the data, and
clipped to [0, :data:`MAX_SLOPE`]: the gate has always read a machine's move as able to move
MPI's figure by anywhere from none to double the floor's move (:data:`MAX_SLOPE` is that band's
end), and a slope outside it fitted from a few launches is noise.

- Between sessions (the gate) the slope is the Theil-Sen slope of the baseline's launches
  (:func:`theil_sen`, Sen's interval with it): the median of the pairwise slopes, which a
  regime switch in a part of the launches moves by that part's share at most.
- In pairs (``commcheck upgrade``) the two launches of a pair run in a random order, so when
  the stacks do not differ the pair's vector (d_x, d_y) of log ratios new/old is as likely
  itself as its negative. :class:`PairSlope` fits the slope on the pairs' cloud made symmetric
  about the origin (Theil-Sen through the origin): a function of the pairs that does not change
  when any pair's order is swapped. So the residuals ``d_y - c - theta(c) d_x`` keep the signs
  of fair coins under the hypothesis "the change is c", and the signed-rank test of them stays
  exact, slope estimated or not: the interval (:func:`adjusted_interval`, the set of changes c
  the test does not reject) carries the slope's uncertainty without a bootstrap and without
  normality (``tests/unit/test_sequential.py`` proves the calibration on synthetic sessions).

Sequential looks (:func:`spent`): a fraction ``t^rho`` of the false-alarm budget alpha is spent
by the share ``t`` of the planned pairs (a power-family spending function, Lan and DeMets), and
each look's interval is at 1 - (what this look spends) / m. By the union bound the false-alarm
rate over all looks is at most alpha, whatever the dependence between the looks and whatever
the distribution of the pairs: the signed-rank interval needs no more.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from commcheck import experiments

#: The three outcomes of a comparison (:func:`decide`): different either way, same, or not.
WORSE, BETTER, SAME, UNKNOWN = 'worse', 'better', 'same', 'unknown'
#: The largest response of MPI's figure to its floor the rules admit: a machine's move of the
#: floor by d (log) can move MPI's figure by anywhere from 0 to 2d (docs/gate.md#the-model).
MAX_SLOPE = 2.0
#: The exponent of the spending function: by the share t of the planned pairs, alpha t^rho of
#: the false-alarm budget is spent (1: as the pairs come; 2: most of it kept for the last
#: looks). Chosen on the simulation of tests/unit/test_sequential.py: see docs/upgrade.md.
SPENDING = 2.0
#: How a floor adjusts its variable (the gate's and the paired rule's ``Settings.adjust``):
#: by a slope fitted on the data, or over the floor (slope 1).
SLOPE, RATIO = 'slope', 'ratio'


def worse_up(value: float, direction: str) -> float:
    """The log of a positive figure, signed so that worse is up (either direction)."""
    return math.log(value) if direction == experiments.LOWER_IS_BETTER else -math.log(value)


@dataclasses.dataclass
class Outcome:
    """One three-outcome comparison, in log units, signed so that positive is worse."""
    outcome: str
    change: float                   #: log of the ratio of medians, worse positive
    low: float
    high: float
    threshold: float
    level: str                      #: 'sessions', 'launches' or 'pairs': the unit
    needed: int | None = None       #: launches (sessions, pairs) that would decide
    p: float | None = None          #: Mann-Whitney U p-value; launches only
    slope: float | None = None      #: the floor's slope it was adjusted by; None: not adjusted

    @property
    def detectable(self) -> float:
        """Smallest worsening (a fraction) these samples could call DIFFERENT."""
        return math.expm1(self.threshold + (self.high - self.low) / 2)

    def interval(self, digits: int = 1) -> str:
        """The change and its interval in per cent, worse positive: ``+12.3% [+8.0%, +16.9%]``."""
        return (f'{math.expm1(self.change):+.{digits}%} [{math.expm1(self.low):+.{digits}%}, '
                f'{math.expm1(self.high):+.{digits}%}]')

    def as_dict(self) -> dict:
        return {'outcome': self.outcome, 'change': math.expm1(self.change),
                'ci_low': math.expm1(self.low), 'ci_high': math.expm1(self.high),
                'threshold': math.expm1(self.threshold), 'level': self.level,
                'needed': self.needed, 'p': self.p, 'detectable': self.detectable,
                'slope': self.slope}


def decide(low: float, high: float, threshold: float, rank_ok: bool = True,
           accept: float | None = None) -> str:
    """The rule, on an interval (``low``, ``high``) of the change (log, worse up): WORSE or
    BETTER when it lies wholly beyond the threshold (and the rank test agrees, where launches
    are the unit), SAME when wholly inside it, else UNKNOWN. ``compare``, ``upgrade``,
    ``history``'s and the report's change points use it and nothing else.

    With an acceptance margin ``accept`` (log), the worse side is judged against it: WORSE
    when the interval's better end lies beyond the larger of threshold and margin ("slower by
    more than the site accepts"), SAME when its worse end lies below the margin ("not slower
    by more than the margin", whatever its better end), BETTER as without. The two can never
    both hold: low > max(threshold, accept) >= accept > high is impossible."""
    if accept is not None:
        if low > max(threshold, accept) and rank_ok:
            return WORSE
        if high < -threshold and rank_ok:
            return BETTER
        return SAME if high < accept else UNKNOWN
    if low > threshold and rank_ok:
        return WORSE
    if high < -threshold and rank_ok:
        return BETTER
    if -threshold < low and high < threshold:
        return SAME
    return UNKNOWN


def distance(change: float, threshold: float, accept: float | None = None) -> float:
    """How far an estimate lies from the boundary its interval must clear to be decided."""
    if accept is None:
        return abs(abs(change) - threshold)
    if change < -threshold:
        return min(-threshold - change, accept - change)
    return abs(change - max(threshold, accept)) if change > accept else accept - change


def needed(n: int, half: float, margin: float, max_needed: int, least: int = 0) -> int | None:
    """n * (half-width / margin)^2: the launches (sessions, pairs) that would decide if the
    spread stays as observed; None on the boundary; at most ``max_needed + 1`` ("more than"),
    never fewer than ``least`` (what the test can decide on at all: the rank test's launches,
    the signed-rank interval's pairs)."""
    if margin <= 1e-12:
        return None
    return max(least, min(max_needed + 1, max(n + 1, math.ceil(n * (half / margin) ** 2))))


# ---- between sessions: launches of two sides, unpaired --------------------------------------

def min_rank_launches(alpha: float) -> int:
    """Launches a side (equal sides) at which Mann-Whitney can reach p < alpha at all."""
    n = 1
    while 2 / math.comb(2 * n, n) >= alpha:
        n += 1
    return n


def boot_interval(base: list[float], new: list[float], level: float, n_boot: int,
                  seed: int) -> tuple[float, float]:
    """(low, high) of the percentile bootstrap of median(new) - median(base), each side
    resampled on its own (unpaired), ``n_boot`` resamples from a generator seeded ``seed``. The
    same resampling and percentiles as ``scipy.stats.bootstrap(method='percentile',
    paired=False)`` with the same generator (``tests/unit/test_gate.py`` holds the two equal),
    without its per-call checks: the gate computes one or two per key variable, some hundreds
    for a suite."""
    rng = np.random.default_rng(seed)
    medians = []
    for side in (np.asarray(new), np.asarray(base)):
        picks = rng.integers(0, len(side), (n_boot, len(side)))
        medians.append(np.median(side[picks], axis=-1))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(medians[0] - medians[1], [tail, 100 - tail])
    return float(low), float(high)


def rank_p(base: list[float], new: list[float]) -> float:
    """Two-sided Mann-Whitney U p-value (1 where every value is equal)."""
    from scipy import stats  # here: scipy.stats costs a second to import; sessions need none
    if len(set(base) | set(new)) == 1:
        return 1.0
    return float(stats.mannwhitneyu(new, base, alternative='two-sided').pvalue)


# ---- the exact signed-rank interval -----------------------------------------------------------

@functools.lru_cache(maxsize=512)
def signed_rank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t), t = 0 .. n(n+1)/2, of the Wilcoxon signed-rank statistic of n pairs when
    each sign is a fair coin (exact: the distribution built rank by rank)."""
    prob = np.zeros(n * (n + 1) // 2 + 1)
    prob[0] = 1.0
    for rank in range(1, n + 1):
        shifted = np.zeros_like(prob)
        shifted[rank:] = prob[:-rank]
        prob = (prob + shifted) / 2
    out = np.cumsum(prob)
    out.setflags(write=False)
    return out


def min_pairs(level: float) -> int:
    """The fewest pairs whose signed-rank interval can reach ``level`` at all: 2 / 2^n below
    1 - level (all pairs one way is the least likely outcome under no difference)."""
    return max(1, math.ceil(math.log2(2 / (1 - level)) + 1e-12))


def _critical(n: int, level: float) -> int | None:
    """k: T+ <= k - 1 rejects "below", T+ >= N - k + 1 "above", each with probability at most
    (1 - level) / 2; None when n pairs cannot reach ``level``."""
    if n < min_pairs(level):
        return None
    k = int(np.searchsorted(signed_rank_cdf(n), (1 - level) / 2, side='right'))
    return k if k >= 1 else None


def walsh_interval(d, level: float) -> tuple[float, float, float] | None:
    """(Hodges-Lehmann estimate, low, high) of the centre of ``d``: the exact signed-rank
    interval, [W_(k), W_(N-k+1)] of the N sorted Walsh averages; None when len(d) pairs cannot
    reach ``level``."""
    x = np.asarray(d, dtype=float)
    k = _critical(len(x), level)
    if k is None:
        return None
    walsh = np.sort(((x[:, None] + x[None, :]) / 2)[np.triu_indices(len(x))])
    return float(np.median(walsh)), float(walsh[k - 1]), float(walsh[len(walsh) - k])


# ---- the floor as a covariate -----------------------------------------------------------------

def clip_slope(theta: float) -> float:
    return min(MAX_SLOPE, max(0.0, theta)) if math.isfinite(theta) else 1.0


def theil_sen(x, y, level: float) -> tuple[float, float, float]:
    """(slope, low, high) of ``y`` on ``x``: the Theil-Sen slope (the median of the pairwise
    slopes) and Sen's interval at ``level``, each clipped to [0, :data:`MAX_SLOPE`]; where
    the floor did not vary (fewer than two distinct values) the ratio's 1 and the whole band."""
    from scipy import stats  # here: scipy.stats costs a second to import
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(set(xs.tolist())) < 2:
        return 1.0, 0.0, MAX_SLOPE
    found = stats.theilslopes(ys, xs, alpha=level)
    lo, hi = (clip_slope(v) if math.isfinite(v) else b for v, b in
              ((found.low_slope, 0.0), (found.high_slope, MAX_SLOPE)))
    return clip_slope(found.slope), lo, hi


class PairSlope:
    """The floor's slope fitted on pairs, as a function of the hypothesised change c: the
    median slope of the points (d_x, d_y - c) and their mirror images through the origin, so
    the same whichever launch of any pair came first (the module's docstring). The parts that
    do not depend on c are computed once: slopes between two points (c cancels), and those
    between a point and another's mirror (or its own), affine in c."""

    def __init__(self, dx, dy):
        dx, dy = np.asarray(dx, dtype=float), np.asarray(dy, dtype=float)
        i, j = np.triu_indices(len(dx), 1)
        diff, summ = dx[j] - dx[i], dx[j] + dx[i]
        fixed = diff != 0
        self._fixed = (dy[j] - dy[i])[fixed] / diff[fixed]
        mirror = summ != 0
        own = dx != 0
        self._base = np.concatenate([(dy[j] + dy[i])[mirror] / summ[mirror], dy[own] / dx[own]])
        self._per_c = np.concatenate([2 / summ[mirror], 1 / dx[own]])

    def slope(self, c: float) -> float:
        """The clipped median slope under the change ``c``."""
        slopes = np.concatenate([self._fixed, self._base - c * self._per_c])
        return clip_slope(float(np.median(slopes))) if len(slopes) else 1.0


class PairTest:
    """The signed-rank test of "the adjusted change is c" on pairs (d_x, d_y), the slope fixed
    (``slope``) or fitted under each c (:class:`PairSlope`)."""

    def __init__(self, dx, dy, slope: float | None = None):
        self.dx, self.dy = np.asarray(dx, dtype=float), np.asarray(dy, dtype=float)
        self.fixed = slope
        self.fit = PairSlope(dx, dy) if slope is None else None

    def slope(self, c: float) -> float:
        return self.fixed if self.fit is None else self.fit.slope(c)

    def statistic(self, c: float) -> tuple[float, int]:
        """(T+, pairs counted): the signed-rank statistic of the residuals under c (those
        exactly 0 are left out, as Wilcoxon's test does)."""
        r = self.dy - c - self.slope(c) * self.dx
        r = r[np.abs(r) > 1e-12 * (1 + np.abs(self.dy))]
        ranks = np.empty(len(r))
        ranks[np.argsort(np.abs(r), kind='stable')] = np.arange(1, len(r) + 1)
        return float(ranks[r > 0].sum()), len(r)

    def side(self, c: float, level: float) -> int:
        """+1: the change is above c beyond doubt at ``level`` (two-sided); -1: below; 0."""
        t, n = self.statistic(c)
        k = _critical(n, level)
        if k is None:
            return 0
        if t >= n * (n + 1) / 2 - k + 1:
            return 1
        return -1 if t <= k - 1 else 0


def _bisect(a: float, b: float, inside, rounds: int) -> float:
    """A point where ``inside`` turns from true (at a) to false (at b), after ``rounds``
    halvings; 0 rounds: the midpoint."""
    for _ in range(rounds):
        mid = (a + b) / 2
        a, b = (mid, b) if inside(mid) else (a, mid)
    return (a + b) / 2


def adjusted_interval(dx, dy, level: float, slope: float | None = None,
                      probes: tuple[float, ...] = (), rounds: int = 40):
    """(estimate, low, high, slope) of the change of ``d_y`` adjusted by its floor: the set of
    changes c the exact signed-rank test of :class:`PairTest` does not reject at ``level``;
    None when the pairs cannot reach it. The slope is ``slope`` where given (the ratio: 1),
    else fitted under every c, and reported at the estimate.

    The bounds are found by bisection between the tested points ``probes`` (the thresholds a
    decision compares with), so each bound lies on the same side of every probe as that
    probe's own test says, whatever the bisection's precision: ``rounds=0`` gives the decision
    at a few tests' cost (the simulation's), more rounds only a finer interval."""
    if slope is not None and rounds:
        found = walsh_interval(np.asarray(dy) - slope * np.asarray(dx), level)
        return None if found is None else (*found, slope)
    test = PairTest(dx, dy, slope)
    if _critical(len(test.dy), level) is None:
        return None
    far = float(np.max(np.abs(test.dy)) + MAX_SLOPE * np.max(np.abs(test.dx)) + 1.0)
    points = sorted({-far, far, *(p for p in probes if -far < p < far)})
    sides = {p: (1 if p == -far else -1 if p == far else test.side(p, level)) for p in points}
    a = max(p for p in points if sides[p] == 1)
    b = min(p for p in points if p > a and sides[p] != 1)
    d = min(p for p in points if sides[p] == -1)
    e = max(p for p in points if p < d and sides[p] != -1)
    low = _bisect(a, b, lambda c: test.side(c, level) == 1, rounds)
    high = _bisect(e, d, lambda c: test.side(c, level) != -1, rounds)
    low, high = min(low, high), max(low, high)
    est = _bisect(low, high, lambda c: _above_centre(*test.statistic(c)), rounds)
    return est, low, high, test.slope(est)


def _above_centre(t: float, n: int) -> bool:
    return t > n * (n + 1) / 4


# ---- sequential looks ------------------------------------------------------------------------

def spent(t: float, rho: float = SPENDING) -> float:
    """The share of the false-alarm budget spent by the share ``t`` of the planned pairs."""
    return min(1.0, max(0.0, t)) ** rho


def look_share(before: int, now: int, horizon: int, rho: float = SPENDING) -> float:
    """The share of alpha a look at ``now`` pairs spends, the previous look having been at
    ``before`` (0: the first) of ``horizon`` planned pairs; the last look (now >= horizon)
    spends all that is left."""
    if now >= horizon:
        return 1.0 - spent(before / horizon, rho)
    return spent(now / horizon, rho) - spent(before / horizon, rho)


def looks(first: int, horizon: int, growth: float = 1.5) -> list[int]:
    """The planned looks: at ``first`` pairs, then each ``growth`` times the last, the last at
    ``horizon``."""
    out = [min(first, horizon)]
    while out[-1] < horizon:
        out.append(min(horizon, max(out[-1] + 1, math.ceil(out[-1] * growth))))
    return out
