"""The gate: did the MPI (or compiler, or library) get slower, or is the machine different today?

Model. A launch's figure is the product of the machine's state in its session (placement,
frequency, neighbours: it comes in regimes, so launches of one session are not independent
samples of the machine) and of the software's own cost. The C and Fortran ping-pong and COMMS2
kernels measure, in every launch, by the same two ranks on the same cores, the hardware floor
(src/kernels/common/cc_floor.h: a message through shared memory, or TCP between nodes, without
MPI). MPI's own cost is the figure over its floor (``latency / floor_latency``, ``floor_bw /
bw``: :attr:`Settings.adjust` ``ratio``, the default), or adjusted by its floor as a measured
covariate (``slope``, issue 44): per launch, on log values with worse up,
``y - theta (x - mean x)``, ``x`` the floor, ``theta`` the Theil-Sen slope of the baseline's
launches (:func:`adjusted`, clipped to [0, 2]), the interval widened by the floor's move times
the slope's own interval. The ratio is theta = 1. Between sessions that widening is large
where the floor flips regimes between launches (the 8 B floor: 0.07 or 0.28 us), so the slope
is the paired rule's default (:mod:`commcheck.analysis.paired`) and the gate's option
(docs/gate.md).

For a key variable with a floor the gate judges two quantities, each baseline against new:
MPI's own cost and the floor. Each comparison has three outcomes (as Chromium's Pinpoint):

- DIFFERENT (``worse`` / ``better``): the confidence interval of the change of the median lies
  wholly beyond the threshold (and, on launches, a rank test agrees);
- SAME: the interval lies wholly inside +/- the threshold;
- UNKNOWN: the interval straddles the threshold. Then ``launches_needed`` says how many
  launches a side (sessions, where sessions are the unit) would decide if the spread stays as
  observed: ``n * (half-width / margin)^2``, margin the distance of the estimate from the
  threshold, never fewer than the rank test needs.

The verdict (:mod:`commcheck.analysis.verdicts`: the rule and its words): ``MPI regressed`` (own
cost worse, floor not, and worse by more than the floor's estimated move where that move is
undecided), ``machine changed`` (floor moved, own cost not worse by more than that move:
``verdicts.beyond_the_floor``), ``both``, ``improved``, ``unchanged``, ``cannot tell``. A floor
that moved beyond doubt makes the verdict "machine changed" also where MPI's own cost cannot be
told (its interval not beyond the floor's move): the node is different today, which is what such
a session shows. A variable that cannot be told, or an MPI regressed whose own floor held, while
another floor of the same launches moved says so in its note (``verdicts.machine_notes``).
Variables without a floor are judged on the raw value by the same rule (``regressed``). Two more
facts of the launches bound what MPI's own cost can say: a floor that is an MPI figure itself
(the datatypes' contiguous send) never makes "machine changed" (its move may be the MPI's:
"cannot tell"); and launches whose ranks waited for a CPU well beyond the baseline's
(:func:`contended`: busy loops on their cores) read "machine changed", as where a floor moved (a
pipelined transport slows more than its floor there: :func:`contention`).

Intervals, on log values (so a change is a ratio), at the family-wise level 1 - alpha/m for m
variables compared together (Bonferroni):

- baseline of >= 3 sessions: sessions are the unit; the spread is that of the baseline's session
  medians (robust: 1.4826 MAD), half-width z * sigma * sqrt(1/k_base + 1/k_new), never narrower
  than the launch-level bootstrap;
- baseline of 1 or 2 sessions: launch-level, percentile bootstrap of the difference of medians
  (a median is what a bimodal placement does not fool), and a DIFFERENT also needs the
  Mann-Whitney rank test at p < alpha/m (with 3 launches a side it cannot: cannot tell).

Threshold (minimum effect), unless ``min_effect`` is given: from >= 3 baseline sessions,
max(5 %, 3 x the robust between-session CV); from fewer, max(10 %, 2 x the robust CV of the
baseline's launches). ``detectable`` is the smallest worsening the samples at hand could flag:
threshold + half-width. Samples measured with another binding or placement are not compared.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from commcheck import experiments
from commcheck.analysis import robust, stats, verdicts
from commcheck.analysis.stats import RATIO, UNKNOWN, Outcome, decide
from commcheck.analysis.verdicts import CANNOT_TELL, NO_BASELINE, NOT_COMPARABLE
from commcheck.results.store import Sample, SampleKey


@dataclasses.dataclass(frozen=True)
class Settings:
    min_effect: float | None = None  #: the threshold; None: derived from the data (see above)
    alpha: float = 0.05         #: family-wise false-alarm rate over the variables compared
    min_samples: int = 3        #: launches a side below which nothing is computed
    #: the derived threshold: max(floor, factor x robust CV), sessions or launches
    session_floor: float = 0.05
    session_factor: float = 3.0
    launch_floor: float = 0.10
    launch_factor: float = 2.0
    min_sessions: int = 3       #: baseline sessions from which sessions are the unit
    max_needed: int = 1000      #: launches needed above which "more than" is said
    n_boot: int = 2000          #: bootstrap resamples
    seed: int = 20261122        #: fixed, so the same samples give the same interval
    #: how a floor adjusts its key variable: ``ratio`` (over the floor: slope 1) or ``slope``
    #: (the baseline's, fitted: docs/gate.md says why it is not the default between sessions)
    adjust: str = RATIO

    def threshold(self, between: float | None, within: float) -> float:
        """The minimum effect as a log ratio: given, or from the spread between sessions
        (``between``, when the baseline has enough) or between launches (``within``)."""
        if self.min_effect is not None:
            return math.log1p(self.min_effect)
        if between is not None:
            return max(math.log1p(self.session_floor), self.session_factor * between)
        return max(math.log1p(self.launch_floor), self.launch_factor * within)


@dataclasses.dataclass
class Series:
    """A judged quantity's launches, as log values with worse up, with their sessions."""
    values: list[float]
    sessions: list[str]

    def by_session(self) -> list[float]:
        groups: dict[str, list[float]] = {}
        for v, s in zip(self.values, self.sessions):
            groups.setdefault(s, []).append(v)
        return [statistics.median(g) for g in groups.values()]


def judge(base: Series, new: Series, m: int = 1, settings: Settings = Settings(),
          between: float | None = None, widen: float = 0.0) -> Outcome:
    """The three-outcome comparison of one quantity (see the module's docstring).
    ``between``: the spread of session medians (log), where more sessions than the baseline's
    tell it (a long series: :mod:`commcheck.analysis.trend`); else from the baseline's.
    ``widen``: what the interval carries beyond the samples' spread, either side (the floor's
    slope's uncertainty: :func:`adjusted`)."""
    level = 1 - settings.alpha / max(m, 1)
    change = statistics.median(new.values) - statistics.median(base.values)
    # sorted: the same launches give the same interval in whatever order they were read
    low, high = stats.boot_interval(sorted(base.values), sorted(new.values), level,
                                    settings.n_boot, settings.seed)
    medians = base.by_session()
    if between is None and len(medians) >= settings.min_sessions:
        between = robust.sigma(medians)
    threshold = settings.threshold(between, robust.sigma(base.values))
    n = min(len(base.values), len(new.values))
    if between is not None:
        below, above = change - low, high - change         # the launch-level half-widths
        change = statistics.median(new.by_session()) - statistics.median(medians)
        half = statistics.NormalDist().inv_cdf(1 - (1 - level) / 2) * between * math.sqrt(
            1 / len(medians) + 1 / len(new.by_session()))
        low, high = change - max(half, below), change + max(half, above)
        out = Outcome(UNKNOWN, change, low, high, threshold, 'sessions')
        n = max(len(medians), len(new.by_session()))
        rank_ok, rank_n = True, 0
    else:
        out = Outcome(UNKNOWN, change, low, high, threshold, 'launches',
                      p=stats.rank_p(base.values, new.values))
        rank_n = stats.min_rank_launches(1 - level)
        rank_ok = out.p < 1 - level
    out.low, out.high = low, high = low - widen, high + widen
    out.outcome = decide(low, high, threshold, rank_ok)
    if out.outcome == UNKNOWN:
        out.needed = stats.needed(n, (high - low) / 2, stats.distance(change, threshold),
                                  settings.max_needed, rank_n)
    return out


@dataclasses.dataclass
class Comparison:
    key: SampleKey
    unit: str
    direction: str | None
    base: list[float]
    new: list[float]
    verdict: str = CANNOT_TELL
    ratio: float | None = None          #: median(new) / median(base), the raw figure
    cost: Outcome | None = None         #: MPI's own cost (value over floor), or the raw value
    floor: Outcome | None = None        #: the floor, where the variable has one
    floor_variable: str | None = None
    note: str = ''
    provenance_changes: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.key = SampleKey._make(self.key)     # a plain 5-tuple (from JSON, say) is typed

    @property
    def check(self) -> str:
        return self.key.check

    @property
    def variable(self) -> str:
        return self.key.variable

    @property
    def change(self) -> float | None:
        return None if self.ratio is None else self.ratio - 1.0

    @property
    def launches_needed(self) -> int | None:
        return self.cost.needed if self.cost and self.verdict == CANNOT_TELL else None

    def judged(self) -> str:
        """What was judged: the value, over its floor, or adjusted by its floor's slope."""
        if not self.floor:
            return 'value'
        if self.cost and self.cost.slope is not None:
            return f'MPI cost (value adjusted by its floor, slope {self.cost.slope:.2f})'
        return 'MPI cost (value over floor)'

    def as_dict(self) -> dict:
        system, partition, environ, test, variable = self.key
        return {'system': system, 'partition': partition, 'environ': environ, 'test': test,
                'check': self.check, 'variable': variable, 'unit': self.unit,
                'direction': self.direction, 'verdict': self.verdict,
                'n_base': len(self.base), 'n_new': len(self.new),
                'median_base': _median(self.base), 'median_new': _median(self.new),
                'change': self.change, 'floor_variable': self.floor_variable,
                'judged': self.judged(),
                'cost': self.cost.as_dict() if self.cost else None,
                'floor': self.floor.as_dict() if self.floor else None,
                'detectable': self.cost.detectable if self.cost else None,
                'launches_needed': self.launches_needed, 'note': self.note,
                'provenance_changes': self.provenance_changes}


def _median(values):
    return statistics.median(values) if values else None


def _setup(provenances: list[tuple]) -> dict[str, str]:
    """The most common value of each provenance field over launches' provenances."""
    fields: dict[str, Counter] = {}
    for provenance, n in Counter(provenances).items():          # few distinct
        for k, v in provenance:
            fields.setdefault(k, Counter())[v] += n
    return {k: c.most_common(1)[0][0] for k, c in fields.items()}


def provenance_changes(base: list[Sample], new: list[Sample]) -> dict[str, tuple[str, str]]:
    """The setup fields that differ between two sets of sessions' samples."""
    return setup_changes([s.provenance for s in base], [s.provenance for s in new])


def setup_changes(base: list[tuple], new: list[tuple]) -> dict[str, tuple[str, str]]:
    """The setup fields that differ between two sets of launches' provenances (nodes only
    where the host differs too, and only where both sides know them)."""
    before, after = _setup(base), _setup(new)
    ignore = {'host', 'nodelist'} if before.get('host') == after.get('host') else set()
    if '' in (before.get('nodelist', ''), after.get('nodelist', '')):
        ignore.add('nodelist')
    return {k: (before.get(k, ''), after.get(k, '')) for k in sorted(set(before) | set(after))
            if before.get(k, '') != after.get(k, '') and k not in ignore}


def pair(values: list[Sample], floors: list[Sample]) -> list[tuple[Sample, Sample]]:
    """Each launch's value with the floor measured in the same launch (same session and job
    completion time; in stored order where times do not tell launches apart)."""
    by_launch = {(f.session, f.time): f for f in floors}
    if len(by_launch) == len(floors) == len({(v.session, v.time) for v in values}):
        return [(v, by_launch[(v.session, v.time)]) for v in values
                if (v.session, v.time) in by_launch]
    return list(zip(values, floors)) if len(values) == len(floors) else []


def adjusted(then: list[tuple[Sample, Sample]], now: list[tuple[Sample, Sample]],
             directions: tuple[str, str], floor: Outcome, m: int, settings: Settings) -> Outcome:
    """The value adjusted by its floor (the module's docstring): per launch
    ``y - theta (x - mean x)``, log values worse up, ``theta`` the Theil-Sen slope of the
    baseline's launches (clipped to [0, 2]); its interval widened by the floor's move times
    the slope's (Sen's interval at the family's level): how far the slope's uncertainty can
    carry the adjustment where the floor moved."""
    way, fway = directions
    xs = [stats.worse_up(f.value, fway) for _, f in then]
    ys = [stats.worse_up(v.value, way) for v, _ in then]
    theta, low, high = stats.theil_sen(xs, ys, 1 - settings.alpha / max(m, 1))
    centre = statistics.fmean(xs)

    def shifted(pairs: list[tuple[Sample, Sample]]) -> Series:
        return Series([stats.worse_up(v.value, way) - theta * (stats.worse_up(f.value, fway)
                                                               - centre) for v, f in pairs],
                      [v.session for v, _ in pairs])
    out = judge(shifted(then), shifted(now), m, settings,
                widen=abs(floor.change) * max(high - theta, theta - low))
    out.slope = theta
    return out


def series(samples: list[Sample], direction: str) -> Series:
    return Series([stats.worse_up(s.value, direction) for s in samples],
                  [s.session for s in samples])


def cost_series(pairs: list[tuple[Sample, Sample]], direction: str) -> Series:
    """MPI's own cost per launch, log(value / floor) with worse up for either direction."""
    return Series([stats.worse_up(v.value / f.value, direction) for v, f in pairs],
                  [v.session for v, _ in pairs])


def _unjudgeable(comp: Comparison, then: list[Sample], now: list[Sample],
                 settings: Settings) -> bool:
    """Sets the verdict of a comparison that cannot be made (and says why); False otherwise."""
    if not then:
        comp.verdict = NO_BASELINE
        return True
    comp.provenance_changes = provenance_changes(then, now)
    why = verdicts.not_comparable(comp.direction, comp.provenance_changes,
                                  min(comp.base + comp.new) > 0)
    if why:
        comp.verdict, comp.note = NOT_COMPARABLE, why
    elif min(len(comp.base), len(comp.new)) < settings.min_samples:
        comp.verdict = CANNOT_TELL
    else:
        return False
    return True


def _judge_one(comp: Comparison, then, now, base, new, m: int, settings: Settings) -> None:
    """Judges one key variable: MPI's own cost and the floor where both sides have floors of
    the same launches, else the raw value."""
    comp.floor_variable = experiments.floor_of(comp.check, comp.variable)
    fkey = comp.key.of(comp.floor_variable) if comp.floor_variable else None
    pairs_then = pair(then, base.get(fkey, [])) if comp.floor_variable else []
    pairs_now = pair(now, new.get(fkey, [])) if comp.floor_variable else []
    if min(len(pairs_then), len(pairs_now)) >= settings.min_samples:
        fdir = experiments.direction(comp.check, comp.floor_variable)
        comp.floor = judge(series([f for _, f in pairs_then], fdir),
                           series([f for _, f in pairs_now], fdir), m, settings)
        if settings.adjust == RATIO:
            comp.cost = judge(cost_series(pairs_then, comp.direction),
                              cost_series(pairs_now, comp.direction), m, settings)
        else:
            comp.cost = adjusted(pairs_then, pairs_now, (comp.direction, fdir), comp.floor, m,
                                 settings)
    else:
        if comp.floor_variable:
            comp.note = f'no {comp.floor_variable} on both sides: judged on the value'
            comp.floor_variable = None
        comp.cost = judge(series(then, comp.direction), series(now, comp.direction), m,
                          settings)
    mpi_floor = experiments.mpi_floor(comp.check) if comp.floor else ''
    comp.verdict = verdicts.verdict(
        comp.cost, comp.floor, bool(mpi_floor),
        own_ratio=experiments.is_own_ratio(comp.check, comp.variable))
    comp.note = verdicts.explain(comp, mpi_floor, settings.max_needed)


def compare(base: dict[tuple, list[Sample]], new: dict[tuple, list[Sample]],
            settings: Settings = Settings()) -> list[Comparison]:
    """One :class:`Comparison` per variable of ``new`` (floor variables and own costs are judged
    with the variable they are the floor or cost of, not on their own); keys absent from
    ``base`` say so."""
    out, todo = [], []
    for key in map(SampleKey._make, sorted(new)):
        if (experiments.is_floor(key.check, key.variable)
                or experiments.own_cost_of(key.check, key.variable)):
            continue        # judged with the variable they are the floor or the cost of
        now, then = new[key], base.get(key, [])
        comp = Comparison(key=key, unit=now[0].unit,
                          direction=experiments.direction(key.check, key.variable, now[0].unit),
                          base=[s.value for s in then], new=[s.value for s in now])
        out.append(comp)
        if _unjudgeable(comp, then, now, settings):
            if comp.verdict == CANNOT_TELL:
                comp.note = (f'{len(comp.base)} baseline and {len(comp.new)} new launches; '
                             f'need {settings.min_samples} each (reframe --repeat N)')
            continue
        comp.ratio = _median(comp.new) / _median(comp.base)
        todo.append((comp, then, now))
    # Each judgement seeds its own resampling, so the order they run in changes nothing; the
    # bootstrap's medians run in numpy without the GIL, so threads use every core.
    with ThreadPoolExecutor(max(1, min(len(todo), os.cpu_count() or 1))) as pool:
        list(pool.map(lambda job: _judge_one(*job, base, new, len(todo), settings), todo))
    contention(out, base, new)
    verdicts.machine_notes(out)
    return out


#: How much more of its measuring time (a share) the new launches' ranks must have waited for
#: a CPU than the baseline's (:data:`experiments.CPU_WAIT`, upper quartiles: :func:`waited`)
#: to be contended. On this project's 2-core VM (docs/floors.md#cpu-contention), upper
#: quartiles of a session's launches: quiet ping-pong under 1 %, quiet datatypes 3-7 %, the
#: datatypes with Open MPI's CMA off 4-9 %; beside busy loops on both cores, the ping-pong
#: 32-51 %, the datatypes 20-38 %.
CONTENDED = 0.10


def waited(waits: list[float]) -> float:
    """The launches' CPU wait as the gate reads it: their upper quartile. A short sweep can fit
    between a busy loop's time slices and show none, so contended sessions are bimodal; a
    quiet one's rare hiccup stays above it."""
    return float(np.percentile(waits, 75))


def contended(base_waits: list[float], new_waits: list[float]) -> bool:
    """Whether the new launches' ranks waited for a CPU more than the baseline's by over
    :data:`CONTENDED` of the time (:func:`waited`; a baseline without the figure counts as
    none)."""
    if not new_waits:
        return False
    before = waited(base_waits) if base_waits else 0.0
    return waited(new_waits) - before > CONTENDED


def contention(comparisons: list[Comparison], base: dict, new: dict) -> None:
    """Where the new launches were contended for their CPUs (:func:`contended`), the machine
    changed, as where a floor moved: a transport that waits on its peer's time slice once per
    chunk slows more than its floor's one copy, so MPI's own cost grows without the software
    changing. Every judged verdict of those launches reads ``machine changed``, saying how
    long the ranks waited, and what the rule alone had said."""
    for c in comparisons:
        if c.verdict in (NO_BASELINE, NOT_COMPARABLE):
            continue
        wkey = c.key.of(experiments.CPU_WAIT)
        then = [s.value for s in base.get(wkey, [])]
        now = [s.value for s in new.get(wkey, [])]
        if not contended(then, now):
            continue
        c.note = verdicts.contended_note(waited(now), waited(then) if then else None,
                                         c.verdict, c.note)
        c.verdict = verdicts.MACHINE_CHANGED
