"""Paired statistics for an upgrade: the old and the new stack launched in adjacent pairs in one
session (``commcheck upgrade``), judged pair by pair.

Model. As the gate's (:mod:`commcheck.analysis.gate`): a launch's figure is the machine's state
times the software's own cost, and MPI's own cost is the figure over the hardware floor of the
same launch. Two launches of one pair run one right after the other, so they share the
machine's regime far more often than two launches minutes apart; the pair's log ratio

    d = log(cost_new / cost_old)     (worse positive; the raw value where there is no floor)

cancels what the two launches share. The machine can still change between the two launches of
a pair: the pair's floor ratio ``f = log(floor_new / floor_old)`` (worse positive) says so. A
pair's floors differ *beyond doubt* when ``f`` lies further from the session's median floor
ratio than both (a) :attr:`Settings.floor_margin` and (b) z x the robust spread of the pairs'
floor ratios, z at the family-wise level 1 - alpha / (2 m n) over the n pairs and m variables
(a pair is one of n m chances to be called out). Such a pair is a machine change, not an MPI
change: it is left out, and said. When more than half the pairs are, the verdict is
``machine changed``: the session cannot say what the MPI did.

Interval. The Hodges-Lehmann estimate (the median of the pairs' Walsh averages) of the pair
log ratio, with the exact Wilcoxon signed-rank confidence interval at 1 - alpha / m, chosen
because the launch order makes it exact: ReFrame runs the two launches of a pair in a random
order (``--exec-order random``), so when the two stacks do not differ each ``d`` is as likely
negative as positive whatever the machine does: its distribution is symmetric about 0, the one
assumption of the signed-rank interval. A percentile bootstrap of the median is too narrow for
a few pairs (all of 6 pairs positive would be decided, which happens by chance in 3 % of
sessions), and a t interval trusts a normal tail that one pair straddling a regime switch
breaks. With n pairs no interval is narrower than chance allows: the level needs
``2 / 2^n < alpha / m`` (:func:`min_pairs`: 8 pairs for 6 variables at alpha 0.05), below that
the verdict is ``cannot tell`` and says how many pairs would do.

A floor that is an MPI figure itself (:func:`commcheck.experiments.mpi_floor`: the datatypes'
contiguous send) is each stack's own, so there the pairs judge the value itself, which the
shared machine already cancels from.

The outcomes and the verdict are the gate's own: :func:`commcheck.analysis.stats.decide` on the
interval and the threshold, :func:`commcheck.analysis.gate.verdict` on MPI's own cost and the
floor (both judged on their pair ratios). Where it cannot decide, the pairs that would:
``n x (half-width / margin)^2`` (:func:`commcheck.analysis.stats.needed`), never fewer than
:func:`min_pairs`. The threshold is :attr:`Settings.min_effect` (2 % unless given): unlike the
gate between sessions, pairing removes the regime from the comparison, so the threshold is the
smallest change worth naming and the interval carries the noise; ``detectable`` is threshold +
half-width, the smallest worsening this session could have flagged.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

from commcheck import experiments
from commcheck.analysis import gate, robust, stats
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

    @property
    def threshold(self) -> float:
        return math.log1p(self.min_effect)


# ---- the signed-rank interval ----------------------------------------------------------------

min_pairs = stats.min_pairs
interval = stats.walsh_interval


def judge(d: list[float], m: int = 1, settings: Settings = Settings()) -> gate.Outcome:
    """The gate's three outcomes on pair log ratios (worse positive) at 1 - alpha/m."""
    level = 1 - settings.alpha / max(m, 1)
    need_least = min_pairs(level)
    found = interval(d, level)
    threshold = settings.threshold
    if found is None:
        centre = statistics.median(d) if d else 0.0
        return gate.Outcome(gate.UNKNOWN, centre, -math.inf, math.inf, threshold, PAIRS,
                            needed=need_least)
    centre, low, high = found
    out = stats.Outcome(stats.decide(low, high, threshold), centre, low, high, threshold, PAIRS)
    if out.outcome == gate.UNKNOWN:
        need = stats.needed(len(d), (high - low) / 2, stats.distance(centre, threshold),
                            settings.max_needed)
        out.needed = None if need is None else max(need, need_least)
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

    def cost(self, direction: str) -> float:
        """log(new / old) of MPI's own cost (the value where there is no floor), worse +."""
        ratio = self.new.value / self.old.value
        if self.old_floor and self.new_floor:
            ratio /= self.new_floor.value / self.old_floor.value
        return stats.worse_up(ratio, direction)

    def floor(self) -> float | None:
        """log(new / old) of the floor, worse +; None without floors."""
        if not (self.old_floor and self.new_floor):
            return None
        floor = self.old_floor
        way = experiments.direction(floor.check, floor.variable, floor.unit)
        return stats.worse_up(self.new_floor.value / floor.value, way)


def adjacent(old: list[Sample], new: list[Sample]) -> list[tuple[Sample, Sample]]:
    """The launches of one test case on the two stacks, paired with their neighbour in time
    (job completion): walking the launches in time order, a launch of one stack followed by
    one of the other is a pair; a launch whose neighbour is of its own stack (its partner did
    not run or failed) is left out."""
    timeline = sorted([(s.time, 0, s) for s in old] + [(s.time, 1, s) for s in new],
                      key=lambda t: (t[0], t[1]))
    out, i = [], 0
    while i + 1 < len(timeline):
        (_, a, first), (_, b, second) = timeline[i], timeline[i + 1]
        if a != b:
            out.append((first, second) if a == 0 else (second, first))
            i += 2
        else:
            i += 1
    return out


def with_floors(pairs: list[tuple[Sample, Sample]], old_floors: list[Sample],
                new_floors: list[Sample]) -> list[Pair]:
    """Each pair with the floors measured in its two launches, where both have one (the
    launch's floor by session and completion time, as the gate pairs them)."""
    of_old = {(v.session, v.time): f for v, f in gate.pair([o for o, _ in pairs], old_floors)}
    of_new = {(v.session, v.time): f for v, f in gate.pair([n for _, n in pairs], new_floors)}
    out = []
    for o, n in pairs:
        fo, fn = of_old.get((o.session, o.time)), of_new.get((n.session, n.time))
        out.append(Pair(o, n, fo, fn) if fo and fn else Pair(o, n))
    return out


def mark_machine_changes(pairs: list[Pair], m: int, settings: Settings) -> int:
    """Marks the pairs whose two floors differ beyond doubt (the module's docstring); returns
    how many."""
    floors = [p.floor() for p in pairs]
    known = [f for f in floors if f is not None]
    if len(known) < 2:
        return 0
    z = statistics.NormalDist().inv_cdf(1 - settings.alpha / (2 * max(m, 1) * len(known)))
    bound = max(math.log1p(settings.floor_margin), z * robust.sigma(known))
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
    verdict: str = gate.CANNOT_TELL
    cost: gate.Outcome | None = None    #: MPI's own cost (or the value), pair ratios
    floor: gate.Outcome | None = None   #: the floor, pair ratios
    floor_variable: str | None = None
    note: str = ''
    provenance_changes: dict = dataclasses.field(default_factory=dict)

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
        if self.verdict in gate.SOFTWARE_REGRESSED:
            return self.new
        return self.old if self.verdict == gate.IMPROVED else None

    @property
    def detectable(self) -> float | None:
        return self.cost.detectable if self.cost and math.isfinite(self.cost.high) else None

    @property
    def pairs_needed(self) -> int | None:
        return self.cost.needed if self.cost and self.verdict == gate.CANNOT_TELL else None

    def medians(self) -> tuple[float | None, float | None]:
        kept = [p for p in self.pairs if not p.machine]
        if not kept:
            return None, None
        return (statistics.median(p.old.value for p in kept),
                statistics.median(p.new.value for p in kept))

    def statement(self) -> str:
        """The verdict in words: which stack is slower, by how much, with its interval."""
        if not self.cost or not math.isfinite(self.cost.high):
            return ''
        what = "MPI's own cost" if self.floor else 'the value'
        change = (f'{math.expm1(self.cost.change):+.1%} [{math.expm1(self.cost.low):+.1%}, '
                  f'{math.expm1(self.cost.high):+.1%}]')
        if self.slower:
            size = abs(math.expm1(self.cost.change if self.slower == self.new
                                  else -self.cost.change))
            return f'{self.slower} slower by {size:.1%} ({what} new/old {change})'
        return f'{what} new/old {change}'

    def as_dict(self) -> dict:
        system, partition, environ, test, variable = self.key
        old, new = self.medians()
        return {'system': system, 'partition': partition, 'environ': environ, 'test': test,
                'variable': variable, 'old': self.old, 'new': self.new, 'unit': self.unit,
                'direction': self.direction, 'verdict': self.verdict, 'slower': self.slower,
                'pairs': len(self.pairs), 'machine_pairs': self.machine_pairs,
                'median_old': old, 'median_new': new, 'floor_variable': self.floor_variable,
                'judged': 'MPI cost (value over floor)' if self.floor else 'value',
                'cost': _outcome_dict(self.cost), 'floor': _outcome_dict(self.floor),
                'detectable': self.detectable, 'pairs_needed': self.pairs_needed,
                'statement': self.statement(), 'note': self.note,
                'provenance_changes': self.provenance_changes}


def _outcome_dict(out: gate.Outcome | None) -> dict | None:
    if out is None:
        return None
    if not math.isfinite(out.high):
        return {'outcome': out.outcome, 'change': math.expm1(out.change), 'ci_low': None,
                'ci_high': None, 'threshold': math.expm1(out.threshold), 'level': out.level,
                'needed': out.needed, 'detectable': None}
    return out.as_dict()


def judge_pairs(judgement: Judgement, m: int, settings: Settings) -> None:
    """Sets the verdict of one variable from its pairs (the module's docstring)."""
    j = judgement
    flagged = mark_machine_changes(j.pairs, m, settings)
    kept = [p for p in j.pairs if not p.machine]
    if flagged and flagged * 2 > len(j.pairs):
        j.verdict = gate.MACHINE_CHANGED
        j.note = (f'{flagged} of {len(j.pairs)} pairs: the floors of the two launches differ '
                  f'beyond doubt (the machine changed between them); MPI not judged')
        return
    j.cost = judge([p.cost(j.direction) for p in kept], m, settings)
    floors = [p.floor() for p in kept]
    if j.floor_variable and kept and None not in floors:
        j.floor = judge(floors, m, settings)
    else:
        j.floor_variable = None
    j.verdict = gate.verdict(j.cost, j.floor)
    said = []
    if j.verdict == gate.CANNOT_TELL:
        need = (j.cost if j.cost.outcome == gate.UNKNOWN or not j.floor else j.floor).needed
        decides = need and need <= settings.max_needed
        said.append(f'about {need} pairs in all would decide' if decides
                    else f'more than {settings.max_needed} pairs would be needed' if need
                    else 'on the threshold')
    if j.verdict == gate.MACHINE_CHANGED or (j.floor and j.floor.outcome in (gate.WORSE,
                                                                             gate.BETTER)):
        said.append(f'the floor moved between the stacks: {_interval(j.floor)}')
    if flagged:
        said.append(f'{flagged} of {len(j.pairs)} pairs left out: their floors differ beyond '
                    f'doubt (a machine change between the two launches)')
    mpi_floor = experiments.mpi_floor(j.key.check)
    if mpi_floor and experiments.floor_of(j.key.check, j.variable):
        said.insert(0, f'judged on the value: its floor, {mpi_floor}, is each stack\'s own')
    j.note = '; '.join(said)


def _interval(out: gate.Outcome) -> str:
    return (f'{math.expm1(out.change):+.1%} [{math.expm1(out.low):+.1%}, '
            f'{math.expm1(out.high):+.1%}]')


def _by_case(samples: list[Sample], old: str, new: str) -> dict[tuple, dict[str, list]]:
    """(system, partition, test, variable) -> {old: samples, new: samples}."""
    out: dict[tuple, dict[str, list]] = {}
    for s in samples:
        if s.environ in (old, new):
            out.setdefault((s.system, s.partition, s.test, s.variable),
                           {old: [], new: []})[s.environ].append(s)
    return out


def compare(samples: list[Sample], old: str, new: str,
            settings: Settings = Settings()) -> list[Judgement]:
    """One :class:`Judgement` per variable (not a floor, not an own cost) measured on both
    stacks in the session(s) ``samples`` come from; m, the family, is the number of variables
    judged."""
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
        judge_pairs(j, len(judged), settings)
    return out


def _unjudgeable(j: Judgement) -> bool:
    """Sets the verdict of a variable that cannot be judged, and says why."""
    differ = [f for f in gate.SAME_SETUP if f in j.provenance_changes]
    if j.direction is None:
        j.verdict, j.note = gate.NOT_COMPARABLE, 'no direction (not a performance figure)'
    elif differ:
        j.verdict = gate.NOT_COMPARABLE
        j.note = '; '.join(f'{f} {j.provenance_changes[f][0]} -> {j.provenance_changes[f][1]}'
                           for f in differ)
    elif any(min(p.old.value, p.new.value) <= 0 for p in j.pairs):
        j.verdict, j.note = gate.NOT_COMPARABLE, 'a value not positive'
    elif not j.pairs:
        j.verdict, j.note = gate.CANNOT_TELL, ('no adjacent pair of launches (commcheck '
                                               'upgrade --pairs N runs them)')
    else:
        return False
    return True


FORMAT_VERSION = 1      #: of the JSON ``commcheck upgrade`` writes (reports/upgrade/<session>.json)


def record(sessions: list[str], old: str, new: str, settings: Settings,
           judgements: list[Judgement]) -> dict:
    """What ``commcheck upgrade`` writes and the report's upgrade section reads."""
    return {'format_version': FORMAT_VERSION, 'kind': 'upgrade', 'sessions': sessions,
            'old': old, 'new': new, 'settings': dataclasses.asdict(settings),
            'counts': gate.counts(judgements),
            'judgements': [j.as_dict() for j in judgements]}
