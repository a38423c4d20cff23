"""Paired statistics for an upgrade: the old and the new stack launched in adjacent pairs
(``commcheck upgrade``), judged pair by pair.

Model. As the gate's (:mod:`commcheck.analysis.gate`): a launch's figure is the machine's state
times the software's own cost, and the hardware floor of the same launch carries the machine's
state. Two launches of one pair run one right after the other, so they share the machine's
regime far more often than two launches minutes apart. Per pair, with worse positive,

    d_y = log(value_new / value_old),    d_x = log(floor_new / floor_old)

and the change judged is d_y adjusted by its floor, ``d_y - theta d_x``: the floor as a measured
covariate (regression adjustment), ``theta`` the slope of d_y on d_x fitted on the session's
pairs (:attr:`Settings.adjust` ``slope``, the default), or 1 (``ratio``: MPI's own cost, the
figure over its floor, the rule before issue 44). A variable without a floor is judged on d_y.
Measured on this project's VMs (issue 44), the 8 B latency moved with its floor with a slope of
-0.2 to +0.2 (dividing by the floor tripled the spread), the 1 MiB bandwidth with 0.9-1.4.

The machine can still change between the two launches of a pair: a pair's floors differ
*beyond doubt* when |d_x| exceeds both (a) :attr:`Settings.floor_margin` and (b) z x the robust
spread of the pairs' d_x about 0 (:func:`floor_spread`), z at the family-wise level
1 - alpha / (2 m n) over the n pairs and m variables (a pair is one of n m chances to be called
out). Such a pair is a machine
change, not an MPI change: it is left out, and said. When more than half the pairs are, the
verdict is ``machine changed``: the session cannot say what the MPI did.

Interval. The set of changes c that the exact Wilcoxon signed-rank test of the residuals
``d_y - c - theta(c) d_x`` does not reject at 1 - alpha share / m
(:func:`commcheck.analysis.stats.adjusted_interval`), the slope fitted under each c on the
pairs mirrored through the origin (:class:`commcheck.analysis.stats.PairSlope`). ReFrame runs
the two launches of a pair in a random order (``--exec-order random``), so when the change is
c each residual is as likely negative as positive whatever the machine does, and the slope,
the same whichever launch of a pair came first, does not change that: the interval is exact,
the slope's uncertainty in it, with no assumption of normality (one pair straddling a regime
switch breaks a t interval). With a fixed slope (the ratio, or no floor) it is the classic
interval of the Walsh averages around the Hodges-Lehmann estimate. With n pairs no interval is
narrower than chance allows: the level needs ``2 / 2^n < alpha share / m``
(:func:`commcheck.analysis.stats.min_pairs`), below that the verdict is ``cannot tell`` and says
how many pairs would do.

Sequential looks (``commcheck upgrade --max-pairs/--budget``): each look spends a ``share`` of
alpha (:func:`commcheck.analysis.stats.look_share`); by the union bound the false alarms over
all looks stay below alpha. A fixed number of pairs is one look with all of it.

A floor that is an MPI figure itself (:func:`commcheck.experiments.mpi_floor`: the datatypes'
contiguous send) is each stack's own, so there the pairs judge the value itself, which the
shared machine already cancels from.

The outcomes and the verdict are the gate's own: :func:`commcheck.analysis.stats.decide` on the
interval and the threshold, :func:`commcheck.analysis.verdicts.verdict` on the adjusted change
and the floor's: a floor that moved between the stacks beyond doubt bounds what counts as the
software's (:func:`commcheck.analysis.verdicts.beyond_the_floor`, by the slope fitted). A move
the pairs cannot establish does so only over the floor (``ratio``, as before): the two launches
of a pair share the machine and their order is random, so a machine that slowed during the
session slowed both stacks alike; a floor difference between the stacks that the pairs cannot
tell from 0 is the floor's own noise (the 8 B floor's pair ratios spread 0.1 here), which the
fitted slope weighs by how much the value follows it and the exact interval carries. Where it
cannot decide, the pairs that would: ``n x (half-width / distance)^2``
(:func:`commcheck.analysis.stats.needed`), never fewer than
:func:`commcheck.analysis.stats.min_pairs`. The threshold is :attr:`Settings.min_effect` (2 %
unless given): pairing removes the regime from the comparison, so the threshold is the smallest
change worth naming and the interval carries the noise; ``detectable`` is threshold +
half-width, the smallest worsening these pairs could have flagged.

Acceptance (:attr:`Settings.accept`, ``commcheck upgrade --accept 5%``): the new stack passes
when the interval's worse end lies below the margin ("not slower by more than 5 %", verdict
``unchanged``, or ``improved``), fails when its better end lies beyond the larger of margin and
threshold (``MPI regressed``); the two never both hold (:func:`commcheck.analysis.stats.decide`).
"""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np

from commcheck import experiments
from commcheck.analysis import gate, stats, verdicts
from commcheck.analysis.stats import RATIO, SLOPE
from commcheck.analysis.verdicts import FAIL, PASS
from commcheck.results import upgraderecord
from commcheck.results.store import Sample, SampleKey

PAIRS = 'pairs'         #: the unit of a paired interval (Outcome.level)


@dataclasses.dataclass(frozen=True)
class Settings:
    min_effect: float = 0.02    #: the threshold: the smallest change worth calling different
    alpha: float = 0.05         #: family-wise false-alarm rate over the variables judged
    #: a pair's floors differ beyond doubt only when further apart than this (and than the
    #: floor's own pair-to-pair spread allows)
    floor_margin: float = 0.10
    max_needed: int = 1000      #: pairs needed above which "more than" is said
    #: how the floor adjusts the value: ``slope`` (fitted on the pairs) or ``ratio`` (slope 1)
    adjust: str = SLOPE
    #: the acceptance margin, a fraction (0.05: "not slower by more than 5 %"); None: none
    accept: float | None = None

    @property
    def threshold(self) -> float:
        return math.log1p(self.min_effect)

    @property
    def margin(self) -> float | None:
        """The acceptance margin as a log ratio, or None."""
        return None if self.accept is None else math.log1p(self.accept)


# ---- the signed-rank interval ----------------------------------------------------------------

def judge(dy: list[float], m: int = 1, settings: Settings = Settings(),
          dx: list[float] | None = None, share: float = 1.0,
          accept: float | None = None, exact: bool = True) -> stats.Outcome:
    """The three outcomes on pair log ratios ``dy`` (worse positive) adjusted by the floor's
    ``dx`` (None: no floor), at 1 - alpha share / m; ``accept`` the margin (log) where the
    decision is an acceptance. ``exact=False``: the decision alone, its bounds only as fine as
    the decision needs (the simulation's; :func:`commcheck.analysis.stats.adjusted_interval`)."""
    level = 1 - settings.alpha * share / max(m, 1)
    need_least = stats.min_pairs(level)
    threshold = settings.threshold
    slope = 0.0 if dx is None else 1.0 if settings.adjust == RATIO else None
    xs = [0.0] * len(dy) if dx is None else dx
    probes = (threshold, -threshold) + (() if accept is None else (accept, max(threshold,
                                                                                   accept)))
    found = stats.adjusted_interval(xs, dy, level, slope=slope, probes=probes,
                                    rounds=40 if exact else 0) if len(dy) else None
    if found is None:
        centre = statistics.median(y - (slope or 0.0) * x for x, y in zip(xs, dy)) \
            if len(dy) else 0.0
        return stats.Outcome(stats.UNKNOWN, centre, -math.inf, math.inf, threshold, PAIRS,
                             needed=need_least, slope=None if dx is None else slope)
    centre, low, high, theta = found
    out = stats.Outcome(stats.decide(low, high, threshold, accept=accept), centre, low, high,
                        threshold, PAIRS, slope=None if dx is None else theta)
    if out.outcome == stats.UNKNOWN:
        out.needed = stats.needed(len(dy), (high - low) / 2,
                                  stats.distance(centre, threshold, accept),
                                  settings.max_needed, need_least)
    return out


# ---- pairs of launches -----------------------------------------------------------------------

@dataclasses.dataclass
class Pair:
    """Two adjacent launches of one test case, the old stack's and the new one's."""
    old: Sample
    new: Sample
    old_floor: Sample | None = None
    new_floor: Sample | None = None
    machine: bool = False               #: the two floors differ beyond doubt

    def raw(self, direction: str) -> float:
        """log(new / old) of the value, worse +."""
        return stats.worse_up(self.new.value / self.old.value, direction)

    def floor(self) -> float | None:
        """log(new / old) of the floor, worse +; None without floors."""
        if not (self.old_floor and self.new_floor):
            return None
        floor = self.old_floor
        way = experiments.direction(floor.check, floor.variable, floor.unit)
        return stats.worse_up(self.new_floor.value / floor.value, way)


def adjacent(old: list[Sample], new: list[Sample]) -> list[tuple[Sample, Sample]]:
    """The launches of one test case on the two stacks, paired with their neighbour in time
    (job completion) in the same session: walking each session's launches in time order, a
    launch of one stack followed by one of the other is a pair; a launch whose neighbour is of
    its own stack (its partner did not run or failed) is left out."""
    timeline = sorted([(s.session, s.time, 0, s) for s in old] +
                      [(s.session, s.time, 1, s) for s in new], key=lambda t: t[:3])
    out, i = [], 0
    while i + 1 < len(timeline):
        (one, _, a, first), (two, _, b, second) = timeline[i], timeline[i + 1]
        if a != b and one == two:
            out.append((first, second) if a == 0 else (second, first))
            i += 2
        else:
            i += 1
    return out


def with_floors(pairs: list[tuple[Sample, Sample]], old_floors: list[Sample],
                new_floors: list[Sample]) -> list[Pair]:
    """Each pair with the floors measured in its two launches, where both have one (the
    launch's floor by session and completion time, as the gate pairs them)."""
    of_old = _floors_by_launch([o for o, _ in pairs], old_floors)
    of_new = _floors_by_launch([n for _, n in pairs], new_floors)
    out = []
    for o, n in pairs:
        fo, fn = of_old.get((o.session, o.time)), of_new.get((n.session, n.time))
        out.append(Pair(o, n, fo, fn) if fo and fn else Pair(o, n))
    return out


#: |N(0, 1)|'s lower quartile: a lower quartile of |d_x| over it estimates the spread.
_QUARTILE_OF_ABS = statistics.NormalDist().inv_cdf(0.625)


def floor_spread(known: list[float]) -> float:
    """The spread of the pairs' floor log ratios where the machine held: the lower quartile of
    |d_x| over |N(0, 1)|'s. Of |d_x| alone, so the same whichever launch of each pair came
    first (which keeps the signed-rank interval exact); a quartile, so pairs that straddle a
    regime switch do not inflate it until three in four do (the verdict is "machine changed"
    from one in two)."""
    return float(np.percentile(np.abs(known), 25)) / _QUARTILE_OF_ABS


def machine_bound(known: list[float], m: int, settings: Settings) -> float:
    """|d_x| beyond which a pair's two floors differ beyond doubt (the module's docstring)."""
    z = statistics.NormalDist().inv_cdf(1 - settings.alpha / (2 * max(m, 1) * len(known)))
    return max(math.log1p(settings.floor_margin), z * floor_spread(known))


def _floors_by_launch(values: list[Sample], floors: list[Sample]) -> dict[tuple, Sample]:
    """(session, time) -> the floor of that launch: by its own time where floors' times tell
    launches apart (a launch left unpaired leaves a floor over: the gate's pairing by
    position would then give none), else as the gate pairs them."""
    by_launch = {(f.session, f.time): f for f in floors}
    if len(by_launch) == len(floors):
        return by_launch
    return {(v.session, v.time): f for v, f in gate.pair(values, floors)}


def mark_machine_changes(pairs: list[Pair], m: int, settings: Settings) -> int:
    """Marks the pairs whose two floors differ beyond doubt (the module's docstring); returns
    how many."""
    floors = [p.floor() for p in pairs]
    known = [f for f in floors if f is not None]
    if len(known) < 2:
        return 0
    bound = machine_bound(known, m, settings)
    for p, f in zip(pairs, floors):
        p.machine = f is not None and abs(f) > bound
    return sum(p.machine for p in pairs)


# ---- one variable, one session ---------------------------------------------------------------

@dataclasses.dataclass
class Judgement:
    """One key variable of one test case: the old stack against the new, pair by pair."""
    key: SampleKey                      #: environ: '<new> vs <old>', as compare --environ
    old: str
    new: str
    unit: str
    direction: str | None
    pairs: list[Pair]
    verdict: str = verdicts.CANNOT_TELL
    cost: stats.Outcome | None = None   #: the value adjusted by its floor (or the value)
    floor: stats.Outcome | None = None  #: the floor, pair ratios
    floor_variable: str | None = None
    note: str = ''
    provenance_changes: dict = dataclasses.field(default_factory=dict)
    accept: float | None = None         #: the acceptance margin judged against, a fraction
    level: float | None = None          #: the interval's level (1 - alpha share / m)
    #: the pairs at each look at this test case (commcheck upgrade's stages; one: fixed)
    looks: list[int] = dataclasses.field(default_factory=list)

    @property
    def variable(self) -> str:
        return self.key.variable

    @property
    def machine_pairs(self) -> int:
        return sum(p.machine for p in self.pairs)

    @property
    def slower(self) -> str | None:
        """The stack that is slower, where the verdict decided MPI's own cost (or the value)
        one way: the new one when it regressed, the old one when the new improved."""
        if self.verdict in verdicts.SOFTWARE_REGRESSED:
            return self.new
        return self.old if self.verdict == verdicts.IMPROVED else None

    @property
    def detectable(self) -> float | None:
        return self.cost.detectable if self.cost and math.isfinite(self.cost.high) else None

    @property
    def pairs_needed(self) -> int | None:
        return self.cost.needed if self.cost and self.verdict == verdicts.CANNOT_TELL else None

    @property
    def decided(self) -> bool:
        """Whether more pairs would change nothing: a verdict decided (with a margin: the
        acceptance decided, or the machine said to have changed)."""
        if self.accept is not None:
            return self.acceptance is not None or self.verdict in (
                verdicts.MACHINE_CHANGED, verdicts.NOT_COMPARABLE)
        return self.verdict in verdicts.DECIDED or self.verdict == verdicts.NOT_COMPARABLE

    @property
    def acceptance(self) -> str | None:
        """With a margin: ``pass`` (not slower by more than it), ``fail`` (slower by more,
        beyond doubt), None (not decided, or the machine changed)."""
        if self.accept is None or not self.cost:
            return None
        if self.verdict in (verdicts.UNCHANGED, verdicts.IMPROVED):
            return PASS
        return FAIL if self.verdict in verdicts.SOFTWARE_REGRESSED else None

    @property
    def bound(self) -> float | None:
        """The end of the interval the acceptance reached (a fraction): its worse end where it
        passed, its better end where it failed, the worse end while undecided."""
        if self.accept is None or not self.cost or not math.isfinite(self.cost.high):
            return None
        return math.expm1(self.cost.low if self.acceptance == FAIL else self.cost.high)

    def judged(self) -> str:
        """What the pairs judged: the value, over its floor, or adjusted by its floor."""
        if not self.floor:
            return 'value'
        if self.cost and self.cost.slope is not None and self.cost.slope != 1.0:
            return f'value adjusted by its floor (slope {self.cost.slope:.2f})'
        return "MPI's own cost (value over floor)"

    def medians(self) -> tuple[float | None, float | None]:
        kept = [p for p in self.pairs if not p.machine]
        if not kept:
            return None, None
        return (statistics.median(p.old.value for p in kept),
                statistics.median(p.new.value for p in kept))

    def statement(self) -> str:
        """The verdict in words: which stack is slower, by how much, with its interval; with a
        margin, what the acceptance reached."""
        if not self.cost or not math.isfinite(self.cost.high):
            return ''
        what = 'MPI' if self.floor else 'the value'
        said = f'{what} new/old {self.cost.interval()}'
        if self.slower:
            size = abs(math.expm1(self.cost.change if self.slower == self.new
                                  else -self.cost.change))
            said = f'{self.slower} slower by {size:.1%} ({said})'
        if self.accept is not None:
            said += '; ' + verdicts.accepted(self.acceptance, self.accept, self.bound)
        return said

    def as_dict(self) -> dict:
        system, partition, environ, test, variable = self.key
        old, new = self.medians()
        return {'system': system, 'partition': partition, 'environ': environ, 'test': test,
                'variable': variable, 'old': self.old, 'new': self.new, 'unit': self.unit,
                'direction': self.direction, 'verdict': self.verdict, 'slower': self.slower,
                'pairs': len(self.pairs), 'machine_pairs': self.machine_pairs,
                'median_old': old, 'median_new': new, 'floor_variable': self.floor_variable,
                'judged': self.judged(), 'slope': self.cost.slope if self.cost else None,
                'cost': _outcome_dict(self.cost), 'floor': _outcome_dict(self.floor),
                'detectable': self.detectable, 'pairs_needed': self.pairs_needed,
                'level': self.level, 'looks': self.looks,
                'accept': None if self.accept is None else {
                    'margin': self.accept, 'result': self.acceptance, 'bound': self.bound},
                'statement': self.statement(), 'note': self.note,
                'provenance_changes': self.provenance_changes}


def _outcome_dict(out: stats.Outcome | None) -> dict | None:
    if out is None:
        return None
    if not math.isfinite(out.high):
        return {'outcome': out.outcome, 'change': math.expm1(out.change), 'ci_low': None,
                'ci_high': None, 'threshold': math.expm1(out.threshold), 'level': out.level,
                'needed': out.needed, 'detectable': None, 'slope': out.slope}
    return out.as_dict()


def judge_pairs(judgement: Judgement, m: int, settings: Settings, share: float = 1.0,
                exact: bool = True) -> None:
    """Sets the verdict of one variable from its pairs (the module's docstring), at a look
    that spends ``share`` of alpha (``exact=False``: its bounds only as fine as the verdict
    needs, :func:`judge`)."""
    j = judgement
    j.accept, j.level = settings.accept, 1 - settings.alpha * share / max(m, 1)
    flagged = mark_machine_changes(j.pairs, m, settings)
    kept = [p for p in j.pairs if not p.machine]
    if flagged and flagged * 2 > len(j.pairs):
        j.verdict = verdicts.MACHINE_CHANGED
        j.note = verdicts.machine_pairs_note(flagged, len(j.pairs))
        return
    floors = [p.floor() for p in kept]
    if not (j.floor_variable and kept and None not in floors):
        j.floor_variable, floors = None, None
    j.cost = judge([p.raw(j.direction) for p in kept], m, settings, floors, share,
                   settings.margin, exact)
    if floors is not None:
        j.floor = judge(floors, m, settings, share=share, exact=exact)
    # a floor's move the pairs cannot establish bounds the software's part only over the
    # floor (the rule before the slope); with the slope fitted on these pairs, how much the
    # value follows the floor is measured, and the exact interval carries its uncertainty
    j.verdict = verdicts.verdict(j.cost, j.floor, undecided_bounds=settings.adjust == RATIO)
    j.note = '; '.join(verdicts.paired_notes(j, flagged, settings.max_needed))


def _by_case(samples: list[Sample], old: str, new: str) -> dict[tuple, dict[str, list]]:
    """(system, partition, test, variable) -> {old: samples, new: samples}."""
    out: dict[tuple, dict[str, list]] = {}
    for s in samples:
        if s.environ in (old, new):
            out.setdefault((s.system, s.partition, s.test, s.variable),
                           {old: [], new: []})[s.environ].append(s)
    return out


def compare(samples: list[Sample], old: str, new: str, settings: Settings = Settings(),
            share: float = 1.0, family: int | None = None, exact: bool = True) -> list[Judgement]:
    """One :class:`Judgement` per variable (not a floor, not an own cost) measured on both
    stacks in the session(s) ``samples`` come from, at a look that spends ``share`` of alpha;
    m, the family, is ``family`` where given (a sequential run's: every variable of its first
    look), else the number of variables judged."""
    cases = _by_case(samples, old, new)
    out = []
    for (system, partition, test, variable), sides in sorted(cases.items()):
        check = experiments.check_of(test)
        # a floor is judged with its variable; an own cost (variable / floor) is the pairs'
        # cost itself: neither on its own
        if (experiments.is_floor(check, variable) or experiments.own_cost_of(check, variable)
                or not (sides[old] and sides[new])):
            continue
        unit = sides[new][0].unit
        # an MPI figure for a floor (the datatypes' contiguous send) is each stack's own: the
        # pairs share the machine, so the value itself is judged
        j = Judgement(SampleKey(system, partition, f'{new} vs {old}', test, variable), old, new,
                      unit, experiments.direction(check, variable, unit), [],
                      floor_variable=None if experiments.mpi_floor(check)
                      else experiments.floor_of(check, variable))
        pairs = adjacent(sides[old], sides[new])
        floors = cases.get((system, partition, test, j.floor_variable), {old: [], new: []})
        j.pairs = with_floors(pairs, floors[old], floors[new])
        j.provenance_changes = gate.setup_changes([o.provenance for o, _ in pairs],
                                                  [n.provenance for _, n in pairs])
        out.append(j)
    judged = [j for j in out if not _unjudgeable(j)]
    for j in judged:
        judge_pairs(j, family or len(judged), settings, share, exact)
    return out


def _unjudgeable(j: Judgement) -> bool:
    """Sets the verdict of a variable that cannot be judged, and says why."""
    why = verdicts.not_comparable(j.direction, j.provenance_changes,
                                  all(min(p.old.value, p.new.value) > 0 for p in j.pairs))
    if why:
        j.verdict, j.note = verdicts.NOT_COMPARABLE, why
    elif not j.pairs:
        j.verdict, j.note = verdicts.CANNOT_TELL, ('no adjacent pair of launches (commcheck '
                                               'upgrade --pairs N runs them)')
    else:
        return False
    return True


def record(sessions: list[str], old: str, new: str, settings: Settings,
           judgements: list[Judgement], plan: dict | None = None) -> dict:
    """What ``commcheck upgrade`` writes and the report's upgrade section reads
    (:class:`commcheck.results.upgraderecord.UpgradeRecord`); ``plan``: how the pairs were run
    (the looks, the budget), where they were run in stages."""
    return upgraderecord.UpgradeRecord(sessions, old, new, dataclasses.asdict(settings), plan,
                                       verdicts.counts(judgements),
                                       [j.as_dict() for j in judgements]).as_dict()
