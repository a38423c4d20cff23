"""Pairs until decided: the plan of a sequential ``commcheck upgrade`` (and of its benchmark).

Pairs are run in stages; after each stage every test case still undecided is judged on all
its pairs so far (a look), and a test case stops when every key variable is decided, or when
its planned pairs (the horizon: ``--max-pairs``, or what ``--budget`` minutes of its launches
hold) are used. Each look spends a share of the false-alarm budget alpha:
``alpha (t_k^rho - t_(k-1)^rho)`` at the share ``t_k`` of the horizon
(:func:`commcheck.analysis.stats.look_share`, rho :data:`commcheck.analysis.stats.SPENDING`),
the last look all that is left. By the union bound the false alarms over every look stay at
most alpha, whatever the dependence between looks (they share pairs) and whatever the pairs'
distribution: each look's exact signed-rank interval needs no more. It is conservative
(a group-sequential boundary computed for the looks' joint normal law would be narrower), and
that is its price for needing no normality: one pair across a regime switch is not normal.

The looks: the first at :data:`FIRST` pairs or the fewest from which its share can reach a
decision at all (2 / 2^n below the level, :func:`commcheck.analysis.stats.min_pairs`), then
each :data:`GROWTH` times the last, the last at the horizon.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from commcheck.analysis import stats

#: Pairs at the first look: the fixed count of commcheck upgrade before issue 44.
FIRST = 12
#: Each look's pairs over the last one's.
GROWTH = 1.5


@dataclasses.dataclass(frozen=True)
class Plan:
    """The looks at one test case: ``horizon`` pairs at most, ``alpha`` over ``m`` variables."""
    horizon: int
    alpha: float = 0.05
    m: int = 1
    first: int = FIRST
    growth: float = GROWTH
    rho: float = stats.SPENDING

    def share(self, before: int, now: int) -> float:
        """What a look at ``now`` pairs spends of alpha, the previous look at ``before``."""
        return stats.look_share(before, now, self.horizon, self.rho)

    def reachable(self, n: int, before: int = 0) -> bool:
        """Whether a look at ``n`` pairs can decide anything at all."""
        level = 1 - self.alpha * self.share(before, n) / max(self.m, 1)
        return n >= stats.min_pairs(level)

    def looks(self) -> list[int]:
        """The planned looks (pairs at each); the first where a decision is possible."""
        first = min(self.first, self.horizon)
        while first < self.horizon and not self.reachable(first):
            first += 1
        return stats.looks(first, self.horizon, self.growth)

    def next_look(self, done: int) -> int:
        """The pairs the look after ``done`` pairs is planned at (the horizon at most)."""
        return next((n for n in self.looks() if n > done), self.horizon)


def fixed(pairs: int, alpha: float = 0.05, m: int = 1) -> Plan:
    """One look at ``pairs``, spending all of alpha: ``commcheck upgrade --pairs N``."""
    return Plan(horizon=pairs, alpha=alpha, m=m, first=pairs)


def horizon_of(budget_s: float | None, seconds_a_pair: float | None,
               max_pairs: int | None) -> int:
    """The planned pairs of a test case: what ``budget_s`` seconds of its launches hold at
    ``seconds_a_pair`` (measured in its first stage), and ``max_pairs`` at most."""
    found = [max_pairs] if max_pairs else []
    if budget_s and seconds_a_pair:
        found.append(max(1, math.floor(budget_s / seconds_a_pair)))
    return min(found) if found else FIRST


def run(plan: Plan, judge: Callable[[int, float], object],
        decided: Callable[[object], bool], available: int | None = None):
    """Looks at pairs already recorded (the benchmark, the simulation): ``judge(n, share)`` on
    the first n pairs at each planned look, until ``decided`` says so or the looks (or the
    ``available`` pairs) end. Returns (the last judgement, the pairs it used, the looks)."""
    done, before, result = [], 0, None
    for n in plan.looks():
        if available is not None and n > available:
            break
        result = judge(n, plan.share(before, n))
        done.append(n)
        before = n
        if decided(result):
            break
    return result, before, done
